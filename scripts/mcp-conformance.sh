#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance
# 0.1.16, server mode, Streamable HTTP) against `trove mcp --http` on the
# index and config of the environment (TROVE_INDEX, TROVE_CONFIG_DIR), with
# the baseline of scenarios that do not apply (tests/tools/
# mcp-conformance-baseline.yml). The suite wants Node.js 22 (fs.globSync);
# on Node 20 tests/tools/node20_globsync.mjs supplies that one function.
#
#   scripts/mcp-conformance.sh [TROVE_BIN] [RESULTS_DIR]
#
# Exit 0 when exactly the baseline fails; 3 when npm/node is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/trove}
out=${2:-$(mktemp -d)}
command -v node >/dev/null 2>&1 || { echo "mcp-conformance: node is not installed" >&2; exit 3; }
dir=$(bash scripts/npm-install.sh @modelcontextprotocol/conformance@0.1.16)
url_file=$(mktemp)
"$bin" mcp --http 127.0.0.1:0 >"$url_file" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$url_file"' EXIT
# the server prints its URL once it listens (bounded: 30 s)
for _ in $(seq 300); do
  [ -s "$url_file" ] && break
  kill -0 "$pid" 2>/dev/null || { echo "mcp-conformance: trove mcp --http exited" >&2; exit 1; }
  sleep 0.1
done
url=$(head -1 "$url_file")
[ -n "$url" ] || { echo "mcp-conformance: no URL from trove mcp --http" >&2; exit 1; }
node --import "$PWD/tests/tools/node20_globsync.mjs" \
  "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" server --url "$url" \
  --expected-failures tests/tools/mcp-conformance-baseline.yml -o "$out"
