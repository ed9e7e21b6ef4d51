#!/usr/bin/python3
"""make_models -- random-weight GGUF models of every architecture trove
runs, with requests and reference outputs for the engine tests.

  make_models.py OUTDIR [--minilm] [--big]
  make_models.py OUTDIR --fuzz-seeds       tiny seeds for fuzz/fuzz_model.c

writes into OUTDIR, for each model NAME:
  NAME.gguf       the model (general.architecture bert / gemma-embedding /
                  qwen3)
  NAME.req.json   {"seqs": [[ids]...], "types": [...], "pool": ...}: random
                  token sequences of assorted lengths, framed like the
                  tokenizer frames them
  NAME.ref.json   {"vectors": ...}: ref_forward.py's output for the request
and a few broken files (bad_*.gguf) that must be refused cleanly.
Models sharing a seed share their float weights (the *_q8/_q4k/_f16
variants are the f32 model stored in another type), so a quantised model's
output can be compared with its f32 twin's reference. --minilm adds the
MiniLM-shaped model (6 layers, 384 hidden, 12 heads, 1536 FFN, 30522
vocab) in F32 and Q8_0, as embedding model and as cross-encoder; --big a ~300 MB file (100k x 768 F32 token
embeddings) for the open-time measurement.

Everything is deterministic (fixed seeds).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGUFWriter  # noqa: E402
import ref_forward  # noqa: E402

WORDS = ("the a of and to in is it for on with as was at by an be this that from or "
         "search index note vault link tag code block query model vector text token "
         "embed rank score fast local file page head body list item word line data").split()
LETTERS = list("abcdefghijklmnopqrstuvwxyz0123456789")
PUNCT = list(".,;:!?'\"()[]{}-_/#*")


def bert_vocab(V):
    """WordPiece vocabulary in GGUF form: word-initial pieces carry U+2581,
    continuations are bare (HF's "##x")."""
    toks = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    toks += ["\u2581" + w for w in WORDS]
    toks += ["\u2581" + c for c in LETTERS + PUNCT]
    toks += LETTERS
    i = 0
    while len(toks) < V:
        toks.append("\u2581f%05d" % i)
        i += 1
    if len(toks) > V:
        raise ValueError("vocab too small")
    return toks


def bert_tokenizer_kv(w, V):
    toks = bert_vocab(V)
    w.add_kv("tokenizer.ggml.model", "bert")
    w.add_kv("tokenizer.ggml.tokens", toks, "array:string")
    w.add_kv("tokenizer.ggml.token_type", [3 if i < 5 else 1 for i in range(V)], "array:int32")
    w.add_kv("tokenizer.ggml.unknown_token_id", 1, "uint32")
    w.add_kv("tokenizer.ggml.cls_token_id", 2, "uint32")
    w.add_kv("tokenizer.ggml.seperator_token_id", 3, "uint32")
    w.add_kv("tokenizer.ggml.padding_token_id", 0, "uint32")
    w.add_kv("tokenizer.ggml.mask_token_id", 4, "uint32")


def gemma_tokenizer_kv(w, V):
    """SentencePiece BPE vocabulary: specials, 256 byte pieces, characters
    and a few whole words (scores make words merge first)."""
    toks, scores, types = [], [], []

    def add(t, s, ty):
        toks.append(t)
        scores.append(s)
        types.append(ty)
    add("<pad>", 0.0, 3)
    add("<eos>", 0.0, 3)
    add("<bos>", 0.0, 3)
    add("<unk>", 0.0, 2)
    for b in range(256):
        add("<0x%02X>" % b, 0.0, 6)
    add("\u2581", -1.0, 1)
    for c in LETTERS + PUNCT:
        add(c, -2.0, 1)
    seen = set(toks)
    for wd in WORDS:
        # every prefix of "▁word" so BPE merges can build it
        full = "\u2581" + wd
        for k in range(2, len(full) + 1):
            p = full[:k]
            if p not in seen:
                seen.add(p)
                add(p, -3.0 - 0.01 * len(toks), 1)
    i = 0
    while len(toks) < V:
        add("\u2581g%05d" % i, -100.0 - i, 1)
        i += 1
    if len(toks) > V:
        raise ValueError("vocab too small")
    w.add_kv("tokenizer.ggml.model", "llama")
    w.add_kv("tokenizer.ggml.tokens", toks, "array:string")
    w.add_kv("tokenizer.ggml.scores", scores, "array:float32")
    w.add_kv("tokenizer.ggml.token_type", types, "array:int32")
    w.add_kv("tokenizer.ggml.bos_token_id", 2, "uint32")
    w.add_kv("tokenizer.ggml.eos_token_id", 1, "uint32")
    w.add_kv("tokenizer.ggml.unknown_token_id", 3, "uint32")
    w.add_kv("tokenizer.ggml.padding_token_id", 0, "uint32")
    w.add_kv("tokenizer.ggml.add_bos_token", True, "bool")
    w.add_kv("tokenizer.ggml.add_eos_token", True, "bool")


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (byte-level BPE spelling)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
          list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# control (3) and user-defined (4) pieces of Qwen's tokenizer that the
# prompts use
QWEN_SPECIALS = [("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<think>", 4),
                 ("</think>", 4)]
QWEN_WORDS = WORDS + ("yes no Judge whether Document meets requirements based Query Instruct "
                      "provided Note answer can only be system user assistant Given web "
                      "retrieve relevant passages").split()


def qwen_vocab(V, with_yes_no=True):
    """A small byte-level BPE vocabulary as llama.cpp stores Qwen's: the 256
    byte characters, merges that build the test words (with and without a
    leading space, "\u0120"), filler pieces, the specials, then two unused
    [PAD] rows. Returns (tokens, types, merges)."""
    b2u = bytes_to_unicode()
    toks = [b2u[b] for b in range(256)]
    seen = set(toks)
    merges = []
    for wd in QWEN_WORDS:
        if not with_yes_no and wd in ("yes", "no"):
            continue
        for form in (wd, " " + wd):
            sp = "".join(b2u[b] for b in form.encode("utf-8"))
            cur = sp[0]
            for ch in sp[1:]:
                if cur + ch not in seen:
                    merges.append(cur + " " + ch)
                    toks.append(cur + ch)
                    seen.add(cur + ch)
                cur = cur + ch
    n_fill = V - len(toks) - len(QWEN_SPECIALS) - 2
    if n_fill < 0:
        raise ValueError("vocab too small")
    toks += ["\u0100fill%05d" % i for i in range(n_fill)]
    types = [1] * len(toks)
    for t, ty in QWEN_SPECIALS:
        toks.append(t)
        types.append(ty)
    toks += ["[PAD%d]" % len(toks), "[PAD%d]" % (len(toks) + 1)]
    types += [5, 5]
    return toks, types, merges


def qwen_tokenizer_kv(V, add_eos=True, with_yes_no=True):
    toks, types, merges = qwen_vocab(V, with_yes_no)
    eot = toks.index("<|endoftext|>")

    def kv(w, _V):
        w.add_kv("tokenizer.ggml.model", "gpt2")
        w.add_kv("tokenizer.ggml.pre", "qwen2")
        w.add_kv("tokenizer.ggml.tokens", toks, "array:string")
        w.add_kv("tokenizer.ggml.token_type", types, "array:int32")
        w.add_kv("tokenizer.ggml.merges", merges, "array:string")
        w.add_kv("tokenizer.ggml.bos_token_id", eot, "uint32")
        w.add_kv("tokenizer.ggml.eos_token_id", eot, "uint32")
        w.add_kv("tokenizer.ggml.padding_token_id", eot, "uint32")
        w.add_kv("tokenizer.ggml.add_bos_token", False, "bool")
        if add_eos:
            w.add_kv("tokenizer.ggml.add_eos_token", True, "bool")
    return kv, toks


# llama-quantize's mixes for rows that are not a multiple of 256 (384-wide
# MiniLM / bge-small): a K-quant there falls back to a 32-block type
# (llama-quant.cpp's tensor_type_fallback: Q4_K -> Q5_0, Q5_K -> Q5_1,
# Q6_K -> Q8_0); "Q4_K_M*" and "Q5_K_M*" stand for such files.
MIXES = {"Q4_K_M*": ("Q4_K", "Q5_0"), "Q5_K_M*": ("Q5_K", "Q5_1")}


def mixed_type(qtype, shape):
    if qtype not in MIXES:
        return qtype
    k, fallback = MIXES[qtype]
    return k if shape[-1] % 256 == 0 else fallback


def qtype_for(qtype, shape):
    """Matrices take the model's type; vectors stay F32 (as llama.cpp's
    quantiser leaves them)."""
    return qtype if len(shape) == 2 else "F32"


class Builder:
    def __init__(self, seed, qtype):
        self.rng = np.random.default_rng(seed)
        self.qtype = qtype
        self.tensors = []

    def mat(self, name, out, inp, std=None, qtype=None):
        std = std if std is not None else 1.0 / np.sqrt(inp)
        if std == 0:
            self.tensors.append((name, np.zeros((out, inp), np.float32), qtype or self.qtype))
            return
        a = self.rng.standard_normal((out, inp)).astype(np.float32) * np.float32(std)
        self.tensors.append((name, a, qtype or self.qtype))

    def vec(self, name, n, mean=0.0, std=0.1):
        a = (mean + std * self.rng.standard_normal(n)).astype(np.float32)
        self.tensors.append((name, a, "F32"))

    def write(self, w):
        for name, a, qt in self.tensors:
            w.add_tensor(name, a, mixed_type(qt, a.shape))


def spm_unigram_kv(w, outdir):
    """A small SentencePiece unigram model (XLM-RoBERTa's tokenizer kind,
    "t5" in GGUF) trained on synthetic English + Chinese text, stored the
    way llama.cpp's converter stores XLM-R tokenizers: <s> text </s>."""
    import io
    import sentencepiece as spm
    from tok_parity import add_spm_kv
    rng = np.random.default_rng(99)
    zh = list("\u7684\u4e00\u662f\u4e0d\u4e86\u4eba\u6211\u5728\u6709\u4ed6\u8fd9\u4e2d"
              "\u5927\u6765\u4e0a\u56fd\u4e2a\u5230\u8bf4\u4eec\u4e3a\u5b50\u548c\u4f60")
    lines = []
    for _ in range(3000):
        ws = [WORDS[i] for i in rng.integers(0, len(WORDS), size=8)]
        lines.append(" ".join(ws) + " " + "".join(rng.choice(zh, size=6)))
    spm.set_random_generator_seed(7)
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buf,
                                   vocab_size=400, model_type="unigram", minloglevel=2,
                                   num_threads=1)
    sp = add_spm_kv(w, buf.getvalue(), "t5", True, True)
    return sp.get_piece_size()


