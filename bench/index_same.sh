#!/usr/bin/env bash
# index_same.sh OLD_BIN NEW_BIN WORK [VAULT10K]
# Whether two trove binaries write the same index: `sqlite3 .dump` of each
# index compared byte for byte (md5) after every step, and `trove check`
# of the new one (session 33, w-1m).
#  1. VAULT10K (a generated vault, bench/scale_bench.py gen): fresh update.
#  2. A mixed vault (the Obsidian help vault in six languages, the Chinese
#     CS notes, 2,000 generated notes) through: a fresh update; edits that
#     add, change and remove links, a new note named by dangling links, a
#     deleted note that others link to, a renamed note; a no-op update; a
#     rollback to snapshot 1; an update after it; a collection removed.
# TROVE_NOW is fixed, so that snapshot times are the same for both; the
# two meta rows that differ between any two indexes (index_id, random, and
# tokenizer_stamp, which hashes the dictionaries' paths and inodes) are
# left out of the comparison.
# FTS_LOGICAL=1 compares the full-text tables by their contents instead of
# their pages: the rows of chunks_fts_data/_idx and titles_fts_data/_idx
# (FTS5's segments, whose layout depends on when its hash was flushed and
# which segments were merged) are left out of the dump, and every (term,
# row, column, offset) that fts5vocab's "instance" table lists of each
# full-text table, and its averages record (the row and token counts bm25
# reads), are compared in their place (session 34, w-idx5: a fresh
# build writes with a larger hash).
set -euo pipefail
old=$1 new=$2 work=$3 v10k=${4:-}
corpora=${CORPORA:-/work/shared/corpora}
export TROVE_NOW=1764720000 NO_COLOR=1 TROVE_NO_DAEMON=1
unset TROVE_EMBED_MODEL
rm -rf "$work"; mkdir -p "$work"
if [ "${FTS_LOGICAL:-0}" = 1 ]; then   # the shell opens the tables with a stand-in tokenizer
  gcc -shared -fPIC -O2 -o "$work/fts_name_tok.so" "$(dirname "$0")/fts_name_tok.c"
fi
same=0 total=0
env_for() {   # env_for TAG -> the environment of that binary's index
  echo "TROVE_INDEX=$work/$1/index.db TROVE_CONFIG_DIR=$work/$1/config XDG_CACHE_HOME=$work/$1/xdg XDG_CONFIG_HOME=$work/$1/xdgc XDG_RUNTIME_DIR=$work/$1/run"
}
both() {   # both ARGS...: run trove ARGS with each binary on its own index
  for tag in old new; do
    bin=$old; [ $tag = new ] && bin=$new
    mkdir -p "$work/$tag/run"; chmod 700 "$work/$tag/run"
    env $(env_for $tag) "$bin" "$@" >"$work/$tag/out.txt" 2>&1 || { cat "$work/$tag/out.txt"; return 1; }
  done
}
dump() {
  if [ "${FTS_LOGICAL:-0}" = 1 ]; then
    { sqlite3 "$1" .dump | grep -v "^INSERT INTO meta VALUES('\(index_id\|tokenizer_stamp\)'" |
        grep -v '^INSERT INTO \(chunks\|titles\)_fts_\(data\|idx\) '
      for t in chunks_fts titles_fts; do
        sqlite3 -cmd ".load $work/fts_name_tok" "$1" "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, '$t', 'instance');
          SELECT '$t', term, doc, col, offset FROM temp.v;
          SELECT '$t averages', hex(block) FROM ${t}_data WHERE id = 1;"
      done; } | md5sum | cut -c1-32
  else
    sqlite3 "$1" .dump | grep -v "^INSERT INTO meta VALUES('\(index_id\|tokenizer_stamp\)'" | md5sum | cut -c1-32
  fi
}
compare() {   # compare STEP
  total=$((total + 1))
  a=$(dump "$work/old/index.db") b=$(dump "$work/new/index.db")
  env $(env_for new) "$new" check >"$work/check.txt" 2>&1 || { echo "CHECK FAILED after $1"; cat "$work/check.txt"; }
  if [ "$a" = "$b" ]; then same=$((same + 1)); echo "same  $1 ($a)"; else echo "DIFF  $1 ($a $b)"; fi
}
if [ -n "$v10k" ]; then
  both collection add "$v10k" --name gen
  both update; compare "10k fresh"
  both collection remove gen; compare "10k collection removed"
fi
m=$work/mixed
mkdir -p "$m"
cp -r "$corpora/obsidian-help" "$m/help"; cp -r "$corpora/cs-notes-zh" "$m/cs"
chmod -R u+w "$m"
if [ -n "$v10k" ]; then cp -r "$v10k/0000" "$v10k/0001" "$m/"; fi
# ties: two notes whose names differ by case only, linked by either
printf '# Case Test\n\n[[case test]] [[CASE TEST]]\n' >"$m/Case Test.md"
printf '# case test\n\n[[Case Test]]\n' >"$m/case test.md"
# a second collection with the same paths: a link prefers its own
mkdir -p "$work/other"; cp -r "$corpora/obsidian-help/en" "$work/other/help"; chmod -R u+w "$work/other"
both collection add "$m" --name mixed
both collection add "$work/other" --name other
both update; compare "mixed fresh"
# edits: links added, changed, removed; a note for dangling links; a linked
# note deleted; a note renamed
first=$(find "$m/help/en" -name '*.md' | sort | head -n 1)
printf '\n[[Internal links]] [[nowhere yet]] [[help/en/Linking notes and files/Internal links]]\n' >>"$first"
printf '# Nowhere yet\n\nNow it exists. [[Aliases]]\n' >"$m/nowhere yet.md"
victim=$(grep -rl '\[\[' "$m/help/en" | sort | sed -n 3p)
rm -f "$(find "$m/help/en" -name 'Aliases.md' | head -n 1)"
mv "$victim" "$(dirname "$victim")/renamed $(basename "$victim")"
find "$m/help/de" -name '*.md' | sort | head -n 5 | while IFS= read -r f; do sed -i 's/\[\[/[[x/' "$f"; done
both update; compare "mixed after edits"
both update; compare "mixed no-op"
both snapshot rollback 1; compare "mixed rollback to 1"
both update; compare "mixed update after rollback"
both collection remove mixed; compare "mixed collection removed"
both update; compare "other alone"
echo "$same of $total dumps identical"
[ "$same" = "$total" ]
