#!/usr/bin/python3
"""daemon_cpu_bench -- the daemon's own CPU time per search request, old
and new binaries alternated (issue 20; session 32, w-kw2).

    /usr/bin/python3 bench/daemon_cpu_bench.py --work DIR --bin NEW [--base OLD]
        [--rounds 4] [--requests 50] [--vector/--no-vector both]

DIR: a work folder of bench/default_model_bench.py (its index of the tldr
pages with the default model's shape; the binaries copied into DIR/new,
DIR/base with their dictionaries); --base-work BASE_DIR: the base
binary's own copy, where the new binary's index has another schema. Each round starts a daemon of each
binary in turn (base first in odd rounds), sends it 3 warm-up requests and
then REQUESTS `trove search QUERY` per query (hybrid, then `--no-vector`),
and reads its user + system time from /proc/PID/stat before and after:
ms per request, averaged over the rounds (min over rounds beside it: the
box is shared, the min is the least disturbed).

--distinct: instead, DISTINCT queries (tldr-style tasks none of which the
six above repeat) each asked once of a fresh daemon, the daemon's CPU
read by `perf stat -e task-clock -p PID` (exact, where /proc's ticks are
10 ms): what a daemon costs before anything it keeps (the title channel's
memo of terms, session 34) has seen the texts a search reads."""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUERIES = ["extract a tar archive", "list open network ports", "tar",
           "resize an image", "git commit", "show disk usage of a directory"]


def sh(*args, env=None, check=True):
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("daemon_cpu_bench: %s failed: %s" % (" ".join(args), p.stderr[-2000:]))
    return p


