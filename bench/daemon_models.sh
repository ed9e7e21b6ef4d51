#!/usr/bin/env bash
# daemon_models.sh — memory of the daemon's shared embedding model: VmRSS of
# a daemon serving the fixture vault with a MiniLM-shaped random-weight GGUF
# (6 layers, 384 hidden, 30522 vocab, F32, ~91 MB; tests/tools/make_models.py)
# before any search, after one vsearch, and after CLIENTS concurrent
# vsearches plus a watcher update (which embeds the saved note), with the
# daemon's count of model loads.
#
# usage: bench/daemon_models.sh [TROVE_BIN] [CLIENTS=8]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build/trove}}
CLIENTS=${2:-8}
W=$(mktemp -d)
trap 'TROVE_NO_DAEMON= "$BIN" daemon stop >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
export HOME=$W XDG_RUNTIME_DIR=$W/run XDG_CACHE_HOME=$W/cache TROVE_CONFIG_DIR=$W/cfg
export TROVE_EMBED_MODEL=$W/minilm.gguf
mkdir -p "$W/run"
/usr/bin/python3 -c "
import sys; sys.path.insert(0, '$ROOT/tests/tools'); import make_models
make_models.bert_model('$TROVE_EMBED_MODEL', H=384, L=6, nh=12, FF=1536, V=30522, ctx=512, seed=1)"
cp -r "$ROOT/fixtures/sample-vault" "$W/vault"
"$BIN" collection add "$W/vault" --name vault >/dev/null
"$BIN" --no-daemon update >/dev/null
"$BIN" --no-daemon embed >/dev/null 2>&1
"$BIN" daemon --detach --idle 300 >/dev/null 2>&1
pid=$("$BIN" daemon status | awk '/^pid:/ {print $2}')
rss() { awk '/^VmRSS/ {printf "%.1f MB", $2 / 1024}' "/proc/$pid/status"; }
echo "machine: $(nproc) CPUs; model $(du -m "$TROVE_EMBED_MODEL" | cut -f1) MB"
echo "daemon started:                  $(rss)"
"$BIN" vsearch rust errors -n 3 >/dev/null
echo "after one vsearch:               $(rss)"
for _ in $(seq "$CLIENTS"); do "$BIN" vsearch pasta sauce -n 3 >/dev/null & done
wait
echo "# Saved" > "$W/vault/saved.md"
for _ in $(seq 50); do
    grep -q "embedded" "$W/run/trove/"*.log 2>/dev/null && break
    sleep 0.1
done
echo "after $CLIENTS clients + a watcher embed: $(rss)"
"$BIN" daemon status | grep '^models loaded'