def bert_model(path, H=64, L=2, nh=4, FF=128, V=200, ctx=64, qtype="F32", seed=1,
               rerank=False, fused=False, name="tiny-bert", pool=None, types=2,
               emb_qtype=None, mutate=None, branch=1.0, emb_std=None, spm=False):
    w = GGUFWriter(path)
    w.add_kv("general.architecture", "bert")
    w.add_kv("general.name", name)
    w.add_kv("bert.embedding_length", H, "uint32")
    w.add_kv("bert.block_count", L, "uint32")
    w.add_kv("bert.attention.head_count", nh, "uint32")
    w.add_kv("bert.feed_forward_length", FF, "uint32")
    w.add_kv("bert.context_length", ctx, "uint32")
    w.add_kv("bert.attention.layer_norm_epsilon", 1e-12, "float32")
    w.add_kv("bert.attention.causal", False, "bool")
    w.add_kv("bert.pooling_type", pool if pool is not None else (4 if rerank else 1), "uint32")
    if spm:
        V = spm_unigram_kv(w, os.path.dirname(path))
    else:
        bert_tokenizer_kv(w, V)
    b = Builder(seed, qtype)
    b.mat("token_embd.weight", V, H, std=0.5 if emb_std is None else emb_std,
          qtype=emb_qtype or qtype)
    b.mat("position_embd.weight", ctx, H, std=0.2, qtype="F32")
    if types:
        b.mat("token_types.weight", types, H, std=0.2, qtype="F32")
    b.vec("token_embd_norm.weight", H, 1.0)
    b.vec("token_embd_norm.bias", H)
    for il in range(L):
        p = "blk.%d." % il
        if fused:
            b.mat(p + "attn_qkv.weight", 3 * H, H, std=2.0 / np.sqrt(H))
            b.vec(p + "attn_qkv.bias", 3 * H)
        else:
            for n in ("attn_q", "attn_k", "attn_v"):
                b.mat(p + n + ".weight", H, H, std=2.0 / np.sqrt(H))
                b.vec(p + n + ".bias", H)
        b.mat(p + "attn_output.weight", H, H, std=branch / np.sqrt(H))
        b.vec(p + "attn_output.bias", H)
        b.vec(p + "attn_output_norm.weight", H, 1.0)
        b.vec(p + "attn_output_norm.bias", H)
        b.mat(p + "ffn_up.weight", FF, H)
        b.vec(p + "ffn_up.bias", FF)
        b.mat(p + "ffn_down.weight", H, FF, std=branch / np.sqrt(FF))
        b.vec(p + "ffn_down.bias", H)
        b.vec(p + "layer_output_norm.weight", H, 1.0)
        b.vec(p + "layer_output_norm.bias", H)
    if rerank:
        b.mat("cls.weight", H, H)
        b.vec("cls.bias", H)
        b.mat("cls.output.weight", 1, H, qtype="F32")
        b.vec("cls.output.bias", 1)
    if mutate:
        mutate(b)
    b.write(w)
    w.write()


