"""The daemon: its socket protocol, robustness, lifecycle and file watcher
(docs/daemon.md). Unix sockets only; every wait is bounded."""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (COLLECTION, REPO, SANITIZER_REPORT, glove_model, run_concurrently, trove_bin,
                      wait_for)


def sock_path(trove):
    socks = list(trove.socket_dir().glob("*.sock"))
    assert len(socks) == 1, socks
    return socks[0]


class Client:
    def __init__(self, path, timeout=20):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(str(path))
        self.buf = b""
        self.n = 0

    def send_raw(self, data):
        self.s.sendall(data)

    def read_line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("daemon closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, op, args=None, **extra):
        self.n += 1
        req = {"v": 1, "id": self.n, "op": op}
        if args is not None:
            req["args"] = args
        req.update(extra)
        self.send_raw(json.dumps(req).encode() + b"\n")
        resp = self.read_line()
        assert resp["id"] == self.n, resp
        return resp

    def close(self):
        self.s.close()


@pytest.fixture
def served(indexed):
    trove, vault = indexed
    trove.start_daemon("--idle", "300")
    yield trove, vault, sock_path(trove)
    trove.stop_daemon()


# ---- protocol ----------------------------------------------------------------

def test_round_trips(served):
    trove, vault, path = served
    c = Client(path)
    hello = c.call("hello")
    assert hello["ok"] and hello["result"]["protocol"] == 1, hello
    assert hello["result"]["index"] == str(trove.index)

    r = c.call("search", {"query": "carbonara", "limit": 3})
    assert r["ok"], r
    items = r["result"]["items"]
    assert items and items[0]["path"].endswith(".md")
    assert "\u0002" in items[0]["snippet"]          # match marks travel as they are
    assert len(items[0]["channels"]) >= 2

    ref = "%s/%s" % (COLLECTION, items[0]["path"])
    g = c.call("get", {"ref": ref, "count": 2})
    assert g["ok"] and g["result"]["line_start"] == 1, g
    assert g["result"]["text"].count("\n") <= 2

    ls = c.call("ls", {"target": None})
    assert ls["ok"] and ls["result"]["collections"][0]["name"] == COLLECTION
    mg = c.call("multi_get", {"glob": "vault/*.md", "max_bytes": 100000})
    assert mg["ok"] and mg["result"]["items"], mg
    st = c.call("status")
    assert st["ok"] and st["result"]["counts"]["docs"] > 0
    assert st["result"]["daemon"]["watcher"]["state"] == "watching", st
    up = c.call("update", {})
    assert up["ok"] and up["result"]["collections"][0]["name"] == COLLECTION, up

    # The daemon's errors are the cold path's sentences.
    e = c.call("get", {"ref": "#ffff0000"})
    assert not e["ok"] and e["error"]["code"] == "ENOENT", e
    cold = trove("get", "#ffff0000", env={"TROVE_NO_DAEMON": "1"})
    assert cold.err.strip() == "trove: " + e["error"]["message"]
    c.close()


def test_bad_requests_get_error_replies(served):
    trove, vault, path = served
    c = Client(path)
    for raw, code in [(b"{not json\n", "EPROTO"), (b"[1,2]\n", "EPROTO"),
                      (b'{"v":1,"id":5}\n', "EPROTO"),
                      (b'{"v":1,"id":6,"op":"nope"}\n', "EPROTO"),
                      (b'{"v":2,"id":7,"op":"hello"}\n', "EPROTO"),
                      (b'{"v":1,"id":8,"op":"search","args":{"query":5}}\n', "EPROTO"),
                      (b'{"v":1,"id":9,"op":"search","args":[]}\n', "EPROTO"),
                      (b'{"v":1,"id":10,"op":"hello","index":"/elsewhere.db"}\n', "EMISMATCH"),
                      (b"\xff\xfe\n", "EPROTO")]:
        c.send_raw(raw)
        r = c.read_line()
        assert r["ok"] is False and r["error"]["code"] == code, (raw, r)
    # The same connection still serves.
    assert c.call("hello")["ok"]
    c.close()


@pytest.mark.parametrize("mib", [1, 2, 8])
def test_oversized_request(served, mib):
    """A client that writes a whole 2 MiB request before it reads gets the
    documented E2BIG answer, not a broken pipe: the daemon reads the rest of
    the line (and drops it) before it closes the connection."""
    trove, vault, path = served
    c = Client(path)
    big = b'{"v":1,"op":"search","args":{"query":"' + b"a" * (mib << 20) + b'"}}\n'
    c.send_raw(big)          # raised BrokenPipeError before
    r = c.read_line()
    assert r["ok"] is False and r["error"]["code"] == "E2BIG", r
    assert "1 MiB" in r["error"]["message"], r
    with pytest.raises(EOFError):   # and then the connection is closed
        c.read_line()
    c.close()
    # Others are served as before.
    c2 = Client(path)
    assert c2.call("hello")["ok"]
    c2.close()


def test_slow_and_dead_clients_block_no_one(served):
    trove, vault, path = served
    slow = Client(path)
    slow.send_raw(b'{"v":1,"op":"hel')          # half a request, then silence
    dead = Client(path)
    dead.send_raw(b'{"v":1,"id":1,"op":"search","args":{"query":"pasta","limit":0}}\n')
    dead.close()                                 # never reads its answer
    # a daemon stuck on either client would leave this call to its socket
    # timeout (an exception), so the answer arriving is the assertion
    c = Client(path, timeout=20)
    assert c.call("search", {"query": "pasta"})["ok"]
    c.close()
    slow.close()


def test_many_concurrent_clients(served):
    trove, vault, path = served
    expect = Client(path).call("search", {"query": "pasta sauce", "limit": 5})["result"]
    errors = []

    def worker(k):
        try:
            c = Client(path)
            for i in range(15):
                if (i + k) % 3 == 0:
                    r = c.call("status")
                    assert r["ok"], r
                else:
                    r = c.call("search", {"query": "pasta sauce", "limit": 5})
                    assert r["ok"] and r["result"] == expect, r
            c.close()
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(repr(e))

    run_concurrently(worker, 24, 60)
    assert not errors, errors[:3]
    # The CLI through the daemon at the same time.
    r = trove.ok("search", "pasta")
    assert "pasta" in r.out.lower()


# ---- lifecycle ---------------------------------------------------------------

def test_socket_permissions(indexed):
    trove, vault = indexed
    d = trove.socket_dir()
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)                           # a folder open to others gets fixed
    trove.start_daemon()
    try:
        p = sock_path(trove)
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat(p).st_mode)
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    finally:
        trove.stop_daemon()


