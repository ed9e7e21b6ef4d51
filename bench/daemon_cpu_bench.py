#!/usr/bin/python3
"""daemon_cpu_bench -- the daemon's own CPU time per request, old and new
binaries alternated (issue 20: the vector half of a hybrid search and the
daemon's request path).

    /usr/bin/python3 bench/daemon_cpu_bench.py --work DIR [--bin build/trove]
        [--base OLD_BIN] [--requests 100] [--rounds 3] [QUERY ...]

DIR: a work folder default_model_bench.py left (index.db, config/, the
tldr pages, new/ and base/ copies of the binaries with their
dictionaries); it is not written to except for the daemon's socket under
DIR/run. For every binary in turn (alternating, ROUNDS rounds), a daemon
is started, warmed with 5 requests of each query, then each query is
sent REQUESTS times (`trove search QUERY`, hybrid, and with --no-vector)
and the daemon's utime + stime (/proc/PID/stat, every thread, 10 ms
ticks: hence many requests) is divided by the count. Prints ms per
request, per binary, per query, the mean over rounds."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUERIES = ["extract a tar archive", "list open network ports", "tar"]
TICK = os.sysconf("SC_CLK_TCK")


def sh(*args, env=None, check=True):
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("daemon_cpu_bench: %s failed: %s" % (" ".join(args), p.stderr[-2000:]))
    return p


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        f = f.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def one_daemon(binary, env, queries, n):
    pid = None
    sh(binary, "daemon", "--detach", "--idle", "600", env=env)
    try:
        for _ in range(100):
            p = sh(binary, "daemon", "status", env=env, check=False)
            m = re.search(r"^pid: (\d+)", p.stdout, re.M)
            if m:
                pid = int(m.group(1))
                break
            time.sleep(0.05)
        if not pid:
            sys.exit("daemon_cpu_bench: the daemon did not start")
        out = {}
        for q in queries:
            for extra in ([], ["--no-vector"]):
                argv = [binary, "search", q] + extra
                for _ in range(5):
                    sh(*argv, env=env)
                c0, t0 = cpu_s(pid), time.time()
                for _ in range(n):
                    sh(*argv, env=env)
                out[(q, bool(extra))] = ((cpu_s(pid) - c0) / n, (time.time() - t0) / n)
        return out
    finally:
        sh(binary, "daemon", "stop", env=env, check=False)
        for _ in range(200):  # bounded wait for it to be gone: the next holds the lock
            if not pid or not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "trove"))
    ap.add_argument("--base")
    ap.add_argument("--work", required=True)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("queries", nargs="*")
    a = ap.parse_args()
    queries = a.queries or QUERIES
    model = sh("bash", os.path.join(ROOT, "scripts", "big-m2v-model.sh")).stdout.strip()
    bins = [("new", a.bin)] + ([("base", a.base)] if a.base else [])
    local = {}
    for tag, b in bins:
        local[tag] = os.path.join(a.work, tag, "trove")
        os.makedirs(os.path.dirname(local[tag]), exist_ok=True)
        if os.path.abspath(b) != os.path.abspath(local[tag]):
            shutil.copy(b, local[tag])
        for d in ("trove-zh.dict", "trove-xl.dict"):
            src = os.path.join(os.path.dirname(os.path.abspath(b)), d)
            dst = os.path.join(os.path.dirname(local[tag]), d)
            if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(dst):
                shutil.copy(src, dst)
    env = dict(os.environ, TROVE_INDEX=os.path.join(a.work, "index.db"),
               TROVE_CONFIG_DIR=os.path.join(a.work, "config"),
               XDG_CONFIG_HOME=os.path.join(a.work, "xdg-config"),
               XDG_RUNTIME_DIR=os.path.join(a.work, "run"), TROVE_EMBED_MODEL=model, NO_COLOR="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], exist_ok=True)
    envs = {tag: dict(env, XDG_CACHE_HOME=os.path.join(a.work, "cache-" + tag)) for tag, _ in bins}
    print("uptime before: %s" % sh("uptime").stdout.strip())
    for tag, _ in bins:  # fill each binary's tokenizer cache
        sh(local[tag], "model", "embed", model, "warm", env=envs[tag])
    acc = {tag: {} for tag, _ in bins}
    for r in range(a.rounds):
        for tag, _ in (bins if r % 2 == 0 else bins[::-1]):
            for k, v in one_daemon(local[tag], envs[tag], queries, a.requests).items():
                acc[tag].setdefault(k, []).append(v)
    print("| binary | query | daemon CPU / request, hybrid | keyword only (--no-vector) "
          "| client wall / request, hybrid |")
    print("|---|---|---|---|---|")
    for tag, _ in bins:
        for q in queries:
            h, k = acc[tag][(q, False)], acc[tag][(q, True)]
            print("| %s | `%s` | %.2f ms | %.2f ms | %.2f ms |" % (
                tag, q, 1e3 * sum(x[0] for x in h) / len(h), 1e3 * sum(x[0] for x in k) / len(k),
                1e3 * sum(x[1] for x in h) / len(h)))
    print("%d rounds x %d requests per query and binary" % (a.rounds, a.requests))
    print("uptime after: %s" % sh("uptime").stdout.strip())


if __name__ == "__main__":
    main()
