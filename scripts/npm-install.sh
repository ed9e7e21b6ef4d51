#!/usr/bin/env bash
# Install an npm package WITH its dependencies (no install scripts run)
# into a cache folder and print its node_modules folder. For test tools
# that need their dependency tree (puppeteer-core drives the browser
# tests); data-only packages go through scripts/npm-fetch.sh.
#
#   scripts/npm-install.sh NAME@VERSION [NAME@VERSION...]  -> .../node_modules
#
# Cache: $TROVE_NPM_CACHE, else $XDG_CACHE_HOME/trove-dev/npm, else
# ~/.cache/trove-dev/npm; one folder per set of specs, reused offline once
# complete. Exit 3 when npm is missing or the registry cannot be reached
# (callers skip with that reason).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: npm-install.sh NAME@VERSION..." >&2; exit 2; }
cache=${TROVE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trove-dev/npm}
key="install-$(printf '%s+' "$@" | tr '/' '_' | sed 's/+$//')"
dest="$cache/$key"
if [ -f "$dest/.complete" ]; then
  echo "$dest/node_modules"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm-install: npm is not installed" >&2; exit 3; }
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo '{"name":"trove-test-tools","private":true}' > "$tmp/package.json"
if ! (cd "$tmp" && timeout 900 npm install --silent --no-audit --no-fund --ignore-scripts \
        --no-package-lock "$@" >/dev/null 2>"$tmp/err"); then
  echo "npm-install: cannot install $*: $(tail -n 3 "$tmp/err" | tr '\n' ' ')" >&2
  exit 3
fi
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/node_modules" "$tmp/package.json" "$dest/"
touch "$dest/.complete"
echo "$dest/node_modules"
