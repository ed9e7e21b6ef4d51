#!/usr/bin/python3
"""What the two-stage vector scan (--vector-scan two-stage) costs in results:
each query answered exactly and in two stages by one trove binary, through a
daemon the caller started on the index (the two-stage scan needs the
daemon's resident vectors), and the answers compared.

    /usr/bin/python3 bench/vec_recall.py BIN [--cands 4,16,64] [--max 50]
        QFILE...

QFILE: one query a line, or JSON lines with "query" or "text" (eval sets'
queries.jsonl); --max takes the first N of each file. Printed per run
(vsearch -n 10, vsearch -n 200, hybrid search -n 10) and candidates
multiple: the recall of the exact answer's notes (mean over queries), the
share of queries whose answer is identical (notes, order and scores), and
the two-stage answers' median wall time against the exact ones'.
Tie-aware recall (vsearch, whose scores are the notes' exact cosines in
both answers): a two-stage note counts when its score equals or beats the
exact answer's last (a near-duplicate note tied with it), not only when it
is one of the exact answer's notes. --runs picks the runs (default all
three: vsearch10,vsearch200,search10).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def load_queries(path, most):
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            d = json.loads(line)
            line = d.get("query") or d.get("text") or ""
        if line:
            out.append(line)
        if most and len(out) >= most:
            break
    return out


def ask(trove, args, q):
    t = time.perf_counter()
    p = subprocess.run([trove] + args + ["--json", "--", q], capture_output=True)
    ms = (time.perf_counter() - t) * 1000
    if p.returncode:
        sys.exit("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()[:300]))
    res = json.loads(p.stdout).get("results", [])
    return [(r["docid"], r.get("score")) for r in res], ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("qfiles", nargs="+")
    ap.add_argument("--cands", default="4,16,64")
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("--runs", default="vsearch10,vsearch200,search10")
    a = ap.parse_args()
    qs = []
    for f in a.qfiles:
        qs += load_queries(f, a.max)
    runs = [("vsearch -n 10", ["vsearch", "-n", "10"], "vsearch10"),
            ("vsearch -n 200", ["vsearch", "-n", "200"], "vsearch200"),
            ("search -n 10", ["search", "-n", "10"], "search10")]
    runs = [(n, r) for n, r, key in runs if key in a.runs.split(",")]
    cands = [int(c) for c in a.cands.split(",")]
    print("%d queries" % len(qs))
    for name, args in runs:
        exact, ems = [], []
        for q in qs:
            r, ms = ask(a.bin, args + ["--vector-scan", "exact"], q)
            exact.append(r)
            ems.append(ms)
        for c in cands:
            rec, tie, same, tms = [], [], 0, []
            for q, e in zip(qs, exact):
                r, ms = ask(a.bin, args + ["--vector-scan", "two-stage",
                                           "--vector-candidates", str(c)], q)
                tms.append(ms)
                got = {d for d, _ in r}
                if e:
                    rec.append(sum(1 for d, _ in e if d in got) / len(e))
                    last = e[-1][1]
                    ed = {d for d, _ in e}
                    tie.append(min(1.0, sum(1 for d, sc in r if d in ed or
                                            (sc is not None and last is not None and sc >= last))
                                   / len(e)))
                same += r == e
            print("%-15s x%-3d recall %.4f  tie-aware %.4f  identical %d/%d  "
                  "wall p50 %.1f ms (exact %.1f)" %
                  (name, c, statistics.mean(rec) if rec else 1.0,
                   statistics.mean(tie) if tie else 1.0, same, len(qs),
                   statistics.median(tms), statistics.median(ems)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
