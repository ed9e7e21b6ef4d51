"""Metadata and time: --where on typed frontmatter, note dates with
--since/--until, the --recent prior, --heading and --passages; every
option in every output format, cold and (DAEMON_BOTH_WAYS) through the
daemon byte for byte. Fixture: fixtures/meta (typed frontmatter, notes
dated by file name, a long note with sections)."""
import csv
import io
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO, daemon_both_ways, index_vault

DAEMON_BOTH_WAYS = True
NOW = 1780000000                     # 2026-05-28 (TROVE_NOW)
MTIME = NOW - 10 * 86400             # undated notes: 2026-05-18
FORMATS = ("--json", "--csv", "--md", "--xml", "--files", None)


def index_meta(trove, tmp_path):
    vault = tmp_path / "meta"
    shutil.copytree(REPO / "fixtures" / "meta", vault)
    for p in vault.rglob("*.md"):
        os.utime(p, (MTIME, MTIME))
    trove.env["TROVE_NOW"] = str(NOW)
    index_vault(trove, vault, "m")    # add + update, or a template's copy
    return vault


@pytest.fixture
def meta(trove, tmp_path, trove_mode):
    index_meta(trove, tmp_path)
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove


@pytest.fixture
def cold_meta(trove, tmp_path):
    """The vault indexed, for tests that change the index (cold only)."""
    return trove, index_meta(trove, tmp_path)


def paths(trove, *args):
    return sorted(r["path"] for r in trove.search(*args, "--all"))


PROJECTS = {"projects/alpha.md", "projects/beta.md", "projects/gamma.md"}


@pytest.mark.parametrize("expr,want", [
    ("status=done", {"projects/alpha.md", "projects/gamma.md",
                     "meetings/2025-06-02 Planning.md"}),
    ("status=DONE", {"projects/alpha.md", "projects/gamma.md",
                     "meetings/2025-06-02 Planning.md"}),
    ("priority>=2", {"projects/alpha.md"}),          # gamma's "2" is quoted: text
    ("priority<3", {"projects/beta.md"}),
    ("priority=2", {"projects/gamma.md"}),           # same text
    ("tags~=proj/*", PROJECTS),
    ("tags=work", {"projects/alpha.md"}),
    ("author in (ana, li)", PROJECTS),               # gamma: a list, one element matches
    ("due<2026-01-01", {"projects/alpha.md"}),
    ("due<=2025-11-30", {"projects/alpha.md"}),
    ("due>2025-11-30", {"projects/beta.md"}),
    ("exists(due)", {"projects/alpha.md", "projects/beta.md"}),
    ("archived=true", {"projects/gamma.md"}),
    ("archived=false", {"projects/alpha.md"}),
    ("status='done'", {"projects/alpha.md", "projects/gamma.md",
                       "meetings/2025-06-02 Planning.md"}),
])
def test_where_typed(meta, expr, want):
    assert set(paths(meta, "crane", "--where", expr)) == want


def test_where_negations_and_and(meta):
    every = set(paths(meta, "crane"))
    assert set(paths(meta, "crane", "--where", "status!=draft")) == every - {"projects/beta.md"}
    assert set(paths(meta, "crane", "--where", "!exists(due)")) == \
        every - {"projects/alpha.md", "projects/beta.md"}
    # not in, like !=, keeps the notes without the field
    assert set(paths(meta, "crane", "--where", "author not in (ana)")) == \
        every - {"projects/alpha.md", "projects/gamma.md"}
    assert paths(meta, "crane", "--where", "status=done", "--where", "priority>=3") == \
        ["projects/alpha.md"]


def test_dates_and_sources(meta):
    got = {r["path"]: (r["date"], r["date_source"]) for r in meta.search("crane", "--all")}
    assert got["projects/alpha.md"] == ("2025-03-10", "frontmatter:date")
    assert got["projects/beta.md"] == ("2024-12-01", "frontmatter:created")
    assert got["daily/2024-05-01.md"] == ("2024-05-01", "filename")
    assert got["daily/2026-W14.md"] == ("2026-03-30", "filename")      # Monday of ISO week 14
    assert got["meetings/20240501 Standup.md"] == ("2024-05-01", "filename")
    assert got["meetings/undated.md"] == ("2026-05-18", "mtime")


