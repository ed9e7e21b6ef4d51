#!/usr/bin/env bash
# Configure and build trove. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args]
# BUILD_DIR defaults to build/ (optimised). The test script uses build-asan/.
# TARGET="trove man" builds only those targets (default: everything, tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086  # TARGET is a list of target names
cmake --build "$dir" -j"$(nproc)" ${TARGET:+--target $TARGET}
