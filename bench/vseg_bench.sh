#!/usr/bin/env bash
# Vector segments read in place from their sidecar files (store/store_vside.h)
# against read out of SQLite, on the tldr pages (38k small notes).
#
#   bench/vseg_bench.sh [MODEL]        # default: the GloVe test model
#   TROVE_BIN=build/trove RUNS=3 bench/vseg_bench.sh "$(bash scripts/big-m2v-model.sh)"
#
# Indexes and embeds the tldr pages once, then runs cold `trove search`
# (hybrid) and `trove vsearch` processes over 20 queries x RUNS, twice on the
# same index: with the sidecars `update` wrote (INDEX-vec/), and with that
# folder moved away (every segment read with sqlite3_blob_read, as before
# sidecars). Reports the CPU time of each process (user + sys, getrusage:
# the box is shared, wall times are noise) as p50, and wall p50. Then one
# hybrid search of each kind under callgrind: instructions in all, and the
# share inside sqlite3_blob_read (inclusive; callgrind counts no kernel
# work, so the page faults are reported beside the CPU times). Prints the
# load average.
# Environment: TROVE_BIN, RUNS (default 3), KEEP=1 keeps the work folder,
# CALLGRIND=0 skips the callgrind part.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
runs=${RUNS:-3}
model=${1:-$(bash "$here/scripts/glove-model.sh")}
py=/usr/bin/python3
[ -x "$bin" ] || { echo "no trove binary at $bin" >&2; exit 1; }
[ -f "$tarball" ] || { echo "$tarball not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-vseg.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
cp "$bin" "$work/trove"
cp "$(dirname "$bin")"/trove-*.dict "$work/" 2>/dev/null || true   # the dictionaries beside it
trove=$work/trove
index=$work/index.db
export TROVE_CONFIG_DIR=$work/config XDG_CACHE_HOME=$work/xdg-cache NO_COLOR=1
export TROVE_EMBED_MODEL=$model TROVE_INDEX=$index TROVE_NO_DAEMON=1
mkdir -p "$work/tldr"
tar -xzf "$tarball" -C "$work/tldr"

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs; model $(basename "$model")"
"$trove" collection add "$work/tldr" --name tldr >/dev/null
"$trove" update >/dev/null
chunks=$("$trove" status | sed -n 's/.*chunks: \([0-9]*\).*/\1/p' | head -1)
echo "tldr: $chunks chunks; sidecars: $(find "$index-vec" -name '*.seg' | wc -l) files," \
     "$(du -sk "$index-vec" | cut -f1) KiB"

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

latency() {   # latency ARGS... -> "cpu p50 X ms, wall p50 Y ms"
  "$py" - "$trove" "$qfile" "$runs" "$@" <<'EOF'
import resource, subprocess, sys, time
trove, qfile, runs, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
qs = [l.rstrip("\n") for l in open(qfile) if l.strip()]
t, cpu, flt = [], [], []
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
        flt.append(r1.ru_minflt - r0.ru_minflt)
def pct(t, p):
    t = sorted(t); x = (len(t) - 1) * p / 100; lo = int(x); hi = min(lo + 1, len(t) - 1)
    return t[lo] + (t[hi] - t[lo]) * (x - lo)
print("cpu (user+sys) p50 %.1f ms, wall p50 %.1f ms, page faults p50 %d"
      % (pct(cpu, 50), pct(t, 50), pct(flt, 50)))
EOF
}

# Instructions of one hybrid search, and sqlite3_blob_read's inclusive share.
profile() {
  command -v valgrind >/dev/null || { echo "(no valgrind)"; return; }
  local out=$work/cg.$1
  valgrind --tool=callgrind --callgrind-out-file="$out" "$trove" search --json -n 10 \
    -- "extract a tar archive" >/dev/null 2>"$work/cg.err" || { echo "(callgrind failed)"; return; }
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null | awk '
    /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1 }
    /sqlite3_blob_read/ && !seen { gsub(",", "", $1); blob = $1; seen = 1 }
    END { printf "%.1f M instructions, %.1f%% in sqlite3_blob_read\n", total / 1e6,
          total ? 100 * blob / total : 0 }'
}

with_side() {   # with_side TAG TITLE
  echo "-- $2"
  echo "cold search (hybrid): $(latency search)"
  echo "cold vsearch:         $(latency vsearch)"
  [ "${CALLGRIND:-1}" = 0 ] || echo "callgrind, one hybrid search: $(profile "$1")"
}

with_side side "sidecars (mapped in place)"
mv "$index-vec" "$work/away"
with_side blob "no sidecars (blob reads)"
mv "$work/away" "$index-vec"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
