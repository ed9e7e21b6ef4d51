"""A damaged index says so: every read command reports an index with 8 KiB
overwritten in its middle, or truncated, as damaged — one message naming the
file and the fix — and exits 1; `trove check` lists the problems and
`trove update --rebuild` repairs it."""
import os
import random
import sqlite3

import pytest

from conftest import COLLECTION

FIX = "trove update --rebuild"


def docid_of(trove):
    return trove.search("autolyse")[0]["docid"]


def read_commands(docid):
    return [
        ("ls",),
        ("ls", COLLECTION),
        ("status",),
        ("search", "bread"),
        ("search", "bread", "--json"),
        ("get", docid),
        ("get", "cooking/sourdough-bread.md"),
        ("multi-get", COLLECTION + "/cooking/*.md"),
        ("update",),
    ]


def overwrite_middle(path, seed=7):
    """Two whole pages of noise in the middle of the file (8 KiB of 4 KiB
    pages, 32 KiB of the 16 KiB pages an index is made with since session
    33): noise inside one page of a small index can fall on bytes no cell
    uses, which is no damage."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(18)
    page_size = int.from_bytes(head[16:18], "big") or 65536
    assert size > 3 * page_size, size
    rnd = random.Random(seed)
    with open(path, "r+b") as f:
        f.seek((size // 2 // page_size - 1) * page_size)
        f.write(bytes(rnd.getrandbits(8) for _ in range(2 * page_size)))


def overwrite_note_pages(path, seed=7):
    """8 KiB of noise over pages holding note text (the full-text content
    table), away from the schema: damage there leaves the file readable as
    an index, so `check` can list what is broken. (Which pages the middle
    of the file holds depends on the schema; damage to sqlite_schema makes
    the file unreadable, reported as damaged without a list.)"""
    db = sqlite3.connect(str(path))
    try:
        pages = [r[0] for r in db.execute(
            "SELECT pageno FROM dbstat WHERE name = 'chunks_fts_content' ORDER BY pageno")]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    finally:
        db.close()
    assert len(pages) >= 2, pages
    rnd = random.Random(seed)
    with open(path, "r+b") as f:
        f.seek((pages[len(pages) // 2] - 1) * page_size)
        f.write(bytes(rnd.getrandbits(8) for _ in range(2 * page_size)))


def truncate(path, keep):
    with open(path, "r+b") as f:
        f.truncate(keep)


def assert_damaged(trove, r):
    assert r.rc == 1, r
    assert str(trove.index) in r.err, r
    assert "damaged" in r.err, r
    assert FIX in r.err, r
    assert len(r.err.strip().splitlines()) == 1, r


DAMAGE = {
    "overwrite-8k-middle": lambda p: overwrite_middle(p),
    "overwrite-8k-middle-other-seed": lambda p: overwrite_middle(p, seed=99),
    "truncate-half": lambda p: truncate(p, os.path.getsize(p) // 2),
    "truncate-to-one-page": lambda p: truncate(p, 4096),
    "truncate-to-50-bytes": lambda p: truncate(p, 50),
    "truncate-to-zero": lambda p: truncate(p, 0),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_every_read_command_reports_damage(indexed, how):
    trove, _ = indexed
    docid = docid_of(trove)
    DAMAGE[how](trove.index)
    for args in read_commands(docid):
        if args == ("update",) and how == "truncate-to-zero":
            continue  # an empty file is a new index: update just fills it
        assert_damaged(trove, trove(*args))


def test_check_on_a_healthy_index(indexed):
    trove, _ = indexed
    r = trove.ok("check")
    assert str(trove.index) in r.out and "ok" in r.out, r


def test_check_lists_damage_and_rebuild_repairs_it(indexed):
    trove, _ = indexed
    want = trove.paths("autolyse")
    overwrite_note_pages(trove.index)
    r = trove("check")
    assert r.rc == 1, r
    assert "problem:" in r.out, r
    assert FIX in r.err, r
    r = trove.ok("update", "--rebuild")
    assert "rebuilt" in r.out, r
    trove.ok("check")
    assert trove.paths("autolyse") == want
    trove.ok("status")


def test_rebuild_of_a_truncated_index(indexed):
    trove, _ = indexed
    truncate(trove.index, 4096)
    trove.ok("update", "--rebuild")
    trove.ok("check")
    assert trove.search("autolyse")


def test_check_finds_broken_invariants(indexed):
    # SQLite finds the file healthy; trove's own invariants do not hold.
    trove, _ = indexed
    con = sqlite3.connect(str(trove.index))
    con.execute("UPDATE docs SET in_degree = in_degree + 5 WHERE id ="
                " (SELECT min(id) FROM docs)")
    con.execute("INSERT INTO chunks(doc_id, seq, heading, start_byte, end_byte,"
                " line_start, line_end) VALUES (999999, 0, '', 0, 1, 1, 1)")
    con.execute("INSERT INTO links(src_doc, kind, target, target_key, line, dst_doc)"
                " VALUES ((SELECT min(id) FROM docs), 0, 'x', 'x', 1, 888888)")
    con.commit()
    con.close()
    r = trove("check")
    assert r.rc == 1, r
    for words in ("in-degree", "chunks belong to no note",
                  "chunks have no full-text row",
                  "point at a note that does not exist"):
        assert words in r.out, (words, r)


def test_rebuild_refuses_a_file_that_is_not_an_index(trove, vault, tmp_path):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    precious = tmp_path / "thesis.db"
    precious.write_bytes(b"my thesis, not a database\n" * 100)
    r = trove("--index", precious, "update", "--rebuild")
    assert r.rc == 1, r
    assert "not deleting" in r.err, r
    assert precious.read_bytes() == b"my thesis, not a database\n" * 100
    other = tmp_path / "other.db"
    con = sqlite3.connect(str(other))
    con.execute("CREATE TABLE precious(x)")
    con.commit()
    con.close()
    r = trove("--index", other, "update", "--rebuild")
    assert r.rc == 1, r
    assert "not deleting" in r.err, r
    con = sqlite3.connect(str(other))
    assert con.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0] == 1
    con.close()


def test_unchanged_index_is_not_rechecked_but_changed_one_is(indexed):
    # The "<index>-verified" stamp: written by update, matched by readers.
    trove, _ = indexed
    stamp = trove.index.parent / (trove.index.name + "-verified")
    assert stamp.is_file()
    before = stamp.read_text()
    trove.ok("search", "bread")
    assert stamp.read_text() == before
    os.utime(trove.index, ns=(0, 10**18))   # touched by something else
    trove.ok("search", "bread")             # re-checked, healthy, re-stamped
    assert stamp.read_text() != before
