#!/usr/bin/python3
"""llama_cpp_models -- the random-weight models and token sequences of
bench/llama_cpp_bench.sh (trove's engine beside llama.cpp).

  llama_cpp_models.py OUTDIR [--only NAME[,NAME...]]

writes into OUTDIR (a file already there is kept):
  minilm_{f32,f16,bf16,q8_0}.gguf      all-MiniLM-L6-v2 shape (6 layers, 384
                                       hidden, 12 heads, 1536 FFN, 30522 vocab)
  bge_small_{f32,f16,bf16,q8_0}.gguf   bge-small-en-v1.5 shape (12 layers, 384)
  bge_base_{f32,q4_k,q6_k}.gguf        bge-base-en-v1.5 shape (12 layers, 768
                                       hidden, 3072 FFN): the K-quants need
                                       rows that are multiples of 256, which
                                       384-wide models do not have
  minilm_{q5_0,q5_1}.gguf, bge_base_q5_k.gguf   the 5-bit types (numpy's
                                       quantiser, gguf_writer.py)
  minilm_rerank_{f32,f16,bf16,q8_0}.gguf   ms-marco-MiniLM-L-6-v2 shape, rank head
  bge_base_rerank_{q4_k,q6_k}.gguf     a 768-wide cross-encoder (bge-base's
                                       shape with a rank head): the K-quants
                                       in a cross-encoder, which MiniLM's
                                       384-wide rows cannot hold
  *_q4_k_m, *_q5_k_m                   (minilm, minilm_rerank): written here
                                       as the F32 twin only; the bench makes
                                       them with llama.cpp's own quantiser
                                       (bench/llama_cpp_quantize.c), which
                                       stores 384-long rows as Q5_0 / Q5_1
  passages.ids      200 passages, one per line, comma-separated ids framed
                    [CLS] ... [SEP], lengths 16..256 (seeded)
  rerank_docs.txt   20 documents of exactly 256 vocabulary words (each one
                    token), one per line, for the cross-encoder
The vocabulary is make_models' with repeated pieces replaced and the token
type count added (llama.cpp refuses the files without both). Models of one shape share their float weights (make_models.bert_model with
one seed), so a quantised file is its F32 twin stored in another type.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "tools"))
import make_models  # noqa: E402
from make_models import bert_model  # noqa: E402

_vocab_with_repeats = make_models.bert_vocab


def bert_vocab(n):
    """make_models' WordPiece vocabulary without its repeated pieces (the
    word "a" and the letter "a" are both "\u2581a" there): llama.cpp refuses
    a vocabulary whose pieces are not unique."""
    seen, toks = set(), []
    for t in _vocab_with_repeats(n):
        if t not in seen:
            seen.add(t)
            toks.append(t)
    i = 0
    while len(toks) < n:
        toks.append("\u2581g%05d" % i)
        i += 1
    return toks


_tokenizer_kv = make_models.bert_tokenizer_kv


def bert_tokenizer_kv(w, n):
    """make_models' BERT tokenizer metadata plus the token type count that
    llama.cpp requires of a bert model (the files have two type rows)."""
    _tokenizer_kv(w, n)
    w.add_kv("tokenizer.ggml.token_type_count", 2, "uint32")


# bert_model's tokenizer metadata reads these two
make_models.bert_vocab = bert_vocab
make_models.bert_tokenizer_kv = bert_tokenizer_kv

V = 30522
SHAPES = {
    "minilm": dict(H=384, L=6, nh=12, FF=1536),
    "bge_small": dict(H=384, L=12, nh=12, FF=1536),
    "bge_base": dict(H=768, L=12, nh=12, FF=3072),
}
TYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_k": "Q4_K",
         "q6_k": "Q6_K", "q5_0": "Q5_0", "q5_1": "Q5_1", "q5_k": "Q5_K"}
# llama-quantize's mixes, made from the F32 twin by the bench (llama.cpp)
LLAMA_MIXES = {"q4_k_m": "Q4_K_M", "q5_k_m": "Q5_K_M"}
MODELS = ["minilm_" + t for t in ("f32", "f16", "bf16", "q8_0")] + \
         ["bge_small_" + t for t in ("f32", "f16", "bf16", "q8_0")] + \
         ["bge_base_" + t for t in ("f32", "q4_k", "q6_k")] + \
         ["minilm_rerank_f32", "minilm_rerank_q8_0", "minilm_rerank_f16", "minilm_rerank_bf16",
          "bge_base_rerank_q4_k", "bge_base_rerank_q6_k"] + \
         ["minilm_q5_0", "minilm_q5_1", "bge_base_q5_k", "minilm_q4_k_m", "minilm_q5_k_m",
          "minilm_rerank_q4_k_m", "minilm_rerank_q5_k_m"]


def mix_of(name):
    """(F32 twin, llama_ftype name) for a llama-quantize mix, else None."""
    for t, ft in LLAMA_MIXES.items():
        if name.endswith("_" + t):
            return name[:-len(t)] + "f32", ft
    return None


def write_model(out, name):
    if mix_of(name):
        name = mix_of(name)[0]
    path = os.path.join(out, name + ".gguf")
    if os.path.exists(path):
        return
    t = next(t for t in TYPES if name.endswith("_" + t))
    shape = name[:-len(t) - 1]
    rerank = shape.endswith("_rerank")
    shape = shape.replace("_rerank", "")
    qt = TYPES[t]
    kw = dict(SHAPES[shape], V=V, ctx=512, seed={"minilm": 7, "bge_small": 41,
                                                 "bge_base": 42}[shape],
              qtype=qt, rerank=rerank, name="%s-shaped %s" % (shape, name))
    if shape == "bge_small" or shape == "bge_base":
        kw["pool"] = 2  # bge pools the [CLS] row
    tmp = path + ".tmp"
    bert_model(tmp, **kw)
    os.replace(tmp, path)


def write_inputs(out):
    rng = np.random.default_rng(2026)
    p = os.path.join(out, "passages.ids")
    if not os.path.exists(p):
        with open(p, "w") as f:
            for n in rng.integers(16, 257, size=200):
                ids = [2] + rng.integers(5, V, size=int(n) - 2).tolist() + [3]
                f.write(",".join(map(str, ids)) + "\n")
    d = os.path.join(out, "rerank_docs.txt")
    if not os.path.exists(d):
        # word-initial pieces ("\u2581word") are whole words: one token each
        words = [t[1:] for t in bert_vocab(V)[5:] if t.startswith("\u2581") and t[1:].isalnum()]
        with open(d, "w") as f:
            for _ in range(20):
                f.write(" ".join(rng.choice(words, size=256)) + "\n")


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else MODELS
    bad = [n for n in only if n not in MODELS]
    if bad:
        sys.stderr.write("llama_cpp_models.py: unknown model %s\n" % ", ".join(bad))
        return 2
    os.makedirs(out, exist_ok=True)
    write_inputs(out)
    for n in only:
        write_model(out, n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
