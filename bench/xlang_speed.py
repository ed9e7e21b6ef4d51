#!/usr/bin/python3
"""CPU cost of the translation channel in a cold `trove search` process.

    /usr/bin/python3 bench/xlang_speed.py VAULT [--trove build/trove] [--n 40] [--callgrind]

Indexes VAULT into a temporary index, then runs, alternating so that load
changes hit both alike, N cold searches (TROVE_NO_DAEMON=1, --no-vector)
per query with the channel on (default) and with --no-translate, and prints
the mean CPU time (user + system of the child) of each and the difference.
The dictionary is mapped and checked only by a search that translates, so
the difference is the whole cost: load, lookups, the translated query's
BM25 list. Queries: a Chinese and an English one, and a Chinese one on
an index with no English (nothing to find) is the same path.

--callgrind: instead, one cold search per query and setting under
`valgrind --tool=callgrind`, and its instruction count (Ir): the same
every run and under any load, where CPU times on a shared box are not.
"""
import argparse
import os
import resource
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["遗忘曲线与间隔重复", "how to merge two sorted linked lists"]


def cpu_of(args, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(args, env, work):
    out = work / "cg.out"
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=%s" % out] + args,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       check=True)
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1].strip())
    raise SystemExit("callgrind printed no instruction count:\n" + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vault", type=Path)
    ap.add_argument("--trove", default=os.environ.get("TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--callgrind", action="store_true")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trove-xlspeed-"))
    env = dict(os.environ, TROVE_CONFIG_DIR=str(work / "cfg"), TROVE_INDEX=str(work / "index.db"),
               TROVE_NO_DAEMON="1")
    env.pop("TROVE_EMBED_MODEL", None)
    subprocess.run([a.trove, "collection", "add", str(a.vault), "--name", "v"], env=env,
                   check=True, capture_output=True)
    subprocess.run([a.trove, "update"], env=env, check=True, capture_output=True)
    print("load average %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    for q in QUERIES:
        base = [a.trove, "search", q, "-n", "10", "--no-vector"]
        if a.callgrind:
            on = instructions(base, env, work)
            off = instructions(base + ["--no-translate"], env, work)
            print("%-40s on %d  off %d  difference %+d instructions (%+.1f%%)" % (
                q, on, off, on - off, 100.0 * (on - off) / off))
            continue
        on = off = 0.0
        for _ in range(a.n):
            on += cpu_of(base, env)
            off += cpu_of(base + ["--no-translate"], env)
        print("%-40s on %.2f ms  off %.2f ms  difference %+.2f ms (mean of %d)" % (
            q, 1000 * on / a.n, 1000 * off / a.n, 1000 * (on - off) / a.n, a.n))


if __name__ == "__main__":
    main()
