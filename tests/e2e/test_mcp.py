"""trove mcp: the Model Context Protocol server.

The official TypeScript SDK client (npm @modelcontextprotocol/sdk, installed
with its dependencies by scripts/npm-install.sh into a cache) drives the
server over both transports, stdio and Streamable HTTP, through
tests/tools/mcp_sdk_client.mjs: list the tools, call each with good and bad
arguments, read resources, check errors. The SDK checks structuredContent
against each tool's outputSchema itself. Those tests skip, saying why, when
node or the registry is unavailable; the raw protocol tests below (malformed
and oversized messages, version negotiation, Origin/Host/token checks) need
only Python.
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.parse

import pytest

from conftest import COLLECTION, REPO, expected_notes, file_lines, read_bytes, trove_bin

SDK = "@modelcontextprotocol/sdk@1.32.2"
DRIVER = REPO / "tests" / "tools" / "mcp_sdk_client.mjs"
SECRET = "wobblefrotzsecret"
MAX_MESSAGE = 1024 * 1024


def uri(rel):
    """The doc_uri of a note: RFC 3986 path characters kept, the rest
    percent-encoded as UTF-8."""
    return "trove://%s/%s" % (COLLECTION, urllib.parse.quote(rel, safe="/!$&'()*+,;=:@"))


# ---- fixtures ---------------------------------------------------------------

def npm_install(spec, what):
    """The folder scripts/npm-install.sh installed SPEC into (with its
    dependencies, cached); skips the test, saying why, without node or the
    registry."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (%s runs on Node.js)" % what)
    r = subprocess.run(["bash", str(REPO / "scripts" / "npm-install.sh"), spec],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 3:
        pytest.skip("%s unavailable: %s" % (what, r.stderr.strip()))
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="session")
def sdk_dir():
    return npm_install(SDK, "the MCP TypeScript SDK")


@pytest.fixture
def served(indexed, tmp_path):
    """The indexed fixture vault plus what a hostile client would go for: a
    secret outside every collection, a note swapped for a symlink to it after
    the update, and a file inside the vault that update leaves out."""
    trove, vault = indexed
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\n%s lives outside every vault.\n" % SECRET)
    link = vault / "inbox" / "reading-list.md"
    link.unlink()
    os.symlink(secret, link)
    return trove, vault


class HttpServer:
    """`trove mcp --http 127.0.0.1:0` in the background; .url once it listens."""

    def __init__(self, trove, *extra):
        self.proc = subprocess.Popen(
            [str(trove_bin()), "mcp", "--http", "127.0.0.1:0", *extra], env=trove.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(trove.home))
        self.url = self.proc.stdout.readline().decode().strip()
        assert self.url.startswith("http://127.0.0.1:") and self.url.endswith("/mcp"), (
            self.url, self.proc.stderr.read() if self.proc.poll() is not None else "")
        hostport = self.url[len("http://"):-len("/mcp")]
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        """SIGTERM: the server must stop cleanly (exit 0, no sanitizer report)."""
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        err = err.decode("utf-8", "replace")
        assert self.proc.returncode == 0, err
        assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err, err
        return err

    def request(self, method, body=None, headers=None, path="/mcp"):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=h)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, dict((k.lower(), v) for k, v in resp.getheaders()), data

    def initialize(self, version="2025-06-18", headers=None):
        status, hdrs, data = self.request("POST", init_msg(version), headers)
        assert status == 200, (status, data)
        return hdrs["mcp-session-id"], json.loads(data)


@pytest.fixture
def http_server(served):
    trove, _ = served
    servers = []

    def start(*extra):
        s = HttpServer(trove, *extra)
        servers.append(s)
        return s
    yield start
    for s in servers:
        if s.proc.poll() is None:
            s.stop()


def run_sdk(sdk_dir, trove, tmp_path, plan, mode, url=None, token=None, env=None):
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    args = ["node", str(DRIVER), sdk_dir, str(plan_file)]
    args += ["stdio", str(trove_bin())] if mode == "stdio" else ["http", url] + (
        [token] if token else [])
    r = subprocess.run(args, env=dict(trove.env, **(env or {})), capture_output=True,
                       text=True, timeout=120, cwd=str(trove.home))
    assert r.returncode == 0, r.stderr
    assert "ERROR: AddressSanitizer" not in r.stderr, r.stderr
    return json.loads(r.stdout)


# ---- the SDK client, over both transports ------------------------------------

