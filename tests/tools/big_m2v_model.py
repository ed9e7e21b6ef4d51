#!/usr/bin/python3
"""big_m2v_model -- a model2vec folder of the default model's shape
(potion-multilingual-128M: 500,353 Unigram pieces x 256 F32, ~0.5 GB), with
seeded random vectors, for timing and testing trove's static backend at
that size (docs/performance.md, "The default model, cold").

    /usr/bin/python3 tests/tools/big_m2v_model.py OUT_DIR [--shared DIR] [--pieces N]

OUT_DIR receives model.safetensors ("embeddings" F32 [N, 256]),
tokenizer.json and config.json (normalize: true), the layout m2v.c reads.
The tokenizer is what model2vec's distiller writes for its Unigram models
(tests/e2e/test_model_static.py unigram_json: BertNormalizer, punctuation
spacing, a whitespace squeeze, a right strip, Metaspace without
splitting; word-initial pieces carry the metaspace, scores
log(len + starts-with-metaspace) normalised). Its pieces: every word and
character of the shared corpora (tldr pages, Obsidian help in six
languages, the Chinese CS notes; words under 16 characters, as
sentencepiece bounds the base vocabulary's pieces) when --shared names them, then seeded
generated pieces up to N (default 500,353); without the corpora the
pieces are generated only (the same shape, other words). The real model's
Precompiled (sentencepiece charsmap) normalizer is not reproduced: no such
charsmap is available offline.

Written into a temporary folder and renamed, so an interrupted run leaves
nothing half-made. Uses numpy only."""
import argparse
import json
import os
import re
import shutil
import struct
import sys
import tarfile

import numpy as np

N_PIECES = 500_353
DIM = 256
SEED = 20
META = "\u2581"
# sentencepiece's default max_sentencepiece_length, which bounds the pieces
# of XLM-R/bge-m3, the base of the real model's vocabulary: corpus words
# longer than this (runs of Thai or Japanese with no spaces) are left out
MAX_CHARS = 16
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
WORD = re.compile(r"[^\W\d_]+|\d+")
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def corpus_texts(shared):
    """Every markdown text of the shared corpora (tldr from its tarball)."""
    corp = os.path.join(shared, "corpora")
    for sub in ("obsidian-help", "cs-notes-zh"):
        for root, _, files in sorted(os.walk(os.path.join(corp, sub))):
            for f in sorted(files):
                if f.endswith(".md"):
                    with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                        yield fh.read()
    tgz = os.path.join(corp, "tldr-pages.tar.gz")
    if os.path.exists(tgz):
        with tarfile.open(tgz) as tf:
            for m in tf:
                if m.isfile() and m.name.endswith(".md"):
                    yield tf.extractfile(m).read().decode("utf-8", "replace")


def corpus_pieces(shared):
    """Words (lower-cased, as BertNormalizer leaves them) and characters of
    the corpora, most frequent first."""
    counts = {}
    for text in corpus_texts(shared):
        for w in WORD.findall(text.lower()):
            if CJK.search(w):  # BertNormalizer spaces CJK characters apart
                for c in CJK.findall(w):
                    counts[c] = counts.get(c, 0) + 1
                w = CJK.sub(" ", w)
                for part in w.split():
                    counts[part] = counts.get(part, 0) + 1
            else:
                counts[w] = counts.get(w, 0) + 1
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def generated(rng, n, seen):
    """n new pieces: seeded syllable strings, word-initial or continuation."""
    cons = list("bcdfghjklmnprstvwxz") + ["ch", "sh", "th", "st", "tr", "pl", "qu"]
    vow = list("aeiou") + ["ai", "ou", "ea", "io"]
    out = []
    while len(out) < n:
        k = int(rng.integers(1, 5))
        s = "".join(cons[rng.integers(len(cons))] + vow[rng.integers(len(vow))] for _ in range(k))
        if rng.random() < 0.3:
            s += cons[rng.integers(len(cons))]
        t = META + s if rng.random() < 0.6 else s
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


def pieces(shared, n):
    toks = ["[PAD]", "[UNK]", META]
    seen = set(toks)

    def add(t):
        if t not in seen and len(toks) < n:
            seen.add(t)
            toks.append(t)

    # every ASCII letter, digit and punctuation mark, word-initial and not
    for c in "abcdefghijklmnopqrstuvwxyz0123456789" + PUNCT:
        add(META + c)
        add(c)
    if shared:
        for w in corpus_pieces(shared):
            if len(w) >= MAX_CHARS:
                continue
            add(META + w)
            if len(w) == 1:
                add(w)
    rng = np.random.default_rng(SEED)
    toks += generated(rng, n - len(toks), seen)
    return toks


def unigram_tokenizer_json(toks):
    """The tokenizer.json model2vec's distiller writes for a Unigram model
    over pieces toks (with "[PAD]" and "[UNK]" among them): scores
    log(len + starts-with-metaspace) normalised; the base normalizer
    (BertNormalizer here) followed by punctuation spacing, a whitespace
    squeeze and a right strip; Metaspace without splitting. Shared with
    tests/e2e/test_model_static.py."""
    wts = np.array([len(t) + int(t.startswith(META)) for t in toks], np.float64)
    logp = np.log(wts / wts.sum())
    norms = [{"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
              "strip_accents": None, "lowercase": True}]
    norms += [{"type": "Replace", "pattern": {"String": c}, "content": " %s " % c} for c in PUNCT]
    norms += [{"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
              {"type": "Strip", "strip_left": False, "strip_right": True}]
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": toks.index(t), "content": t, "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": True} for t in ("[PAD]", "[UNK]")],
            "normalizer": {"type": "Sequence", "normalizers": norms},
            # add_prefix_space: the legacy key, redundant for HF (prepend_scheme
            # decides), which transformers.js needs to prepend at all
            "pre_tokenizer": {"type": "Metaspace", "replacement": META, "add_prefix_space": True,
                              "prepend_scheme": "always", "split": False},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 0}}],
                               "special_tokens": {}},
            "decoder": None,
            "model": {"type": "Unigram", "unk_id": toks.index("[UNK]"), "byte_fallback": False,
                      "vocab": [[t, float(p)] for t, p in zip(toks, logp)]}}


def write_safetensors(path, n, dim, rng):
    header = {"embeddings": {"dtype": "F32", "shape": [n, dim],
                             "data_offsets": [0, n * dim * 4]}}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for i in range(0, n, 65536):  # row blocks: bounded memory
            rows = min(65536, n - i)
            f.write(rng.standard_normal((rows, dim), dtype=np.float32).tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shared", help="the shared material folder (../shared)")
    ap.add_argument("--pieces", type=int, default=N_PIECES)
    a = ap.parse_args()
    toks = pieces(a.shared, a.pieces)
    tmp = a.out + ".tmp%d" % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        with open(os.path.join(tmp, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(unigram_tokenizer_json(toks), f, ensure_ascii=False)
        write_safetensors(os.path.join(tmp, "model.safetensors"), len(toks), DIM,
                          np.random.default_rng(SEED + 1))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump({"model_type": "model2vec", "normalize": True, "hidden_dim": DIM,
                       "tokenizer_name": "trove test: potion-multilingual-128M shape"}, f)
        shutil.rmtree(a.out, ignore_errors=True)
        os.rename(tmp, a.out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print("big_m2v_model: %d pieces x %d F32 -> %s" % (len(toks), DIM, a.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
