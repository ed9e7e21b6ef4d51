#!/usr/bin/python3
"""ref_generate -- greedy generation with the numpy reference Qwen3 decoder
(ref_forward.qwen3_hidden), to check trove's `model generate`.

No key/value cache on purpose: every step runs the whole sequence again
from the token ids, so a cache that drops, shifts or mis-positions a row in
the engine shows up as a different token. The language-model head is
output.weight, else token_embd (tied), in float64; the next token is the
argmax (numpy's: the lowest id on a tie).

Usage:
  ref_generate.py MODEL.gguf STEPS ID [ID...]    prints {"ids": [...]}
  (also prints "margins": the gap between the best and second-best logit
   at each step, so a test can tell a genuine near-tie from a defect)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_forward  # noqa: E402


def greedy(r, prompt, steps):
    head = r.t("output.weight") if r.has("output.weight") else r.t("token_embd.weight")
    seq = list(prompt)
    out, margins = [], []
    for _ in range(steps):
        h = ref_forward.qwen3_hidden(r, seq)[-1]
        logits = head @ h
        best = int(np.argmax(logits))
        top2 = np.partition(logits, -2)[-2:]
        margins.append(float(abs(top2[1] - top2[0])))
        out.append(best)
        seq.append(best)
    return out, margins


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    r = ref_forward.Reader(argv[1])
    ids, margins = greedy(r, [int(x) for x in argv[3:]], int(argv[2]))
    json.dump({"ids": ids, "margins": margins}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
