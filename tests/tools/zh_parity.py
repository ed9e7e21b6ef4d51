#!/usr/bin/python3
"""Agreement of `trove tokenize` with python3-jieba on Chinese text.

    /usr/bin/python3 tests/tools/zh_parity.py [--trove build/trove] FILE|DIR|TAR.GZ ...

For every text, jieba (HMM on) gives its `cut` and `cut_for_search` tokens
(jieba.tokenize with mode "default" and "search"); only tokens made of
jieba's Han characters (U+4E00..U+9FD5) count, since trove leaves Latin
words, digits and punctuation to its own word rules. `trove tokenize
--query -` (the cut: no words inside words) must reproduce each jieba cut
token exactly (same byte span), and `trove tokenize -` (the index terms)
must contain each cut_for_search token. Prints both rates as JSON:
{"cut": {"jieba": N, "matched": M, "rate": R}, "search": {...}}.

Large inputs are sampled: at most --max-bytes per file, --max-files files
per source (every k-th file of a sorted listing). Standard library and
python3-jieba only.
"""
import argparse
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

HAN = re.compile("^[\u4E00-\u9FD5]+$")


def texts_of(src, max_files, max_bytes):
    p = Path(src)
    items = []
    if p.is_file() and p.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(p) as tf:
            members = sorted((m for m in tf.getmembers()
                              if m.isfile() and m.name.endswith(".md")),
                             key=lambda m: m.name)
            step = max(1, len(members) // max_files) if max_files else 1
            for m in members[::step][:max_files or None]:
                items.append((m.name, tf.extractfile(m).read()[:max_bytes]))
    elif p.is_dir():
        files = sorted(x for x in p.rglob("*.md") if x.is_file())
        step = max(1, len(files) // max_files) if max_files else 1
        for f in files[::step][:max_files or None]:
            items.append((str(f), f.read_bytes()[:max_bytes]))
    else:
        items.append((str(p), p.read_bytes()[:max_bytes]))
    for name, raw in items:
        yield name, raw.decode("utf-8", errors="ignore")


def trove_spans(trove, text, query):
    args = [trove, "tokenize"] + (["--query"] if query else []) + ["-"]
    out = subprocess.run(args, input=text.encode("utf-8"), capture_output=True,
                         check=True).stdout.decode("utf-8")
    spans = set()
    for line in out.splitlines():
        parts = line.rsplit("\t", 2)
        if len(parts) == 3:
            spans.add((int(parts[1]), int(parts[2])))
    return spans


def jieba_spans(jieba, text, mode):
    # char offset -> byte offset
    offs = [0]
    for ch in text:
        offs.append(offs[-1] + len(ch.encode("utf-8")))
    return [(offs[s], offs[e]) for w, s, e in jieba.tokenize(text, mode=mode)
            if HAN.match(w)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--trove", default=str(Path(__file__).resolve().parents[2]
                                           / "build" / "trove"))
    ap.add_argument("--max-files", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=1 << 30)
    ap.add_argument("--show", type=int, default=0,
                    help="print up to N mismatched cut tokens")
    a = ap.parse_args()
    import jieba
    jieba.setLogLevel(60)
    res = {"cut": [0, 0], "search": [0, 0], "bytes": 0, "files": 0}
    shown = 0
    for src in a.sources:
        for name, text in texts_of(src, a.max_files, a.max_bytes):
            res["bytes"] += len(text.encode("utf-8"))
            res["files"] += 1
            cut = jieba_spans(jieba, text, "default")
            mine = trove_spans(a.trove, text, True)
            res["cut"][0] += len(cut)
            for sp in cut:
                if sp in mine:
                    res["cut"][1] += 1
                elif shown < a.show:
                    shown += 1
                    b = text.encode("utf-8")
                    print("miss %s: %s in ...%s..." % (
                        name, b[sp[0]:sp[1]].decode(),
                        b[max(0, sp[0] - 12):sp[1] + 12].decode(errors="replace")),
                        file=sys.stderr)
            search = jieba_spans(jieba, text, "search")
            mine_all = trove_spans(a.trove, text, False)
            res["search"][0] += len(search)
            res["search"][1] += sum(1 for sp in search if sp in mine_all)
    out = {"files": res["files"], "bytes": res["bytes"]}
    for k in ("cut", "search"):
        n, m = res[k]
        out[k] = {"jieba": n, "matched": m, "rate": (m / n) if n else 1.0}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
