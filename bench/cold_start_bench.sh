#!/usr/bin/env bash
# Cold keyword search, whole process, against the round-1 binary (issue 20:
# "no slower than 951423a on the same machine"). Builds BASE (default
# 951423a) in a temporary git worktree (removed afterwards), indexes the
# Obsidian help vault once per binary (each its own index and config), then
# runs `trove search QUERY` of both with hyperfine -N, ROUNDS times, the two
# binaries alternating within each round so that both see the same load.
# Prints each round's mean/median wall and user+sys CPU, then the median of
# the rounds, with `uptime` before and after.
#
#   bench/cold_start_bench.sh                    # build/trove against 951423a
#   TROVE_BIN=build-x/trove BASE=abc1234 ROUNDS=5 RUNS=40 bench/cold_start_bench.sh
#   QUERY="embed files" VAULT=../shared/corpora/obsidian-help/en bench/cold_start_bench.sh
#   BASE_BIN=/tmp/base/build/trove bench/cold_start_bench.sh   # BASE built already
#
# Then one run of each under callgrind (instructions, the loader included:
# deterministic, so the box's load does not blur it) when valgrind is
# installed (CALLGRIND=0 skips it).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
base=${BASE:-951423a}
vault=${VAULT:-$here/../shared/corpora/obsidian-help}
query=${QUERY:-internal links}
rounds=${ROUNDS:-5}
runs=${RUNS:-30}
[ -x "$bin" ] || { echo "cold_start_bench: no trove binary at $bin" >&2; exit 1; }
[ -d "$vault" ] || { echo "cold_start_bench: vault $vault not found" >&2; exit 1; }
command -v hyperfine >/dev/null ||
    { echo "cold_start_bench: hyperfine missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-coldstart.XXXXXX")
tree=$work/base-tree
cleanup() {
    git -C "$here" worktree remove --force "$tree" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/new" "$work/base"
if [ -n "${BASE_BIN:-}" ]; then
    [ -x "$BASE_BIN" ] || { echo "cold_start_bench: no binary at BASE_BIN=$BASE_BIN" >&2; exit 1; }
    cp "$BASE_BIN" "$work/base/trove"
else
    git -C "$here" worktree add --detach "$tree" "$base" >/dev/null 2>&1
    (cd "$tree" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
         cmake --build build -j"$(nproc)" --target trove >/dev/null)
    cp "$tree/build/trove" "$work/base/trove"
fi
cp "$bin" "$work/new/trove"
# files trove looks for next to its binary (the Chinese and translation dictionaries)
for f in "$(dirname "$bin")"/trove-*.dict; do [ -f "$f" ] && cp "$f" "$work/new/"; done
new_rev=$(git -C "$here" rev-parse --short HEAD)$(git -C "$here" diff --quiet HEAD -- src || echo "+dirty")

# One environment per binary: its own index, config, runtime and cache
# folders (no daemon is running for either; nothing is shared).
envof() {
    local d=$work/$1
    echo "env -i PATH=/usr/bin:/bin HOME=$d TROVE_INDEX=$d/index.db TROVE_CONFIG_DIR=$d/cfg" \
         "XDG_RUNTIME_DIR=$d/run XDG_CACHE_HOME=$d/cache $d/trove"
}
for b in base new; do
    mkdir -p "$work/$b/run"
    $(envof $b) collection add "$vault" --name help >/dev/null
    $(envof $b) update >/dev/null
done

echo "vault: $vault; query: \"$query\"; base: $base; new: $new_rev ($bin)"
echo "before: $(uptime)"
for r in $(seq "$rounds"); do
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/round$r.json" \
        -n "$base" "$(envof base) search '$query'" \
        -n "$new_rev" "$(envof new) search '$query'" >/dev/null 2>&1
done
echo "after:  $(uptime)"
/usr/bin/python3 "$here/bench/hyperfine_rounds.py" "$work" "$rounds"
if [ "${CALLGRIND:-1}" != 0 ] && command -v valgrind >/dev/null; then
    echo "instructions of one run (valgrind --tool=callgrind, loader included):"
    for b in base new; do
        $(envof $b | sed "s#$work/$b/trove\$##") valgrind --tool=callgrind --dump-instr=no \
            --callgrind-out-file="$work/cg.$b" "$work/$b/trove" search "$query" \
            >/dev/null 2>"$work/cg.$b.err"
        printf "  %-12s %s\n" "$([ $b = base ] && echo "$base" || echo "$new_rev")" \
            "$(sed -n 's/.*Collected : //p' "$work/cg.$b.err")"
    done
fi
