"""trove mcp with today's clients: protocol 2026-07-28 and 2025-11-25.

The official 2.x client (npm @modelcontextprotocol/client, installed with its
dependencies by scripts/npm-install.sh) drives the server in each of its
version negotiation modes: pinned to 2026-07-28 (server/discover, then every
request stateless with its _meta envelope), auto (probe, fall back to
initialize) and legacy (initialize, 2025-11-25). It runs the whole scenario
of test_mcp.py over stdio and Streamable HTTP, cold and through the daemon,
and every answer must equal the 1.x SDK's: the protocol version changes the
envelope, never the notes. The client validates each result against its
version's schemas itself (ttlMs/cacheScope, resultType). The raw protocol
cases (headers that disagree with the body, a version we lack) need only
Python. Tests with node skip, saying why, without node or the registry.
"""
import json
import re
import subprocess

import pytest

from conftest import REPO, trove_bin
from test_mcp import (daemon_mode, http_server, init_msg, npm_install, run_sdk,  # noqa: F401
                      scenario, sdk_dir, served)

CLIENT2 = "@modelcontextprotocol/client@2.4.0"
DRIVER2 = REPO / "tests" / "tools" / "mcp_client2.mjs"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture(scope="session")
def client2_dir():
    return npm_install(CLIENT2, "the MCP 2.x client")


def run_client2(client_dir, trove, tmp_path, plan, mode, kind, url=None, env=None):
    plan_file = tmp_path / "plan2.json"
    plan_file.write_text(json.dumps(plan))
    args = ["node", str(DRIVER2), client_dir, str(plan_file), mode, kind,
            str(trove_bin()) if kind == "stdio" else url]
    r = subprocess.run(args, env=dict(trove.env, **(env or {})), capture_output=True,
                       text=True, timeout=180, cwd=str(trove.home))
    assert r.returncode == 0, r.stderr
    assert "ERROR: AddressSanitizer" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert "connect_error" not in out, out
    return out


def comparable(steps):
    """What must not depend on the protocol version: results without the
    2026-07-28 envelope (ttlMs, cacheScope, resultType), errors by kind
    (2026-07-28 spells "resource not found" as invalid params)."""
    out = []
    for s in steps:
        if "result" in s:
            out.append({k: v for k, v in s["result"].items()
                        if k not in ("ttlMs", "cacheScope", "resultType", "_meta")})
        else:
            e = s["error"]
            out.append("not found" if "not found" in e["message"] else e["code"])
    return out


def plan_of(vault):
    """The scenario without ping, which 2026-07-28 no longer has."""
    return [s for name, s in scenario(vault) if name != "ping"]


@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["pin", "auto", "legacy"])
def test_client2_modes_answer_as_the_1x_sdk(served, client2_dir, sdk_dir, tmp_path,
                                            http_server, mode, kind):
    trove, vault = served
    plan = plan_of(vault)
    base = run_sdk(sdk_dir, trove, tmp_path, plan, "stdio", env={"TROVE_NO_DAEMON": "1"})
    url = http_server().url if kind == "http" else None
    out = run_client2(client2_dir, trove, tmp_path, plan, mode, kind, url,
                      env={"TROVE_NO_DAEMON": "1"})
    want = MODERN if mode in ("pin", "auto") else "2025-11-25"
    assert out["protocol_version"] == want
    assert out["server"]["name"] == "trove"
    assert "search" in out["instructions"]
    assert comparable(out["steps"]) == comparable(base["steps"])
    tools = out["steps"][0]["result"]
    if mode == "legacy":
        assert "ttlMs" not in tools
    else:
        # cacheable lists say for how long and for whom (one user's notes)
        assert tools["ttlMs"] > 0 and tools["cacheScope"] == "private", tools
        names = [n for n, _ in scenario(vault) if n != "ping"]
        res = out["steps"][names.index("resources")]["result"]
        assert res["ttlMs"] == 0 and res["cacheScope"] == "private"


@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_client2_pinned_through_the_daemon(served, daemon_mode, client2_dir, tmp_path,
                                           http_server, kind):
    """Stateless requests reach the daemon like any other: the answers equal
    the cold server's, and the daemon counted the tool calls."""
    trove, vault = served
    plan = plan_of(vault)
    before = trove.daemon_requests() if daemon_mode == "daemon" else 0
    url = http_server().url if kind == "http" else None
    out = run_client2(client2_dir, trove, tmp_path, plan, "pin", kind, url)
    cold = run_client2(client2_dir, trove, tmp_path, plan, "pin", "stdio",
                       env={"TROVE_NO_DAEMON": "1"})
    names = [n for n, _ in scenario(vault) if n != "ping"]
    a, b = comparable(out["steps"]), comparable(cold["steps"])
    status = names.index("status")
    for steps in (a, b):   # the watcher is the daemon's own state
        steps[status]["structuredContent"]["watcher"] = None
        steps[status]["content"] = None
    assert a == b
    if daemon_mode == "daemon":
        assert trove.daemon_requests() - before >= 5


