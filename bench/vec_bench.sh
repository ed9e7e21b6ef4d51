#!/usr/bin/env bash
# Vector scan speed: exact int8 top-10 over random 384-d vectors, in memory
# (the kernel) and read back from an index (what `trove vsearch` pays).
#   bash bench/vec_bench.sh [BUILD_DIR]
# Numbers go to docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/CMakeCache.txt" ] || bash scripts/build.sh "$build" >/dev/null
cmake --build "$build" --target vec_bench -j2 >/dev/null
b="$build/vec_bench"
"$b" mem 100000 384 1
"$b" mem 1000000 384 1 10
"$b" mem 1000000 384 2 10
"$b" store 100000 384 1
"$b" store 1000000 384 2 10
"$b" store 1000000 256 2 10   # issue 20: 1M x 256 int8
