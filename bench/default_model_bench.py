#!/usr/bin/python3
"""default_model_bench -- the default model's shape, cold and through the
daemon (issue 20, "The default model, cold").

    /usr/bin/python3 bench/default_model_bench.py [--bin build/trove] [--base OLD_BIN]
        [--rounds 6] [--runs 5] [--work DIR [--index-only]]

Model: scripts/big-m2v-model.sh (500,353 Unigram pieces x 256 F32, the
shape of potion-multilingual-128M; seeded random vectors). Vault: the tldr
pages (../shared/corpora/tldr-pages.tar.gz, extracted into the work
folder), indexed and embedded with that model (`trove update`; --work DIR
reuses a folder a previous run left with --keep). Measures, with
hyperfine -N (whole processes, page cache warm, tokenizer cache filled):

  1. `trove model embed MODEL 'how do I fix my car'`      target <= 10 ms
  2. cold hybrid `trove --no-daemon search QUERY`           target <= 15 ms p50
  3. the same through a running daemon (`trove search`)    target <= 3 ms p50
  4. the daemon's private memory (/proc/PID/smaps after the searches),
     all of it and by mapping: the model file, the tokenizer cache entry,
     SQLite's mapping of index.db, other files, anonymous memory (heap:
     what is private beyond the mapped files)             target <= 60 MB
  plus `/bin/true` (the machine's cost of starting a process) and, with
  --base, the same rows for another binary (each with its own tokenizer
  cache: the entry formats differ).

The box may be shared: commands are measured in ROUNDS rounds of RUNS runs
each, the commands alternating inside every round, so that load changes
hit every command alike; p50/p95 are over all runs; CPU time (user +
system, hyperfine's means averaged over the rounds) is printed beside the
wall time, and `uptime` before and after."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUERIES = ["extract a tar archive", "list open network ports", "resize an image"]


def sh(*args, env=None, check=True):
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("default_model_bench: %s failed: %s" % (" ".join(args), p.stderr[-2000:]))
    return p


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def measure(rows, rounds, runs, env):
    """rows: [(label, argv)]. Returns {label: (walls, cpu_means)}."""
    out = {label: ([], []) for label, _ in rows}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            order = rows if r % 2 == 0 else rows[::-1]
            for label, argv in order:
                js = os.path.join(tmp, "h.json")
                cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)
                sh("hyperfine", "-N", "-w", "1", "-r", str(runs), "--style", "none",
                   "--export-json", js, cmd, env=env)
                res = json.load(open(js))["results"][0]
                out[label][0].extend(res["times"])
                out[label][1].append(res["user"] + res["system"])
    return out


def report(title, rows, res):
    print("\n%s" % title)
    print("| command | wall p50 | wall p95 | CPU (user+sys) mean | runs |")
    print("|---|---|---|---|---|")
    for label, argv in rows:
        walls, cpus = res[label]
        print("| `%s` | %.1f ms | %.1f ms | %.1f ms | %d |" % (
            " ".join(argv), 1e3 * pct(walls, 0.5), 1e3 * pct(walls, 0.95),
            1e3 * sum(cpus) / len(cpus), len(walls)))


def smaps_private(pid, groups):
    """Private (clean + dirty) kB of /proc/PID/smaps by mapping: {group:
    kB} for each group's path fragment, "other files" for the rest of the
    file-backed mappings, "anonymous" for heap, stacks and anonymous maps.
    File pages only this process maps count as private in smaps, though
    they are page cache the kernel can drop and other processes share."""
    out = dict.fromkeys(list(groups) + ["other files", "anonymous"], 0)
    cur = ""
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                cur = m.group(1)
                continue
            m = re.match(r"^Private_(Clean|Dirty):\s+(\d+) kB", line)
            if not m:
                continue
            g = next((k for k, frag in groups.items() if frag in cur), None)
            if g is None:
                g = "other files" if cur.startswith("/") else "anonymous"
            out[g] += int(m.group(2))
    return out


def daemon_rows(binary, env, queries):
    tag = os.path.basename(os.path.dirname(binary))
    return [("daemon %s: %s" % (tag, q), [binary, "search", q]) for q in queries]


def run_daemon(binary, env, model, rounds, runs):
    sh(binary, "daemon", "--detach", "--idle", "600", env=env)
    try:
        pid = None
        for _ in range(100):  # bounded wait for its pid
            p = sh(binary, "daemon", "status", env=env, check=False)
            m = re.search(r"^pid: (\d+)", p.stdout, re.M)
            if m:
                pid = int(m.group(1))
                break
            time.sleep(0.05)
        if not pid:
            sys.exit("default_model_bench: the daemon did not start")
        rows = [(label, argv) for label, argv in daemon_rows(binary, env, QUERIES)]
        res = measure(rows, rounds, runs, env)
        mem = smaps_private(pid, {"model file": os.path.join(model, "model.safetensors"),
                                  "tokenizer cache entry": ".tok",
                                  "index.db (SQLite mmap)": env["TROVE_INDEX"]})
        served = sh(binary, "daemon", "status", env=env).stdout
        req = re.search(r"^requests: (\d+)", served, re.M)
        return rows, res, mem, req.group(1) if req else "?"
    finally:
        sh(binary, "daemon", "stop", env=env, check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "trove"))
    ap.add_argument("--base", help="another trove binary measured beside it")
    ap.add_argument("--base-work", help="the base binary's index: a copy of the work folder "
                    "(when the new binary's schema differs)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", help="work folder (kept; reused when already indexed)")
    ap.add_argument("--index-only", action="store_true",
                    help="build the work folder's index and stop (run that part under nice)")
    a = ap.parse_args()
    # TROVE_EMBED_MODEL: the model the work folder was embedded with (the
    # script names another folder in a git worktree, where ../shared is absent)
    model = os.environ.get("TROVE_EMBED_MODEL") or sh(
        "bash", os.path.join(ROOT, "scripts", "big-m2v-model.sh")).stdout.strip()
    work = a.work or tempfile.mkdtemp(prefix="trove-defmodel.")
    os.makedirs(work, exist_ok=True)
    bins = [("new", a.bin)] + ([("base", a.base)] if a.base else [])
    local = {}
    for tag, b in bins:  # private copies: a rebuild meanwhile is harmless
        local[tag] = os.path.join(work, tag, "trove")
        os.makedirs(os.path.dirname(local[tag]), exist_ok=True)
        shutil.copy(b, local[tag])
        # with the dictionaries a binary finds beside itself: without them
        # the copy tokenizes Chinese by bigrams, and its daemon's first
        # update rebuilt the full-text tables of an index made with jieba
        for d in ("trove-zh.dict", "trove-xl.dict"):
            src = os.path.join(os.path.dirname(os.path.abspath(b)), d)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(os.path.dirname(local[tag]), d))
    env = dict(os.environ, TROVE_INDEX=os.path.join(work, "index.db"),
               TROVE_CONFIG_DIR=os.path.join(work, "config"),
               XDG_CONFIG_HOME=os.path.join(work, "xdg-config"),
               XDG_RUNTIME_DIR=os.path.join(work, "run"), TROVE_EMBED_MODEL=model, NO_COLOR="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], exist_ok=True)
    envs = {tag: dict(env, XDG_CACHE_HOME=os.path.join(work, "cache-" + tag)) for tag, _ in bins}
    if a.base and a.base_work:  # the base binary on its own copy (another schema)
        bw = os.path.abspath(a.base_work)
        envs["base"].update(TROVE_INDEX=os.path.join(bw, "index.db"),
                            TROVE_CONFIG_DIR=os.path.join(bw, "config"),
                            XDG_RUNTIME_DIR=os.path.join(bw, "run"))
        os.makedirs(envs["base"]["XDG_RUNTIME_DIR"], exist_ok=True)
    vault = os.path.join(work, "tldr")
    if not os.path.exists(env["TROVE_INDEX"]):
        tgz = os.path.join(ROOT, "..", "shared", "corpora", "tldr-pages.tar.gz")
        if not os.path.exists(tgz):
            sys.exit("default_model_bench: %s not found" % tgz)
        os.makedirs(vault, exist_ok=True)
        with tarfile.open(tgz) as tf:
            tf.extractall(vault)
        sh(local["new"], "collection", "add", vault, "--name", "tldr", env=envs["new"])
        t0 = time.time()
        sh(local["new"], "--no-daemon", "update", env=envs["new"])
        print("indexed and embedded the tldr pages in %.1f s" % (time.time() - t0))
    if a.index_only:
        return
    commit = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD").stdout.strip()
    print("commit %s; model %s; %d CPUs" % (commit, model, os.cpu_count()))
    print("uptime before: %s" % sh("uptime").stdout.strip())
    for tag, _ in bins:  # fill each binary's tokenizer cache
        sh(local[tag], "model", "embed", model, "warm", env=envs[tag])
    # one environment for hyperfine: each command names its own cache
    rows = [("true", ["/bin/true"])]
    for tag, _ in bins:
        c = "XDG_CACHE_HOME=" + envs[tag]["XDG_CACHE_HOME"]
        rows.append(("embed " + tag, ["/usr/bin/env", c, local[tag], "model", "embed", model,
                                      "how do I fix my car"]))
        ix = ["TROVE_INDEX=" + envs[tag]["TROVE_INDEX"],
              "TROVE_CONFIG_DIR=" + envs[tag]["TROVE_CONFIG_DIR"]]
        for q in QUERIES:
            rows.append(("search %s %s" % (tag, q),
                         ["/usr/bin/env", c] + ix + [local[tag], "--no-daemon", "search", q]))
        rows.append(("keyword %s" % tag, ["/usr/bin/env", c] + ix + [
            local[tag], "--no-daemon", "search", QUERIES[0], "--no-vector"]))
    res = measure(rows, a.rounds, a.runs, env)
    report("cold processes (`/usr/bin/env` sets each binary's tokenizer cache; "
           "`/bin/true` is the cost of a process here)", rows, res)
    for tag, _ in bins:
        drows, dres, mem, req = run_daemon(local[tag], envs[tag], model, a.rounds, a.runs)
        report("through the daemon (%s binary; %s requests served)" % (tag, req), drows, dres)
        print("daemon private memory (%s), smaps Private_Clean + Private_Dirty: %.1f MB in all; "
              % (tag, sum(mem.values()) / 1024) +
              ", ".join("%s %.1f MB" % (k, v / 1024) for k, v in mem.items()))
    print("\nuptime after: %s" % sh("uptime").stdout.strip())
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