# ---- raw 2026-07-28 over HTTP: what a client must not get away with -----------

def modern_post(srv, msg, headers):
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": msg.get("method")}
    h.update(headers)
    status, _, data = srv.request("POST", msg, h)
    return status, json.loads(data) if data else None


def test_http_stateless_headers_must_match_the_body(served, http_server):
    srv = http_server()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "status", "arguments": {}, "_meta": META}}
    # no session, no initialize: a stateless request is answered as it is
    st, body = modern_post(srv, call, {"Mcp-Name": "status"})
    assert st == 200 and body["result"]["resultType"] == "complete", body
    assert body["result"]["structuredContent"]["index_exists"] is True
    # a stray Mcp-Session-Id means nothing here
    st, body = modern_post(srv, call, {"Mcp-Name": "status", "Mcp-Session-Id": "x" * 32})
    assert st == 200 and "result" in body, body
    # base64 sentinel spelling of Mcp-Name (clients use it for non-ASCII)
    st, body = modern_post(srv, call, {"Mcp-Name": "=?base64?c3RhdHVz?="})
    assert st == 200 and "result" in body, body
    for headers, needle in [
            ({"Mcp-Name": "search"}, "Mcp-Name"),
            ({}, "Mcp-Name header required"),
            ({"Mcp-Name": "status", "Mcp-Method": "tools/list"}, "Mcp-Method"),
            ({"Mcp-Name": "status", "Mcp-Method": None}, "Mcp-Method header required"),
            ({"Mcp-Name": "status", "MCP-Protocol-Version": None},
             "MCP-Protocol-Version header required"),
            ({"Mcp-Name": "=?base64?!!!?="}, "Mcp-Name")]:
        st, body = modern_post(srv, call, headers)
        assert st == 400 and body["error"]["code"] == -32020, (headers, st, body)
        assert needle in body["error"]["message"], (headers, body)
    # the header says 2026-07-28 but the body has no envelope
    bare = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    st, body = modern_post(srv, bare, {})
    assert st == 400 and body["error"]["code"] == -32602, body
    # a version we lack: 400 and -32022 listing the versions a client may retry with
    st, body = modern_post(srv, dict(call, params=dict(call["params"], _meta=dict(
        META, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"}))),
        {"MCP-Protocol-Version": "2099-01-01", "Mcp-Name": "status"})
    assert st == 400 and body["error"]["code"] == -32022, body
    assert body["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    # notifications need no headers and get 202
    st, body = modern_post(srv, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"_meta": META}}, {"Mcp-Method": None})
    assert st == 202 and body is None
    srv.stop()


def raw_stdio(trove, lines):
    r = subprocess.run([str(trove_bin()), "mcp"], input="".join(
        json.dumps(m) + "\n" for m in lines), capture_output=True, text=True,
        env=dict(trove.env, TROVE_NO_DAEMON="1"), timeout=60, cwd=str(trove.home))
    assert r.returncode == 0, r.stderr
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_stdio_discover_and_envelope(served):
    trove, _ = served
    req = lambda i, method, **p: {"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": dict(p, _meta=META)}
    r = raw_stdio(trove, [
        req(1, "server/discover"),
        req(2, "ping"),
        req(3, "initialize", protocolVersion=MODERN, capabilities={},
            clientInfo={"name": "x", "version": "1"}),
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list",
         "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list",
         "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": 7}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": dict(
            META, **{"io.modelcontextprotocol/protocolVersion": "2025-11-25"})}},
        req(7, "resources/read", uri="trove://notes/no/such.md"),
        # a legacy initialize asking for the stateless version gets 2025-11-25
        init_msg(MODERN),
    ])
    d = r[0]["result"]
    assert d["supportedVersions"] == [MODERN] and d["resultType"] == "complete"
    assert d["serverInfo"]["name"] == "trove" and d["cacheScope"] == "private"
    assert "tools" in d["capabilities"] and "search" in d["instructions"]
    assert r[1]["error"]["code"] == -32601 and r[2]["error"]["code"] == -32601
    assert r[3]["error"]["code"] == -32602 and "clientCapabilities" in r[3]["error"]["message"]
    assert r[4]["error"]["code"] == -32602
    assert r[5]["error"]["code"] == -32022
    assert r[6]["error"]["code"] == -32602 and r[6]["error"]["data"]["uri"]
    assert r[7]["result"]["protocolVersion"] == "2025-11-25"


