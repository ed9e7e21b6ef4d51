"""Index snapshots: `trove snapshot list|rollback`, the snapshot in `status`
(text, --json, MCP), retention from config.yaml, and that a rollback gives
back searchable notes (and their vectors) at once, passes `trove check`, and
that `trove update` then brings the index forward again.

Every test on `indexed` also runs through a daemon: searches after a
rollback must find the same notes through it as cold."""
import json
import sqlite3
import subprocess
import time


from conftest import COLLECTION, bump_mtime, trove_bin

DAEMON_BOTH_WAYS = True

SNAPSHOT_FIELDS = {"id", "current", "time", "created_at", "kind", "note", "notes",
                   "chunks", "links", "added", "removed", "modified", "changed"}


PASTA = "cooking/recipes/pasta-carbonara.md"


def snapshots(trove, *flags):
    return trove.ok("snapshot", "list", "--json", *flags).json()


def current(trove):
    return snapshots(trove)["current"]


def test_first_update_is_snapshot_one(indexed):
    trove, vault = indexed
    doc = snapshots(trove)
    assert doc["version"] == 1 and doc["current"] == 1
    assert doc["keep"] == {"last": 5, "minutes": 60, "hourly": 24, "daily": 30}
    assert doc["oldest"] == doc["newest"] == doc["snapshots"][0]["created_at"]
    [s] = doc["snapshots"]
    assert set(s) == SNAPSHOT_FIELDS
    assert s["id"] == 1 and s["current"] is True and s["kind"] == "update"
    assert s["notes"] == s["added"] == s["changed"] > 20
    assert s["time"].endswith("Z") and s["created_at"] > 0
    text = trove.ok("snapshot", "list").out
    assert text.splitlines()[1].startswith("*   1  "), text


def test_update_without_change_is_no_snapshot(indexed):
    trove, vault = indexed
    r = trove.ok("update")
    assert current(trove) == 1
    assert "snapshot" not in r.out, r.out
    # same bytes, later mtime: the stored file time changes, no note does:
    # no snapshot
    bump_mtime(vault / "travel" / "lisbon.md")
    r = trove.ok("update")
    assert current(trove) == 1 and "snapshot" not in r.out, r.out
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nedited\n")
    bump_mtime(p, 10)
    r = trove.ok("update")
    doc = snapshots(trove)
    assert doc["current"] == 2 and doc["snapshots"][0]["changed"] == 1
    # update names the snapshot it committed
    assert r.out.splitlines()[-1] == "snapshot 2 (`trove snapshot list`)", r.out


def test_rollback_brings_a_deleted_note_back(indexed):
    trove, vault = indexed
    assert "cooking/recipes/pasta-carbonara.md" in trove.paths("carbonara")
    (vault / "cooking" / "recipes" / "pasta-carbonara.md").unlink()
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nA new line about azulejos.\n")
    bump_mtime(p)
    trove.ok("update")
    assert PASTA not in trove.paths("carbonara")
    assert "travel/lisbon.md" in trove.paths("azulejos")
    doc = snapshots(trove)
    assert doc["current"] == 2
    s = doc["snapshots"][0]
    assert (s["added"], s["removed"], s["modified"], s["changed"]) == (0, 1, 1, 2)

    r = trove.ok("snapshot", "rollback", "1")
    assert "rolled back from snapshot 2 to 1, committed as snapshot 3" in r.out, r
    assert "1 restored" in r.out and "1 reverted" in r.out, r
    assert "run `trove update` to bring it forward to the files on disk" in r.out, r
    # searchable again at once, cold and through the daemon
    assert PASTA in trove.paths("carbonara")
    assert trove.paths("azulejos") == []
    trove.ok("check")
    doc = snapshots(trove)
    assert doc["current"] == 3
    top = doc["snapshots"][0]
    assert top["kind"] == "rollback" and top["note"] == "rollback to 1"
    assert top["notes"] == doc["snapshots"][2]["notes"]

    # status: the snapshot, and the files on disk are ahead of it
    st = trove.ok("status").out
    assert "snapshot: 3 of " in st and "(rollback;" in st, st
    assert "since last update:" in st and "1 deleted" in st, st

    # update brings it forward to the files again
    trove.ok("update")
    assert PASTA not in trove.paths("carbonara")
    assert "travel/lisbon.md" in trove.paths("azulejos")
    assert current(trove) == 4
    trove.ok("check")


