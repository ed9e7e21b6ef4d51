#!/usr/bin/env python3
"""Warm daemon vs cold CLI latency, and a load test under watcher updates.

usage: bench/daemon_bench.py TROVE_BIN [NOTES] [RUNS]   (see daemon_bench.sh)

1. Latency: `trove search WORD` as a process (spawn included), cold
   (TROVE_NO_DAEMON=1) and through a running daemon, RUNS times each over
   a vault of NOTES synthetic notes: p50 / p90 / p99 in ms.
2. Load: 8 concurrent socket clients x 2,000 mixed requests (search 60 %,
   get 15 %, ls 10 %, status 5 %, multi_get 10 %) while the watcher indexes
   a rewrite of 500 notes. Reports errors, torn results (a result whose
   title and snippet come from different versions of a note), p50/p99.
"""
import json
import os
import re
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = sys.argv[1]
NOTES = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
random.seed(7)
WORDS = ["alpha", "bravo", "cargo", "delta", "ember", "fjord", "gamma", "harbor", "ionic",
         "jasper", "kelvin", "lumen", "mosaic", "nectar", "orbit", "prism", "quartz",
         "raven", "sierra", "tundra", "umber", "vertex", "willow", "xenon", "yonder", "zephyr"]

tmp = Path(tempfile.mkdtemp(prefix="trove-dbench-"))
vault = tmp / "vault"
env = dict(os.environ)
env.update({"TROVE_INDEX": str(tmp / "index.db"), "TROVE_CONFIG_DIR": str(tmp / "cfg"),
            "XDG_RUNTIME_DIR": str(tmp / "run"), "XDG_CACHE_HOME": str(tmp / "cache"),
            "NO_COLOR": "1"})
env.pop("TROVE_NO_DAEMON", None)
env.pop("TROVE_EMBED_MODEL", None)
(tmp / "run").mkdir()


def note_text(i, gen):
    body = " ".join(random.choice(WORDS) for _ in range(120))
    return "# Note %d gen%d\n\n%s gen%d marker%d\n\n## Part\n\n%s\n" % (
        i, gen, body, gen, i, " ".join(random.choice(WORDS) for _ in range(60)))


for i in range(NOTES):
    d = vault / ("d%02d" % (i % 50))
    d.mkdir(parents=True, exist_ok=True)
    (d / ("n%05d.md" % i)).write_text(note_text(i, 0))


def trove(*args, extra=None, check=True):
    e = dict(env)
    e.update(extra or {})
    p = subprocess.run([BIN, *args], env=e, capture_output=True, text=True)
    if check and p.returncode:
        sys.exit("trove %s failed: %s" % (" ".join(args), p.stderr))
    return p


trove("collection", "add", str(vault), "--name", "v")
t0 = time.monotonic()
trove("update")
print("vault: %d notes, indexed in %.1f s" % (NOTES, time.monotonic() - t0))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def latency(extra):
    out = []
    for k in range(RUNS):
        q = WORDS[k % len(WORDS)]
        t = time.perf_counter()
        trove("search", q, "-n", "10", extra=extra)
        out.append((time.perf_counter() - t) * 1000)
    return out


cold = latency({"TROVE_NO_DAEMON": "1"})
trove("daemon", "--detach", "--idle", "600")
latency({})                                       # warm-up
warm = latency({})
print()
print("| `trove search WORD -n 10`, process included | p50 ms | p90 ms | p99 ms |")
print("|---|---|---|---|")
for name, xs in (("cold (TROVE_NO_DAEMON=1)", cold), ("through the daemon", warm)):
    print("| %s | %.2f | %.2f | %.2f |" % (name, pct(xs, 50), pct(xs, 90), pct(xs, 99)))

# ---- load ----
sock = next((tmp / "run" / "trove").glob("*.sock"))


class Client:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(60)
        self.s.connect(str(sock))
        self.buf = b""
        self.n = 0

    def call(self, op, args):
        self.n += 1
        self.s.sendall(json.dumps({"v": 1, "id": self.n, "op": op, "args": args}).encode() + b"\n")
        while b"\n" not in self.buf:
            c = self.s.recv(1 << 20)
            if not c:
                raise EOFError
            self.buf += c
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


errors, torn, lat = [], [0], []
lock = threading.Lock()


def client(k):
    rnd = random.Random(k)
    c = Client()
    mine = []
    for i in range(2000):
        x = rnd.random()
        t = time.perf_counter()
        try:
            if x < 0.6:
                r = c.call("search", {"query": rnd.choice(WORDS) + " " + rnd.choice(WORDS),
                                      "limit": 10})
                for it in r.get("result", {}).get("items", []):
                    g1 = it["title"].rsplit("gen", 1)[-1]
                    sn = it["snippet"].replace("\u0002", "").replace("\u0003", "")
                    # whole "genN" tokens only: the snippet window may cut one
                    gens = set(re.findall(r"\bgen(\d+)\b(?!\.\.\.)", sn))
                    if gens and gens != {g1}:
                        with lock:
                            torn[0] += 1
            elif x < 0.75:
                n = rnd.randrange(NOTES)
                r = c.call("get", {"ref": "v/d%02d/n%05d.md" % (n % 50, n), "count": 5})
            elif x < 0.85:
                r = c.call("ls", {"target": "v/d%02d" % rnd.randrange(50)})
            elif x < 0.9:
                r = c.call("status", {})
            else:
                r = c.call("multi_get", {"glob": "v/d%02d/n0000*.md" % rnd.randrange(50),
                                         "max_bytes": 4096})
            if not r.get("ok"):
                with lock:
                    errors.append(r)
        except Exception as e:  # noqa: BLE001
            with lock:
                errors.append(repr(e))
        mine.append((time.perf_counter() - t) * 1000)
    with lock:
        lat.extend(mine)


def writer():
    for i in random.Random(3).sample(range(NOTES), 500):
        p = vault / ("d%02d" % (i % 50)) / ("n%05d.md" % i)
        tmpf = p.with_suffix(".md.tmp")
        tmpf.write_text(note_text(i, 1))
        os.rename(tmpf, p)                        # an editor's atomic save
        time.sleep(0.002)


t0 = time.monotonic()
threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
w = threading.Thread(target=writer)
for t in threads + [w]:
    t.start()
for t in threads + [w]:
    t.join()
wall = time.monotonic() - t0
time.sleep(1.5)
r = Client().call("search", {"query": "gen1", "limit": 0})
print()
print("load: 8 clients x 2000 mixed requests in %.1f s (%.0f req/s) while 500 notes were "
      "rewritten: %d errors, %d torn results, p50 %.2f ms, p99 %.2f ms; afterwards %d notes "
      "carry the new version" % (wall, 16000 / wall, len(errors), torn[0], pct(lat, 50),
                                 pct(lat, 99), len(r["result"]["items"])))
if errors:
    print("first errors:", errors[:3])
trove("daemon", "stop")
shutil.rmtree(tmp, ignore_errors=True)
