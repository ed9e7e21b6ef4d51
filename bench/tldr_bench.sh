#!/usr/bin/env bash
# Speed and size of trove on the tldr-pages corpus (38k small markdown files).
#
#   bench/tldr_bench.sh                 # uses $TROVE_BIN or build/trove
#   TROVE_BIN=build-rel/trove RUNS=10 KEEP=1 bench/tldr_bench.sh
#
# Extracts ../shared/corpora/tldr-pages.tar.gz into a temporary folder, builds
# a fresh index there (TROVE_INDEX / TROVE_CONFIG_DIR point into it) and
# measures, against the targets of the core issue:
#   1. `trove update` on the fresh index: wall time and files/s (>= 5000/s)
#   2. a second `trove update` with nothing changed (<= 0.5 s)
#   3. cold `trove search` processes (start to exit) over 50 varied queries,
#      RUNS runs each after one warm-up: p50 (<= 10 ms) and p95
#      (hyperfine -N when installed, else a Python timing loop)
#   4. index size (index.db plus -wal/-shm) / total size of the .md files
#      (<= 2.5x)
# The page cache is warm (the files were just extracted): this measures
# trove, not the disk. Prints the exact commands it timed. Environment:
# TROVE_BIN, RUNS (default 5), KEEP=1 keeps the temporary folder, TMPDIR.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
runs=${RUNS:-5}
py=/usr/bin/python3

[ -x "$bin" ] || { echo "tldr_bench: no trove binary at $bin (build it or set TROVE_BIN)" >&2; exit 1; }
[ -f "$tarball" ] || { echo "tldr_bench: $tarball not found" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/trove-tldr.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

# A private copy of the binary, so that a rebuild during the run is harmless.
cp "$bin" "$work/trove"
# the dictionaries are looked for beside the binary (without them Chinese is indexed as bigrams)
for d in "$(dirname "$bin")"/trove-*.dict; do [ -f "$d" ] && cp "$d" "$work/"; done
trove=$work/trove
export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config
export XDG_CACHE_HOME=$work/xdg-cache XDG_CONFIG_HOME=$work/xdg-config
export NO_COLOR=1

mkdir -p "$work/tldr"
tar -xzf "$tarball" -C "$work/tldr"
vault=$work/tldr
# The notes trove should index: *.md outside dot-folders (hidden files such
# as "..md" and the .github folder are skipped, as trove skips them).
mdfind() { find "$vault" -mindepth 1 -name '.*' -prune -o -name '*.md' -type f "$@"; }
files=$(mdfind -print | wc -l)
text_bytes=$(mdfind -printf '%s\n' | awk '{s+=$1} END {print s+0}')

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b - a) / 1e9}'; }

"$trove" collection add "$vault" --name tldr >/dev/null

t0=$(now)
update_out=$("$trove" update 2>&1)
t1=$(now)
update_s=$(secs "$t0" "$t1")

t0=$(now)
reupdate_out=$("$trove" update 2>&1)
t1=$(now)
reupdate_s=$(secs "$t0" "$t1")

index_bytes=0
for f in "$TROVE_INDEX" "$TROVE_INDEX-wal" "$TROVE_INDEX-shm"; do
  [ -f "$f" ] && index_bytes=$((index_bytes + $(stat -c %s "$f")))
done

# 50 queries: commands, tasks in plain words, options, other languages,
# phrases, prefixes, exclusions and awkward punctuation.
queries=(
  "tar" "git commit" "docker run" "ffmpeg" "ssh-keygen"
  "extract a tar archive" "list files sorted by size" "kill a process by name"
  "convert video to gif" "show disk usage" "find files modified today"
  "change file permissions" "download a file with curl" "compress a folder"
  "resize an image" "create a python virtual environment" "mount a usb drive"
  "rename multiple files" "count lines in a file" "show network interfaces"
  "--force" "-rf" "recursive" "verbose output" "dry run"
  "git rebase interactive" "kubectl get pods" "npm install" "pip"
  "systemctl restart" "crontab" "awk print column" "sed replace"
  "\"regular expression\"" "grep -v" "docker -compose" "compr*" "config*"
  "C++" "node.js" "[[git]]" "AND OR NOT" "*"
  "comprimir archivo" "Datei kopieren" "压缩文件" "列出目录" "ファイル"
  "répertoire" "xyzzyplughnothing"
)

