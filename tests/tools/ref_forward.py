#!/usr/bin/python3
"""ref_forward -- an independent numpy reference forward pass for the GGUF
embedding models trove runs, used to check trove's C engine.

It shares no code with the engine: it parses the GGUF file itself (a small
reader below), decodes tensors with gguf_writer.dequantize (the numpy
dequantisers), and computes everything in float64 from the published model
definitions:

  bert             post-norm BERT encoder (token + type + position
                   embeddings, LayerNorm, MHA, exact-erf GELU FFN) with
                   mean / cls / last pooling, or the cross-encoder head
                   (rank: CLS -> cls dense + tanh -> cls.output).
  gemma-embedding  EmbeddingGemma: embeddings * sqrt(d), RMSNorm sandwich,
                   q/k RMSNorm, GQA, NeoX RoPE (per-layer base), symmetric
                   sliding window on local layers, GELU-tanh gated FFN,
                   final RMSNorm, mean pooling, dense_2 / dense_3.
  qwen3            Qwen3 decoder (HF Qwen3Model): pre-norm RMSNorm, q/k
                   RMSNorm per head, GQA, NeoX RoPE, causal attention,
                   SwiGLU FFN, final RMSNorm; last-token pooling
                   (Qwen3-Embedding) or rank: P("yes") = softmax of the
                   last token's yes/no logits, from cls.output (rows as
                   classifier.output_labels say) or from the LM head rows
                   of the request's "rank_tokens" [yes, no] (Qwen3-Reranker).

Usage:
  ref_forward.py MODEL.gguf IN.json      prints {"vectors": [[...], ...]}
IN.json: {"seqs": [[ids...], ...], "types": [[...], ...] (optional),
          "pool": "mean|cls|last|rank|none" (optional: model's own),
          "normalize": true, "dim": 0,
          "rank_tokens": [yes_id, no_id] (qwen3 rank without cls.output)}
"""
import json
import math
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import dequantize  # noqa: E402

TYPE_NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 12: "Q4_K",
              13: "Q5_K", 14: "Q6_K", 30: "BF16"}
BLOCK = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q4_0": (32, 18), "Q5_0": (32, 22),
         "Q5_1": (32, 24), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q5_K": (256, 176),
         "Q6_K": (256, 210)}
POOL = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}


# ---------------------------------------------------------------- GGUF reader

class Reader:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.off = 0
        if self.buf[:4] != b"GGUF":
            raise ValueError("not a GGUF file")
        self.off = 4
        self.version = self.u32()
        nt, nkv = self.u64(), self.u64()
        self.kv = {}
        for _ in range(nkv):
            k = self.str()
            self.kv[k] = self.value(self.u32())
        align = int(self.kv.get("general.alignment", 32))
        infos = []
        for _ in range(nt):
            name = self.str()
            nd = self.u32()
            ne = [self.u64() for _ in range(nd)]
            tid = self.u32()
            off = self.u64()
            infos.append((name, ne, tid, off))
        base = self.off + (-self.off) % align
        self.tensors = {}
        for name, ne, tid, off in infos:
            qt = TYPE_NAMES[tid]
            bs, ts = BLOCK[qt]
            n = int(np.prod(ne))
            nbytes = n // bs * ts
            raw = self.buf[base + off: base + off + nbytes]
            shape = tuple(reversed(ne))   # PyTorch order
            self.tensors[name] = (qt, raw, shape)

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.buf, self.off)
        self.off += struct.calcsize("<" + fmt)
        return v[0]

    def u32(self):
        return self.take("I")

    def u64(self):
        return self.take("Q")

    def str(self):
        n = self.u64()
        s = self.buf[self.off:self.off + n]
        self.off += n
        return s.decode("utf-8", "replace")

    def value(self, t):
        fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q",
                11: "q", 12: "d"}
        if t in fmts:
            return self.take(fmts[t])
        if t == 8:
            return self.str()
        if t == 9:
            et = self.u32()
            n = self.u64()
            return [self.value(et) for _ in range(n)]
        raise ValueError("bad value type %d" % t)

    def has(self, name):
        return name in self.tensors

    def t(self, name):
        qt, raw, shape = self.tensors[name]
        return dequantize(qt, raw, shape).astype(np.float64)


# ---------------------------------------------------------------- math

def layernorm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rmsnorm(x, w, eps):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y * w if w is not None else y


