"""A day in the life (issue 15, "Checks"): an index used for a day with the
daemon watching, scripted. The evening before, the vault and a second
collection are indexed with the GloVe model (snapshot 1). Then, with the
daemon running (started anew for each part of the day, as a user's login
would): edits, three touches, a rename; a collection removed and rolled
back; a switch to a second static model; a crash (kill -9 of the daemon
while it works on a burst of new notes) and the restart that finishes the
work. At the end `trove check` passes, `snapshot list` covers the whole run
(back to snapshot 1, the hours in between merged by the retention), and
rolling back to snapshot 1, with the files put back as they were then,
gives the index a fresh update of those files gives: same listing, counts
and search answers.

Time: `TROVE_NOW` (for tests only, docs/cli.md) stamps each part of the day
with its hour, so the retention sees a day pass in a minute. Every wait is
an event polled with a bounded timeout; nothing asserts a timing.
"""
import json
import os
import shutil
from pathlib import Path

from conftest import FIXTURE_VAULT, wait_for
from test_faults import Daemon, index_is_healthy
from test_model_static import write_model

DAY = 1799971200                  # a midnight, UTC (TZ=UTC below)
EVENING_BEFORE = DAY - 6 * 3600   # 18:00 the day before


def at(trove, t):
    trove.env["TROVE_NOW"] = str(t)


def snap_list(trove):
    return trove.ok("snapshot", "list", "--json", both=False).json()


def current(trove):
    return snap_list(trove)["current"]


def files_of(trove, query):
    """The files (absolute paths) a keyword search finds."""
    r = trove("search", query, "--all", "--no-vector", "--files", both=False)
    assert r.rc in (0, 1), r
    return r.out.split()


def settled(d, trove, after_updates=None):
    """The watcher has nothing pending (and has run an update since
    `after_updates`), and every collection's files match the index."""
    def ok():
        w = d.watcher()
        if w["pending"] or (after_updates is not None and w["updates"] <= after_updates):
            return False
        st = trove.ok("status", "--json", both=False).json()
        return all(c["fresh_known"] and not (c["fresh"]["added"] or c["fresh"]["changed"]
                                             or c["fresh"]["deleted"])
                   for c in st["collections"])
    assert wait_for(ok, timeout=60, step=0.1), d.stderr()


def write_extra(root):
    (root / "sub").mkdir(parents=True)
    (root / "top.md").write_text("# Top\n\nnot under the mask\n")
    for i in range(6):
        (root / "sub" / ("e%d.md" % i)).write_text(
            "# Extra %d\n\nquokka note %d, next [[e%d]]\n" % (i, i, (i + 1) % 6))


QUERIES = ("sourdough starter", "rust ownership borrow", "quokka", "travel japan rail",
           "how do pointers work", "platypus", "wombat")


def answers(trove, env=None):
    """What a user sees of an index: its listing, counts, and answers."""
    out = {"ls": trove.ok("ls", env=env, both=False).out}
    for c in ("vault", "extra"):
        out["ls " + c] = trove.ok("ls", c, env=env, both=False).out
    st = trove.ok("status", "--json", env=env, both=False).json()
    out["counts"] = st["counts"]
    out["notes"] = {c["name"]: c["notes"] for c in st["collections"]}
    for q in QUERIES:
        r = trove("search", q, "--json", "-n", "8", env=env, both=False)
        out["search " + q] = (r.rc, r.out)
        r = trove("vsearch", q, "--json", "-n", "5", env=env, both=False)
        out["vsearch " + q] = (r.rc, r.out)
    return out