qfile=$work/queries.txt
printf '%s\n' "${queries[@]}" > "$qfile"
nq=${#queries[@]}

if command -v hyperfine >/dev/null 2>&1; then
  method="hyperfine -N --warmup 1 --runs $runs (one command per query)"
  cmds=()
  for q in "${queries[@]}"; do
    qq=${q//\'/\'\\\'\'}
    cmds+=("$trove search --json -n 10 -- '$qq'")
  done
  hyperfine -N --warmup 1 --runs "$runs" --style none \
    --export-json "$work/hyperfine.json" "${cmds[@]}" >/dev/null 2>"$work/hyperfine.err" \
    || { cat "$work/hyperfine.err" >&2; exit 1; }
  lat=$("$py" - "$work/hyperfine.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = sorted(x * 1000 for r in d["results"] for x in r["times"])
# hyperfine gives user/system means per command, not per run
cpu = sum((r["user"] + r["system"]) * 1000 for r in d["results"]) / len(d["results"])
def pct(p):
    x = (len(t) - 1) * p / 100; lo = int(x); hi = min(lo + 1, len(t) - 1)
    return t[lo] + (t[hi] - t[lo]) * (x - lo)
print("%.2f %.2f %.2f %.2f %d %.2f" % (pct(50), pct(95), sum(t) / len(t), t[-1], len(t), cpu))
EOF
)
else
  method="python subprocess timing loop, 1 warm-up + $runs runs per query"
  lat=$("$py" - "$trove" "$qfile" "$runs" <<'EOF'
import resource, subprocess, sys, time
trove, qfile, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
qs = [l.rstrip("\n") for l in open(qfile, encoding="utf-8") if l.strip()]
t = []
cpu = 0.0
for q in qs:
    cmd = [trove, "search", "--json", "-n", "10", "--", q]
    subprocess.run(cmd, capture_output=True)
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        a = time.perf_counter()
        subprocess.run(cmd, capture_output=True)
        t.append((time.perf_counter() - a) * 1000)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000
t.sort()
def pct(p):
    x = (len(t) - 1) * p / 100; lo = int(x); hi = min(lo + 1, len(t) - 1)
    return t[lo] + (t[hi] - t[lo]) * (x - lo)
print("%.2f %.2f %.2f %.2f %d %.2f" % (pct(50), pct(95), sum(t) / len(t), t[-1], len(t), cpu / len(t)))
EOF
)
fi
read -r p50 p95 mean max samples cpu <<<"$lat"

# Queries that errored or found nothing (a quick sanity check of the index).
errors=0 empty=0
while IFS= read -r q; do
  if ! out=$("$trove" search --json -n 10 -- "$q" 2>/dev/null); then
    errors=$((errors + 1)); echo "  search failed: $q" >&2; continue
  fi
  n=$("$py" -c 'import json,sys; print(len(json.load(sys.stdin)["results"]))' <<<"$out")
  [ "$n" -eq 0 ] && empty=$((empty + 1))
done < "$qfile"

verdict() { awk -v v="$1" -v t="$2" -v op="$3" 'BEGIN {
  ok = (op == "ge") ? (v >= t) : (v <= t); print ok ? "PASS" : "FAIL" }'; }
fps=$(awk -v f="$files" -v s="$update_s" 'BEGIN {printf "%.0f", f / s}')
ratio=$(awk -v i="$index_bytes" -v t="$text_bytes" 'BEGIN {printf "%.2f", i / t}')

cat <<EOF
# tldr_bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, trove $bin
corpus      $files .md files, $(awk -v b="$text_bytes" 'BEGIN {printf "%.1f", b / 1e6}') MB of text ($tarball)
commands    export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config
            trove collection add $vault --name tldr
            time trove update        # fresh index
            time trove update        # nothing changed
            trove search --json -n 10 -- QUERY   # $nq queries, $method
update      ${update_s} s  -> $fps files/s          target >= 5000 files/s: $(verdict "$fps" 5000 ge)
            $(printf '%s' "$update_out" | tail -n 1)
re-update   ${reupdate_s} s (nothing changed)      target <= 0.5 s: $(verdict "$reupdate_s" 0.5 le)
            $(printf '%s' "$reupdate_out" | tail -n 1)
search      p50 ${p50} ms, p95 ${p95} ms, mean ${mean} ms, max ${max} ms over $samples runs
            mean CPU (user+system) per search ${cpu} ms; load average $(cut -d' ' -f1-3 /proc/loadavg)
                                                target p50 <= 10 ms: $(verdict "$p50" 10 le)
            $errors queries failed, $empty of $nq returned no results
index       $(awk -v b="$index_bytes" 'BEGIN {printf "%.1f", b / 1e6}') MB = ${ratio}x the text   target <= 2.5x: $(verdict "$ratio" 2.5 le)
EOF
