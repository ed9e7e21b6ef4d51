"""The MCP search tools with metadata and time (issue 18): filters.where,
filters.since/until, filters.heading_path_contains, recent and passages,
driven by the official TypeScript SDK client (which checks every
structuredContent against the tool's outputSchema), cold and through a
daemon (the same answers), on fixtures/meta; results carry date and
date_source as `search --json` does."""
import pytest

from test_cli_meta import index_meta
from test_mcp import run_sdk, sdk_dir  # noqa: F401

S = lambda name, **a: {"op": "callTool", "name": name, "arguments": a}  # noqa: E731

ALL = 50
ALPHA = "m/projects/alpha.md"
DONE = {"projects/alpha.md", "projects/gamma.md", "meetings/2025-06-02 Planning.md"}


def plan():
    """(name, step) pairs."""
    return [
        ("tools", {"op": "listTools"}),
        ("where", S("search", query="crane", top_k=ALL, filters={"where": "status=done"})),
        ("where_and", S("search", query="crane", top_k=ALL,
                        filters={"where": ["status=done", "priority>=3"]})),
        ("where_list", S("search", query="crane", top_k=ALL,
                         filters={"where": ["author in (ana, li)"]})),
        ("where_none", S("search", query="crane", top_k=ALL,
                         filters={"where": "nosuchfield=1"})),
        ("dates", S("search", query="crane", top_k=ALL,
                    filters={"since": "2025-01-01", "until": "2025-12-31"})),
        ("since_span", S("search", query="crane", top_k=ALL, filters={"since": "2w"})),
        ("all", S("search", query="crane", top_k=ALL)),
        ("passages", S("search", query="crane", top_k=1, passages=3, max_excerpt_chars=40,
                       filters={"doc_uri_prefix": "meetings/"})),
        ("heading", S("search", query="crane", top_k=ALL,
                      filters={"heading_path_contains": "risks"})),
        ("recent", S("search", query="crane telemetry", top_k=ALL, recent=True)),
        ("not_recent", S("search", query="crane telemetry", top_k=ALL, recent=False)),
        ("query_where", S("query", query="crane", top_k=ALL, rerank=False,
                          filters={"where": "status=done", "since": "2025-01-01"})),
        ("bad_date", S("search", query="crane", filters={"since": "someday"})),
        ("bad_type", S("search", query="crane", filters={"where": "priority>=high"})),
        ("bad_where", S("search", query="crane", filters={"where": "=done"})),
        ("bad_passages", S("search", query="crane", passages=0)),
        ("bad_recent", S("search", query="crane", recent="yes")),
        ("bad_since_type", S("search", query="crane", filters={"since": 2024})),
        # similar: the same filters on the notes like alpha (never alpha itself)
        ("sim_all", S("similar", path=ALPHA, top_k=ALL)),
        ("sim_where", S("similar", path=ALPHA, top_k=ALL, filters={"where": "status=done"})),
        ("sim_where_and", S("similar", path=ALPHA, top_k=ALL,
                            filters={"where": ["status=done", "priority>=3"]})),
        ("sim_dates", S("similar", path=ALPHA, top_k=ALL,
                        filters={"since": "2025-01-01", "until": "2025-12-31"})),
        ("sim_folder", S("similar", path=ALPHA, top_k=ALL, collection="m",
                         filters={"doc_uri_prefix": "trove://m/meetings/", "tags": ["meeting"]})),
        ("sim_bad_date", S("similar", path=ALPHA, filters={"since": "someday"})),
        ("sim_bad_type", S("similar", path=ALPHA, filters={"where": "priority>=high"})),
        ("sim_bad_coll", S("similar", path=ALPHA, filters={"collection": "nope"})),
        ("sim_bad_key", S("similar", path=ALPHA, filters={"wehre": "status=done"})),
    ]


def by_name(out):
    return dict(zip([n for n, _ in plan()], out["steps"]))


def results(step):
    assert "result" in step and not step["result"].get("isError"), step
    return step["result"]["structuredContent"]["results"]


def paths(step):
    return {r["path"] for r in results(step)}


def tool_error(step, *needles):
    assert step["result"].get("isError"), step
    text = step["result"]["content"][0]["text"]
    for n in needles:
        assert n in text, text


def rpc_error(step, *needles):
    assert "error" in step and step["error"]["code"] == -32602, step
    for n in needles:
        assert n in step["error"]["message"], step


@pytest.fixture(params=["cold", "daemon"])
def meta_mcp(request, trove, tmp_path, sdk_dir):  # noqa: F811
    index_meta(trove, tmp_path)
    if request.param == "daemon":
        trove.start_daemon("--idle", "300", "--no-watch")
    yield trove, request.param
    if request.param == "daemon":
        trove.stop_daemon()