def test_rollback_of_a_rollback(indexed):
    trove, vault = indexed
    (vault / "travel" / "kyoto-2023.md").unlink()
    trove.ok("update")
    before = trove.ok("ls", COLLECTION).out
    trove.ok("snapshot", "rollback", "1")
    assert "kyoto-2023.md" in trove.ok("ls", COLLECTION).out
    trove.ok("snapshot", "rollback", "2")
    assert trove.ok("ls", COLLECTION).out == before
    assert current(trove) == 4
    trove.ok("check")
    # the current one: nothing to do
    r = trove.ok("snapshot", "rollback", "4")
    assert "already the current one" in r.out
    assert current(trove) == 4


def test_rollback_json(indexed):
    trove, vault = indexed
    (vault / "travel" / "chengdu.md").unlink()
    trove.ok("update")
    doc = trove.ok("snapshot", "rollback", "1", "--json").json()
    assert doc["version"] == 1 and doc["from"] == 2 and doc["to"] == 1
    assert doc["noop"] is False and doc["files_differ"] is True
    assert set(doc["snapshot"]) == SNAPSHOT_FIELDS
    assert doc["snapshot"]["id"] == 3 and doc["snapshot"]["added"] == 1
    again = trove.ok("snapshot", "rollback", "3", "--json").json()
    assert again["noop"] is True and again["snapshot"]["id"] == 3


def test_bad_ids_and_usage(indexed):
    trove, vault = indexed
    r = trove("snapshot", "rollback", "99")
    assert r.rc == 1 and "no snapshot 99 to roll back to" in r.err, r
    assert "the index keeps snapshots 1" in r.err, r
    for bad in ("0", "-3", "x", "1.5", ""):
        r = trove("snapshot", "rollback", bad)
        assert r.rc == 2, r
    assert trove("snapshot").rc == 2
    assert trove("snapshot", "frobnicate").rc == 2
    assert trove("snapshot", "rollback").rc == 2
    assert trove("snapshot", "list", "-n", "0").rc == 2
    assert trove("snapshot", "list", "extra").rc == 2
    assert current(trove) == 1
    assert "list|rollback" in trove.ok("--help").out


def test_list_limit(indexed):
    trove, vault = indexed
    for i in range(3):
        p = vault / "inbox" / "reading-list.md"
        p.write_text(p.read_text() + "\nmore %d\n" % i)
        bump_mtime(p, 10 + i)
        trove.ok("update")
    assert [s["id"] for s in snapshots(trove)["snapshots"]] == [4, 3, 2, 1]
    assert [s["id"] for s in snapshots(trove, "-n", "2")["snapshots"]] == [4, 3]
    # header, one row, the legend, the span it covers, what keeps them
    assert len(trove.ok("snapshot", "list", "-n1").out.splitlines()) == 5


def test_retention_from_config(indexed):
    trove, vault = indexed
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "snapshots: 2\n")
    for i in range(3):
        p = vault / "inbox" / "reading-list.md"
        p.write_text(p.read_text() + "\nmore %d\n" % i)
        bump_mtime(p, 10 + i)
        trove.ok("update")
    doc = snapshots(trove)
    assert doc["keep"] == {"last": 2, "minutes": 0, "hourly": 0, "daily": 0}
    assert [s["id"] for s in doc["snapshots"]] == [4, 3]
    assert "the older form `snapshots: N`" in trove.ok("snapshot", "list").out
    r = trove("snapshot", "rollback", "2")
    assert r.rc == 1 and "snapshots 3, 4" in r.err, r
    # the config is kept when trove rewrites it
    trove.ok("context", "add", COLLECTION, "notes")
    assert "snapshots: 2" in cfg.read_text()
    trove.ok("snapshot", "rollback", "3")
    trove.ok("check")
    cfg.write_text(cfg.read_text().replace("snapshots: 2", "snapshots: 0"))
    r = trove("snapshot", "list")
    assert r.rc == 1 and "or a whole number from 1 to 1000" in r.err, r


def test_collection_remove_rolls_back(indexed):
    trove, vault = indexed
    assert PASTA in trove.paths("carbonara")
    trove.ok("collection", "remove", COLLECTION)
    assert trove.paths("carbonara", both=False) == []
    s = snapshots(trove)["snapshots"][0]
    assert s["kind"] == "collection" and s["note"] == "remove vault" and s["notes"] == 0
    r = trove.ok("snapshot", "rollback", "1")
    assert "collection 'vault' is back in config.yaml\n" in r.out, r
    trove.ok("check")
    # the notes are back in the index, and the collection in config.yaml
    # with its settings (masks, contexts): the next update keeps them
    assert PASTA in trove.paths("carbonara", both=False)
    assert COLLECTION in trove.ok("collection", "list").out
    r = trove.ok("update")
    assert "0 new, 0 changed, 0 renamed, 0 deleted" in r.out and "snapshot" not in r.out, r
    assert PASTA in trove.paths("carbonara", both=False)


