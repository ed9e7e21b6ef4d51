#!/usr/bin/env bash
# embed_ab.sh — two trove binaries alternated on one model of
# bench/llama_cpp_models.py: CPU ms of the model calls (`trove model embed
# --ids --timing`) and the TROVE_PROFILE line (matrix products' share and
# GFLOP per CPU-second), run by run; the cheap trove-only side of
# bench/llama_cpp_bench.py --trove-base (no llama.cpp run).
#
# usage: bench/embed_ab.sh BASE_BIN NEW_BIN MODELS_DIR MODEL [PASSAGES [THREADS [ROUNDS]]]
#   MODELS_DIR  written by bench/llama_cpp_models.py (MODEL.gguf, passages.ids)
#   defaults: 50 passages, 1 thread, 3 rounds; prints "TAG cpu_ms wall_ms"
set -euo pipefail
BASE=$1 NEW=$2 DIR=$3 M=$4 N=${5:-50} TH=${6:-1} R=${7:-3}
mapfile -t IDS < <(grep . "$DIR/passages.ids" | head -n "$N")
TMP=$(mktemp -d /tmp/embed-ab-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for _ in $(seq "$R"); do
    for tag in base new; do
        bin=$BASE
        [ "$tag" = new ] && bin=$NEW
        TROVE_PROFILE=1 "$bin" model embed "$DIR/$M.gguf" --ids --threads "$TH" --timing "${IDS[@]}" \
            >"$TMP/out.json" 2>"$TMP/prof"
        /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d['cpu_ms'], d['embed_ms'])" \
            "$TMP/out.json" "$tag"
        grep -o "matrix products.*GFLOP per CPU-second" "$TMP/prof" || true
    done
done
