"""Hybrid fusion end to end with the GloVe test model (scripts/glove-model.sh,
skipped with the reason when npm cannot be reached): on the paraphrase
vault of tests/data/paraphrase, hybrid search is at least as good as the
keyword channels on every query kind and better on paraphrases; --explain
says which fusion ran and the vector weight it applied for the query.
"""
import json

import pytest

from conftest import REPO

DATA = REPO / "tests" / "data" / "paraphrase"


@pytest.fixture
def hybrid(trove, glove):
    trove.ok("collection", "add", DATA / "notes", "--name", "para")
    trove.env["TROVE_EMBED_MODEL"] = glove
    assert "embedded" in trove.ok("update").out
    return trove


QUERIES = [json.loads(line) for line in (DATA / "queries.jsonl").read_text().splitlines()
           if line.strip()]


def quality(trove, flags, kind):
    """hit@1 and MRR@3 over the queries of one kind."""
    hit1 = mrr = 0.0
    qs = [q for q in QUERIES if q["kind"] == kind]
    for q in qs:
        paths = trove.paths(q["query"], "-n", "3", *flags)
        if paths[:1] == [q["expected"]]:
            hit1 += 1
        if q["expected"] in paths:
            mrr += 1 / (paths.index(q["expected"]) + 1)
    return hit1 / len(qs), mrr / len(qs)


def test_hybrid_at_least_keyword_and_better_on_paraphrases(hybrid):
    for kind in ("keyword", "paraphrase"):
        kw = quality(hybrid, ["--no-vector"], kind)
        hy = quality(hybrid, [], kind)
        assert hy[0] >= kw[0] and hy[1] >= kw[1], (kind, kw, hy)
        if kind == "keyword":
            assert hy[0] == 1.0, hy
        else:
            assert hy[0] > kw[0] and hy[0] >= 0.5, (kw, hy)


def test_explain_shows_the_fusion(hybrid):
    q = "how can I stop forgetting what I studied"
    root = hybrid.ok("search", q, "--json", "--explain").json()
    fu = root["fusion"]
    assert fu["method"] == "z-score"
    conf = fu["vector_confidence"]
    assert 0 <= fu["bm25_certainty"] <= 1 and 0 <= fu["agreement"] <= 1
    assert abs(conf - (1 - fu["bm25_certainty"] * (1 - fu["agreement"]))) < 1e-9
    # the default vector weight 0.5, scaled by the query's confidence
    assert abs(fu["channels"]["vector"]["weight"] - 0.5 * conf) < 1e-9
    assert fu["channels"]["vector"]["n"] >= 1
    top = root["results"][0]
    assert top["path"] == "spaced-repetition.md"
    ex = top["explain"]
    votes = sum(ex[c]["vote"] for c in ("bm25", "title", "vector") if ex[c])
    assert abs(votes - top["score"]) < 1e-6, (votes, top["score"])
    assert ex["vector"]["z"] > 0
    # --vector-weight scales what is applied
    fu2 = hybrid.ok("search", q, "--json", "--explain", "--vector-weight", "2").json()["fusion"]
    assert abs(fu2["channels"]["vector"]["weight"] - 2 * conf) < 1e-9
    text = hybrid.ok("search", q, "--explain").out
    assert "fusion: z-score" in text and "vector confidence:" in text
    # keyword channels alone: reciprocal rank fusion, no vector weight
    fu3 = hybrid.ok("search", "flashcards", "--json", "--explain", "--no-vector").json()["fusion"]
    assert fu3["method"] == "rrf" and fu3["channels"]["vector"]["weight"] == 0
    assert fu3["channels"]["bm25"]["weight"] == 1 and fu3["channels"]["title"]["weight"] == 1.5
    assert "fusion: rrf" in hybrid.ok("search", "flashcards", "--explain", "--no-vector").out
    # vsearch scores by cosine: no fusion
    assert hybrid.ok("vsearch", q, "--json", "--explain").json()["fusion"] is None
    assert "fusion:" not in hybrid.ok("vsearch", q, "--explain").out


def test_config_vector_weight_is_applied(hybrid):
    cfg = hybrid.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "weights:\n  vector: 1.5\n")
    fu = hybrid.ok("search", "where does my salary go", "--json", "--explain").json()["fusion"]
    assert abs(fu["channels"]["vector"]["weight"] - 1.5 * fu["vector_confidence"]) < 1e-9
