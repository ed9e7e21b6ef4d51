#!/usr/bin/env bash
# Install an npm package WITH its dependency tree (npm install, lifecycle
# scripts off) into a cache and print the folder that holds its
# node_modules/. For test clients that are real programs with dependencies
# (the MCP TypeScript SDK); plain data packages use scripts/npm-fetch.sh.
#
#   scripts/npm-install.sh NAME@VERSION   -> prints .../NAME@VERSION
#   NODE_PATH=<printed>/node_modules node script.mjs   (or import by path)
#
# Cache: $TROVE_NPM_CACHE, else $XDG_CACHE_HOME/trove-dev/npm, else
# ~/.cache/trove-dev/npm (the same folder npm-fetch.sh uses, with an
# "install+" prefix). An install already there is reused, so this works
# offline once the cache is warm. Exit 3 when npm is missing or the registry
# cannot be reached (callers skip with that reason).
set -euo pipefail
spec=${1:?usage: npm-install.sh NAME@VERSION}
cache=${TROVE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trove-dev/npm}
key="install+$(printf '%s' "$spec" | tr '/' '+')"
dest="$cache/$key"
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm-install: npm is not installed" >&2; exit 3; }
mkdir -p "$cache"
# One install at a time per package (parallel test workers wait, then reuse).
exec 9>"$cache/.lock.$key"
flock 9
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi
tmp=$(mktemp -d "$cache/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo '{"name":"trove-test-client","private":true}' >"$tmp/package.json"
if ! (cd "$tmp" && timeout 600 npm install --silent --no-audit --no-fund --ignore-scripts \
        --no-package-lock "$spec" >/dev/null 2>"$tmp/err"); then
  echo "npm-install: cannot install $spec: $(tail -n 3 "$tmp/err" | tr '\n' ' ')" >&2
  exit 3
fi
rm -f "$tmp/err"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
touch "$dest/.complete"
echo "$dest"
