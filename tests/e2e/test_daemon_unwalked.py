"""`trove update` through a daemon whose watcher vouches: no walk.

docs/architecture.md, "An update without a walk": the daemon answers an
update at once (nothing changed) only when its watcher has watched every
folder since a clean walk and seen nothing since; anything else walks, and
`--json` / `--explain` say why."""
import mmap
import re
import sqlite3
import time

from conftest import COLLECTION, wait_for


def watcher(trove):
    r = trove.ok("status", "--json", both=False)
    return r.json()["daemon"]["watcher"]


def update_json(trove, *flags, env=None):
    return trove.ok("update", "--json", *flags, env=env).json()


def unwalked(trove):
    """An update the daemon answered without a walk, once it can."""
    def once():
        j = update_json(trove)
        return j if not j["walked"] else None
    return wait_for(once)


def counts(text):
    # the seconds differ between a walk and none
    return re.sub(r" \(\d+\.\d+s\)", "", text)


def test_noop_update_is_answered_without_a_walk(indexed):
    trove, vault = indexed
    cold = trove.ok("update", "--walk")
    trove.start_daemon("--idle", "300")
    try:
        j = unwalked(trove)
        assert j, watcher(trove)
        assert j["why"] is None and j["changed"] == 0
        (c,) = j["collections"]
        assert c["name"] == COLLECTION
        assert c["stats"]["files"] == c["stats"]["unchanged"] > 0
        assert c["stats"]["added"] == c["stats"]["updated"] == c["stats"]["removed"] == 0
        # The same text a walk prints, counted as an answer without one.
        before = watcher(trove)["unwalked_updates"]
        r = trove.ok("update", "--explain")
        assert counts(r.out) == counts(cold.out)
        assert "not walked" in r.err
        assert watcher(trove)["unwalked_updates"] == before + 1
        # Asked to walk, or told not to use the daemon: a walk.
        for flags, env in ((("--walk",), None), ((), {"TROVE_NO_DAEMON": "1"})):
            w = update_json(trove, *flags, env=env)
            assert w["walked"] and w["why"], w
            assert w["collections"] == j["collections"] or \
                w["collections"][0]["stats"] == c["stats"]
        assert watcher(trove)["unwalked_updates"] == before + 1
    finally:
        trove.stop_daemon()


def test_a_write_inotify_cannot_see_shows_there_was_no_walk(indexed):
    """A write through a shared mapping makes no inotify event (inotify(7))
    but moves the file's mtime: the daemon's answer misses it, a walk finds
    it. This is the documented limit of the rule, and the proof that the
    answer came without a walk."""
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        note = vault / "cooking" / "knife-skills.md"
        with open(note, "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
        # The mapping holds the file open: its close event comes at munmap.
        try:
            assert unwalked(trove)
            m[0:1] = b"X" if m[0:1] != b"X" else b"Y"
            m.flush()
            time.sleep(0.3)
            j = update_json(trove)
            assert not j["walked"] and j["collections"][0]["stats"]["updated"] == 0, j
            w = update_json(trove, "--walk")
            assert w["walked"] and w["collections"][0]["stats"]["updated"] == 1, w
        finally:
            m.close()
    finally:
        trove.stop_daemon()


def test_changes_not_yet_indexed_are_walked(indexed):
    trove, vault = indexed
    # A watcher that waits 60 s after an event before it updates.
    trove.start_daemon("--idle", "300", env={"TROVE_WATCH_DEBOUNCE": "60"})
    try:
        j = update_json(trove)
        assert j["walked"] and j["why"], j   # the first walk has not run
        note = vault / "Home.md"
        note.write_text(note.read_text() + "\nThe zanzibar ocelot.\n")
        j = update_json(trove)
        assert j["walked"], j
        assert j["collections"][0]["stats"]["updated"] == 1, j
        # the watcher has it marked, not indexed: its update waits 60 s
        assert wait_for(lambda: watcher(trove)["pending"] > 0)
        assert watcher(trove)["updates"] == 0
        assert trove.paths("ocelot")
    finally:
        trove.stop_daemon()


def test_a_real_edit_is_indexed_then_vouched_for(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        assert unwalked(trove)
        updates = watcher(trove)["updates"]
        note = vault / "Home.md"
        note.write_text(note.read_text() + "\nThe quokka's lantern.\n")
        # Walked (by the CLI, or by the watcher first); then vouched again.
        j = update_json(trove)
        if not j["walked"]:
            assert watcher(trove)["updates"] > updates
        assert wait_for(lambda: watcher(trove)["updates"] > updates)
        assert unwalked(trove)
        assert trove.paths("lantern")
    finally:
        trove.stop_daemon()


def test_collection_added_while_running_is_walked(indexed, tmp_path):
    trove, vault = indexed
    trove.start_daemon("--idle", "300", env={"TROVE_WATCH_DEBOUNCE": "60"})
    try:
        extra = tmp_path / "extra"
        extra.mkdir()
        (extra / "one.md").write_text("# One\n\nThe pangolin's notebook.\n")
        trove.ok("collection", "add", str(extra), "--name", "extra")
        j = update_json(trove)
        assert j["walked"], j
        by = {c["name"]: c for c in j["collections"]}
        assert by["extra"]["stats"]["added"] == 1, j
        assert trove.paths("pangolin")
    finally:
        trove.stop_daemon()


def test_polling_watcher_never_vouches(indexed):
    trove, vault = indexed
    # The daemon's own cap on watches, met as inotify's limit would be.
    trove.start_daemon("--idle", "300", env={"TROVE_WATCH_MAX": "2"})
    try:
        assert wait_for(lambda: watcher(trove)["state"] == "polling")
        j = update_json(trove)
        assert j["walked"] and "polling" in j["why"], j
        assert watcher(trove)["last_walk_why"] == j["why"]
    finally:
        trove.stop_daemon()


def test_index_written_elsewhere_is_walked_then_vouched_again(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        assert unwalked(trove)
        # Another process commits to the index (as a rollback or a cold
        # `trove embed` would).
        db = sqlite3.connect(str(trove.index))
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('test_other', '1')")
        db.commit()
        db.close()
        j = update_json(trove)
        assert j["walked"] and "another process" in j["why"], j
        # The daemon walks again by itself, and vouches once it has.
        assert unwalked(trove)
    finally:
        trove.stop_daemon()


def test_symlink_in_a_collection_is_walked(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        assert unwalked(trove)
        target = vault / "Home.md"
        (vault / "linked.md").symlink_to(target)
        j = wait_for(lambda: (lambda x: x if "symlink" in (x["why"] or "") else None)(
            update_json(trove)))
        assert j and j["walked"], j
        # One that names an entry of its own folder resolves inside it.
        (vault / "linked.md").unlink()
        (vault / "cooking" / "alias.md").symlink_to("knife-skills.md")
        (vault / "cooking" / "recipes-too").symlink_to("recipes")
        (vault / "programming" / "rust").rename(vault / "programming" / "rust2")  # a rewalk
        assert unwalked(trove), watcher(trove)
    finally:
        trove.stop_daemon()


def test_rebuild_and_named_collections(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        assert unwalked(trove)
        j = update_json(trove, COLLECTION)
        assert not j["walked"] and [c["name"] for c in j["collections"]] == [COLLECTION]
        r = trove("update", "--json", "nosuch")
        assert r.rc != 0 and "nosuch" in r.err
        j = update_json(trove, "--rebuild")
        assert j["walked"] and "rebuild" in j["why"]
    finally:
        trove.stop_daemon()
