"""Messages and status that say what is true: files `update` skips by design
are reported as skipped (with the reason), not as new forever; `collection
add` says who indexes the new collection; `daemon status` shows what
docs/daemon.md promises."""
import json
import os
import re

from conftest import COLLECTION, trove_bin
from conftest import wait_for
from test_daemon import Client, sock_path
from test_mcp import call, init_msg, stdio_exchange


def add_skipped_files(vault):
    (vault / "blob.md").write_bytes(b"# Blob\n\x00\x01\x02 binary\n")
    (vault / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with open(vault / "huge.md", "wb") as f:   # sparse: no 17 MiB written
        f.truncate(17 << 20)


def test_status_reports_skipped_files_with_the_reason(indexed):
    trove, vault = indexed
    add_skipped_files(vault)
    r = trove.ok("update")
    assert "3 skipped" in r.out, r
    r = trove.ok("status")
    # Not "3 new ... (run `trove update`)" after every update any more.
    assert " new, " not in r.out and "run `trove update`" not in r.out, r
    assert re.search(r"up to date \(\d+ files; 3 skipped by `trove update`: 2 binary, "
                     r"1 over the 16 MiB limit\)", r.out), r
    doc = trove.ok("status", "--json").json()
    [c] = doc["collections"]
    assert c["fresh"]["added"] == 0, c
    assert c["fresh"]["skipped"] == {"too_large": 1, "binary": 2, "unreadable": 0}, c
    # A real new note next to them is still new, and still pending.
    (vault / "fresh.md").write_text("# Fresh\n\nnew words\n")
    r = trove.ok("status")
    assert "since last update: 1 new, 0 changed, 0 deleted (run `trove update`); 3 skipped" \
        in r.out, r


def test_status_leaves_out_what_update_leaves_out(indexed, tmp_path):
    """A symlink out of the collection is neither indexed nor new; an
    unreadable file (when not root) is skipped, with that reason."""
    trove, vault = indexed
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Elsewhere\n")
    (vault / "link.md").symlink_to(outside)
    locked = vault / "locked.md"
    locked.write_text("# Locked\n")
    locked.chmod(0)
    try:
        readable = os.access(locked, os.R_OK)   # root reads anything
        trove.ok("update")
        [c] = trove.ok("status", "--json").json()["collections"]
        assert c["fresh"]["added"] == 0, c
        assert c["fresh"]["skipped"]["unreadable"] == (0 if readable else 1), c
        r = trove.ok("status")
        assert " new, " not in r.out, r
        if not readable:
            assert "1 unreadable" in r.out, r
    finally:
        locked.chmod(0o644)


def test_mcp_status_does_not_count_skipped_files_as_pending(indexed):
    trove, vault = indexed
    add_skipped_files(vault)
    trove.ok("update")
    msgs = [init_msg("2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
            call(2, "status")]
    st = stdio_exchange(trove, msgs)[1]["result"]["structuredContent"]
    [c] = st["collections"]
    assert c["pending"] == {"new": 0, "changed": 0, "deleted": 0}, c
    assert c["skipped"] == {"too_large": 1, "binary": 2, "unreadable": 0}, c


def test_collection_add_says_who_indexes_it(indexed, tmp_path):
    trove, vault = indexed
    other = tmp_path / "other"
    other.mkdir()
    (other / "yak.md").write_text("# Yak\n\nshaving the yak\n")
    r = trove.ok("collection", "add", other, "--name", "cold")
    assert "run `trove update` to index it" in r.out, r
    trove.ok("collection", "remove", "cold")
    trove.start_daemon("--idle", "300")
    try:
        r = trove.ok("collection", "add", other, "--name", "warm")
        assert "run `trove update`" not in r.out, r
        assert re.search(r"the daemon \(pid \d+\) watches config.yaml and indexes it now", r.out), r
        assert wait_for(lambda: "yak.md" in trove("search", "yak", "--files").out, timeout=20)
    finally:
        trove.stop_daemon()
    trove.ok("collection", "remove", "warm")
    trove.start_daemon("--idle", "300", "--no-watch")
    try:
        r = trove.ok("collection", "add", other, "--name", "nowatch")
        assert "run `trove update` to index it (the running daemon does not watch" in r.out, r
    finally:
        trove.stop_daemon()


def test_daemon_status_shows_uptime_watcher_queue_and_models(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    try:
        assert wait_for(lambda: "watcher: watching" in trove.ok("daemon", "status").out,
                        timeout=10)
        out = trove.ok("daemon", "status").out
        for pattern in (r"^pid: \d+$", r"^socket: .*\.sock$", r"^uptime: \d+ s$",
                        r"^requests: \d+$",
                        r"^watcher: watching \(\d+ folders, \d+ updates? so far",
                        r"^queue: \d+ changed paths waiting for the watcher's next update, "
                        r"\d+ other connections open$",
                        r"^models loaded: 0 \(0 open now\)$"):
            assert re.search(pattern, out, re.M), (pattern, out)
        doc = trove.ok("daemon", "status", "--json").json()
        assert doc["version"] == 1 and doc["pid"] > 0 and doc["trove_version"]
        d = doc["daemon"]
        assert d["watch"] is True and d["watcher"]["state"] == "watching"
        assert isinstance(d["uptime"], float) and "pending" in d["watcher"]
        assert d["models"]["loads"] == 0 and d["models"]["open"] == []
    finally:
        trove.stop_daemon()
    r = trove("daemon", "status")
    assert r.rc == 1 and "no daemon serves" in r.err, r
