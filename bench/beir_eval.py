#!/usr/bin/python3
"""Retrieval quality and latency of `trove search` on a BEIR-layout dataset.

    /usr/bin/python3 bench/beir_eval.py ../shared/eval/scifact-train
    /usr/bin/python3 bench/beir_eval.py ../shared/eval/cranfield --sample 100 \
        --extra "--title-weight 0" --json out.json
    /usr/bin/python3 bench/beir_eval.py ../shared/eval/scifact-train \
        --model "$(bash scripts/glove-model.sh)"            # hybrid

The corpus (corpus.jsonl: {"_id", "title", "text"}) becomes a vault of .md
files, one per document: the file name is the document id (percent-encoded
where a character is not safe in a file name), the file holds a frontmatter
`title:`, a `# title` line and the text -- nothing else, so nothing about the
relevance labels leaks into the index. The vault is cached in the work
folder and rebuilt only when the corpus changes. A fresh index is built every
run (TROVE_INDEX and TROVE_CONFIG_DIR point into the work folder), with
`collection add` and a timed `update`.

Every query of the qrels that has at least one relevant document is then run
as its own `trove search --json -n K` process, one after the other, so the
latency is the real cold-start latency of a search. Result paths map back to
document ids through the file name.

Metrics (the usual BEIR / trec_eval definitions, cut at K, default 10):
  nDCG@K    graded gain (qrels score), discount 1/log2(rank+1), divided by
            the ideal DCG of the query's judged documents
  Recall@K  relevant documents (score > 0) in the top K / all relevant ones
  MRR@K     1 / rank of the first relevant document in the top K, else 0
Latency: p50, p95, mean and max wall time of one search process, in ms,
and p50/p95/mean CPU time (user + system) of one search process, which is
less disturbed by other load on a shared machine.

Standard library only; runs with /usr/bin/python3.
"""
import argparse
import json
import math
import os
import random
import resource
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, unquote

REPO = Path(__file__).resolve().parents[1]
COLLECTION = "beir"


# ---- dataset ---------------------------------------------------------------

def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except ValueError as e:
                    sys.exit("%s:%d: bad JSON: %s" % (path, n, e))


def find_qrels(dataset, explicit):
    if explicit:
        return Path(explicit)
    files = sorted(p for p in (dataset / "qrels").glob("*.tsv")
                   if ".raw." not in p.name)
    for name in ("test.tsv", "train.tsv", "dev.tsv"):
        for p in files:
            if p.name == name:
                return p
    if len(files) == 1:
        return files[0]
    sys.exit("%s/qrels: cannot choose among %s; use --qrels"
             % (dataset, [p.name for p in files]))


def read_qrels(path):
    """{query_id: {doc_id: grade}}; a header line (non-numeric score) is
    skipped."""
    qrels = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or not parts[0]:
                continue
            try:
                grade = int(float(parts[-1]))
            except ValueError:
                if n == 1:
                    continue  # header: query-id corpus-id score
                sys.exit("%s:%d: bad score %r" % (path, n, parts[-1]))
            qid, did = parts[0], parts[1]
            qrels.setdefault(qid, {})[did] = grade
    return qrels


# ---- vault -----------------------------------------------------------------

def id_to_filename(doc_id):
    name = quote(doc_id, safe="-_.~")
    if name.startswith("."):           # would be a hidden file
        name = "%2E" + name[1:]
    return name + ".md"


def filename_to_id(path):
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".md"):
        name = name[:-3]
    return unquote(name)


def yaml_str(s):
    # A JSON string is a valid YAML double-quoted scalar.
    return json.dumps(s, ensure_ascii=False)


def note_text(doc):
    title = " ".join((doc.get("title") or "").split())
    text = (doc.get("text") or "").strip()
    out = []
    if title:
        out += ["---", "title: " + yaml_str(title), "---", "", "# " + title,
                ""]
    out.append(text)
    return "\n".join(out) + "\n"


