"""Security checks of the daemon's socket (issue 9, "Checks: Security"):
another user cannot connect, whatever the modes of the folder and the
socket, and the daemon will not put its socket in a folder it does not own.
These need root (to act as user `nobody`); they skip, saying why, otherwise.
The MCP path-escape and bad-message checks are in test_mcp.py."""
import errno
import json
import os
import pwd
import subprocess

import pytest

from conftest import trove_bin
from test_daemon import Client, sock_path

# Run as `nobody`: connect to the socket, send hello, print what happened.
PROBE = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(json.dumps({"connect": e.errno}))
    sys.exit(0)
try:
    s.sendall(b'{"v":1,"id":1,"op":"hello"}\n')
except BrokenPipeError:
    pass   # refused before we spoke: its answer is still there to read
buf = b""
while b"\n" not in buf:
    c = s.recv(65536)
    if not c:
        break
    buf += c
print(json.dumps({"connect": 0, "reply": buf.decode() or None}))
"""


@pytest.fixture
def nobody():
    if os.geteuid() != 0:
        pytest.skip("acting as another user needs root; running as uid %d" % os.geteuid())
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("there is no user 'nobody' here")
    return pw


def as_nobody(pw, sock):
    def drop():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    p = subprocess.run(["/usr/bin/python3", "-c", PROBE, str(sock)], preexec_fn=drop,
                       capture_output=True, text=True, timeout=30, cwd="/")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def daemon(indexed, nobody):
    trove, vault = indexed
    trove.start_daemon("--idle", "300", "--no-watch")
    yield trove, sock_path(trove), nobody
    # the daemon must have survived every attempt
    assert Client(sock_path(trove)).call("hello")["ok"]


def test_other_user_cannot_connect(daemon):
    trove, sock, pw = daemon
    # As the daemon makes them: folder 0700, socket 0600.
    assert as_nobody(pw, sock) == {"connect": errno.EACCES}
    # The folders open to others but the socket 0600: still refused.
    os.chmod(trove.run_dir, 0o755)
    os.chmod(trove.socket_dir(), 0o755)
    assert as_nobody(pw, sock) == {"connect": errno.EACCES}
    # Everything opened up by hand: the kernel lets the connection through,
    # the daemon (SO_PEERCRED) answers EACCES and closes it.
    os.chmod(sock, 0o666)
    got = as_nobody(pw, sock)
    assert got["connect"] == 0, got
    reply = json.loads(got["reply"])
    assert reply["ok"] is False and reply["error"]["code"] == "EACCES", reply
    assert "own user" in reply["error"]["message"]
    # The owner still gets in.
    assert Client(sock).call("hello")["ok"]


def test_refuses_a_run_folder_of_another_user(indexed, nobody):
    trove, vault = indexed
    d = trove.socket_dir()
    d.mkdir(mode=0o700)
    os.chown(d, nobody.pw_uid, nobody.pw_gid)
    r = trove("daemon", "--detach", "--idle", "300", both=False)
    assert r.rc != 0 and "belongs to another user" in r.err, r
    assert not list(d.glob("*.sock"))
    # The CLI does not mind: it answers cold.
    assert "pasta" in trove.ok("search", "pasta").out.lower()


def test_refuses_a_symlinked_run_folder_that_is_not_safe(indexed, nobody, tmp_path):
    """A symlinked run folder is used only when it leads to a private folder
    of ours (test_safety.py); one of another user, one open to others, or
    something that is no folder is refused, and nothing is changed there."""
    trove, vault = indexed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.chown(elsewhere, nobody.pw_uid, nobody.pw_gid)
    os.symlink(elsewhere, trove.socket_dir())
    r = trove("daemon", "--detach", "--idle", "300", both=False)
    assert r.rc != 0 and "another user" in r.err, r
    assert not list(elsewhere.iterdir())
    os.chown(elsewhere, 0, 0)
    os.chmod(elsewhere, 0o777)
    r = trove("daemon", "--detach", "--idle", "300", both=False)
    assert r.rc != 0 and "open to others" in r.err, r
    assert os.stat(elsewhere).st_mode & 0o777 == 0o777
    assert not list(elsewhere.iterdir())
    os.unlink(trove.socket_dir())
    (tmp_path / "file").write_text("")
    os.symlink(tmp_path / "file", trove.socket_dir())
    r = trove("daemon", "--detach", "--idle", "300", both=False)
    assert r.rc != 0 and "not a folder" in r.err, r


def test_run_folder_open_to_others_is_made_private(indexed, nobody):
    """A folder of ours that is open to others (0777) is closed (0700)
    before the socket goes in; one of another user is refused (above)."""
    trove, vault = indexed
    d = trove.socket_dir()
    d.mkdir()
    os.chmod(d, 0o777)
    trove.start_daemon("--idle", "300", "--no-watch")
    try:
        assert os.stat(d).st_mode & 0o777 == 0o700
        assert os.stat(sock_path(trove)).st_mode & 0o777 == 0o600
        assert as_nobody(nobody, sock_path(trove)) == {"connect": errno.EACCES}
    finally:
        trove.stop_daemon()


def test_cli_ignores_a_daemon_of_another_user(nobody, tmp_path):
    """The other way round: a daemon run by `nobody` in a folder of its own,
    at the socket path the CLI would use. The CLI (root, which the folder
    modes do not stop) asks the kernel who serves there and answers cold
    instead of trusting it."""
    import shutil
    import signal
    import tempfile
    from conftest import FIXTURE_VAULT, Trove, wait_for
    base = tempfile.mkdtemp(prefix="trove-other-")
    try:
        os.chmod(base, 0o755)
        t = Trove(os.path.join(base, "env"))
        vault = os.path.join(base, "vault")
        shutil.copytree(FIXTURE_VAULT, vault, symlinks=True)
        t.ok("collection", "add", vault, "--name", "vault")
        t.ok("update")
        for root in (base, str(t.run_dir)):
            for d, dirs, files in os.walk(root):
                for x in [d] + [os.path.join(d, f) for f in dirs + files]:
                    os.lchown(x, nobody.pw_uid, nobody.pw_gid)

        def drop():
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
        p = subprocess.Popen([str(trove_bin()), "daemon", "--idle", "60", "--no-watch"],
                             env=t.env, preexec_fn=drop, cwd="/", stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert wait_for(lambda: p.poll() is not None
                            or list(t.socket_dir().glob("*.sock")), timeout=20)
            assert p.poll() is None, p.communicate()
            sock = sock_path(t)
            c = Client(sock)
            n0 = c.call("hello")["result"]["requests"]
            r = t.ok("search", "pasta")
            assert "pasta" in r.out.lower()
            assert c.call("hello")["result"]["requests"] == n0 + 1   # only our hellos
            r = t("daemon", "status", both=False)
            assert r.rc != 0, r
            c.close()
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
    finally:
        shutil.rmtree(base, ignore_errors=True)
