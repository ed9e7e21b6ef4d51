"""Helpers shared by the test_model_*.py engine tests: locate the trove
binary, build the random-weight models once per session, run `trove model`
and compare vectors."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tests", "tools")
PY = "/usr/bin/python3"  # Debian's python, which has numpy


def trove_bin():
    """$TROVE_BIN, else build/trove (as conftest.py)."""
    b = os.environ.get("TROVE_BIN") or os.path.join(ROOT, "build", "trove")
    if not os.access(b, os.X_OK):
        raise RuntimeError("trove binary not found at %s: build it or set TROVE_BIN" % b)
    return b


MAKE_MODELS_SOURCES = ["make_models.py", "gguf_writer.py", "ref_forward.py", "tok_parity.py"]


def make_models(outdir, minilm=False):
    """tests/tools/make_models.py's models in `outdir` (made there if need
    be): generated once per version of the generator and shared between
    workers and runs (tests/tools/build_once.py), copied here."""
    sys.path.insert(0, TOOLS)
    from build_once import build_once
    flags = ["--minilm"] if minilm else []

    def build(folder):
        subprocess.run([PY, os.path.join(TOOLS, "make_models.py"), folder] + flags,
                       check=True, capture_output=True)
    build_once("make-models" + "".join(flags), MAKE_MODELS_SOURCES, build, str(outdir))
    return outdir


def run(*args, check=True):
    p = subprocess.run([trove_bin(), "model"] + [str(a) for a in args],
                       capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError("trove model %s failed (%d): %s" % (args[:2], p.returncode, p.stderr))
    return p


def embed_ids(model, seqs, *extra):
    ids = [",".join(str(i) for i in s) for s in seqs]
    p = run("embed", model, "--ids", *extra, *ids)
    return np.array(json.loads(p.stdout)["vectors"], dtype=np.float64), p.stdout


def load(d, name, what):
    with open(os.path.join(d, "%s.%s.json" % (name, what))) as f:
        return json.load(f)


def cosines(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def ref(model, seqs, types=None, pool=None, normalize=True, dim=0):
    sys.path.insert(0, TOOLS)
    import ref_forward
    r = ref_forward.Reader(model)
    return np.array(ref_forward.forward(r, seqs, types, pool, normalize, dim), dtype=np.float64)