def gemma_model(path, H=64, L=3, nh=4, nkv=2, dk=32, FF=128, V=600, ctx=64, window=8,
                pattern=3, qtype="F32", seed=2, dense=True, name="tiny-embeddinggemma",
                tokenizer_kv=None):
    a = "gemma-embedding"
    w = GGUFWriter(path)
    w.add_kv("general.architecture", a)
    w.add_kv("general.name", name)
    w.add_kv(a + ".embedding_length", H, "uint32")
    w.add_kv(a + ".block_count", L, "uint32")
    w.add_kv(a + ".attention.head_count", nh, "uint32")
    w.add_kv(a + ".attention.head_count_kv", nkv, "uint32")
    w.add_kv(a + ".attention.key_length", dk, "uint32")
    w.add_kv(a + ".attention.value_length", dk, "uint32")
    w.add_kv(a + ".feed_forward_length", FF, "uint32")
    w.add_kv(a + ".context_length", ctx, "uint32")
    w.add_kv(a + ".attention.layer_norm_rms_epsilon", 1e-6, "float32")
    w.add_kv(a + ".rope.freq_base", 1000000.0, "float32")
    w.add_kv(a + ".rope.freq_base_swa", 10000.0, "float32")
    w.add_kv(a + ".attention.sliding_window", window, "uint32")
    w.add_kv(a + ".attention.sliding_window_pattern", pattern, "uint32")
    w.add_kv(a + ".pooling_type", 1, "uint32")
    (tokenizer_kv or gemma_tokenizer_kv)(w, V)
    b = Builder(seed, qtype)
    b.mat("token_embd.weight", V, H, std=1.0 / np.sqrt(H))
    for il in range(L):
        p = "blk.%d." % il
        b.vec(p + "attn_norm.weight", H, 1.0)
        b.mat(p + "attn_q.weight", nh * dk, H)
        b.mat(p + "attn_k.weight", nkv * dk, H)
        b.mat(p + "attn_v.weight", nkv * dk, H)
        b.vec(p + "attn_q_norm.weight", dk, 1.0, 0.3)
        b.vec(p + "attn_k_norm.weight", dk, 1.0, 0.3)
        b.mat(p + "attn_output.weight", H, nh * dk)
        b.vec(p + "post_attention_norm.weight", H, 1.0)
        b.vec(p + "ffn_norm.weight", H, 1.0)
        b.mat(p + "ffn_gate.weight", FF, H)
        b.mat(p + "ffn_up.weight", FF, H)
        b.mat(p + "ffn_down.weight", H, FF)
        b.vec(p + "post_ffw_norm.weight", H, 1.0)
    b.vec("output_norm.weight", H, 1.0)
    if dense:
        b.mat("dense_2.weight", 4 * H, H)
        b.mat("dense_3.weight", H, 4 * H)
    b.write(w)
    w.write()


