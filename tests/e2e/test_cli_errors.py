"""Exit codes, error messages and bad input: every problem gets a one-line
message naming the file, and the rest of the run completes."""
import os
import shutil
import sqlite3

import pytest

from conftest import COLLECTION, expected_notes

SIZE_CAP_TEST = 33 * 1024 * 1024  # assumed default cap: at most 32 MiB


# ---- exit codes ------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("frobnicate",),
    ("search",),                            # missing query
    ("search", "x", "-n", "notanumber"),
    ("search", "x", "--no-such-flag"),
    ("collection",),
    ("collection", "frobnicate"),
    ("collection", "add"),                  # missing path
    ("collection", "rename", "only-one"),
    ("get",),
    ("search", "x", "--min-score", "abc"),
])
def test_usage_errors_exit_2(trove, args):
    r = trove(*args)
    assert r.rc == 2, r
    assert r.err.strip(), "usage errors explain themselves on stderr"


def test_no_arguments_is_usage(trove):
    r = trove()
    assert r.rc in (0, 2), r
    assert (r.out + r.err).strip()


def test_help_succeeds(trove):
    r = trove("--help")
    assert r.rc == 0, r
    for cmd in ("collection", "update", "search", "get", "status"):
        assert cmd in r.out, (cmd, r)


def test_search_before_any_collection(trove):
    r = trove("search", "anything", "--json")
    # Either "no results" or an error that says what to do; never a crash,
    # never a usage error.
    assert r.rc in (0, 1), r
    if r.rc == 0:
        assert r.json()["results"] == []
    else:
        assert "collection" in r.err.lower(), r


def test_update_without_collections(trove):
    r = trove("update")
    assert r.rc in (0, 1), r
    if r.rc == 1:
        assert "collection" in r.err.lower(), r


def test_corrupt_index(indexed):
    trove, _ = indexed
    with open(trove.index, "r+b") as f:
        f.seek(0)
        f.write(b"this is not a sqlite database at all" * 200)
    for args in (("search", "bread"), ("status",), ("update",)):
        r = trove(*args)
        assert r.rc == 1, r
        assert str(trove.index) in r.err, r
        assert len(r.err.strip().splitlines()) <= 3, r


def test_unreadable_index_path(trove, vault, tmp_path):
    d = tmp_path / "a-directory.db"
    d.mkdir()
    r = trove("--index", d, "search", "bread")
    assert r.rc == 1, r
    assert str(d) in r.err, r


def test_locked_index_times_out_cleanly(indexed):
    trove, vault = indexed
    (vault / "inbox" / "locked.md").write_text("# Locked\n\nmurklefrond\n")
    con = sqlite3.connect(str(trove.index), timeout=1, isolation_level=None)
    try:
        con.execute("BEGIN EXCLUSIVE")
        r = trove("update", timeout=180)
        assert r.rc == 1, r
        assert str(trove.index) in r.err or "lock" in r.err.lower(), r
    finally:
        con.execute("ROLLBACK")
        con.close()
    # nothing was lost, and the next run picks the new file up
    assert trove.search("autolyse")
    trove.ok("update")
    assert trove.paths("murklefrond") == ["inbox/locked.md"]


def test_vanished_collection_root(indexed, tmp_path):
    trove, vault = indexed
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nflumpwidget\n")
    trove.ok("collection", "add", other, "--name", "other")
    moved = tmp_path / "vault-moved"
    os.rename(vault, moved)
    r = trove("update")
    assert r.rc in (0, 1), r
    assert str(vault) in r.err, r
    # the other collection was still updated
    assert trove.paths("flumpwidget") == ["a.md"]
    os.rename(moved, vault)


# ---- bad files -------------------------------------------------------------

def run_update_with_bad_file(trove, vault, rel, data):
    p = vault / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    r = trove("update")
    assert r.rc == 0, r
    warn = [ln for ln in r.err.splitlines() if rel.split("/")[-1] in ln]
    assert warn, ("no warning naming %s" % rel, r)
    # the rest of the run completed: every good note is searchable
    assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]
    assert trove.paths("Fushimi Inari")[0] == "travel/kyoto-2023.md"
    return r


