"""The embedding engine against the independent numpy reference
(tests/tools/ref_forward.py) on small random-weight GGUF models of every
architecture: bert (incl. fused QKV, cls/last pooling, cross-encoder),
gemma-embedding; weights F32/F16/Q8_0/Q4_0/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K, and
384-wide files mixed the way llama-quantize's Q4_K_M/Q5_K_M store them."""
import json
import os

import numpy as np
import pytest

from model_util import cosines, embed_ids, load, make_models, ref, run


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    return make_models(str(tmp_path_factory.mktemp("models")))


def gg(d, name):
    return os.path.join(d, name + ".gguf")


@pytest.mark.parametrize("name", ["bert_f32", "bert_f16", "bert_fused_cls", "bert_last",
                                  "gemma_f32", "gemma_long", "bert256_f32", "bert384_f32"])
def test_float_models_match_reference(d, name):
    req = load(d, name, "req")
    want = np.array(load(d, name, "ref")["vectors"])
    got, _ = embed_ids(gg(d, name), req["seqs"])
    assert got.shape == want.shape
    err = np.abs(got - want).max()
    assert err <= 1e-4, "%s: max abs error %g" % (name, err)


@pytest.mark.parametrize("name,twin,min_cos", [
    ("bert_q8", "bert_f32", 0.999),
    ("gemma_q8", "gemma_f32", 0.999),
    ("bert256_q4_k", "bert256_f32", 0.99),
    ("bert256_q5_k", "bert256_f32", 0.99),
    ("bert256_q6_k", "bert256_f32", 0.999),
    ("bert_q50", "bert_f32", 0.98),  # the format: numpy on its weights gives 0.9867
    ("bert_q51", "bert_f32", 0.985),  # numpy: 0.9914
    ("bert384_q4_k_m", "bert384_f32", 0.99),
    ("bert384_q5_k_m", "bert384_f32", 0.995),
])
def test_quantized_models_close_to_f32(d, name, twin, min_cos):
    req = load(d, name, "req")
    want = np.array(load(d, twin, "ref")["vectors"])
    got, _ = embed_ids(gg(d, name), req["seqs"])
    c = cosines(got, want)
    assert c.min() >= min_cos, "%s vs %s: cosines %s" % (name, twin, c)
    # one sequence at a time: short ones take the int8 kernels (<= 8 rows)
    for i, s in enumerate(req["seqs"]):
        one, _ = embed_ids(gg(d, name), [s])
        c = cosines(one, want[i:i + 1])
        assert c.min() >= min_cos, "%s seq %d alone: cosine %s" % (name, i, c)


@pytest.mark.parametrize("name", ["bert_q8", "gemma_q8", "bert_q40", "bert256_q4_k",
                                  "bert256_q5_k", "bert256_q6_k", "bert_q50", "bert_q51",
                                  "bert384_q4_k_m", "bert384_q5_k_m"])
def test_quantized_models_match_their_dequantized_reference(d, name):
    # the reference uses exactly the stored (dequantised) weights in float64;
    # what is left is trove's int8 quantisation of the activations
    req = load(d, name, "req")
    want = np.array(load(d, name, "ref")["vectors"])
    got, _ = embed_ids(gg(d, name), req["seqs"])
    c = cosines(got, want)
    assert c.min() >= 0.9995, "%s: cosines %s" % (name, c)


@pytest.mark.parametrize("name", ["bert_f32", "bert_q8", "gemma_f32", "gemma_q8", "bert256_q4_k",
                                  "bert_q51", "bert384_q5_k_m"])
def test_deterministic_across_runs_and_threads(d, name):
    seqs = load(d, name, "req")["seqs"]
    _, a = embed_ids(gg(d, name), seqs, "--threads", "1")
    _, b = embed_ids(gg(d, name), seqs, "--threads", "2")
    _, c = embed_ids(gg(d, name), seqs, "--threads", "2")
    _, e = embed_ids(gg(d, name), seqs, "--threads", "3")
    assert a == b == c == e


