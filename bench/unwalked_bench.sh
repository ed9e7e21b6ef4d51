#!/bin/bash
# No-op `trove update` with and without a daemon whose watcher vouches
# (docs/architecture.md, "An update without a walk"), alternating the two
# in one run: /usr/bin/time of each whole `trove update` process (wall,
# user, sys), the daemon's own CPU over the daemon rounds (/proc/PID/stat),
# and the load before and after.
#
#   bench/unwalked_bench.sh DIR [ROUNDS]
#
# DIR holds an index (DIR/index.db) and its config (DIR/config/config.yaml)
# whose collections are already indexed; the script runs one warm-up walk,
# starts `trove daemon --detach` for it, waits until the daemon answers an
# update without a walk, then alternates ROUNDS (default 5) cold no-op
# updates (TROVE_NO_DAEMON=1: the walk) and updates through the daemon.
set -euo pipefail
DIR=$(cd "$1" && pwd)
ROUNDS=${2:-5}
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
cpu() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
TICK=$(getconf CLK_TCK)
d_ticks=0
for _ in $(seq "$ROUNDS"); do
    TROVE_NO_DAEMON=1 /usr/bin/time -f "walk     %e wall %U user %S sys" "$T" update 2>&1 >/dev/null | tail -1
    c0=$(cpu)
    /usr/bin/time -f "unwalked %e wall %U user %S sys" "$T" update 2>&1 >/dev/null | tail -1
    c1=$(cpu)
    d_ticks=$((d_ticks + c1 - c0))
done
echo "daemon CPU over the $ROUNDS unwalked updates: $(echo "scale=3; $d_ticks / $TICK" | bc) s"
"$T" status --json | python3 -c 'import json,sys; w=json.load(sys.stdin)["daemon"]["watcher"]; print("watcher:", w["state"], w["folders"], "folders,", w["unwalked_updates"], "unwalked,", w["walked_updates"], "walked")'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
