#!/bin/bash
# No-op `trove update` with and without a daemon whose watcher vouches
# (docs/architecture.md, "An update without a walk"), alternating the two
# in one run: each whole `trove update` process's wall and CPU (user +
# sys), the daemon's own CPU over the daemon rounds (/proc/PID/stat), and
# the load before and after.
#
#   bench/unwalked_bench.sh DIR [ROUNDS]
#
# DIR holds an index (DIR/index.db) and its config (DIR/config/config.yaml)
# whose collections are already indexed; the script runs one warm-up walk,
# starts `trove daemon --detach` for it, waits until the daemon answers an
# update without a walk, then alternates ROUNDS cold no-op
# updates (TROVE_NO_DAEMON=1: the walk) and updates through the daemon.
# Default ROUNDS 20.
set -euo pipefail
DIR=$(cd "$1" && pwd)
ROUNDS=${2:-20}
T=${TROVE_BIN:-build/trove}
export TROVE_INDEX=$DIR/index.db TROVE_CONFIG_DIR=$DIR/config NO_COLOR=1
export XDG_CACHE_HOME=$DIR/xc XDG_CONFIG_HOME=$DIR/xg XDG_RUNTIME_DIR=$DIR/run
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
unset TROVE_NO_DAEMON
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
TROVE_NO_DAEMON=1 "$T" update >/dev/null   # warm-up (and the stamp of a copied index)
"$T" daemon --detach --idle 600 >/dev/null
trap '"$T" daemon stop >/dev/null 2>&1 || true' EXIT
for _ in $(seq 600); do
    "$T" update --json | grep -q '"walked": false' && break
    sleep 1
done
"$T" update --json --explain >/dev/null
PID=$("$T" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["daemon"]["pid"])')
# Each update a process of its own; its CPU from wait4's rusage (µs), the
# daemon's from /proc/PID/stat (clock ticks: 10 ms / ROUNDS resolution), wall
# around the process.
TROVE="$T" ROUNDS="$ROUNDS" DPID="$PID" python3 - <<'PY'
import os, resource, statistics, subprocess, time
t, rounds, dpid = os.environ["TROVE"], int(os.environ["ROUNDS"]), os.environ["DPID"]
def daemon_ns():
    # utime + stime of every thread, the exited ones included, in ticks
    with open(f"/proc/{dpid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1e9 / os.sysconf("SC_CLK_TCK")
def one(env):
    e = dict(os.environ, **env)
    t0 = time.perf_counter()
    p = subprocess.Popen([t, "update"], env=e, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    assert status == 0
    return wall, ru.ru_utime, ru.ru_stime
rows = {"walk": [], "unwalked": []}
dns = 0
for _ in range(rounds):
    rows["walk"].append(one({"TROVE_NO_DAEMON": "1"}))
    d0 = daemon_ns()
    rows["unwalked"].append(one({}))
    dns += daemon_ns() - d0
for k, v in rows.items():
    for w, u, s in v:
        print(f"{k:8s} {w:.4f} wall {u:.4f} user {s:.4f} sys")
    print(f"{k:8s} median: {statistics.median(x[0] for x in v):.4f} s wall, "
          f"{statistics.median(x[1] + x[2] for x in v) * 1000:.1f} ms CPU (user + sys)")
print(f"daemon CPU per unwalked update: {dns / rounds / 1e6:.2f} ms (mean of {rounds})")
PY
"$T" status --json | python3 -c 'import json,sys; w=json.load(sys.stdin)["daemon"]["watcher"]; print("watcher:", w["state"], w["folders"], "folders,", w["unwalked_updates"], "unwalked,", w["walked_updates"], "walked")'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
