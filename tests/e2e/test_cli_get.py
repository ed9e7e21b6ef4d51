"""`trove get`, `multi-get`, `ls` and `status`."""
import re

from conftest import COLLECTION, bump_mtime, expected_notes, file_lines

# Every test on `indexed` also runs through a daemon, output compared byte
# for byte with the cold path (conftest.pytest_generate_tests).
DAEMON_BOTH_WAYS = True

SOURDOUGH = "cooking/sourdough-bread.md"
FTS = "programming/sqlite-fts5.md"


def text_lines(out):
    lines = out.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def ref(rel):
    return "%s/%s" % (COLLECTION, rel)


def test_get_whole_short_file(indexed):
    trove, vault = indexed
    r = trove.ok("get", ref(SOURDOUGH))
    assert text_lines(r.out) == file_lines(vault, SOURDOUGH)[1:101]


def test_get_line_and_count(indexed):
    trove, vault = indexed
    lines = file_lines(vault, SOURDOUGH)
    r = trove.ok("get", ref(SOURDOUGH) + ":30", "-l", "4")
    assert text_lines(r.out) == lines[30:34]


def test_get_crlf_file(indexed):
    trove, vault = indexed
    lines = file_lines(vault, FTS)
    r = trove.ok("get", ref(FTS) + ":7", "-l", "3")
    assert text_lines(r.out) == lines[7:10]


def test_get_default_is_100_lines(indexed):
    trove, vault = indexed
    long = vault / "inbox" / "long.md"
    long.write_text("".join("line %d of a long note\n" % i
                            for i in range(1, 251)))
    trove.ok("update")
    r = trove.ok("get", ref("inbox/long.md"))
    assert text_lines(r.out) == ["line %d of a long note" % i
                                 for i in range(1, 101)]
    r = trove.ok("get", ref("inbox/long.md") + ":200")
    assert text_lines(r.out) == ["line %d of a long note" % i
                                 for i in range(200, 251)]


def test_get_reads_the_file_on_disk(indexed):
    trove, vault = indexed
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nAdded after the last update.\n")
    lines = file_lines(vault, "travel/lisbon.md")
    r = trove.ok("get", ref("travel/lisbon.md"))
    assert text_lines(r.out) == lines[1:]


def test_get_search_result_lines(indexed):
    trove, vault = indexed
    for q in ("windowpane", "unicode61 tokenizer", "宽窄巷子", "claw grip"):
        res = trove.search(q)[0]
        n = res["line_end"] - res["line_start"] + 1
        r = trove.ok("get", "%s/%s:%d" % (res["collection"], res["path"],
                                          res["line_start"]), "-l", str(n))
        lines = file_lines(vault, res["path"])
        assert text_lines(r.out) == lines[res["line_start"]:res["line_end"] + 1]


def test_get_by_docid(indexed):
    trove, vault = indexed
    res = trove.search("autolyse")[0]
    docid = res["docid"]
    r = trove.ok("get", docid if docid.startswith("#") else "#" + docid)
    file_set = {ln.strip() for ln in file_lines(vault, res["path"])[1:]}
    out = [ln.strip() for ln in text_lines(r.out) if ln.strip()]
    assert out, r
    assert all(ln in file_set for ln in out), r
    # docid without the '#' is not required, a wrong one is an error
    r = trove("get", "#ffffff0")
    if r.rc == 0:
        raise AssertionError("unknown docid accepted: %r" % r)
    assert r.rc == 1, r


def test_get_missing_file(indexed):
    trove, _ = indexed
    r = trove("get", ref("travel/nowhere.md"))
    assert r.rc == 1, r
    assert "nowhere.md" in r.err, r
    r = trove("get", "nosuchcollection/x.md")
    assert r.rc == 1, r


