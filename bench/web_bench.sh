#!/usr/bin/env bash
# Keystroke -> results painted in `trove serve`'s page, for a warm daemon on
# the tldr-pages corpus (38k small notes), in headless Chromium.
#
#   bench/web_bench.sh                  # uses $TROVE_BIN or build/trove
#   RUNS=5 bench/web_bench.sh
#
# Extracts ../shared/corpora/tldr-pages.tar.gz into a temporary folder,
# indexes it, starts `trove daemon --no-watch` and `trove serve --port 0`,
# and runs bench/web_latency.mjs (puppeteer-core from scripts/npm-install.sh,
# Debian's chromium) over 30 queries: the first run of each warms up and is
# not counted. A key after a pause searches at once; keys in a burst wait
# DEBOUNCE_MS (assets/app.js) after the last one. uptime is printed: load counts.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || { echo "web_bench: chromium is not installed" >&2; exit 1; }
mods=$(bash "$here/scripts/npm-install.sh" puppeteer-core@25.16.0)/node_modules

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-webbench.XXXXXX")
serve_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  "$work/trove" daemon stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
cp "$bin" "$work/trove"
[ -f "$(dirname "$bin")/trove-zh.dict" ] && cp "$(dirname "$bin")/trove-zh.dict" "$work/"
export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config XDG_RUNTIME_DIR=$work/run
export XDG_CACHE_HOME=$work/xdg-cache
mkdir -p "$work/tldr" "$work/run"
tar -xzf "$tarball" -C "$work/tldr"
"$work/trove" collection add "$work/tldr" --name tldr >/dev/null
"$work/trove" update >/dev/null
"$work/trove" daemon --detach --no-watch --idle 600 >/dev/null
"$work/trove" serve --port 0 >"$work/url" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url=$(head -1 "$work/url")
echo "load: $(uptime)"
echo "notes: $("$work/trove" status | grep -m1 -i notes || true)"
set -x
node "$here/bench/web_latency.mjs" --chromium "$chromium" --url "$url" --modules "$mods" \
  --runs "${RUNS:-3}" \
  tar "git commit" "compress a folder" "list files" docker "find files by name" ssh \
  "kill a process" "download a file" "extract zip" "disk usage" "python virtual environment" \
  "rename files" grep "show network interfaces" "change file permissions" "current date" \
  "convert video" "copy files remotely" "search text in files" "count lines" "create user" \
  "mount a drive" "http request" "json" "sort lines" "environment variables" "cron" \
  "archive" "image resize"
