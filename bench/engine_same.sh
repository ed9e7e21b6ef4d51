#!/bin/bash
# engine_same.sh OLD NEW [MODELS_DIR] -- md5 of the JSON of `trove model
# rerank` (1, 3 and 6 documents) and `trove model embed --ids` (12 passages),
# 1 and 2 threads, of two trove binaries on bench/llama_cpp_bench.py's
# models (default /tmp/avx2/m): every output should be byte-identical where
# the kernels' arithmetic did not change. Prints the differing ones and
# "K of N identical".
O=$1; N=$2; M=${3:-/tmp/avx2/m}
mapfile -t D < <(head -6 "$M/rerank_docs.txt")
mapfile -t IDS < <(head -12 "$M/passages.ids")
n=0; same=0
for f in bge_base_rerank_q4_k bge_base_rerank_q6_k minilm_rerank_q4_k_m minilm_rerank_q8_0 minilm_rerank_f32; do
  for th in 1 2; do for nd in 1 3 6; do
    a=$("$O" model rerank "$M/$f.gguf" --threads $th --doc-tokens 256 "search index vault" "${D[@]:0:$nd}" | md5sum)
    b=$("$N" model rerank "$M/$f.gguf" --threads $th --doc-tokens 256 "search index vault" "${D[@]:0:$nd}" | md5sum)
    n=$((n+1)); [ "$a" = "$b" ] && same=$((same+1)) || echo "DIFF rerank $f threads $th docs $nd"
  done; done
done
for f in bge_base_q4_k bge_base_q5_k bge_base_q6_k minilm_q4_k_m minilm_q8_0 minilm_f32 minilm_q5_k_m; do
  for th in 1 2; do
    a=$("$O" model embed "$M/$f.gguf" --ids --threads $th "${IDS[@]}" | md5sum)
    b=$("$N" model embed "$M/$f.gguf" --ids --threads $th "${IDS[@]}" | md5sum)
    n=$((n+1)); [ "$a" = "$b" ] && same=$((same+1)) || echo "DIFF embed $f threads $th"
  done
done
echo "$same of $n identical"