def test_timing_adds_fields_and_keeps_vectors(d):
    # bench/llama_cpp_bench.py reads embed_ms / cpu_ms: the model calls alone
    seqs = load(d, "bert_f32", "req")["seqs"]
    _, plain = embed_ids(gg(d, "bert_f32"), seqs)
    _, timed = embed_ids(gg(d, "bert_f32"), seqs, "--timing")
    t = json.loads(timed)
    assert set(t) == set(json.loads(plain)) | {"open_ms", "embed_ms", "cpu_ms"}
    assert t["vectors"] == json.loads(plain)["vectors"]
    assert t["open_ms"] > 0 and t["embed_ms"] > 0 and t["cpu_ms"] >= 0
    t = json.loads(run("embed", gg(d, "bert_f32"), "--timing", "search the vault").stdout)
    assert t["embed_ms"] > 0 and len(t["vectors"]) == 1


def test_matryoshka_truncates_then_renormalizes(d):
    seqs = load(d, "gemma_f32", "req")["seqs"]
    got, _ = embed_ids(gg(d, "gemma_f32"), seqs, "--dim", "16")
    want = ref(gg(d, "gemma_f32"), seqs, dim=16)
    assert got.shape == (len(seqs), 16)
    assert np.abs(got - want).max() <= 1e-4
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)


def test_gemma_has_dense_projections_and_prompts(d):
    info = json.loads(run("info", gg(d, "gemma_f32"), "--json").stdout)
    assert info["architecture"] == "gemma-embedding"
    assert info["dim"] == 64 and info["kv_heads"] == 2 and info["head_dim"] == 32
    assert info["query_prompt"] == "task: search result | query: "
    assert info["doc_prompt"] == "title: none | text: "


@pytest.mark.parametrize("name,query", [("bert_f32", False), ("gemma_f32", True),
                                        ("gemma_f32", False), ("xlmr_e5", True),
                                        ("xlmr_e5", False), ("xlmr_m3", True)])
def test_text_path_with_prompt(d, name, query):
    text = "the search index of a local vault, with code and links \u6211\u5728\u8fd9"
    info = json.loads(run("info", gg(d, name), "--json").stdout)
    prompt = info["query_prompt" if query else "doc_prompt"]
    ids = json.loads(run("tokenize", gg(d, name), prompt + text).stdout)["ids"]
    args = ["embed", gg(d, name)] + (["--query"] if query else []) + [text]
    got = np.array(json.loads(run(*args).stdout)["vectors"])
    want = ref(gg(d, name), [ids])
    assert np.abs(got - want).max() <= 1e-4


@pytest.mark.parametrize("name", ["rerank_f32", "xlmr_rerank"])
def test_rerank_matches_reference(d, name):
    m = gg(d, name)
    q = "fast local search"
    docs = ["a vault index with code", "the model ranks text", "token data line"]
    got = np.array(json.loads(run("rerank", m, q, *docs).stdout)["scores"])
    seqs, types = [], []
    for doc in docs:
        t = json.loads(run("tokenize", m, "--pair", q, doc).stdout)
        seqs.append(t["ids"])
        types.append(t["types"])
    assert any(1 in t for t in types)  # second segment typed 1
    want = ref(m, seqs, types, pool="rank")
    assert np.abs(got - want).max() <= 1e-4
    assert len(set(got.tolist())) == len(docs)


