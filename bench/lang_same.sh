#!/usr/bin/env bash
# lang_same.sh OLD_REV [BUILD] -- bench/lang_same.c: the lang.c of git
# revision OLD_REV against the one in BUILD's libtrovecore.a (default
# build/), on the tldr pages and ../shared/corpora's notes (session 36).
#   bash bench/lang_same.sh main
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rev=$1 build=${2:-$here/build}
corpora=${CORPORA:-$here/../shared/corpora}
work=$(mktemp -d "${TMPDIR:-/tmp}/trove-langsame.XXXXXX")
trap 'rm -rf "$work"' EXIT
git -C "$here" show "$rev:src/text/lang.c" > "$work/lang_old.c"
cc -O2 -I"$here/src" -Dlang_detect=old_lang_detect -Dlang_candidates=old_lang_candidates \
  -Dlang_code=old_lang_code -Dlang_from_code=old_lang_from_code -c "$work/lang_old.c" -o "$work/lang_old.o"
link=$(sed 's/^.*-o trove //; s/CMakeFiles\/trove.dir[^ ]*//g' "$build/CMakeFiles/trove.dir/link.txt")
(cd "$build" && cc -O2 -I"$here/src" "$here/bench/lang_same.c" "$work/lang_old.o" -o "$work/lang_same" $link)
mkdir -p "$work/tldr"
tar -xzf "${TLDR_TARBALL:-$corpora/tldr-pages.tar.gz}" -C "$work/tldr"
{ find "$work/tldr" -name '*.md'; find "$corpora" -name '*.md' 2>/dev/null | head -20000; } |
  "$work/lang_same" 300000
