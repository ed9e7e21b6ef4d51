#!/usr/bin/env bash
# Vectors on the tldr-pages corpus (38k small notes) with a static model.
#
#   bench/vec_tldr_bench.sh [MODEL]      # default: the GloVe test model
#   TROVE_BIN=build/trove RUNS=5 bench/vec_tldr_bench.sh
#
# Measures, against issue 7's targets:
#   1. `trove embed` of every chunk with a static model (<= 10 s)
#   2. index size / markdown size, before and after embedding, and the bytes
#      the vectors add per chunk
#   3. cold `trove vsearch`, `trove search` (hybrid) and `trove search
#      --no-vector` processes, start to exit, model load included: p50 / p95
#      over 20 queries x RUNS runs after a warm-up
#   4. the same on a 10k-note subset (the issue's "10k-note vault",
#      <= 30 ms for a cold hybrid search)
# Wall times depend on what else runs on the machine; the CPU time (user +
# sys of the process) is what one search costs. Prints the load average.
# Environment: TROVE_BIN, RUNS (default 5), KEEP=1 keeps the work folder.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
runs=${RUNS:-5}
model=${1:-$(bash "$here/scripts/glove-model.sh")}
py=/usr/bin/python3
[ -x "$bin" ] || { echo "no trove binary at $bin" >&2; exit 1; }
[ -f "$tarball" ] || { echo "$tarball not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-vtldr.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
cp "$bin" "$work/trove"
# the dictionaries are looked for beside the binary (without them Chinese is indexed as bigrams)
for d in "$(dirname "$bin")"/trove-*.dict; do [ -f "$d" ] && cp "$d" "$work/"; done
trove=$work/trove
export TROVE_CONFIG_DIR=$work/config XDG_CACHE_HOME=$work/xdg-cache NO_COLOR=1
export TROVE_EMBED_MODEL=$model
mkdir -p "$work/tldr"
tar -xzf "$tarball" -C "$work/tldr"

size_of() { local b=0; for f in "$1" "$1-wal" "$1-shm"; do [ -f "$f" ] && b=$((b + $(stat -c %s "$f"))); done; echo $b; }
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b - a) / 1e9}'; }

queries=(
  "extract a tar archive" "list files sorted by size" "kill a process by name"
  "convert video to gif" "show disk usage" "find files modified today"
  "change file permissions" "download a file with curl" "compress a folder"
  "resize an image" "create a python virtual environment" "mount a usb drive"
  "rename multiple files" "count lines in a file" "show network interfaces"
  "git commit" "docker run" "automobile" "record the screen" "play music"
)
qfile=$work/queries.txt
printf '%s\n' "${queries[@]}" > "$qfile"

latency() {   # latency INDEX ARGS... -> "p50 p95"
  local index=$1; shift
  TROVE_INDEX=$index "$py" - "$trove" "$qfile" "$runs" "$@" <<'EOF'
import resource, subprocess, sys, time
trove, qfile, runs, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
qs = [l.rstrip("\n") for l in open(qfile) if l.strip()]
t, cpu = [], []
for q in qs:
    cmd = [trove] + args + ["--json", "-n", "10", "--", q]
    subprocess.run(cmd, capture_output=True, check=True)
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        a = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        t.append((time.perf_counter() - a) * 1000)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
def pct(t, p):
    t = sorted(t); x = (len(t) - 1) * p / 100; lo = int(x); hi = min(lo + 1, len(t) - 1)
    return t[lo] + (t[hi] - t[lo]) * (x - lo)
print("wall %.1f / %.1f, cpu (user+sys) p50 %.1f" % (pct(t, 50), pct(t, 95), pct(cpu, 50)))
EOF
}

run_corpus() {   # run_corpus NAME FOLDER
  local name=$1 vault=$2 index=$work/$1.db
  local files text_bytes
  files=$(find "$vault" -mindepth 1 -name '.*' -prune -o -name '*.md' -type f -print | wc -l)
  text_bytes=$(find "$vault" -mindepth 1 -name '.*' -prune -o -name '*.md' -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
  rm -f "$TROVE_CONFIG_DIR/config.yaml"
  TROVE_INDEX=$index "$trove" collection add "$vault" --name "$name" >/dev/null
  TROVE_INDEX=$index "$trove" update --no-embed >/dev/null
  local before chunks after t0 t1
  before=$(size_of "$index")
  chunks=$(TROVE_INDEX=$index "$trove" status | sed -n 's/.*chunks: \([0-9]*\).*/\1/p')
  t0=$(now)
  TROVE_INDEX=$index /usr/bin/time -f "cpu %U %S" -o "$work/embed.time.raw" "$trove" embed >"$work/embed.out" 2>/dev/null
  awk '{printf "cpu %.2f\n", $2 + $3}' "$work/embed.time.raw" > "$work/embed.time"
  t1=$(now)
  after=$(size_of "$index")
  echo "== $name: $files notes, $chunks chunks, $text_bytes bytes of markdown"
  echo "trove embed (model: $(basename "$model")): $(secs "$t0" "$t1") s wall, $(awk '/cpu/ {print $2}' "$work/embed.time") s cpu; $(cat "$work/embed.out")"
  awk -v b="$before" -v a="$after" -v t="$text_bytes" -v c="$chunks" 'BEGIN {
    printf "index size: %.2fx text before embedding, %.2fx after (%.0f bytes per chunk for vectors)\n",
      b / t, a / t, (a - b) / c }'
  echo "cold vsearch ms, p50 / p95:            $(latency "$index" vsearch)"
  echo "cold search (hybrid) ms, p50 / p95:    $(latency "$index" search)"
  echo "cold search --no-vector ms, p50 / p95: $(latency "$index" search --no-vector)"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
run_corpus tldr "$work/tldr"
# a 10k-note subset: the first 10,000 pages in path order
mkdir -p "$work/tldr10k"
find "$work/tldr" -mindepth 1 -name '.*' -prune -o -name '*.md' -type f -print | sort | head -10000 |
  while read -r f; do
    rel=${f#"$work/tldr/"}
    mkdir -p "$work/tldr10k/$(dirname "$rel")"
    cp "$f" "$work/tldr10k/$rel"
  done
run_corpus tldr10k "$work/tldr10k"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
