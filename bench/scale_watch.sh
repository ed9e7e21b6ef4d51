#!/usr/bin/env bash
# scale_watch.sh PID OUTDIR [PERF_EVERY_S [PERF_FOR_S]]
# Follows a long `trove update` (or `embed`): every TICK (20) s one line with the
# time, the process's CPU (user + sys, s), its I/O (/proc/PID/io read and
# written bytes), RSS, the vault folder it has open (the walk's progress;
# "-" once the walk is over) and the load; every PERF_EVERY_S seconds a
# `perf record` of PERF_FOR_S seconds whose top symbols go to
# OUTDIR/perf-HHMMSS.txt. Ends when PID does.
set -u
pid=$1 out=$2 every=${3:-240} span=${4:-20} tick=${TICK:-20}
mkdir -p "$out"
tck=$(getconf CLK_TCK)
last_perf=0
while kill -0 "$pid" 2>/dev/null; do
  now=$(date -u +%H:%M:%S)
  read -r ut st < <(awk '{print $14, $15}' "/proc/$pid/stat" 2>/dev/null)
  cpu=$(awk -v u="${ut:-0}" -v s="${st:-0}" -v t="$tck" 'BEGIN {printf "%.1f", (u + s) / t}')
  rb=$(awk '/^read_bytes/ {print $2}' "/proc/$pid/io" 2>/dev/null)
  wb=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io" 2>/dev/null)
  rc=$(awk '/^rchar/ {print $2}' "/proc/$pid/io" 2>/dev/null)
  wc=$(awk '/^wchar/ {print $2}' "/proc/$pid/io" 2>/dev/null)
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  dir=$(ls -l "/proc/$pid/fd" 2>/dev/null | awk '/vault\// {print $NF}' | sed 's|.*/vault/||' | head -n 1)
  echo "$now cpu=${cpu}s rchar=${rc:-?} wchar=${wc:-?} read=${rb:-?} written=${wb:-?} rss_kb=${rss:-?} dir=${dir:--} load=$(cut -d' ' -f1 /proc/loadavg)" >>"$out/watch.log"
  t=$(date +%s)
  if [ $((t - last_perf)) -ge "$every" ]; then
    last_perf=$t
    f=$out/perf-$(date -u +%H%M%S)
    perf record -q -F 499 -g -p "$pid" -o "$f.data" -- sleep "$span" >/dev/null 2>&1
    perf report -q -i "$f.data" --no-children --percent-limit 1 --stdio -g none 2>/dev/null | head -40 >"$f.txt"
    rm -f "$f.data"
  else
    sleep "$tick"
  fi
done
echo "$(date -u +%H:%M:%S) process $pid ended" >>"$out/watch.log"
