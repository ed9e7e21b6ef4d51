#!/usr/bin/env bash
# How trove's costs grow with the vault: 10k, 100k (and 1M) notes.
#
#   bench/scale_bench.sh                    # N = 10000 100000
#   bench/scale_bench.sh 10000 100000 1000000
#   TROVE_BIN=build/trove RUNS=3 KEEP=1 bench/scale_bench.sh 10000
#
# For each N, builds a vault of N notes (bench/scale_bench.py gen: real
# notes of ../shared/corpora — tldr pages, the Obsidian help vault, the
# Chinese CS notes — recombined, seeded, 1,000 notes a folder), then:
#   1. `trove collection add` + `trove update` on a fresh index: wall, CPU
#      (user + sys) and peak RSS (/usr/bin/time), notes/s, index size
#   2. no-op `trove update` (nothing changed), median of 3
#   3. `trove embed --model GLOVE` (scripts/glove-model.sh): wall, CPU, RSS,
#      index size after
#   4. cold searches: one process per query, TROVE_NO_DAEMON=1, 20 fixed
#      queries (scale_bench.py queries) x RUNS after a warm-up pass: keyword
#      (`search --no-vector`), hybrid (`search`, the GloVe model) and
#      `vsearch`: wall p50/p95, CPU p50, peak RSS of one search process
#   5. the same through `trove daemon --detach --no-watch` (warm: index,
#      model and vector segments held): the client process's CPU p50 plus
#      the daemon's mean CPU per request, and the daemon's peak RSS (VmHWM,
#      which counts the index pages it has mapped)
# "Cold" is a fresh process; the page cache is warm (the vault and the index
# were just written), so this measures trove, not the disk. The machine may
# be shared: wall times move with the load, CPU times much less; the load
# average is printed with each N. Prints a table and one `SCALE {json}` line
# per N. Environment: TROVE_BIN, RUNS (default 3), MODEL (default GloVe),
# SEED (default 1), KEEP=1 keeps the work folders, TMPDIR, PARTS (default 2:
# the vault is written by that many generator processes side by side),
# VAULT (a vault that `scale_bench.py gen` already wrote for this N and SEED:
# used as it is, and left in place).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
corpora=${CORPORA:-$here/../shared/corpora}
runs=${RUNS:-3}
seed=${SEED:-1}
py=/usr/bin/python3
helper=$here/bench/scale_bench.py
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
[ -x "$bin" ] || { echo "scale_bench: no trove binary at $bin (build it or set TROVE_BIN)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "scale_bench: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
model=${MODEL:-$(bash "$here/scripts/glove-model.sh")}

work=
cleanup() {
  [ -n "$work" ] || return 0
  TROVE_INDEX=$work/index.db "$work/trove" daemon stop >/dev/null 2>&1 || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
  work=
}
trap cleanup EXIT

size_of() { local b=0; for f in "$1" "$1-wal" "$1-shm"; do [ -f "$f" ] && b=$((b + $(stat -c %s "$f"))); done; echo "$b"; }
timed() {   # timed CMD... -> sets T_WALL T_CPU T_RSS_MB (peak RSS of CMD)
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$@" >"$work/out.txt" 2>&1 \
    || { cat "$work/out.txt" >&2; return 1; }
  read -r T_WALL u s rss < <(tail -n 1 "$work/time.txt")
  T_CPU=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')
  T_RSS_MB=$(awk -v k="$rss" 'BEGIN {printf "%.0f", k / 1024}')
}
mb() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1e6}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
field() { $py -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# scale_bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, trove $bin (commit $commit), model $model"
echo "# RUNS=$runs SEED=$seed; load average at start $(load)"
rows=()
for n in "${sizes[@]}"; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/trove-scale.XXXXXX")
  # A private copy, so that a rebuild during the run is harmless, with the
  # data files trove reads beside its binary (the Chinese dictionary, the
  # translation dictionary): without them Chinese is indexed as bigrams.
  cp "$bin" "$work/trove"
  for f in "$(dirname "$bin")"/*.dict "$(dirname "$bin")"/zh-chars*.txt; do
    [ -f "$f" ] && cp "$f" "$work/"
  done
  trove=$work/trove
  export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config
  export XDG_CACHE_HOME=$work/xdg-cache XDG_CONFIG_HOME=$work/xdg-config XDG_RUNTIME_DIR=$work/run
  export NO_COLOR=1
  unset TROVE_NO_DAEMON TROVE_EMBED_MODEL
  mkdir -p "$work/run"
  chmod 700 "$work/run"
  $py "$helper" queries >"$work/queries.txt"

  vault=${VAULT:-$work/vault}
  if [ -z "${VAULT:-}" ]; then
    parts=${PARTS:-2} gen= pids=()
    for ((k = 0; k < parts; k++)); do
      $py "$helper" gen "$corpora" "$vault" "$n" "$seed" "$k/$parts" >"$work/gen$k.txt" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    for ((k = 0; k < parts; k++)); do gen+="${gen:+; }$(cat "$work/gen$k.txt")"; done
  else
    gen="vault $VAULT as given"
  fi
  echo "## N=$n: $gen"
  text_bytes=$(find "$vault" -name '*.md' -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
  echo "   disk before indexing: $(df -h --output=avail "$work" | tail -n 1) free"
  "$trove" collection add "$vault" --name scale >/dev/null

  l0=$(load)
  timed "$trove" update
  up_wall=$T_WALL up_cpu=$T_CPU up_rss=$T_RSS_MB
  up_line=$(tail -n 1 "$work/out.txt")
  if grep -q 'dictionary.*No such file' "$work/out.txt"; then
    echo "scale_bench: trove misses a dictionary beside $bin:" >&2; cat "$work/out.txt" >&2; exit 1
  fi
  idx_bytes=$(size_of "$TROVE_INDEX")
  noops=()
  for _ in 1 2 3; do timed "$trove" update; noops+=("$T_WALL/$T_CPU"); done
  noop=$(printf '%s\n' "${noops[@]}" | sort -t/ -k1,1n | sed -n 2p)
  noop_wall=${noop%/*} noop_cpu=${noop#*/}

  echo "   disk before embedding: $(df -h --output=avail "$work" | tail -n 1) free"
  timed "$trove" embed --model "$model"
  em_wall=$T_WALL em_cpu=$T_CPU em_rss=$T_RSS_MB
  em_line=$(tail -n 1 "$work/out.txt")
  idx2_bytes=$(size_of "$TROVE_INDEX")
  echo "   update ${up_wall}s wall ${up_cpu}s cpu ${up_rss}MB; no-op ${noops[*]}; embed ${em_wall}s wall ${em_cpu}s cpu ${em_rss}MB (load $(load))"

  ckw=$(TROVE_NO_DAEMON=1 $py "$helper" lat "$trove" "$runs" "$work/queries.txt" search --no-vector)
  chy=$(TROVE_NO_DAEMON=1 TROVE_EMBED_MODEL=$model $py "$helper" lat "$trove" "$runs" "$work/queries.txt" search)
  cvs=$(TROVE_NO_DAEMON=1 TROVE_EMBED_MODEL=$model $py "$helper" lat "$trove" "$runs" "$work/queries.txt" vsearch)
  echo "   cold: kw $ckw hybrid $chy vsearch $cvs (load $(load))"

  dout=$("$trove" daemon --detach --no-watch --idle 3600)
  dpid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' <<<"$dout" | head -n 1)
  wkw=$(SCALE_DAEMON_PID=$dpid $py "$helper" lat "$trove" "$runs" "$work/queries.txt" search --no-vector)
  why=$(SCALE_DAEMON_PID=$dpid TROVE_EMBED_MODEL=$model $py "$helper" lat "$trove" "$runs" "$work/queries.txt" search)
  wvs=$(SCALE_DAEMON_PID=$dpid TROVE_EMBED_MODEL=$model $py "$helper" lat "$trove" "$runs" "$work/queries.txt" vsearch)
  d_rss=$(awk '/^VmHWM/ {printf "%.0f", $2 / 1024}' "/proc/$dpid/status")
  l1=$(load)
  echo "   daemon: kw $wkw hybrid $why vsearch $wvs; daemon VmHWM ${d_rss}MB (load $l1)"
  "$trove" daemon stop >/dev/null

  chunks=$(sed -n 's/.*[^0-9]\([0-9][0-9]*\) chunks.*/\1/p' <<<"$em_line$up_line" | head -n 1)
  json=$($py - "$n" "$text_bytes" "$up_wall" "$up_cpu" "$up_rss" "$idx_bytes" "$noop_wall" "$noop_cpu" \
        "$em_wall" "$em_cpu" "$em_rss" "$idx2_bytes" "$d_rss" "$ckw" "$chy" "$cvs" "$wkw" "$why" "$wvs" \
        "$l0" "$l1" "$commit" <<'EOF'
import json, sys
a = sys.argv[1:]
k = ["notes", "text_bytes", "update_wall_s", "update_cpu_s", "update_rss_mb", "index_bytes",
     "noop_wall_s", "noop_cpu_s", "embed_wall_s", "embed_cpu_s", "embed_rss_mb",
     "index_bytes_embedded", "daemon_rss_mb"]
d = {x: float(v) if "." in v else int(v) for x, v in zip(k, a)}
for name, v in zip(["cold_keyword", "cold_hybrid", "cold_vsearch", "warm_keyword",
                    "warm_hybrid", "warm_vsearch"], a[13:19]):
    d[name] = json.loads(v)
d["load_before"], d["load_after"], d["commit"] = a[19], a[20], a[21]
print(json.dumps(d, separators=(",", ":")))
EOF
)
  echo "   update: $up_line"
  echo "   embed:  $em_line"
  echo "SCALE $json"
  rows+=("$json")
  cleanup
