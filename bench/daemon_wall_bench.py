#!/usr/bin/python3
"""daemon_wall_bench -- the wall time of `trove search` answered by a
running daemon, two binaries' daemons up side by side and measured
alternately (issue 20; session 33, w-dmn).

    /usr/bin/python3 bench/daemon_wall_bench.py --work DIR --bin NEW --base OLD
        [--base-work BASE_DIR] [--rounds 10] [--runs 10] [--no-vector]

DIR, BASE_DIR: work folders of bench/default_model_bench.py (the index of
the tldr pages with the default model's shape; TROVE_EMBED_MODEL names the
model it was embedded with), one per binary, so both daemons run at once
(each index has its own socket). Each round runs `hyperfine -N -r RUNS`
of each query for each binary, the binaries' order swapped every round,
so that a change in the box's load hits both alike; p50 and p95 are over
every run, CPU (user + system of the client process) is hyperfine's mean.
default_model_bench.py measures one binary's daemon after the other: on a
shared box its two daemon tables saw different loads."""
import argparse
import json
import os
import re
import sys
import tempfile
import time

from daemon_cpu_bench import install, wait_idle, work_env
from default_model_bench import QUERIES, pct, sh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--base-work", help="the base binary's work folder (default --work + '-base')")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-vector", action="store_true", help="keyword-only searches")
    a = ap.parse_args()
    model = os.environ.get("TROVE_EMBED_MODEL")
    if not model:
        sys.exit("daemon_wall_bench: set TROVE_EMBED_MODEL to the model the index was embedded with")
    works = {"new": a.work, "base": a.base_work or a.work + "-base"}
    bins = {"new": a.bin, "base": a.base}
    envs, local = {}, {}
    for tag in ("new", "base"):
        envs[tag] = work_env(works[tag], tag, model)
        local[tag] = install(bins[tag], os.path.join(works[tag], "wall-" + tag, "trove"))
    print("uptime before: %s" % sh("uptime").stdout.strip())
    pids = {}
    try:
        for tag in ("new", "base"):
            sh(local[tag], "daemon", "--detach", "--idle", "600", env=envs[tag])
            m = re.search(r"^pid: (\d+)", sh(local[tag], "daemon", "status", env=envs[tag]).stdout,
                          re.M)
            pids[tag] = int(m.group(1)) if m else None
        for pid in pids.values():
            if pid:
                wait_idle(pid)
        extra = ["--no-vector"] if a.no_vector else []
        times = {(t, q): [] for t in ("new", "base") for q in QUERIES}
        cpu = {(t, q): [] for t in ("new", "base") for q in QUERIES}
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "h.json")
            for r in range(a.rounds):
                order = ("new", "base") if r % 2 == 0 else ("base", "new")
                for q in QUERIES:
                    for tag in order:
                        cmd = " ".join([local[tag], "search", "'%s'" % q] + extra)
                        sh("hyperfine", "-N", "-w", "2", "-r", str(a.runs), "--style", "none",
                           "--export-json", out, cmd, env=envs[tag])
                        res = json.load(open(out))["results"][0]
                        times[(tag, q)] += [x * 1000 for x in res["times"]]
                        cpu[(tag, q)].append((res["user"] + res["system"]) * 1000)
        mode = "keyword only" if a.no_vector else "hybrid"
        print("through each binary's daemon, %s; %d rounds of %d runs, alternated" %
              (mode, a.rounds, a.runs))
        print("| query | new wall p50 | base wall p50 | new p95 | base p95 | client CPU new / base |")
        print("|---|---|---|---|---|---|")
        for q in QUERIES:
            n, b = times[("new", q)], times[("base", q)]
            cn, cb = cpu[("new", q)], cpu[("base", q)]
            print("| `%s` | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f / %.2f ms |" %
                  (q, pct(n, 0.5), pct(b, 0.5), pct(n, 0.95), pct(b, 0.95),
                   sum(cn) / len(cn), sum(cb) / len(cb)))
    finally:
        for tag in ("new", "base"):
            sh(local[tag], "daemon", "stop", env=envs[tag], check=False)
        for tag, pid in pids.items():
            for _ in range(200):
                if not pid or not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.05)
    print("uptime after: %s" % sh("uptime").stdout.strip())


if __name__ == "__main__":
    main()
