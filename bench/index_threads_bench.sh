#!/usr/bin/env bash
# Fresh `trove update` of the tldr pages by two (or more) binaries, alternated,
# each run a fresh index: wall, CPU (user + sys) and, with perf installed,
# how much of that CPU the writer (the main thread) took — the part no
# worker thread can take over, so the wall time the run would need on
# enough idle cores. Prints the load average beside each run.
#
#   bench/index_threads_bench.sh OLD_BIN NEW_BIN [ROUNDS]
#   TROVE_INDEX_WORKERS=0 bench/index_threads_bench.sh build/trove   # one thread
#
# Each binary's trove-*.dict files are copied beside its private copy (as
# tldr_bench.sh does). TLDR_TARBALL overrides ../shared/corpora/tldr-pages.tar.gz.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
rounds=3
bins=()
for a in "$@"; do
  if [[ $a =~ ^[0-9]+$ ]]; then rounds=$a; else bins+=("$a"); fi
done
[ ${#bins[@]} -gt 0 ] || { echo "usage: $0 BIN [BIN...] [ROUNDS]" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/trove-ithreads.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tldr"
tar -xzf "$tarball" -C "$work/tldr"
for k in "${!bins[@]}"; do
  b=${bins[$k]}; [[ $b = /* ]] || b=$PWD/$b
  mkdir -p "$work/bin$k"
  cp "$b" "$work/bin$k/trove"
  for d in "$(dirname "$b")"/trove-*.dict; do [ -f "$d" ] && cp "$d" "$work/bin$k/"; done
done
have_perf=0
perf record -q -o "$work/probe.data" true >/dev/null 2>&1 && have_perf=1
printf '%-5s %-40s %8s %8s %8s %8s  %s\n' round binary wall_s cpu_s writer% writer_s load
for r in $(seq 1 "$rounds"); do
  for k in "${!bins[@]}"; do
    d=$work/run; rm -rf "$d"; mkdir -p "$d"
    export TROVE_INDEX=$d/index.db TROVE_CONFIG_DIR=$d/config XDG_CACHE_HOME=$d/xc \
      XDG_CONFIG_HOME=$d/xcf TROVE_NO_DAEMON=1 NO_COLOR=1
    t=$work/bin$k/trove
    "$t" collection add "$work/tldr" --name tldr >/dev/null
    load=$(cut -d' ' -f1 /proc/loadavg)
    cmd=(/usr/bin/time -f "%e %U %S" -o "$d/time" "$t" update)
    if [ $have_perf = 1 ]; then
      perf record -q -F 999 -o "$d/perf.data" -- "${cmd[@]}" >/dev/null 2>&1
    else
      "${cmd[@]}" >/dev/null 2>&1
    fi
    read -r wall u s < "$d/time"
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')
    share=100
    if [ $have_perf = 1 ]; then
      # samples by thread (perf's "pid" is the thread id): the writer is the
      # first thread, the lowest id
      share=$(perf report -i "$d/perf.data" --sort pid --stdio 2>/dev/null | awk '
        /^ *[0-9.]+%/ { gsub("%", "", $1); split($2, a, ":"); if (a[2] != "time") { tot += $1;
          n++; tid[n] = a[1] + 0; pc[n] = $1 } }
        END { w = 0; m = -1; for (i = 1; i <= n; i++) if (m < 0 || tid[i] < m) { m = tid[i]; w = pc[i] }
          if (tot > 0) printf "%.0f", w / tot * 100; else print 100 }')
    fi
    ws=$(awk -v c="$cpu" -v p="$share" 'BEGIN {printf "%.2f", c * p / 100}')
    printf '%-5s %-40s %8s %8s %8s %8s  %s\n' "$r" "${bins[$k]}" "$wall" "$cpu" "$share" "$ws" "$load"
  done
done
