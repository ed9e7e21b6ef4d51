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

phase deps bash scripts/install-deps.sh
# The optimised build is only checked for warnings (its -O3 and static
# libraries differ from the sanitized tree): the binary alone. The unit
# tests and fuzz targets compile with -Werror in build-asan, where they run.
phase build env TARGET=trove bash scripts/build.sh build
phase build-asan bash scripts/build.sh build-asan -DTROVE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
# The sanitized tree traps on undefined behaviour (CMakeLists.txt,
# TROVE_SANITIZE_LEAN); handle_sigill=1 has ASan report the trap's stack.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:handle_sigill=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TROVE_FUZZ_ITERS=${TROVE_FUZZ_ITERS:-3000}
phase ctest bash -c 'cd build-asan && ctest --output-on-failure -j"$1"' _ "$jobs"
# One worker per core. A file with fixtures shared by its tests (indexed
# corpora, generated models) stays on one worker, so they are built once;
# every other test is scheduled on its own, after those files, so both
# workers stay busy to the end (--dist loadgroup; tests/e2e/conftest.py
# makes the groups). The `indexed` sample vault is indexed once per worker
# and copied per test where a copy cannot differ (docs/testing.md); the
# tally of copies and real builds says when that stops being the case.
tpl_log=$(mktemp)
trap 'rm -f "$tpl_log"' EXIT
phase pytest env TROVE_BIN="$PWD/build-asan/trove" TROVE_TEST_TEMPLATE_LOG="$tpl_log" \
  /usr/bin/python3 -m pytest -q -n "$jobs" --dist loadgroup tests/e2e
echo "test.sh: indexed: $(grep -c '^copy' "$tpl_log" || true) copied from the template," \
  "$(grep -vc '^copy' "$tpl_log" || true) indexed by the commands"
grep -v '^copy' "$tpl_log" | cut -f1 | sort | uniq -c | sed 's/^/test.sh:   /' || true
