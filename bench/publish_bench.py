#!/usr/bin/env python3
"""Bulk throughput of `trove publish opensearch` against a loopback server.

    bench/publish_bench.py [--corpus DIR] [--runs 3] [--batch-size 500]

Indexes DIR (default ../shared/corpora/obsidian-help) into a temporary
index, embeds it with the GloVe test model (scripts/glove-model.sh), then
times full publishes (--full) to a Python loopback server that answers every
_bulk request with the documented response after reading it (one item per
action line, no storage): what is measured is trove's side — reading the
index, building the documents, NDJSON, libcurl — bounded by how fast the
Python server reads. Also prints the document bytes per chunk with and
without the vector (from --dry-run), for docs/scaling.md."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    meta = {}
    bytes_in = 0

    def log_message(self, *a):
        pass

    def _answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if Handler.meta:
            self._answer(200, {"i": {"mappings": {"_meta": Handler.meta}}})
        else:
            self._answer(404, {"error": "index_not_found_exception"})

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        Handler.bytes_in += n
        return self.rfile.read(n)

    def do_PUT(self):
        body = self._body()
        if self.path.endswith("/_mapping"):
            Handler.meta = json.loads(body)["_meta"]
        elif "/" not in self.path.strip("/"):
            Handler.meta = json.loads(body)["mappings"]["_meta"]
        self._answer(200, {"acknowledged": True})

    def do_POST(self):
        body = self._body()
        if self.path.split("?")[0].endswith("/_bulk"):
            items = []
            lines = body.split(b"\n")
            i = 0
            while i < len(lines) - 1:
                op = b"delete" if lines[i].startswith(b'{"delete"') else b"index"
                items.append({op.decode(): {"_id": "x", "status": 200}})
                i += 1 if op == b"delete" else 2
            self._answer(200, {"took": 1, "errors": False, "items": items})
        else:
            self._answer(200, {"deleted": 0})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(REPO.parent / "shared/corpora/obsidian-help"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", default="500")
    ap.add_argument("--trove", default=str(REPO / "build/trove"))
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pubbench-"))
    env = dict(os.environ, TROVE_INDEX=str(tmp / "index.db"), TROVE_CONFIG_DIR=str(tmp / "cfg"),
               XDG_CACHE_HOME=str(tmp / "cache"), TROVE_NO_DAEMON="1")
    glove = subprocess.run(["bash", str(REPO / "scripts/glove-model.sh")], capture_output=True,
                           text=True, check=True).stdout.strip()
    env["TROVE_EMBED_MODEL"] = glove
    run = lambda *args: subprocess.run([a.trove, *args], env=env, check=True,
                                       capture_output=True, text=True)
    run("collection", "add", a.corpus, "--name", "c")
    run("update")
    run("embed")
    out = tmp / "dry"
    s = json.loads(run("publish", "opensearch", "--dry-run", str(out), "--json").stdout)
    total = sum(f.stat().st_size for f in out.glob("bulk-*.ndjson"))
    vec_bytes = 0
    for f in out.glob("bulk-*.ndjson"):
        for line in f.open("rb"):
            if line.startswith(b'{"docid"'):
                d = json.loads(line)
                vec_bytes += len(json.dumps(d.pop("embedding", []), separators=(",", ":")))
    chunks = s["upserts"]
    print("corpus %s: %d notes, %d chunks, %d-d vectors" % (a.corpus, s["notes"], chunks, s["dim"]))
    print("NDJSON: %.0f bytes/chunk with the vector, %.0f without" %
          (total / chunks, (total - vec_bytes) / chunks))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    for r in range(a.runs):
        Handler.bytes_in = 0
        t0 = time.monotonic()
        c0 = os.times()
        s = json.loads(run("publish", "opensearch", url, "--index", "bench", "--full", "--json",
                           "--batch-size", a.batch_size).stdout)
        dt = time.monotonic() - t0
        c1 = os.times()
        cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
        print("run %d: %d chunks in %d requests, %.2f s wall, %.2f s trove CPU: %.0f chunks/s, "
              "%.1f MB/s sent" % (r + 1, s["upserts"], s["batches"], dt, cpu, s["upserts"] / dt,
                                  Handler.bytes_in / dt / 1e6))
    srv.shutdown()
    subprocess.run(["rm", "-rf", str(tmp)])


if __name__ == "__main__":
    sys.exit(main())
