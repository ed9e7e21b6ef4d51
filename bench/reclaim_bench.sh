#!/usr/bin/env bash
# Cost of reclaiming free pages: an old (auto_vacuum NONE) index converted by
# one VACUUM, and a new (incremental) index, after deleting half of tldr.
set -euo pipefail
# OLD: a trove from before auto-vacuum (main at 4ea1c7c); NEW: this one.
OLD=${OLD:?set OLD to a trove binary from before incremental auto-vacuum}
NEW=${NEW:-build/trove}
SHARED=${TROVE_SHARED_DIR:-../shared}
W=${W:-/tmp/trove-reclaim}
rm -rf $W; mkdir -p $W/cfg
tar -xzf $SHARED/corpora/tldr-pages.tar.gz -C $W
ROOT=$(find $W -maxdepth 2 -type d -name pages | head -1); ROOT=${ROOT%/pages}
export TROVE_CONFIG_DIR=$W/cfg TROVE_NO_DAEMON=1 XDG_RUNTIME_DIR=$W
pragmas() { /usr/bin/python3 -c "
import sqlite3,sys,os; c=sqlite3.connect(sys.argv[1]); p=lambda k:c.execute('PRAGMA '+k).fetchone()[0]
print('auto_vacuum=%d pages=%d free=%d size=%.1fMB' % (p('auto_vacuum'),p('page_count'),p('freelist_count'),os.path.getsize(sys.argv[1])/1e6))" "$1"; }
t() { /usr/bin/time -f "  %e s wall, %U s user, %S s sys" "$@" > /dev/null; }
$OLD collection add "$ROOT" --name tldr >/dev/null
# one snapshot kept: the undo rows of the deletions are pruned by the next
# update, which is when their pages become free
printf 'snapshots: 1\n' >> $W/cfg/config.yaml
echo "old binary, full index:"; TROVE_INDEX=$W/a.db t $OLD update; pragmas $W/a.db
echo "new binary, full index:"; TROVE_INDEX=$W/c.db t $NEW update; pragmas $W/c.db
find "$ROOT" -name '*.md' | sort | awk 'NR%2==0' | xargs rm -f
echo "deleting half: old binary on a"; TROVE_INDEX=$W/a.db t $OLD update; pragmas $W/a.db
echo "deleting half: new binary on c"; TROVE_INDEX=$W/c.db t $NEW update; pragmas $W/c.db
cp $W/a.db $W/b.db
one=$(find "$ROOT" -name '*.md' | sort | sed -n 1p); echo "edit" >> "$one"
echo "next update, old binary on a (no reclaim):"; TROVE_INDEX=$W/a.db t $OLD update; pragmas $W/a.db
echo "next update, new binary on the old index b (one-time VACUUM conversion):"; TROVE_INDEX=$W/b.db t $NEW update; pragmas $W/b.db
echo "next update, new binary on the new index c (incremental vacuum):"; TROVE_INDEX=$W/c.db t $NEW update; pragmas $W/c.db