# ---- the MCP Inspector's CLI ------------------------------------------------

INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


@pytest.fixture(scope="session")
def inspector():
    return npm_install(INSPECTOR, "the MCP Inspector") + "/node_modules/.bin/mcp-inspector"


def run_inspector(inspector, trove, target, era, *args):
    """`mcp-inspector --cli` once; its JSON result (it exits non-zero on
    any failure, a schema problem under --strict included)."""
    env = dict(trove.env, TROVE_NO_DAEMON="1")
    server = ["-e", "TROVE_INDEX=%s" % env["TROVE_INDEX"],
              "-e", "TROVE_CONFIG_DIR=%s" % env["TROVE_CONFIG_DIR"],
              "-e", "TROVE_NO_DAEMON=1", str(trove_bin()), "mcp"] if target is None else [target]
    r = subprocess.run(["node", inspector, "--cli", "-q", "--format", "json",
                        "--protocol-era", era, *args, *server], env=env, capture_output=True,
                       text=True, timeout=180, cwd=str(trove.home))
    assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr[-2000:])
    return json.loads(r.stdout)["result"]


@pytest.mark.parametrize("kind", ["stdio", "http"])
@pytest.mark.parametrize("era", ["modern", "auto", "legacy"])
def test_inspector_cli(served, inspector, http_server, era, kind):
    trove, _ = served
    from test_mcp import uri
    target = http_server().url if kind == "http" else None
    tools = run_inspector(inspector, trove, target, era, "--strict", "--method", "tools/list")
    names = [t["name"] for t in tools["tools"]]
    assert names == ["search", "query", "get", "multi_get", "links", "similar", "status"], names
    for t in tools["tools"]:
        assert t["annotations"]["readOnlyHint"] is True and "outputSchema" in t
    hit = run_inspector(inspector, trove, target, era, "--method", "tools/call", "--tool-name",
                        "search", "--tool-args-json", '{"query": "pointer", "top_k": 2}')
    assert hit["structuredContent"]["results"][0]["path"] == "programming/c-pointers.md"
    res = run_inspector(inspector, trove, target, era, "--method", "resources/list")
    assert uri("Home.md") in [r["uri"] for r in res["resources"]]
    tpl = run_inspector(inspector, trove, target, era, "--method", "resources/templates/list")
    assert tpl["resourceTemplates"][0]["uriTemplate"] == "trove://{collection}/{+path}"
    read = run_inspector(inspector, trove, target, era, "--method", "resources/read", "--uri",
                         uri("programming/c-pointers.md"))
    assert "pointer" in read["contents"][0]["text"].lower()


# ---- output budgets ---------------------------------------------------------

def test_search_tools_keep_within_max_chars(served):
    """Every search answer fits its max_chars (default 40000, under the
    50,000 characters clients file away), says it cut and how many."""
    trove, _ = served
    call = lambda i, **a: {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                           "params": {"name": a.pop("tool", "search"), "arguments": a}}
    r = raw_stdio(trove, [
        init_msg("2025-11-25"),
        call(2, query="the", top_k=50, max_excerpt_chars=8000),
        call(3, query="the", top_k=50, max_excerpt_chars=800, max_chars=1500),
        call(4, tool="query", query="the", top_k=50, max_chars=1500, rerank=False),
        call(5, query="the", max_chars=999),
    ])
    full = r[1]["result"]
    assert len(full["content"][0]["text"].split("\n")[0]) <= 40000
    whole = full["structuredContent"]
    for reply in r[2:4]:
        sc = reply["result"]["structuredContent"]
        text = reply["result"]["content"][0]["text"]
        assert len(text.split("\n")[0]) <= 1500, len(text)
        assert sc["truncated"] is True and sc["omitted"] >= 1, sc
        assert "raise max_chars" in text.split("\n")[1]
    # the kept results are the best ones, in order
    kept = r[2]["result"]["structuredContent"]["results"]
    assert [x["doc_uri"] for x in kept] == [x["doc_uri"] for x in whole["results"][:len(kept)]]
    assert r[2]["result"]["structuredContent"]["omitted"] == len(whole["results"]) - len(kept)
    assert "truncated" not in whole or whole.get("omitted", 0) + len(whole["results"]) >= 1
    assert r[4]["error"]["code"] == -32602 and "max_chars" in r[4]["error"]["message"]