done

echo
$py - "${rows[@]}" <<'EOF'
import json, sys
rows = [json.loads(r) for r in sys.argv[1:]]
def lat(r, k):
    x = r[k]
    if "daemon_cpu" in x:          # client process + the daemon's share
        return "%.0f / %.0f (%.0f + %.1f)" % (x["p50"], x["p95"], x["cpu50"], x["daemon_cpu"])
    return "%.0f / %.0f (%.0f)" % (x["p50"], x["p95"], x["cpu50"])
print("| notes | text MB | update wall s (cpu s) | notes/s (per cpu s) | update RSS MB | index MB (x text) "
      "| no-op update s (cpu) | embed wall s (cpu s) | embed RSS MB | index+vectors MB "
      "| cold kw p50/p95 (cpu) ms | cold hybrid | cold vsearch | search RSS MB kw/hybrid/vs "
      "| daemon kw | daemon hybrid | daemon vsearch | daemon RSS MB | load |")
print("|" + "---|" * 19)
for r in rows:
    n = r["notes"]
    print("| %d | %.1f | %.1f (%.1f) | %.0f (%.0f) | %d | %.1f (%.2fx) | %.2f (%.2f) | %.1f (%.1f) | %d | %.1f "
          "| %s | %s | %s | %.0f/%.0f/%.0f | %s | %s | %s | %d | %s → %s |" % (
        n, r["text_bytes"] / 1e6, r["update_wall_s"], r["update_cpu_s"],
        n / r["update_wall_s"], n / max(r["update_cpu_s"], 1e-3), r["update_rss_mb"],
        r["index_bytes"] / 1e6, r["index_bytes"] / r["text_bytes"], r["noop_wall_s"], r["noop_cpu_s"],
        r["embed_wall_s"], r["embed_cpu_s"], r["embed_rss_mb"], r["index_bytes_embedded"] / 1e6,
        lat(r, "cold_keyword"), lat(r, "cold_hybrid"), lat(r, "cold_vsearch"),
        r["cold_keyword"]["rss_mb"], r["cold_hybrid"]["rss_mb"], r["cold_vsearch"]["rss_mb"],
        lat(r, "warm_keyword"), lat(r, "warm_hybrid"), lat(r, "warm_vsearch"), r["daemon_rss_mb"],
        r["load_before"].split()[0], r["load_after"].split()[0]))
EOF
