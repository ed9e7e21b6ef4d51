#!/usr/bin/env bash
# Install every Debian package trove needs to build, test and benchmark.
# Idempotent: skips apt entirely when everything is already present.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libsqlite3-dev libjansson-dev libyaml-dev libutf8proc-dev libxxhash-dev
  libopenblas-dev libcmocka-dev libstemmer-dev libmicrohttpd-dev libcurl4-openssl-dev
  libmd4c-dev libmd4c0 chromium
  fonts-wqy-zenhei  # a CJK font: the browser tests' screenshots of Chinese pages show the text
  python3 python3-numpy python3-pytest python3-pytest-xdist python3-jieba python3-sentencepiece opencc
  libmecab2 mecab-ipadic-utf8
  hyperfine
  ccache  # scripts/test.sh compiles through it: a clean clone reuses the objects of earlier runs
)

# Node.js runs the test clients (MCP SDKs, puppeteer-core). A machine may
# have it from another packaging (nodesource's nodejs bundles npm and
# conflicts with Debian's npm): install Debian's only when the commands
# are missing.
command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)

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