# ---- prompts, completion, instructions --------------------------------------

@pytest.mark.parametrize("mode", ["pin", "legacy"])
def test_prompts_and_completion(served, client2_dir, tmp_path, mode):
    trove, vault = served
    from conftest import COLLECTION
    from test_mcp import uri
    tpl = {"type": "ref/resource", "uri": "trove://{collection}/{+path}"}
    plan = [
        {"op": "listPrompts"},
        {"op": "getPrompt", "name": "ask_notes", "arguments": {"question": "pointer arithmetic"}},
        {"op": "getPrompt", "name": "search_notes", "arguments": {"query": "rust errors"}},
        {"op": "getPrompt", "name": "note", "arguments": {"path": uri("Home.md")}},
        {"op": "getPrompt", "name": "note", "arguments": {"path": "../../etc/passwd"}},
        {"op": "complete", "ref": tpl, "argument": {"name": "collection",
                                                    "value": COLLECTION[:2]}},
        {"op": "complete", "ref": tpl, "argument": {"name": "path", "value": "programming/c"}},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "note"},
         "argument": {"name": "path", "value": COLLECTION + "/programming/"}},
        {"op": "getPrompt", "name": "note_links", "arguments": {"path": uri("Home.md")}},
        {"op": "callTool", "name": "links", "arguments": {"path": uri("Home.md")}},
        {"op": "getPrompt", "name": "note_links", "arguments": {"path": "/etc/passwd"}},
    ]
    out = run_client2(client2_dir, trove, tmp_path, plan, mode, "stdio",
                      env={"TROVE_NO_DAEMON": "1"})
    st = out["steps"]
    assert [p["name"] for p in st[0]["result"]["prompts"]] == ["search_notes", "ask_notes",
                                                              "note", "note_links"]
    # the answer prompt brings the best passages as resources, to cite
    msgs = st[1]["result"]["messages"]
    assert "Cite every claim" in msgs[0]["content"]["text"]
    res = [m["content"]["resource"] for m in msgs[1:]]
    assert res and res[0]["uri"] == uri("programming/c-pointers.md"), res
    assert res[0]["text"].startswith(uri("programming/c-pointers.md") + ":")
    assert "rust errors" in st[2]["result"]["messages"][0]["content"]["text"]
    note = st[3]["result"]["messages"]
    assert note[1]["content"]["resource"]["text"] == (vault / "Home.md").read_text()
    assert st[4]["error"]["code"] == -32602
    assert st[5]["result"]["completion"]["values"] == [COLLECTION]
    paths = st[6]["result"]["completion"]["values"]
    assert "programming/c-pointers.md" in paths and all(
        p.startswith("programming/c") for p in paths)
    qual = st[7]["result"]["completion"]["values"]
    assert COLLECTION + "/programming/c-pointers.md" in qual
    # note_links: the note, then every backlink as URI:LINE with its line
    nl = st[8]["result"]["messages"]
    assert nl[1]["content"]["resource"]["text"] == (vault / "Home.md").read_text()
    listed = nl[2]["content"]["text"]
    back = st[9]["result"]["structuredContent"]["backlinks"]
    assert back, st[9]
    for b in back:
        assert "%s:%d (" % (b["doc_uri"], b["line"]) in listed, (b, listed)
        assert b["text"] in listed
    assert st[10]["error"]["code"] == -32602
    # the instructions say what the index holds
    assert "notes in 1 collection: %s (" % COLLECTION in out["instructions"]


def test_inspector_prompts(served, inspector):
    trove, _ = served
    for era in ("modern", "legacy"):
        p = run_inspector(inspector, trove, None, era, "--method", "prompts/list")
        assert "ask_notes" in [x["name"] for x in p["prompts"]]
        g = run_inspector(inspector, trove, None, era, "--method", "prompts/get",
                          "--prompt-name", "search_notes", "--prompt-args", "query=pointer")
        assert "pointer" in g["messages"][0]["content"]["text"]


