#!/bin/bash
# rerank_ab.sh OLD NEW MODEL [ROUNDS] [NDOCS] [MODELS_DIR] -- two trove
# binaries alternated on one cross-encoder: `trove model rerank --threads 1
# --timing --doc-tokens 256` on the first NDOCS of MODELS_DIR/rerank_docs.txt
# (bench/llama_cpp_bench.py's models and documents; default /tmp/avx2/m),
# printing the process CPU ms of the model calls run by run with the load.
O=$1; N=$2; M=${6:-/tmp/avx2/m}; f=$M/$3.gguf; R=${4:-3}; ND=${5:-20}
mapfile -t D < <(head -"$ND" "$M/rerank_docs.txt")
for _ in $(seq "$R"); do
  for b in "$O" "$N"; do
    c=$("$b" model rerank "$f" --threads 1 --timing --doc-tokens 256 "search index vault" "${D[@]}" |
        /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["cpu_ms"])')
    echo "$3 $b cpu_ms $c load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
