#!/usr/bin/env bash
# Set up trove on a fresh Debian machine, index the sample vault shipped in
# fixtures/sample-vault into a throw-away index, and search it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
TARGET=trove bash scripts/build.sh build
demo=$(mktemp -d)
export TROVE_INDEX="$demo/index.db" TROVE_CONFIG_DIR="$demo/config"
trove=./build/trove
run() { printf '\n$ trove %s\n' "$*"; "$trove" "$@"; }
run collection add fixtures/sample-vault --name sample
run context add sample/cooking "Recipes I have cooked and adapted"
run update
run search "sourdough starter feeding" -n 3
run search "how long should bulk fermentation take" -n 3
run search "动态规划 递归" -n 3
run search "FTS5 tokenizer" --json -n 1
run status
echo
echo "index and config are in $demo (delete it when done)"
