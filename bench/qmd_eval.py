#!/usr/bin/python3
"""hit@1 / hit@3 of `trove search` on the qmd-notes eval set.

    /usr/bin/python3 bench/qmd_eval.py                  # ../shared/eval/qmd-notes
    /usr/bin/python3 bench/qmd_eval.py --check          # exit 1 below target
    /usr/bin/python3 bench/qmd_eval.py --queries eval-deep-research.jsonl
    /usr/bin/python3 bench/qmd_eval.py --queries eval-deep-research.jsonl \
        --model "$(bash scripts/glove-model.sh)"            # hybrid

Indexes DATASET/docs into a fresh index (temporary TROVE_INDEX and
TROVE_CONFIG_DIR), runs every query of the queries file (JSON lines with
"query", "expected_doc", "difficulty") as `trove search --json -n 10`, and
reports the queries that returned nothing, hit@1, hit@3 and MRR@10 overall and
per difficulty, plus every query whose expected note is not first.

A result matches when its path equals expected_doc, or equals it once ".md"
is added, or (for an expected_doc without ".md") is part of the file name
(eval-deep-research.jsonl names documents by a fragment, e.g.
"distributed-systems", which matches "distributed-systems-overview.md").

Target in the issue (keyword channels only): every query returns results and
hit@3 >= 0.9 on queries-eval-test.jsonl. --check turns that into the exit
status. Standard library only.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def matches(path, expected):
    name = path.rsplit("/", 1)[-1]
    if name == expected or name == expected + ".md" or path == expected:
        return True
    return not expected.endswith(".md") and expected in name[:-3]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dataset", nargs="?", type=Path,
                    default=REPO.parent / "shared" / "eval" / "qmd-notes")
    ap.add_argument("--queries", default="queries-eval-test.jsonl",
                    help="queries file inside the dataset (or a path)")
    ap.add_argument("--trove", default=os.environ.get(
        "TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--extra", default="", help="extra search flags")
    ap.add_argument("--model", help="embedding model (GGUF file or model2vec "
                    "folder): `update` embeds with it and searches are hybrid "
                    "(default: $TROVE_EMBED_MODEL; none: keyword channels)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every query has results and "
                         "hit@3 >= 0.9")
    ap.add_argument("--json", metavar="FILE",
                    help="also write the numbers as JSON ('-' for stdout)")
    args = ap.parse_args()

    trove = str(Path(args.trove).resolve())
    if not os.access(trove, os.X_OK):
        sys.exit("trove binary not found: %s" % trove)
    docs = args.dataset / "docs"
    qfile = Path(args.queries)
    if not qfile.is_file():
        qfile = args.dataset / args.queries
    queries = [json.loads(ln) for ln in qfile.read_text().splitlines()
               if ln.strip()]

    tmp = Path(tempfile.mkdtemp(prefix="trove-qmd-"))
    try:
        snap = tmp / "trove"
        shutil.copy2(trove, snap)
        env = dict(os.environ, TROVE_INDEX=str(tmp / "index.db"),
                   TROVE_CONFIG_DIR=str(tmp / "config"),
                   XDG_CACHE_HOME=str(tmp / "cache"),
                   XDG_CONFIG_HOME=str(tmp / "xdg-config"), NO_COLOR="1")
        if args.model:
            env["TROVE_EMBED_MODEL"] = str(Path(args.model).resolve())

        def run(cmd):
            return subprocess.run([str(snap)] + cmd, env=env,
                                  capture_output=True, text=True)

        for cmd in (["collection", "add", str(docs.resolve()), "--name",
                     "qmd"], ["update"]):
            p = run(cmd)
            if p.returncode != 0:
                sys.exit("trove %s failed (%d): %s" % (" ".join(cmd),
                                                       p.returncode, p.stderr))
        extra = shlex.split(args.extra)
        rows = []
        for q in queries:
            cmd = ["search", "--json", "-n", "10"] + extra
            if q["query"].startswith("-"):
                cmd.append("--")
            t0 = time.perf_counter()
            p = run(cmd + [q["query"]])
            ms = (time.perf_counter() - t0) * 1000
            paths, err = [], None
            if p.returncode != 0:
                err = "exit %d: %s" % (p.returncode, p.stderr.strip()[:200])
            else:
                paths = [r["path"] for r in json.loads(p.stdout)["results"]]
            rank = next((i + 1 for i, x in enumerate(paths)
                         if matches(x, q["expected_doc"])), None)
            rows.append({"query": q["query"], "expected": q["expected_doc"],
                         "difficulty": q.get("difficulty", "-"),
                         "rank": rank, "n_results": len(paths),
                         "top": paths[:3], "error": err, "ms": ms})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def summary(rs):
        n = len(rs)
        return {
            "queries": n,
            "no_results": sum(1 for r in rs if r["n_results"] == 0),
            "hit@1": sum(1 for r in rs if r["rank"] == 1) / n if n else 0,
            "hit@3": sum(1 for r in rs if r["rank"] and r["rank"] <= 3) / n
            if n else 0,
            "mrr@10": sum(1 / r["rank"] for r in rs if r["rank"]) / n
            if n else 0,
        }

    groups = {}
    for r in rows:
        groups.setdefault(r["difficulty"], []).append(r)
    order = [d for d in ("easy", "medium", "hard", "fusion") if d in groups]
    order += sorted(d for d in groups if d not in order)
    out = {"dataset": str(args.dataset), "queries_file": str(qfile),
           "extra": args.extra, "model": os.environ.get("TROVE_EMBED_MODEL")
           if not args.model else str(Path(args.model).resolve()), "overall": summary(rows),
           "by_difficulty": {d: summary(groups[d]) for d in order},
           "rows": rows}

    print("# /usr/bin/python3 bench/qmd_eval.py " + shlex.join(sys.argv[1:]))
    print("%s: %d queries over %d notes"
          % (qfile, len(rows), len(list(docs.glob("*.md")))))
    print()
    print("| difficulty | queries | no results | hit@1 | hit@3 | MRR@10 |")
    print("|------------|---------|------------|-------|-------|--------|")
    for name, s in [(d, out["by_difficulty"][d]) for d in order] + \
            [("overall", out["overall"])]:
        print("| %-10s | %7d | %10d | %.3f | %.3f | %.3f  |"
              % (name, s["queries"], s["no_results"], s["hit@1"],
                 s["hit@3"], s["mrr@10"]))
    misses = [r for r in rows if r["rank"] != 1]
    if misses:
        print()
        print("not first:")
        for r in misses:
            print("  [%s] %r -> expected %s at %s; top: %s%s"
                  % (r["difficulty"], r["query"], r["expected"],
                     r["rank"] or "-", ", ".join(r["top"]) or "(nothing)",
                     "  ERROR " + r["error"] if r["error"] else ""))
    if args.json:
        s = json.dumps(out, indent=2)
        if args.json == "-":
            print(s)
        else:
            Path(args.json).write_text(s + "\n")
    ok = out["overall"]["no_results"] == 0 and out["overall"]["hit@3"] >= 0.9
    if args.check:
        print()
        print("check: %s (every query has results and hit@3 >= 0.9)"
              % ("PASS" if ok else "FAIL"))
        return 0 if ok else 1
    return 1 if any(r["error"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