def qwen3_model(path, H=64, L=2, nh=4, nkv=2, dk=32, FF=128, V=1000, ctx=512, qtype="F32",
                seed=30, name="tiny-Qwen3-Embedding", pool=3, cls_out=False, tied=True,
                tokenizer_kv=None, rope_base=1000000.0, emb_qtype=None, labels=True):
    """A Qwen3-shaped decoder: pooling last (embedding), or 4 (rank) with a
    cls.output [yes, no] head as llama.cpp converts Qwen3-Reranker; untied
    files carry output.weight. n_head * head_dim != n_embd on purpose."""
    a = "qwen3"
    w = GGUFWriter(path)
    w.add_kv("general.architecture", a)
    w.add_kv("general.name", name)
    w.add_kv(a + ".embedding_length", H, "uint32")
    w.add_kv(a + ".block_count", L, "uint32")
    w.add_kv(a + ".attention.head_count", nh, "uint32")
    w.add_kv(a + ".attention.head_count_kv", nkv, "uint32")
    w.add_kv(a + ".attention.key_length", dk, "uint32")
    w.add_kv(a + ".attention.value_length", dk, "uint32")
    w.add_kv(a + ".feed_forward_length", FF, "uint32")
    w.add_kv(a + ".context_length", ctx, "uint32")
    w.add_kv(a + ".attention.layer_norm_rms_epsilon", 1e-6, "float32")
    w.add_kv(a + ".rope.freq_base", rope_base, "float32")
    if pool is not None:
        w.add_kv(a + ".pooling_type", pool, "uint32")
    if cls_out and labels:
        w.add_kv(a + ".classifier.output_labels", ["yes", "no"], "array:string")
    kv, toks = tokenizer_kv or qwen_tokenizer_kv(V)
    kv(w, V)
    V = len(toks)
    b = Builder(seed, qtype)
    b.mat("token_embd.weight", V, H, std=1.0, qtype=emb_qtype or qtype)
    for il in range(L):
        p = "blk.%d." % il
        b.vec(p + "attn_norm.weight", H, 1.0)
        b.mat(p + "attn_q.weight", nh * dk, H)
        b.mat(p + "attn_k.weight", nkv * dk, H)
        b.mat(p + "attn_v.weight", nkv * dk, H)
        b.vec(p + "attn_q_norm.weight", dk, 1.0, 0.3)
        b.vec(p + "attn_k_norm.weight", dk, 1.0, 0.3)
        b.mat(p + "attn_output.weight", H, nh * dk)
        b.vec(p + "ffn_norm.weight", H, 1.0)
        b.mat(p + "ffn_gate.weight", FF, H)
        b.mat(p + "ffn_up.weight", FF, H)
        b.mat(p + "ffn_down.weight", H, FF)
    b.vec("output_norm.weight", H, 1.0)
    if not tied:
        b.mat("output.weight", V, H)
    if cls_out:
        b.mat("cls.output.weight", 2, H, std=3.0 / np.sqrt(H), qtype="F32")
    b.write(w)
    w.write()
    return toks


