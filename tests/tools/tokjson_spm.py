#!/usr/bin/python3
"""tokjson_spm -- a Unigram tokenizer.json and its reference ids from
sentencepiece, for tests/unit/test_tokjson.c.

    tokjson_spm.py OUTDIR FIXTURE_JSON [--shared DIR]

Trains a SentencePiece unigram model on the shared corpora (as
tok_parity.py does: nmt_nfkc charsmap, extra-whitespace removal, byte
fallback off) and writes into OUTDIR:

  tokenizer.json  the model in HF's layout, as its SentencePiece converter
                  builds it: Precompiled(charsmap) + Strip + Replace(" {2,}",
                  " ") normalizer (sentencepiece's whitespace rules),
                  Metaspace(prepend always, split) pre-tokenizer, Unigram
                  model with every piece's score and the unk id, control
                  pieces as special added tokens
  lines.json      the test lines (held-out corpus lines, Japanese/Korean/
                  German/French lines, the fixture's cases)
  ids.json        {"ids": [...]}: sentencepiece's ids of every line

Exit status 77 means sentencepiece is not importable (the C test skips).
"""
import argparse
import base64
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import sentencepiece as spm
except ImportError:
    sys.exit(77)
import tok_parity  # noqa: E402  (corpus reading, model proto parsing)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("fixture")
    ap.add_argument("--shared", default=os.environ.get("TROVE_SHARED_DIR", "../shared"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    lines = tok_parity.corpus_lines(a.shared)
    if len(lines) < 1000:
        print("tokjson_spm: corpora not found under %s" % a.shared, file=sys.stderr)
        return 3
    held = [l for i, l in enumerate(lines) if i % 5 == 0]
    trainl = [l for i, l in enumerate(lines) if i % 5 != 0]
    foreign = tok_parity.corpus_lines(a.shared, ("ja", "ko", "de", "fr"), cs_notes=False)
    with open(a.fixture, encoding="utf-8") as fh:
        fixture = json.load(fh)
    test = held[:: max(1, len(held) // 2000)][:2000] + foreign[:: max(1, len(foreign) // 500)][:500]
    test += tok_parity.EDGE_LINES + fixture
    # HF matches the control pieces (<unk>, <s>, </s>) in text as special
    # added tokens; sentencepiece reads them as text: not comparable
    test = [l for l in test if not any(c in l for c in ("<unk>", "<s>", "</s>"))]

    spm.set_random_generator_seed(20251129)
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(trainl), model_writer=buf, vocab_size=3000, model_type="unigram",
        num_threads=2, minloglevel=2, input_sentence_size=20000, shuffle_input_sentence=True,
        seed_sentencepiece_size=200000)
    proto = buf.getvalue()
    pieces, norm = tok_parity.parse_model(proto)
    sp = spm.SentencePieceProcessor(model_proto=proto)

    unk_id = next(i for i, p in enumerate(pieces) if p[2] == 2)
    added = [{"id": i, "content": p[0], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, p in enumerate(pieces) if p[2] in (2, 3)]
    tok = {
        "version": "1.0",
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled",
             "precompiled_charsmap": base64.b64encode(norm["charsmap"]).decode("ascii")},
            {"type": "Strip", "strip_left": True, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "Unigram", "unk_id": unk_id, "byte_fallback": False,
                  "vocab": [[p[0], p[1]] for p in pieces]},
    }
    with open(os.path.join(a.out, "tokenizer.json"), "w", encoding="utf-8") as fh:
        json.dump(tok, fh, ensure_ascii=False)
    with open(os.path.join(a.out, "lines.json"), "w", encoding="utf-8") as fh:
        json.dump(test, fh, ensure_ascii=False)
    with open(os.path.join(a.out, "ids.json"), "w") as fh:
        json.dump({"ids": [sp.encode(l) for l in test]}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
