"""`trove query`: the best-answer path (expansion, fusion, re-scoring, blend)
from the CLI and the MCP `query` tool, on the fixture vault. Reranker models
are random-weight GGUF files from tests/tools/make_models.py."""
import json
import subprocess
import sys

import pytest

from conftest import COLLECTION, REPO, trove_bin

TOOLS = REPO / "tests" / "tools"
# Every test runs cold and with a daemon, each `trove query` compared byte
# for byte with its cold twin (conftest.Trove.both_ways); the MCP server
# answers through that daemon in the second run.
DAEMON_BOTH_WAYS = True
Q = "how do I handle errors in rust"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny cross-encoder (rank head) and a tiny embedding model (none)."""
    sys.path.insert(0, str(TOOLS))
    import make_models
    d = tmp_path_factory.mktemp("models")
    make_models.bert_model(str(d / "rerank.gguf"), rerank=True, seed=6,
                           name="tiny-ms-marco-reranker")
    make_models.bert_model(str(d / "embed.gguf"), seed=1, name="tiny-bert")
    (d / "garbage.gguf").write_bytes(b"GGUF but not really a model file")
    return d


def query(trove, *args, **kw):
    r = trove.ok("query", *args, **kw)
    return r


def qjson(trove, *args, **kw):
    return query(trove, "--json", *args, **kw).json()


def test_query_results_and_every_format(indexed):
    trove, vault = indexed
    doc = qjson(trove, Q)
    paths = [r["path"] for r in doc["results"]]
    assert paths[0] == "programming/rust/error-handling.md"
    assert all(0 <= r["score"] <= 1 for r in doc["results"])
    scores = [r["score"] for r in doc["results"]]
    assert scores == sorted(scores, reverse=True)
    files = query(trove, Q, "--files").out.splitlines()
    assert files[0] == str(vault / "programming/rust/error-handling.md")
    assert len(files) == len(paths)
    csv = query(trove, Q, "--csv").out.splitlines()
    assert len(csv) == len(paths) + 1
    md = query(trove, Q, "--md").out
    assert "Error handling in Rust" in md
    xml = query(trove, Q, "--xml").out
    assert xml.count("<result ") == len(paths)
    text = query(trove, Q).out
    assert "programming/rust/error-handling.md" in text


def test_query_limits_and_filters(indexed):
    trove, _ = indexed
    assert len(qjson(trove, Q, "-n", "2")["results"]) == 2
    every = qjson(trove, "rust", "--all")["results"]
    assert len(every) >= len(qjson(trove, "rust", "-n", "1")["results"])
    for r in qjson(trove, "cooking", "--folder", "cooking", "--all")["results"]:
        assert r["path"].startswith("cooking/")
    for r in qjson(trove, "broth noodles", "--tags", "japanese")["results"]:
        assert "japanese" in r["tags"]
    high = qjson(trove, Q, "--min-score", "0.9")["results"]
    assert high and all(r["score"] >= 0.9 for r in high)
    assert len(high) < len(qjson(trove, Q)["results"])
    assert qjson(trove, Q, "-c", COLLECTION)["results"]
    r = trove("query", Q, "-c", "nope")
    assert r.rc != 0 and "nope" in r.err
    full = qjson(trove, Q, "-n", "1", "--full")["results"][0]
    assert "Recoverable errors" in full["body"]


def test_query_explain_text_and_json(indexed):
    trove, _ = indexed
    text = query(trove, Q, "--explain", "-n", "3").out
    assert "variant original (x2): " + Q in text
    assert "variant keywords (x1): handle errors rust" in text
    assert "variant prf (x1): " in text
    assert "original/bm25 #1" in text and "original/title #1" in text
    assert "reranked" in text and "by lexical" in text
    assert "blend 88% retrieval" in text and "title-protected" in text
    doc = qjson(trove, Q, "--explain")
    pipe = doc["pipeline"]
    assert [v["kind"] for v in pipe["variants"]] == ["original", "keywords", "prf"]
    assert pipe["variants"][0]["weight"] == 2.0
    assert pipe["reranker"] == "lexical" and pipe["rerank_warning"] is None
    assert pipe["rrf_k"] == 60
    top = doc["results"][0]["explain"]["pipeline"]
    assert top["ranks"]["original/bm25"] == 1
    assert top["bonus"] == 0.05 and top["rrf_rank"] == 1
    assert top["reranked"] and top["rerank_score"] > 0
    assert top["title_protected"] and top["retrieval_weight"] == 0.875


def test_query_stage_switches(indexed):
    trove, _ = indexed
    pipe = qjson(trove, Q, "--explain", "--no-expand")["pipeline"]
    assert [v["kind"] for v in pipe["variants"]] == ["original"]
    doc = qjson(trove, Q, "--explain", "--no-rerank")
    assert doc["pipeline"]["reranker"] == "none" and doc["pipeline"]["reranked"] == 0
    assert all(r["explain"]["pipeline"]["rerank_score"] is None for r in doc["results"])
    doc = qjson(trove, "rust", "--explain", "--candidates", "2", "--all")
    assert doc["pipeline"]["reranked"] == 2
    assert sum(r["explain"]["pipeline"]["reranked"] for r in doc["results"]) == 2
    # usage errors never reach a daemon (both=False: not counted as its calls)
    for bad in (["--candidates", "0"], ["--candidates", "x"], ["--reranker", ""]):
        r = trove("query", Q, *bad, both=False)
        assert r.rc == 2, r
    assert trove("search", Q, "--no-rerank", both=False).rc == 2   # query's flags only


def test_query_never_drops_what_search_has_in_its_top(indexed):
    """Without a reranker model, search's top 10 stays in query's top 10."""
    trove, _ = indexed
    for q in (Q, "rust", "pasta cooking", "git undo commit", "kyoto temples trip",
              "what is spaced repetition"):
        s = set(trove.paths(q, "-n", "10"))
        got = set(r["path"] for r in qjson(trove, q, "-n", "10")["results"])
        assert s <= got, q


def test_query_with_a_reranker_model(indexed, models):
    trove, _ = indexed
    model = str(models / "rerank.gguf")
    doc = qjson(trove, Q, "--explain", "--reranker", model)
    assert doc["pipeline"]["reranker"] == model
    assert doc["pipeline"]["rerank_warning"] is None
    top = doc["results"][0]["explain"]["pipeline"]
    assert top["reranked"] and top["retrieval_weight"] in (0.75, 0.6, 0.4)
    # the same from $TROVE_RERANK_MODEL and from config.yaml
    env_doc = qjson(trove, Q, "--explain", env={"TROVE_RERANK_MODEL": model})
    assert env_doc == doc
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "rerank_model: %s\n" % json.dumps(model))
    assert qjson(trove, Q, "--explain") == doc
    # --no-rerank leaves the model alone
    assert qjson(trove, Q, "--explain", "--no-rerank")["pipeline"]["reranker"] == "none"


@pytest.mark.parametrize("kind,says", [("embed", "not a reranker"),
                                       ("garbage", "cannot use reranker")])
def test_wrong_kind_of_reranker_falls_back(indexed, models, kind, says):
    trove, _ = indexed
    lexical = qjson(trove, Q)
    r = trove("query", Q, "--json", "--explain", "--reranker", models / (kind + ".gguf"))
    assert r.rc == 0, r
    assert says in r.err and "re-scoring lexically instead" in r.err
    doc = r.json()
    assert doc["pipeline"]["reranker"] == "lexical"
    assert says in doc["pipeline"]["rerank_warning"]
    assert [x["path"] for x in doc["results"]] == [x["path"] for x in lexical["results"]]


def mcp(trove, msgs, *extra):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    data = "".join(json.dumps(m) + "\n" for m in [init] + msgs).encode()
    p = subprocess.run([str(trove_bin()), "mcp", *extra], input=data, env=trove.env,
                       capture_output=True, timeout=60, cwd=str(trove.home))
    assert p.returncode == 0, p.stderr
    return [json.loads(l) for l in p.stdout.decode().splitlines()][1:]


def call(id, **arguments):
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": arguments}}


def test_mcp_query_tool_matches_the_cli(indexed, models):
    trove, _ = indexed
    r = mcp(trove, [{"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                    call(3, query=Q, include_scores=True),
                    call(4, query=Q, rerank=False),
                    call(5, query=Q, expand=False, candidates=2),
                    call(6, query=Q, candidates=0)])
    tool = [t for t in r[0]["result"]["tools"] if t["name"] == "query"][0]
    props = tool["inputSchema"]["properties"]
    assert {"rerank", "expand", "candidates", "filters", "top_k"} <= set(props)
    got = r[1]["result"]["structuredContent"]["results"]
    assert [x["path"] for x in got] == [x["path"] for x in qjson(trove, Q)["results"]]
    assert [round(x["score"], 6) for x in got] == \
        [round(x["score"], 6) for x in qjson(trove, Q)["results"]]
    assert got[0]["scores"]["pipeline"]["fused_rank"] == 1
    norr = r[2]["result"]["structuredContent"]["results"]
    assert [x["path"] for x in norr] == \
        [x["path"] for x in qjson(trove, Q, "--no-rerank")["results"]]
    few = r[3]["result"]["structuredContent"]["results"]
    assert [x["path"] for x in few] == \
        [x["path"] for x in qjson(trove, Q, "--no-expand", "--candidates", "2")["results"]]
    assert r[4]["error"]["code"] == -32602
    # a reranker that cannot rerank: a warning in the result, not an error
    r = mcp(trove, [call(2, query=Q)], "--reranker", str(models / "embed.gguf"))
    sc = r[0]["result"]["structuredContent"]
    assert any("not a reranker" in w for w in sc["warnings"])
    assert sc["results"][0]["path"] == "programming/rust/error-handling.md"
    # with a reranker model: the same order as the CLI with it
    model = str(models / "rerank.gguf")
    r = mcp(trove, [call(2, query=Q)], "--reranker", model)
    assert [x["path"] for x in r[0]["result"]["structuredContent"]["results"]] == \
        [x["path"] for x in qjson(trove, Q, "--reranker", model)["results"]]