def qwen3_request(toks, seed, lens=(1, 4, 30, 140, 9), n_special=0):
    """Sequences of normal pieces, each ended by <|endoftext|> as the
    embedding template frames them."""
    rng = np.random.default_rng(seed)
    eot = toks.index("<|endoftext|>")
    normal = [i for i, t in enumerate(toks) if not t.startswith(("<|", "<think", "</think", "[PAD"))]
    return {"seqs": [rng.choice(normal, size=n).tolist() + [eot] for n in lens]}


def qwen3_rank_request(toks, seed, lm_head=False):
    """A shared prefix and candidates of assorted lengths; seqs are the
    whole sequences (prefix + candidate) the reference scores."""
    rng = np.random.default_rng(seed)
    normal = [i for i, t in enumerate(toks) if not t.startswith(("<|", "<think", "</think", "[PAD"))]
    prefix = [toks.index("<|im_start|>")] + rng.choice(normal, size=23).tolist()
    cands = [rng.choice(normal, size=n).tolist() + [toks.index("<|im_end|>")]
             for n in (0, 4, 37, 150, 300)]
    req = {"prefix": prefix, "cands": cands, "seqs": [prefix + c for c in cands], "pool": "rank"}
    if lm_head:
        req["rank_tokens"] = [toks.index("yes"), toks.index("no")]
    return req