def scenario(vault):
    """(name, step) pairs: every tool with good and bad arguments, resources."""
    S = lambda name, **a: {"op": "callTool", "name": name, "arguments": a}
    return [
        ("tools", {"op": "listTools"}),
        ("search", S("search", query="pointer arithmetic", top_k=3, include_scores=True)),
        ("search_short", S("search", query="pointer", max_excerpt_chars=20)),
        ("search_tags", S("search", query="broth tofu pasta pointer",
                          filters={"tags": ["cooking"]})),
        ("search_prefix", S("search", query="the", top_k=50,
                            filters={"doc_uri_prefix": uri("cooking/")})),
        ("search_uris", S("search", query="the", filters={
            "doc_uris": [uri("programming/c-pointers.md"), uri("Home.md")]})),
        ("search_heading", S("search", query="free", filters={
            "collection": COLLECTION, "heading_path_contains": "pointers IN c"})),
        ("search_top_k_big", S("search", query="x", top_k=51)),
        ("search_top_k_str", S("search", query="x", top_k="5")),
        ("search_no_query", S("search")),
        ("search_unknown_arg", S("search", query="x", limit=3)),
        ("search_bad_filter", S("search", query="x", filters={"folder": "a"})),
        ("search_bad_uri", S("search", query="x", filters={"doc_uris": ["/etc/passwd"]})),
        ("search_no_collection", S("search", query="x", filters={"collection": "nope"})),
        # a bare folder prefix applies in every collection; prefixes the index
        # cannot answer are tool errors the model reads, not JSON-RPC errors
        ("search_prefix_bare", S("search", query="the", top_k=50,
                                 filters={"doc_uri_prefix": "cooking/"})),
        ("search_prefix_http", S("search", query="x",
                                 filters={"doc_uri_prefix": "https://example.com/notes/"})),
        ("search_prefix_broken", S("search", query="x", filters={"doc_uri_prefix": "trove:///"})),
        ("search_prefix_nope", S("search", query="x",
                                 filters={"doc_uri_prefix": "trove://nope/decisions/"})),
        # "\u0000" is valid JSON: answered with the request's id, so the SDK
        # gets an error at once instead of waiting for a reply
        ("get_nul", S("get", path="a\u0000b")),
        ("search_nul", S("search", query="x", filters={"tags": ["a\u0000"]})),
        ("get_surrogate", S("get", path="a\ud800b")),
        ("unknown_tool", S("frobnicate")),
        ("get_range", S("get", path=uri("programming/c-pointers.md"), start_line=7,
                        end_line=10)),
        ("get_numbered", S("get", path="%s/Home.md" % COLLECTION, line_numbers=True)),
        ("get_glob", S("get", path="%s/programming/*.md" % COLLECTION)),
        ("get_budget", S("get", path="%s/programming/*.md" % COLLECTION, max_bytes=1500)),
        ("get_cut", S("get", path=uri("programming/c-pointers.md"), max_bytes=100)),
        ("get_dotdot", S("get", path="../../etc/passwd")),
        ("get_dotdot_coll", S("get", path="%s/../../etc/passwd" % COLLECTION)),
        ("get_abs", S("get", path="/etc/passwd")),
        ("get_uri_dotdot", S("get", path="trove://%s/..%%2F..%%2Fetc/passwd" % COLLECTION)),
        ("get_symlink", S("get", path=uri("inbox/reading-list.md"))),
        ("get_unindexed", S("get", path="%s/drafts/unfinished-idea.md" % COLLECTION)),
        ("get_missing", S("get", path="%s/no/such.md" % COLLECTION)),
        ("get_bad_range", S("get", path="%s/Home.md" % COLLECTION, start_line=5, end_line=2)),
        ("get_zero", S("get", path="%s/Home.md" % COLLECTION, start_line=0)),
        ("query", S("query", query="how do I handle errors in rust", include_scores=True)),
        ("query_no_rerank", S("query", query="how do I handle errors in rust", rerank=False,
                              include_scores=True)),
        ("query_few", S("query", query="rust", expand=False, candidates=2, top_k=5,
                        include_scores=True)),
        ("query_bad_candidates", S("query", query="rust", candidates=0)),
        ("query_bad_rerank", S("query", query="rust", rerank="no")),
        ("status", S("status")),
        ("status_arg", S("status", verbose=True)),
        ("resources", {"op": "listResources"}),
        ("resources_bad_cursor", {"op": "listResources", "cursor": "not a cursor!"}),
        ("resources_forged_cursor", {"op": "listResources", "cursor": "AAAA"}),
        ("templates", {"op": "listResourceTemplates"}),
        ("read", {"op": "readResource", "uri": uri("programming/c-pointers.md")}),
        ("read_missing", {"op": "readResource", "uri": uri("no/such.md")}),
        ("read_dotdot", {"op": "readResource",
                         "uri": "trove://%s/../../etc/passwd" % COLLECTION}),
        ("read_file_uri", {"op": "readResource", "uri": "file:///etc/passwd"}),
        ("read_symlink", {"op": "readResource", "uri": uri("inbox/reading-list.md")}),
        # a URI's first segment is a collection, never part of a bare PATH
        ("read_no_coll", {"op": "readResource", "uri": "trove://programming/c-pointers.md"}),
        ("get_no_coll", S("get", path="trove://programming/c-pointers.md")),
        ("ping", {"op": "ping"}),
    ]


def structured(step):
    """A successful tool result: structuredContent, which must equal the JSON
    text block (for clients without structured output)."""
    assert "result" in step, step
    r = step["result"]
    assert not r.get("isError"), r
    sc = r["structuredContent"]
    assert json.loads(r["content"][0]["text"].split("\n")[0]) == sc
    return sc


def tool_error(step, *needles):
    assert "result" in step, step
    r = step["result"]
    assert r.get("isError") is True, r
    text = r["content"][0]["text"]
    for n in needles:
        assert n in text, (n, text)
    assert SECRET not in text
    return text


def rpc_error(step, code, *needles):
    assert "error" in step, step
    e = step["error"]
    assert e["code"] == code, e
    for n in needles:
        assert n in e["message"], (n, e)
    return e["message"]


