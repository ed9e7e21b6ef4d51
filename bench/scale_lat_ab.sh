#!/bin/bash
# scale_lat_ab.sh OLD NEW [ROUNDS]: searches at 1M, two binaries alternated
# round by round: cold keyword and hybrid, then through a read-only daemon
# of each (--no-watch, stopped after); scale_bench.py lat's p50/p95/CPU
# p50 (and the daemon's CPU per request) per line, the load before each
# (session 34, w-kw1m). The index: /work/scale1m/m1/main, read-only.
# UNSEEN=1 adds "daemon kw unseen" (see below).
# OLD_DIR / NEW_DIR: another environment for that binary (a copy of it,
# e.g. with its own config.yaml or sidecars written by the new binary);
# VSEARCH=1 adds vsearch lines (session 36, w-vec1m3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/scale_bench.py
Q=${QUERIES:-/work/scale1m/queries.txt}
cd /work/scale1m
for r in $(seq "${3:-3}"); do
    for T in "$1" "$2"; do
        if [ "$T" = "$1" ]; then w=${OLD_DIR:-/work/scale1m/m1/main}; else w=${NEW_DIR:-/work/scale1m/m1/main}; fi
        . ./env.sh "$w"
        export TROVE_EMBED_MODEL=$HOME/.cache/trove-dev/models/m2v-500k-shared-v2
        export TROVE_NO_DAEMON=1
        echo "round $r $T ($w) load $(cut -d' ' -f1 /proc/loadavg)"
        echo "  cold kw     $(nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search --no-vector)"
        echo "  cold hybrid $(nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search)"
        [ "${VSEARCH:-0}" = 1 ] && echo "  cold vsearch $(nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" vsearch)"
        unset TROVE_NO_DAEMON
        # our own daemon or none: `daemon stop` would stop whoever's
        # serves the index (another session's), so it is killed by pid
        out=$("$T" daemon --detach --no-watch --idle 600) || { echo "  no daemon: $out"; continue; }
        dpid=$(sed -n 's/.*pid \([0-9]*\).*/\1/p' <<<"$out" | head -n 1)
        # UNSEEN=1: first the keyword queries warmed up with others
        # (scale_warm.txt), so that what the daemon keeps per phrase is
        # only what other queries left (session 36)
        [ -n "${UNSEEN:-}" ] &&
            echo "  daemon kw unseen $(SCALE_WARM=$here/scale_warm.txt SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search --no-vector)"
        # the daemon's first hybrid search: it loads the segments (and,
        # without stored sketches, a two-stage one made them there)
        t0=$(date +%s%N); "$T" search "extract a tar archive" >/dev/null; t1=$(date +%s%N)
        echo "  daemon first hybrid $(( (t1 - t0) / 1000000 )) ms"
        echo "  daemon kw     $(SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search --no-vector)"
        echo "  daemon hybrid $(SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search)"
        [ "${VSEARCH:-0}" = 1 ] && echo "  daemon vsearch $(SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" vsearch)"
        [ -n "$dpid" ] && kill "$dpid" && while kill -0 "$dpid" 2>/dev/null; do sleep 0.2; done
    done
done
