#!/usr/bin/env bash
# fault_bench.sh — the kill -9 fault check of tests/e2e/test_faults.py at a
# bigger scale: kill the watching daemon (and a cold `trove update`) at
# seeded random moments of an update, then check the index holds exactly
# one committed state and the next start finishes the work.
#
# usage: bench/fault_bench.sh [TROVE_BIN] [NOTES=20000] [LIVE=4000] [TRIALS=40]
#   TRIALS daemon kills, plus TRIALS/3 cold-update kills.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build/trove}}
TRIALS=${4:-40}
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$ROOT/tests/e2e"
TROVE_BIN=$BIN TROVE_FAULT_NOTES=${2:-20000} TROVE_FAULT_LIVE=${3:-4000} \
TROVE_FAULT_TRIALS_DAEMON=$TRIALS TROVE_FAULT_TRIALS_COLD=$((TRIALS / 3)) \
    exec /usr/bin/python3 -m pytest -q -s -p no:cacheprovider test_faults.py -k kill9