def check_scenario(out, vault):
    assert "connect_error" not in out, out
    assert out["server"]["name"] == "trove"
    assert "tools" in out["capabilities"] and "resources" in out["capabilities"]
    assert "search" in out["instructions"]
    names = [n for n, _ in scenario(vault)]
    assert len(out["steps"]) == len(names)
    st = dict(zip(names, out["steps"]))
    assert all(SECRET not in json.dumps(s) for s in out["steps"])

    tools = {t["name"]: t for t in st["tools"]["result"]["tools"]}
    assert set(tools) == {"search", "query", "get", "multi_get", "links", "similar", "status"}
    for t in tools.values():
        assert len(t["description"]) > 80
        assert t["inputSchema"]["type"] == "object"
        assert t["outputSchema"]["type"] == "object"
        assert t["annotations"]["readOnlyHint"] is True
    assert tools["search"]["inputSchema"]["properties"]["top_k"]["maximum"] == 50

    # search: provenance of every field against the file on disk
    res = structured(st["search"])["results"]
    assert 1 <= len(res) <= 3
    top = res[0]
    assert top["path"] == "programming/c-pointers.md"
    assert top["doc_uri"] == uri(top["path"]) and top["collection"] == COLLECTION
    assert top["docid"].startswith("#") and len(top["docid"]) == 9
    data = read_bytes(vault, top["path"])
    assert top["excerpt"] == data[top["start_byte"]:top["end_byte"]].decode()[:800]
    lines = file_lines(vault, top["path"])
    assert data[:top["start_byte"]].count(b"\n") + 1 == top["start_line"]
    assert top["excerpt"].split("\n")[0] == lines[top["start_line"]]
    assert top["heading_path"][0] == "Pointers in C and C++"
    assert top["scores"]["bm25"]["rank"] >= 1 and "title" in top["scores"]
    assert 0 < top["score"] <= 1 and "programming" in top["tags"]

    short = structured(st["search_short"])["results"]
    assert short and all(len(r["excerpt"]) <= 20 for r in short)
    assert any(r["excerpt_truncated"] for r in short)
    tagged = structured(st["search_tags"])["results"]
    assert tagged and all("cooking" in r["tags"] for r in tagged)
    assert not any(r["path"].startswith("programming/") for r in tagged)
    pre = structured(st["search_prefix"])["results"]
    assert pre and all(r["path"].startswith("cooking/") for r in pre)
    assert {r["path"] for r in pre} >= {"cooking/ramen-broth.md"}
    only = structured(st["search_uris"])["results"]
    assert {r["path"] for r in only} <= {"programming/c-pointers.md", "Home.md"} and only
    head = structured(st["search_heading"])["results"]
    assert [r["path"] for r in head] == ["programming/c-pointers.md"]

    rpc_error(st["search_top_k_big"], -32602, "top_k", "1 to 50")
    rpc_error(st["search_top_k_str"], -32602, "top_k")
    rpc_error(st["search_no_query"], -32602, "query", "required")
    rpc_error(st["search_unknown_arg"], -32602, "limit", "query")
    rpc_error(st["search_bad_filter"], -32602, "folder")
    rpc_error(st["search_bad_uri"], -32602, "trove://")
    tool_error(st["search_no_collection"], "nope", "collections: %s" % COLLECTION)
    bare = structured(st["search_prefix_bare"])["results"]
    assert {r["path"] for r in bare} == {r["path"] for r in pre}
    tool_error(st["search_prefix_http"], "not a trove:// URI", "folder prefix")
    tool_error(st["search_prefix_broken"], "trove://COLLECTION/")
    tool_error(st["search_prefix_nope"], "no collection named 'nope'")
    rpc_error(st["get_nul"], -32602, "NUL", "path")
    rpc_error(st["search_nul"], -32602, "NUL", "tags")
    rpc_error(st["get_surrogate"], -32602, "surrogate", "path")
    # no error an agent reads tells it to run a trove command
    for step in out["steps"]:
        assert "`trove" not in json.dumps(step), step
    rpc_error(st["unknown_tool"], -32602, "frobnicate", "search, query, get, multi_get, links, similar, status")

    # get
    g = structured(st["get_range"])
    n = g["notes"][0]
    assert (n["start_line"], n["end_line"]) == (7, 10) and not g["truncated"]
    assert n["text"] == "".join(l + "\n" for l in file_lines(vault, n["path"])[7:11])
    assert n["total_lines"] == len(file_lines(vault, n["path"])) - 1
    num = structured(st["get_numbered"])["notes"][0]["text"].split("\n")
    assert num[0] == "     1  ---" and num[6].startswith("     7  # Home")
    glob = structured(st["get_glob"])
    want = sorted(p for p in expected_notes(vault) if p.startswith("programming/")
                  and "/" not in p[len("programming/"):])
    assert sorted(x["path"] for x in glob["notes"]) == want
    assert all("text" in x for x in glob["notes"]) and not glob["truncated"]
    budget = structured(st["get_budget"])
    assert budget["truncated"] is True
    assert sum(len(x.get("text", "").encode()) for x in budget["notes"]) <= 1500
    assert any(x.get("skipped") for x in budget["notes"])
    cut = structured(st["get_cut"])
    assert cut["truncated"] and len(cut["notes"][0]["text"].encode()) <= 100
    assert cut["next_start_line"] == cut["notes"][0]["end_line"] + 1
    for k in ("get_dotdot", "get_dotdot_coll", "get_abs", "get_uri_dotdot"):
        tool_error(st[k], "refused")
    tool_error(st["get_symlink"], "outside")
    # an agent reads indexed notes only: a file update left out is "not
    # found", worded as a missing one (the agent boundary, api.h)
    tool_error(st["get_unindexed"], "drafts/unfinished-idea.md: not found in any collection")
    tool_error(st["get_missing"], "no/such.md")
    rpc_error(st["get_bad_range"], -32602, "end_line")
    rpc_error(st["get_zero"], -32602, "start_line")

    # query: the best-answer pipeline, its stage switches and their bounds
    assert {"rerank", "expand", "candidates"} <= set(tools["query"]["inputSchema"]["properties"])
    q = structured(st["query"])["results"]
    assert q[0]["path"] == "programming/rust/error-handling.md"
    assert q[0]["scores"]["pipeline"]["fused_rank"] >= 1
    assert q[0]["scores"]["pipeline"]["rerank_score"] is not None
    nr = structured(st["query_no_rerank"])["results"]
    assert nr and all(r["scores"]["pipeline"]["rerank_score"] is None for r in nr)
    few = structured(st["query_few"])["results"]
    assert 1 <= len(few) <= 5
    assert sum(r["scores"]["pipeline"]["rerank_score"] is not None for r in few) <= 2
    rpc_error(st["query_bad_candidates"], -32602, "candidates", "1 to 100")
    rpc_error(st["query_bad_rerank"], -32602, "rerank")

    s = structured(st["status"])
    assert [c["name"] for c in s["collections"]] == [COLLECTION]
    assert s["notes"] == len(expected_notes(vault)) and s["index_exists"] is True
    assert s["collections"][0]["notes"] == s["notes"]
    rpc_error(st["status_arg"], -32602, "verbose")

    # resources
    rs = st["resources"]["result"]["resources"]
    # the note swapped for a symlink out of the vault is not listed
    assert {r["uri"] for r in rs} == {uri(p) for p in expected_notes(vault)
                                      if p != "inbox/reading-list.md"}
    assert "nextCursor" not in st["resources"]["result"]
    rpc_error(st["resources_bad_cursor"], -32602, "cursor")
    rpc_error(st["resources_forged_cursor"], -32602, "cursor")
    tpl = st["templates"]["result"]["resourceTemplates"]
    assert tpl[0]["uriTemplate"] == "trove://{collection}/{+path}"
    c = st["read"]["result"]["contents"][0]
    assert c["uri"] == uri("programming/c-pointers.md")
    lines = file_lines(vault, "programming/c-pointers.md")
    assert c["text"].split("\n")[:len(lines) - 1] == [
        "%6d  %s" % (i, lines[i]) for i in range(1, len(lines))]
    rpc_error(st["read_missing"], -32002, "not found")
    rpc_error(st["read_dotdot"], -32602, "refused")
    rpc_error(st["read_file_uri"], -32602, "trove://")
    rpc_error(st["read_symlink"], -32602, "outside")
    rpc_error(st["read_no_coll"], -32002, "no collection")
    tool_error(st["get_no_coll"], "no such collection")
    assert st["ping"] == {"result": {}}


