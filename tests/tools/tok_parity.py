#!/usr/bin/python3
"""tok_parity -- reference token ids for trove's tokenizers (src/embed/tokenizers/etok*).

    tok_parity.py OUTDIR [--shared DIR] [--lines N]

Builds three tokenizers from the shared corpora and writes, into OUTDIR:

  lines.txt          the test lines, one per line (UTF-8): ~4000 English
                     and Chinese corpus lines the models were not trained
                     on, 800 Japanese/Korean/German/French lines (a script
                     and accents they never saw) and hand-written edge
                     cases
  t5.gguf / t5.ids   a SentencePiece *unigram* model trained here with
                     Debian's python3-sentencepiece (nmt_nfkc charsmap,
                     extra-whitespace removal, user-defined symbols), stored
                     as tokenizer.ggml.model "t5"; the ids sentencepiece
                     gives for every line, with eos appended (add_eos)
  llama.gguf / .ids  a SentencePiece *BPE* model with byte_fallback,
                     identity normalisation and no whitespace removal (as
                     Llama/Gemma tokenizers are), stored as "llama"; ids
                     with bos prepended
  bert.gguf / .ids   an uncased WordPiece vocabulary built from corpus
                     words, stored with llama.cpp's GGUF conventions (word-
                     initial pieces "\\u2581"+piece, "##x" as "x"); ids from
                     the WordPiece reference below, framed [CLS] .. [SEP]
  bad_model.gguf     a vocabulary whose tokenizer.ggml.model is "gpt2"

.ids files hold one line of space-separated ids per line of lines.txt.
Exit status 77 means sentencepiece is not importable (the C test skips).

The WordPiece reference is written from the BERT paper / HF BertTokenizer
behaviour, independently of the C code: clean text (drop NUL, U+FFFD and
control characters, whitespace to a space), isolate CJK ideographs, split
on whitespace, lower-case + NFD + drop Mn, split off punctuation, then
greedy longest-match-first WordPiece with [UNK] for uncoverable words and
words over 100 characters.
"""
import argparse
import collections
import glob
import io
import os
import sys
import time
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGUFWriter  # noqa: E402

try:
    import sentencepiece as spm
except ImportError:
    print("tok_parity: python3-sentencepiece is not installed", file=sys.stderr)
    sys.exit(77)


# ---------------------------------------------------------------- corpus

