#!/usr/bin/env bash
# daemon_bench.sh — warm daemon vs cold CLI latency at a synthetic vault
# (client process included), and 8 concurrent clients x 2,000 mixed
# requests while the watcher indexes a rewrite of 500 notes.
#
# usage: bench/daemon_bench.sh [TROVE_BIN] [NOTES=10000] [RUNS=200]
#   TROVE_BIN  a Release build (default: build/trove)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build/trove}}
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec /usr/bin/python3 "$ROOT/bench/daemon_bench.py" "$BIN" "${2:-10000}" "${3:-200}"
