#!/usr/bin/env bash
# What --where and --since add to a cold `trove search` on the tldr pages
# (issue 18: at most 2 ms). The pages have no frontmatter, so this script
# gives every page some (status: done|draft, priority: 1..5, date:
# 2020-01-01 + n days) before indexing; the fields table then holds three
# rows per page. Measures the CPU time (user + sys, getrusage of the
# children) of cold search processes, RUNS rounds of QUERIES, for: no
# filter, --where status=done, --where priority>=3, --since 2023-01-01,
# --until 2022-06-30, and all of them together.
#
#   bench/meta_bench.sh                # $TROVE_BIN or build/trove
#   RUNS=20 bench/meta_bench.sh
#   META_DIR=/tmp/meta bench/meta_bench.sh   # keep the vault and index there,
#                                            # and reuse them when present
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TROVE_BIN:-$here/build/trove}
[[ $bin = /* ]] || bin=$here/$bin
tarball=${TLDR_TARBALL:-$here/../shared/corpora/tldr-pages.tar.gz}
[ -x "$bin" ] || { echo "meta_bench: no trove binary at $bin" >&2; exit 1; }
[ -f "$tarball" ] || { echo "meta_bench: $tarball not found" >&2; exit 1; }
if [ -n "${META_DIR:-}" ]; then
    work=$META_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/trove-meta.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi
cp "$bin" "$work/trove"
# the Chinese dictionary is looked for next to the binary
[ -f "$(dirname "$bin")/trove-zh.dict" ] && cp "$(dirname "$bin")/trove-zh.dict" "$work/"
export TROVE_INDEX=$work/index.db TROVE_CONFIG_DIR=$work/config TROVE_NO_DAEMON=1 NO_COLOR=1
echo "$(basename "$bin") at $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cpus, $(uptime | sed 's/.*load/load/')"
if [ ! -f "$work/index.db" ]; then
mkdir -p "$work/tldr"
tar -xzf "$tarball" -C "$work/tldr"
/usr/bin/python3 - "$work/tldr" <<'PY'
import os, sys
n = 0
for root, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for f in sorted(files):
        if not f.endswith(".md") or f.startswith("."):
            continue
        p = os.path.join(root, f)
        with open(p, "rb") as fh:
            body = fh.read()
        y, d = divmod(n % 1461, 365)
        fm = ("---\nstatus: %s\npriority: %d\ndate: %04d-%02d-%02d\n---\n"
              % ("done" if n % 3 else "draft", n % 5 + 1, 2020 + y, d % 12 + 1, d % 28 + 1))
        with open(p, "wb") as fh:
            fh.write(fm.encode() + body)
        n += 1
print("frontmatter added to %d pages" % n)
PY
"$work/trove" collection add "$work/tldr" --name tldr >/dev/null
"$work/trove" update | tail -1
fi
/usr/bin/python3 - "$work/trove" "${RUNS:-10}" <<'PY'
import resource, subprocess, sys
trove, runs = sys.argv[1], int(sys.argv[2])
queries = ["tar", "extract a tar archive", "git commit", "list files sorted by size",
           "docker run", "show disk usage", "kill a process by name", "compress a folder"]
cases = [("no filter", []), ("--where status=done", ["--where", "status=done"]),
         ("--where priority>=3", ["--where", "priority>=3"]),
         ("--since 2023-01-01", ["--since", "2023-01-01"]),
         ("--until 2022-06-30", ["--until", "2022-06-30"]),
         ("all four", ["--where", "status=done", "--where", "priority>=3",
                       "--since", "2021-01-01", "--until", "2023-12-31"])]
def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
def run(flags):
    for q in queries:      # warm-up round
        subprocess.run([trove, "search", q, "--files"] + flags, stdout=subprocess.DEVNULL, check=True)
    t = cpu()
    for _ in range(runs):
        for q in queries:
            subprocess.run([trove, "search", q, "--files"] + flags, stdout=subprocess.DEVNULL,
                           check=True)
    return (cpu() - t) / (runs * len(queries)) * 1000
base = None
print("%-24s %12s %10s" % ("case", "CPU ms/search", "added ms"))
for name, flags in cases:
    ms = run(flags)
    if base is None:
        base = ms
    print("%-24s %12.2f %+10.2f" % (name, ms, ms - base))
PY