def start_foreground(trove, *flags, env=None):
    e = dict(trove.env)
    e.update(env or {})
    proc = subprocess.Popen([str(trove_bin()), "daemon", *flags], env=e,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    def up():
        if proc.poll() is not None:
            return True
        for p in trove.socket_dir().glob("*.sock"):
            try:
                Client(p, timeout=2).close()
                return True
            except OSError:
                pass
        return False
    assert wait_for(up, timeout=20), "daemon did not start"
    assert proc.poll() is None, proc.communicate()
    return proc


def test_sigterm_removes_socket(indexed):
    trove, vault = indexed
    proc = start_foreground(trove)
    p = sock_path(trove)
    assert Client(p).call("hello")["ok"]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert not p.exists()


def test_idle_exit(indexed):
    trove, vault = indexed
    proc = start_foreground(trove, "--idle", "1")
    p = sock_path(trove)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert b"idle" in err
    assert not p.exists()


# A detached daemon is no child of the command that started it, so only a
# subreaper sees how it ends: this helper becomes one (prctl
# PR_SET_CHILD_SUBREAPER), runs `trove daemon --detach` (its exit code, the
# first line), then waits for the daemon, reparented to it on the detaching
# parent's exit: its pid and exit status (negative: killed by that signal).
SUBREAPER = r"""
import ctypes, os, subprocess, sys
assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
print(r.returncode, flush=True)
pid, status = os.wait()
print(pid, os.waitstatus_to_exitcode(status), flush=True)
"""


def sanitized_binary():
    """Whether TROVE_BIN is built with AddressSanitizer (calls __asan_init)."""
    import mmap
    with open(trove_bin(), "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return m.find(b"__asan_init") >= 0


def test_detached_daemon_exits_through_the_leak_check(indexed):
    """`daemon --detach`'s daemon ends like any command, back through main
    (no _exit()): exit status 0 after serving, watching and a shutdown, and
    under ASan its exit's leak check ran (ASAN_OPTIONS atexit=1: ASan's exit
    statistics come from the atexit handler that also runs LeakSanitizer's
    check; abort_on_error turns a leak into SIGABRT, and the report goes to
    the daemon's log)."""
    trove, vault = indexed
    env = dict(trove.env)
    asan = sanitized_binary()
    if asan:
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS") or "detect_leaks=1") + \
            ":detect_leaks=1:abort_on_error=1:atexit=1"
    helper = subprocess.Popen([sys.executable, "-c", SUBREAPER, str(trove_bin()), "daemon",
                               "--detach", "--idle", "300"], env=env, cwd=str(trove.home),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    try:
        assert helper.stdout.readline().strip() == b"0"
        path = sock_path(trove)
        # Work that allocates: the watcher indexing a new note, searches,
        # a get and a status, all answered by the daemon.
        (vault / "leakcheck.md").write_text("# Leak check\n\nA quokka in the notes.\n")
        assert wait_for(lambda: "leakcheck.md" in trove("search", "quokka", "--files",
                                                         both=False).out)
        assert "quokka" in trove.ok("get", COLLECTION + "/leakcheck.md", both=False).out
        assert "requests:" in trove.ok("daemon", "status", both=False).out
        trove.ok("daemon", "stop", both=False)
        line = helper.communicate(timeout=60)[0].split()
    finally:
        if helper.poll() is None:
            helper.kill()
            helper.wait()
    log = Path(str(path) + ".log").read_text(errors="replace")
    assert line and int(line[1]) == 0, log
    assert SANITIZER_REPORT.search(log) is None, log
    if asan:
        assert "AddressSanitizer exit stats" in log, log


def test_idle_from_config(indexed):
    trove, vault = indexed
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "daemon_idle: 1\n")
    proc = start_foreground(trove)
    proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_stale_socket_replaced_and_second_daemon_refused(indexed):
    trove, vault = indexed
    proc = start_foreground(trove)
    p = sock_path(trove)
    second = trove("daemon", both=False)         # the same index: refused
    assert second.rc == 1 and "already serves" in second.err, second
    proc.kill()
    proc.wait(timeout=10)
    assert p.exists()                            # a killed daemon leaves its socket
    # The CLI notices nobody answers and answers cold.
    r = trove.ok("search", "pasta")
    assert "pasta" in r.out.lower()
    proc2 = start_foreground(trove)
    try:
        assert Client(p).call("hello")["result"]["pid"] == proc2.pid
    finally:
        proc2.send_signal(signal.SIGTERM)
        out, err = proc2.communicate(timeout=20)
    assert b"stale socket" in err


def test_cli_uses_daemon_unless_told_not_to(served):
    trove, vault, path = served
    before = trove.daemon_requests()
    trove.ok("search", "pasta")
    trove.ok("status")
    mid = trove.daemon_requests()
    assert mid == before + 3                    # search, status, and this status call
    trove.ok("search", "pasta", env={"TROVE_NO_DAEMON": "1"})
    trove.ok("--no-daemon", "search", "pasta")
    assert trove.daemon_requests() == mid + 1
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "daemon: off\n")
    trove.ok("search", "pasta")
    assert trove.daemon_requests() == mid + 2
    # The config keys survive the CLI rewriting the file.
    trove.ok("context", "add", COLLECTION, "a sample vault")
    assert "daemon: off" in cfg.read_text()


def test_rendered_answers_equal_cold_output(served):
    """search and vsearch through the daemon come back rendered in the
    client's form (docs/daemon.md "render"): the same stdout, stderr and
    exit code as cold, in every format."""
    trove, vault, path = served
    c = Client(path)
    how = {"format": 0, "color": 0, "full": 0, "line_numbers": 0, "explain": 0}
    r = c.call("search", {"query": "carbonara", "limit": 3}, render=how)
    res = r["result"]
    assert r["ok"] and res["rc"] == 0 and res["err_bytes"] == 0 and res["out_bytes"] > 0, r
    # the rendered bytes follow the answer's line
    while len(c.buf) < res["out_bytes"]:
        c.buf += c.s.recv(65536)
    out, c.buf = c.buf[:res["out_bytes"]], c.buf[res["out_bytes"]:]
    assert b"carbonara" in out.lower() and out.endswith(b"\n")
    assert c.call("hello")["ok"]                 # and the stream goes on after them
    # a form it does not know, or an op it does not render: refused, so
    # the client answers cold
    for bad, op in (({**how, "format": 99}, "search"), ({**how, "extra": 1}, "search"),
                    ({"format": 0}, "search"), (how, "ls")):
        e = c.call(op, {"query": "carbonara"} if op == "search" else {"target": None},
                   render=bad)
        assert not e["ok"] and e["error"]["code"] == "EPROTO", e
    c.close()
    flags = [(), ("--json",), ("--csv",), ("--md",), ("--xml",), ("--files",),
             ("--explain",), ("--json", "--explain"), ("--full", "-n", "2"),
             ("--json", "--full", "--line-numbers")]
    for cmd, q in (("search", "pasta sauce"), ("search", "no-such-word-anywhere"),
                   ("vsearch", "pasta")):
        for f in flags:
            before = trove.daemon_requests()
            warm = trove(cmd, q, *f)
            assert trove.daemon_requests() == before + 2, (cmd, f)   # + this status
            cold = trove("--no-daemon", cmd, q, *f)
            assert (warm.rc, warm.out, warm.err) == (cold.rc, cold.out, cold.err), (cmd, f)
    # the daemon's own error is the cold path's, hint included
    warm = trove("search", "pasta", "-cnosuch")
    cold = trove("--no-daemon", "search", "pasta", "-cnosuch")
    assert warm.rc == cold.rc != 0 and warm.err == cold.err and "-c nosuch" in warm.err


def test_status_through_daemon_reports_watcher(served):
    trove, vault, path = served
    r = trove.ok("status")
    assert "daemon: pid" in r.out and "watcher: watching" in r.out, r


def test_status_while_the_watcher_starts_and_reconfigures(trove, vault, tmp_path):
    """`status` reads the watcher's per-collection state. Asked just after
    the daemon started, or just after a collection was added, it used to
    read that state before the watcher thread had sized it for the config
    (a NULL or short array): the daemon crashed now and then."""
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    for round_ in range(8):
        # the previous round's daemon holds its lock until it has exited
        assert wait_for(lambda: trove("daemon", "--detach", "--idle", "300", both=False).rc == 0,
                        timeout=10)
        c = Client(sock_path(trove))
        for _ in range(30):
            assert c.call("status")["ok"]
        extra = tmp_path / ("extra%d" % round_)
        extra.mkdir()
        (extra / "a.md").write_text("# A\n")
        trove.ok("collection", "add", extra, "--name", "extra%d" % round_)
        for _ in range(60):          # the watcher takes the new config meanwhile
            assert c.call("status")["ok"]
        c.close()
        assert trove.stop_daemon().rc == 0


def test_daemon_follows_rebuild_and_config_changes(served):
    trove, vault, path = served
    trove.ok("update", "--rebuild")              # a new index file renamed in
    r = trove.ok("search", "carbonara", "--files")
    assert "carbonara" in r.out, r
    extra = vault.parent / "extra"
    extra.mkdir()
    (extra / "yak.md").write_text("# Yak shaving\n\nThe yak is shaved.\n")
    trove.ok("collection", "add", extra, "--name", "extra")
    # The watcher picks the new collection up and indexes it.
    assert wait_for(lambda: "yak.md" in trove("search", "yak", "--files").out, timeout=10)


# ---- watcher -------------------------------------------------------------------

def searchable(trove, word):
    return lambda: trove("search", word, "--files").out.strip()


def test_watcher_edit_is_searchable(served):
    trove, vault, path = served
    note = vault / "fresh-note.md"
    t0 = time.monotonic()
    note.write_text("# Fresh\n\nThe quizzical platypus.\n")
    assert wait_for(searchable(trove, "platypus"), timeout=5)
    print("\nwatcher latency: new note searchable after %.0f ms (CLI polling)"
          % ((time.monotonic() - t0) * 1000))
    # An editor's save: a temp file renamed over the note.
    tmp = vault / ".fresh-note.md.swp"
    tmp.write_text("# Fresh\n\nThe quizzical echidna.\n")
    t0 = time.monotonic()
    os.rename(tmp, note)
    assert wait_for(searchable(trove, "echidna"), timeout=5)
    print("watcher latency: rename-over save searchable after %.0f ms"
          % ((time.monotonic() - t0) * 1000))
    assert not trove("search", "platypus", "--files").out.strip()


def test_watcher_rename_delete_new_folder_and_ignores(served):
    trove, vault, path = served
    d = vault / "new" / "deeper"
    d.mkdir(parents=True)
    (d / "n.md").write_text("# Narwhal\n")
    assert wait_for(lambda: "new/deeper/n.md" in searchable(trove, "narwhal")())
    os.rename(vault / "new", vault / "moved")
    assert wait_for(lambda: "moved/deeper/n.md" in searchable(trove, "narwhal")())
    (vault / "moved" / "deeper" / "n2.md").write_text("# Narwhal two\n")
    assert wait_for(lambda: "moved/deeper/n2.md" in searchable(trove, "narwhal")())
    os.unlink(vault / "moved" / "deeper" / "n.md")
    assert wait_for(lambda: "deeper/n.md" not in searchable(trove, "narwhal")())
    # Same rules as update: a dot-folder and a gitignored file stay out.
    (vault / ".hidden").mkdir()
    (vault / ".hidden" / "h.md").write_text("# Narwhal hidden\n")
    (vault / ".gitignore").write_text("secret.md\n")
    (vault / "secret.md").write_text("# Narwhal secret\n")
    (vault / "plain.md").write_text("# Narwhal plain\n")
    assert wait_for(lambda: "plain.md" in searchable(trove, "narwhal")())
    out = searchable(trove, "narwhal")()
    assert "hidden" not in out and "secret" not in out, out


def test_watcher_burst(served):
    trove, vault, path = served
    burst = vault / "burst"
    burst.mkdir()
    for i in range(300):
        (burst / ("b%03d.md" % i)).write_text("# Burst %d\n\nwombat %d\n" % (i, i))
    assert wait_for(lambda: len(trove("search", "wombat", "--all", "--files").out.split()) == 300,
                    timeout=20)
    r = trove.ok("status")
    assert "0 pending" in r.out or "pending" in r.out


def test_watcher_collection_folder_disappears_and_returns(served):
    trove, vault, path = served
    away = vault.parent / "vault-away"
    os.rename(vault, away)
    assert wait_for(lambda: "missing" in trove.ok("status").out, timeout=10)
    os.rename(away, vault)
    (vault / "back.md").write_text("# Back again\n\nThe returning kiwi.\n")
    assert wait_for(searchable(trove, "kiwi"), timeout=10)
    # the watcher's state follows within one more update: the folder may
    # come back while an update runs, and that update may already see it
    assert wait_for(lambda: "missing" not in trove.ok("status").out, timeout=10)


def test_watch_limit_falls_back_to_polling(indexed):
    trove, vault = indexed
    trove.start_daemon(env={"TROVE_WATCH_MAX": "2"})
    try:
        assert wait_for(lambda: "watcher: polling" in trove.ok("status").out, timeout=30)
        assert "watch limit" in trove.ok("status").out
        # Deep in a folder without a watch: found by the rescans.
        (vault / "travel" / "far.md").write_text("# Far\n\nThe distant quetzal.\n")
        assert wait_for(searchable(trove, "quetzal"), timeout=10)
    finally:
        trove.stop_daemon()


# ---- the watcher embeds what it indexes ---------------------------------------

def test_watcher_embeds_saved_notes(indexed):
    """With an embedding model (TROVE_EMBED_MODEL, here the GloVe test
    model), a note the watcher re-indexes gets its vectors too: the saved
    text is found by vsearch (asked cold, so the index itself is checked)."""
    model = glove_model()
    trove, vault = indexed
    env = {"TROVE_EMBED_MODEL": model}
    r = trove("embed", env=env, both=False)
    assert r.rc == 0, r
    trove.start_daemon("--idle", "300", env=env)
    cold = dict(env, TROVE_NO_DAEMON="1")

    def top(query):
        r = trove("vsearch", query, "--files", "-n", "1", env=cold, both=False)
        return r.out.strip()
    note = vault / "geology.md"
    note.write_text("# Volcanoes\n\nMagma, lava and ash erupt from the volcano.\n")
    assert wait_for(lambda: "geology.md" in top("volcano lava eruption"), timeout=30), \
        top("volcano lava eruption")
    # A save that changes the note's text: the new text gets new vectors.
    tmp = vault / ".geology.md.swp"
    tmp.write_text("# Glaciers\n\nIcebergs calve from the frozen arctic glacier.\n")
    os.rename(tmp, note)
    assert wait_for(lambda: "geology.md" in top("glacier iceberg arctic"), timeout=30), \
        top("glacier iceberg arctic")


def test_watcher_collection_folder_removed_and_recreated_rapidly(indexed):
    """rm -rf of the collection folder and mkdir again, many times in a
    row: whenever the watcher re-arms, the folder may vanish between its
    look at it and the watch on it. The watcher must never end up taking
    the folder as present with no watch on it (then a later note is never
    seen): after the loop it watches the folder again, says nothing is
    missing, and a note saved afterwards is found. (A short rescan period,
    TROVE_WATCH_POLL, makes the watcher re-arm hundreds of times.)"""
    trove, vault = indexed
    trove.start_daemon("--idle", "300", env={"TROVE_WATCH_POLL": "0.01"})
    import random
    import shutil
    rng = random.Random(4)
    end = time.monotonic() + 3           # several re-arms of the watcher
    i = 0
    while time.monotonic() < end:
        shutil.rmtree(vault)
        vault.mkdir()
        (vault / "loop.md").write_text("# Loop %d\n\nround %d\n" % (i, i))
        if rng.random() < 0.05:
            time.sleep(rng.uniform(0, 0.002))
        i += 1
    (vault / "after.md").write_text("# After\n\nThe persistent axolotl.\n")
    assert wait_for(searchable(trove, "axolotl"), timeout=20)
    assert wait_for(lambda: "missing" not in trove.ok("status").out, timeout=20), \
        trove.ok("status").out
    # Watched (not polled for): a note saved now is found.
    (vault / "later.md").write_text("# Later\n\nThe punctual ocelot.\n")
    assert wait_for(searchable(trove, "ocelot"), timeout=10), trove.ok("status").out


def watcher_of(path):
    c = Client(path)
    try:
        return c.call("status")["result"]["daemon"]["watcher"]
    except EOFError:
        raise AssertionError(open(str(path) + ".log").read())
    finally:
        c.close()


def test_watcher_notices_a_returning_folder_at_once(indexed):
    """A missing collection folder is waited for with a watch on its parent,
    not only by the rescans: with the rescan period at 10 minutes
    (TROVE_WATCH_POLL), a folder that comes back after the watcher has given
    it up (its update of the missing folder has run) is watched and indexed
    again at once."""
    trove, vault = indexed
    trove.start_daemon("--idle", "300", env={"TROVE_WATCH_POLL": "600"})
    path = sock_path(trove)
    assert wait_for(lambda: watcher_of(path)["updates"] >= 1, timeout=20)
    n = watcher_of(path)["updates"]
    away = vault.parent / "vault-away"
    os.rename(vault, away)
    assert wait_for(lambda: "missing" in (watcher_of(path)["problem"] or ""), timeout=10)
    assert wait_for(lambda: watcher_of(path)["updates"] > n
                    and watcher_of(path)["pending"] == 0, timeout=10), watcher_of(path)
    os.rename(away, vault)
    (vault / "back.md").write_text("# Back again\n\nThe returning kiwi.\n")
    assert wait_for(searchable(trove, "kiwi"), timeout=10), watcher_of(path)
    assert wait_for(lambda: watcher_of(path)["problem"] is None, timeout=10), watcher_of(path)
    # and it is watched again, not polled
    (vault / "later.md").write_text("# Later\n\nThe punctual ocelot.\n")
    assert wait_for(searchable(trove, "ocelot"), timeout=10), watcher_of(path)


def test_status_right_after_start(indexed):
    """A status request that arrives before the watcher thread has set
    itself up (it used to read the watcher's per-collection flags before
    they existed: a segfault in about one start in five)."""
    trove, vault = indexed
    for _ in range(12):
        # (the previous daemon may still hold its lock for a moment)
        assert wait_for(lambda: trove("daemon", "--detach", "--idle", "300", both=False).rc == 0,
                        timeout=20)
        w = watcher_of(sock_path(trove))
        assert w["state"] == "watching", w
        r = trove.stop_daemon()
        assert r.rc == 0, r


def test_watcher_survives_files_changing_while_read(served):
    """Notes rewritten (truncated, grown, shrunk, replaced by rename)
    without pause while the watcher's updates read them: no update fails,
    the daemon keeps answering, and once the writers stop the last version
    of every note is what the index holds."""
    trove, vault, path = served
    import random
    rng = random.Random(11)
    d = vault / "churn"
    d.mkdir()
    end = time.monotonic() + 2.5
    i = 0
    while time.monotonic() < end:
        n = d / ("c%d.md" % (i % 5))
        body = "# Churn %d\n\nround%d %s\n" % (i, i, "filler " * rng.randrange(0, 3000))
        if i % 3 == 0:
            tmp = d / (".c%d.tmp" % (i % 5))
            tmp.write_text(body)
            os.rename(tmp, n)
        else:
            with open(n, "w") as f:          # truncate, then write in pieces
                for k in range(0, len(body), 4096):
                    f.write(body[k:k + 4096])
                    f.flush()
        i += 1
    last = {k: (i - 1 - ((i - 1 - k) % 5)) for k in range(5)}
    for k, r in last.items():
        assert wait_for(lambda: ("churn/c%d.md" % k) in trove("search", "round%d" % r,
                                                            "--files").out, timeout=10), (k, r)
    w = Client(path).call("status")["result"]["daemon"]["watcher"]
    assert w["problem"] is None, w


# ---- one copy of each model per daemon ------------------------------------------

@pytest.fixture(scope="module")
def gguf_models(tmp_path_factory):
    """Random-weight GGUF files (tests/tools/make_models.py): an embedding
    model and a cross-encoder reranker."""
    import sys
    sys.path.insert(0, str(REPO / "tests" / "tools"))
    import make_models
    d = tmp_path_factory.mktemp("gguf")
    make_models.bert_model(str(d / "embed.gguf"), seed=1, name="tiny-bert")
    make_models.bert_model(str(d / "rerank.gguf"), rerank=True, seed=6,
                           name="tiny-reranker")
    return d


def test_daemon_shares_one_model_between_clients(indexed, gguf_models):
    """With a GGUF embedding model configured, many clients at once through
    the daemon get byte for byte the cold path's answers, and the daemon
    loads the model once (its request handles and its watcher share it),
    and the reranker once."""
    trove, vault = indexed
    model = str(gguf_models / "embed.gguf")
    reranker = str(gguf_models / "rerank.gguf")
    env = {"TROVE_EMBED_MODEL": model}
    cold_env = dict(env, TROVE_NO_DAEMON="1")
    assert trove("embed", env=cold_env, both=False).rc == 0
    asks = [("vsearch", "pasta sauce", "--json"),
            ("search", "kyoto temples", "--explain"),
            ("vsearch", "rust errors", "-n", "3"),
            ("search", "git undo commit", "--csv"),
            ("query", "how do I handle errors in rust", "--json", "--explain",
             "--reranker", reranker),
            ("query", "pasta", "--md", "--no-expand", "--reranker", reranker)]
    cold = {}
    for a in asks:
        r = trove(*a, env=cold_env, both=False)
        assert r.rc == 0 and r.out, r
        cold[a] = (r.rc, r.out, r.err)
    trove.start_daemon("--idle", "300", env=env)
    try:
        errors = []

        def worker(k):
            try:
                for i in range(6):
                    a = asks[(i + k) % len(asks)]
                    r = trove(*a, env=env, both=False)
                    if (r.rc, r.out, r.err) != cold[a]:
                        errors.append((a, r))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        run_concurrently(worker, 8, 120)
        assert not errors, errors[:2]

        c = Client(sock_path(trove))
        before = c.call("status")["result"]["daemon"]
        assert before["requests"] >= 8 * 6, before       # the daemon answered them
        # The watcher re-indexes a saved note and embeds it with the same model.
        (vault / "shared-model.md").write_text("# Shared\n\nOne copy of the model.\n")
        assert wait_for(lambda: c.call("status")["result"]["daemon"]["watcher"]["updates"]
                        > before["watcher"]["updates"], timeout=30)
        models = c.call("status")["result"]["daemon"]["models"]
        c.close()
        assert models["loads"] == 2, models
        kinds = sorted((m["kind"], m["path"]) for m in models["open"])
        assert kinds == [("embed", model), ("rerank", reranker)], models
        emb = [m for m in models["open"] if m["kind"] == "embed"][0]
        # at least one request handle and the watcher's handle hold that one copy
        assert emb["users"] >= 2, models
        assert "models loaded: 2" in trove.ok("daemon", "status", both=False).out
    finally:
        trove.stop_daemon()