@pytest.fixture(params=["cold", "daemon"])
def daemon_mode(request, served):
    """'cold': the server holds the index itself; 'daemon': a `trove daemon`
    of the same index runs, and every answer must come through it. Its
    watcher is off: it would (rightly) re-index the note `served` swapped
    for a symlink, and the answers must be comparable with the cold ones."""
    trove, _ = served
    if request.param == "daemon":
        trove.start_daemon("--idle", "300", "--no-watch")
    return request.param


def without_watcher(steps):
    """The steps with the status tool's `watcher` (the daemon's own state)
    blanked: everything else must not depend on who answered."""
    steps = json.loads(json.dumps(steps))
    for step in steps:
        sc = step.get("result", {}).get("structuredContent")
        if isinstance(sc, dict) and "watcher" in sc:
            sc["watcher"] = None
            first, _, rest = step["result"]["content"][0]["text"].partition("\n")
            d = json.loads(first)
            d["watcher"] = None
            step["result"]["content"][0]["text"] = json.dumps(d) + "\n" + rest
    return steps


def check_daemon_mode(out, mode, trove, requests_before, sdk_dir, tmp_path, vault):
    """Through a daemon: the daemon answered (its request count grew by at
    least one per tool call that returned data), status reports its watcher,
    and every tool result equals the cold server's (TROVE_NO_DAEMON=1)."""
    watcher = structured(dict(zip([n for n, _ in scenario(vault)], out["steps"]))["status"])[
        "watcher"]
    if mode == "cold":
        assert watcher is None
        return
    assert watcher == {"state": "off", "problem": "disabled"}, watcher
    # Calls the server answered with data: each took a daemon request (and
    # those refused by the schema or the path checks never reach it).
    calls = 0
    for (_, s), o in zip(scenario(vault), out["steps"]):
        sc = o.get("result", {}).get("structuredContent") if s["op"] == "callTool" else None
        if sc and not o["result"].get("isError") and (
                sc.get("results") or sc.get("notes") or s["name"] == "status"):
            calls += 1
    assert calls >= 5
    assert trove.daemon_requests() - requests_before >= calls
    cold = run_sdk(sdk_dir, trove, tmp_path, [s for _, s in scenario(vault)], "stdio",
                   env={"TROVE_NO_DAEMON": "1"})
    assert without_watcher(out["steps"]) == without_watcher(cold["steps"])


def test_sdk_client_over_stdio(served, daemon_mode, sdk_dir, tmp_path):
    trove, vault = served
    before = trove.daemon_requests() if daemon_mode == "daemon" else 0
    out = run_sdk(sdk_dir, trove, tmp_path, [s for _, s in scenario(vault)], "stdio")
    check_scenario(out, vault)
    check_daemon_mode(out, daemon_mode, trove, before, sdk_dir, tmp_path, vault)


def test_sdk_client_over_http(served, daemon_mode, sdk_dir, tmp_path, http_server):
    trove, vault = served
    before = trove.daemon_requests() if daemon_mode == "daemon" else 0
    srv = http_server()
    out = run_sdk(sdk_dir, trove, tmp_path, [s for _, s in scenario(vault)], "http", srv.url)
    check_scenario(out, vault)
    check_daemon_mode(out, daemon_mode, trove, before, sdk_dir, tmp_path, vault)
    assert out["protocol_version"] == "2025-11-25"   # the 1.x SDK's newest
    assert len(out["session_id"]) == 32 and out["terminated"] is True
    srv.stop()


def test_sdk_client_http_with_token(served, sdk_dir, tmp_path, http_server):
    trove, vault = served
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + 'mcp:\n  token: "tok-123"\n')
    srv = http_server()
    plan = [{"op": "callTool", "name": "status", "arguments": {}}]
    out = run_sdk(sdk_dir, trove, tmp_path, plan, "http", srv.url, token="tok-123")
    assert "connect_error" not in out, out
    assert structured(out["steps"][0])["notes"] > 0
    out = run_sdk(sdk_dir, trove, tmp_path, plan, "http", srv.url, token="wrong")
    assert "401" in out["connect_error"]["message"] or "nauthorized" in \
        out["connect_error"]["message"], out


# ---- raw protocol: stdio -------------------------------------------------------

def init_msg(version, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}


def stdio_exchange(trove, lines):
    """Feed raw lines (str or dict) to `trove mcp`; return the reply lines."""
    data = b"".join((l if isinstance(l, bytes) else
                     (json.dumps(l) if isinstance(l, (dict, list)) else l).encode()) + b"\n"
                    for l in lines)
    p = subprocess.run([str(trove_bin()), "mcp"], input=data, env=trove.env,
                       capture_output=True, timeout=60, cwd=str(trove.home))
    assert p.returncode == 0, p.stderr
    assert b"AddressSanitizer" not in p.stderr, p.stderr
    return [json.loads(l) for l in p.stdout.decode().splitlines()]


def test_status_reports_the_daemons_watcher(indexed):
    """With a watching daemon, MCP status carries its watcher state; with
    none (or TROVE_NO_DAEMON=1) it is null, and the rest is the same."""
    trove, _ = indexed
    msgs = [init_msg("2025-06-18"), {"jsonrpc": "2.0", "method": "notifications/initialized"},
            call(2, "status")]

    def status(env=None):
        t = trove if env is None else type("T", (), {"env": dict(trove.env, **env),
                                                     "home": trove.home})()
        return stdio_exchange(t, msgs)[1]["result"]["structuredContent"]
    cold = status()
    assert cold["watcher"] is None
    trove.start_daemon("--idle", "300")
    # The daemon's start-up update commits (last_update moves): compare
    # once it has run.
    for _ in range(200):
        warm = status()
        if warm["watcher"]["updates"] >= 1 and warm["watcher"]["pending"] == 0:
            break
        time.sleep(0.05)
    w = warm.pop("watcher")
    assert w["state"] == "watching" and w["folders"] >= 1 and w["problem"] is None, w
    assert {"last_event", "pending", "updates"} <= set(w)
    cold = status({"TROVE_NO_DAEMON": "1"})
    assert cold.pop("watcher") is None
    assert warm == cold


