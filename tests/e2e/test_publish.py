"""`trove publish opensearch`: golden checks of the bodies (--dry-run), the
incremental logic against snapshots (edit, delete, rename, rollback -> the
exact upserts and deletes), and the HTTP client against a loopback server
that keeps documents the way the documented _bulk API says and answers with
documented responses, including 429 with Retry-After, per-item failures
(`errors: true`) and a request that times out. These test trove's client,
not OpenSearch."""
import json
import math
import os
import shutil
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import Trove, glove_model, trove_bin

NOTES = {
    "alpha.md": "---\ntitle: Alpha\ntags: [garden, plan]\nauthor: bo\n---\n# Alpha\n\n"
                "Tomatoes need sun and water.\n\n## Soil\n\n" + "Compost feeds the soil. " * 40 +
                "\n\n## Harvest\n\n" + "Pick them red and warm. " * 40 + "\n",
    "beta.md": "# Beta\n\nBeta links [[alpha]] and talks about bread baking.\n",
    "sub/gamma.md": "---\naliases: [G]\ndate: 2024-05-01\n---\n# Gamma\n\nRiver stones and maps.\n",
    "delta.md": "# Delta\n\nA short note on coffee.\n",
}


class FakeOpenSearch:
    """Keeps indexes, mappings, pipelines and documents as the documented
    APIs do; `faults` is a list of functions (method, path, body) -> None or
    (status, headers, body, delay) that may answer a request instead."""

    def __init__(self):
        self.requests = []
        self.indexes = {}     # name -> {"mapping": {...}, "docs": {id: source}}
        self.pipelines = {}
        self.faults = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _serve(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with fake.lock:
                    fake.requests.append((self.command, self.path,
                                          self.headers.get("Content-Type"), body))
                    answer = None
                    for f in list(fake.faults):
                        answer = f(self.command, self.path, body)
                        if answer:
                            break
                    if not answer:
                        answer = fake.answer(self.command, self.path, body)
                status, headers, out, delay = answer
                if delay:
                    time.sleep(delay)
                data = json.dumps(out).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_PUT = do_POST = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def answer(self, method, path, body):
        p = path.split("?")[0].strip("/").split("/")
        if p[0] == "_search" and p[1] == "pipeline" and method == "PUT":
            self.pipelines[p[2]] = json.loads(body)
            return 200, {}, {"acknowledged": True}, 0
        idx = self.indexes.get(p[0])
        if len(p) == 1 and method == "PUT":
            if idx:
                return 400, {}, {"error": {"type": "resource_already_exists_exception"},
                                 "status": 400}, 0
            self.indexes[p[0]] = {"mapping": json.loads(body), "docs": {}}
            return 200, {}, {"acknowledged": True, "index": p[0]}, 0
        if not idx:
            return 404, {}, {"error": {"type": "index_not_found_exception"}, "status": 404}, 0
        if p[1] == "_mapping" and method == "GET":
            return 200, {}, {p[0]: {"mappings": idx["mapping"]["mappings"]}}, 0
        if p[1] == "_mapping" and method == "PUT":
            idx["mapping"]["mappings"]["_meta"] = json.loads(body)["_meta"]
            return 200, {}, {"acknowledged": True}, 0
        if p[1] == "_bulk" and method == "POST":
            return 200, {}, self.bulk(idx, body), 0
        if p[1] == "_search" and method == "POST":
            return 200, {}, self.search(p[0], idx, json.loads(body)), 0
        if p[1] == "_delete_by_query" and method == "POST":
            lt = json.loads(body)["query"]["range"]["snapshot"]["lt"]
            gone = [k for k, d in idx["docs"].items() if d["snapshot"] < lt]
            for k in gone:
                del idx["docs"][k]
            return 200, {}, {"deleted": len(gone), "failures": []}, 0
        return 400, {}, {"error": "unexpected %s %s" % (method, path)}, 0

    def bulk(self, idx, body):
        lines = body.decode().split("\n")
        assert lines[-1] == "", "NDJSON must end with a newline"
        items, i = [], 0
        while i < len(lines) - 1:
            action = json.loads(lines[i])
            [(op, meta)] = action.items()
            if op == "index":
                idx["docs"][meta["_id"]] = json.loads(lines[i + 1])
                items.append({"index": {"_index": "x", "_id": meta["_id"], "status": 201,
                                        "result": "created"}})
                i += 2
            else:
                assert op == "delete"
                found = idx["docs"].pop(meta["_id"], None) is not None
                items.append({"delete": {"_index": "x", "_id": meta["_id"],
                                         "status": 200 if found else 404,
                                         "result": "deleted" if found else "not_found"}})
                i += 1
        return {"took": 3, "errors": False, "items": items}

    def search(self, name, idx, req):
        """A documented search answer: chunks scored by how many of the
        keyword list's terms they hold (enough to test the client)."""
        def find_terms(q):
            if isinstance(q, dict):
                if "match" in q and "terms" in q["match"]:
                    return q["match"]["terms"]["query"].split()
                for v in q.values():
                    r = find_terms(v)
                    if r is not None:
                        return r
            if isinstance(q, list):
                for v in q:
                    r = find_terms(v)
                    if r is not None:
                        return r
            return None
        words = find_terms(req["query"]) or []
        scored = []
        for k, d in idx["docs"].items():
            n = sum(1 for w in d["terms"].split() if w in words)
            if n:
                scored.append((-n, k))
        scored.sort()
        hits = [{"_index": name, "_id": k, "_score": float(-n),
                 "_source": {f: v for f, v in idx["docs"][k].items()
                             if f not in ("embedding", "terms") and not f.startswith("text_")}}
                for n, k in scored[:req["size"]]]
        return {"took": 5, "timed_out": False,
                "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
                "hits": {"total": {"value": len(hits), "relation": "eq"},
                         "max_score": hits[0]["_score"] if hits else None, "hits": hits}}

    def bulk_bodies(self, since=0):
        return [b for (m, p, _, b) in self.requests[since:] if p.split("?")[0].endswith("/_bulk")]


def parse_bulk(body):
    """(upserts {id: source}, deletes [id]) of one NDJSON body, checked line by line."""
    text = body.decode() if isinstance(body, bytes) else body
    assert text.endswith("\n")
    lines = text.split("\n")[:-1]
    ups, dels, i = {}, [], 0
    while i < len(lines):
        action = json.loads(lines[i])
        assert isinstance(action, dict) and len(action) == 1
        [(op, meta)] = action.items()
        assert set(meta) == {"_id"}
        if op == "index":
            src = json.loads(lines[i + 1])
            assert "index" not in src and "delete" not in src, "source line expected"
            assert meta["_id"] == "%s-%d" % (src["docid"], src["seq"])
            assert meta["_id"] not in ups
            ups[meta["_id"]] = src
            i += 2
        else:
            assert op == "delete", op
            dels.append(meta["_id"])
            i += 1
    return ups, dels


def dry_run(trove, out, *flags):
    r = trove.ok("publish", "opensearch", "--dry-run", out, "--json", *flags)
    files = sorted(Path(out).glob("bulk-*.ndjson"))
    ups, dels = {}, []
    for f in files:
        u, d = parse_bulk(f.read_bytes())
        ups.update(u)
        dels += d
    return r.json(), ups, dels, files


def strip(docs):
    return {k: {f: v for f, v in d.items() if f not in ("snapshot", "date")}
            for k, d in docs.items()}


@pytest.fixture(scope="module")
def model():
    return glove_model()


@pytest.fixture
def env(tmp_path, model):
    """A small vault, indexed and embedded with the GloVe test model, and a
    fake OpenSearch on loopback."""
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    t = Trove(tmp_path / "env")
    t.env["TROVE_NO_DAEMON"] = "1"
    t.env["TROVE_EMBED_MODEL"] = model
    t.env["TROVE_PUBLISH_BACKOFF_MS"] = "50"
    t.ok("collection", "add", vault, "--name", "v")
    t.ok("update")
    t.ok("embed")
    fake = FakeOpenSearch()
    yield t, vault, fake, tmp_path
    fake.close()
    shutil.rmtree(t.run_dir, ignore_errors=True)


def update(t):
    t.ok("update")
    t.ok("embed")


# ---- golden bodies -----------------------------------------------------------

def test_dry_run_bodies_follow_the_documented_formats(env):
    t, vault, fake, tmp = env
    summary, ups, dels, files = dry_run(t, tmp / "out")
    assert summary["full"] and summary["dry_run"] and summary["dim"] == 100
    assert dels == [] and len(files) == summary["batches"] == 1
    mapping = json.loads((tmp / "out" / "index.json").read_text())
    props = mapping["mappings"]["properties"]
    assert mapping["settings"]["index"]["knn"] is True
    emb = props["embedding"]
    assert emb["type"] == "knn_vector" and emb["dimension"] == 100
    assert emb["method"]["name"] == "hnsw" and emb["method"]["space_type"] == "cosinesimil"
    assert props["text_en"]["analyzer"] == "english"
    assert props["terms"]["analyzer"] == "trove_terms"
    assert mapping["mappings"]["_source"]["excludes"] == ["embedding", "terms", "text_*"]
    meta = mapping["mappings"]["_meta"]["trove"]
    assert meta["dim"] == 100 and meta["snapshot"] == 1 and meta["fingerprint"]
    pipe = json.loads((tmp / "out" / "pipeline.json").read_text())
    [proc] = pipe["phase_results_processors"]
    assert proc["score-ranker-processor"]["combination"]["technique"] == "rrf"
    # one document per chunk, every chunk of the index
    db = sqlite3.connect(t.index)
    n_chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert len(ups) == n_chunks == summary["upserts"]
    for src in ups.values():
        assert set(props) >= set(src) - {"fm"}, set(src) - set(props)
        v = src["embedding"]
        assert len(v) == 100 and abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-3
        assert src["snapshot"] == 1 and src["collection"] == "v"
    alpha = [s for s in ups.values() if s["path"] == "alpha.md"]
    assert len(alpha) >= 2 and {tuple(s["tags"]) for s in alpha} == {("garden", "plan")}
    assert alpha[0]["fm"] == {"author": "bo"} and alpha[0]["title"] == "Alpha"
    gamma = [s for s in ups.values() if s["path"] == "sub/gamma.md"][0]
    assert gamma["folder"] == "sub" and gamma["aliases"] == ["G"]
    assert gamma["date"] == "2024-05-01" and gamma["date_source"] == "frontmatter:date"
    beta = [s for s in ups.values() if s["path"] == "beta.md"][0]
    assert "bake" in beta["terms"].split()          # trove's stemmed terms
    assert alpha[0]["in_degree"] == 1
    # stable: a second run writes the same bytes, and records nothing
    again = tmp / "out2"
    dry_run(t, again)
    assert (tmp / "out" / "bulk-0001.ndjson").read_bytes() == \
        (again / "bulk-0001.ndjson").read_bytes()
    assert db.execute("SELECT count(*) FROM meta WHERE key LIKE 'publish:%'").fetchone()[0] == 0


def test_batches_are_bounded(env):
    t, vault, fake, tmp = env
    summary, ups, dels, files = dry_run(t, tmp / "out", "--batch-size", "2")
    assert len(files) == summary["batches"] == math.ceil(summary["upserts"] / 2) > 1
    for f in files:
        u, d = parse_bulk(f.read_bytes())
        assert 1 <= len(u) + len(d) <= 2


def test_usage_errors(env):
    t, vault, fake, tmp = env
    for args in (["--nope"], ["opensearch", fake.url, "--bogus"], [], ["elastic", fake.url],
                 ["opensearch"], ["opensearch", fake.url, "--index", "Bad Name"]):
        r = t("publish", *args)
        assert r.rc == 2, r
    assert t.ok("publish", "--help").out.startswith("usage: trove publish opensearch")
    assert fake.requests == []


# ---- publishing and the incremental logic -------------------------------------

def publish(t, fake, *flags, env=None):
    before = len(fake.requests)
    r = t("publish", "opensearch", fake.url, "--index", "notes", "--json", *flags, env=env)
    ups, dels = {}, []
    for b in fake.bulk_bodies(before):
        u, d = parse_bulk(b)
        ups.update(u)
        dels += d
    return r, ups, dels


def expected_state(t, tmp):
    _, ups, _, _ = dry_run(t, tmp / "full", "--full")
    return strip(ups)


def test_incremental_publish_sends_exactly_the_change(env):
    t, vault, fake, tmp = env
    r, ups, dels = publish(t, fake)
    assert r.rc == 0, r
    doc = r.json()
    assert doc["full"] and doc["created"] and doc["snapshot"] == 1
    idx = fake.indexes["notes"]
    assert strip(idx["docs"]) == expected_state(t, tmp)
    assert idx["mapping"]["mappings"]["_meta"]["trove"]["snapshot"] == 1
    assert "notes-hybrid" in fake.pipelines
    assert all(ct == "application/x-ndjson" for (m, p, ct, _) in fake.requests
               if p.endswith("/_bulk"))

    # nothing changed: nothing sent
    r, ups, dels = publish(t, fake)
    assert r.rc == 0 and not r.json()["full"] and ups == {} and dels == []

    # edit: the note's chunks again, and deletes for the chunks it lost
    alpha_before = {k for k, d in idx["docs"].items() if d["path"] == "alpha.md"}
    assert len(alpha_before) >= 2
    (vault / "alpha.md").write_text("# Alpha\n\nNow a short note about tomatoes.\n")
    update(t)
    r, ups, dels = publish(t, fake)
    assert r.rc == 0, r
    assert {d["path"] for d in ups.values()} == {"alpha.md"}
    assert sorted(dels) == sorted(alpha_before - set(ups))
    assert strip(idx["docs"]) == expected_state(t, tmp)

    # delete a note
    delta = {k for k, d in idx["docs"].items() if d["path"] == "delta.md"}
    (vault / "delta.md").unlink()
    update(t)
    r, ups, dels = publish(t, fake)
    assert ups == {} and sorted(dels) == sorted(delta)

    # rename: the new path's chunks, the old path's deleted
    beta = {k for k, d in idx["docs"].items() if d["path"] == "beta.md"}
    (vault / "beta.md").rename(vault / "sub" / "beta2.md")
    update(t)
    r, ups, dels = publish(t, fake)
    assert {d["path"] for d in ups.values()} == {"sub/beta2.md"}
    assert sorted(dels) == sorted(beta)
    assert strip(idx["docs"]) == expected_state(t, tmp)

    # rollback to the first snapshot publishes as a change too
    t.ok("snapshot", "rollback", "1")
    held = set(idx["docs"])
    want = expected_state(t, tmp)
    r, ups, dels = publish(t, fake)
    assert r.rc == 0 and not r.json()["full"], r
    assert {d["path"] for d in ups.values()} == {"alpha.md", "beta.md", "delta.md"}
    assert sorted(dels) == sorted(held - set(want))
    assert strip(idx["docs"]) == want
    snap = json.loads(t.ok("snapshot", "list", "--json").out)["current"]
    assert idx["mapping"]["mappings"]["_meta"]["trove"]["snapshot"] == snap
    db = sqlite3.connect(t.index)
    [(val,)] = db.execute("SELECT value FROM meta WHERE key = ?",
                          ("publish:%s/notes" % fake.url,)).fetchall()
    assert val.split()[0] == str(snap)


def test_dry_run_after_a_publish_writes_only_the_change(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    (vault / "delta.md").write_text("# Delta\n\nTea now.\n")
    update(t)
    out = tmp / "inc"
    r = t.ok("publish", "opensearch", fake.url, "--index", "notes", "--dry-run", out, "--json")
    assert not r.json()["full"]
    _, ups, dels, _ = dry_run(t, out, "--index", "notes")   # no URL: everything
    u, d = parse_bulk((out / "bulk-0001.ndjson").read_bytes()) if False else ({}, [])
    n = len(fake.requests)
    r = t.ok("publish", "opensearch", fake.url, "--index", "notes", "--dry-run", out, "--json")
    assert len(fake.requests) == n, "a dry run sends nothing"
    u, d = parse_bulk((out / "bulk-0001.ndjson").read_bytes())
    assert {s["path"] for s in u.values()} == {"delta.md"}


def test_another_index_is_refused_without_full(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    fake.indexes["notes"]["mapping"]["mappings"]["_meta"]["trove"]["index_id"] = "someone-else"
    r, ups, dels = publish(t, fake)
    assert r.rc == 1 and "another trove index" in r.err and ups == {}
    r, ups, dels = publish(t, fake, "--full")
    assert r.rc == 0 and r.json()["full"]
    assert any(p.startswith("/notes/_delete_by_query") for (m, p, _, _) in fake.requests)


# ---- the HTTP client -------------------------------------------------------------

def once(pred, answer):
    """A fault that answers the first request matching pred, then steps aside."""
    state = {"done": False}

    def f(method, path, body):
        if not state["done"] and pred(method, path, body):
            state["done"] = True
            return answer(body) if callable(answer) else answer
        return None
    return f


def is_bulk(m, p, b):
    return m == "POST" and p.endswith("/_bulk")


def test_429_with_retry_after_is_waited_and_sent_again(env):
    t, vault, fake, tmp = env
    fake.faults.append(once(is_bulk, (429, {"Retry-After": "1"},
                                      {"error": {"type": "too_many_requests"}, "status": 429}, 0)))
    r, ups, dels = publish(t, fake)
    assert r.rc == 0, r
    bulks = fake.bulk_bodies()
    assert len(bulks) == 2 and bulks[0] == bulks[1]
    assert r.json()["retried"] == 1 and "HTTP 429" in r.err
    assert strip(fake.indexes["notes"]["docs"]) == expected_state(t, tmp)


def test_partial_failures_retry_only_the_refused_items(env):
    t, vault, fake, tmp = env

    def partial(body):
        # the documented shape: errors true, per-item statuses; the first
        # item is rejected for now (429), the others go in
        resp = fake.bulk(fake.indexes["notes"], body)
        first = resp["items"][0]["index"]
        del fake.indexes["notes"]["docs"][first["_id"]]
        first.update(status=429, error={"type": "es_rejected_execution_exception",
                                        "reason": "queue full"})
        first.pop("result")
        resp["errors"] = True
        return 200, {}, resp, 0
    fake.faults.append(once(is_bulk, partial))
    r, ups, dels = publish(t, fake)
    assert r.rc == 0, r
    bulks = fake.bulk_bodies()
    assert len(bulks) == 2
    u0, _ = parse_bulk(bulks[0])
    u1, _ = parse_bulk(bulks[1])
    assert list(u1) == [next(iter(u0))], "only the refused item is sent again"
    assert strip(fake.indexes["notes"]["docs"]) == expected_state(t, tmp)


def test_an_item_refused_for_good_fails_and_records_nothing(env):
    t, vault, fake, tmp = env

    def refuse(body):
        resp = fake.bulk(fake.indexes["notes"], body)
        item = resp["items"][-1]["index"]
        item.update(status=400, error={"type": "mapper_parsing_exception",
                                       "reason": "failed to parse field [date]"})
        resp["errors"] = True
        return 200, {}, resp, 0
    fake.faults.append(once(is_bulk, refuse))
    r, _, _ = publish(t, fake)
    assert r.rc == 1 and "mapper_parsing_exception" in r.err and "refused" in r.err, r
    db = sqlite3.connect(t.index)
    assert db.execute("SELECT count(*) FROM meta WHERE key LIKE 'publish:%'").fetchone()[0] == 0
    assert fake.indexes["notes"]["mapping"]["mappings"]["_meta"]["trove"]["snapshot"] == 1
    # the next publish sends everything again (their _meta moved only at
    # creation, ours not at all) and succeeds
    r, ups, _ = publish(t, fake)
    assert r.rc == 0, r
    assert strip(fake.indexes["notes"]["docs"]) == expected_state(t, tmp)


def test_a_request_that_times_out_is_sent_again(env):
    t, vault, fake, tmp = env
    fake.faults.append(once(is_bulk, lambda body: (200, {}, fake.bulk(fake.indexes["notes"], body), 3)))
    r, ups, dels = publish(t, fake, env={"TROVE_PUBLISH_TIMEOUT": "1"})
    assert r.rc == 0, r
    assert "Timeout" in r.err or "timed out" in r.err, r.err
    assert len(fake.bulk_bodies()) == 2


def test_no_server_fails_at_once(env):
    t, vault, fake, tmp = env
    url = fake.url
    fake.close()
    r = t("publish", "opensearch", url, "--index", "notes")
    assert r.rc == 1 and "connect" in r.err.lower(), r


# ---- search --remote ----------------------------------------------------------------

def searches(fake, since=0):
    return [(p, json.loads(b)) for (m, p, _, b) in fake.requests[since:]
            if p.split("?")[0].endswith("/_search")]


LOCAL_ONLY = {"score", "channels", "snippet"}


def test_remote_search_renders_like_a_local_one(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    local = t.search("coffee")
    n = len(fake.requests)
    remote = t.search("coffee", "--remote", fake.url + "/notes")
    [(path, body)] = searches(fake, n)
    # a hybrid query through the index's RRF pipeline, the query embedded by
    # trove (same model as the published vectors) and analysed into its terms
    assert path == "/notes/_search?search_pipeline=notes-hybrid"
    kw, knn = body["query"]["hybrid"]["queries"]
    assert kw["bool"]["should"][0] == {"match": {"terms": {"query": "coffe"}}}
    vec = knn["knn"]["embedding"]["vector"]
    assert len(vec) == 100 and abs(math.sqrt(sum(x * x for x in vec)) - 1) < 1e-3
    # the fake scores keywords only; local search adds a vector neighbour
    assert [r["path"] for r in remote] == ["delta.md"] == [r["path"] for r in local[:1]]
    strip_r = lambda r: {k: v for k, v in r.items() if k not in LOCAL_ONLY}
    assert strip_r(remote[0]) == strip_r(local[0])
    assert "\x02" not in remote[0]["snippet"] and "coffee" in remote[0]["snippet"]
    # the text output has the same lines but for the score
    lt = t.ok("search", "coffee", "-n", "1").out.splitlines()
    rt = t.ok("search", "coffee", "-n", "1", "--remote", fake.url + "/notes").out.splitlines()
    assert len(lt) == len(rt) and lt[1:] == rt[1:], (lt, rt)


def test_remote_search_maps_the_filters(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    n = len(fake.requests)
    t.ok("search", "soil", "--remote", fake.url + "/notes", "-c", "v", "--tags", "garden",
         "--lang", "en", "--folder", "sub", "--since", "2024-01-01", "--until", "2024-12-31",
         "--where", "author=bo", "--where", "status in (a, b)", "--where", "exists(due)")
    [(path, body)] = searches(fake, n)
    kw, knn = body["query"]["hybrid"]["queries"]
    f = kw["bool"]["filter"]
    assert {"terms": {"collection": ["v"]}} in f
    assert {"term": {"tags": "garden"}} in f
    assert {"terms": {"lang": ["en"]}} in f
    assert {"prefix": {"path": "sub/"}} in f
    assert {"range": {"date": {"gte": "2024-01-01", "lte": "2024-12-31"}}} in f
    assert {"term": {"fm.author": "bo"}} in f
    assert {"terms": {"fm.status": ["a", "b"]}} in f
    assert {"exists": {"field": "fm.due"}} in f
    assert knn["knn"]["embedding"]["filter"]["bool"]["filter"] == f
    r = t("search", "soil", "--remote", fake.url + "/notes", "--where", "priority>2")
    assert r.rc != 0 and "no remote filter" in r.err


def test_remote_search_checks_the_model_fingerprint(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    fake.indexes["notes"]["mapping"]["mappings"]["_meta"]["trove"]["fingerprint"] = "other|t1"
    r = t("search", "coffee", "--remote", fake.url + "/notes")
    assert r.rc == 1 and "fingerprints differ" in r.err, r
    n = len(fake.requests)
    remote = t.search("coffee", "--remote", fake.url + "/notes", "--no-vector")
    [(path, body)] = searches(fake, n)
    assert path == "/notes/_search" and "bool" in body["query"]
    assert [x["path"] for x in remote] == ["delta.md"]
    r = t("search", "coffee", "--remote", fake.url + "/nothing")
    assert r.rc == 1 and "no index 'nothing'" in r.err


def test_vsearch_remote_sends_the_knn_list_alone(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    n = len(fake.requests)
    t("vsearch", "coffee", "--remote", fake.url + "/notes", "--json")
    [(path, body)] = searches(fake, n)
    assert path == "/notes/_search" and set(body["query"]) == {"knn"}


def test_a_pruned_snapshot_publishes_everything_and_deletes_the_stale(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    with open(t.config / "config.yaml", "a") as f:
        f.write("snapshots: {last: 1, minutes: 0, hourly: 0, daily: 0}\n")
    for text in ("# Delta\n\nTea.\n", "# Delta\n\nWater.\n"):
        (vault / "delta.md").write_text(text)
        update(t)
    (vault / "beta.md").unlink()
    update(t)
    ids = [s["id"] for s in t.ok("snapshot", "list", "--json").json()["snapshots"]]
    assert 1 not in ids
    r, ups, dels = publish(t, fake)
    assert r.rc == 0, r
    doc = r.json()
    assert doc["full"] and "no longer kept" in doc["why_full"]
    assert any(p.startswith("/notes/_delete_by_query") for (m, p, _, _) in fake.requests)
    assert strip(fake.indexes["notes"]["docs"]) == expected_state(t, tmp)


def test_progress_bar_on_a_terminal(env):
    """stderr a terminal: a redrawn bar that ends with every action done."""
    import pty
    import subprocess
    t, vault, fake, tmp = env
    master, slave = pty.openpty()
    e = dict(t.env)
    p = subprocess.Popen([str(trove_bin()), "publish", "opensearch", fake.url, "--index", "notes",
                          "--batch-size", "2"], env=e, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    out, _ = p.communicate(timeout=60)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    assert p.returncode == 0, (out, err)
    n = len(fake.indexes["notes"]["docs"])
    assert b"\rpublishing [" in err and ("] %d/%d" % (n, n)).encode() in err, err


def test_chunks_sent_before_their_vectors_are_sent_again(env):
    """Adding vectors is no snapshot: a publish that sent chunks without
    them is followed by a full one, which carries them."""
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    (vault / "eps.md").write_text("# Eps\n\nSailing boats at dawn.\n")
    t.ok("update", env={"TROVE_EMBED_MODEL": None})
    r, ups, dels = publish(t, fake)
    assert r.rc == 0 and not r.json()["full"] and r.json()["no_vector"] == 1, r
    [(k, src)] = ups.items()
    assert src["path"] == "eps.md" and "embedding" not in src
    t.ok("embed")
    r, ups, dels = publish(t, fake)
    assert r.json()["full"] and "before they had vectors" in r.json()["why_full"]
    assert "embedding" in fake.indexes["notes"]["docs"][k]
    r, ups, dels = publish(t, fake)
    assert not r.json()["full"] and ups == {}


# ---- `remote:` in config.yaml: every front end asks the published index --------

def set_remote(t, url):
    cfg = t.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "remote: %s\n" % url)


def test_config_remote_answers_the_cli_and_local_forces_this_index(env):
    t, vault, fake, tmp = env
    assert publish(t, fake)[0].rc == 0
    local = t.search("coffee", "-n", "2")
    set_remote(t, fake.url + "/notes")
    n = len(fake.requests)
    got = t.search("coffee", "-n", "2")
    assert len(searches(fake, n)) == 1, fake.requests[n:]
    assert [r["path"] for r in got] == ["delta.md"]
    n = len(fake.requests)
    assert t.search("coffee", "-n", "2", "--local") == local != []
    assert searches(fake, n) == []
    # a local search never loads libcurl
    r = t.ok("search", "coffee", "--local", env={"LD_DEBUG": "libs"})
    assert "calling init:" in r.err and "libcurl" not in r.err
    r = t("search", "coffee", "--local", "--remote", fake.url + "/notes")
    assert r.rc == 2 and "--remote and --local" in r.err, r
    r = t("query", "coffee", "--local")
    assert r.rc == 2 and "unknown option --local" in r.err, r
    # a command that rewrites config.yaml keeps the setting
    other = tmp / "other"
    other.mkdir()
    t.ok("collection", "add", other, "--name", "w")
    assert "remote: " in (t.config / "config.yaml").read_text()
    n = len(fake.requests)
    t.ok("search", "coffee")
    assert len(searches(fake, n)) == 1
    # what the published index cannot filter is refused, not dropped
    r = t("search", "soil", "--where", "priority>2")
    assert r.rc != 0 and "no remote filter" in r.err, r
    r = t("search", "soil", "--heading", "Soil")
    assert r.rc != 0 and "no remote filter" in r.err, r
    # --full: the notes this machine has, read from its disk
    full = t.search("coffee", "-n", "1", "--full")
    assert full[0]["body"] == (vault / "delta.md").read_text(), full


def test_config_remote_answers_the_daemon_the_web_page_and_mcp(env, tmp_path):
    from test_mcp import SDK, npm_install, run_sdk
    from test_web import WebServer
    t, vault, fake, tmp = env
    (vault / "secret.md").write_text("---\nprivate: true\n---\n# Secret\n\ncoffee secret\n")
    update(t)
    assert publish(t, fake)[0].rc == 0
    set_remote(t, fake.url + "/notes")
    # the owner sees the private note remotely too; agents (MCP) must not
    assert "secret.md" in [r["path"] for r in t.search("coffee secret", "-n", "5")]
    # the daemon: started after the setting, it asks the published index
    warm = {"TROVE_NO_DAEMON": None}
    t.start_daemon(env=warm)
    try:
        before = t.daemon_requests()
        n = len(fake.requests)
        got = t.search("coffee", "-n", "2", env=warm)
        assert sorted(r["path"] for r in got) == ["delta.md", "secret.md"]
        assert t.daemon_requests() > before and len(searches(fake, n)) == 1
        r = t("search", "soil", "--where", "priority>2", env=warm)
        assert r.rc != 0 and "no remote filter" in r.err, r
    finally:
        assert t.stop_daemon().rc == 0
    # the web page: /api/search and the page itself
    w = WebServer(t)
    try:
        n = len(fake.requests)
        st, doc = w.json("/api/search?q=coffee&n=2")
        assert st == 200 and sorted(r["path"] for r in doc["results"]) == [
            "delta.md", "secret.md"], doc
        assert "delta.md" in w.get("/?q=coffee")
        assert len(searches(fake, n)) == 2
    finally:
        w.stop()
    # MCP through the SDK client: search and vsearch; a heading filter is refused
    sdk = npm_install(SDK, "the MCP TypeScript SDK")
    S = lambda name, **a: {"op": "callTool", "name": name, "arguments": a}
    n = len(fake.requests)
    out = run_sdk(sdk, t, tmp_path, [
        S("search", query="coffee", top_k=2),
        S("vsearch", query="coffee", top_k=2),
        S("search", query="soil", filters={"heading_path_contains": "Soil"}),
        S("search", query="coffee secret", top_k=5),
    ], "stdio")
    st = out["steps"]
    hits = st[0]["result"]["structuredContent"]["results"]
    assert [r["path"] for r in hits] == ["delta.md"], st[0]
    # the excerpt is the chunk, read from the note this machine has
    assert "coffee" in hits[0]["excerpt"]
    # the fake answers knn queries with no hits: asked, and no error
    assert not st[1]["result"].get("isError"), st[1]
    assert st[2]["result"]["isError"] is True
    assert "no remote filter" in st[2]["result"]["content"][0]["text"]
    # the agent boundary holds for remote results: the private note is left out
    kept = [r["path"] for r in st[3]["result"]["structuredContent"]["results"]]
    assert "delta.md" in kept and "secret.md" not in kept, st[3]
    body = [b for _, b in searches(fake, n)]
    assert len(body) == 3 and set(body[1]["query"]) == {"knn"}