def test_collection_remove_keeps_masks_and_contexts_for_rollback(trove, vault):
    trove.ok("collection", "add", vault, "--name", "v", "--mask", "cooking/**/*.md",
             "--exclude", "cooking/mapo*")
    trove.ok("context", "add", "v/cooking", "Recipes")
    trove.ok("update")
    cfg = (trove.config / "config.yaml").read_text()
    trove.ok("collection", "remove", "v")
    assert "cooking" not in (trove.config / "config.yaml").read_text()
    r = trove.ok("snapshot", "rollback", "1", "--json").json()
    assert r["restored_collections"] == ["v"], r
    assert (trove.config / "config.yaml").read_text() == cfg
    r = trove.ok("update")
    assert "0 new, 0 changed, 0 renamed, 0 deleted" in r.out, r
    # dropped by an update after a hand edit: no settings recorded
    other = vault.parent / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nx\n")
    (trove.config / "config.yaml").write_text('collections:\n  o:\n    path: "%s"\n' % other)
    trove.ok("update")
    assert "v/" not in trove.ok("ls").out
    r = trove.ok("snapshot", "rollback", "3")   # the rollback above: undoes the drop only
    assert "collection 'v' is back in config.yaml (its masks were not recorded" in r.out, r
    assert "path:" in (trove.config / "config.yaml").read_text()


def test_touch_is_no_snapshot(indexed):
    """A file whose time alone changed: its stored time is updated, no
    snapshot is written, and the history stays."""
    trove, vault = indexed
    p = vault / "travel" / "lisbon.md"
    p.write_text(p.read_text() + "\nedited\n")
    bump_mtime(p, 20)
    trove.ok("update")
    before = snapshots(trove)
    for i in range(3):
        bump_mtime(p, 30 + i)
        r = trove.ok("update")
        assert " 0 changed," in r.out and "snapshot" not in r.out, r
        st = trove.ok("status", "--json", both=False).json()
        assert st["collections"][0]["fresh"]["changed"] == 0, st
    assert snapshots(trove) == before


def test_retention_merges_by_hour_and_day(indexed):
    """With TROVE_NOW (tests only) a day passes in a few commands: the
    snapshots of an hour merge into its newest one, rollback to each kept
    one still gives exactly its notes, and the list says what it covers."""
    trove, vault = indexed
    trove.env["TZ"] = "UTC"
    day = (int(time.time()) // 86400 + 2) * 86400    # snapshot 1 is alone in its day
    p = vault / "inbox" / "reading-list.md"
    words = {}
    for i, t in enumerate([9 * 3600, 9 * 3600 + 60, 9 * 3600 + 120, 12 * 3600, 12 * 3600 + 30,
                           15 * 3600]):
        p.write_text(p.read_text() + "\nword%d\n" % i)
        bump_mtime(p, 40 + i)
        trove.ok("update", env={"TROVE_NOW": str(day + t)})
        words[current(trove)] = i
    # the newest 5 always; 2 (09:00, not the newest of its hour) merged
    # into 3; 1 kept as the newest of its day
    assert [s["id"] for s in snapshots(trove)["snapshots"]] == [7, 6, 5, 4, 3, 1]
    r = trove.ok("snapshot", "list")
    assert "6 snapshots covering" in r.out and "kept: every one of the last 60 minutes" in r.out, r
    # without "the newest 5" the hours decide alone: 3 into 4, 5 into 6
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "snapshots: {last: 1}\n")
    p.write_text(p.read_text() + "\nlast\n")
    bump_mtime(p, 60)
    trove.ok("update", env={"TROVE_NOW": str(day + 15 * 3600 + 10)})
    doc = snapshots(trove)
    assert [s["id"] for s in doc["snapshots"]] == [8, 7, 6, 4, 1]
    assert doc["keep"] == {"last": 1, "minutes": 60, "hourly": 24, "daily": 30}
    for sid in (6, 4, 1, 8):
        trove.ok("snapshot", "rollback", str(sid), env={"TROVE_NOW": str(day + 15 * 3600 + 20)})
        trove.ok("check")
        last = words.get(sid, 99 if sid == 8 else -1)
        for i in range(6):
            hit = "inbox/reading-list.md" in trove.paths("word%d" % i)
            assert hit == (i <= last), (sid, i)