def bert_request(V, ctx, seed, n=5, pair=False, lens=None):
    rng = np.random.default_rng(seed)
    lens = lens or [1, 3, 17, ctx - 2, 9, 30][:n]
    seqs, types = [], []
    for k, ln in enumerate(lens):
        ln = max(1, min(ln, ctx - (3 if pair else 2)))
        body = rng.integers(5, V, size=ln).tolist()
        if pair:
            cut = max(1, ln // 2)
            ids = [2] + body[:cut] + [3] + body[cut:] + [3]
            ty = [0] * (cut + 2) + [1] * (len(ids) - cut - 2)
        else:
            ids = [2] + body + [3]
            ty = [0] * len(ids)
        seqs.append(ids)
        types.append(ty)
    return {"seqs": seqs, "types": types}


def gemma_request(V, ctx, seed, n=5):
    rng = np.random.default_rng(seed)
    lens = [1, 5, 20, ctx - 2, 11][:n]
    seqs = [[2] + rng.integers(4, V, size=max(1, min(ln, ctx - 2))).tolist() + [1]
            for ln in lens]
    return {"seqs": seqs}


def emit(outdir, name, req, ref_path=None):
    with open(os.path.join(outdir, name + ".req.json"), "w") as f:
        json.dump(req, f)
    r = ref_forward.Reader(os.path.join(outdir, (ref_path or name) + ".gguf"))
    vecs = ref_forward.forward(r, req["seqs"], req.get("types"), req.get("pool"),
                               req.get("normalize", True), req.get("dim", 0),
                               req.get("rank_tokens"))
    with open(os.path.join(outdir, name + ".ref.json"), "w") as f:
        json.dump({"vectors": vecs}, f)


def broken(outdir):
    import gguf_writer as gw

    # wrong shape: blk.1.attn_q.weight is [H + 32, H] (PyTorch order)
    def widen(b):
        b.tensors = [(n, np.zeros((a.shape[0] + 32, a.shape[1]), np.float32), q)
                     if n == "blk.1.attn_q.weight" else (n, a, q) for n, a, q in b.tensors]
    bert_model(os.path.join(outdir, "bad_shape.gguf"), mutate=widen)
    # missing tensor: no blk.1.ffn_up.weight
    p2 = os.path.join(outdir, "bad_missing.gguf")
    w = gw.GGUFWriter(p2)
    w.add_kv("general.architecture", "bert")
    w.add_kv("bert.embedding_length", 32, "uint32")
    w.add_kv("bert.block_count", 1, "uint32")
    w.add_kv("bert.attention.head_count", 2, "uint32")
    w.add_kv("bert.feed_forward_length", 64, "uint32")
    bert_tokenizer_kv(w, 200)
    w.add_tensor("token_embd.weight", np.zeros((200, 32), np.float32))
    w.add_tensor("position_embd.weight", np.zeros((16, 32), np.float32))
    w.add_tensor("token_embd_norm.weight", np.ones(32, np.float32))
    w.write()
    # unsupported architecture
    p3 = os.path.join(outdir, "bad_arch.gguf")
    w = gw.GGUFWriter(p3)
    w.add_kv("general.architecture", "mamba")
    w.add_tensor("token_embd.weight", np.zeros((4, 32), np.float32))
    w.write()


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    j = lambda n: os.path.join(out, n + ".gguf")  # noqa: E731
    if "--fuzz-seeds" in argv:
        # tiny files for fuzz/seeds/model (checked in)
        bert_model(j("bert"), H=8, L=1, nh=2, FF=16, V=160, ctx=8, seed=20)
        bert_model(j("bert_rank_q8"), H=32, L=1, nh=2, FF=32, V=160, ctx=8, seed=21,
                   rerank=True, fused=True, qtype="Q8_0")
        gemma_model(j("gemma"), H=8, L=2, nh=2, nkv=1, dk=4, FF=16, V=600, ctx=8, window=4,
                    pattern=2, seed=22)
        qwen3_model(j("qwen3_rank"), H=8, L=2, nh=2, nkv=1, dk=8, FF=16, V=800, ctx=64,
                    seed=23, pool=4, cls_out=True, name="tiny-Qwen3-Reranker")
        qwen3_model(j("qwen3_emb_q8"), H=32, L=1, nh=2, nkv=1, dk=16, FF=32, V=800, ctx=64,
                    seed=24, qtype="Q8_0", tied=False)
        return 0

    bert_model(j("bert_f32"), name="tiny-bert")
    bert_model(j("bert_q8"), qtype="Q8_0")
    bert_model(j("bert_f16"), qtype="F16")
    bert_model(j("bert_q40"), qtype="Q4_0")
    bert_model(j("bert_q50"), qtype="Q5_0")
    bert_model(j("bert_q51"), qtype="Q5_1")
    req = bert_request(200, 64, 10)
    for n in ("bert_f32", "bert_q8", "bert_f16", "bert_q40", "bert_q50", "bert_q51"):
        emit(out, n, req)
    emit(out, "bert_q8_vs_f32", req, "bert_f32")

    bert_model(j("bert_fused_cls"), fused=True, pool=2, seed=3, L=1)
    emit(out, "bert_fused_cls", bert_request(200, 64, 11))
    bert_model(j("bert_last"), pool=3, seed=4, L=1)
    emit(out, "bert_last", bert_request(200, 64, 12))

    # K-quants need rows that are multiples of 256
    # (random weights have no structure, so 4-bit noise hurts them more than
    # a trained encoder; like trained encoders this one keeps its residual
    # branches smaller than the residual stream: branch=0.3)
    bert_model(j("bert256_f32"), H=256, FF=512, nh=4, seed=5, V=300, branch=0.3)
    for qt in ("Q4_K", "Q5_K", "Q6_K"):
        bert_model(j("bert256_" + qt.lower()), H=256, FF=512, nh=4, seed=5, V=300, qtype=qt,
                   branch=0.3)
    req = bert_request(300, 64, 13, n=4)
    emit(out, "bert256_f32", req)
    for qt in ("q4_k", "q5_k", "q6_k"):
        emit(out, "bert256_" + qt, req)

    # 384 wide (MiniLM, bge-small) as llama-quantize's Q4_K_M / Q5_K_M
    # store it: Q5_0 / Q5_1 where rows are 384 long, Q4_K / Q5_K for
    # ffn_down's 1536; and a cross-encoder of that mix
    kw = dict(H=384, FF=1536, nh=6, L=1, seed=18, V=300, branch=0.3)
    bert_model(j("bert384_f32"), **kw)
    bert_model(j("bert384_q4_k_m"), qtype="Q4_K_M*", **kw)
    bert_model(j("bert384_q5_k_m"), qtype="Q5_K_M*", **kw)
    req = bert_request(300, 64, 19, n=4)
    for n in ("bert384_f32", "bert384_q4_k_m", "bert384_q5_k_m"):
        emit(out, n, req)
    kw.update(rerank=True, seed=20)
    bert_model(j("rerank384_f32"), **kw)
    bert_model(j("rerank384_q4_k_m"), qtype="Q4_K_M*", **kw)
    bert_model(j("rerank384_q5_k_m"), qtype="Q5_K_M*", **kw)

    bert_model(j("rerank_f32"), rerank=True, seed=6, name="tiny-ms-marco-reranker")
    req = bert_request(200, 64, 14, pair=True)
    req["pool"] = "rank"
    emit(out, "rerank_f32", req)

    gemma_model(j("gemma_f32"))
    gemma_model(j("gemma_q8"), qtype="Q8_0")
    req = gemma_request(600, 64, 15)
    emit(out, "gemma_f32", req)
    emit(out, "gemma_q8", req)
    emit(out, "gemma_q8_vs_f32", req, "gemma_f32")
    # sequences longer than the attention's 128-row query blocks, with a
    # window that cuts through them
    gemma_model(j("gemma_long"), L=2, ctx=320, window=64, pattern=2, seed=12)
    rng = np.random.default_rng(17)
    emit(out, "gemma_long", {"seqs": [[2] + rng.integers(4, 600, size=n).tolist() + [1]
                                      for n in (298, 129, 7)]})

    # XLM-RoBERTa-style models (arch bert, SentencePiece unigram "t5"
    # tokenizer, one token type): bge-m3 / multilingual-e5 / bge-reranker-v2-m3
    bert_model(j("xlmr_e5"), seed=9, types=1, spm=True, name="multilingual-e5-tiny")
    bert_model(j("xlmr_m3"), seed=9, types=1, spm=True, name="bge-m3-tiny", pool=2)
    bert_model(j("xlmr_rerank"), seed=10, types=1, spm=True, rerank=True,
               name="bge-reranker-v2-m3-tiny")

    # Qwen3: embedding (pooling last, tied), reranker with cls.output
    # [yes, no] (llama.cpp's conversion), reranker converted without it
    # (untied LM head, no pooling key, "Reranker" in the name), a chat model
    # without yes/no tokens
    toks = qwen3_model(j("qwen3_emb_f32"))
    qwen3_model(j("qwen3_emb_q8"), qtype="Q8_0")
    req = qwen3_request(toks, 31)
    emit(out, "qwen3_emb_f32", req)
    emit(out, "qwen3_emb_q8", req)
    emit(out, "qwen3_emb_q8_vs_f32", req, "qwen3_emb_f32")
    toks = qwen3_model(j("qwen3_rank_f32"), seed=32, pool=4, cls_out=True,
                       name="tiny-Qwen3-Reranker")
    qwen3_model(j("qwen3_rank_q8"), seed=32, pool=4, cls_out=True, name="tiny-Qwen3-Reranker",
                qtype="Q8_0")
    req = qwen3_rank_request(toks, 36)
    emit(out, "qwen3_rank_f32", req)
    emit(out, "qwen3_rank_q8", req)
    emit(out, "qwen3_rank_q8_vs_f32", req, "qwen3_rank_f32")
    toks = qwen3_model(j("qwen3_rank_lm"), seed=33, pool=None, tied=False,
                       name="tiny-Qwen3-Reranker-0.6B")
    emit(out, "qwen3_rank_lm", qwen3_rank_request(toks, 37, lm_head=True))
    qwen3_model(j("qwen3_chat"), seed=34, pool=None, name="tiny-qwen3-chat",
                tokenizer_kv=qwen_tokenizer_kv(1000, add_eos=False, with_yes_no=False))
    qwen3_model(j("qwen3_rank_noyes"), seed=35, pool=4, name="tiny-Qwen3-Reranker-broken",
                tokenizer_kv=qwen_tokenizer_kv(1000, add_eos=False, with_yes_no=False))

    broken(out)

    if "--big" in argv:
        # a ~300 MB file for the open-time check: 100k x 768 F32 embeddings
        bert_model(j("big_open"), H=768, L=1, nh=12, FF=3072, V=100000, ctx=512, seed=8,
                   emb_std=0, name="big-open-test")

    if "--minilm" in argv:
        kw = dict(H=384, L=6, nh=12, FF=1536, V=30522, ctx=512, seed=7,
                  name="MiniLM-shaped all-MiniLM-L6-v2")
        bert_model(j("minilm_f32"), **kw)
        bert_model(j("minilm_q8"), qtype="Q8_0", **kw)
        req = bert_request(30522, 512, 16, lens=[14, 100, 254])
        emit(out, "minilm_f32", req)
        # ms-marco-MiniLM-L-6-v2-shaped cross-encoder (bench/qwen3_bench.sh)
        kw.update(rerank=True, name="MiniLM-shaped ms-marco-MiniLM-L-6-v2 reranker")
        bert_model(j("minilm_rerank_f32"), **kw)
        bert_model(j("minilm_rerank_q8"), qtype="Q8_0", **kw)
        bert_model(j("minilm_rerank_f16"), qtype="F16", **kw)
        with open(os.path.join(out, "minilm_q8.req.json"), "w") as f:
            json.dump(req, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
