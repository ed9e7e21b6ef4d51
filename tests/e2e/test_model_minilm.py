"""The MiniLM-shaped model of the issue (6 layers, 384 hidden, 12 heads,
1536 FFN, 30522 vocab; random weights) in F32 and Q8_0 against the numpy
reference: max abs error <= 1e-4 for F32, cosine >= 0.999 to the F32
output for Q8_0, bit-identical across thread counts."""
import json
import os

import numpy as np
import pytest

from model_util import cosines, embed_ids, load, make_models, run


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    return make_models(str(tmp_path_factory.mktemp("minilm")), minilm=True)


def test_minilm_f32_matches_reference(d):
    req = load(d, "minilm_f32", "req")
    want = np.array(load(d, "minilm_f32", "ref")["vectors"])
    got, _ = embed_ids(os.path.join(d, "minilm_f32.gguf"), req["seqs"])
    assert [len(s) for s in req["seqs"]] == [16, 102, 256]
    err = np.abs(got - want).max()
    assert err <= 1e-4, err


def test_minilm_q8_close_to_f32(d):
    req = load(d, "minilm_q8", "req")
    want = np.array(load(d, "minilm_f32", "ref")["vectors"])
    got, a = embed_ids(os.path.join(d, "minilm_q8.gguf"), req["seqs"], "--threads", "1")
    _, b = embed_ids(os.path.join(d, "minilm_q8.gguf"), req["seqs"], "--threads", "2")
    c = cosines(got, want)
    assert c.min() >= 0.999, c
    assert a == b


def test_minilm_info(d):
    info = json.loads(run("info", os.path.join(d, "minilm_q8.gguf"), "--json").stdout)
    assert (info["layers"], info["hidden"], info["heads"], info["ffn"], info["vocab"]) == \
        (6, 384, 12, 1536, 30522)
    assert info["tensors"]["Q8_0"]["count"] == 6 * 6 + 1
