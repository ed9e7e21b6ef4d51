"""`trove query --expand-model`: generative expansion with qmd's
query-expansion model format. A random-weight model cannot expand a query
well, so these tests check the mechanics and the fallbacks: a Qwen3-shaped
random decoder writes no usable lex:/vec: line (or runs out of its token
budget), and the results must then be exactly those of the deterministic
expansion, with --explain saying why; a model that cannot generate, or a
file that is no model, falls back the same way; a name that resolves to
nothing is an error. The parser of the model's lines has its own unit test
(tests/unit/test_qexpand.c) and fuzz target; the generation engine its
parity test (test_generate.py)."""
import json
import sys

import pytest

from conftest import REPO, index_vault

TOOLS = REPO / "tests" / "tools"
Q = "how do I handle errors in rust"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    sys.path.insert(0, str(TOOLS))
    import make_models
    d = tmp_path_factory.mktemp("xmodels")
    # a tiny random chat decoder (gpt2 vocabulary of 1000 pieces)
    make_models.qwen3_model(str(d / "qwen3_chat.gguf"), seed=34, pool=None,
                            name="tiny-qwen3-chat", tied=False)
    make_models.bert_model(str(d / "embed.gguf"), seed=1, name="tiny-bert")
    (d / "garbage.gguf").write_bytes(b"GGUF but not really a model file")
    return d


@pytest.fixture
def indexed(trove, vault):
    index_vault(trove, vault)
    return trove


def qjson(trove, *args):
    r = trove("query", Q, "--json", *args)
    assert r.rc == 0, r
    return json.loads(r.out)


def results(doc):
    return [(r["path"], r["score"]) for r in doc["results"]]


@pytest.mark.parametrize("model,why", [
    ("qwen3_chat.gguf", ("no lex: or vec: line", "token budget")),
    ("embed.gguf", ("failed", "cannot generate")),
    ("garbage.gguf", ("could not be opened",)),
])
def test_unusable_model_keeps_deterministic_expansion(indexed, models, model, why):
    plain = qjson(indexed, "--explain")
    got = qjson(indexed, "--explain", "--expand-model", str(models / model))
    assert results(got) == results(plain)
    kinds = [v["kind"] for v in got["pipeline"]["variants"]]
    assert kinds == [v["kind"] for v in plain["pipeline"]["variants"]]
    note = got["pipeline"]["expansion"]
    assert "deterministic expansion only" in note
    assert any(w in note for w in why), note
    assert "expansion" not in plain["pipeline"]
    text = indexed("query", Q, "--explain", "--expand-model", str(models / model)).out
    assert "expansion: " in text and "deterministic expansion only" in text
    # every format answers, the same notes in the same order
    files = indexed("query", Q, "--files", "--expand-model", str(models / model)).out
    assert files == indexed("query", Q, "--files").out


def test_config_key_and_no_expand(indexed, models):
    cfg = indexed.config / "config.yaml"
    cfg.write_text(cfg.read_text() + "expand_model: %s\n" % (models / "qwen3_chat.gguf"))
    doc = qjson(indexed, "--explain")
    assert "deterministic expansion only" in doc["pipeline"]["expansion"]
    # --no-expand: no model run, no note
    doc = qjson(indexed, "--explain", "--no-expand")
    assert "expansion" not in doc["pipeline"]
    assert [v["kind"] for v in doc["pipeline"]["variants"]] == ["original"]


def test_model_that_resolves_to_nothing_is_an_error(indexed):
    r = indexed("query", Q, "--expand-model", "no-such-model")
    assert r.rc == 1 and "no-such-model" in r.err
    r = indexed("query", Q, "--expand-model", "")
    assert r.rc == 2
    assert indexed("search", Q, "--expand-model", "x").rc == 2   # query's flag only


def test_expansion_model_through_the_daemon(indexed, models):
    """A running daemon answers query --expand-model (no cold fallback): the
    model opened once in its shared models (kind generate) for several
    queries, the answers byte for byte the cold ones."""
    model = str(models / "qwen3_chat.gguf")
    indexed.start_daemon("--no-watch", "--idle", "300")
    try:
        before = indexed.daemon_requests()
        warm = [indexed("query", Q, "--json", "--explain", "--expand-model", model, both=False)
                for _ in range(2)]
        assert indexed.daemon_requests() - before == 3   # the two queries and this status
        st = indexed("daemon", "status", both=False)
        assert st.rc == 0, st
        assert st.out.count("generate: %s" % model) == 1, st.out
        assert "models loaded: 1 " in st.out, st.out
        cold = indexed("query", Q, "--json", "--explain", "--expand-model", model,
                       env={"TROVE_NO_DAEMON": "1"}, both=False)
        for w in warm:
            assert w.rc == 0 and w.out == cold.out
        assert "deterministic expansion only" in json.loads(cold.out)["pipeline"]["expansion"]
    finally:
        indexed.stop_daemon()