def test_stdio_bad_messages_get_errors_and_the_server_keeps_serving(indexed):
    trove, _ = indexed
    ping = lambda i: {"jsonrpc": "2.0", "id": i, "method": "ping"}
    replies = stdio_exchange(trove, [
        init_msg("2025-06-18"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},   # no reply
        "this is not json",
        b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"" + b" " * 100,  # truncated
        b"[" + b"1," * (MAX_MESSAGE // 2) + b"1]",                  # oversized
        ping(3),
        {"id": 4, "method": "ping"},                                 # no "jsonrpc"
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"},       # bad id
        {"jsonrpc": "2.0", "id": 5, "method": "no/such"},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1]},
        [ping(7), {"jsonrpc": "2.0", "method": "notifications/x"}, ping(8)],
        [],
        "",                                                          # blank: skipped
        {"jsonrpc": "2.0", "id": 9, "result": {}},                   # a response: ignored
        {"jsonrpc": "2.0", "id": "s", "method": "tools/call",
         "params": {"name": "get", "arguments": {"path": "/etc/passwd"}}},
        b"\xff\xfe{}",
        ping(10),
    ])
    codes = [r.get("error", {}).get("code") if isinstance(r, dict) else "batch"
             for r in replies]
    assert codes == [None, -32700, -32700, -32600, None, -32600, -32600, -32601, -32602,
                     "batch", -32600, None, -32700, None], replies
    assert replies[3]["id"] is None and "larger than" in replies[3]["error"]["message"]
    assert replies[4] == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert [r["id"] for r in replies[9]] == [7, 8]
    assert replies[11]["id"] == "s" and replies[11]["result"]["isError"] is True
    assert replies[-1]["id"] == 10


@pytest.mark.parametrize("asked,got", [
    ("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"),
    ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25"),
    # 2026-07-28 has no initialize: a client asking for it there gets the
    # newest version that has one
    ("2026-07-28", "2025-11-25")])
def test_stdio_version_negotiation(indexed, asked, got):
    trove, _ = indexed
    replies = stdio_exchange(trove, [
        init_msg(asked),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "pointer"}}},
    ])
    assert replies[0]["result"]["protocolVersion"] == got
    tools = replies[1]["result"]["tools"]
    call = replies[2]["result"]
    body = json.loads(call["content"][0]["text"])
    assert body["results"][0]["path"] == "programming/c-pointers.md"
    if got >= "2025-06-18":
        assert all("outputSchema" in t for t in tools)
        assert call["structuredContent"] == body
    else:
        assert not any("outputSchema" in t for t in tools)
        assert "structuredContent" not in call
    assert ("instructions" in replies[0]["result"]) == (got != "2024-11-05")


def test_stdio_initialize_needs_a_version(indexed):
    trove, _ = indexed
    r = stdio_exchange(trove, [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {}}])
    assert r[0]["error"]["code"] == -32602 and "protocolVersion" in r[0]["error"]["message"]


def test_search_filters_with_cjk_paths(indexed):
    """doc_uri_prefix and doc_uris on non-ASCII paths: percent-encoded URIs,
    prefixes compared as bytes."""
    trove, vault = indexed
    replies = stdio_exchange(trove, [
        init_msg("2025-06-18"),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "斐波那契"}}},
    ])
    res = replies[1]["result"]["structuredContent"]["results"]
    hit = [r for r in res if r["path"] == "programming/斐波那契数列.md"]
    assert hit, res
    enc = hit[0]["doc_uri"]
    assert enc == ("trove://%s/programming/%%E6%%96%%90%%E6%%B3%%A2%%E9%%82%%A3%%E5%%A5%%91"
                   "%%E6%%95%%B0%%E5%%88%%97.md" % COLLECTION)
    replies = stdio_exchange(trove, [
        init_msg("2025-06-18"),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": "斐波那契", "filters": {
                "doc_uri_prefix": "trove://%s/programming/%%E6%%96%%90" % COLLECTION}}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "get", "arguments": {"path": enc, "end_line": 1}}},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": enc}},
    ])
    res = replies[1]["result"]["structuredContent"]["results"]
    assert [r["path"] for r in res] == ["programming/斐波那契数列.md"]
    note = replies[2]["result"]["structuredContent"]["notes"][0]
    assert note["path"] == "programming/斐波那契数列.md" and note["end_line"] == 1
    assert replies[3]["result"]["contents"][0]["text"].startswith("     1  ")


def test_http_needs_loopback_or_allow_remote(trove):
    r = trove("mcp", "--http", "0.0.0.0:0")
    assert r.rc == 2 and "--allow-remote" in r.err, r
    # a name other than localhost (which is 127.0.0.1, test_safety.py) is
    # never resolved
    r = trove("mcp", "--http", "example.invalid:0")
    assert r.rc == 2 and "numeric" in r.err, r


# ---- raw protocol: Streamable HTTP ------------------------------------------------

def test_http_sessions_and_methods(http_server):
    srv = http_server()
    sid, init = srv.initialize()
    assert init["result"]["protocolVersion"] == "2025-06-18"
    hv = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    # a notification: 202, no body
    st, _, body = srv.request("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                              hv)
    assert (st, body) == (202, b"")
    st, hdrs, body = srv.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, hv)
    assert st == 200 and hdrs["content-type"] == "application/json"
    assert json.loads(body) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    # malformed JSON-RPC: a parse error, and the session goes on
    st, _, body = srv.request("POST", "{not json", hv)
    assert json.loads(body)["error"]["code"] == -32700
    st, _, body = srv.request("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, hv)
    assert st == 200 and json.loads(body)["id"] == 3
    # no session / unknown session / bad protocol version
    st, _, body = srv.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"})
    assert st == 400 and "Mcp-Session-Id" in json.loads(body)["error"]["message"]
    st, _, _ = srv.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                           {"Mcp-Session-Id": "0" * 32})
    assert st == 404
    st, _, body = srv.request("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                              {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2099-01-01"})
    assert st == 400 and "MCP-Protocol-Version" in json.loads(body)["error"]["message"]
    # GET: no SSE stream here; other paths and media types
    st, hdrs, _ = srv.request("GET", None, hv)
    assert st == 405 and "POST" in hdrs["allow"]
    assert srv.request("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"}, hv,
                       path="/other")[0] == 404
    assert srv.request("POST", "x", dict(hv, **{"Content-Type": "text/plain"}))[0] == 415
    assert srv.request("POST", "x", dict(hv, Accept="text/html"))[0] == 406
    # DELETE ends the session
    assert srv.request("DELETE", None, {"Mcp-Session-Id": sid})[0] == 200
    assert srv.request("POST", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, hv)[0] == 404
    assert srv.request("DELETE", None, {"Mcp-Session-Id": sid})[0] == 404
    srv.stop()