@pytest.mark.parametrize("flags,want", [
    (["--since", "2025-01-01", "--until", "2025-12-31"],
     {"projects/alpha.md", "meetings/2025-06-02 Planning.md"}),
    (["--until", "2024-05-01"], {"daily/2024-05-01.md", "meetings/20240501 Standup.md"}),
    (["--since", "2024-05", "--until", "2024-05"],
     {"daily/2024-05-01.md", "meetings/20240501 Standup.md"}),
    (["--since", "2w"], {"meetings/undated.md", "projects/gamma.md"}),
    (["--since", "this-year", "--until", "2026-W14"], {"daily/2026-W14.md"}),
    (["--since", "20241201", "--until", "20241201"], {"projects/beta.md"}),
])
def test_since_until(meta, flags, want):
    assert set(paths(meta, "crane", *flags)) == want


def test_recent_prior(meta):
    plain = meta.search("crane telemetry", "--all", "--explain")
    assert all(r["explain"]["recency"] == 1.0 for r in plain)
    rec = meta.search("crane telemetry", "--all", "--explain", "--recent")
    by = {r["path"]: r for r in rec}
    assert by["meetings/undated.md"]["explain"]["recency"] > 0.9
    assert by["daily/2024-05-01.md"]["explain"]["recency"] < 0.55
    scores = [r["score"] for r in rec]
    assert scores == sorted(scores, reverse=True)
    # the config turns it on; --no-recent off again
    (meta.config / "config.yaml").write_text(
        (meta.config / "config.yaml").read_text() + "recency:\n  half_life: 30d\n")
    on = {r["path"]: r["explain"]["recency"] for r in meta.search("crane", "--all", "--explain")}
    assert on["daily/2024-05-01.md"] < 0.51
    off = meta.search("crane", "--all", "--explain", "--no-recent")
    assert all(r["explain"]["recency"] == 1.0 for r in off)
    text = meta.ok("search", "crane", "--explain", "--recent").out
    assert "recency x" in text and "date 2024-05-01 (filename)" in text


def test_heading_restricts_passages(meta):
    res = meta.search("crane", "--heading", "risks", "--all")
    assert [r["path"] for r in res] == ["meetings/2025-06-02 Planning.md"]
    assert res[0]["heading_path"][-1] == "Risks"
    res = meta.search("budget", "--heading", "crane maint")
    assert res and all("Crane maintenance" in r["heading_path"] for r in res)


def test_passages(meta):
    one = meta.search("crane", "--folder", "m/meetings", "-n", "1")[0]
    res = meta.search("crane", "--folder", "m/meetings", "-n", "1", "--passages", "3")[0]
    for k in ("path", "line_start", "line_end", "start_byte", "end_byte", "heading_path", "score"):
        assert res[k] == one[k]            # the note's best passage and rank unchanged
    ps = res["passages"]
    assert 2 <= len(ps) <= 3
    assert (ps[0]["line_start"], ps[0]["start_byte"]) == (res["line_start"], res["start_byte"])
    assert len({p["start_byte"] for p in ps}) == len(ps)
    assert [p["score"] for p in ps[1:]] == sorted((p["score"] for p in ps[1:]), reverse=True)
    two = meta.search("crane", "--folder", "m/meetings", "-n", "1", "--passages", "2")[0]
    assert len(two["passages"]) == 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_option_every_format(meta, fmt):
    args = ["search", "crane telemetry", "--where", "status=done", "--since", "2000-01-01",
            "--until", "2030-01-01", "--recent", "--heading", "crane", "--passages", "3",
            "--explain"]
    r = meta.ok(*args, *([fmt] if fmt else []))
    assert "Planning" in r.out
    if fmt == "--csv":
        rows = list(csv.DictReader(io.StringIO(r.out)))
        assert rows[0]["date"] == "2025-06-02" and rows[0]["date_source"] == "filename"
    elif fmt == "--xml":
        root = ET.fromstring(r.out)
        assert root.find("result").get("date") == "2025-06-02"
        assert root.find("result").findall("passage")
    elif fmt == "--md":
        assert "- date: 2025-06-02 (filename)" in r.out
    for cmd in ("vsearch", "query"):
        r = meta(cmd, "crane", "--where", "status=done", "--since", "2000-01-01", "--passages",
                 "2", *([fmt] if fmt else []))
        assert r.rc in (0, 1), r           # vsearch without a model: an error, not a crash
        if cmd == "query":
            assert r.rc == 0, r