_erf = np.vectorize(math.erf)


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v, scale, window=0, causal=False):
    """q: (T, nh, d), k/v: (T, nkv, d) -> (T, nh*d); symmetric window, or
    causal (token i sees j <= i)."""
    T, nh, d = q.shape
    nkv = k.shape[1]
    out = np.zeros((T, nh, d))
    idx = np.arange(T)
    mask = np.zeros((T, T), dtype=bool)
    if window:
        half = window // 2
        mask = np.abs(idx[:, None] - idx[None, :]) > half
    if causal:
        mask = idx[None, :] > idx[:, None]
    for h in range(nh):
        kh = h // (nh // nkv)
        s = (q[:, h, :] @ k[:, kh, :].T) * scale
        s = np.where(mask, -np.inf, s)
        out[:, h, :] = softmax(s) @ v[:, kh, :]
    return out.reshape(T, nh * d)


def rope_neox(x, base):
    """x: (T, nh, d); rotate pairs (i, i + d/2) at position t."""
    T, nh, d = x.shape
    h = d // 2
    pos = np.arange(T, dtype=np.float64)[:, None]
    inv = base ** (-2.0 * np.arange(h, dtype=np.float64) / d)
    ang = pos * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., :h], x[..., h:]
    return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)


def linear(r, name, x):
    y = x @ r.t(name + ".weight").T
    if r.has(name + ".bias"):
        y = y + r.t(name + ".bias")
    return y


def opt(r, name):
    return r.t(name) if r.has(name) else None


# ---------------------------------------------------------------- models

def bert_hidden(r, ids, types):
    a = "bert"
    H = r.kv[a + ".embedding_length"]
    nh = r.kv[a + ".attention.head_count"]
    eps = r.kv.get(a + ".attention.layer_norm_epsilon", 1e-12)
    L = r.kv[a + ".block_count"]
    T = len(ids)
    x = r.t("token_embd.weight")[ids]
    if r.has("token_types.weight"):
        tt = r.t("token_types.weight")
        ty = np.array(types if types is not None else [0] * T)
        ty = np.where(ty < tt.shape[0], ty, 0)
        x = x + tt[ty]
    x = x + r.t("position_embd.weight")[:T]
    x = layernorm(x, r.t("token_embd_norm.weight"), opt(r, "token_embd_norm.bias"), eps)
    d = H // nh
    for il in range(L):
        p = "blk.%d." % il
        if r.has(p + "attn_qkv.weight"):
            qkv = linear(r, p + "attn_qkv", x)
            q, k, v = qkv[:, :H], qkv[:, H:2 * H], qkv[:, 2 * H:]
        else:
            q, k, v = (linear(r, p + n, x) for n in ("attn_q", "attn_k", "attn_v"))
        att = attention(q.reshape(T, nh, d), k.reshape(T, nh, d), v.reshape(T, nh, d),
                        1.0 / math.sqrt(d))
        a1 = layernorm(x + linear(r, p + "attn_output", att), r.t(p + "attn_output_norm.weight"),
                       opt(r, p + "attn_output_norm.bias"), eps)
        f = linear(r, p + "ffn_down", gelu_erf(linear(r, p + "ffn_up", a1)))
        x = layernorm(a1 + f, r.t(p + "layer_output_norm.weight"),
                      opt(r, p + "layer_output_norm.bias"), eps)
    return x


