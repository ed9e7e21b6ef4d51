#!/usr/bin/env bash
# daemon_bench.sh — warm daemon vs cold CLI latency at a synthetic vault
# (client process included: wall and CPU time), keyword and hybrid with the
# static GloVe model, and 8 concurrent clients x 2,000 mixed requests while
# the watcher indexes a rewrite of 500 notes. See bench/daemon_bench.py.
#
# usage: bench/daemon_bench.sh [TROVE_BIN] [NOTES=10000] [RUNS=200] [MODEL]
#   TROVE_BIN  a Release build (default: build/trove)
#   MODEL      a static embedding model folder for the hybrid rows (default:
#              the GloVe test model of scripts/glove-model.sh; "-": none)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build/trove}}
MODEL=${4:-}
if [ -z "$MODEL" ]; then
  MODEL=$(bash "$ROOT/scripts/glove-model.sh") || MODEL=
  [ -n "$MODEL" ] || echo "no GloVe model (scripts/glove-model.sh failed): no hybrid rows"
fi
[ "$MODEL" = "-" ] && MODEL=
echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))"
exec /usr/bin/python3 "$ROOT/bench/daemon_bench.py" "$BIN" "${2:-10000}" "${3:-200}" "$MODEL"
