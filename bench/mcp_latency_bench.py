#!/usr/bin/python3
"""Latency of the MCP `search` tool beside the CLI's, cold and through the daemon.

    /usr/bin/python3 bench/mcp_latency_bench.py [--bin build/trove] [--notes 2000] [--runs 100]

Builds a synthetic vault in a temporary folder (notes of 120 words drawn with
Zipf's law from 20,000 made-up words), indexes it (not timed), and times the
same two-word queries four ways:

- `trove search Q -n 10` as a process (start, dynamic loading, exit included),
  cold (TROVE_NO_DAEMON=1) and through a running `trove daemon`;
- a `tools/call` of `search` (top_k 10) on one long-running `trove mcp` over
  stdio (what an agent's client keeps open): request written to the answer
  read, cold (the server's own index handle) and through the daemon.

Prints p50/p90 wall milliseconds and the load average. The MCP and CLI
answers are checked to name the same notes first.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def vocabulary():
    rnd = random.Random(11)
    syl = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "ve", "zu", "bra", "dri", "fle"]
    out = set()
    while len(out) < 20000:
        out.add("".join(rnd.choice(syl) for _ in range(rnd.randint(2, 4))))
    return sorted(out)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=100)
    a = ap.parse_args()
    vocab = vocabulary()
    cum, acc = [], 0.0
    for r in range(len(vocab)):
        acc += 1.0 / (r + 1)
        cum.append(acc)
    tmp = Path(tempfile.mkdtemp(prefix="trove-mcplat-"))
    env = dict(os.environ, TROVE_INDEX=str(tmp / "index.db"), TROVE_CONFIG_DIR=str(tmp / "cfg"),
               XDG_RUNTIME_DIR=str(tmp / "run"), XDG_CACHE_HOME=str(tmp / "cache"), NO_COLOR="1")
    env.pop("TROVE_NO_DAEMON", None)
    env.pop("TROVE_EMBED_MODEL", None)
    (tmp / "run").mkdir(mode=0o700)
    cold_env = dict(env, TROVE_NO_DAEMON="1")
    try:
        vault = tmp / "vault"
        for i in range(a.notes):
            rnd = random.Random(i)
            d = vault / ("d%02d" % (i % 20))
            d.mkdir(parents=True, exist_ok=True)
            (d / ("n%05d.md" % i)).write_text("# Note %d\n\n%s\n" % (
                i, " ".join(rnd.choices(vocab, cum_weights=cum, k=120))))
        run = lambda *args, e=env: subprocess.run([a.bin, *args], env=e, check=True,
                                                  capture_output=True)
        run("collection", "add", str(vault), "--name", "v")
        run("update")
        qrnd = random.Random(5)
        queries = ["%s %s" % (vocab[qrnd.randrange(50, 2000)], vocab[qrnd.randrange(50, 2000)])
                   for _ in range(a.runs)]

        def cli(e):
            times, first = [], {}
            for q in queries:
                t0 = time.perf_counter()
                out = run("search", q, "-n", "10", "--json", e=e).stdout
                times.append((time.perf_counter() - t0) * 1000)
                res = json.loads(out)["results"]
                first[q] = res[0]["path"] if res else None
            return times, first

        def mcp(e):
            p = subprocess.Popen([a.bin, "mcp"], env=e, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                      "params": {"protocolVersion": "2025-11-25",
                                                 "capabilities": {}, "clientInfo": {
                                                     "name": "bench", "version": "0"}}})
                          .encode() + b"\n")
            p.stdin.flush()
            p.stdout.readline()
            times, first = [], {}
            for i, q in enumerate(queries, 1):
                msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                    "name": "search", "arguments": {"query": q, "top_k": 10}}}
                t0 = time.perf_counter()
                p.stdin.write(json.dumps(msg).encode() + b"\n")
                p.stdin.flush()
                line = p.stdout.readline()
                times.append((time.perf_counter() - t0) * 1000)
                res = json.loads(line)["result"]["structuredContent"]["results"]
                first[q] = res[0]["path"] if res else None
            p.stdin.close()
            p.wait()
            return times, first

        rows = [("CLI `trove search -n 10 --json`, cold", cli, cold_env),
                ("MCP `search` tool call, cold", mcp, cold_env)]
        results = {name: fn(e) for name, fn, e in rows}
        run("daemon", "--detach", "--idle", "600", "--no-watch")
        drows = [("CLI `trove search -n 10 --json`, daemon", cli, env),
                 ("MCP `search` tool call, daemon", mcp, env)]
        for name, fn, e in drows:
            fn(e)   # warm-up
            results[name] = fn(e)
        run("daemon", "stop")
        firsts = [f for _, f in results.values()]
        assert all(f == firsts[0] for f in firsts), "the four ways disagree on the best note"
        print("vault: %d notes; %d queries; load average %s" % (
            a.notes, len(queries), " ".join(Path("/proc/loadavg").read_text().split()[:3])))
        print("| %s | p50 ms | p90 ms |" % "way")
        print("|---|---|---|")
        for name, (times, _) in results.items():
            print("| %s | %.2f | %.2f |" % (name, pct(times, 50), pct(times, 90)))
    finally:
        subprocess.run([a.bin, "daemon", "stop"], env=env, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
