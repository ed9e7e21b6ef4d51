#!/usr/bin/python3
"""Held-out queries for the two-stage vector scan's recall at 1M (session
35, w-vec1m2): lines drawn at random (fixed seed) from the 1M vault's own
notes, the tldr pages, the Obsidian help (every language) and the Chinese
cs-notes, none of them in /work/scale1m/queries.txt.

    /usr/bin/python3 bench/vec_heldout.py [--n 200] [--seed 35] > heldout.txt

A line is a query when it has 3 to 80 characters of text after markdown
markup is stripped (headings, list marks, code fences and links).
"""
import argparse
import glob
import os
import random
import re
import tarfile

SHARED = os.environ.get("TROVE_SHARED_DIR", "/work/shared")


def clean(line):
    line = line.strip()
    if line.startswith("```") or line.startswith("|") or line.startswith("---"):
        return ""
    line = re.sub(r"^[#>\-*+\d. ]+", "", line)
    line = re.sub(r"\[\[([^]|]*)(\|[^]]*)?\]\]", r"\1", line)
    line = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", line)
    line = re.sub(r"[`*_{}]", "", line).strip()
    return line if 3 <= len(line) <= 80 else ""


def lines_of(texts):
    out = []
    for t in texts:
        out += [c for c in (clean(x) for x in t.splitlines()) if c]
    return out


def read(paths):
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            yield f.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=35)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    seen = {l.strip() for l in open("/work/scale1m/queries.txt", encoding="utf-8")}
    vault = sorted(glob.glob("/work/scale1m/vault/*/*.md"))
    pools = []
    pools.append(lines_of(read(rnd.sample(vault, 400))))
    tl = []
    with tarfile.open(os.path.join(SHARED, "corpora/tldr-pages.tar.gz")) as tf:
        names = sorted(m.name for m in tf.getmembers() if m.name.endswith(".md"))
        for n in rnd.sample(names, 300):
            tl.append(tf.extractfile(n).read().decode("utf-8", "replace"))
    pools.append(lines_of(tl))
    pools.append(lines_of(read(sorted(glob.glob(os.path.join(SHARED, "corpora/obsidian-help/*/**/*.md"), recursive=True)))))
    pools.append(lines_of(read(sorted(glob.glob(os.path.join(SHARED, "corpora/cs-notes-zh/*.md"))))))
    shares = [0.3, 0.25, 0.25, 0.2]
    out = []
    for pool, share in zip(pools, shares):
        pool = sorted(set(pool) - seen)
        out += rnd.sample(pool, int(round(a.n * share)))
    for q in out[:a.n]:
        print(q)


if __name__ == "__main__":
    main()
