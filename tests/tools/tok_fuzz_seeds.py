#!/usr/bin/python3
"""tok_fuzz_seeds -- write the seed inputs of fuzz/fuzz_etok.c.

    tok_fuzz_seeds.py fuzz/seeds/etok

Layout of a seed (see fuzz_etok.c): flags byte, 4-byte charsmap length,
charsmap, count of extra pieces, pieces as (len, type, score, bytes), text.
The charsmap comes from sentencepiece itself, compiled from a handful of
custom normalisation rules, so that it is small enough for mutations to
stay inside the fuzz driver's 64 KiB buffer (the full nmt_nfkc charsmap,
237 KB, is exercised by tests/unit/test_etok.c's parity test).
"""
import io
import os
import struct
import sys
import tempfile

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tok_parity import parse_model  # noqa: E402

TEXT = ["Ａｂｃ ﬁne ① the  你好 [[a]] ab", "the ab\t\tba  é 😀 \x01 \xa0x",
        "Hello, World! Café naïve 你好世界", "ab" * 40]


def charsmap(rules):
    lines = ["the ab ba a b %d 你好 [[x]] Hello World Café ①" % i for i in range(300)]
    kw = dict(sentence_iterator=iter(lines), model_writer=io.BytesIO(), vocab_size=40,
              model_type="unigram", minloglevel=2, hard_vocab_limit=False)
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", encoding="utf-8") as fh:
        for src, dst in rules:
            fh.write(" ".join("%X" % ord(c) for c in src) + "\t" +
                     " ".join("%X" % ord(c) for c in dst) + "\n")
        fh.flush()
        kw["normalization_rule_tsv"] = fh.name
        spm.SentencePieceTrainer.train(**kw)
    return parse_model(kw["model_writer"].getvalue())[1]["charsmap"]


def seed(flags, cmap, pieces, text):
    out = bytes([flags]) + struct.pack("<I", len(cmap)) + cmap + bytes([len(pieces)])
    for p, ty, sc in pieces:
        b = p.encode("utf-8")
        out += bytes([len(b), ty, sc]) + b
    return out + text.encode("utf-8")


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    small = charsmap([("Ａ", "A"), ("ｂ", "b"), ("ｃ", "c"), ("ﬁ", "fi"), ("①", "1"),
                      ("\u00a0", " "), ("é", "e")])
    extra = [("\u2581ab", 1, 3), ("ba", 5, 9), ("\u2581t", 4, 1), ("he", 1, 2), ("<0x41>", 6, 0)]
    seeds = {
        "t5_small_charsmap": seed(1 | 4, small, extra, TEXT[0]),
        "t5_keep_ws": seed(1 | 32, small, [], TEXT[1]),
        "llama_bytes": seed(2 | 16 | 8, b"", extra, TEXT[1]),
        "llama_long": seed(2, b"", extra, TEXT[3]),
        "bert": seed(0, b"", [("\u2581hello", 1, 0), ("\u2581world", 1, 0), (",", 1, 0)], TEXT[2]),
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as fh:
            fh.write(data)
    print("tok_fuzz_seeds: %d seeds, charsmap of %d bytes" % (len(seeds), len(small)))


if __name__ == "__main__":
    main()