def test_get_refuses_paths_escaping_the_collection(indexed):
    trove, _ = indexed
    for bad in ("../../etc/passwd", ref("../../../../etc/passwd"),
                ref("cooking/../../../etc/passwd"), "/etc/passwd",
                ref("/etc/passwd")):
        r = trove("get", bad)
        assert r.rc == 1, r
        assert "root:" not in r.out, r


def test_get_refuses_symlink_out_of_collection(indexed, tmp_path):
    trove, vault = indexed
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret wobblefrotz\n")
    (vault / "inbox" / "sneaky.txt").symlink_to(secret)
    r = trove("get", ref("inbox/sneaky.txt"))
    assert r.rc == 1, r
    assert "wobblefrotz" not in r.out


def test_multi_get(indexed):
    trove, vault = indexed
    r = trove.ok("multi-get", ref("travel/*.md"))
    travel = sorted(p for p in expected_notes(vault)
                    if re.fullmatch(r"travel/[^/]*\.md", p))
    for p in travel:
        assert p in r.out, (p, r)
        first_body = next(ln for ln in file_lines(vault, p)[1:]
                          if ln.startswith("# "))
        assert first_body in r.out, (p, r)
    assert "cooking/" not in r.out
    assert "quokkascratchpad" not in r.out  # gitignored, not indexed


def test_multi_get_byte_cap(indexed):
    trove, vault = indexed
    notes = sorted(p for p in expected_notes(vault)
                   if re.fullmatch(r"cooking/[^/]*\.md", p))
    sizes = {p: (vault / p).stat().st_size for p in notes}
    cap = sorted(sizes.values())[len(sizes) // 2]
    small = [p for p in notes if sizes[p] <= cap]
    big = [p for p in notes if sizes[p] > cap]
    assert small and big
    r = trove.ok("multi-get", ref("cooking/*.md"), "--max-bytes", str(cap))
    for p in notes:
        assert p in r.out, (p, r)  # every match is at least named
        last = [ln for ln in file_lines(vault, p)[1:] if ln.strip()][-1]
        if p in small:
            assert last in r.out, (p, r)
        else:
            assert last not in r.out, (p, r)


def test_multi_get_no_match(indexed):
    trove, _ = indexed
    r = trove("multi-get", ref("nothing/*.md"))
    assert r.rc in (0, 1), r
    assert r.out.strip() == "" or "nothing" in (r.out + r.err)


def test_ls(indexed):
    trove, vault = indexed
    r = trove.ok("ls")
    assert COLLECTION in r.out
    r = trove.ok("ls", ref("cooking"))
    for p in expected_notes(vault):
        if p.startswith("cooking/"):
            assert p.split("/")[-1] in r.out, (p, r)
        else:
            assert p.split("/")[-1] not in r.out, (p, r)


def test_ls_missing_collection(indexed):
    trove, _ = indexed
    r = trove("ls", "nosuchcollection")
    assert r.rc == 1, r


def test_status(indexed):
    trove, vault = indexed
    n = len(expected_notes(vault))
    r = trove.ok("status")
    assert COLLECTION in r.out, r
    assert re.search(r"\b%d\b" % n, r.out), r
    assert str(vault) in r.out, r


def test_status_reports_freshness(indexed):
    trove, vault = indexed
    before = trove.ok("status").out
    (vault / "travel" / "porto.md").write_text("# Porto\n\nFrancesinha.\n")
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nOne more line.\n")
    bump_mtime(p)
    (vault / "learning" / "zettelkasten.md").unlink()
    after = trove.ok("status").out
    assert after != before
    low = after.lower()
    for word in ("new", "changed", "deleted"):
        assert re.search(r"\b1\s+%s|%s\w*\s*[:=]?\s*1\b" % (word, word),
                         low), (word, after)
    # status does not update anything
    assert trove.search("francesinha") == []
    trove.ok("update")
    fresh = trove.ok("status").out.lower()
    for word in ("new", "changed", "deleted"):
        assert not re.search(r"\b1\s+%s|%s\w*\s*[:=]?\s*1\b" % (word, word),
                             fresh), (word, fresh)