def gemma_hidden(r, ids):
    a = "gemma-embedding"
    H = r.kv[a + ".embedding_length"]
    nh = r.kv[a + ".attention.head_count"]
    nkv = r.kv.get(a + ".attention.head_count_kv", nh)
    d = r.kv.get(a + ".attention.key_length", H // nh)
    eps = r.kv.get(a + ".attention.layer_norm_rms_epsilon", 1e-6)
    L = r.kv[a + ".block_count"]
    base = r.kv.get(a + ".rope.freq_base", 10000.0)
    base_swa = r.kv.get(a + ".rope.freq_base_swa", 10000.0)
    window = r.kv.get(a + ".attention.sliding_window", 0)
    pat = r.kv.get(a + ".attention.sliding_window_pattern", 6)
    T = len(ids)
    x = r.t("token_embd.weight")[ids] * np.float64(np.float32(math.sqrt(H)))
    for il in range(L):
        p = "blk.%d." % il
        swa = bool(pat[il]) if isinstance(pat, list) else (pat > 0 and il % pat < pat - 1)
        h = rmsnorm(x, r.t(p + "attn_norm.weight"), eps)
        q = (h @ r.t(p + "attn_q.weight").T).reshape(T, nh, d)
        k = (h @ r.t(p + "attn_k.weight").T).reshape(T, nkv, d)
        v = (h @ r.t(p + "attn_v.weight").T).reshape(T, nkv, d)
        q = rmsnorm(q, r.t(p + "attn_q_norm.weight"), eps)
        k = rmsnorm(k, r.t(p + "attn_k_norm.weight"), eps)
        b = base_swa if swa else base
        q, k = rope_neox(q, b), rope_neox(k, b)
        att = attention(q, k, v, 1.0 / math.sqrt(d), window if swa else 0)
        o = rmsnorm(att @ r.t(p + "attn_output.weight").T, r.t(p + "post_attention_norm.weight"),
                    eps)
        x = x + o
        h = rmsnorm(x, r.t(p + "ffn_norm.weight"), eps)
        f = gelu_tanh(h @ r.t(p + "ffn_gate.weight").T) * (h @ r.t(p + "ffn_up.weight").T)
        f = rmsnorm(f @ r.t(p + "ffn_down.weight").T, r.t(p + "post_ffw_norm.weight"), eps)
        x = x + f
    return rmsnorm(x, r.t("output_norm.weight"), eps)


def silu(x):
    return x / (1.0 + np.exp(-x))


def qwen3_hidden(r, ids):
    a = "qwen3"
    H = r.kv[a + ".embedding_length"]
    nh = r.kv[a + ".attention.head_count"]
    nkv = r.kv.get(a + ".attention.head_count_kv", nh)
    d = r.kv.get(a + ".attention.key_length", H // nh)
    eps = r.kv.get(a + ".attention.layer_norm_rms_epsilon", 1e-6)
    L = r.kv[a + ".block_count"]
    base = r.kv.get(a + ".rope.freq_base", 10000.0)
    T = len(ids)
    x = r.t("token_embd.weight")[ids]
    for il in range(L):
        p = "blk.%d." % il
        h = rmsnorm(x, r.t(p + "attn_norm.weight"), eps)
        q = linear(r, p + "attn_q", h).reshape(T, nh, d)
        k = linear(r, p + "attn_k", h).reshape(T, nkv, d)
        v = linear(r, p + "attn_v", h).reshape(T, nkv, d)
        q = rope_neox(rmsnorm(q, r.t(p + "attn_q_norm.weight"), eps), base)
        k = rope_neox(rmsnorm(k, r.t(p + "attn_k_norm.weight"), eps), base)
        att = attention(q, k, v, 1.0 / math.sqrt(d), causal=True)
        x = x + att @ r.t(p + "attn_output.weight").T
        h = rmsnorm(x, r.t(p + "ffn_norm.weight"), eps)
        f = silu(h @ r.t(p + "ffn_gate.weight").T) * (h @ r.t(p + "ffn_up.weight").T)
        x = x + f @ r.t(p + "ffn_down.weight").T
    return rmsnorm(x, r.t("output_norm.weight"), eps)


def qwen3_rank(r, v, rank_tokens):
    """P(yes) from the last token's hidden state v."""
    yes = 0
    if r.has("cls.output.weight"):
        logits = r.t("cls.output.weight") @ v
        labels = r.kv.get("qwen3.classifier.output_labels")
        if labels:
            yes = labels.index("yes")
    else:
        head = r.t("output.weight") if r.has("output.weight") else r.t("token_embd.weight")
        logits = head[rank_tokens] @ v
    if len(logits) == 1:
        return float(1.0 / (1.0 + math.exp(-logits[0])))
    return float(softmax(logits)[yes])


def forward(r, seqs, types=None, pool=None, normalize=True, dim=0, rank_tokens=None):
    arch = r.kv["general.architecture"]
    if pool is None:
        pool = POOL[r.kv.get(arch + ".pooling_type", 3 if arch == "qwen3" else 1)]
        if pool == "none":
            pool = "mean"
    out = []
    for i, ids in enumerate(seqs):
        if arch == "bert":
            h = bert_hidden(r, ids, types[i] if types else None)
        elif arch == "gemma-embedding":
            h = gemma_hidden(r, ids)
        elif arch == "qwen3":
            h = qwen3_hidden(r, ids)
        else:
            raise ValueError("unsupported arch " + arch)
        if pool == "none":
            out.append(h.tolist())
            continue
        if arch == "qwen3" and pool == "rank":
            out.append(qwen3_rank(r, h[-1], rank_tokens))
            continue
        if pool in ("cls", "rank"):
            v = h[0]
        elif pool == "last":
            v = h[-1]
        else:
            v = h.mean(0)
        if pool == "rank":
            if r.has("cls.weight"):
                v = np.tanh(linear(r, "cls", v))
            if r.has("cls.output.weight"):
                v = linear(r, "cls.output", v)
            out.append(float(v[0]))
            continue
        if r.has("dense_2.weight"):
            v = linear(r, "dense_2", v)
        if r.has("dense_3.weight"):
            v = linear(r, "dense_3", v)
        if dim:
            v = v[:dim]
        if normalize:
            n = np.linalg.norm(v)
            if n > 0:
                v = v / n
        out.append(v.tolist())
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    r = Reader(argv[1])
    with open(argv[2]) as f:
        req = json.load(f)
    vecs = forward(r, req["seqs"], req.get("types"), req.get("pool"),
                   req.get("normalize", True), req.get("dim", 0), req.get("rank_tokens"))
    json.dump({"vectors": vecs}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