def corpus_lines(shared, langs=("en", "zh"), cs_notes=True):
    root = os.path.join(shared, "corpora")
    sets = [os.path.join(root, "obsidian-help", lang) for lang in langs]
    if cs_notes:
        sets.append(os.path.join(root, "cs-notes-zh"))
    out = []
    for d in sets:
        for path in sorted(glob.glob(os.path.join(d, "**", "*.md"), recursive=True)):
            with open(path, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    line = line.rstrip("\n").replace("\r", "")
                    if line.strip():
                        out.append(line)
    return out


EDGE_LINES = [
    "  leading and trailing spaces  ",
    "many     inner      spaces\tand\ttabs",
    "\u3000全角空格\u3000和ＡＢＣ１２３全角字母",
    "ligatures \ufb01 \ufb02 and circled \u2460\u2461 and \u2163",
    "Café naïve résumé Ångström Œuvre ß straße",
    "combining e\u0301 and a\u0308 sequences",
    "emoji 😀🚀 and symbols ©®™ ∑∫√ ← → ⇒",
    "rare CJK 𠀀𠀁 龘 鱻 and kana カタカナ ひらがな 한국어",
    "[[wikilink]] and [[Another note|alias]] ]]",
    "code: `x = y[0] + f(z);` // comment #tag",
    "zero\u200bwidth\u200bspace and soft\u00adhyphen",
    "control\x01\x02chars\x7f here",
    "x" * 130,
    "supercalifragilisticexpialidocious" * 4,
    "   ",
    "ends with newline-like \u2028 separator",
    "数字123和English混合的句子，还有标点！？",
    "Ünïcödé ÜBER Straße ΑΒΓ αβγ Σίσυφος",
]


# ---------------------------------------------------------------- protobuf

def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """(field number, wire type, value) of a serialized protobuf message."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield fn, wt, v


def parse_model(proto):
    """pieces [(piece, score, type)] and normalizer facts of a ModelProto."""
    import struct
    pieces = []
    norm = {"charsmap": b"", "add_dummy_prefix": True, "remove_extra_whitespaces": True}
    for fn, _, v in _fields(proto):
        if fn == 1:
            piece, score, typ = "", 0.0, 1
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    piece = v2.decode("utf-8")
                elif f2 == 2:
                    score = struct.unpack("<f", v2)[0]
                elif f2 == 3:
                    typ = v2
            pieces.append((piece, score, typ))
        elif fn == 3:
            for f2, _, v2 in _fields(v):
                if f2 == 2:
                    norm["charsmap"] = bytes(v2)
                elif f2 == 3:
                    norm["add_dummy_prefix"] = bool(v2)
                elif f2 == 4:
                    norm["remove_extra_whitespaces"] = bool(v2)
    return pieces, norm


# ---------------------------------------------------------------- sentencepiece

def train(lines, model_type, **extra):
    spm.set_random_generator_seed(20251129)  # same sample, same model, every run
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buf, vocab_size=3000,
        model_type=model_type, num_threads=2, minloglevel=2,
        input_sentence_size=20000, shuffle_input_sentence=True,
        seed_sentencepiece_size=200000, user_defined_symbols=["[[", "]]"],
        **extra)
    return buf.getvalue()


def add_spm_kv(w, proto, model, add_bos, add_eos):
    """Store a SentencePiece model proto as GGUF tokenizer metadata the way
    llama.cpp's converter does; returns the sentencepiece processor."""
    pieces, norm = parse_model(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)
    w.add_kv("tokenizer.ggml.model", model)
    w.add_kv("tokenizer.ggml.tokens", [p for p, _, _ in pieces], "array:string")
    w.add_kv("tokenizer.ggml.scores", [s for _, s, _ in pieces], "array:float32")
    w.add_kv("tokenizer.ggml.token_type", [t for _, _, t in pieces], "array:int32")
    w.add_kv("tokenizer.ggml.bos_token_id", sp.bos_id(), "uint32")
    w.add_kv("tokenizer.ggml.eos_token_id", sp.eos_id(), "uint32")
    w.add_kv("tokenizer.ggml.unknown_token_id", sp.unk_id(), "uint32")
    w.add_kv("tokenizer.ggml.add_bos_token", add_bos, "bool")
    w.add_kv("tokenizer.ggml.add_eos_token", add_eos, "bool")
    w.add_kv("tokenizer.ggml.add_space_prefix", norm["add_dummy_prefix"], "bool")
    w.add_kv("tokenizer.ggml.remove_extra_whitespaces", norm["remove_extra_whitespaces"], "bool")
    if norm["charsmap"]:
        w.add_kv("tokenizer.ggml.precompiled_charsmap", norm["charsmap"], "array:uint8")
    return sp


def write_spm_gguf(path, proto, model, add_bos, add_eos):
    w = GGUFWriter(path)
    w.add_kv("general.architecture", "bert")
    sp = add_spm_kv(w, proto, model, add_bos, add_eos)
    w.write()
    return sp


# ---------------------------------------------------------------- WordPiece reference

def _is_ws(c):
    return c in " \t\n\r" or unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def _is_punct(c):
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(c):
    o = ord(c)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF
            or 0x2A700 <= o <= 0x2B73F or 0x2B740 <= o <= 0x2B81F or 0x2B820 <= o <= 0x2CEAF
            or 0xF900 <= o <= 0xFAFF or 0x2F800 <= o <= 0x2FA1F)


def basic_tokenize(text):
    cleaned = []
    for c in text:
        if ord(c) == 0 or ord(c) == 0xFFFD or _is_control(c):
            continue
        if _is_ws(c):
            cleaned.append(" ")
        elif _is_cjk(c):
            cleaned.append(" " + c + " ")
        else:
            cleaned.append(c)
    words = []
    for tok in "".join(cleaned).split(" "):
        if not tok:
            continue
        tok = unicodedata.normalize("NFD", tok.lower())
        tok = "".join(c for c in tok if unicodedata.category(c) != "Mn")
        cur = ""
        for c in tok:
            if _is_punct(c):
                if cur:
                    words.append(cur)
                words.append(c)
                cur = ""
            else:
                cur += c
        if cur:
            words.append(cur)
    return words


def wordpiece(word, vocab, unk):
    if len(word) > 100:
        return [unk]
    out, start = [], 0
    while start < len(word):
        end, cur = len(word), None
        while start < end:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                cur = vocab[sub]
                break
            end -= 1
        if cur is None:
            return [unk]
        out.append(cur)
        start = end
    return out


