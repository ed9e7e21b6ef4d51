#!/usr/bin/env python3
"""Start-up cost of short trove processes, two binaries side by side
(issue 20: `trove model embed` of one query cold <= 10 ms with the default
model's shape; a search answered by the daemon <= 3 ms, whole process).

usage: /usr/bin/python3 bench/startup_bench.py [--base BIN] [--rounds N]
           [--model DIR] [--vault DIR] [--query Q] [--work DIR] [NEW_BIN]

Each binary gets its own folder (a copy of the binary and its dictionaries,
index, config, runtime and cache folders), indexes VAULT (default: the
Obsidian help vault in ../shared) and runs a daemon of its own (--no-watch);
the model's compiled tokenizer cache is filled once per binary first. Then,
N rounds, each command of each binary is spawned (posix_spawn, CPU time and
minor page faults from wait4: robust under load, unlike wall time), the
order alternating between rounds so both binaries meet the same load.
/bin/true is the floor: what any process costs on this box.

Rows: `--version`; `search Q` and `search Q --json` answered by the daemon
(checked: the daemon's request count grows by as many); `search Q` cold:
no daemon (its own runtime folder), each binary on its own copy of the same
index file (the first binary's, byte for byte), as issue 20's side by side
with qmd runs it; `model embed MODEL 'how do I fix my car'` (MODEL:
scripts/big-m2v-model.sh, the default model's shape; --model none leaves
the row out). Printed: CPU median and mean, minor faults median, wall
median; then instructions of one run of each under callgrind (the loader
included; deterministic) when valgrind is installed. The load average is
printed before and after.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def setup(work, name, binary, vault):
    d = os.path.join(work, name)
    for sub in ("run", "cfg", "cache"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    exe = os.path.join(d, "trove")
    shutil.copy(binary, exe)
    src = os.path.dirname(os.path.abspath(binary))
    for f in os.listdir(src):
        if f.startswith("trove-") and f.endswith(".dict"):
            shutil.copy(os.path.join(src, f), d)
    env = {"PATH": "/usr/bin:/bin", "HOME": d, "TROVE_INDEX": os.path.join(d, "index.db"),
           "TROVE_CONFIG_DIR": os.path.join(d, "cfg"), "XDG_RUNTIME_DIR": os.path.join(d, "run"),
           "XDG_CACHE_HOME": os.path.join(d, "cache")}
    run = lambda *a: subprocess.run([exe, *a], env=env, check=True, stdout=subprocess.DEVNULL)
    run("collection", "add", vault, "--name", "vault")
    run("update")
    run("daemon", "--detach", "--no-watch", "--idle", "0")
    for _ in range(100):
        if b"pid" in subprocess.run([exe, "daemon", "status"], env=env,
                                    capture_output=True).stdout:
            break
        time.sleep(0.1)
    return exe, env


def setup_cold(work, name, exe, env, index):
    """A daemon-less environment for exe: its own runtime and cache folders and
    a copy of `index`, the same configuration."""
    d = os.path.join(work, name + "-cold")
    for sub in ("run", "cache"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    shutil.copy(index, os.path.join(d, "index.db"))
    cold = dict(env, TROVE_INDEX=os.path.join(d, "index.db"), XDG_RUNTIME_DIR=os.path.join(d, "run"),
                XDG_CACHE_HOME=os.path.join(d, "cache"))
    return exe, cold


def requests(exe, env):
    out = subprocess.run([exe, "daemon", "status", "--json"], env=env, capture_output=True,
                         text=True).stdout
    import json
    return json.loads(out).get("requests", 0)


def spawn(argv, env):
    devnull = os.open(os.devnull, os.O_WRONLY)
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t) * 1000
    os.close(devnull)
    if status:
        sys.exit("%s: exit status %d" % (" ".join(argv), status))
    return (ru.ru_utime + ru.ru_stime) * 1000, ru.ru_minflt, wall


def callgrind(argv, env, out):
    r = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no",
                        "--callgrind-out-file=" + out, *argv], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in r.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1])
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("new", nargs="?", default=os.path.join(HERE, "build", "trove"))
    ap.add_argument("--base")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--model")
    ap.add_argument("--vault", default=os.path.join(HERE, "..", "shared", "corpora",
                                                    "obsidian-help", "en"))
    ap.add_argument("--query", default="internal links")
    ap.add_argument("--work")
    a = ap.parse_args()
    model = a.model or subprocess.run(["bash", os.path.join(HERE, "scripts", "big-m2v-model.sh")],
                                      check=True, capture_output=True, text=True).stdout.strip()
    if model == "none":
        model = None
    work = a.work or tempfile.mkdtemp(prefix="trove-startup.")
    bins = [("new", a.new)] + ([("base", a.base)] if a.base else [])
    setups = {}
    try:
        for name, b in bins:
            setups[name] = setup(work, name, b, os.path.abspath(a.vault))
        first = setups[bins[0][0]][1]["TROVE_INDEX"]
        colds = {name: setup_cold(work, name, *setups[name], first) for name, _ in bins}
        cmds = [("--version", ["--version"]),
                ("search (daemon)", ["search", a.query]),
                ("search --json (daemon)", ["search", a.query, "--json"])]
        if model:
            cmds.append(("model embed", ["model", "embed", model, "how do I fix my car"]))
        for name, _ in bins:
            exe, env = setups[name]
            for _, args in cmds:   # warm: page cache, tokenizer cache entry
                spawn([exe, *args], env)
            spawn([colds[name][0], "search", a.query], colds[name][1])
        before = {n: requests(*setups[n]) for n, _ in bins}
        rows = [("/bin/true", None, ["/bin/true"], {})]
        for name, _ in bins:
            exe, env = setups[name]
            rows += [(label, name, [exe, *args], env) for label, args in cmds]
            rows.append(("search (cold)", name, [colds[name][0], "search", a.query],
                         colds[name][1]))
        got = {i: [] for i in range(len(rows))}
        print("before: %s" % os.getloadavg().__repr__())
        for r in range(a.rounds):
            order = list(range(len(rows)))
            if r % 2:
                order.reverse()
            for i in order:
                got[i].append(spawn(rows[i][2], rows[i][3]))
        print("after:  %s" % os.getloadavg().__repr__())
        for n, _ in bins:
            d = requests(*setups[n]) - before[n]
            if d < 2 * a.rounds:
                sys.exit("%s: the daemon answered %d of %d searches" % (n, d, 2 * a.rounds))
        cg = shutil.which("valgrind") is not None
        print("%-24s %-5s %9s %9s %7s %9s %12s" % ("command", "bin", "CPU p50", "CPU mean",
                                                   "minflt", "wall p50", "instructions"))
        for i, (label, name, argv, env) in enumerate(rows):
            cpu = [x[0] for x in got[i]]
            ir = callgrind(argv, env, os.path.join(work, "cg.%d" % i)) if cg else None
            print("%-24s %-5s %6.2f ms %6.2f ms %7d %6.2f ms %12s" % (
                label, name or "", statistics.median(cpu), statistics.mean(cpu),
                statistics.median(x[1] for x in got[i]), statistics.median(x[2] for x in got[i]),
                "{:,}".format(ir) if ir else "-"))
    finally:
        for name, _ in bins:
            if name in setups:
                exe, env = setups[name]
                subprocess.run([exe, "daemon", "stop"], env=env, capture_output=True)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
