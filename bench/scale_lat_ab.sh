#!/bin/bash
# scale_lat_ab.sh OLD NEW [ROUNDS]: searches at 1M, two binaries alternated
# round by round: cold keyword and hybrid, then through a read-only daemon
# of each (--no-watch, stopped after); scale_bench.py lat's p50/p95/CPU
# p50 (and the daemon's CPU per request) per line, the load before each
# (session 34, w-kw1m). The index: /work/scale1m/m1/main, read-only.
# UNSEEN=1 adds "daemon kw unseen" (see below).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/scale_bench.py
Q=${QUERIES:-/work/scale1m/queries.txt}
cd /work/scale1m && . ./env.sh /work/scale1m/m1/main
export TROVE_EMBED_MODEL=$HOME/.cache/trove-dev/models/m2v-500k-shared-v2
for r in $(seq "${3:-3}"); do
    for T in "$1" "$2"; do
        export TROVE_NO_DAEMON=1
        echo "round $r $T load $(cut -d' ' -f1 /proc/loadavg)"
        echo "  cold kw     $(nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search --no-vector)"
        echo "  cold hybrid $(nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search)"
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
        echo "  daemon kw     $(SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search --no-vector)"
        echo "  daemon hybrid $(SCALE_DAEMON_PID=$dpid nice -n 10 /usr/bin/python3 "$H" lat "$T" 1 "$Q" search)"
        [ -n "$dpid" ] && kill "$dpid" && while kill -0 "$dpid" 2>/dev/null; do sleep 0.2; done
    done
done
