#!/usr/bin/env python3
"""Warm daemon vs cold CLI latency, and a load test under watcher updates.

usage: bench/daemon_bench.py TROVE_BIN [NOTES] [RUNS] [MODEL]   (see daemon_bench.sh)

The vault: NOTES synthetic notes of 120 words: 90 drawn with Zipf's law
(s = 1) from 20,000 English words (the GloVe model's vocabulary, ranks
150-20,150, when MODEL is given; else made-up words), 30 from a fixed list
of 26 words that are in every note.

1. Latency: `trove search QUERY -n 10` as a process (posix_spawn and wait4:
   spawn, dynamic loading and exit included), cold (TROVE_NO_DAEMON=1) and
   through a running daemon, RUNS times each, for
   - typical: two words of Zipf ranks 50-2,000 (each in ~0.5-15 % of the
     notes, the median query matches the number printed);
   - every-note: one of the 26 words, which every note contains (the
     keyword channel ranks all NOTES chunks);
   - hybrid: the typical queries with the static MODEL (vectors of every
     chunk made by `trove embed` first);
   - vsearch: the same queries, `trove vsearch` (the vector channel alone).
   Wall p50 / p90 / p99 in ms, the client's CPU time (user + system, from
   wait4) and the daemon's CPU time per request (from /proc/PID/stat).
2. Load (skipped with DAEMON_BENCH_NO_LOAD=1, e.g. for big vaults): 8 concurrent socket clients x 2,000 mixed requests (search 60 %,
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
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = os.path.abspath(sys.argv[1])
NOTES = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
MODEL = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
random.seed(7)
WORDS = ["alpha", "bravo", "cargo", "delta", "ember", "fjord", "gamma", "harbor", "ionic",
         "jasper", "kelvin", "lumen", "mosaic", "nectar", "orbit", "prism", "quartz",
         "raven", "sierra", "tundra", "umber", "vertex", "willow", "xenon", "yonder", "zephyr"]


def vocabulary():
    if MODEL:
        vocab = json.loads((Path(MODEL) / "tokenizer.json").read_text())["model"]["vocab"]
        ranked = [w for w, _ in sorted(vocab.items(), key=lambda x: x[1])
                  if w.isalpha() and w.isascii() and len(w) > 2 and w not in WORDS]
        return ranked[150:20150]
    rnd = random.Random(11)
    syl = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "ve", "zu", "bra", "dri", "fle"]
    out = set()
    while len(out) < 20000:
        out.add("".join(rnd.choice(syl) for _ in range(rnd.randint(2, 4))))
    return sorted(out)


VOCAB = vocabulary()
_cum, _acc = [], 0.0
for r in range(len(VOCAB)):
    _acc += 1.0 / (r + 1)
    _cum.append(_acc)


def zipf_words(rnd, n):
    return rnd.choices(VOCAB, cum_weights=_cum, k=n)


tmp = Path(tempfile.mkdtemp(prefix="trove-dbench-"))
vault = tmp / "vault"
env = dict(os.environ)
env.update({"TROVE_INDEX": str(tmp / "index.db"), "TROVE_CONFIG_DIR": str(tmp / "cfg"),
            "XDG_RUNTIME_DIR": str(tmp / "run"), "XDG_CACHE_HOME": str(tmp / "cache"),
            "NO_COLOR": "1"})
env.pop("TROVE_NO_DAEMON", None)
env.pop("TROVE_EMBED_MODEL", None)
(tmp / "run").mkdir()
note_words = {}


def note_text(i, gen):
    rnd = random.Random(i * 7919 + gen)
    zw = zipf_words(rnd, 90)
    note_words[i] = set(zw)
    common = [rnd.choice(WORDS) for _ in range(30)]
    body = zw[:60] + common[:20]
    rnd.shuffle(body)
    part = zw[60:] + common[20:]
    rnd.shuffle(part)
    return "# Note %d gen%d\n\n%s gen%d marker%d\n\n## Part\n\n%s\n" % (
        i, gen, " ".join(body), gen, i, " ".join(part))


for i in range(NOTES):
    d = vault / ("d%02d" % (i % 50))
    d.mkdir(parents=True, exist_ok=True)
    (d / ("n%05d.md" % i)).write_text(note_text(i, 0))


def trove(*args, extra=None, check=True):
    e = dict(env)
    e.update(extra or {})
    p = subprocess.run([BIN, *args], env=e, capture_output=True)
    if check and p.returncode:
        sys.exit("trove %s failed: %s" % (" ".join(args), p.stderr.decode(errors="replace")))
    return p


trove("collection", "add", str(vault), "--name", "v")
t0 = time.monotonic()
trove("update")
print("vault: %d notes, indexed in %.1f s" % (NOTES, time.monotonic() - t0))
if MODEL:
    t0 = time.monotonic()
    trove("embed", "--model", MODEL)
    print("embedded with %s in %.1f s" % (MODEL, time.monotonic() - t0))

qrnd = random.Random(5)
typical = ["%s %s" % (VOCAB[qrnd.randrange(50, 2000)], VOCAB[qrnd.randrange(50, 2000)])
           for _ in range(50)]
matches = sorted(sum(1 for ws in note_words.values() if set(q.split()) & ws) for q in typical)
print("typical queries match %d notes (median; %d-%d)" % (
    matches[len(matches) // 2], matches[0], matches[-1]))

# Same bytes either way (the e2e tests check this too; here on this vault).
cold_out = {}
for q in typical[:5] + WORDS[:3]:
    cold_out[q] = trove("search", q, "-n", "10", extra={"TROVE_NO_DAEMON": "1"}).stdout
    if not cold_out[q]:
        sys.exit("no output for %r" % q)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def spawn(args, e):
    """Wall ms and CPU ms (user + system) of one trove process."""
    fa = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
          (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    t = time.perf_counter()
    pid = os.posix_spawn(BIN, [BIN, *args], e, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if status:
        sys.exit("trove %s: exit status %d" % (" ".join(args), status))
    return wall, (ru.ru_utime + ru.ru_stime) * 1000


def daemon_cpu(pid):
    f = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def latency(queries, extra, dpid, cmd="search"):
    e = dict(env)
    e.update(extra)
    walls, cpus = [], []
    d0 = daemon_cpu(dpid) if dpid else 0
    for k in range(RUNS):
        w, c = spawn([cmd, queries[k % len(queries)], "-n", "10"], e)
        walls.append(w)
        cpus.append(c)
    dcpu = (daemon_cpu(dpid) - d0) / RUNS if dpid else None
    return walls, sum(cpus) / len(cpus), dcpu


def loadavg():
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


kinds = [("typical", typical, {}), ("every-note", WORDS, {})]
if MODEL:
    kinds.append(("hybrid (static model)", typical, {"TROVE_EMBED_MODEL": MODEL}, "search"))
    kinds.append(("vsearch (static model)", typical, {"TROVE_EMBED_MODEL": MODEL}, "vsearch"))
kinds = [k if len(k) == 4 else k + ("search",) for k in kinds]
print("load average before: %s" % loadavg())
cold = {name: latency(qs, dict(x, TROVE_NO_DAEMON="1"), None, cmd) for name, qs, x, cmd in kinds}
trove("daemon", "--detach", "--idle", "600")
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


dpid = Client().call("hello", {})["result"]["pid"]
for q, want in cold_out.items():
    if trove("search", q, "-n", "10").stdout != want:
        sys.exit("daemon output differs from the cold path for %r" % q)
warm = {}
for name, qs, x, cmd in kinds:
    latency(qs, x, None, cmd)                     # warm-up (opens the model)
    warm[name] = latency(qs, x, dpid, cmd)
print("load average after: %s" % loadavg())
print()
print("| `trove search|vsearch QUERY -n 10`, process included | p50 ms | p90 ms | p99 ms "
      "| client CPU ms | daemon CPU ms |")
print("|---|---|---|---|---|---|")
for name, _, _, _ in kinds:
    for how, res in (("cold", cold[name]), ("daemon", warm[name])):
        walls, ccpu, dcpu = res
        print("| %s, %s | %.2f | %.2f | %.2f | %.2f | %s |" % (
            name, how, pct(walls, 50), pct(walls, 90), pct(walls, 99), ccpu,
            "-" if dcpu is None else "%.2f" % dcpu))

if os.environ.get("DAEMON_BENCH_NO_LOAD"):
    trove("daemon", "stop", check=False)
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0)

# ---- load ----
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
                q = rnd.choice(typical) if rnd.random() < 0.5 else \
                    rnd.choice(WORDS) + " " + rnd.choice(WORDS)
                r = c.call("search", {"query": q, "limit": 10})
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


print()
print("load average before the load test: %s" % loadavg())
t0 = time.monotonic()
threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
w = threading.Thread(target=writer)
for t in threads + [w]:
    t.start()
for t in threads + [w]:
    t.join()
wall = time.monotonic() - t0
deadline = time.monotonic() + 60
while True:    # the watcher's last batch may still be indexing
    r = Client().call("search", {"query": "gen1", "limit": 0})
    if len(r["result"]["items"]) >= 500 or time.monotonic() > deadline:
        break
    time.sleep(0.5)
print("load: 8 clients x 2000 mixed requests in %.1f s (%.0f req/s) while 500 notes were "
      "rewritten: %d errors, %d torn results, p50 %.2f ms, p99 %.2f ms; afterwards %d notes "
      "carry the new version; load average %s" % (
          wall, 16000 / wall, len(errors), torn[0], pct(lat, 50), pct(lat, 99),
          len(r["result"]["items"]), loadavg()))
if errors:
    print("first errors:", errors[:3])
trove("daemon", "stop")
shutil.rmtree(tmp, ignore_errors=True)