@pytest.mark.parametrize("name", ["rerank384_q4_k_m", "rerank384_q5_k_m"])
def test_mixed_quant_cross_encoder_matches_references(d, name):
    # a 384-wide cross-encoder as llama-quantize mixes it (Q5_0/Q5_1 and
    # Q4_K/Q5_K), 20 pairs: the packed int8 path (more than 8 rows)
    m = gg(d, name)
    q = "fast local search"
    words = ["vault", "index", "code", "model", "ranks", "text", "token", "data", "line"]
    rng = np.random.default_rng(5)
    docs = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(3, 40, size=20)]
    got = np.array(json.loads(run("rerank", m, q, *docs).stdout)["scores"])
    seqs, types = [], []
    for doc in docs:
        t = json.loads(run("tokenize", m, "--pair", q, doc).stdout)
        seqs.append(t["ids"])
        types.append(t["types"])
    own = ref(m, seqs, types, pool="rank")  # the stored (dequantised) weights
    twin = ref(gg(d, "rerank384_f32"), seqs, types, pool="rank")
    # what is left against its own weights is the int8 activations (scores
    # here are 0.85..1.17, max |diff| was 0.005); against the F32 twin
    # trove may lose no more than a hair beyond what the format loses
    # (random weights make a cross-encoder sensitive: numpy's own-vs-F32
    # correlation is 0.99 for Q4_K_M*, 0.95 for Q5_K_M*)
    assert np.abs(got - own).max() <= 0.015, (got, own)
    assert np.corrcoef(got, own)[0, 1] >= 0.998, (got, own)
    fmt = np.corrcoef(own, twin)[0, 1]
    assert np.corrcoef(got, twin)[0, 1] >= fmt - 0.005, (got, twin, fmt)


def test_xlmr_prompts_and_pair_framing(d):
    e5 = json.loads(run("info", gg(d, "xlmr_e5"), "--json").stdout)
    assert (e5["tokenizer"], e5["query_prompt"], e5["doc_prompt"]) == ("t5", "query: ", "passage: ")
    m3 = json.loads(run("info", gg(d, "xlmr_m3"), "--json").stdout)
    assert (m3["query_prompt"], m3["doc_prompt"], m3["pooling"]) == ("", "", "cls")
    t = json.loads(run("tokenize", gg(d, "xlmr_rerank"), "--pair", "a b", "c").stdout)["ids"]
    a = json.loads(run("tokenize", gg(d, "xlmr_rerank"), "a b").stdout)["ids"]
    c = json.loads(run("tokenize", gg(d, "xlmr_rerank"), "c").stdout)["ids"]
    # <s> a </s></s> c </s>
    assert t == a + c[-1:] + c[1:]


def test_rerank_refuses_embedding_model_and_vice_versa(d):
    p = run("rerank", gg(d, "bert_f32"), "q", "doc", check=False)
    assert p.returncode == 1 and "classification head" in p.stderr
    p = run("embed", gg(d, "rerank_f32"), "text", check=False)
    assert p.returncode == 1 and "reranker" in p.stderr


@pytest.mark.parametrize("name,msg", [
    ("bad_shape", "blk.1.attn_q.weight has shape [64, 96], expected [64, 64]"),
    ("bad_missing", "blk.0.attn_q.weight is missing"),
    ("bad_arch", "unsupported architecture 'mamba'"),
])
def test_broken_models_are_refused(d, name, msg):
    for sub in (["info"], ["embed"]):
        args = sub + [gg(d, name)] + (["x"] if sub == ["embed"] else [])
        p = run(*args, check=False)
        assert p.returncode == 1, p.stderr
        assert msg in p.stderr, p.stderr


def test_truncated_files_fail_cleanly(d, tmp_path):
    data = open(gg(d, "bert_f32"), "rb").read()
    for cut in (10, 100, 2000, len(data) // 2, len(data) - 1):
        p = tmp_path / ("cut%d.gguf" % cut)
        p.write_bytes(data[:cut])
        r = run("embed", str(p), "x", check=False)
        assert r.returncode == 1 and "trove:" in r.stderr, (cut, r.returncode, r.stderr)


def test_bad_ids_and_lengths_are_errors(d):
    m = gg(d, "bert_f32")
    p = run("embed", m, "--ids", "2,999999,3", check=False)
    assert p.returncode == 1 and "outside the vocabulary" in p.stderr
    p = run("embed", m, "--ids", ",".join(["5"] * 65), check=False)
    assert p.returncode == 1 and "tokens" in p.stderr
    # long texts are truncated to the context, not refused
    out = json.loads(run("embed", m, " ".join(["vault"] * 500)).stdout)
    assert len(out["vectors"][0]) == 64