def test_rebuild_says_history_starts_again(indexed):
    trove, vault = indexed
    r = trove.ok("update", "--rebuild")
    assert "its snapshot history starts again" in r.out, r
    assert [s["id"] for s in snapshots(trove)["snapshots"]] == [1]


def test_status_json_and_mcp_status_carry_the_snapshot(indexed):
    trove, vault = indexed
    (vault / "travel" / "lisbon.md").unlink()
    trove.ok("update")
    st = trove.ok("status", "--json").json()
    assert st["version"] == 1 and st["snapshot"]["id"] == 2
    assert st["snapshot"]["kind"] == "update" and st["snapshot"]["removed"] == 1
    assert st["snapshot"]["docs"] == st["counts"]["docs"]
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
             "params": {"name": "status", "arguments": {}}}]
    data = "".join(json.dumps(m) + "\n" for m in msgs).encode()
    p = subprocess.run([str(trove_bin()), "mcp"], input=data, env=trove.env,
                       capture_output=True, timeout=60, cwd=str(trove.home))
    assert p.returncode == 0, p.stderr
    reply = [json.loads(l) for l in p.stdout.decode().splitlines()][1]
    snap = reply["result"]["structuredContent"]["snapshot"]
    assert snap["id"] == 2 and snap["notes"] == st["counts"]["docs"]
    assert snap["time"].endswith("Z") and snap["removed"] == 1


def test_no_index(trove):
    r = trove("snapshot", "list")
    assert r.rc == 1 and "no index yet" in r.err, r
    r = trove("snapshot", "rollback", "1")
    assert r.rc == 1 and "no index yet" in r.err, r


def test_upgrade_from_v3_starts_at_snapshot_one(indexed):
    trove, vault = indexed
    db = sqlite3.connect(str(trove.index))
    for t in ("snapshots", "undo_docs", "undo_chunks", "undo_names", "undo_tags",
              "undo_links", "undo_dst", "undo_vecs", "undo_colls"):
        db.execute("DROP TABLE %s" % t)
    db.execute("DELETE FROM meta WHERE key = 'snapshot'")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    r = trove("snapshot", "list", both=False)
    assert r.rc == 1 and "run `trove update` once to upgrade it" in r.err, r
    trove.ok("update")
    [s] = snapshots(trove)["snapshots"]
    assert s["id"] == 1 and s["kind"] == "upgrade"
    (vault / "travel" / "lisbon.md").unlink()
    trove.ok("update")
    trove.ok("snapshot", "rollback", "1")
    assert "travel/lisbon.md" in trove.ok("ls", COLLECTION).out
    trove.ok("check")


def test_rollback_keeps_vectors(trove, tmp_path, glove):
    """Vectors come back with their notes: no re-embedding after a rollback."""
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "cars.md").write_text("# My car\n\nThe car needs new tires and an oil change; "
                                   "the engine makes a noise on the highway.\n")
    (vault / "garden.md").write_text("# Garden\n\nTomatoes and basil grow in the sun.\n")
    trove.ok("collection", "add", vault, "--name", "notes")
    trove.env["TROVE_EMBED_MODEL"] = glove
    trove.ok("update")
    assert trove.ok("vsearch", "automobile", "--json").json()["results"][0]["path"] == "cars.md"
    (vault / "cars.md").unlink()
    trove.ok("update")
    assert "cars.md" not in [x["path"] for x in
                             trove.ok("vsearch", "automobile", "--json").json()["results"]]
    trove.ok("snapshot", "rollback", "1")
    assert trove.ok("vsearch", "automobile", "--json").json()["results"][0]["path"] == "cars.md"
    r = trove.ok("embed")
    assert "0 chunks" in r.out or "nothing" in r.out.lower() or " 0 " in r.out, r
    trove.ok("check")


def test_rollback_past_rename_gives_the_entry_its_name_back(indexed):
    trove, vault = indexed
    trove.ok("context", "add", COLLECTION + "/cooking", "Recipes")
    trove.ok("collection", "rename", COLLECTION, "notes")
    r = trove.ok("snapshot", "rollback", "1")
    assert "collection '%s' is back in config.yaml\n" % COLLECTION in r.out, r
    listed = trove.ok("collection", "list").out
    names = [line.split("\t")[0] for line in listed.splitlines()]
    assert names == [COLLECTION], listed
    assert COLLECTION + "/cooking" in trove.ok("context", "list").out
    r = trove.ok("update")
    assert "0 new, 0 changed, 0 renamed, 0 deleted" in r.out and "snapshot" not in r.out, r
