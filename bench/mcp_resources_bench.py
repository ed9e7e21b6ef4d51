#!/usr/bin/python3
"""MCP resources/list over every note of the tldr-pages corpus (38k notes).

    /usr/bin/python3 bench/mcp_resources_bench.py [--bin build/trove] [--keep DIR]

Extracts $TROVE_SHARED_DIR/corpora/tldr-pages.tar.gz (default ../shared) into
a temporary folder, indexes it there (TROVE_INDEX / TROVE_CONFIG_DIR point
into it; the update is not timed), then starts one `trove mcp` over stdio,
initializes, and follows nextCursor from the first page to the last. Prints
the pages, the notes listed, the wall time of the whole listing, the CPU time
the server spent on it (utime+stime from /proc, before and after), and the
slowest and fastest page: with keyset paging every page costs about the same
wherever it starts. Target (issue 15): the whole corpus in <= 3 s.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_seconds(pid):
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("TROVE_BIN", str(REPO / "build" / "trove")))
    ap.add_argument("--keep", help="work in this folder and keep it (reuses an index there)")
    args = ap.parse_args()
    shared = Path(os.environ.get("TROVE_SHARED_DIR", REPO.parent / "shared"))
    tarball = shared / "corpora" / "tldr-pages.tar.gz"
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="trove-mcpres-"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TROVE_INDEX=str(work / "index.db"),
               TROVE_CONFIG_DIR=str(work / "config"), XDG_CACHE_HOME=str(work / "cache"),
               XDG_DATA_HOME=str(work / "data"), XDG_RUNTIME_DIR=str(work / "run"),
               TROVE_NO_DAEMON="1")
    (work / "run").mkdir(mode=0o700, exist_ok=True)
    try:
        corpus = work / "tldr"
        if not corpus.exists():
            with tarfile.open(tarball) as t:
                t.extractall(corpus)
        if not (work / "index.db").exists():
            for cmd in (["collection", "add", str(corpus), "--name", "tldr"], ["update"]):
                subprocess.run([args.bin] + cmd, env=env, check=True, capture_output=True)
        p = subprocess.Popen([args.bin, "mcp"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)

        def call(i, method, params):
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                      "params": params}).encode() + b"\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        call(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "0"}})
        cpu0, t0 = cpu_seconds(p.pid), time.perf_counter()
        cursor, pages, notes, page_s = None, 0, 0, []
        seen = set()
        while True:
            t = time.perf_counter()
            r = call(pages + 1, "resources/list", {"cursor": cursor} if cursor else {})
            page_s.append(time.perf_counter() - t)
            res = r["result"]
            pages += 1
            notes += len(res["resources"])
            seen.update(x["uri"] for x in res["resources"])
            cursor = res.get("nextCursor")
            if not cursor:
                break
        wall, cpu = time.perf_counter() - t0, cpu_seconds(p.pid) - cpu0
        p.stdin.close()
        p.wait()
        assert len(seen) == notes, "a note was listed twice"
        print("trove: %s" % args.bin)
        print("load average: %s" % " ".join(os.getloadavg().__repr__().strip("()").split(", ")))
        print("resources/list: %d notes in %d pages: %.2f s wall, %.2f s server CPU"
              % (notes, pages, wall, cpu))
        print("per page: fastest %.0f ms, slowest %.0f ms (first %.0f ms, last %.0f ms)"
              % (min(page_s) * 1e3, max(page_s) * 1e3, page_s[0] * 1e3, page_s[-1] * 1e3))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
