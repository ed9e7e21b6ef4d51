"""State a user relies on without looking at it (issue 15): nothing is loaded
from the folder trove runs in, relative config paths mean the same from
anywhere, an update never empties a collection because its folder moved or
is empty, one daemon per index whatever its socket folder, private files,
an index that shrinks, `mcp --http localhost:0`, a symlinked runtime folder,
and one folder indexed once however many collections name it."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import COLLECTION, FIXTURE_VAULT, expected_notes, trove_bin

DAEMON_BOTH_WAYS = True


def plant_model(glove, folder, name):
    """A working model2vec folder named like a catalogue model, planted
    where the user stands."""
    dst = Path(folder) / name
    shutil.copytree(glove, dst)
    return dst


# ---- nothing is loaded from the current folder ------------------------------

def refused(trove, *args, env=None, cwd=None):
    """A read command refused before it reaches any daemon: the same bytes
    with and without one (not counted as a daemon call)."""
    warm = trove(*args, env=env, cwd=cwd, both=False)
    cold = trove(*args, env=dict(env or {}, TROVE_NO_DAEMON="1"), cwd=cwd, both=False)
    assert (warm.rc, warm.out, warm.err) == (cold.rc, cold.out, cold.err), (warm, cold)
    return warm


def test_catalogue_name_never_loads_a_folder_of_the_current_one(indexed, glove, tmp_path):
    trove, vault = indexed
    here = tmp_path / "here"
    here.mkdir()
    plant_model(glove, here, "potion-base-8M")
    r = trove("model", "use", "potion-base-8M", both=False)
    assert r.rc == 0 and "not installed" in r.err, r
    r = refused(trove, "vsearch", "pasta", cwd=here)
    # one error, saying what to do; nothing was searched with the planted folder
    assert r.rc != 0, r
    assert r.err.count("not installed") == 1, r
    assert "trove model pull potion-base-8M" in r.err, r
    assert "cannot use embedding model" not in r.err, r
    assert r.out == "", r
    # search answers by keywords, with one notice
    r = trove("search", "pasta", cwd=here)
    assert r.rc == 0 and "carbonara" in r.out.lower(), r
    assert r.err.count("not installed") == 1, r
    # update indexes and says, once, why vectors are not up to date
    r = trove("update", cwd=here, both=False)
    assert r.rc != 0 and r.err.count("not installed") == 1, r
    assert "keyword search works" in r.err, r
    # status names the same problem
    r = trove("status", cwd=here, both=False)
    assert "not installed" in r.out, r


def test_a_bare_name_is_not_a_path(indexed, glove, tmp_path):
    trove, vault = indexed
    here = tmp_path / "here"
    here.mkdir()
    plant_model(glove, here, "mymodel")
    for env in ({"TROVE_EMBED_MODEL": "mymodel"}, {}):
        args = ("vsearch", "pasta") + (() if env else ("--model", "mymodel"))
        r = refused(trove, *args, env=env, cwd=here)
        assert r.rc != 0 and "unknown model 'mymodel'" in r.err, r
        assert "./mymodel" in r.err, r    # how to say it is a path
    # given as a path it is one
    r = trove("embed", "--model", "./mymodel", cwd=here, both=False)
    assert r.rc == 0, r
    r = trove("vsearch", "pasta", "--model", "./mymodel", cwd=here)
    assert r.rc == 0 and r.out, r
    # model info/embed: the same rule
    r = trove("model", "info", "mymodel", cwd=here, both=False)
    assert r.rc != 0 and "unknown model 'mymodel'" in r.err, r
    r = trove("model", "info", "./mymodel", cwd=here, both=False)
    assert r.rc == 0, r
    r = trove("model", "embed", "mymodel", "hello", cwd=here, both=False)
    assert r.rc != 0 and "unknown model" in r.err, r


def test_reranker_name_is_not_opened_from_the_current_folder(indexed, glove, tmp_path):
    trove, vault = indexed
    here = tmp_path / "here"
    here.mkdir()
    plant_model(glove, here, "bge-reranker")
    r = trove("query", "pasta", "--reranker", "bge-reranker", cwd=here)
    assert r.rc == 0 and "carbonara" in r.out.lower(), r
    assert "unknown model 'bge-reranker'" in r.err, r
    assert r.err.count("re-scoring lexically") == 1, r


def test_config_model_path_is_relative_to_the_config(trove, vault, glove, tmp_path):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    plant_model(glove, trove.config, "m")
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "embed_model: ./m\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = trove("update", cwd=elsewhere)
    assert r.rc == 0, r
    r = trove("vsearch", "pasta", cwd=elsewhere)
    assert r.rc == 0 and "carbonara" in r.out.lower(), r


# ---- relative collection paths, and an update that would empty one --------

def write_config(trove, body):
    trove.config.mkdir(parents=True, exist_ok=True)
    (trove.config / "config.yaml").write_text(body)


def test_relative_collection_path_is_relative_to_the_config(trove, tmp_path):
    notes = trove.config / "notes"
    shutil.copytree(FIXTURE_VAULT, notes)
    write_config(trove, "collections:\n  notes:\n    path: notes\n")
    # a folder of the same name where the user happens to stand
    decoy = tmp_path / "decoy"
    (decoy / "notes").mkdir(parents=True)
    (decoy / "notes" / "other.md").write_text("# Other\n\nnothing\n")
    r = trove("update", cwd=decoy)
    assert r.rc == 0, r
    n = len(expected_notes(notes))
    assert re.search(r"notes: %d files, %d new" % (n, n), r.out), r
    r = trove("update", cwd=tmp_path)
    assert r.rc == 0 and "0 deleted" in r.out, r
    r = trove.ok("collection", "list")
    assert str(notes) in r.out, r


def test_an_emptied_folder_keeps_its_notes(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    n = len(expected_notes(vault))
    away = vault.parent / "away"
    away.mkdir()
    for p in list(vault.iterdir()):
        shutil.move(str(p), str(away / p.name))
    r = trove("update")
    assert r.rc != 0 and "holds no notes now" in r.err, r
    assert "%d indexed notes are kept" % n in r.err, r
    assert "carbonara" in trove.ok("search", "carbonara").out.lower()
    # the notes back: nothing to do
    for p in list(away.iterdir()):
        shutil.move(str(p), str(vault / p.name))
    r = trove.ok("update")
    assert "0 new" in r.out and "0 deleted" in r.out, r


def test_a_changed_folder_holding_few_notes_deletes_nothing(trove, vault, tmp_path):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(vault / "Home.md", other / "Home.md")
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text().replace(str(vault), str(other)))
    r = trove("update")
    assert r.rc != 0 and "nothing was deleted" in r.err, r
    assert "carbonara" in trove.ok("search", "carbonara").out.lower()
    # a folder moved with its notes is simply followed
    moved = tmp_path / "moved"
    shutil.copytree(vault, moved)
    cfg.write_text(cfg.read_text().replace(str(other), str(moved)))
    r = trove.ok("update")
    assert "0 deleted" in r.out, r


# ---- one daemon per index ---------------------------------------------------

def test_one_daemon_per_index_whatever_the_runtime_folder(trove, vault):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    first = trove.start_daemon("--idle", "300", "--no-watch")
    pid = int(re.search(r"pid (\d+)", first.out).group(1))
    other = Path(tempfile.mkdtemp(prefix="trove-run2-"))
    env = {"XDG_RUNTIME_DIR": str(other)}
    try:
        lock = Path(str(trove.index) + "-lock")
        assert lock.stat().st_mode & 0o777 == 0o600
        assert ("pid %d\n" % pid) in lock.read_text()
        r = trove("daemon", "--detach", "--idle", "300", "--no-watch", env=env, both=False)
        assert r.rc != 0 and ("process %d" % pid) in r.err, r
        assert "already serves" in r.err, r
        assert not list(other.glob("trove/*.sock"))
        # the other folder's CLI finds the daemon through the index's lock
        before = trove.daemon_requests()
        r = trove("update", env=env, both=False)
        assert r.rc == 0, r
        r = trove("daemon", "status", env=env, both=False)
        assert r.rc == 0 and ("pid: %d" % pid) in r.out, r
        assert int(re.search(r"^requests: (\d+)$", r.out, re.M).group(1)) > before, r
        r = trove("daemon", "stop", env=env, both=False)
        assert r.rc == 0, r
        assert "pid" not in lock.read_text()
        # gone: a daemon starts from the other folder now
        trove.start_daemon("--idle", "300", "--no-watch", env=env)
        trove.ok("daemon", "stop", env=env, both=False)
    finally:
        trove("daemon", "stop", both=False)
        shutil.rmtree(other, ignore_errors=True)


# ---- private files ----------------------------------------------------------

def test_index_and_its_folder_are_private(trove, vault, tmp_path):
    old = os.umask(0o022)
    try:
        index = tmp_path / "new" / "deep" / "index.db"
        env = {"TROVE_INDEX": str(index)}
        trove.ok("collection", "add", vault, "--name", COLLECTION)
        trove.ok("update", env=env)
        assert index.stat().st_mode & 0o777 == 0o600
        for d in (index.parent, index.parent.parent):
            assert d.stat().st_mode & 0o777 == 0o700, d
        for suffix in ("-wal", "-shm", "-verified"):
            p = Path(str(index) + suffix)
            if p.exists():
                assert p.stat().st_mode & 0o777 == 0o600, p
        # an index made by an older trove (0644) is closed on its next write
        os.chmod(index, 0o644)
        trove.ok("update", env=env)
        assert index.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_an_index_made_through_a_symlink_is_private(trove, vault, tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "real" / "index.db"
        target.parent.mkdir()
        link = tmp_path / "link.db"
        link.symlink_to(target)  # dangling until the first update
        env = {"TROVE_INDEX": str(link)}
        trove.ok("collection", "add", vault, "--name", COLLECTION)
        trove.ok("update", env=env)
        assert link.is_symlink()
        assert target.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_socket_folder_parents_are_private(trove, vault):
    old = os.umask(0o022)
    try:
        trove.ok("collection", "add", vault, "--name", COLLECTION)
        # no $XDG_RUNTIME_DIR: the socket goes under $XDG_CACHE_HOME/trove/run
        short = Path(tempfile.mkdtemp(prefix="tc-"))
        env = {"XDG_RUNTIME_DIR": None, "XDG_CACHE_HOME": str(short)}
        try:
            trove.start_daemon("--idle", "300", "--no-watch", env=env)
            for d in (short / "trove", short / "trove" / "run"):
                assert d.stat().st_mode & 0o777 == 0o700, d
            trove.ok("daemon", "stop", env=env, both=False)
        finally:
            shutil.rmtree(short, ignore_errors=True)
    finally:
        os.umask(old)


# ---- the index shrinks -------------------------------------------------------

def make_notes(folder, n):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        words = " ".join("word%d term%d" % (i * 7 + k, k) for k in range(300))
        (folder / ("note%04d.md" % i)).write_text("# Note %d\n\n%s\n" % (i, words))


def db_pragmas(index):
    con = sqlite3.connect(str(index))
    try:
        got = {k: con.execute("PRAGMA %s" % k).fetchone()[0]
               for k in ("auto_vacuum", "freelist_count", "page_count")}
        # the full-text index's own pages (Debian's SQLite has dbstat)
        got["fts_pages"] = con.execute("SELECT count(*) FROM dbstat"
                                       " WHERE name = 'chunks_fts_data'").fetchone()[0]
        return got
    finally:
        con.close()


def test_free_pages_are_reclaimed(trove, tmp_path):
    notes = tmp_path / "many"
    make_notes(notes, 300)
    trove.ok("collection", "add", notes, "--name", "many")
    trove.ok("update")
    full = db_pragmas(trove.index)
    assert full["auto_vacuum"] == 2, full   # incremental
    for p in sorted(notes.iterdir())[20:]:
        p.unlink()
    r = trove.ok("update")
    assert "280 deleted" in r.out, r
    after = db_pragmas(trove.index)
    assert after["freelist_count"] * 10 < after["page_count"], after
    assert after["page_count"] < full["page_count"], (full, after)
    # the deleted notes' tombstones merged away with their terms (one
    # full-text segment per transaction, not per note: 258 -> 65 pages)
    assert after["fts_pages"] * 2 < full["fts_pages"], (full, after)
    assert trove.ok("check").rc == 0


def test_a_writer_leaves_no_wal_beside_an_open_reader(trove, vault):
    """SQLite's close deletes the WAL only when it is the last connection;
    with another reader open (a daemon's) the WAL stayed, and every later
    cold search replayed all of it. The writer now truncates it at close."""
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    reader = sqlite3.connect("file:%s?mode=ro" % trove.index, uri=True, isolation_level=None)
    try:
        assert reader.execute("SELECT count(*) FROM docs").fetchone()[0] > 0
        (vault / "wal-note.md").write_text("# WAL\n\nA note written beside an open reader.\n")
        assert "1 new" in trove.ok("update").out
        wal = Path(str(trove.index) + "-wal")
        assert wal.exists() and wal.stat().st_size == 0, wal.stat()
        assert reader.execute("SELECT count(*) FROM docs WHERE path = 'wal-note.md'").fetchone()[0] == 1
    finally:
        reader.close()
    assert "wal-note.md" in trove.ok("search", "beside an open reader", "--files").out


def test_an_old_index_is_converted_once(trove, tmp_path):
    notes = tmp_path / "many"
    make_notes(notes, 300)
    trove.ok("collection", "add", notes, "--name", "many")
    trove.ok("update")
    # as an older trove made it: no auto-vacuum
    con = sqlite3.connect(str(trove.index))
    con.execute("PRAGMA auto_vacuum=NONE")
    con.execute("VACUUM")
    con.close()
    assert db_pragmas(trove.index)["auto_vacuum"] == 0
    for p in sorted(notes.iterdir())[20:]:
        p.unlink()
    trove.ok("update")
    after = db_pragmas(trove.index)
    assert after["auto_vacuum"] == 2, after
    assert after["freelist_count"] * 10 < after["page_count"], after
    assert trove.ok("check").rc == 0
    assert "note0003" in trove.ok("search", "word21").out
    # update --rebuild makes a file that can shrink as well
    con = sqlite3.connect(str(trove.index))
    con.execute("PRAGMA auto_vacuum=NONE")
    con.execute("VACUUM")
    con.close()
    assert db_pragmas(trove.index)["auto_vacuum"] == 0
    trove.ok("update", "--rebuild")
    assert db_pragmas(trove.index)["auto_vacuum"] == 2
    assert trove.index.stat().st_mode & 0o777 == 0o600


# ---- mcp --http localhost:0 --------------------------------------------------

def test_mcp_http_localhost_port_zero(indexed):
    trove, vault = indexed
    p = subprocess.Popen([str(trove_bin()), "mcp", "--http", "localhost:0"], env=trove.env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=str(trove.home))
    try:
        url = p.stdout.readline().strip()
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/mcp", url)
        assert m and int(m.group(1)) > 0, (url, p.stderr.read() if p.poll() is not None else "")
        import socket
        socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=30).close()
    finally:
        p.terminate()
        p.wait(timeout=30)
    r = trove("mcp", "--http", "example.com:0", both=False)
    assert r.rc != 0 and "numeric address or localhost" in r.err, r


# ---- a symlinked runtime folder -------------------------------------------------

def test_a_symlinked_private_run_folder_is_used(trove, vault, tmp_path):
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.ok("update")
    real = Path(tempfile.mkdtemp(prefix="trove-real-"))
    os.chmod(real, 0o700)
    try:
        os.symlink(real, trove.socket_dir())
        trove.start_daemon("--idle", "300", "--no-watch")
        assert list(real.glob("*.sock")), list(real.iterdir())
        assert trove.daemon_requests() >= 0
        trove.ok("daemon", "stop", both=False)
        # one open to others is refused, and left as it is
        os.chmod(real, 0o755)
        r = trove("daemon", "--detach", "--idle", "300", both=False)
        assert r.rc != 0 and "open to others" in r.err, r
        assert real.stat().st_mode & 0o777 == 0o755
    finally:
        shutil.rmtree(real, ignore_errors=True)


# ---- one folder, one collection ---------------------------------------------------

def test_collection_add_refuses_a_folder_already_added(trove, vault, tmp_path):
    link = tmp_path / "link"
    os.symlink(vault, link)
    # a hand-edited config names the folder through a symlink
    write_config(trove, "collections:\n  %s:\n    path: %s\n" % (COLLECTION, link))
    for spelling in (str(vault), str(vault) + "/.", str(link) + "/"):
        r = trove("collection", "add", spelling, "--name", "again")
        assert r.rc != 0 and "already collection '%s'" % COLLECTION in r.err, r
    assert "again" not in (trove.config / "config.yaml").read_text()


def test_duplicate_collections_in_the_config_index_once(trove, vault, tmp_path):
    link = tmp_path / "link"
    os.symlink(vault, link)
    write_config(trove, "collections:\n  a:\n    path: %s\n  b:\n    path: %s\n"
                 % (vault, link))
    r = trove("update")
    assert r.rc == 0, r
    assert "folder %s is already collection 'a'" % link in r.err, r
    n = len(expected_notes(vault))
    r = trove.ok("check")
    assert "(%d notes," % n in r.out, r
    hits = trove.search("carbonara")
    assert len({h["path"] for h in hits}) == len(hits), hits
    # said again on the next update, and still indexed once
    r = trove("update")
    assert "already collection 'a'" in r.err and "0 new" in r.out, r
    assert "(%d notes," % n in trove.ok("check").out
