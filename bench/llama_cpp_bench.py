#!/usr/bin/python3
"""llama_cpp_bench -- trove's engine beside llama.cpp on the same GGUF files,
the same token ids and the same thread count; printed as Markdown tables.

  /usr/bin/python3 bench/llama_cpp_bench.py [--trove BIN] [--models DIR]
        [--threads N] [--iters K] [--passages N] [--only NAME,...]
        [--rerank-only] [--no-rerank] [--trove-base BIN]

llama.cpp: the prebuilt CPU libraries of npm @node-llama-cpp/linux-x64
(libllama + libggml, which pick their CPU variant -- AVX2, AVX-512, zen4
... -- at run time), driven by bench/llama_cpp_embed.c, a small C program
built here against the headers of the same llama.cpp release (node-llama-
cpp ships its source as a git bundle). No Node code runs in the timing.
Set LLAMA_CPP_LIB=DIR (libllama*.so, libggml*.so) and LLAMA_CPP_SRC=DIR (a
llama.cpp checkout with include/llama.h) to use another build. Exits 3
with the reason when neither npm nor those are available.

Embedding: 200 passages (bench/llama_cpp_models.py: random ids, 16-256
tokens each, framed [CLS] ... [SEP]) through each model; trove takes them
with `trove model embed --ids --timing`, llama.cpp packs them into 2048-
token batches as its llama-embedding does (--llama-batch). Cross-encoder:
a query and 20 documents of 256 tokens, `trove model rerank --timing
--doc-tokens 256` and llama.cpp on the ids `trove model tokenize --pair`
gives for each pair (the same tokens), llama.cpp both packed (2048-token
batches) and one pair per decode (--rerank-llama-seqs), its best compared.
--qwen3 FILE: a Qwen3 reranker
(tests/tools/qwen3_gguf.py --reranker, --bench for the 0.6B shape) on
--qwen3-docs pages of the Obsidian help vault (../shared/corpora, or
$TROVE_SHARED_DIR/corpora from a worktree) cut to 256 tokens: trove
`model rerank --doc-tokens 256` with and without its prefix cache,
llama.cpp on the same ids (rank pooling: P(yes)), alternating run by run;
llama.cpp both packed (2048-token batches) and one sequence per decode
(--qwen3-llama-seqs), its best compared. The Qwen3 rows alone:
  llama_cpp_bench.py --qwen3 FILE --only minilm_q8_0 --no-rerank --rerank-only

Models named *_q4_k_m / *_q5_k_m (llama_cpp_models.py) are made here from
their F32 twin by llama.cpp's own quantiser (bench/llama_cpp_quantize.c,
llama_model_quantize): a 384-wide model's Q4_K_M / Q5_K_M as users get it,
Q5_0 / Q5_1 wherever rows are not a multiple of 256.

Both sides time only the model calls (not the load), wall and CPU time
(user + system) of the process during them; each configuration runs
--iters times in fresh processes, alternating, and the best CPU time of
each is kept. On a shared machine the CPU time is the steadier measure.
Parity: cosine of trove's and llama.cpp's vector per passage (min over
the passages); rerank: the largest difference of the scores (llama.cpp's
BERT graph adds the token-type row 0 to every token, trove the pair's own
types, so those differ by design).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NLC = "3.22.1"  # node-llama-cpp release (llama.cpp v0.5.0 of its fork's tags)
QUERY = "search index vault"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


def fetch(spec):
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "npm-fetch.sh"), spec],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return None
    return r.stdout.strip()


def llama_paths():
    """(lib dir, source dir with include/llama.h) or exit 3."""
    lib, src = os.environ.get("LLAMA_CPP_LIB"), os.environ.get("LLAMA_CPP_SRC")
    if lib and src:
        return lib, src
    pkg = fetch("@node-llama-cpp/linux-x64@" + NLC)
    nlc = fetch("node-llama-cpp@" + NLC)
    if not pkg or not nlc:
        print("llama_cpp_bench: SKIP: llama.cpp is absent (npm @node-llama-cpp/linux-x64@%s "
              "cannot be fetched; or set LLAMA_CPP_LIB and LLAMA_CPP_SRC)" % NLC, file=sys.stderr)
        sys.exit(3)
    lib = os.path.join(pkg, "bins", "linux-x64")
    src = os.path.join(os.path.dirname(os.path.dirname(pkg)), "llama-src-" + NLC)
    if not os.path.exists(os.path.join(src, "include", "llama.h")):
        bundle = os.path.join(nlc, "llama", "gitRelease.bundle")
        tmp = src + ".tmp"
        subprocess.run(["rm", "-rf", tmp], check=True)
        sh(["git", "clone", "-q", bundle, tmp], stderr=subprocess.DEVNULL)
        os.replace(tmp, src)
    return lib, src


def build_tool(lib, src, out, name):
    """bench/NAME.c built against libllama (llama_cpp_embed, llama_cpp_quantize)."""
    exe = os.path.join(out, name)
    sh(["gcc", "-O2", "-std=c11", "-Wall", "-Wextra", "-I", os.path.join(src, "include"),
        "-I", os.path.join(src, "ggml", "include"),
        os.path.join(ROOT, "bench", name + ".c"), "-o", exe, "-L", lib,
        "-l:libllama.v0.5.0.so", "-l:libggml.v0.5.0.so", "-l:libggml-base.so",
        "-Wl,-rpath," + lib])
    return exe


def make_mixes(a, lib, src, tmp, names, models):
    """The llama-quantize mixes among names, from their F32 twins."""
    todo = [n for n in names if models.mix_of(n)
            and not os.path.exists(os.path.join(a.models, n + ".gguf"))]
    if not todo:
        return
    q = build_tool(lib, src, tmp, "llama_cpp_quantize")
    for n in todo:
        twin, ft = models.mix_of(n)
        out = os.path.join(a.models, n + ".gguf")
        sh([q, os.path.join(a.models, twin + ".gguf"), out + ".tmp", ft, "--backends", lib])
        os.replace(out + ".tmp", out)


def read_ids(path, n):
    with open(path) as f:
        return [line.strip() for line in f if line.strip()][:n]


def run_trove_embed(a, model, ids, trove=None):
    out = json.loads(sh([trove or a.trove, "model", "embed", model, "--ids", "--threads",
                         str(a.threads), "--timing"] + ids))
    return out["embed_ms"], out["cpu_ms"], np.array(out["vectors"], np.float64)


def run_llama(a, exe, lib, model, ids_file, batch, seqs=64):
    with tempfile.NamedTemporaryFile("r", suffix=".vec") as vf:
        out = json.loads(sh([exe, model, ids_file, "--threads", str(a.threads), "--batch",
                             str(batch), "--seqs", str(seqs), "--backends", lib,
                             "--out", vf.name]))
        vec = np.loadtxt(vf.name, ndmin=2)
    return out["run_ms"], out["cpu_ms"], vec


def best(runs):
    return min(runs, key=lambda r: r[1])


def cos(x, y):
    return (x * y).sum(-1) / np.linalg.norm(x, axis=-1) / np.linalg.norm(y, axis=-1)


def row(name, ntok, t, l, parity):
    tw, tc = t[0], t[1]
    lw, lc = l[0], l[1]
    return ("| %s | %d | %.0f / %.0f | %.0f / %.0f | %.0f | %.0f | **%.2f×** | %.2f× | %s |" % (
        name, ntok, tw, tc, lw, lc, ntok / (tc / 1e3), ntok / (lc / 1e3), lc / tc, lw / tw,
        parity))


def bench_embed(a, exe, lib, names, tmp):
    ids = read_ids(os.path.join(a.models, "passages.ids"), a.passages)
    ids_file = os.path.join(tmp, "passages.ids")
    with open(ids_file, "w") as f:
        f.write("\n".join(ids) + "\n")
    ntok = sum(s.count(",") + 1 for s in ids)
    print("\nEmbedding %d passages (%d tokens), threads %d, best of %d by CPU time\n"
          % (len(ids), ntok, a.threads, a.iters))
    print("| model | tokens | trove wall / CPU ms | llama.cpp wall / CPU ms | trove tokens per "
          "CPU-s | llama.cpp tokens per CPU-s | trove faster (CPU) | (wall) | min cosine |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in names:
        m = os.path.join(a.models, n + ".gguf")
        tr, lr, br = [], [], []
        base = a.trove_base
        for _ in range(a.iters):
            tr.append(run_trove_embed(a, m, ids))
            if base:  # alternating with the other trove, same load
                try:
                    br.append(run_trove_embed(a, m, ids, base))
                except subprocess.CalledProcessError:  # e.g. a weight type it cannot read
                    print("| %s (--trove-base) | cannot read the file |||||||" % n, flush=True)
                    base = None
            lr.append(run_llama(a, exe, lib, m, ids_file, a.llama_batch))
        t, l = best(tr), best(lr)
        c = cos(t[2], l[2])
        print(row(n, ntok, t, l, "%.6f" % c.min()), flush=True)
        if br:
            b = best(br)
            print(row(n + " (--trove-base)", ntok, b, l, "%.6f" % cos(b[2], l[2]).min()),
                  flush=True)


def bench_rerank(a, exe, lib, names, tmp):
    with open(os.path.join(a.models, "rerank_docs.txt")) as f:
        docs = [d.strip() for d in f if d.strip()][:20]
    print("\nCross-encoder: 1 query x %d documents of 256 tokens, threads %d, best of %d by "
          "CPU time\n" % (len(docs), a.threads, a.iters))
    print("| model | tokens | trove wall / CPU ms | llama.cpp wall / CPU ms | trove tokens per "
          "CPU-s | llama.cpp tokens per CPU-s | trove faster (CPU) | (wall) | max score diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in names:
        m = os.path.join(a.models, n + ".gguf")
        ids = [json.loads(sh([a.trove, "model", "tokenize", m, "--pair", QUERY, d]))["ids"]
               for d in docs]
        ids_file = os.path.join(tmp, "pairs.ids")
        with open(ids_file, "w") as f:
            for s in ids:
                f.write(",".join(map(str, s)) + "\n")
        ntok = sum(len(s) for s in ids)
        tr, br, lr = [], [], {k: [] for k in a.rerank_llama_seqs}
        for _ in range(a.iters):
            # --trove-base: the other trove alternated with this one, same load
            for exe_t, out_t in [(a.trove, tr)] + ([(a.trove_base, br)] if a.trove_base else []):
                out = json.loads(sh([exe_t, "model", "rerank", m, "--threads", str(a.threads),
                                     "--timing", "--doc-tokens", "256", QUERY] + docs))
                out_t.append((out["rerank_ms"], out["cpu_ms"], np.array(out["scores"])))
            for k in a.rerank_llama_seqs:
                lr[k].append(run_llama(a, exe, lib, m, ids_file, a.llama_batch, k))
        # llama.cpp's best batching by CPU time: packed, its 2048-token
        # ubatch attends over every packed pair's keys (masked); one pair
        # per decode does not (session 35: 4% less CPU for 5 pairs)
        t = best(tr)
        l = best([best(v) for v in lr.values()])
        lk = next(k for k in a.rerank_llama_seqs if best(lr[k]) is l)
        d = np.abs(t[2] - l[2][:, 0]).max()
        print(row(n + " (llama.cpp --seqs %d)" % lk, ntok, t, l, "%.3g" % d), flush=True)
        if br:
            b = best(br)
            print(row(n + " (--trove-base)", ntok, b, l, "%.3g" % np.abs(b[2] - l[2][:, 0]).max()),
                  flush=True)
        if len(lr) > 1:
            print("|  llama.cpp CPU ms by --seqs: %s |||||||||" % ", ".join(
                "%d: %.0f" % (k, best(v)[1]) for k, v in lr.items()), flush=True)


def obsidian_docs(n, min_chars=2500):
    """n pages of the Obsidian help vault long enough for 256 Qwen3 tokens
    (front matter dropped; a leading '-' would read as an option)."""
    # the corpora: ../shared beside the checkout, or TROVE_SHARED_DIR (as
    # the tests take it: a worktree has no ../shared)
    shared = os.environ.get("TROVE_SHARED_DIR") or os.path.join(ROOT, "..", "shared")
    src = os.path.join(shared, "corpora", "obsidian-help", "en")
    texts = []
    for d, _, fs in sorted(os.walk(src)):
        for f in sorted(fs):
            if f.endswith(".md"):
                with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                    t = fh.read()
                if t.startswith("---\n") and "\n---\n" in t[4:]:
                    t = t[t.index("\n---\n", 4) + 5:]
                t = t.lstrip("-\n ")
                if len(t) >= min_chars:
                    texts.append(t[:4000])
    if len(texts) < n:
        sys.exit("llama_cpp_bench: --qwen3 needs %d long pages of %s" % (n, src))
    return texts[:n]


def bench_qwen3(a, exe, lib, tmp):
    """A Qwen3 reranker (tests/tools/qwen3_gguf.py --reranker [--bench]):
    trove with and without its prefix cache, llama.cpp on the same ids (the
    prompt around each document's first 256 tokens)."""
    m, q = a.qwen3, "how do I link two notes together"
    docs = obsidian_docs(a.qwen3_docs)
    seqs = []
    for d in docs:
        full = json.loads(sh([a.trove, "model", "tokenize", m, "--pair", q, d]))["ids"]
        dt = json.loads(sh([a.trove, "model", "tokenize", m, "--no-special", " " + d]))["ids"]
        # the pair holds the document's first tokens (tokenize --pair cuts it
        # to the reranker's default window) between the prompt's two parts
        k = next(i for i in range(len(full)) if full[i:i + 8] == dt[:8])
        n = 0
        while k + n < len(full) and n < len(dt) and full[k + n] == dt[n]:
            n += 1
        seqs.append(full[:k] + dt[:256] + full[k + n:])
    ids_file = os.path.join(tmp, "qwen3.ids")
    with open(ids_file, "w") as f:
        for s_ in seqs:
            f.write(",".join(map(str, s_)) + "\n")
    ntok = sum(len(s_) for s_ in seqs)
    print("\nQwen3 reranker %s: 1 query x %d Obsidian pages cut to 256 tokens (%d tokens with "
          "the prompt), threads %d, best of %d by CPU time\n"
          % (os.path.basename(m), len(docs), ntok, a.threads, a.iters))
    # alternating, iteration by iteration: llama.cpp (each batching of
    # --qwen3-llama-seqs), trove with its prefix cache, trove without
    variants = [([], "(prefix cache)"), (["--no-prefix-cache"], "--no-prefix-cache")]
    lseqs = [int(x) for x in a.qwen3_llama_seqs.split(",")]
    lr = {k: [] for k in lseqs}
    tr = [[] for _ in variants]
    for _ in range(a.iters):
        for k in lseqs:
            lr[k].append(run_llama(a, exe, lib, m, ids_file, a.llama_batch, k))
            print("  llama.cpp --seqs %d: wall %.0f ms, CPU %.0f ms (load %s)"
                  % (k, lr[k][-1][0], lr[k][-1][1], loadavg()), flush=True)
        for j, (extra, name) in enumerate(variants):
            out = json.loads(sh([a.trove, "model", "rerank", m, "--threads", str(a.threads),
                                 "--timing", "--doc-tokens", "256"] + extra + [q] + docs))
            tr[j].append((out["rerank_ms"], out["cpu_ms"], np.array(out["scores"])))
            print("  trove %s: wall %.0f ms, CPU %.0f ms (load %s)"
                  % (name, out["rerank_ms"], out["cpu_ms"], loadavg()), flush=True)
    print()
    print("| run | tokens | trove wall / CPU ms | llama.cpp wall / CPU ms | trove tokens per "
          "CPU-s | llama.cpp tokens per CPU-s | trove faster (CPU) | (wall) | max P(yes) diff |")
    print("|---|---|---|---|---|---|---|---|---|")
    # llama.cpp's best batching by CPU time
    l = best([best(v) for v in lr.values()])
    lk = next(k for k in lseqs if best(lr[k]) is l)
    for j, (extra, name) in enumerate(variants):
        t = best(tr[j])
        d = np.abs(t[2] - l[2][:, 0]).max()
        print(row("trove " + name + " vs llama.cpp --seqs %d" % lk, ntok, t, l, "%.3g" % d),
              flush=True)
    for k in lseqs:  # parity of every llama.cpp batching
        d = np.abs(best(tr[0])[2] - best(lr[k])[2][:, 0]).max()
        print("\nP(yes) trove vs llama.cpp --seqs %d: max diff %.3g; llama.cpp best CPU %.0f ms"
              % (k, d, best(lr[k])[1]))
    print("\nP(yes) per document, trove: %s\nllama.cpp: %s"
          % (" ".join("%.4f" % x for x in best(tr[0])[2]),
             " ".join("%.4f" % x for x in l[2][:, 0])))


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trove", default=os.path.join(ROOT, "build", "trove"))
    p.add_argument("--models", default=None, help="model folder (kept; default temporary)")
    p.add_argument("--trove-base", default=None,
                   help="a second trove binary (e.g. main's) run alternately (embedding and cross-encoder rows)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--iters", type=int, default=2)
    p.add_argument("--passages", type=int, default=200)
    p.add_argument("--llama-batch", type=int, default=2048)
    p.add_argument("--only", default=None, help="comma-separated model names")
    p.add_argument("--no-rerank", action="store_true")
    p.add_argument("--rerank-only", action="store_true")
    p.add_argument("--qwen3", default=None,
                   help="a Qwen3 reranker GGUF (tests/tools/qwen3_gguf.py --reranker --bench)")
    p.add_argument("--qwen3-docs", type=int, default=20)
    p.add_argument("--qwen3-llama-seqs", default="64,1",
                   help="llama.cpp's sequences per batch for --qwen3 (comma-separated: each "
                        "is run, the best by CPU time compared; 1 = one causal sequence per "
                        "decode, no attention across the packed batch's masked keys)")
    p.add_argument("--rerank-llama-seqs", default="64,1",
                   help="llama.cpp's pairs per batch for the cross-encoder rows (comma-"
                        "separated; each is run, the best by CPU time compared)")
    a = p.parse_args()
    a.rerank_llama_seqs = [int(x) for x in a.rerank_llama_seqs.split(",")]
    if not os.access(a.trove, os.X_OK):
        sys.exit("llama_cpp_bench: no trove binary at %s (bash scripts/build.sh build)" % a.trove)
    lib, src = llama_paths()
    tmp = tempfile.mkdtemp(prefix="trove-llama-bench-")
    a.models = a.models or tmp
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import llama_cpp_models
    names = a.only.split(",") if a.only else llama_cpp_models.MODELS
    emb = [n for n in names if "_rerank_" not in n and not a.rerank_only]
    rr = [n for n in names if "_rerank_" in n and not a.no_rerank]
    if emb or rr:
        sh(["/usr/bin/python3", os.path.join(ROOT, "bench", "llama_cpp_models.py"), a.models,
            "--only", ",".join(emb + rr)])
    make_mixes(a, lib, src, tmp, emb + rr, llama_cpp_models)
    exe = build_tool(lib, src, tmp, "llama_cpp_embed")
    with open("/proc/loadavg") as f:
        load0 = " ".join(f.read().split()[:3])
    rev = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
    print("trove %s (%s), llama.cpp: %s; load average before: %s"
          % (rev, a.trove, lib, load0))
    if emb:
        bench_embed(a, exe, lib, emb, tmp)
    if rr:
        bench_rerank(a, exe, lib, rr, tmp)
    if a.qwen3:
        bench_qwen3(a, exe, lib, tmp)
    with open("/proc/loadavg") as f:
        print("\nload average after: %s" % " ".join(f.read().split()[:3]))
    subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
