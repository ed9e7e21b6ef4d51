#!/usr/bin/env bash
# Run every fuzz target under libFuzzer (clang, ASan + UBSan, the whole
# library instrumented) for SECONDS each and print one line per target:
# executions, edge coverage, features, corpus size and any crash found.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET ...]     (default 60 s, all targets)
#
# Builds into build-fuzz/ with the distribution's clang. Each target starts
# from its seeds in fuzz/seeds/NAME and grows a working corpus in
# build-fuzz/corpus/NAME (kept between runs, never written into fuzz/seeds).
# Crash, leak and timeout inputs land in build-fuzz/artifacts/NAME/.
# Exit status 1 when any target found a problem.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
command -v clang >/dev/null || { echo "fuzz.sh: needs clang (apt-get install clang)" >&2; exit 2; }
CC=clang cmake -S . -B build-fuzz -DTROVE_LIBFUZZER=ON -DTROVE_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.c; do t=$(basename "$f" .c); targets+=("${t#fuzz_}"); done
fi
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
# Targets that need build products find them as under ctest.
export TROVE_ZH_DICT=$PWD/build-fuzz/trove-zh.dict
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
printf '%-18s %12s %10s %8s %8s %8s  %s\n' target execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t art=build-fuzz/artifacts/$t
  mkdir -p "$corpus" "$art"
  log=build-fuzz/fuzz_$t.log
  seeds=fuzz/seeds/$t
  [ -d "$seeds" ] || seeds=
  set +e
  "build-fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$art/" "$corpus" $seeds >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' | tail -1)
  cov=$(echo "$last" | awk '{print $2}') ft=$(echo "$last" | awk '{print $4}') corp=$(echo "$last" | awk '{print $6}')
  result=ok
  if [ "${cov:-0}" -lt 20 ]; then
    result="SUSPECT: coverage ${cov:-?} means the target returns early (missing input file?)"
    status=1
  fi
  if [ $rc -ne 0 ]; then
    result="FOUND (exit $rc): see $log and $art/"
    status=1
  fi
  printf '%-18s %12s %10s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $status
