#!/bin/bash
# A cold no-op `trove update` (no daemon, nothing changed) of two binaries,
# alternated run by run, with and without `--no-embed` (issue 20: <= 0.1 s
# on the tldr pages): each whole process's wall, user and sys (wait4's
# rusage), medians over ROUNDS, and the load before and after.
#
#   TROVE_EMBED_MODEL=MODEL bench/noop_bench.sh DIR OLD_BIN NEW_BIN [ROUNDS]
#
# DIR holds an index (DIR/index.db), its config (DIR/config/config.yaml)
# whose collections are indexed and embedded with MODEL, and a tokenizer
# cache (DIR/cache-new, as bench/default_model_bench.py leaves it); copy
# /work/dm10 and point its config at the copy's tldr folder first (the
# script never writes into DIR beyond what a no-op update writes).
# Both binaries are copied into one folder beside one set of dictionaries
# (NEW_BIN's, which must equal OLD_BIN's): the index records a stamp of the
# dictionaries' paths, and two folders would have every run of the other
# binary re-check the tokenizer and rewrite the stamp. Default ROUNDS 20.
set -euo pipefail
DIR=$(cd "$1" && pwd)
OLD=$2
NEW=$3
ROUNDS=${4:-20}
: "${TROVE_EMBED_MODEL:?set TROVE_EMBED_MODEL to the model DIR was embedded with}"
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
for d in "$(dirname "$NEW")"/trove-*.dict; do
    cmp -s "$d" "$(dirname "$OLD")/$(basename "$d")" ||
        { echo "noop_bench: $(basename "$d") differs between the two binaries" >&2; exit 1; }
    cp "$d" "$BIN/"
done
cp "$OLD" "$BIN/trove-old"
cp "$NEW" "$BIN/trove-new"
export TROVE_INDEX=$DIR/index.db TROVE_CONFIG_DIR=$DIR/config NO_COLOR=1 TROVE_NO_DAEMON=1
export XDG_CACHE_HOME=$DIR/cache-new XDG_CONFIG_HOME=$DIR/xdg-config XDG_RUNTIME_DIR=$DIR/run
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in old new; do   # warm-up: page cache, the stamp, the tokenizer cache
    "$BIN/trove-$b" update >/dev/null
    "$BIN/trove-$b" update --no-embed >/dev/null
done
BIN="$BIN" ROUNDS="$ROUNDS" python3 - <<'PY'
import os, statistics, subprocess, time
b, rounds = os.environ["BIN"], int(os.environ["ROUNDS"])
def one(argv):
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    assert status == 0, argv
    return wall, ru.ru_utime, ru.ru_stime
rows = [(tag, flag) for flag in ("--no-embed", "") for tag in ("old", "new")]
res = {r: [] for r in rows}
for i in range(rounds):
    for tag, flag in (rows if i % 2 == 0 else rows[::-1]):
        res[(tag, flag)].append(one([f"{b}/trove-{tag}", "update"] + ([flag] if flag else [])))
print("| binary | update | wall median (min) | user median | sys median | CPU median |")
print("|---|---|---|---|---|---|")
for (tag, flag), v in res.items():
    med = lambda k: statistics.median(x[k] for x in v) * 1e3
    cpu = statistics.median((x[1] + x[2]) for x in v) * 1e3
    print(f"| {tag} | {flag or '(model)'} | {med(0):.1f} ms ({min(x[0] for x in v) * 1e3:.1f}) "
          f"| {med(1):.1f} ms | {med(2):.1f} ms | {cpu:.1f} ms |")
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
