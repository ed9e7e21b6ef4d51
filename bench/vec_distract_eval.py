#!/usr/bin/python3
"""Quality of the two-stage vector scan among many distractors: eval sets
(scifact, drcd) added as collections to a large index (e.g. a copy of the
1M index of /work/scale1m, 1,033,792 vectors of the default model's shape),
every query answered with --vector-scan exact and two-stage by one binary
through a daemon it starts, unfiltered (the distractors compete in both
stages), and scored against the set's judgements: nDCG@10 and Recall@10
of hybrid search and of vsearch per scan, the recall of the exact vsearch
answer's notes in the two-stage one (tie-aware as bench/vec_recall.py) and
how many answers are byte for byte the same (session 36, w-vec1m3).

    /usr/bin/python3 bench/vec_distract_eval.py --dir /tmp/COPY --bin BIN \\
        --model ~/.cache/trove-dev/models/m2v-500k-shared-v2 \\
        [--sets scifact,drcd] [--sample 1000] [--work /tmp/vde]

--dir: a trove environment as /work/scale1m/env.sh makes (index.db,
config/, run/ ...); WRITTEN: the sets' collections ("eval-SET") are added
and embedded there (never pass the shared read-only index). A result of
another collection counts as a non-relevant document.
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import beir_eval  # noqa: E402

SETS = {"scifact": "scifact-train", "drcd": "drcd-zh-tw",
        "cranfield": "cranfield"}


def env_of(d, model):
    env = dict(os.environ)
    run = d / "run"
    run.mkdir(exist_ok=True)
    os.chmod(run, 0o700)
    env.update({"TROVE_INDEX": str(d / "index.db"),
                "TROVE_CONFIG_DIR": str(d / "config"),
                "XDG_CACHE_HOME": str(d / "xdg-cache"),
                "XDG_CONFIG_HOME": str(d / "xdg-config"),
                "XDG_RUNTIME_DIR": str(run), "NO_COLOR": "1",
                "TROVE_EMBED_MODEL": model})
    env.pop("TROVE_NO_DAEMON", None)
    return env


def trove(bin_, env, args, check=True):
    p = subprocess.run([bin_] + args, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("trove %s failed (%d): %s" % (" ".join(args), p.returncode,
                                               p.stderr[:400]))
    return p


def load_set(name, work, sample, seed):
    ds = Path(os.environ.get("TROVE_SHARED_DIR", REPO.parent / "shared")) \
        / "eval" / SETS[name]
    if not ds.is_dir():
        ds = Path("/work/shared/eval") / SETS[name]
    vault = work / SETS[name] / "vault"
    beir_eval.build_vault(ds / "corpus.jsonl", vault)
    qrels = beir_eval.read_qrels(beir_eval.find_qrels(ds, None))
    text = {str(q["_id"]): q["text"]
            for q in beir_eval.read_jsonl(ds / "queries.jsonl")}
    qids = sorted((q for q in qrels if q in text and
                   any(g > 0 for g in qrels[q].values())),
                  key=lambda q: (len(q), q))
    if sample and sample < len(qids):
        qids = sorted(random.Random(seed).sample(qids, sample),
                      key=lambda q: (len(q), q))
    return vault, qrels, [(q, text[q]) for q in qids]


def ask(bin_, env, cmd, scan, text):
    args = [cmd, "--json", "-n", "10", "--vector-scan", scan]
    if text.startswith("-"):
        args.append("--")
    out = trove(bin_, env, args + [text]).stdout
    return out, json.loads(out)["results"]


def ranked_docs(results, coll):
    out = []
    for r in results:
        d = beir_eval.filename_to_id(r["path"]) if r["collection"] == coll \
            else "\0%s/%s" % (r["collection"], r["path"])
        if d not in out:
            out.append(d)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--sets", default="scifact,drcd")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=Path("/tmp/vec-distract"))
    a = ap.parse_args()
    if str(a.dir.resolve()).startswith("/work/scale1m"):
        sys.exit("--dir must be a copy: this script writes into it")
    env = env_of(a.dir, os.path.expanduser(a.model))
    sets = {}
    for name in a.sets.split(","):
        vault, qrels, queries = load_set(name, a.work, a.sample, a.seed)
        coll = "eval-" + name
        have = trove(a.bin, env, ["collection", "list"]).stdout
        if not re.search(r"^%s\b" % re.escape(coll), have, re.M):
            trove(a.bin, env, ["collection", "add", str(vault.resolve()),
                               "--name", coll])
        sets[name] = (coll, qrels, queries)
    t0 = time.perf_counter()
    trove(a.bin, env, ["update"])
    print("update (the sets' notes indexed and embedded) %.1f s" %
          (time.perf_counter() - t0))
    st = trove(a.bin, env, ["status", "--json"], check=False).stdout
    try:
        print("vectors in the index:", json.loads(st).get("vectors"))
    except ValueError:
        pass
    out = trove(a.bin, env, ["daemon", "--detach", "--no-watch", "--idle",
                             "1800"]).stdout
    m = re.search(r"pid (\d+)", out)
    dpid = int(m.group(1)) if m else 0
    try:
        for name, (coll, qrels, queries) in sets.items():
            res = {}
            same = {"search": 0, "vsearch": 0}
            other = {"search": [0, 0], "vsearch": [0, 0]}   # of the exact top 10
            rec_sum, rec_n = 0.0, 0
            for qid, text in queries:
                for cmd in ("search", "vsearch"):
                    raw = {}
                    for scan in ("exact", "two-stage"):
                        o, r = ask(a.bin, env, cmd, scan, text)
                        raw[scan] = (o, r)
                        res.setdefault((cmd, scan), {})[qid] = \
                            ranked_docs(r, coll)
                    h = [hashlib.md5(raw[s][0].encode()).hexdigest()
                         for s in ("exact", "two-stage")]
                    other[cmd][0] += sum(r["collection"] != coll
                                         for r in raw["exact"][1])
                    other[cmd][1] += len(raw["exact"][1])
                    same[cmd] += h[0] == h[1]
                    if cmd == "vsearch":
                        ex, ts = raw["exact"][1], raw["two-stage"][1]
                        key = lambda r: (r["collection"], r["path"])
                        if ex:
                            last = min(r["score"] for r in ex)
                            want = {key(r) for r in ex}
                            got = sum(1 for r in ts if key(r) in want or
                                      r["score"] >= last)
                            rec_sum += min(got, len(ex)) / len(ex)
                            rec_n += 1
            n = len(queries)
            print("%s: %d queries, collection %s" % (name, n, coll))
            for cmd in ("search", "vsearch"):
                for scan in ("exact", "two-stage"):
                    tot = [0.0, 0.0, 0.0]
                    for qid, _ in queries:
                        r = res[(cmd, scan)][qid]
                        s = beir_eval.score_query(r, qrels[qid], 10)
                        tot = [x + y for x, y in zip(tot, s)]
                    print("  %-8s %-9s nDCG@10 %.4f  Recall@10 %.4f  "
                          "MRR@10 %.4f" % (cmd, scan, tot[0] / n, tot[1] / n,
                                           tot[2] / n))
                print("  %-8s identical answers (md5 of --json): %d / %d; "
                      "results of other collections in the exact top 10: "
                      "%d of %d" % (cmd, same[cmd], n, other[cmd][0],
                                    other[cmd][1]))
            print("  vsearch recall of the exact top 10 (tie-aware): %.4f "
                  "over %d queries" % (rec_sum / max(rec_n, 1), rec_n))
            sys.stdout.flush()
    finally:
        if dpid:
            os.kill(dpid, 15)


if __name__ == "__main__":
    main()