@pytest.mark.parametrize("args,rc,msg", [
    (["--where", "priority>=high"], 2, "compares numbers and dates"),
    (["--where", "status"], 2, "no operator"),
    (["--where", "author in (a"], 2, "list in parentheses"),
    (["--where", "nosuch=1"], 1, "no note has a field `nosuch`"),
    (["--since", "2024-02-30"], 2, "not a date"),
    (["--until", "yesterdayish"], 2, "not a date"),
    (["--passages", "0"], 2, "--passages"),
    (["--where"], 2, "--where needs"),
])
def test_bad_input(meta, args, rc, msg):
    r = meta("search", "crane", *args)
    assert r.rc == rc and msg in r.err, r


def test_empty_vault(trove, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    trove.ok("collection", "add", empty, "--name", "e")
    trove.ok("update")
    r = trove("search", "x", "--where", "status=done")
    assert r.rc == 1 and "no note has frontmatter fields" in r.err, r
    r = trove("search", "x", "--since", "7d", "--passages", "2", "--recent")
    assert r.rc == 0 and "no results" in r.out, r


def test_schema_5_is_upgraded_in_place(cold_meta):
    """v5 -> v6: meta retyped as plain scalars (old indexes kept text) and
    the fields table filled, file-name dates included, no note re-read."""
    import sqlite3
    meta, _ = cold_meta
    db = sqlite3.connect(str(meta.index))
    db.execute("DROP TABLE fields")
    # what trove 5 stored: every scalar as text
    db.execute("UPDATE docs SET meta = '{\"status\":\"done\",\"priority\":\"3\",\"author\":\"ana\","
               "\"due\":\"2025-11-30\",\"date\":\"2025-03-10\",\"archived\":\"false\"}'"
               " WHERE path = 'projects/alpha.md'")
    db.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = meta("search", "crane", "--where", "priority>=3")
    assert r.rc == 1 and "trove update" in r.err, r
    meta.ok("update")
    assert paths(meta, "crane", "--where", "priority>=3") == ["projects/alpha.md"]
    assert paths(meta, "crane", "--where", "archived=false") == ["projects/alpha.md"]
    got = {r["path"]: r["date_source"] for r in meta.search("crane", "--all")}
    assert got["daily/2026-W14.md"] == "filename"
    db = sqlite3.connect(str(meta.index))
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "10"
    db.close()


def test_rollback_restores_fields(cold_meta):
    meta, vault = cold_meta
    before = paths(meta, "crane", "--where", "status=draft")
    assert before == ["projects/beta.md"]
    beta = vault / "projects" / "beta.md"
    beta.write_text(beta.read_text().replace("status: draft", "status: done"))
    meta.ok("update")
    r = meta("search", "crane", "--where", "status=draft")
    assert r.rc == 0 and "no results" in r.out, r
    meta.ok("snapshot", "rollback", "1")
    assert paths(meta, "crane", "--where", "status=draft") == ["projects/beta.md"]


def test_config_dates_and_recency(cold_meta, tmp_path):
    meta, _ = cold_meta
    cfg = meta.config / "config.yaml"
    base = cfg.read_text()
    # dates: keys in the order given: `created` before `date`
    cfg.write_text(base + "dates:\n  keys: [due, created]\n")
    got = {r["path"]: (r["date"], r["date_source"]) for r in meta.search("crane", "--all")}
    assert got["projects/alpha.md"] == ("2025-11-30", "frontmatter:due")
    assert got["projects/beta.md"] == ("2026-03-01", "frontmatter:due")
    # a config rewrite (collection add) keeps both sections
    cfg.write_text(base + "dates:\n  keys: [due]\nrecency:\n  half_life: 6m\n")
    other = tmp_path / "other"
    other.mkdir()
    meta.ok("collection", "add", other, "--name", "o")
    text = cfg.read_text()
    assert "dates:" in text and "due" in text and "half_life: \"6m\"" in text.replace("'", '"'), text
    for bad, msg in (("recency:\n  half_life: soon\n", "'recency' must be"),
                     ("recency:\n  half: 9d\n", "'recency' must be"),
                     ("dates: [date]\n", "'dates' must be"),
                     ("dates:\n  keys: [date]\n  extra: 1\n", "unknown key 'extra'")):
        cfg.write_text(base + bad)
        r = meta("search", "crane")
        assert r.rc != 0 and msg in r.err, (bad, r)


def test_schema_6_is_upgraded_to_7(cold_meta):
    """v6 -> v7: note_meta (one packed metadata record per note) written
    from the fields, tags and aliases the index holds; filters and dates
    read it, `check` finds it whole."""
    import sqlite3
    meta, _ = cold_meta
    want = {r["path"]: (r["date"], r["date_source"]) for r in meta.search("crane", "--all")}
    db = sqlite3.connect(str(meta.index))
    db.execute("DROP TABLE note_meta")
    db.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = meta("search", "crane", "--where", "priority>=3")
    assert r.rc == 1 and "trove update" in r.err, r
    meta.ok("update")
    db = sqlite3.connect(str(meta.index))
    assert db.execute("SELECT count(*) FROM note_meta").fetchone()[0] == \
        db.execute("SELECT count(*) FROM docs").fetchone()[0] > 0
    db.close()
    assert paths(meta, "crane", "--where", "priority>=3") == ["projects/alpha.md"]
    assert paths(meta, "crane", "--where", "tags~=proj/*") == sorted(PROJECTS)
    got = {r["path"]: (r["date"], r["date_source"]) for r in meta.search("crane", "--all")}
    assert got == want
    meta.ok("check")


def test_check_reports_a_damaged_metadata_record(cold_meta):
    import sqlite3
    meta, _ = cold_meta
    meta.ok("check")
    db = sqlite3.connect(str(meta.index))
    alpha = db.execute("SELECT id FROM docs WHERE path = 'projects/alpha.md'").fetchone()[0]
    # a record that no longer says status: done, and one record gone
    db.execute("UPDATE note_meta SET rec = replace(rec, CAST('done' AS BLOB), CAST('dune' AS BLOB))"
               " WHERE doc_id = ?", (alpha,))
    db.execute("DELETE FROM note_meta WHERE doc_id = (SELECT id FROM docs"
               " WHERE path = 'projects/gamma.md')")
    db.commit()
    r = meta("check")
    assert r.rc == 1 and "2 notes have a metadata record (note_meta)" in r.out, r
    # cut short: search says the record is malformed, no crash
    db.execute("UPDATE note_meta SET rec = substr(rec, 1, 20) WHERE doc_id = ?", (alpha,))
    db.commit()
    db.close()
    r = meta("search", "crane", "--where", "status=done")
    assert r.rc != 0 and "malformed metadata record" in r.err, r
    meta.ok("update", "--rebuild")
    meta.ok("check")
    assert "projects/alpha.md" in paths(meta, "crane", "--where", "status=done")


def test_touch_updates_the_record_file_time(cold_meta):
    """An undated note dates by its file time: a touch (same bytes) moves
    its date, and its record with it."""
    meta, vault = cold_meta
    p = vault / "meetings" / "undated.md"
    os.utime(p, (NOW - 400 * 86400, NOW - 400 * 86400))
    meta.ok("update")
    got = {r["path"]: (r["date"], r["date_source"]) for r in meta.search("crane", "--all")}
    assert got["meetings/undated.md"] == ("2025-04-23", "mtime"), got
    assert "meetings/undated.md" not in paths(meta, "crane", "--since", "2026-01-01")
    assert "meetings/undated.md" in paths(meta, "crane", "--until", "2026-01-01")
    meta.ok("check")


def test_schema_7_is_upgraded_to_8(cold_meta):
    """v7 -> v8: note_map (the chunk -> note and note -> date arrays) built
    from the chunks and records the index holds; the same results."""
    import sqlite3
    meta, _ = cold_meta
    cases = [("--since", "2026-01-01"), ("--until", "2025-01-01"), ("--where", "status=done"),
             ("--since", "2025-01-01", "--where", "status=done")]
    want = {c: paths(meta, "crane", *c) for c in cases}
    db = sqlite3.connect(str(meta.index))
    db.execute("DROP TABLE note_map")
    db.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    meta.ok("update")
    db = sqlite3.connect(str(meta.index))
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "10"
    # one segment: its chunk row, its date row, its field columns, its
    # notes' in-degrees and languages (v10) and its chunk lengths (v9)
    assert [r[0] for r in db.execute("SELECT id FROM note_map ORDER BY id")] == [0, 1, 2, 3, 7]
    db.close()
    assert {c: paths(meta, "crane", *c) for c in cases} == want
    meta.ok("check")


def test_check_reports_a_stale_note_map(cold_meta):
    import sqlite3
    meta, _ = cold_meta
    db = sqlite3.connect(str(meta.index))
    db.execute("UPDATE note_map SET data = zeroblob(length(data)) WHERE id = 1")
    db.commit()
    db.close()
    r = meta("check")
    assert r.rc == 1 and "1 rows of the note map (note_map) do not match" in r.out, r
    meta.ok("update", "--rebuild")
    meta.ok("check")


def test_note_map_follows_deletes_adds_and_rollback(cold_meta):
    """A deleted note's chunk ids go to the next note added: the map and
    the dates follow, `check` agrees, and a rollback brings both back."""
    meta, vault = cold_meta
    assert "projects/alpha.md" in paths(meta, "crane", "--until", "2025-04-01")
    (vault / "projects" / "alpha.md").unlink()
    (vault / "projects" / "delta.md").write_text(
        "---\ndate: 2019-02-03\nstatus: done\n---\n# Delta\n\nThe crane came back.\n")
    meta.ok("update")
    assert paths(meta, "crane", "--until", "2019-03-01") == ["projects/delta.md"]
    assert "projects/delta.md" not in paths(meta, "crane", "--since", "2019-03-01")
    assert "projects/alpha.md" not in paths(meta, "crane", "--until", "2025-04-01")
    meta.ok("check")
    meta.ok("snapshot", "rollback", "1")
    r = meta("search", "crane", "--until", "2019-03-01")
    assert r.rc == 0 and "no results" in r.out, r
    assert "projects/alpha.md" in paths(meta, "crane", "--until", "2025-04-01")
    meta.ok("check")


WHERE_CASES = [("--where", "status=done"), ("--where", "status!=done"), ("--where", "priority>=2"),
               ("--where", "priority='2'"), ("--where", "author in (ana, li)"),
               ("--where", "author not in (li)"), ("--where", "author~=A*"),
               ("--where", "due<=2025-11-30"), ("--where", "!exists(due)"),
               ("--where", "archived=false"), ("--where", "tags~=proj/*"),
               ("--where", "status=done", "--where", "author=ana", "--since", "2025-01-01")]


def test_schema_8_is_upgraded_to_9(cold_meta):
    """v8 -> v9: note_map's rows renumbered (segment * 16 + kind) and the
    field columns (kind 2) built from the records, no note re-read; the
    same results, `check` finds the map whole."""
    import sqlite3
    meta, _ = cold_meta
    want = {c: paths(meta, "crane", *c) for c in WHERE_CASES}
    db = sqlite3.connect(str(meta.index))
    # what trove 8 wrote: rows segment * 2 + kind, kinds 0 and 1 only
    db.execute("DELETE FROM note_map WHERE id % 16 > 1")
    db.execute("UPDATE note_map SET id = (id / 16) * 2 + id % 16")
    db.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = meta("search", "crane", "--where", "status=done")
    assert r.rc == 1 and "trove update" in r.err, r
    meta.ok("update")
    db = sqlite3.connect(str(meta.index))
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "10"
    assert [r[0] for r in db.execute("SELECT id FROM note_map ORDER BY id")] == [0, 1, 2, 3, 7]
    db.close()
    assert {c: paths(meta, "crane", *c) for c in WHERE_CASES} == want
    meta.ok("check")


def test_schema_9_is_upgraded_to_10(cold_meta):
    """v9 -> v10: note_map kind 3 (each note's in-degree and language, the
    link prior's inputs) built from the docs rows, no note re-read; the
    same results and scores, `check` finds the map whole and reports a
    kind-3 row that disagrees with the docs rows."""
    import sqlite3
    meta, _ = cold_meta
    cases = [("crane",), ("crane", "--explain"), ("crane", "--where", "status=done")]
    want = {c: meta.search(*c) for c in cases}
    db = sqlite3.connect(str(meta.index))
    db.execute("DELETE FROM note_map WHERE id % 16 = 3")   # what trove 9 wrote
    db.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = meta("search", "crane")
    assert r.rc == 1 and "trove update" in r.err, r
    meta.ok("update")
    db = sqlite3.connect(str(meta.index))
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "10"
    assert [r[0] for r in db.execute("SELECT id FROM note_map ORDER BY id")] == [0, 1, 2, 3, 7]
    row = db.execute("SELECT data FROM note_map WHERE id = 3").fetchone()[0]
    assert len(row) % 4 == 0 and len(row) >= 8
    meta.ok("check")
    assert {c: meta.search(*c) for c in cases} == want
    # a stale in-degree: search would read it, check says so
    db.execute("UPDATE note_map SET data = ? WHERE id = 3",
               (row[:4] + bytes([row[4] + 1]) + row[5:],))
    db.commit()
    db.close()
    r = meta("check")
    assert r.rc == 1 and "1 rows of the note map (note_map) do not match" in r.out, r
    meta.ok("update", "--rebuild")
    meta.ok("check")


def test_field_columns_damaged_or_stale(cold_meta):
    """A malformed field-column row: search falls back to the records (the
    same results); `check` reports it, and a changed value in a
    well-formed row too; a rebuild repairs both."""
    import sqlite3
    meta, vault = cold_meta
    want = {c: paths(meta, "crane", *c) for c in WHERE_CASES}
    db = sqlite3.connect(str(meta.index))
    good = db.execute("SELECT data FROM note_map WHERE id = 2").fetchone()[0]
    assert b"status" in good and b"draft" in good
    db.execute("UPDATE note_map SET data = substr(data, 1, 7) WHERE id = 2")
    db.commit()
    assert {c: paths(meta, "crane", *c) for c in WHERE_CASES} == want
    r = meta("check")
    assert r.rc == 1 and "1 rows of the note map (note_map) do not match" in r.out, r
    # well formed but stale: `draft` now reads `drafu`
    db.execute("UPDATE note_map SET data = ? WHERE id = 2", (good.replace(b"draft", b"drafu"),))
    db.commit()
    db.close()
    r = meta("check")
    assert r.rc == 1 and "1 rows of the note map (note_map) do not match" in r.out, r
    meta.ok("update", "--rebuild")
    meta.ok("check")
    assert {c: paths(meta, "crane", *c) for c in WHERE_CASES} == want


def test_field_columns_follow_edits_and_rollback(cold_meta):
    """An edit changes a note's value in its column at commit; a rollback
    brings the old one back; `check` agrees each time."""
    meta, vault = cold_meta
    assert paths(meta, "crane", "--where", "author=ana") == ["projects/alpha.md",
                                                               "projects/gamma.md"]
    beta = vault / "projects" / "beta.md"
    text = beta.read_text()
    assert "status: draft" in text
    beta.write_text(text.replace("status: draft", "status: done")
                    .replace("author: li", "author: [li, zoe]"))
    meta.ok("update")
    assert "projects/beta.md" in paths(meta, "crane", "--where", "author=zoe")
    assert "projects/beta.md" in paths(meta, "crane", "--where", "status=done")
    r = meta("search", "crane", "--where", "status=draft")
    assert r.rc == 0 and "no results" in r.out, r
    meta.ok("check")
    meta.ok("snapshot", "rollback", "1")
    assert paths(meta, "crane", "--where", "status=draft") == ["projects/beta.md"]
    assert "projects/beta.md" not in paths(meta, "crane", "--where", "author=zoe")
    meta.ok("check")
