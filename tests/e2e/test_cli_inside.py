"""Nothing from outside a collection: every reader (update, search and
--full, get, multi-get, ls) applies one rule — the real path of a note must
lie inside its collection's folder — and nested collections never index a
note twice."""
import os

from conftest import COLLECTION

# Every test on `indexed` also runs through a daemon, output compared byte
# for byte with the cold path (conftest.pytest_generate_tests).
DAEMON_BOTH_WAYS = True

SECRET = "wobblefrotzsecret"


def make_secret(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("# Secret\n\n%s lives outside every vault.\n" % SECRET)
    return secret


def test_update_skips_symlink_leading_outside(indexed, tmp_path):
    trove, vault = indexed
    secret = make_secret(tmp_path)
    os.symlink(secret, vault / "inbox" / "x.md")
    r = trove("update")
    assert r.rc == 0, r
    # a warning names the link, its target and why
    assert "inbox/x.md" in r.err and str(secret) in r.err, r
    assert "outside the collection" in r.err, r
    assert trove.paths(SECRET) == []
    r = trove.ok("ls", COLLECTION + "/inbox")
    assert "x.md" not in r.out, r


def test_update_skips_symlinked_folder_leading_outside(indexed, tmp_path):
    trove, vault = indexed
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "note.md").write_text("# Ext\n\n%s in a linked folder.\n" % SECRET)
    os.symlink(ext, vault / "ext")
    r = trove("update")
    assert r.rc == 0, r
    assert str(ext) in r.err and "outside the collection" in r.err, r
    assert trove.paths(SECRET) == []


def test_status_does_not_count_outside_links_as_new(indexed, tmp_path):
    trove, vault = indexed
    os.symlink(make_secret(tmp_path), vault / "inbox" / "x.md")
    trove.ok("update")
    r = trove.ok("status")
    assert "up to date" in r.out, r


def swap_in_symlink(vault, rel, target):
    """Replace an indexed note by a symlink out of the vault, after the
    update: the index still lists it, so each reader must check itself."""
    p = vault / rel
    p.unlink()
    os.symlink(target, p)


SWAPPED = "travel/lisbon.md"


def swapped(indexed, tmp_path):
    trove, vault = indexed
    swap_in_symlink(vault, SWAPPED, make_secret(tmp_path))
    return trove


def test_get_refuses_a_note_swapped_for_an_outside_link(indexed, tmp_path):
    trove = swapped(indexed, tmp_path)
    r = trove("get", "%s/%s" % (COLLECTION, SWAPPED))
    assert r.rc == 1, r
    assert SECRET not in r.out
    assert "outside" in r.err, r


def test_search_full_refuses_a_note_swapped_for_an_outside_link(indexed, tmp_path):
    trove = swapped(indexed, tmp_path)
    for fmt in ("--json", "--md", "--xml", "--csv", "--files"):
        r = trove.ok("search", "lisbon", "--full", fmt)
        assert SECRET not in r.out, (fmt, r)
    r = trove.ok("search", "lisbon", "--full")
    assert SECRET not in r.out, r
    r = trove.ok("search", "lisbon", "--full", "--json")
    hit = [x for x in r.json()["results"] if x["path"] == SWAPPED]
    assert hit and hit[0].get("body") is None, r


def test_multi_get_refuses_a_note_swapped_for_an_outside_link(indexed, tmp_path):
    trove = swapped(indexed, tmp_path)
    r = trove.ok("multi-get", COLLECTION + "/travel/*.md")
    assert SECRET not in r.out, r
    assert "outside the collection" in r.out, r
    r = trove.ok("multi-get", COLLECTION + "/travel/*.md", "--json")
    entry = [x for x in r.json()["notes"] if x["path"] == SWAPPED]
    assert entry and "body" not in entry[0], r
    assert entry[0]["skipped"] == "outside the collection", r


def test_ls_hides_a_note_swapped_for_an_outside_link(indexed, tmp_path):
    trove = swapped(indexed, tmp_path)
    r = trove.ok("ls", COLLECTION + "/travel")
    assert "lisbon.md" not in r.out, r
    assert "porto" in r.out or "kyoto" in r.out or r.out.strip(), r


def test_update_drops_a_note_swapped_for_an_outside_link(indexed, tmp_path):
    trove = swapped(indexed, tmp_path)
    r = trove.ok("update")
    assert "outside the collection" in r.err, r
    assert SWAPPED not in trove.paths("lisbon")


def test_get_by_docid_refuses_outside_link(indexed, tmp_path):
    trove, vault = indexed
    res = [x for x in trove.search("lisbon") if x["path"] == "travel/lisbon.md"][0]
    swap_in_symlink(vault, "travel/lisbon.md", make_secret(tmp_path))
    r = trove("get", res["docid"])
    assert r.rc == 1, r
    assert SECRET not in r.out


def test_collection_nested_inside_another_is_refused(indexed):
    trove, vault = indexed
    r = trove("collection", "add", vault / "cooking", "--name", "inner")
    assert r.rc == 1, r
    assert "inside collection '%s'" % COLLECTION in r.err, r
    assert "inner" not in trove.ok("collection", "list").out


def test_collection_holding_another_is_refused(trove, vault):
    trove.ok("collection", "add", vault / "cooking", "--name", "inner")
    r = trove("collection", "add", vault, "--name", "outer")
    assert r.rc == 1, r
    assert "contains collection 'inner'" in r.err, r


def test_nested_collections_in_config_index_each_note_once(trove, vault):
    # A config written by hand (or by an older trove) may still nest them:
    # the outer collection skips the inner folder and says so.
    trove.ok("collection", "add", vault / "cooking", "--name", "inner")
    cfg = trove.config / "config.yaml"
    text = cfg.read_text()
    trove.ok("collection", "add", vault / "travel", "--name", "outer")
    # point "outer" at the vault root by editing the file
    cfg.write_text(cfg.read_text().replace(str(vault / "travel"), str(vault)))
    assert text != cfg.read_text()
    r = trove.ok("update")
    assert "folder %s is a collection of its own" % (vault / "cooking") in r.err, r
    res = trove.search("autolyse", "--all")
    hits = [(x["collection"], x["path"]) for x in res]
    assert ("inner", "sourdough-bread.md") in hits, hits
    assert not any(c == "outer" and p.startswith("cooking/") for c, p in hits), hits
    r = trove.ok("ls", "outer")
    assert "cooking/" not in r.out, r
