"""The `indexed` fixture's shortcut (conftest.py, index_vault): a copy of the
worker's template must be what `collection add` + `update` would have made
for the test, row by row and answer by answer, stay so when the vault then
changes, and never be used where it could differ."""
import re
import shutil
import sqlite3
import time

import pytest

import conftest
from conftest import COLLECTION, FIXTURE_VAULT, Trove, bump_mtime, verified_stamp


def template():
    tpl = conftest._template()
    assert not isinstance(tpl, str), "no template: " + tpl
    return tpl


def fresh(tmp_path, name):
    """A Trove and a vault laid out as the fixtures lay them out, indexed by
    the two commands; the span of seconds the update ran in."""
    base = tmp_path / name
    t = Trove(base / "env")
    vault = base / "vault"
    shutil.copytree(FIXTURE_VAULT, vault, symlinks=True)
    t0 = int(time.time())
    t.ok("collection", "add", vault, "--name", COLLECTION)
    t.ok("update")
    return t, vault, (t0, int(time.time()) + 1)


def dump(trove, span):
    """Every row of every stored table (FTS5's own included), the folder
    named <base>, seconds within `span` named <time>, the index id <id>."""
    base = str(trove.home.parent) + "/"
    lo, hi = span
    con = sqlite3.connect(str(trove.index))
    try:
        index_id = con.execute(
            "SELECT value FROM meta WHERE key = 'index_id'").fetchone()[0]

        def norm(v):
            if isinstance(v, str):
                if v == index_id:
                    return "<id>"
                if v.isdigit() and lo <= int(v) <= hi:
                    return "<time>"
                return v.replace(base, "<base>/")
            if isinstance(v, int) and lo <= v <= hi:
                return "<time>"
            return v
        out = {}
        for (t,) in con.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"):
            out[t] = sorted((tuple(norm(v) for v in row)
                             for row in con.execute('SELECT * FROM "%s"' % t)), key=repr)
        return out
    finally:
        con.close()


def test_copy_holds_the_rows_of_a_fresh_build(trove, vault, tmp_path):
    """Moved a day ahead, so that a time the copy forgot to move shows."""
    tpl = template()
    assert tpl.refusal(trove, vault) is None
    now = int(time.time()) + 86400
    tpl.copy_to(trove, now=now)
    ft, _, span = fresh(tmp_path, "fresh")
    got = dump(trove, (now - (tpl.t1 - tpl.t0) - 1, now))
    want = dump(ft, span)
    assert got.keys() == want.keys()
    for t in want:
        assert got[t] == want[t], t
    # a stamp that matches the copied file, as update leaves one
    stamp = trove.index.parent / (trove.index.name + "-verified")
    assert stamp.read_text() == verified_stamp(trove.index)
    assert stamp.stat().st_mode & 0o777 == 0o600
    # the new index has an id of its own
    ids = [sqlite3.connect(str(t.index)).execute(
        "SELECT value FROM meta WHERE key = 'index_id'").fetchone()[0]
        for t in (trove, ft)]
    assert ids[0] != ids[1] and re.fullmatch(r"[0-9a-f]{32}", ids[0]), ids


def plain(text, base):
    """`text` with the folder, dates, spans and elapsed times named."""
    text = re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\dZ?", "<date>", text)
    # the span between two snapshots, an update's duration: this test's pace
    text = re.sub(r"\(\d+ (second|minute)s?\)", "(<span>)", text)
    text = re.sub(r"\(\d+(\.\d+)?m?s\)", "(<elapsed>)", text)
    return text.replace(str(base), "<base>")


def answers(trove, vault):
    """What the commands a test starts with print."""
    cmds = [("status",), ("collection", "list", "--json"), ("ls",),
            ("search", "bread", "--json"), ("search", "trip", "-n", "20", "--json"),
            ("query", "how to bake", "--json"), ("links", "travel/kyoto-2023.md", "--json"),
            ("get", "travel/lisbon.md"), ("check",), ("snapshot", "list")]
    out = []
    for c in cmds:
        r = trove(*c)
        out.append((c, plain("%d\n%s\n%s" % (r.rc, r.out, r.err), trove.home.parent)))
    return out


def change(vault):
    """A note changed, one deleted, one added, one only touched."""
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nA fado evening in Alfama.\n")
    bump_mtime(p)
    (vault / "inbox" / "reading-list.md").unlink()
    (vault / "new-note.md").write_text("# New note\n\nAbout [[lisbon]] and bread.\n")
    bump_mtime(vault / "travel" / "packing-list.md")


def test_copy_answers_like_a_fresh_build_before_and_after_changes(trove, vault, tmp_path):
    template().copy_to(trove)
    ft, fv, _ = fresh(tmp_path, "fresh")
    assert answers(trove, vault) == answers(ft, fv)
    change(vault)
    change(fv)
    r1, r2 = trove.ok("update"), ft.ok("update")
    assert plain(r1.out, tmp_path) == plain(r2.out, tmp_path / "fresh")
    assert "1 new" in r1.out or "new: 1" in r1.out, r1
    assert answers(trove, vault) == answers(ft, fv)


def test_index_vault_copies_only_where_nothing_differs(trove, vault, tmp_path):
    tpl = template()

    def recopy():
        shutil.rmtree(vault)
        shutil.copytree(FIXTURE_VAULT, vault, symlinks=True)
    assert tpl.refusal(trove, vault) is None
    (vault / "extra.md").write_text("# Extra\n")
    assert tpl.refusal(trove, vault) == "the vault is not the fixture"
    recopy()
    assert tpl.refusal(trove, vault) is None
    bump_mtime(vault / "travel" / "lisbon.md")      # same bytes, another time
    assert tpl.refusal(trove, vault) == "the vault is not the fixture"
    recopy()
    trove.env["TROVE_LANG"] = "fr"
    assert tpl.refusal(trove, vault) == "the environment is not the plain one"
    del trove.env["TROVE_LANG"]
    assert tpl.refusal(trove, vault) is None
    trove.config.mkdir(parents=True)
    (trove.config / "config.yaml").write_text("collections:\n")
    assert tpl.refusal(trove, vault) == "the home is not empty"
    other = Trove(tmp_path / "elsewhere")
    assert tpl.refusal(other, vault) == "not laid out as BASE/env + BASE/vault"
    shutil.rmtree(other.run_dir, ignore_errors=True)


@pytest.mark.parametrize("trove_mode", ["daemon"], indirect=True)
def test_indexed_in_daemon_mode_starts_from_the_copy(indexed):
    """The fixture as most tests meet it: the daemon serves the copy."""
    trove, vault = indexed
    assert trove.paths("bread")
    assert trove.ok("status").out.count("notes: 23") == 1
