#!/usr/bin/env bash
# Speed and size of Chinese segmentation (issue 8 targets).
#
#   bench/seg_bench.sh                  # uses $TROVE_BIN or build/trove
#
# Needs ../shared/corpora/ruanyf-weekly-zh.tar.gz and cs-notes-zh, and
# hyperfine. Measures:
#   1. segmentation throughput on one core (taskset -c 0): `trove tokenize
#      --query -` over the whole ruanyf weekly text (~9 MB), output to
#      /dev/null, user+sys CPU time; the same in index mode (with the words
#      inside words). Printing the tokens is included, so this is a floor.
#   2. dictionary load: `trove tokenize 中` against `trove tokenize a`
#      (hyperfine -N, warm page cache): the difference is opening, checking
#      and mapping trove-zh.dict (>= 3 ms is over budget).
#   3. a cold `trove search` of Chinese and of English text on an index of
#      the Chinese corpora, with the dictionary and with TROVE_ZH_DICT
#      pointing nowhere (CJK falls back to bigrams: no dictionary is read).
#   4. index size (index.db + -wal/-shm) / size of the .md files, for the
#      Chinese corpora (<= 3.0x).
# Environment: TROVE_BIN, KEEP=1 keeps the temporary folder, TMPDIR.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
shared=$here/../shared/corpora
[ -x "$bin" ] || { echo "seg_bench: no trove binary at $bin" >&2; exit 1; }
[ -f "$shared/ruanyf-weekly-zh.tar.gz" ] || { echo "seg_bench: ../shared missing" >&2; exit 1; }
command -v hyperfine >/dev/null || { echo "seg_bench: needs hyperfine" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-seg-bench.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ruanyf"
tar xzf "$shared/ruanyf-weekly-zh.tar.gz" -C "$work/ruanyf"
find "$work/ruanyf" -name '*.md' -print0 | sort -z | xargs -0 cat > "$work/all.txt"
bytes=$(stat -c %s "$work/all.txt")

cpu() {  # user+sys seconds of a command (stdin from $1)
    local in=$1; shift
    /usr/bin/python3 - "$in" "$@" <<'PY'
import os, resource, subprocess, sys
src, cmd = sys.argv[1], sys.argv[2:]
best = None
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(src, "rb") as f:
        subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = t if best is None else min(best, t)
print("%.3f" % best)
PY
}

echo "== 1. segmentation throughput, one core ($bytes bytes of Chinese markdown)"
for mode in --query ""; do
    echo "\$ taskset -c 0 $bin tokenize $mode - < all.txt > /dev/null"
    t=$(cpu "$work/all.txt" taskset -c 0 "$bin" tokenize $mode -)
    /usr/bin/python3 -c "print('   %.3f s CPU, %.1f MB/s' % ($t, $bytes / $t / 1e6))"
done

echo "== 2. dictionary load (hyperfine -N, warm cache)"
hyperfine -N -w 5 -r 60 --style basic "$bin tokenize 中" "$bin tokenize a" 2>&1 |
    grep -E "Time|±|Benchmark" || true

echo "== 3. cold search, Chinese index"
export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config
"$bin" collection add "$work/ruanyf" --name ruanyf >/dev/null
"$bin" collection add "$shared/cs-notes-zh" --name csnotes >/dev/null
/usr/bin/time -f "   update: %e s wall, %U s user" "$bin" update >/dev/null
hyperfine -N -w 3 -r 40 --style basic \
    "$bin search 如何提高数据库的查询性能" \
    "env TROVE_ZH_DICT=/nonexistent $bin search 如何提高数据库的查询性能" \
    "$bin search database performance" \
    "env TROVE_ZH_DICT=/nonexistent $bin search database performance" 2>&1 |
    grep -E "Time|Benchmark" || true

echo "== 4. index size"
md=$(find "$work/ruanyf" "$shared/cs-notes-zh" -name '*.md' -print0 | xargs -0 cat | wc -c)
idx=$(cat "$work"/index.db* | wc -c)
/usr/bin/python3 -c "print('   notes %.1f MB, index %.1f MB: %.2fx' % ($md/1e6, $idx/1e6, $idx/$md))"
