#!/usr/bin/env bash
# Install every Debian package trove needs to build, test and benchmark.
# Idempotent: skips apt entirely when everything is already present.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libsqlite3-dev libjansson-dev libyaml-dev libutf8proc-dev libxxhash-dev
  libopenblas-dev libcmocka-dev libstemmer-dev libmicrohttpd-dev libcurl4-openssl-dev
  libmd4c-dev libmd4c0 chromium nodejs npm
  python3 python3-numpy python3-pytest python3-jieba python3-sentencepiece opencc
  libmecab2 mecab-ipadic-utf8
  hyperfine
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