def test_http_oversized_body_is_refused_and_the_server_keeps_serving(http_server):
    srv = http_server()
    sid, _ = srv.initialize()
    st, _, body = srv.request("POST", b" " * (MAX_MESSAGE + 1), {"Mcp-Session-Id": sid})
    assert st == 413 and "larger than" in json.loads(body)["error"]["message"]
    st, _, body = srv.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                              {"Mcp-Session-Id": sid})
    assert st == 200 and json.loads(body)["id"] == 2
    srv.stop()


@pytest.mark.parametrize("headers,status", [
    ({"Origin": "http://evil.example"}, 403),
    ({"Origin": "http://127.0.0.1.evil.example"}, 403),
    ({"Origin": "null"}, 403),
    ({"Host": "evil.example"}, 403),
    ({"Host": "evil.example:80", "Origin": "http://localhost:3000"}, 403),
    ({"Origin": "http://localhost:3000"}, 200),
    ({"Origin": "https://[::1]"}, 200),
    ({"Origin": "https://app.example"}, 200),      # configured in mcp.origins
    ({"Host": "localhost"}, 200),
])
def test_http_origin_and_host_against_dns_rebinding(served, http_server, headers, status):
    trove, _ = served
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + 'mcp:\n  origins: ["https://app.example"]\n')
    srv = http_server()
    st, _, body = srv.request("POST", init_msg("2025-06-18"), headers)
    assert st == status, body
    if status == 403:
        assert "forbidden" in json.loads(body)["error"]["message"]


def test_http_bearer_token(served, http_server):
    trove, _ = served
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + 'mcp:\n  token: "s3cret-token"\n')
    srv = http_server()
    for auth in (None, "Bearer wrong", "Bearer s3cret-toke", "Basic s3cret-token",
                 "Bearer s3cret-token-and-more"):
        st, hdrs, body = srv.request("POST", init_msg("2025-06-18"), {"Authorization": auth})
        assert st == 401, (auth, body)
        assert hdrs["www-authenticate"].startswith("Bearer")
    st, hdrs, body = srv.request("POST", init_msg("2025-06-18"),
                                 {"Authorization": "Bearer s3cret-token"})
    assert st == 200 and "mcp-session-id" in hdrs
    # every later request needs it too
    sid = hdrs["mcp-session-id"]
    st, _, _ = srv.request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                           {"Mcp-Session-Id": sid})
    assert st == 401
    srv.stop()


# ---- vectors: search's vector channel and the vsearch tool ------------------------

def call(id, name, **arguments):
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def test_vsearch_tool_with_a_model(trove, tmp_path, glove):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "cars.md").write_text(
        "# My car\n\nThe car needs new tires and an oil change before the road trip. The "
        "engine makes a strange noise on the highway.\n")
    (notes / "bread.md").write_text(
        "# Sourdough\n\nFlour, water, salt and a lively starter. Bake the loaf in a hot oven.\n")
    (notes / "money.md").write_text(
        "# Budget\n\nTrack monthly expenses and put savings into an index fund.\n")
    trove.ok("collection", "add", notes, "--name", "notes")
    trove.env["TROVE_EMBED_MODEL"] = glove
    trove.ok("update")
    r = stdio_exchange(trove, [
        init_msg("2025-06-18"),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "vsearch", query="automobile", include_scores=True),
        call(4, "search", query="automobile"),
        call(5, "status"),
        call(6, "vsearch", query="car engine and a hot oven",
             filters={"doc_uri_prefix": "trove://notes/b"}),
    ])
    tools = [t["name"] for t in r[1]["result"]["tools"]]
    assert tools == ["search", "vsearch", "query", "get", "multi_get", "links",
                     "similar", "status"]
    v = r[2]["result"]["structuredContent"]["results"]
    assert v[0]["path"] == "cars.md" and v[0]["scores"]["vector"]["rank"] == 1
    assert 0 < v[0]["score"] <= 1.0001
    # keywords know no automobile: the hybrid search finds it by meaning
    assert r[3]["result"]["structuredContent"]["results"][0]["path"] == "cars.md"
    m = r[4]["result"]["structuredContent"]["model"]
    assert m["path"] == glove and m["embedded"] == m["chunks"] > 0 and m["dim"] > 0
    assert [x["path"] for x in r[5]["result"]["structuredContent"]["results"]] == ["bread.md"]

    # --model overrides; without any model there is no vsearch tool
    trove.env.pop("TROVE_EMBED_MODEL")
    r = stdio_exchange(trove, [
        init_msg("2025-06-18"),
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "vsearch", query="automobile"),
        call(4, "search", query="automobile"),
        call(5, "status"),
    ])
    assert [t["name"] for t in r[1]["result"]["tools"]] == ["search", "query", "get", "multi_get",
                                                          "links", "similar", "status"]
    assert r[2]["error"]["code"] == -32602 and "vsearch" in r[2]["error"]["message"]
    assert r[3]["result"]["structuredContent"]["results"] == []
    assert r[4]["result"]["structuredContent"]["model"] is None


def test_vsearch_without_embeddings_is_a_tool_error(indexed, glove):
    trove, _ = indexed
    trove.env["TROVE_EMBED_MODEL"] = glove    # set after the update: no vectors
    r = stdio_exchange(trove, [init_msg("2025-06-18"), call(2, "vsearch", query="pointer"),
                               call(3, "search", query="pointer")])
    assert r[1]["result"]["isError"] is True
    assert "embed" in r[1]["result"]["content"][0]["text"]
    assert r[2]["result"]["structuredContent"]["results"][0]["path"] == \
        "programming/c-pointers.md"


# ---- path escapes and bad messages, raw, over both transports -----------------

