#!/bin/bash
# `trove similar` cold on the tldr pages with GloVe vectors: the median of
# RUNS cold runs (a fresh process each, no daemon) over NOTES notes.
# usage: bash bench/similar_bench.sh [TROVE_BIN] [RUNS]
set -eu
T=${1:-build/trove}
T=$(readlink -f "$T")
RUNS=${2:-5}
REPO=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d /tmp/trove-similar-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
export TROVE_CONFIG_DIR=$W/cfg TROVE_INDEX=$W/index.db XDG_RUNTIME_DIR=$W/run TROVE_NO_DAEMON=1
ROOT=$W/tldr
mkdir -p "$ROOT"
tar -xzf "$REPO/../shared/corpora/tldr-pages.tar.gz" -C "$ROOT"
GLOVE=$(bash "$REPO/scripts/glove-model.sh")
"$T" collection add "$ROOT" --name tldr >/dev/null
"$T" update >/dev/null
"$T" embed --model "$GLOVE" >/dev/null
NOTES=$("$T" ls tldr | awk 'NR % 3000 == 1 {print $2}' | head -10)
echo "notes: $("$T" ls tldr | wc -l), vectors of $(basename "$GLOVE"), $(nproc) cpus, load: $(uptime | sed 's/.*load/load/')"
for n in $NOTES; do
    for i in $(seq "$RUNS"); do
        s=$(date +%s%N)
        "$T" similar "$n" -n 10 >/dev/null
        e=$(date +%s%N)
        echo $(( (e - s) / 1000 ))
    done
done | sort -n | awk '{a[NR] = $1} END {printf "similar cold: %d runs, median %.1f ms, p90 %.1f ms, max %.1f ms\n", NR, a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.9)] / 1000, a[NR] / 1000}'