def test_multi_get(served, sdk_dir, tmp_path):
    """Several notes by list or glob in one byte budget; a path that cannot
    be read says why and the others still come."""
    trove, vault = served
    from conftest import COLLECTION
    from test_mcp import uri
    S = lambda **a: {"op": "callTool", "name": "multi_get", "arguments": a}
    out = run_sdk(sdk_dir, trove, tmp_path, [
        S(paths=[uri("Home.md"), "%s/programming/c-pointers.md" % COLLECTION,
                 "../../etc/passwd", uri("no/such.md")]),
        S(glob="%s/programming/*.md" % COLLECTION, max_bytes=1500),
        S(paths=[uri("Home.md"), uri("programming/c-pointers.md")], max_bytes=100),
        S(),
        S(paths=[uri("Home.md")], glob="*"),
    ], "stdio", env={"TROVE_NO_DAEMON": "1"})
    st = out["steps"]
    notes = st[0]["result"]["structuredContent"]["notes"]
    assert notes[0]["text"] == (vault / "Home.md").read_text()
    assert notes[1]["text"] == (vault / "programming" / "c-pointers.md").read_text()
    assert "refused" in notes[2]["error"] and "error" in notes[3]
    assert st[0]["result"]["structuredContent"]["truncated"] is False
    budget = st[1]["result"]["structuredContent"]
    assert budget["truncated"] is True and any(n.get("skipped") for n in budget["notes"])
    assert sum(len(n.get("text", "")) for n in budget["notes"]) <= 1500
    small = st[2]["result"]["structuredContent"]
    assert small["truncated"] is True and all("skipped" in n for n in small["notes"])
    assert st[3]["error"]["code"] == -32602 and st[4]["error"]["code"] == -32602


@pytest.mark.parametrize("mode", ["pin", "legacy"])
def test_links_and_similar(served, daemon_mode, client2_dir, tmp_path, mode):
    """Thin tools over api_links/api_similar: backlinks with the linking
    line, outlinks, limits that say they cut; notes like a note, never
    itself. Cold and through the daemon, the same answers."""
    trove, vault = served
    from test_mcp import uri
    S = lambda name, **a: {"op": "callTool", "name": name, "arguments": a}
    plan = [S("links", path=uri("programming/c-pointers.md")),
            S("links", path=uri("Home.md"), limit=1),
            S("links", path="../../etc/passwd"),
            S("similar", path=uri("programming/c-pointers.md"), top_k=3),
            S("similar", path=uri("cooking/ramen-broth.md"), max_chars=1000, top_k=10),
            S("links", path=uri("no/such.md"))]
    out = run_client2(client2_dir, trove, tmp_path, plan, mode, "stdio")
    st = out["steps"]
    links = st[0]["result"]["structuredContent"]
    home = [b for b in links["backlinks"] if b["doc_uri"] == uri("Home.md")]
    assert home and "[[c-pointers]]" in home[0]["text"], links["backlinks"]
    assert home[0]["line"] == 16
    cut = st[1]["result"]["structuredContent"]
    assert cut["truncated"] is True and len(cut["outlinks"]) == 1
    assert st[2]["result"]["isError"] is True and "refused" in st[2]["result"]["content"][0]["text"]
    sim = st[3]["result"]["structuredContent"]["results"]
    assert sim and uri("programming/c-pointers.md") not in [r["doc_uri"] for r in sim]
    assert len(sim) <= 3
    small = st[4]["result"]["structuredContent"]
    assert len(st[4]["result"]["content"][0]["text"].split("\n")[0]) <= 1000
    assert small.get("truncated") in (True, None)
    assert st[5]["result"]["isError"] is True
    if daemon_mode == "daemon":
        cold = run_client2(client2_dir, trove, tmp_path, plan, mode, "stdio",
                           env={"TROVE_NO_DAEMON": "1"})
        assert comparable(out["steps"]) == comparable(cold["steps"])


def test_conformance_suite(served, tmp_path):
    """The official conformance suite, server mode over HTTP (through
    scripts/mcp-conformance.sh, on Node 20 with its globSync preload): every
    scenario that applies passes, and exactly the baseline of those that
    call the suite's own fixtures fails (docs/mcp.md)."""
    trove, _ = served
    r = subprocess.run(["bash", str(REPO / "scripts" / "mcp-conformance.sh"), str(trove_bin()),
                        str(tmp_path / "results")], env=dict(trove.env, TROVE_NO_DAEMON="1"),
                       capture_output=True, text=True, timeout=600, cwd=str(trove.home))
    if r.returncode == 3:
        pytest.skip("conformance suite unavailable: " + r.stderr.strip()[-300:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Baseline check passed" in r.stdout
    for name in ("server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
                 "dns-rebinding-protection"):
        assert re.search(r"✓ %s: [1-9]\d* passed, 0 failed" % name, r.stdout), name
