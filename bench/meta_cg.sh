#!/usr/bin/env bash
# Instructions (callgrind) of one cold `trove search Q --files [FILTER]` for
# each query and filter case of bench/meta_bench.sh, on an index that script
# kept (META_DIR): the measure behind docs/performance.md's --where/--since
# tables (counts do not move with the machine's load). One line per run:
#   LABEL CASE "QUERY" INSTRUCTIONS
#
#   bench/meta_cg.sh BIN META_DIR LABEL [OUT_DIR]   # callgrind files in OUT_DIR (/tmp)
set -euo pipefail
bin=$1; dir=$2; label=$3; out=${4:-/tmp}
export TROVE_INDEX=$dir/index.db TROVE_CONFIG_DIR=$dir/config TROVE_NO_DAEMON=1 NO_COLOR=1
queries=("tar" "extract a tar archive" "git commit" "list files sorted by size" "docker run"
         "show disk usage" "kill a process by name" "compress a folder")
flags() {
    case $1 in
    none) ;;
    w1) echo "--where status=done" ;;
    w2) echo "--where priority>=3" ;;
    since) echo "--since 2023-01-01" ;;
    until) echo "--until 2022-06-30" ;;
    all) echo "--where status=done --where priority>=3 --since 2021-01-01 --until 2023-12-31" ;;
    esac
}
for c in none w1 w2 since until all; do
    for q in "${queries[@]}"; do
        f=$out/$label.$c.${q// /_}.cg
        # shellcheck disable=SC2046
        valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$f" "$bin" search "$q" \
            --files $(flags $c) > /dev/null 2>&1
        echo "$label $c \"$q\" $(grep -m1 '^summary:' "$f" | awk '{print $2}')"
    done
done