def test_mcp_metadata_and_time(meta_mcp, sdk_dir, tmp_path):  # noqa: F811
    trove, mode = meta_mcp
    before = trove.daemon_requests() if mode == "daemon" else 0
    out = run_sdk(sdk_dir, trove, tmp_path, [s for _, s in plan()], "stdio")
    st = by_name(out)

    # The inputSchema: each option typed from its row and the api's bounds.
    tools = {t["name"]: t for t in st["tools"]["result"]["tools"]}
    for name in ("search", "query"):
        schema = tools[name]["inputSchema"]["properties"]
        filters = schema["filters"]["properties"]
        assert [s["type"] for s in filters["where"]["anyOf"]] == ["string", "array"]
        assert filters["since"]["type"] == filters["until"]["type"] == "string"
        assert filters["heading_path_contains"]["type"] == "string"
        assert schema["recent"]["type"] == "boolean" and "default" not in schema["recent"]
        assert (schema["passages"]["type"], schema["passages"]["minimum"],
                schema["passages"]["maximum"]) == ("integer", 1, 50)
    sim = tools["similar"]["inputSchema"]["properties"]
    assert "where" not in sim     # under filters, as search's
    assert sim["filters"]["properties"] == tools["search"]["inputSchema"]["properties"][
        "filters"]["properties"]

    assert paths(st["where"]) == DONE
    assert paths(st["where_and"]) == {"projects/alpha.md"}
    assert paths(st["where_list"]) == {"projects/alpha.md", "projects/beta.md",
                                        "projects/gamma.md"}
    tool_error(st["where_none"], "no note has a field", "nosuchfield")
    assert paths(st["dates"]) == {"projects/alpha.md", "meetings/2025-06-02 Planning.md"}
    assert paths(st["since_span"]) == {"meetings/undated.md", "projects/gamma.md"}

    # date and date_source, as `search --json` gives them
    got = {r["path"]: (r["date"], r["date_source"]) for r in results(st["all"])}
    cli = {r["path"]: (r["date"], r["date_source"])
           for r in trove.search("crane", "--all")}
    assert got == cli
    assert got["projects/alpha.md"] == ("2025-03-10", "frontmatter:date")
    assert got["daily/2024-05-01.md"] == ("2024-05-01", "filename")
    assert got["meetings/undated.md"] == ("2026-05-18", "mtime")
    assert all("passages" not in r for r in results(st["all"]))

    # passages: up to 3, the first the result's own anchor, each with its excerpt
    (r,) = results(st["passages"])
    ps = r["passages"]
    assert 2 <= len(ps) <= 3, ps
    assert (ps[0]["start_line"], ps[0]["start_byte"]) == (r["start_line"], r["start_byte"])
    assert ps[0]["excerpt"] == r["excerpt"]
    for p in ps:
        assert set(p) == {"heading_path", "start_line", "end_line", "start_byte", "end_byte",
                          "score", "excerpt"}
        assert 0 < len(p["excerpt"]) <= 40
    cli = trove.search("crane", "--folder", "m/meetings", "-n", "1", "--passages", "3")[0]
    assert [(p["line_start"], p["line_end"]) for p in cli["passages"]] == \
        [(p["start_line"], p["end_line"]) for p in ps]

    hs = results(st["heading"])
    assert hs and hs[0]["heading_path"][-1] == "Risks"

    # recent: the newest note climbs; false equals no prior at all
    rec = [r["path"] for r in results(st["recent"])]
    plain = [r["path"] for r in results(st["not_recent"])]
    assert set(rec) == set(plain) and rec != plain
    assert rec.index("meetings/undated.md") < plain.index("meetings/undated.md")
    assert rec.index("daily/2024-05-01.md") >= plain.index("daily/2024-05-01.md")

    assert paths(st["query_where"]) == DONE == {
        r["path"] for r in trove.ok("query", "crane", "--json", "-n", "50", "--no-rerank",
                                    "--where", "status=done", "--since", "2025-01-01")
        .json()["results"]}

    # bad values: the api's sentence as a tool error, or the schema's refusal
    tool_error(st["bad_date"], "someday")
    tool_error(st["bad_type"], "priority")
    tool_error(st["bad_where"], "where")
    rpc_error(st["bad_passages"], "passages")
    rpc_error(st["bad_recent"], "recent")
    rpc_error(st["bad_since_type"], "filters.since")

    # similar: the unfiltered answer narrowed, alpha never among them
    every = paths(st["sim_all"])
    assert "projects/alpha.md" not in every and len(every) >= 3
    assert paths(st["sim_where"]) == (DONE & every) - {"projects/alpha.md"} != set()
    assert paths(st["sim_where_and"]) == set()    # only alpha holds both: excluded
    assert paths(st["sim_dates"]) == {"meetings/2025-06-02 Planning.md"}
    assert paths(st["sim_folder"]) == {"meetings/2025-06-02 Planning.md"}
    cli = {r["path"] for r in trove.ok("similar", ALPHA, "-n", "50", "--json", "--where",
                                       "status=done").json()["results"]}
    assert cli == paths(st["sim_where"])
    tool_error(st["sim_bad_date"], "someday", "not a date")
    tool_error(st["sim_bad_type"], "priority", "compares numbers and dates")
    tool_error(st["sim_bad_coll"], "no collection named 'nope'")
    rpc_error(st["sim_bad_key"], "wehre")

    if mode == "daemon":
        # every search that returned data came through the daemon, and the
        # answers equal the server's own
        assert trove.daemon_requests() - before >= 10
        cold = run_sdk(sdk_dir, trove, tmp_path, [s for _, s in plan()], "stdio",
                       env={"TROVE_NO_DAEMON": "1"})
        assert cold["steps"] == out["steps"]
