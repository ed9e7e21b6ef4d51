"""The daemon's lock order (docs/architecture.md, "Locks"): a burst of
updates waits for the writer lock without holding the api handles searches
need, and a model that loads for long holds no lock that `status` or other
requests wait for. Nothing is timed: the slow part is held open by the
test-only pause points of src/util/testhold.h ($TROVE_TEST_HOLD), and each
test checks what is answered while it is held, then that the answers are
byte for byte the cold ones."""
import json
import subprocess

from conftest import trove_bin, wait_for
from test_daemon import Client, gguf_models, sock_path  # noqa: F401 - fixture

# More update requests than the largest pool of api handles (8).
BURST = 10


def hold(tmp_path, point):
    d = tmp_path / "hold"
    d.mkdir(exist_ok=True)
    (d / point).write_text("")
    return d


def release(d, point):
    (d / point).unlink()


def dispatched(c, hellos):
    """Requests the daemon has counted, less the hellos asking."""
    hellos[0] += 1
    return c.call("hello")["result"]["requests"] - hellos[0]


def sockets(trove):
    d = trove.socket_dir()
    return list(d.glob("*.sock")) if d.exists() else []


def background(trove, env, *args):
    e = dict(trove.env)
    e.update(env)
    return subprocess.Popen([str(trove_bin()), *map(str, args)], env=e, cwd=str(trove.home),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_searches_are_answered_during_an_update_burst(indexed, tmp_path):
    trove, vault = indexed
    cold_env = {"TROVE_NO_DAEMON": "1"}
    asks = [("search", "pasta sauce"), ("search", "kyoto temples", "--json"),
            ("get", trove.search("pasta")[0]["docid"])]
    cold = {a: trove(*a, env=cold_env, both=False) for a in asks}
    for r in cold.values():
        assert r.rc == 0 and r.out, r
    d = hold(tmp_path, "update")
    env = {"TROVE_TEST_HOLD": str(d)}
    trove.start_daemon("--no-watch", "--idle", "300", env=env)
    writers = []
    try:
        sock = sock_path(trove)
        c = Client(sock)
        hellos = [0]
        base = dispatched(c, hellos)
        for i in range(BURST):
            w = Client(sock, timeout=120)
            w.send_raw(json.dumps({"v": 1, "id": i, "op": "update"}).encode() + b"\n")
            writers.append(w)
        # Every update has reached the daemon, and the first one is inside
        # api_update, held there with the writer lock.
        assert wait_for(lambda: dispatched(c, hellos) - base >= BURST, timeout=30)
        assert wait_for(lambda: (d / "update.waiting").exists(), timeout=30)
        # Meanwhile searches, gets and status are answered, as cold.
        for a in asks:
            r = trove(*a, env=env, both=False, timeout=30)
            assert (r.rc, r.out, r.err) == (cold[a].rc, cold[a].out, cold[a].err), (a, r)
        st = c.call("status")
        assert st["ok"], st
        assert (d / "update").exists()   # still held: the burst was in progress
        release(d, "update")
        for w in writers:
            resp = w.read_line()
            assert resp["ok"], resp
        # and after the burst the answers are the same
        for a in asks:
            r = trove(*a, env=env, both=False)
            assert (r.rc, r.out, r.err) == (cold[a].rc, cold[a].out, cold[a].err), (a, r)
        c.close()
    finally:
        if (d / "update").exists():
            release(d, "update")
        for w in writers:
            w.close()
        trove.stop_daemon()


def test_status_is_answered_while_a_model_loads(indexed, gguf_models, tmp_path):  # noqa: F811
    trove, vault = indexed
    model = str(gguf_models / "embed.gguf")
    env = {"TROVE_EMBED_MODEL": model}
    cold_env = dict(env, TROVE_NO_DAEMON="1")
    assert trove("embed", env=cold_env, both=False).rc == 0
    ask = ("vsearch", "pasta sauce", "--json")
    cold = trove(*ask, env=cold_env, both=False)
    assert cold.rc == 0 and cold.out, cold
    d = hold(tmp_path, "model-load")
    denv = dict(env, TROVE_TEST_HOLD=str(d))
    trove.start_daemon("--no-watch", "--idle", "300", env=denv)
    proc = None
    try:
        # The first vsearch through the daemon loads the model: held.
        proc = background(trove, denv, *ask)
        assert wait_for(lambda: (d / "model-load.waiting").exists(), timeout=30)
        c = Client(sock_path(trove))
        st = c.call("status")
        assert st["ok"], st
        models = st["result"]["daemon"]["models"]
        assert models["loads"] == 0 and models["open"] == [], models
        # a search without the model is answered too, as cold (one with it
        # waits for that one load)
        kw = {"TROVE_EMBED_MODEL": None}
        r = trove("search", "pasta sauce", env=kw, both=False, timeout=30)
        rc = trove("search", "pasta sauce", env=dict(kw, TROVE_NO_DAEMON="1"), both=False)
        assert (r.rc, r.out, r.err) == (rc.rc, rc.out, rc.err), r
        assert proc.poll() is None   # the load was still in progress
        release(d, "model-load")
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out.decode(), err.decode()) == (cold.rc, cold.out, cold.err)
        models = c.call("status")["result"]["daemon"]["models"]
        assert models["loads"] == 1, models
        c.close()
    finally:
        if (d / "model-load").exists():
            release(d, "model-load")
        if proc and proc.poll() is None:
            proc.kill()
            proc.communicate()
        trove.stop_daemon()


def test_daemon_autostarts_with_the_model_chosen_by_model_use(indexed, gguf_models):  # noqa: F811
    """`trove model use FILE` (config.yaml's embed_model), no
    $TROVE_EMBED_MODEL: the first command starts the daemon all the same."""
    trove, vault = indexed
    model = str(gguf_models / "embed.gguf")
    env = {"TROVE_EMBED_MODEL": None}
    assert trove("model", "use", model, env=env, both=False).rc == 0
    assert not sockets(trove)
    try:
        r = trove("search", "pasta", env=env, both=False)
        assert r.rc == 0, r
        assert wait_for(lambda: sockets(trove), timeout=30)
        st = trove("daemon", "status", env=env, both=False)
        assert st.rc == 0, st
    finally:
        trove.stop_daemon()


def test_one_version_everywhere(trove, tmp_path):
    """`trove --version`, the daemon's hello and MCP's serverInfo print the
    version of CMakeLists.txt's project()."""
    import re
    from conftest import REPO
    want = re.search(r"project\(trove VERSION (\S+)", (REPO / "CMakeLists.txt").read_text()).group(1)
    assert trove("--version", both=False).out == "trove %s\n" % want
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nversion check\n")
    trove.ok("collection", "add", notes, "--name", "notes")
    trove.ok("update")
    trove.start_daemon("--no-watch", "--idle", "300")
    try:
        c = Client(sock_path(trove))
        assert c.call("hello")["result"]["version"] == want
        c.close()
    finally:
        trove.stop_daemon()
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    e = dict(trove.env, TROVE_NO_DAEMON="1")
    p = subprocess.run([str(trove_bin()), "mcp"], input=(json.dumps(init) + "\n").encode(),
                       env=e, capture_output=True, timeout=60)
    line = p.stdout.decode().splitlines()[0]
    assert json.loads(line)["result"]["serverInfo"]["version"] == want

