#!/usr/bin/env bash
# Build (once, cached) a model2vec folder of the default model's shape
# (potion-multilingual-128M: 500,353 Unigram pieces x 256 F32, ~0.5 GB,
# seeded random vectors) and print its folder. Used by tests/e2e and
# bench/default_model_bench.sh.
#
#   scripts/big-m2v-model.sh        -> prints .../m2v-500k-shared-v2
#
# Pieces come from the shared corpora (../shared) when present, else are
# generated (folder suffix -gen): tests/tools/big_m2v_model.py says how.
# Cache: $TROVE_MODEL_CACHE, else $XDG_CACHE_HOME/trove-dev/models, else
# ~/.cache/trove-dev/models. Exit 3 when numpy is missing (callers skip
# with that reason), 1 when the build fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${TROVE_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trove-dev/models}
shared=$(cd "$here/../.." && pwd)/shared
# bump the suffix when the builder changes what it writes
if [ -d "$shared/corpora" ]; then
  dest="$cache/m2v-500k-shared-v2"; args=(--shared "$shared")
else
  dest="$cache/m2v-500k-gen-v2"; args=()
fi
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ]; then
  echo "$dest"
  exit 0
fi
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "big-m2v-model: python3-numpy is missing" >&2; exit 3; }
mkdir -p "$cache"
# One build at a time: parallel test workers wait for the first and reuse
# its model (the builder renames a whole folder into place).
exec 9>"$dest.lock"
flock 9
[ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ] ||
  /usr/bin/python3 "$here/../tests/tools/big_m2v_model.py" "$dest" "${args[@]}" >&2
echo "$dest"
