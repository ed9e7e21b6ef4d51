#!/usr/bin/python3
"""The whole quality table: every eval set x {search --no-vector, search,
query} x {no model, GloVe, GloVe + a random-weight reranker}.

    /usr/bin/python3 bench/eval_all.py                      # every set, every query
    /usr/bin/python3 bench/eval_all.py --sets qmd-test,qmd-deep,cranfield
    /usr/bin/python3 bench/eval_all.py --sample 300 --sets drcd    # iterating
    /usr/bin/python3 bench/eval_all.py --json table.json

Sets (TROVE_SHARED_DIR, default ../shared, holds eval/): qmd-test and
qmd-deep (qmd-notes' queries-eval-test.jsonl and eval-deep-research.jsonl,
one expected note per query), scifact (scifact-train, train qrels),
cranfield, drcd (drcd-zh-tw). Each set is indexed once, with the GloVe
test model's vectors (scripts/glove-model.sh); the keyword channels ignore
them, and a run "without a model" searches with no embedding model set.

Runs per query (one `trove CMD --json -n 10` process each, answered by a
daemon started for the set's index, so model and dictionary load once;
the daemon's answers are byte-for-byte the cold CLI's, docs/daemon.md):

    none    search            keyword channels (no model)
    none    query             expansion + lexical re-scorer, keyword channels
    glove   search --no-vector keyword channels
    glove   search            hybrid (BM25 + title + GloVe vectors)
    glove   query             hybrid variants + lexical re-scorer
    rerank  query --reranker R hybrid variants + a random-weight cross-encoder
                              (tests/tools/make_models.py's tiny-ms-marco-reranker:
                              the mechanics of the blend with a model that
                              knows nothing; search is glove's)

(no model's `search --no-vector` is its `search`; the reranker changes only
`query`, so those rows are not run twice.)

Printed per set and run: nDCG@10, Recall@10, MRR@10 and, against the run's
baseline (query vs search in the same model setting, hybrid search vs
--no-vector), the queries lost (a relevant document in the baseline's top
10, none in the run's) and gained. The acceptance of issue 14: every run's
nDCG@10 >= its baseline's - 0.005, and lost <= 1% of the queries.
Exit status 1 when a row misses it (--no-check: 0 anyway).

Metrics as bench/beir_eval.py (graded nDCG, trec_eval definitions); for
qmd-notes the expected note is the one relevant document (bench/qmd_eval.py's
match rule). Standard library (and numpy for the reranker file only).
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import beir_eval  # noqa: E402
import qmd_eval  # noqa: E402

SETS = {
    "qmd-test": ("qmd-notes", "queries-eval-test.jsonl"),
    "qmd-deep": ("qmd-notes", "eval-deep-research.jsonl"),
    "scifact": ("scifact-train", None),
    "cranfield": ("cranfield", None),
    "drcd": ("drcd-zh-tw", None),
}

# name, model setting, command, extra flags, baseline run
RUNS = [
    ("none/search", "none", "search", [], None),
    ("none/query", "none", "query", [], "none/search"),
    ("glove/search --no-vector", "glove", "search", ["--no-vector"], None),
    ("glove/search", "glove", "search", [], "glove/search --no-vector"),
    ("glove/query", "glove", "query", [], "glove/search"),
    ("rerank/query", "rerank", "query", ["--reranker", "{R}"], "glove/search"),
]

NDCG_SLACK = 0.005
LOST_SHARE = 0.01


def shared_dir():
    return Path(os.environ.get("TROVE_SHARED_DIR", REPO.parent / "shared"))


def make_reranker(path):
    if path.is_file():
        return
    sys.path.insert(0, str(REPO / "tests" / "tools"))
    import make_models
    make_models.bert_model(str(path), rerank=True, seed=6,
                           name="tiny-ms-marco-reranker")


class Set:
    """One eval set: its vault, queries and judgements."""

    def __init__(self, name, work, sample, seed):
        folder, qfile = SETS[name]
        ds = shared_dir() / "eval" / folder
        self.name, self.work = name, work / folder
        self.work.mkdir(parents=True, exist_ok=True)
        if qfile:   # qmd-notes: one expected note per query
            self.vault = ds / "docs"
            rows = [json.loads(ln) for ln in
                    (ds / qfile).read_text().splitlines() if ln.strip()]
            self.queries = [(str(i), r["query"]) for i, r in enumerate(rows)]
            self.expected = {str(i): r["expected_doc"]
                             for i, r in enumerate(rows)}
            self.qrels = None
        else:
            self.vault = self.work / "vault"
            beir_eval.build_vault(ds / "corpus.jsonl", self.vault)
            self.qrels = beir_eval.read_qrels(beir_eval.find_qrels(ds, None))
            text = {str(q["_id"]): q["text"]
                    for q in beir_eval.read_jsonl(ds / "queries.jsonl")}
            qids = [q for q in self.qrels if q in text and
                    any(g > 0 for g in self.qrels[q].values())]
            qids.sort(key=lambda q: (len(q), q))
            if sample and sample < len(qids):
                import random
                qids = sorted(random.Random(seed).sample(qids, sample),
                              key=lambda q: (len(q), q))
            self.queries = [(q, text[q]) for q in qids]

    def doc_key(self, path):
        return path if self.qrels is None else beir_eval.filename_to_id(path)

    def judged(self, qid, ranked):
        """{doc: grade} for the query; qmd: the first result matching the
        expected note (qmd_eval.matches) is the relevant one."""
        if self.qrels is not None:
            return self.qrels[qid]
        exp = self.expected[qid]
        hit = next((d for d in ranked if qmd_eval.matches(d, exp)), None)
        return {hit if hit else "\0expected:" + exp: 1}


def trove_env(state, model):
    env = beir_eval.trove_env(state)
    env.pop("TROVE_EMBED_MODEL", None)
    env.pop("TROVE_RERANK_MODEL", None)
    if model:
        env["TROVE_EMBED_MODEL"] = model
    return env


def run_cmd(trove, env, args):
    p = subprocess.run([trove] + args, env=env, capture_output=True,
                       text=True)
    if p.returncode != 0:
        sys.exit("failed (exit %d): trove %s\n%s" % (p.returncode,
                                                     shlex.join(args),
                                                     p.stderr))
    return p.stdout


def index_set(s, trove, glove):
    """A fresh index of the set, embedded with GloVe."""
    shutil.rmtree(s.work / "state", ignore_errors=True)
    (s.work / "state").mkdir()
    env = trove_env(s.work, glove)
    run_cmd(trove, env, ["collection", "add", str(s.vault.resolve()),
                         "--name", "eval"])
    t0 = time.perf_counter()
    run_cmd(trove, env, ["update"])
    return time.perf_counter() - t0


def run_queries(s, trove, env, command, extra, k):
    ranked = {}
    for qid, text in s.queries:
        cmd = [trove, command, "--json", "-n", str(k)] + extra
        if text.startswith("-"):
            cmd.append("--")
        p = subprocess.run(cmd + [text], env=env, capture_output=True,
                           text=True)
        if p.returncode != 0:
            sys.exit("query %s failed (exit %d): %s" % (qid, p.returncode,
                                                         p.stderr[:300]))
        out = []
        for r in json.loads(p.stdout)["results"]:
            d = s.doc_key(r["path"])
            if d not in out:
                out.append(d)
        ranked[qid] = out
    return ranked


def metrics(s, ranked, k):
    per = {}
    for qid, _ in s.queries:
        r = ranked[qid]
        per[qid] = beir_eval.score_query(r, s.judged(qid, r), k)
    n = len(per) or 1
    return per, [sum(v[i] for v in per.values()) / n for i in range(3)]


def found(s, qid, r, k):
    rel = {d for d, g in s.judged(qid, r).items() if g > 0}
    return any(d in rel for d in r[:k])


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS),
                    help="comma-separated, of: " + ", ".join(SETS))
    ap.add_argument("--runs", help="only these runs (comma-separated names "
                    "as printed, e.g. 'glove/query'); the others are read "
                    "from the work folder's last results (same sample)")
    ap.add_argument("--trove", default=os.environ.get(
        "TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--work", type=Path, default=Path(
        os.environ.get("TMPDIR", "/tmp")) / "trove-eval-all")
    ap.add_argument("--sample", type=int, default=0,
                    help="N queries per BEIR set, drawn at random (default all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reuse-index", action="store_true",
                    help="keep a set's index of an earlier run")
    ap.add_argument("--cold", action="store_true",
                    help="no daemon: every query a cold process")
    ap.add_argument("--json", metavar="FILE", help="also write the table")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--extra", metavar="FLAGS",
                    help="flags added to every run (e.g. --extra=--no-translate: "
                         "the same table without the translation channel)")
    args = ap.parse_args()

    k = 10
    args.work.mkdir(parents=True, exist_ok=True)
    # a private copy: a rebuild during the run must not change the binary
    # (renamed into place: another run may be executing the old copy)
    trove = str(args.work / "trove.bin")
    shutil.copy2(Path(args.trove).resolve(), trove + ".tmp")
    os.replace(trove + ".tmp", trove)
    zh = Path(args.trove).resolve().parent / "trove-zh.dict"
    if zh.is_file():
        shutil.copy2(zh, args.work / "trove-zh.dict")
    else:   # Chinese would be cut into characters: drcd's numbers change
        print("warning: no %s: Chinese word segmentation off" % zh,
              file=sys.stderr)
    xl = Path(args.trove).resolve().parent / "trove-xl.dict"
    if xl.is_file():
        shutil.copy2(xl, args.work / "trove-xl.dict")
    else:   # the translation channel would be off
        print("warning: no %s: search without translation" % xl,
              file=sys.stderr)
    glove = subprocess.run(["bash", str(REPO / "scripts" / "glove-model.sh")],
                           capture_output=True, text=True,
                           check=True).stdout.strip()
    reranker = args.work / "rerank-random.gguf"
    make_reranker(reranker)
    only = set(args.runs.split(",")) if args.runs else None
    models = {"none": None, "glove": glove, "rerank": glove}

    print("# /usr/bin/python3 bench/eval_all.py " + shlex.join(sys.argv[1:]))
    print("machine: %d CPUs, load average %s at the start; %s"
          % (os.cpu_count() or 0, " ".join("%.2f" % x for x in os.getloadavg()),
             "cold processes" if args.cold else "answered by a daemon"))
    table, failed = [], []
    cpu0 = os.times()
    for name in args.sets.split(","):
        if name not in SETS:
            sys.exit("unknown set %r (sets: %s)" % (name, ", ".join(SETS)))
        s = Set(name, args.work, args.sample, args.seed)
        state = s.work / "state"
        if not (args.reuse_index and (state / "index.db").is_file()):
            t = index_set(s, trove, glove)
            print("%s: indexed %s with GloVe in %.1f s" % (name, s.vault, t))
        saved_path = s.work / ("runs-%s-%d-%d%s.json" % (
            name, args.sample, args.seed,
            "".join(args.extra.split()) if args.extra else ""))
        saved = json.loads(saved_path.read_text()) if saved_path.is_file() \
            else {}
        daemon_env = trove_env(s.work, None)
        if not args.cold:
            run_cmd(trove, daemon_env, ["daemon", "--detach", "--no-watch",
                                        "--idle", "0"])
        try:
            results = {}
            for run, setting, command, extra, _ in RUNS:
                if only is not None and run not in only and run in saved:
                    results[run] = saved[run]
                    continue
                env = trove_env(s.work, models[setting])
                if args.cold:
                    env["TROVE_NO_DAEMON"] = "1"
                ex = [a.replace("{R}", str(reranker)) for a in extra]
                ex += shlex.split(args.extra or "")
                t0 = time.perf_counter()
                results[run] = run_queries(s, trove, env, command, ex, k)
                print("  %s %s: %d queries in %.0f s" % (
                    name, run, len(s.queries), time.perf_counter() - t0),
                    flush=True)
        finally:
            if not args.cold:
                subprocess.run([trove, "daemon", "stop"], env=daemon_env,
                               capture_output=True)
        saved.update(results)
        saved_path.write_text(json.dumps(saved))
        per = {}
        for run, setting, command, extra, base in RUNS:
            per[run], (nd, rc, mr) = metrics(s, results[run], k)
            row = {"set": name, "queries": len(s.queries), "run": run,
                   "ndcg@10": nd, "recall@10": rc, "mrr@10": mr}
            if base:
                lost = [q for q, _ in s.queries
                        if found(s, q, results[base][q], k)
                        and not found(s, q, results[run][q], k)]
                gained = [q for q, _ in s.queries
                          if found(s, q, results[run][q], k)
                          and not found(s, q, results[base][q], k)]
                bnd = sum(v[0] for v in per[base].values()) / \
                    (len(per[base]) or 1)
                row.update(baseline=base, delta=nd - bnd, lost=len(lost),
                           gained=len(gained), lost_ids=lost[:20])
                ok = nd >= bnd - NDCG_SLACK and \
                    len(lost) <= LOST_SHARE * len(s.queries)
                row["ok"] = ok
                if not ok:
                    failed.append("%s %s" % (name, run))
            table.append(row)
    cpu1 = os.times()
    print()
    print("| set | queries | run | nDCG@10 | Recall@10 | MRR@10 | vs | ΔnDCG | lost | gained |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        print("| %s | %d | %s | %.4f | %.4f | %.4f | %s | %s | %s | %s |" % (
            r["set"], r["queries"], r["run"], r["ndcg@10"], r["recall@10"],
            r["mrr@10"], r.get("baseline", ""),
            "%+.4f" % r["delta"] if "delta" in r else "",
            "%d%s" % (r["lost"], "" if r["ok"] else " **FAIL**")
            if "lost" in r else "", r.get("gained", "")))
    print()
    print("children CPU %.0f s; load average %s at the end" % (
        (cpu1.children_user - cpu0.children_user) +
        (cpu1.children_system - cpu0.children_system),
        " ".join("%.2f" % x for x in os.getloadavg())))
    print("acceptance (nDCG >= baseline - %.3f, lost <= %.0f%%): %s" % (
        NDCG_SLACK, LOST_SHARE * 100, "FAIL: " + ", ".join(failed)
        if failed else "PASS"))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2) + "\n")
    return 1 if failed and not args.no_check else 0


if __name__ == "__main__":
    sys.exit(main())