def test_binary_file_named_md(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    data = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40)
    run_update_with_bad_file(trove, vault, "inbox/x.md", data)
    assert trove.search("IHDR") == []


def test_invalid_utf8_is_indexed_anyway(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    data = (b"# Broken encoding\n\nLatin-1 caf\xe9 and a stray \xff\xfe byte; "
            b"the word grumbleberry is still findable.\n")
    r = run_update_with_bad_file(trove, vault, "inbox/latin1.md", data)
    res = trove.search("grumbleberry")
    assert [x["path"] for x in res] == ["inbox/latin1.md"], r
    assert "\ufffd" in res[0]["snippet"] or "caf" in res[0]["snippet"]
    # and the output is valid UTF-8 JSON (r.json() already decoded it)


def test_malformed_frontmatter(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    data = (b"---\ntitle: [unclosed\ntags: {a: \n  - : :\n---\n\n"
            b"# Body survives\n\nThe body mentions wibblequark.\n")
    run_update_with_bad_file(trove, vault, "inbox/badfm.md", data)
    assert trove.paths("wibblequark") == ["inbox/badfm.md"]


def test_unterminated_frontmatter(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    p = vault / "inbox" / "nofm-end.md"
    p.write_bytes(b"---\ntitle: never closed\n\nbody with zorpglorp\n")
    r = trove("update")
    assert r.rc == 0, r
    # either treated as text or as frontmatter with a warning; never lost
    res = trove.search("zorpglorp")
    if not res:
        assert "nofm-end.md" in r.err, r


def test_file_over_size_cap(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    line = b"hugefileword filler text for the size cap test\n"
    data = line * (SIZE_CAP_TEST // len(line) + 1)
    r = run_update_with_bad_file(trove, vault, "inbox/huge.md", data)
    assert trove.search("hugefileword") == [], r


def test_empty_and_frontmatter_only_files(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    (vault / "inbox" / "empty.md").write_bytes(b"")
    (vault / "inbox" / "fm-only.md").write_bytes(
        b"---\ntitle: Only frontmatter snorgle\naliases: [snorgle]\n---\n")
    r = trove("update")
    assert r.rc == 0, r
    assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]
    # title channel still finds a note without body text
    assert "inbox/fm-only.md" in trove.paths("snorgle")


def test_crlf_bom_nul_mix(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    data = (b"\xef\xbb\xbf---\r\ntitle: Mixed endings\r\n---\r\n"
            b"# Mixed\r\nfirst line\nsecond line\r\rthird\r\n"
            b"with a NUL\x00 in the middle: quibblefish\r\n")
    p = vault / "inbox" / "mixed.md"
    p.write_bytes(data)
    r = trove("update")
    assert r.rc == 0, r
    assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    p = vault / "travel" / "lisbon.md"
    os.chmod(p, 0)
    try:
        r = trove("update")
        assert r.rc == 0, r
        assert "lisbon.md" in r.err, r
        assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]
    finally:
        os.chmod(p, 0o644)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_folder(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    d = vault / "travel"
    os.chmod(d, 0)
    try:
        r = trove("update")
        assert r.rc == 0, r
        assert "travel" in r.err, r
        assert trove.paths("autolyse") == ["cooking/sourdough-bread.md"]
    finally:
        os.chmod(d, 0o755)


def test_deep_and_wide_tree(trove, tmp_path):
    root = tmp_path / "deep"
    d = root
    for i in range(60):
        d = d / ("level%02d" % i)
    d.mkdir(parents=True)
    (d / "bottom.md").write_text("# Bottom\n\nabyssalword\n")
    for i in range(300):
        (root / ("n%03d.md" % i)).write_text("# Note %d\n\nfiller\n" % i)
    trove.ok("collection", "add", root, "--name", "deep")
    trove.ok("update")
    res = trove.paths("abyssalword")
    assert len(res) == 1 and res[0].endswith("/bottom.md"), res


def test_update_survives_files_removed_during_walk(indexed):
    # A file listed in the index but gone now, plus a new empty folder.
    trove, vault = indexed
    shutil.rmtree(vault / "travel")
    (vault / "empty-folder").mkdir()
    r = trove("update")
    assert r.rc == 0, r
    assert trove.search("Fushimi Inari") == []
    assert len(expected_notes(vault)) > 0