def cpu_ms(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def wait_idle(pid, limit_s=30):
    """Until the daemon's start-up work (the watcher's first walk, ~0.3 s of
    CPU on the tldr pages) is done: no tick of CPU over a quarter second.
    Else it lands in the first query's figure."""
    last = cpu_ms(pid)
    for _ in range(int(limit_s / 0.25)):
        time.sleep(0.25)
        now = cpu_ms(pid)
        if now == last:
            return
        last = now


DISTINCT = ["kill a process by name", "compress a folder", "docker run container", "ssh",
            "copy files to a remote host", "find files by name", "zstd", "print the current date",
            "change file permissions", "link", "search text in files", "network",
            "python virtual environment", "convert video to gif", "mount a disk",
            "download a file", "count lines in a file", "sort a file", "replace text in a file",
            "list running services", "create a user", "check memory usage", "schedule a job",
            "ping a host", "make a directory", "delete a directory", "rename files",
            "archive with zip", "unzip a file", "encrypt a file", "generate a password",
            "show calendar", "edit a file", "compare two files", "watch a command",
            "set an environment variable", "install a package", "open a port",
            "read a log file", "stop a service"]


def distinct_ms(binary, env, pid, mode):
    """The daemon's task-clock (ms) per query over DISTINCT, each asked once."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        extra = " --no-vector" if mode == "keyword" else ""
        for q in DISTINCT:
            f.write("%s search '%s'%s > /dev/null\n" % (binary, q, extra))
        script = f.name
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
        out = f.name
    try:
        sh("perf", "stat", "-e", "task-clock", "-x", ",", "-o", out, "-p", str(pid), "--",
           "bash", script, env=env)
        for line in open(out):
            f = line.split(",")
            if len(f) > 2 and f[2].startswith("task-clock"):
                return float(f[0]) / len(DISTINCT)
        sys.exit("daemon_cpu_bench: no task-clock in perf stat's output")
    finally:
        os.unlink(script)
        os.unlink(out)


def one_daemon(binary, env, requests, modes, distinct=False):
    pid = None
    sh(binary, "daemon", "--detach", "--idle", "600", env=env)
    try:
        for _ in range(200):
            m = re.search(r"^pid: (\d+)", sh(binary, "daemon", "status", env=env,
                                              check=False).stdout, re.M)
            if m:
                pid = int(m.group(1))
                break
            time.sleep(0.05)
        if not pid:
            sys.exit("daemon_cpu_bench: the daemon did not start")
        wait_idle(pid)
        out = {}
        devnull = subprocess.DEVNULL
        if distinct:
            for mode in modes:
                out[(mode, "distinct")] = distinct_ms(binary, env, pid, mode)
            return out
        for mode in modes:
            for q in QUERIES:
                argv = [binary, "search", q] + (["--no-vector"] if mode == "keyword" else [])
                for _ in range(3):
                    subprocess.run(argv, env=env, stdout=devnull, check=True)
                c0 = cpu_ms(pid)
                for _ in range(requests):
                    subprocess.run(argv, env=env, stdout=devnull, check=True)
                out[(mode, q)] = (cpu_ms(pid) - c0) / requests
        return out
    finally:
        sh(binary, "daemon", "stop", env=env, check=False)
        for _ in range(200):  # gone before the next daemon of this index starts
            if not pid or not os.path.exists("/proc/%d" % pid):
                break
            time.sleep(0.05)


def work_env(w, tag, model):
    """The environment of a binary `tag` on work folder w (its own
    tokenizer cache: the entry formats may differ between binaries)."""
    return dict(os.environ, TROVE_INDEX=os.path.join(w, "index.db"),
                TROVE_CONFIG_DIR=os.path.join(w, "config"),
                XDG_CONFIG_HOME=os.path.join(w, "xdg-config"),
                XDG_RUNTIME_DIR=os.path.join(w, "run"), TROVE_EMBED_MODEL=model,
                NO_COLOR="1", XDG_CACHE_HOME=os.path.join(w, "cache-" + tag))


def install(b, dst):
    """Binary b copied to dst with the dictionaries beside it; dst."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.abspath(b) != os.path.abspath(dst):
        shutil.copy(b, dst)
        for d in ("trove-zh.dict", "trove-xl.dict"):
            src = os.path.join(os.path.dirname(os.path.abspath(b)), d)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(os.path.dirname(dst), d))
    return dst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "trove"))
    ap.add_argument("--base")
    ap.add_argument("--work", required=True)
    ap.add_argument("--base-work", help="the base binary's work folder (default --work): "
                    "an index of the schema that binary reads")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--modes", default="hybrid,keyword")
    ap.add_argument("--distinct", action="store_true",
                    help="each of DISTINCT once per fresh daemon, CPU by perf stat")
    a = ap.parse_args()
    # TROVE_EMBED_MODEL: the model the work folder was embedded with (the
    # script names another folder in a git worktree, where ../shared is absent)
    model = os.environ.get("TROVE_EMBED_MODEL") or sh(
        "bash", os.path.join(ROOT, "scripts", "big-m2v-model.sh")).stdout.strip()
    bins = [("new", a.bin)] + ([("base", a.base)] if a.base else [])
    works = {"new": a.work, "base": a.base_work or a.work}
    envs, local = {}, {}
    for tag, b in bins:
        envs[tag] = work_env(works[tag], tag, model)
        local[tag] = install(b, os.path.join(works[tag], tag, "trove"))
    modes = a.modes.split(",")
    print("uptime before: %s" % sh("uptime").stdout.strip())
    res = {tag: [] for tag, _ in bins}
    for r in range(a.rounds):
        for tag, _ in (bins if r % 2 == 0 else bins[::-1]):
            res[tag].append(one_daemon(local[tag], envs[tag], a.requests, modes, a.distinct))
    queries = ["distinct"] if a.distinct else QUERIES
    if a.distinct:
        print("daemon CPU ms per query (perf stat task-clock), %d distinct queries each asked "
              "once of a fresh daemon, mean (min) over %d rounds" % (len(DISTINCT), a.rounds))
    else:
        print("daemon CPU ms per request (user + system, /proc/PID/stat), "
              "mean (min) over %d rounds of %d requests" % (a.rounds, a.requests))
    print("| mode | query | " + " | ".join(t for t, _ in bins) + " |")
    print("|---|---|" + "---|" * len(bins))
    for mode in modes:
        for q in queries:
            cells = []
            for tag, _ in bins:
                xs = [x[(mode, q)] for x in res[tag]]
                cells.append("%.2f (%.2f)" % (sum(xs) / len(xs), min(xs)))
            print("| %s | `%s` | %s |" % (mode, q, " | ".join(cells)))
    print("uptime after: %s" % sh("uptime").stdout.strip())


if __name__ == "__main__":
    main()