def build_vault(corpus_path, vault):
    """Write one .md file per document unless the vault already matches the
    corpus (same size and mtime, recorded in a stamp file)."""
    st = corpus_path.stat()
    stamp = "%s %d %d v1" % (corpus_path.resolve(), st.st_size,
                             int(st.st_mtime))
    stamp_file = vault.parent / (vault.name + ".stamp")
    if vault.is_dir() and stamp_file.is_file() \
            and stamp_file.read_text() == stamp:
        n = sum(1 for _ in vault.iterdir())
        return n, False
    if vault.exists():
        shutil.rmtree(vault)
    vault.mkdir(parents=True)
    n = 0
    seen = set()
    for doc in read_jsonl(corpus_path):
        name = id_to_filename(str(doc["_id"]))
        if name in seen:
            sys.exit("duplicate document id %r" % doc["_id"])
        seen.add(name)
        (vault / name).write_text(note_text(doc), encoding="utf-8")
        n += 1
    stamp_file.write_text(stamp)
    return n, True


# ---- running trove ---------------------------------------------------------

def trove_env(work):
    env = dict(os.environ)
    state = work / "state"
    env.update({
        "TROVE_INDEX": str(state / "index.db"),
        "TROVE_CONFIG_DIR": str(state / "config"),
        "XDG_CACHE_HOME": str(state / "xdg-cache"),
        "XDG_CONFIG_HOME": str(state / "xdg-config"),
        "NO_COLOR": "1",
    })
    return env


def run(cmd, env, check=True):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("failed (exit %d): %s\n%s%s" % (p.returncode,
                                                 shlex.join(cmd), p.stdout,
                                                 p.stderr))
    return p


def index_size(index_path):
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(index_path) + suffix)
        if p.is_file():
            total += p.stat().st_size
    return total


# ---- metrics ---------------------------------------------------------------

def dcg(gains):
    s = 0.0
    for i, g in enumerate(gains):
        if g > 0:
            s += g / math.log2(i + 2)
    return s


def score_query(ranked, judged, k):
    """ranked: doc ids best first; judged: {doc_id: grade}."""
    top = ranked[:k]
    relevant = {d for d, g in judged.items() if g > 0}
    ideal = dcg(sorted((g for g in judged.values() if g > 0),
                       reverse=True)[:k])
    ndcg = dcg([judged.get(d, 0) for d in top]) / ideal if ideal else 0.0
    hits = [d for d in top if d in relevant]
    recall = len(set(hits)) / len(relevant) if relevant else 0.0
    mrr = 0.0
    for i, d in enumerate(top):
        if d in relevant:
            mrr = 1.0 / (i + 1)
            break
    return ndcg, recall, mrr


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    v = sorted(values)
    x = (len(v) - 1) * p / 100.0
    lo = int(x)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (x - lo)


