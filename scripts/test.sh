#!/usr/bin/env bash
# Set up and run every test: install Debian packages, check that the
# optimised binary compiles without warnings, build everything under
# AddressSanitizer + UBSan (warnings are errors there too), run the unit
# tests and fuzz targets (ctest), then the end-to-end CLI tests (pytest)
# against the sanitized binary. Independent tests run in parallel, one job
# per core ($TROVE_TEST_JOBS overrides); each phase prints its wall and CPU
# time (docs/performance.md, "CI").
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TROVE_TEST_JOBS:-$(nproc)}

phase() {
  local name=$1
  shift
  local TIMEFORMAT="test.sh: $name: %R s wall, %U s user, %S s sys"
  time "$@"
}

# Jobs in the background, each in a process group of its own (killed if
# this script stops early); `finish NAME` waits for one, prints its output
# and fails the run if it failed.
declare -A bg_pid bg_log
bg() {
  local name=$1
  shift
  bg_log[$name]=$(mktemp)
  setsid bash -c "$*" >"${bg_log[$name]}" 2>&1 </dev/null &
  bg_pid[$name]=$!
}
finish() {
  local name=$1 rc=0
  wait "${bg_pid[$name]}" || rc=$?
  unset "bg_pid[$name]"
  cat "${bg_log[$name]}"
  rm -f "${bg_log[$name]}"
  if [ "$rc" -ne 0 ]; then
    echo "test.sh: $name failed (exit $rc)" >&2
    exit "$rc"
  fi
}
tpl_log=$(mktemp)
cleanup() {
  for p in "${bg_pid[@]}"; do kill -- -"$p" 2>/dev/null || true; done
  rm -f "$tpl_log" "${bg_log[@]}"
}
trap cleanup EXIT
export -f phase

phase deps bash scripts/install-deps.sh
# ccache where the machine has it (a CI machine's cache persists between
# runs); a cold cache costs a few per cent. TROVE_TEST_CCACHE=0: without.
if [ -z "${CMAKE_C_COMPILER_LAUNCHER:-}" ] && [ "${TROVE_TEST_CCACHE:-1}" != 0 ] &&
   command -v ccache >/dev/null 2>&1; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi
# The optimised build is only checked for warnings (its -O3 and static
# libraries differ from the sanitized tree): the binary alone. The unit
# tests and fuzz targets compile with -Werror in build-asan, where they run.
# Nothing waits for it, so it builds in the background at the lowest
# priority: it takes the CPU the sanitized build and the tests leave idle
# (a test waiting on a server, a timeout, a browser) instead of a minute of
# its own (docs/performance.md, CI, session 30).
bg build "phase build nice -n 19 env TARGET=trove bash scripts/build.sh build"
# -g1: line tables and inlined frames, all a sanitizer's report prints
# (file:line of every frame, the same stacks as -g), for ~11 % less
# compiler CPU than -g's full debug information.
phase build-asan bash scripts/build.sh build-asan -DTROVE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
# The sanitized tree traps on undefined behaviour (CMakeLists.txt,
# TROVE_SANITIZE_LEAN); handle_sigill=1 has ASan report the trap's stack.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:handle_sigill=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TROVE_FUZZ_ITERS=${TROVE_FUZZ_ITERS:-3000}
# The unit tests and fuzz targets (ctest, the two longest first) run beside
# pytest, niced below it: pytest's two workers leave a core idle whenever a
# test waits, and ctest's last long program no longer holds the run alone.
# Their output comes after pytest's.
bg ctest "cd build-asan && phase ctest nice -n 10 ctest --output-on-failure -j$jobs"
# One worker per core. A file with fixtures shared by its tests (indexed
# corpora, generated models) stays on one worker, so they are built once;
# every other test is scheduled on its own, after those files, so both
# workers stay busy to the end (--dist loadgroup; tests/e2e/conftest.py
# makes the groups). The `indexed` sample vault is indexed once per worker
# and copied per test where a copy cannot differ (docs/testing.md); the
# tally of copies and real builds says when that stops being the case.
pytest_rc=0
phase pytest env TROVE_BIN="$PWD/build-asan/trove" TROVE_TEST_TEMPLATE_LOG="$tpl_log" \
  /usr/bin/python3 -m pytest -q -n "$jobs" --dist loadgroup tests/e2e || pytest_rc=$?
finish ctest
[ "$pytest_rc" -eq 0 ] || exit "$pytest_rc"
echo "test.sh: indexed: $(grep -c '^copy' "$tpl_log" || true) copied from the template," \
  "$(grep -vc '^copy' "$tpl_log" || true) indexed by the commands"
grep -v '^copy' "$tpl_log" | cut -f1 | sort | uniq -c | sed 's/^/test.sh:   /' || true
finish build