def hostile_steps(secret):
    """(name, message, must_fail) for tools/call and resources/read requests
    that try to read outside the indexed collections."""
    G = lambda i, **a: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                        "params": {"name": "get", "arguments": a}}
    R = lambda i, u: {"jsonrpc": "2.0", "id": i, "method": "resources/read",
                      "params": {"uri": u}}
    return [
        ("dotdot", G(10, path="../../etc/passwd"), True),
        ("dotdot_coll", G(11, path="%s/../../etc/passwd" % COLLECTION), True),
        ("abs", G(12, path="/etc/passwd"), True),
        ("abs_secret", G(13, path=str(secret)), True),
        ("uri_dotdot", G(14, path="trove://%s/..%%2F..%%2Fetc/passwd" % COLLECTION), True),
        ("symlink", G(15, path=uri("inbox/reading-list.md")), True),
        ("symlink_plain", G(16, path="%s/inbox/reading-list.md" % COLLECTION), True),
        ("glob_symlink", G(17, path="%s/inbox/*.md" % COLLECTION), False),
        ("glob_dotdot", G(18, path="%s/../*" % COLLECTION), False),
        ("read_dotdot", R(19, "trove://%s/../../etc/passwd" % COLLECTION), True),
        ("read_file", R(20, "file:///etc/passwd"), True),
        ("read_symlink", R(21, uri("inbox/reading-list.md")), True),
        ("search_uri", {"jsonrpc": "2.0", "id": 22, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": SECRET,
                                            "filters": {"doc_uris": ["/etc/passwd"]}}}}, True),
        ("search_secret", {"jsonrpc": "2.0", "id": 23, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": SECRET}}}, False),
    ]


def failed(reply):
    return "error" in reply or reply.get("result", {}).get("isError") is True


def check_no_escape(steps, replies):
    for (name, msg, must_fail), rep in zip(steps, replies):
        assert rep.get("id") == msg["id"], (name, rep)
        text = json.dumps(rep)
        assert "root:x:0:0" not in text, (name, rep)
        # the secret may be echoed back as the query, never the note's text
        assert "lives outside every vault" not in text, (name, rep)
        if name == "search_secret":
            assert rep["result"]["structuredContent"]["results"] == [], rep
        if must_fail:
            assert failed(rep), (name, rep)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("daemon", ["cold", "daemon"])
def test_no_escape_and_bad_messages_both_transports(served, http_server, tmp_path,
                                                    transport, daemon):
    """Without the SDK (so it runs wherever Python does): every path escape
    (../, an absolute path, a percent-encoded ../, a symlink out of the
    collection, through get, a glob, resources/read and search filters) is
    refused over stdio and over HTTP, with and without a daemon; malformed,
    truncated and oversized JSON-RPC get errors, and the server keeps
    serving afterwards."""
    trove, vault = served
    if daemon == "daemon":
        trove.start_daemon("--idle", "300", "--no-watch")
    steps = hostile_steps(tmp_path / "secret.md")
    good = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "carbonara"}}}
    bad = [("not_json", "{not json"), ("truncated", '{"jsonrpc": "2.0", "id": 2, "method"'),
           ("oversized", b"[" + b"1," * (MAX_MESSAGE // 2) + b"1]"),
           ("wrong_shape", {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                            "params": [1]})]
    try:
        if transport == "stdio":
            replies = stdio_exchange(trove, [init_msg("2025-06-18")]
                                     + [m for _, m, _ in steps] + [m for _, m in bad] + [good])
            replies = replies[1:]
            hostile, errs, last = replies[:len(steps)], replies[len(steps):-1], replies[-1]
            codes = [r["error"]["code"] for r in errs]
            assert codes == [-32700, -32700, -32600, -32602], errs
        else:
            srv = http_server()
            sid, _ = srv.initialize()
            h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
            hostile = []
            for _, m, _ in steps:
                st, _, body = srv.request("POST", m, h)
                assert st == 200, (st, body)
                hostile.append(json.loads(body))
            statuses = []
            for _, m in bad:
                st, _, body = srv.request("POST", m, h)
                statuses.append((st, json.loads(body)["error"]["code"]))
            assert statuses == [(200, -32700), (200, -32700), (413, -32600),
                                (200, -32602)], statuses
            st, _, body = srv.request("POST", good, h)
            assert st == 200
            last = json.loads(body)
        check_no_escape(steps, hostile)
        res = last["result"]["structuredContent"]["results"]
        assert res and res[0]["path"] == "cooking/recipes/pasta-carbonara.md", last
    finally:
        if daemon == "daemon":
            trove.stop_daemon()


def test_sdk_query_tool_through_the_daemon(served, sdk_dir, tmp_path):
    """The query tool is answered by a running daemon (one daemon request per
    call) with the same results as the server answering itself."""
    trove, vault = served
    trove.start_daemon("--idle", "300", "--no-watch")
    S = lambda **a: {"op": "callTool", "name": "query", "arguments": a}
    plan = [S(query="how do I handle errors in rust", include_scores=True),
            S(query="pasta sauce", rerank=False, top_k=3),
            S(query="git undo commit", expand=False, candidates=3, include_scores=True)]
    before = trove.daemon_requests()
    out = run_sdk(sdk_dir, trove, tmp_path, plan, "stdio")
    # less its own hello and the status the instructions are built from
    served_now = trove.daemon_requests() - before - 2
    for step in out["steps"]:
        assert structured(step)["results"], step
    assert served_now == len(plan), served_now
    cold = run_sdk(sdk_dir, trove, tmp_path, plan, "stdio", env={"TROVE_NO_DAEMON": "1"})
    assert out["steps"] == cold["steps"]
    assert trove.daemon_requests() - before - 3 == len(plan)   # cold: none
    trove.stop_daemon()


# ---- NUL characters: valid JSON, answered with the request's own id ----------

NUL_CASES = [
    # (raw line, expected id, expected code, text in the message)
    (r'{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"get",'
     r'"arguments":{"path":"a\u0000b"}}}', 21, -32602, "arguments.path"),
    (r'{"jsonrpc":"2.0","id":"n\u0000id","method":"ping"}', "n\x00id", None, None),
    (r'{"jsonrpc":"2.0","id":22,"method":"pi\u0000ng"}', 22, -32600, "NUL"),
    (r'{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"get",'
     r'"arguments":{"pa\u0000th":"x"}}}', 23, -32602, "NUL"),
    (r'{"jsonrpc":"2.0","id":24,"method":"resources/read","params":{"uri":'
     r'"trove://notes/a\u0000.md"}}', 24, -32602, "uri"),
    (r'{"jsonrpc":"2.0","id":25,"method":"resources/list","params":{"cursor":"\u0000"}}',
     25, -32602, "cursor"),
    (r'{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"search",'
     r'"arguments":{"query":"x","filters":{"doc_uri_prefix":"a\\u0000/"}}}}', 26, None, None),
    # a lone UTF-16 surrogate is valid JSON too (jansson refuses it)
    (r'{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"get",'
     r'"arguments":{"path":"a\ud800b"}}}', 27, -32602, "surrogate"),
    (r'{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"search",'
     r'"arguments":{"query":"\ud83d\ude00 pointer"}}}', 28, None, None),
]


def check_nul_replies(replies):
    assert len(replies) == len(NUL_CASES) + 1, replies
    for (_, want_id, code, text), r in zip(NUL_CASES, replies):
        assert r["id"] == want_id, r
        if code is None:
            assert "result" in r, r
        else:
            assert r["error"]["code"] == code and text in r["error"]["message"], r
    # a batch: only the message with the NUL is refused
    batch = replies[-1]
    assert [r["id"] for r in batch] == [31, 32], batch
    assert batch[0]["error"]["code"] == -32602 and batch[1]["result"] == {}


NUL_BATCH = (r'[{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"get",'
             r'"arguments":{"p\u0000":1}}},{"jsonrpc":"2.0","id":32,"method":"ping"}]')


def test_nul_characters_get_the_request_id_over_stdio(indexed):
    trove, _ = indexed
    replies = stdio_exchange(trove, [init_msg("2025-06-18")] +
                             [c[0] for c in NUL_CASES] + [NUL_BATCH])
    check_nul_replies(replies[1:])


def test_nul_characters_get_the_request_id_over_http(http_server):
    srv = http_server()
    sid, _ = srv.initialize()
    replies = []
    for line in [c[0] for c in NUL_CASES] + [NUL_BATCH]:
        status, _, data = srv.request("POST", line, {"Mcp-Session-Id": sid})
        assert status == 200, (status, data)
        replies.append(json.loads(data))
    check_nul_replies(replies)
    # initialize itself with a NUL: an error with its id, and no session
    bad = json.dumps(init_msg("2025-06-18", id=41)).replace("2025-06-18", "2025\\u0000")
    status, hdrs, data = srv.request("POST", bad)
    assert status == 200 and json.loads(data)["id"] == 41, data
    assert json.loads(data)["error"]["code"] == -32602 and "mcp-session-id" not in hdrs
    srv.stop()


# ---- resources/list: keyset pages ---------------------------------------------

PAGE = 500


class StdioSession:
    """One `trove mcp` over stdio, kept open across index changes."""

    def __init__(self, trove):
        self.proc = subprocess.Popen([str(trove_bin()), "mcp"], env=trove.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=str(trove.home))
        self.next_id = 1
        assert "result" in self.call("initialize", init_msg("2025-06-18")["params"])

    def call(self, method, params):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.next_id += 1
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply["id"] == msg["id"], reply
        return reply

    def page(self, cursor=None):
        r = self.call("resources/list", {"cursor": cursor} if cursor else {})
        assert "result" in r, r
        return [x["uri"] for x in r["result"]["resources"]], r["result"].get("nextCursor")

    def close(self):
        self.proc.stdin.close()
        err = self.proc.stderr.read().decode("utf-8", "replace")
        assert self.proc.wait(timeout=30) == 0, err
        assert "AddressSanitizer" not in err, err


def http_pages(srv, sid, cursor=None):
    uris = []
    while True:
        params = {"cursor": cursor} if cursor else {}
        status, _, data = srv.request("POST", {"jsonrpc": "2.0", "id": 7, "method":
                                               "resources/list", "params": params},
                                      {"Mcp-Session-Id": sid})
        assert status == 200, data
        res = json.loads(data)["result"]
        uris += [x["uri"] for x in res["resources"]]
        cursor = res.get("nextCursor")
        if not cursor:
            return uris


@pytest.fixture
def many_notes(trove, tmp_path):
    """Two collections, 1234 notes: three pages and a bit, across the
    collection boundary."""
    want = []
    for coll, n in (("alpha", 700), ("beta", 534)):
        root = tmp_path / coll
        for i in range(n):
            rel = "d%02d/n%04d.md" % (i % 7, i)
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("# Note %d\n\nbody %d\n" % (i, i))
            want.append("trove://%s/%s" % (coll, rel))
        trove.ok("collection", "add", root, "--name", coll)
    trove.ok("update")
    return trove, tmp_path, sorted(want)


def test_resources_list_pages_by_a_keyset_cursor(many_notes):
    trove, root, want = many_notes
    s = StdioSession(trove)
    got, cursor, pages = [], None, 0
    while True:
        uris, cursor = s.page(cursor)
        assert len(uris) <= PAGE
        got += uris
        pages += 1
        if not cursor:
            break
    assert got == want and pages == 3, (pages, len(got))
    # cursors are opaque and checked: edited ones are refused with the id
    first, cursor = s.page()
    for bad in (cursor[:-1] + ("A" if cursor[-1] != "A" else "B") + "=", cursor + "!",
                "x" * 9000, "", "AQ", cursor[:-2]):
        r = s.call("resources/list", {"cursor": bad})
        assert r["error"]["code"] == -32602 and "cursor" in r["error"]["message"], (bad, r)
    r = s.call("resources/list", {"cursor": 5})
    assert r["error"]["code"] == -32602, r

    # stable across an index change between pages: no note listed twice, no
    # unchanged note skipped
    (root / "alpha" / "d00" / "a-new-early.md").write_text("# early\n")   # before the cursor
    (root / "beta" / "zz-new-late.md").write_text("# late\n")             # after it
    gone = "d03/n0500.md"                                                  # not listed yet
    assert "trove://beta/" + gone not in first
    (root / "beta" / gone).unlink()
    trove.ok("update")
    rest = []
    while cursor:
        uris, cursor = s.page(cursor)
        rest += uris
    s.close()
    listed = first + rest
    assert len(listed) == len(set(listed))
    unchanged = set(want) - {"trove://beta/" + gone}
    assert unchanged <= set(listed)
    assert "trove://beta/" + gone not in listed and "trove://beta/zz-new-late.md" in listed

    # the same pages over HTTP, with a daemon serving the index
    trove.start_daemon("--idle", "300", "--no-watch")
    srv = HttpServer(trove)
    sid, _ = srv.initialize()
    now = sorted(set(want) - {"trove://beta/" + gone} |
                 {"trove://alpha/d00/a-new-early.md", "trove://beta/zz-new-late.md"})
    assert http_pages(srv, sid) == now
    srv.stop()
