#!/usr/bin/env bash
# Keystroke -> results painted in `trove serve`'s page, for a warm daemon on
# the tldr-pages corpus (38k small notes), in headless Chromium.
#
#   bench/web_bench.sh                  # uses $TROVE_BIN or build/trove
#   RUNS=5 bench/web_bench.sh
#   BASE_BIN=/tmp/old/trove ROUNDS=3 bench/web_bench.sh   # before/after, alternated
#   MODES="settle typing" TRACE=1 bench/web_bench.sh
#
# Extracts ../shared/corpora/tldr-pages.tar.gz into a temporary folder,
# indexes it, starts `trove daemon --no-watch` and `trove serve --port 0`
# (one per binary: $BASE_BIN too when set, on the same index and daemon),
# and runs bench/web_latency.mjs (puppeteer-core from scripts/npm-install.sh,
# Debian's chromium) over 30 queries: the first run of each warms up and is
# not counted. MODES (default "settle typing"): `settle` presses each
# query's last key once the page shows its prefix's answer; `typing` types
# the whole query at KEY_MS (default 90) ms a key and times the last one
# (web_latency.mjs says what each column is). With BASE_BIN, ROUNDS
# (default 2) rounds alternate the two binaries, so both see the same load.
# TRACE=1: one more traced run per binary and mode (main-thread CPU time).
# Each result is one line: which binary, the mode, the 1-minute load, the
# JSON. uptime is printed too: load counts.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
chromium=$(command -v chromium || true)
[ -n "$chromium" ] || { echo "web_bench: chromium is not installed" >&2; exit 1; }
mods=$(bash "$here/scripts/npm-install.sh" puppeteer-core@25.16.0)/node_modules

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-webbench.XXXXXX")
serve_pids=()
cleanup() {
  for p in "${serve_pids[@]}"; do kill "$p" 2>/dev/null || true; done
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
start_serve() {   # BIN NAME: serve with BIN, its URL in $work/url-NAME
  cp "$1" "$work/trove-$2"
  "$work/trove-$2" serve --port 0 >"$work/url-$2" 2>"$work/serve-$2.err" &
  serve_pids+=($!)
  for _ in $(seq 100); do [ -s "$work/url-$2" ] && break; sleep 0.1; done
  [ -s "$work/url-$2" ] || { cat "$work/serve-$2.err" >&2; exit 1; }
}
start_serve "$bin" new
labels=(new)
if [ -n "${BASE_BIN:-}" ]; then start_serve "$BASE_BIN" base; labels=(base new); fi
echo "load: $(uptime)"
echo "notes: $("$work/trove" status | grep -m1 -i notes || true)"
queries=(tar "git commit" "compress a folder" "list files" docker "find files by name" ssh
  "kill a process" "download a file" "extract zip" "disk usage" "python virtual environment"
  "rename files" grep "show network interfaces" "change file permissions" "current date"
  "convert video" "copy files remotely" "search text in files" "count lines" "create user"
  "mount a drive" "http request" "json" "sort lines" "environment variables" "cron"
  "archive" "image resize")
one() {   # LABEL MODE [ARGS...]
  local label=$1 mode=$2; shift 2
  local out
  out=$(node "$here/bench/web_latency.mjs" --chromium "$chromium" --url "$(head -1 "$work/url-$label")" \
    --modules "$mods" --mode "$mode" --key-ms "${KEY_MS:-90}" "$@" "${queries[@]}")
  echo "$label $mode load=$(cut -d' ' -f1 /proc/loadavg) $out"
}
rounds=${ROUNDS:-$([ ${#labels[@]} -gt 1 ] && echo 2 || echo 1)}
for mode in ${MODES:-settle typing}; do
  for _ in $(seq "$rounds"); do
    for label in "${labels[@]}"; do one "$label" "$mode" --runs "${RUNS:-3}"; done
  done
  if [ "${TRACE:-0}" = 1 ]; then
    for label in "${labels[@]}"; do one "$label" "$mode" --runs 2 --trace 1; done
  fi
done
