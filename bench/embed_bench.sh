#!/usr/bin/env bash
# embed_bench.sh — throughput and latency of trove's embedding engine on the
# MiniLM-shaped random-weight model (6 layers, 384 hidden, 12 heads, 1536
# FFN, 30522 vocab) in F32 and Q8_0, printed as a Markdown table.
#
# usage: bench/embed_bench.sh [TROVE_BIN]
#   TROVE_BIN   a Release build of trove (default: build-release/trove, built
#               here with -j2 when missing)
#   MODELS=DIR  reuse models written earlier by tests/tools/make_models.py
#               DIR --minilm --big (default: a fresh temporary folder)
#   ITERS=N     timed repetitions per configuration (best is kept; default 3)
#
# Per configuration: tokens/s embedding B passages of 256 tokens (B = 1, 32)
# on 1 and 2 threads, the model GFLOP/s this represents, OpenBLAS's own
# sgemm GFLOP/s on the machine at that thread count (a 2048x384x1536
# product, the shape of a batched FFN), the median latency of one 16-token
# query, and the process's peak RSS. Then the open time (mmap + metadata,
# and with the tokenizer) of a ~340 MB file.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build-release/trove}}
ITERS=${ITERS:-3}
if [ ! -x "$BIN" ]; then
    cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DTROVE_TESTS=OFF >/dev/null
    cmake --build "$ROOT/build-release" -j2 --target trove >/dev/null
    BIN=$ROOT/build-release/trove
fi
MODELS=${MODELS:-$(mktemp -d /tmp/trove-embed-bench-XXXXXX)}
if [ ! -f "$MODELS/minilm_q8.gguf" ] || [ ! -f "$MODELS/big_open.gguf" ]; then
    /usr/bin/python3 "$ROOT/tests/tools/make_models.py" "$MODELS" --minilm --big >/dev/null
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary:  $BIN"
echo
echo "| weights | file MB | threads | batch x tokens | tokens/s | model GFLOP/s | sgemm GFLOP/s | % of sgemm | 16-token query ms | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for w in f32 q8; do
    f=$MODELS/minilm_$w.gguf
    mb=$(( $(stat -c %s "$f") / 1000000 ))
    for t in 1 2; do
        for b in 1 32; do
            /usr/bin/time -f '%M' -o "$TMP/rss" "$BIN" model bench "$f" --threads "$t" --batch "$b" \
                --tokens 256 --iters "$ITERS" >"$TMP/out.json"
            rss=$(( $(cat "$TMP/rss") / 1024 ))
            /usr/bin/python3 - "$TMP/out.json" "$w" "$mb" "$rss" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = {"f32": "F32", "q8": "Q8_0"}[sys.argv[2]]
print("| %s | %s | %d | %d x %d | %.0f | %.1f | %.1f | %.0f%% | %.2f | %s |" % (
    w, sys.argv[3], d["threads"], d["batch"], d["tokens"], d["tokens_per_s"], d["gflops"],
    d["sgemm_gflops"], d["pct_of_sgemm"], d["query16_ms"], sys.argv[4]))
PY
        done
    done
done
echo
big=$MODELS/big_open.gguf
best=""
for i in 1 2 3 4 5; do
    ms=$("$BIN" model info --json "$big" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["open_ms"])')
    best=$(/usr/bin/python3 -c "print(min(float(x) for x in '$best $ms'.split()))")
done
echo "open (embed_open: mmap, metadata, weights check, 100k-piece tokenizer) of $(( $(stat -c %s "$big") / 1000000 )) MB file: best of 5 = $best ms"
