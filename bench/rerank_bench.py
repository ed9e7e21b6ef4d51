#!/usr/bin/python3
"""Cost of reranking in `trove query`: a MiniLM-L6-shaped cross-encoder
(random weights; the shape of cross-encoder/ms-marco-MiniLM-L6-v2: 6 layers,
384 wide, 12 heads, 30522-token vocabulary, 512 context, rank head) scoring
the top candidates of each query, against the lexical re-scorer and
--no-rerank, on a BEIR corpus.

    /usr/bin/python3 bench/rerank_bench.py ../shared/eval/scifact-train
    /usr/bin/python3 bench/rerank_bench.py ../shared/eval/scifact-train \
        --queries 20 --candidates 20 --window 256 --qtype Q8_0

Every query runs as its own process (cold start, as a user or agent runs
it); wall time and CPU time (user + system, from the kernel's accounting of
the child) are taken per process. The reranking cost per query is the
difference of the medians with the model and with --no-rerank. The model
runs on every online CPU (2 on the shared development machine). Random
weights do not change the cost: the same matrices are multiplied.
Standard library + numpy (for the model writer); runs with /usr/bin/python3.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "tools"))
import beir_eval  # noqa: E402


def timed(cmd, env):
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return wall * 1000, cpu * 1000, p


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--trove", default=os.environ.get(
        "TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--window", type=int, default=256,
                    help="--rerank-window: words per candidate (default 256)")
    ap.add_argument("--qtype", default="F32", help="F32 or Q8_0")
    ap.add_argument("--work", type=Path,
                    default=Path(os.environ.get("TMPDIR", "/tmp")) / "trove-rerank-bench")
    args = ap.parse_args()

    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    trove = str(work / "trove.bin")
    shutil.copy2(args.trove, trove)
    model = work / ("minilm_rerank_%s.gguf" % args.qtype.lower())
    if not model.is_file():
        import make_models
        make_models.bert_model(str(model), H=384, L=6, nh=12, FF=1536, V=30522, ctx=512,
                               seed=7, rerank=True, qtype=args.qtype,
                               name="MiniLM-L6-shaped cross-encoder")
    vault = work / "vault"
    beir_eval.build_vault(args.dataset / "corpus.jsonl", vault)
    env = beir_eval.trove_env(work)
    if not Path(env["TROVE_INDEX"]).is_file():
        (work / "state").mkdir(exist_ok=True)
        beir_eval.run([trove, "collection", "add", str(vault), "--name", "beir"], env)
        beir_eval.run([trove, "update"], env)
    queries = [q["text"] for q in beir_eval.read_jsonl(args.dataset / "queries.jsonl")]
    queries = queries[:args.queries]

    modes = {
        "no-rerank": ["--no-rerank"],
        "lexical": [],
        "model": ["--reranker", str(model)],
    }
    res = {}
    for name, flags in modes.items():
        walls, cpus, reranked = [], [], []
        for q in queries:
            cmd = [trove, "query", "--json", "--explain", "-n", "10", "--candidates",
                   str(args.candidates), "--rerank-window", str(args.window)] + flags + \
                ["--", q]
            w, c, p = timed(cmd, env)
            walls.append(w)
            cpus.append(c)
            reranked.append(json.loads(p.stdout)["pipeline"]["reranked"])
        res[name] = {"wall_ms": median(walls), "cpu_ms": median(cpus),
                     "reranked": median(reranked)}

    print("# /usr/bin/python3 bench/rerank_bench.py " + " ".join(sys.argv[1:]))
    print("corpus %s, %d queries, candidates %d, window %d words, model %s %s"
          % (args.dataset, len(queries), args.candidates, args.window, model.name,
             args.qtype))
    print("machine: %d CPUs, load average %s" % (
        os.cpu_count() or 0, " ".join("%.2f" % x for x in os.getloadavg())))
    print()
    print("| mode      | reranked | wall p50 ms | cpu p50 ms |")
    print("|-----------|----------|-------------|------------|")
    for name, r in res.items():
        print("| %-9s | %8d | %11.1f | %10.1f |" % (name, r["reranked"], r["wall_ms"],
                                                  r["cpu_ms"]))
    base = res["no-rerank"]
    m = res["model"]
    print()
    print("reranking %d candidates with the model: +%.0f ms wall, +%.0f ms CPU per query "
          "(%.1f ms CPU per candidate)" % (
              m["reranked"], m["wall_ms"] - base["wall_ms"], m["cpu_ms"] - base["cpu_ms"],
              (m["cpu_ms"] - base["cpu_ms"]) / max(1, m["reranked"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