# ---- main ------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("dataset", type=Path, help="BEIR folder (corpus.jsonl, "
                    "queries.jsonl, qrels/*.tsv)")
    ap.add_argument("--trove", default=os.environ.get("TROVE_BIN",
                                                      str(REPO / "build" /
                                                          "trove")),
                    help="trove binary (default $TROVE_BIN or build/trove)")
    ap.add_argument("--qrels", help="qrels file (default: qrels/test.tsv, "
                    "train.tsv, dev.tsv, or the only .tsv)")
    ap.add_argument("-k", type=int, default=10, help="cut-off (default 10)")
    ap.add_argument("--sample", type=int, default=0,
                    help="evaluate N queries drawn at random (default: all)")
    ap.add_argument("--seed", type=int, default=1, help="seed for --sample")
    ap.add_argument("--extra", default="",
                    help='extra search flags, e.g. "--title-weight 0"')
    ap.add_argument("--model", help="embedding model (GGUF file or model2vec "
                    "folder): `update` embeds with it and searches are hybrid "
                    "(default: $TROVE_EMBED_MODEL; none: keyword channels)")
    ap.add_argument("--work", type=Path, help="work folder for the vault and "
                    "the index (default /tmp/trove-beir/<dataset>)")
    ap.add_argument("--reuse-index", action="store_true",
                    help="keep the index of a previous run if there is one")
    ap.add_argument("--json", metavar="FILE",
                    help="also write all numbers as JSON ('-' for stdout)")
    ap.add_argument("--run-file", metavar="FILE",
                    help="write the ranked results as a TREC run file")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every query with its metrics")
    args = ap.parse_args()

    ds = args.dataset
    trove = str(Path(args.trove).resolve())
    if not os.access(trove, os.X_OK):
        sys.exit("trove binary not found: %s (build it or pass --trove)"
                 % trove)
    for f in ("corpus.jsonl", "queries.jsonl"):
        if not (ds / f).is_file():
            sys.exit("%s: no %s" % (ds, f))
    name = ds.resolve().name
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / \
        "trove-beir" / name
    work.mkdir(parents=True, exist_ok=True)
    # Run a private copy: a rebuild of build/trove during a long run must not
    # change (or break) the binary half-way through.
    snap = work / "trove.bin"
    shutil.copy2(trove, snap)
    # The Chinese dictionary is looked for next to the binary.
    zh_dict = Path(trove).resolve().parent / "trove-zh.dict"
    if zh_dict.is_file():
        shutil.copy2(zh_dict, work / "trove-zh.dict")
    trove = str(snap)
    vault = work / "vault"
    qrels_path = find_qrels(ds, args.qrels)
    qrels = read_qrels(qrels_path)
    queries = {str(q["_id"]): q["text"] for q in read_jsonl(ds /
                                                            "queries.jsonl")}

    t0 = time.perf_counter()
    n_docs, written = build_vault(ds / "corpus.jsonl", vault)
    t_vault = time.perf_counter() - t0
    text_bytes = sum(p.stat().st_size for p in vault.iterdir())

    env = trove_env(work)
    if args.model:
        env["TROVE_EMBED_MODEL"] = str(Path(args.model).resolve())
    index_path = Path(env["TROVE_INDEX"])
    reuse = args.reuse_index and index_path.is_file()
    t_update = None
    if not reuse:
        shutil.rmtree(work / "state", ignore_errors=True)
        (work / "state").mkdir()
        run([trove, "collection", "add", str(vault), "--name", COLLECTION],
            env)
        t0 = time.perf_counter()
        run([trove, "update"], env)
        t_update = time.perf_counter() - t0

    qids = [q for q in qrels
            if q in queries and any(g > 0 for g in qrels[q].values())]
    missing = [q for q in qrels if q not in queries]
    skipped_no_rel = len([q for q in qrels if q in queries]) - len(qids)
    qids.sort(key=lambda q: (len(q), q))
    if args.sample and args.sample < len(qids):
        qids = sorted(random.Random(args.seed).sample(qids, args.sample),
                      key=lambda q: (len(q), q))

    extra = shlex.split(args.extra)
    per_query = []
    lat = []
    cpu = []  # user + system time of each search process: less sensitive
    errors = []  # to other load on the machine than the wall time
    empty = 0
    run_lines = []
    for qid in qids:
        text = queries[qid]
        cmd = [trove, "search", "--json", "-n", str(args.k)] + extra
        if text.startswith("-"):
            cmd.append("--")
        cmd.append(text)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        lat.append(dt * 1000.0)
        cpu.append(((ru1.ru_utime - ru0.ru_utime) +
                    (ru1.ru_stime - ru0.ru_stime)) * 1000.0)
        ranked = []
        if p.returncode != 0:
            errors.append((qid, p.returncode, p.stderr.strip()[:200]))
        else:
            try:
                res = json.loads(p.stdout)["results"]
            except (ValueError, KeyError, TypeError) as e:
                errors.append((qid, 0, "bad JSON output: %s" % e))
                res = []
            seen = set()
            for r in res:
                did = filename_to_id(r["path"])
                if did not in seen:  # one entry per document
                    seen.add(did)
                    ranked.append(did)
                    run_lines.append("%s Q0 %s %d %s trove" % (
                        qid, did, len(ranked), r.get("score", 0)))
        if not ranked:
            empty += 1
        nd, rc, mr = score_query(ranked, qrels[qid], args.k)
        per_query.append((qid, nd, rc, mr))
        if args.verbose:
            print("%-10s ndcg=%.3f recall=%.3f mrr=%.3f %6.1f ms  %s"
                  % (qid, nd, rc, mr, dt * 1000, text[:60]))

    n = len(per_query)
    mean = (lambda i: sum(x[i] for x in per_query) / n if n else 0.0)
    k = args.k
    out = {
        "dataset": str(ds),
        "qrels": str(qrels_path),
        "trove": args.trove,
        "extra": args.extra,
        "model": env.get("TROVE_EMBED_MODEL"),
        "k": k,
        "documents": n_docs,
        "text_bytes": text_bytes,
        "index_bytes": index_size(index_path),
        "update_s": t_update,
        "docs_per_s": (n_docs / t_update) if t_update else None,
        "queries": n,
        "queries_without_results": empty,
        "errors": len(errors),
        "qrels_queries_missing_text": len(missing),
        "qrels_queries_without_relevant": skipped_no_rel,
        "sample": args.sample or None,
        "seed": args.seed if args.sample else None,
        "ndcg@%d" % k: mean(1),
        "recall@%d" % k: mean(2),
        "mrr@%d" % k: mean(3),
        "latency_ms": {
            "p50": percentile(lat, 50), "p95": percentile(lat, 95),
            "mean": sum(lat) / len(lat) if lat else float("nan"),
            "max": max(lat) if lat else float("nan"),
        },
        "cpu_ms": {
            "p50": percentile(cpu, 50), "p95": percentile(cpu, 95),
            "mean": sum(cpu) / len(cpu) if cpu else float("nan"),
        },
    }

    cmdline = "/usr/bin/python3 bench/beir_eval.py " + shlex.join(sys.argv[1:])
    print("# %s" % cmdline)
    print("dataset        %s (%d docs, %.1f MB text; qrels %s)"
          % (ds, n_docs, text_bytes / 1e6, qrels_path.name))
    if written:
        print("vault          written in %.1f s to %s" % (t_vault, vault))
    else:
        print("vault          cached at %s" % vault)
    if t_update is not None:
        print("update         %.2f s (%.0f docs/s)" % (t_update,
                                                      n_docs / t_update))
    else:
        print("update         skipped (--reuse-index)")
    print("index          %.1f MB (%.2fx the text)"
          % (out["index_bytes"] / 1e6,
             out["index_bytes"] / text_bytes if text_bytes else 0))
    print("search flags   -n %d %s" % (k, args.extra))
    print("model          %s" % (env.get("TROVE_EMBED_MODEL") or "none (keyword channels)"))
    print("machine        %d CPUs, load average %s"
          % (os.cpu_count() or 0, " ".join("%.2f" % x
                                           for x in os.getloadavg())))
    print("queries        %d evaluated%s, %d with no results, %d errors"
          % (n, " (sample of %d, seed %d)" % (args.sample, args.seed)
             if args.sample else "", empty, len(errors)))
    print()
    print("| metric     | value  |")
    print("|------------|--------|")
    print("| nDCG@%-5d | %.4f |" % (k, out["ndcg@%d" % k]))
    print("| Recall@%-3d | %.4f |" % (k, out["recall@%d" % k]))
    print("| MRR@%-6d | %.4f |" % (k, out["mrr@%d" % k]))
    print("| p50 ms     | %6.1f |" % out["latency_ms"]["p50"])
    print("| p95 ms     | %6.1f |" % out["latency_ms"]["p95"])
    print("| mean ms    | %6.1f |" % out["latency_ms"]["mean"])
    print("| max ms     | %6.1f |" % out["latency_ms"]["max"])
    print("| cpu p50 ms | %6.1f |" % out["cpu_ms"]["p50"])
    print("| cpu p95 ms | %6.1f |" % out["cpu_ms"]["p95"])
    for qid, rc, msg in errors[:5]:
        print("error: query %s: exit %d: %s" % (qid, rc, msg),
              file=sys.stderr)
    if args.run_file:
        Path(args.run_file).write_text("\n".join(run_lines) + "\n")
    if args.json:
        s = json.dumps(out, indent=2)
        if args.json == "-":
            print(s)
        else:
            Path(args.json).write_text(s + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
