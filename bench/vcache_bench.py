#!/usr/bin/env python3
"""Daemon CPU per vsearch / hybrid search request, socket only (no client
process): what the vector segment cache saves (docs/performance.md).

usage: bench/vcache_bench.py MODEL NOTES REQUESTS BIN [BIN...]

One synthetic vault of NOTES notes (three sections of 40 words drawn from
the static MODEL's vocabulary; one chunk each) is indexed and
embedded once with the first BIN; then each BIN serves it as a daemon and
answers REQUESTS `vsearch` and REQUESTS hybrid `search` requests over one
connection (after 20 warm-up requests). Printed: the daemon's CPU ms per
request (user + system from /proc/PID/stat) and its vec_cache counters
when it has them."""
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODEL, NOTES, REQS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
BINS = [os.path.abspath(b) for b in sys.argv[4:]]
tmp = Path(tempfile.mkdtemp(prefix="trove-vcbench-"))
env = dict(os.environ, HOME=str(tmp), TROVE_INDEX=str(tmp / "index.db"),
           TROVE_CONFIG_DIR=str(tmp / "cfg"), XDG_RUNTIME_DIR=str(tmp / "run"),
           TROVE_EMBED_MODEL=MODEL)
env.pop("TROVE_NO_DAEMON", None)
(tmp / "run").mkdir()
vocab = json.loads((Path(MODEL) / "tokenizer.json").read_text())["model"]["vocab"]
words = [w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2][200:20200]
rnd = random.Random(5)
vault = tmp / "vault"
for i in range(NOTES):
    d = vault / ("d%03d" % (i % 100))
    d.mkdir(parents=True, exist_ok=True)
    secs = ["## %s\n\n%s\n" % (rnd.choice(words), " ".join(rnd.choices(words, k=40)))
            for _ in range(3)]
    (d / ("n%06d.md" % i)).write_text("# Note %d\n\n" % i + "\n".join(secs))


def run(b, *a):
    p = subprocess.run([b, *a], env=env, capture_output=True, text=True)
    if p.returncode:
        sys.exit("%s %s: %s" % (b, " ".join(a), p.stderr.strip()))


run(BINS[0], "collection", "add", str(vault), "--name", "v")
run(BINS[0], "update", "--no-embed")
run(BINS[0], "embed")
queries = [" ".join(rnd.choices(words[:3000], k=2)) for _ in range(100)]


def cpu(pid):
    f = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


class Client:
    def __init__(self):
        sock = next((tmp / "run" / "trove").glob("*.sock"))
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(str(sock))
        self.buf, self.n = b"", 0

    def call(self, op, args):
        self.n += 1
        self.s.sendall(json.dumps({"v": 1, "id": self.n, "op": op, "args": args}).encode() + b"\n")
        while b"\n" not in self.buf:
            self.buf += self.s.recv(1 << 20)
        line, self.buf = self.buf.split(b"\n", 1)
        r = json.loads(line)
        if "error" in r and r["error"]:
            sys.exit("%s: %r" % (op, r["error"]))
        return r


print("load average: %s" % " ".join(Path("/proc/loadavg").read_text().split()[:3]))
for b in BINS:
    run(b, "daemon", "--detach", "--no-watch", "--idle", "600")
    c = Client()
    pid = c.call("hello", {})["result"]["pid"]
    row = [b]
    for op, extra in (("vsearch", {}), ("search", {})):
        args = lambda q: dict(extra, query=q, limit=10, model=MODEL)   # noqa: E731
        for k in range(20):
            c.call(op, args(queries[k % len(queries)]))
        c0, t0 = cpu(pid), time.perf_counter()
        for k in range(REQS):
            c.call(op, args(queries[k % len(queries)]))
        row.append("%s %.3f ms CPU, %.3f ms wall" % (
            op, (cpu(pid) - c0) / REQS, (time.perf_counter() - t0) * 1000 / REQS))
    st = c.call("status", {})["result"]["daemon"]["models"].get("vec_cache")
    row.append("vec_cache %s" % json.dumps(st))
    print(" | ".join(row))
    c.s.close()
    run(b, "daemon", "stop")
    for _ in range(400):   # until it has exited
        if not Path("/proc/%d" % pid).exists():
            break
        time.sleep(0.05)
shutil.rmtree(tmp, ignore_errors=True)