def build_wordpiece_vocab(lines):
    """Specials, frequent characters (word-initial and ##), frequent words
    and ##suffixes: a realistic uncased WordPiece vocabulary of ~4000."""
    words = collections.Counter()
    for line in lines:
        words.update(basic_tokenize(line))
    chars = collections.Counter()
    suffixes = collections.Counter()
    for w, n in words.items():
        for c in w:
            chars[c] += n
        for k in range(2, 5):
            if len(w) > k:
                suffixes[w[-k:]] += n
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    seen = set(vocab)

    def add(t):
        if t not in seen:
            seen.add(t)
            vocab.append(t)
    for c, n in chars.most_common():
        if n >= 3:  # rare characters stay out: their words become [UNK]
            add(c)
            add("##" + c)
    for s, _ in suffixes.most_common(400):
        add("##" + s)
    for w, _ in words.most_common(2500):
        add(w)
    return vocab


def phantom(tok):
    """llama.cpp's GGUF spelling of a WordPiece token (convert_hf_to_gguf)."""
    if tok.startswith("[") and tok.endswith("]") and tok in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        return tok
    if tok.startswith("##"):
        return tok[2:]
    return "\u2581" + tok


def write_bert_gguf(path, vocab):
    w = GGUFWriter(path)
    w.add_kv("general.architecture", "bert")
    w.add_kv("tokenizer.ggml.model", "bert")
    w.add_kv("tokenizer.ggml.tokens", [phantom(t) for t in vocab], "array:string")
    w.add_kv("tokenizer.ggml.token_type", [3 if i < 5 else 1 for i in range(len(vocab))], "array:int32")
    w.add_kv("tokenizer.ggml.unknown_token_id", 1, "uint32")
    w.add_kv("tokenizer.ggml.cls_token_id", 2, "uint32")
    w.add_kv("tokenizer.ggml.seperator_token_id", 3, "uint32")
    w.add_kv("tokenizer.ggml.padding_token_id", 0, "uint32")
    w.add_kv("tokenizer.ggml.mask_token_id", 4, "uint32")
    w.write()


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shared", default=os.environ.get("TROVE_SHARED_DIR", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")))
    ap.add_argument("--lines", type=int, default=4000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()

    lines = corpus_lines(a.shared)
    if len(lines) < 1000:
        # A clone without ../shared: the excerpt kept in the repo has the
        # same layout and enough text for the 3000-piece models.
        mini = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "fixtures", "shared-mini")
        print("tok_parity: no corpora under %s; using fixtures/shared-mini" % a.shared,
              file=sys.stderr)
        a.shared = mini
        lines = corpus_lines(a.shared)
    if len(lines) < 1000:
        print("tok_parity: corpora not found under %s" % a.shared, file=sys.stderr)
        return 1
    # every 5th line is held out for testing; the rest is training text
    held = [l for i, l in enumerate(lines) if i % 5 == 0]
    trainl = [l for i, l in enumerate(lines) if i % 5 != 0]
    step = max(1, len(held) // a.lines)
    # languages the models never saw: unknown characters, byte fallback,
    # accents, Hangul (which NFD decomposes) and kana
    foreign = corpus_lines(a.shared, ("ja", "ko", "de", "fr"), cs_notes=False)
    test = held[::step][:a.lines] + foreign[::max(1, len(foreign) // 800)][:800] + EDGE_LINES
    with open(os.path.join(a.out, "lines.txt"), "w", encoding="utf-8", newline="\n") as fh:
        for l in test:
            assert "\n" not in l
            fh.write(l + "\n")

    def write_ids(name, rows):
        with open(os.path.join(a.out, name + ".ids"), "w") as fh:
            for r in rows:
                fh.write(" ".join(map(str, r)) + "\n")

    proto = train(trainl, "unigram")
    sp = write_spm_gguf(os.path.join(a.out, "t5.gguf"), proto, "t5", False, True)
    write_ids("t5", [sp.encode(l, add_eos=True) for l in test])

    proto = train(trainl, "bpe", byte_fallback=True, normalization_rule_name="identity",
                  remove_extra_whitespaces=False, split_digits=True)
    sp = write_spm_gguf(os.path.join(a.out, "llama.gguf"), proto, "llama", True, False)
    write_ids("llama", [sp.encode(l, add_bos=True) for l in test])

    vocab = build_wordpiece_vocab(trainl[::2])
    write_bert_gguf(os.path.join(a.out, "bert.gguf"), vocab)
    ids = {t: i for i, t in enumerate(vocab)}
    rows = []
    for l in test:
        r = [2]
        for wd in basic_tokenize(l):
            r += wordpiece(wd, ids, 1)
        rows.append(r + [3])
    write_ids("bert", rows)

    w = GGUFWriter(os.path.join(a.out, "bad_model.gguf"))
    w.add_kv("tokenizer.ggml.model", "gpt2")
    w.add_kv("tokenizer.ggml.tokens", ["a", "b"], "array:string")
    w.write()

    print("tok_parity: %d test lines, %d training lines, %.1f s" % (len(test), len(trainl), time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
