#!/usr/bin/python3
"""vec_dump -- every live vector of an index as one line "chunk_id scale
int8-hex", sorted by chunk id, whatever the segments' layout (which
depends on when `embed` committed): `md5sum` of two dumps says whether two
`embed` runs stored the same vectors (session 33, w-1m).

    /usr/bin/python3 bench/vec_dump.py INDEX.db"""
import sqlite3
import struct
import sys

db = sqlite3.connect(sys.argv[1])
out = []
for seg_id, blob, dead in db.execute("SELECT id, data, dead FROM vec_segs"):
    dim, n = struct.unpack_from("<II", blob, 8)
    align8 = lambda x: (x + 7) & ~7
    data = 32
    scale = align8(data + n * dim)
    chunk = align8(scale + n * 4)
    for i in range(n):
        if dead and dead[i >> 3] >> (i & 7) & 1:
            continue
        cid, = struct.unpack_from("<q", blob, chunk + 8 * i)
        sc, = struct.unpack_from("<f", blob, scale + 4 * i)
        out.append((cid, "%d %r %s" % (cid, sc, blob[data + i * dim:data + (i + 1) * dim].hex())))
for _, line in sorted(out):
    print(line)