def test_day_in_the_life(trove, tmp_path, glove):
    trove.env["TZ"] = "UTC"
    vault, extra = tmp_path / "vault", tmp_path / "extra"
    shutil.copytree(FIXTURE_VAULT, vault, symlinks=True)
    write_extra(extra)
    second, _ = write_model(str(tmp_path / "second-model"), seed=5)
    log = tmp_path / "daemon.log"

    # ---- the evening before: the first index -------------------------------
    # Retention as configured by default, but without "the newest 5 always"
    # (a day of this test makes only a handful of snapshots: the time
    # windows alone must decide, and merge).
    trove.config.mkdir(parents=True, exist_ok=True)
    (trove.config / "config.yaml").write_text("snapshots: {last: 1}\n")
    at(trove, EVENING_BEFORE)
    trove.ok("collection", "add", vault, "--name", "vault")
    trove.ok("collection", "add", extra, "--name", "extra", "--mask", "sub/*.md")
    trove.ok("context", "add", "extra/sub", "Quokka notes")
    trove.ok("model", "use", glove)
    r = trove.ok("update", timeout=300)
    assert "snapshot 1 " in r.out, r
    first = current(trove)
    assert first == 1
    then = tmp_path / "then"               # the files as snapshot 1 has them
    shutil.copytree(vault, then / "vault", symlinks=True)
    shutil.copytree(extra, then / "extra", symlinks=True)
    config_then = (trove.config / "config.yaml").read_text()

    # ---- 09:00: edits, touches, a rename -----------------------------------
    at(trove, DAY + 9 * 3600)
    d = Daemon(trove, log)
    d.quiet()
    assert current(trove) == first         # the start-up scan found nothing new
    bread = vault / "cooking" / "sourdough-bread.md"
    bread.write_text(bread.read_text() + "\nA platypus visited the bakery.\n")
    assert wait_for(lambda: str(bread) in files_of(trove, "platypus"),
                    timeout=30), d.stderr()
    edited = current(trove)
    assert edited > first
    # Three touches, each seen by the watcher before the next: no snapshot.
    for k in range(3):
        u = d.watcher()["updates"]
        t = 1700000000 + 100 * k
        os.utime(vault / "travel" / "lisbon.md", (t, t))
        settled(d, trove, after_updates=u)
    assert current(trove) == edited
    assert [s["id"] for s in snap_list(trove)["snapshots"]][:2] == [edited, first]
    (vault / "cooking" / "knife-skills.md").rename(vault / "cooking" / "knives.md")
    assert wait_for(lambda: "vault/cooking/knives.md" in trove.ok("ls", "vault/cooking",
                                                                   both=False).out,
                    timeout=30), d.stderr()
    settled(d, trove)
    d.stop()

    # ---- 11:00: a collection removed, and rolled back ----------------------
    at(trove, DAY + 11 * 3600)
    d = Daemon(trove, log)
    d.quiet()
    before_remove = current(trove)
    trove.ok("collection", "remove", "extra")
    assert "extra/" not in trove.ok("ls", both=False).out
    assert "extra" not in trove.ok("collection", "list").out
    r = trove.ok("snapshot", "rollback", str(before_remove))
    assert "collection 'extra' is back in config.yaml" in r.out, r
    assert "extra/\t6 notes" in trove.ok("ls", both=False).out
    listed = trove.ok("collection", "list").out
    assert "extra" in listed and "sub/*.md" in listed, listed
    assert "Quokka notes" in trove.ok("context", "list").out
    # The daemon follows the config; the next update keeps the notes.
    settled(d, trove)
    trove.ok("update")
    assert len(files_of(trove, "quokka")) == 6
    d.stop()

    # ---- 14:00: another model ----------------------------------------------
    at(trove, DAY + 14 * 3600)
    d = Daemon(trove, log)
    d.quiet()
    trove.ok("model", "use", second)
    trove.ok("embed", timeout=300)
    settled(d, trove)
    ramen = vault / "cooking" / "ramen-broth.md"
    ramen.write_text(ramen.read_text() + "\nalpha beta gamma broth\n")
    assert wait_for(lambda: str(ramen) in files_of(trove, "gamma broth"),
                    timeout=30), d.stderr()
    r = trove.ok("vsearch", "alpha beta gamma", "--json", both=False)
    assert r.json()["results"], r
    settled(d, trove)
    d.stop()

    # ---- 16:00: a crash in the middle of work, and the restart --------------
    at(trove, DAY + 16 * 3600)
    d = Daemon(trove, log)
    d.quiet()
    u = d.watcher()["updates"]
    bulk = vault / "bulk"
    bulk.mkdir()
    for i in range(200):
        (bulk / ("w%03d.md" % i)).write_text("# Wombat %d\n\nwombat burrow %d alpha\n" % (i, i))
    # Killed once the watcher has the batch, as soon as its update starts
    # (or, on a slow machine, whatever it is doing then: any moment must do).
    assert wait_for(lambda: d.watcher()["pending"] or d.watcher()["updates"] > u,
                    timeout=30), d.stderr()
    wait_for(lambda: not d.watcher()["pending"], timeout=10, step=0.005)
    d.kill9()
    index_is_healthy(trove)
    at(trove, DAY + 16 * 3600 + 300)
    d = Daemon(trove, log)
    assert wait_for(lambda: len(files_of(trove, "wombat")) == 200, timeout=120), d.stderr()
    settled(d, trove)
    d.stop()

    # ---- 18:00: the day in review ------------------------------------------
    at(trove, DAY + 18 * 3600)
    index_is_healthy(trove)
    lst = snap_list(trove)
    ids = [s["id"] for s in lst["snapshots"]]
    times = [s["created_at"] for s in lst["snapshots"]]
    assert ids[-1] == first and lst["oldest"] == EVENING_BEFORE, lst
    assert lst["newest"] >= DAY + 16 * 3600, lst
    # Out of the last hour, one snapshot per hour is left (the newest of
    # each) and the evening before: the retention merged the rest.
    older = [t for t in times if t <= lst["newest"] - 3600]
    assert len(older) == len(set(t // 3600 for t in older)) >= 4, lst
    assert len(ids) < lst["snapshots"][0]["id"], lst     # some were merged
    text = trove.ok("snapshot", "list").out
    assert "covering 1970" not in text and "snapshots covering" in text, text

    r = trove.ok("snapshot", "rollback", str(first))
    assert "rolled back from snapshot" in r.out, r
    # Put the files back as they were at snapshot 1: the rolled-back index
    # is already up to date with them.
    shutil.rmtree(vault)
    shutil.rmtree(extra)
    shutil.copytree(then / "vault", vault, symlinks=True)
    shutil.copytree(then / "extra", extra, symlinks=True)
    r = trove.ok("update")
    for line in r.out.splitlines():
        if line.startswith(("vault:", "extra:")):
            assert " 0 new, 0 changed, 0 renamed, 0 deleted" in line, r
    assert "snapshot " not in r.out, r      # nothing to change: no snapshot
    trove.ok("embed", timeout=300)
    index_is_healthy(trove)
    rolled = answers(trove)

    # A fresh index of the same files, with the same config.
    fresh_env = {"TROVE_INDEX": str(tmp_path / "fresh" / "index.db")}
    trove.ok("update", env=fresh_env, timeout=300)
    trove.ok("embed", env=fresh_env, timeout=300)
    fresh = answers(trove, env=fresh_env)
    for key in fresh:
        assert rolled[key] == fresh[key], "%s differs:\nrolled back: %s\nfresh: %s" % (
            key, json.dumps(rolled[key])[:3000], json.dumps(fresh[key])[:3000])
    # config.yaml is the evening's, but for the model switched since.
    now = (trove.config / "config.yaml").read_text()
    assert now == config_then.replace(str(glove), str(second)), (now, config_then)
    assert "AddressSanitizer" not in Path(log).read_text(errors="replace")
