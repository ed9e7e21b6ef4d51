#!/usr/bin/env bash
# Set up and run every test: install Debian packages, check that the
# optimised build compiles without warnings, build under AddressSanitizer +
# UBSan, run the unit tests and fuzz targets (ctest), then the end-to-end CLI
# tests (pytest) against the sanitized binary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build
bash scripts/build.sh build-asan -DTROVE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TROVE_FUZZ_ITERS=${TROVE_FUZZ_ITERS:-3000}
(cd build-asan && ctest --output-on-failure -j"$(nproc)")
TROVE_BIN="$PWD/build-asan/trove" /usr/bin/python3 -m pytest -q tests/e2e
