#!/usr/bin/python3
"""What the snapshot retention costs (docs/performance.md, "Snapshot
retention"): an index made the day before (kept: the newest of its day),
N one-note edits, each its own `trove update` a few seconds apart within
one hour (as a watcher makes them), then one more edit three hours later,
whose commit merges the hour's snapshots (but the newest 5) into one.
Prints the CPU time (user + system, of the trove process) of a plain edit
update and of the merging one, and the undo rows before and after.

    TROVE_BIN=build/trove EDITS=300 NOTES=500 /usr/bin/python3 bench/snapshot_retention_bench.py

Time is TROVE_NOW (for tests and benches only), so nothing waits."""
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BIN = os.environ.get("TROVE_BIN", "build/trove")
EDITS = int(os.environ.get("EDITS", "300"))
NOTES = int(os.environ.get("NOTES", "500"))
T0 = 1799971200 + 9 * 3600


def run(env, *args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit("trove %s failed: %s" % (" ".join(args), p.stderr))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def undo_rows(index):
    db = sqlite3.connect(index)
    n = sum(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
            for t in ("undo_docs", "undo_chunks", "undo_links", "undo_vecs"))
    snaps = db.execute("SELECT count(*) FROM snapshots").fetchone()[0]
    db.close()
    return n, snaps


def main():
    tmp = Path(tempfile.mkdtemp(prefix="trove-retention-"))
    vault = tmp / "vault"
    vault.mkdir()
    for i in range(NOTES):
        (vault / ("n%04d.md" % i)).write_text(
            "# Note %d\n\n%s [[n%04d]]\n\n## Part\n\nmore words %d\n"
            % (i, " ".join("w%d" % ((i * 7 + j) % 311) for j in range(60)), (i + 1) % NOTES, i))
    env = dict(os.environ, TROVE_INDEX=str(tmp / "index.db"), TROVE_CONFIG_DIR=str(tmp / "cfg"),
               TZ="UTC", TROVE_NO_DAEMON="1")
    env.pop("TROVE_EMBED_MODEL", None)
    env["TROVE_NOW"] = str(T0 - 86400)    # the day before: kept as its day's newest
    run(env, "collection", "add", str(vault), "--name", "v")
    run(env, "update")
    plain = []
    for k in range(EDITS):
        p = vault / ("n%04d.md" % (k % 5))
        p.write_text(p.read_text() + "edit %d\n" % k)
        os.utime(p, (T0 + k + 1, T0 + k + 1))
        env["TROVE_NOW"] = str(T0 + 10 * (k + 1))
        plain.append(run(env, "update"))
    rows_before, snaps_before = undo_rows(env["TROVE_INDEX"])
    p = vault / "n0100.md"
    p.write_text(p.read_text() + "later\n")
    os.utime(p, (T0 + 99999, T0 + 99999))
    env["TROVE_NOW"] = str(T0 + 3 * 3600)
    merge = run(env, "update")
    rows_after, snaps_after = undo_rows(env["TROVE_INDEX"])
    run(env, "check")
    print("notes %d, %d one-note edit updates within an hour" % (NOTES, EDITS))
    print("plain edit update: median %.3f s CPU (min %.3f)" % (statistics.median(plain), min(plain)))
    print("the update that merges them: %.3f s CPU" % merge)
    print("snapshots %d -> %d, undo rows %d -> %d" % (snaps_before, snaps_after, rows_before,
                                                       rows_after))


if __name__ == "__main__":
    main()
