/* store_vside — sidecar files of sealed vector segments, read in place.
 *
 * A vector segment (store_vec.h) is immutable once its transaction commits.
 * Reading it out of SQLite copies every byte through sqlite3_blob_read, which
 * was most of a cold vector search. So each committed segment also gets a
 * sidecar file, INDEX-vec/SEG.seg beside the index: a 128-byte header then
 * the segment's bytes exactly as its blob holds them, which a reader maps
 * and scans in place (zero copies; a resident process keeps the mapping).
 *
 * The blobs stay the truth. A sidecar is a cache that is checked before it
 * is used: its header (own checksum, segment id, the index's identity,
 * width, count, size) and the segment's 32-byte blob header (which carries a
 * hash of the segment's content) must match, and the file must be as long as
 * the header says. Anything else (missing, truncated, stale, another index's,
 * damaged header) and the reader takes the blob path: results never depend
 * on a sidecar. Payload damage behind a good header is what `trove check`
 * finds (it compares every sidecar with its blob, and removes one that
 * differs); SQLite does not checksum its pages either.
 *
 * A sidecar (version 2) also carries the segment's sketches (vec.h
 * vec_sketch_rows, for the two-stage scan) after the payload, made by the
 * writer from the blob when it writes the file: readers, the cold process
 * and the daemon alike, find them ready instead of making them per search
 * or per process. They are derived bytes like the rest of the file; `trove
 * check` makes them again from the blob and compares. A version 1 sidecar
 * (none) is still read, and the next commit rewrites it with them.
 *
 * Writers make sidecars after each commit (store_vside_sync: written to a
 * temporary file, fsync'd, renamed), and remove those of segments the index
 * no longer holds. A crash between the commit and the rename leaves a
 * missing sidecar, which the next commit writes. Read-only opens never
 * write. See docs/schema.md "Vector sidecars". */
#ifndef TROVE_STORE_VSIDE_H
#define TROVE_STORE_VSIDE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define VSIDE_HEADER 128
#define VSIDE_ELEM_INT8 1

/* What a sidecar's header says. */
typedef struct vside_header {
    int64_t seg_id;
    char index_id[33];        /* the index's identity (meta 'index_id'), NUL-terminated */
    uint32_t dim, n, elem;
    uint64_t payload_len;     /* bytes after the header: the segment's blob */
    uint64_t payload_hash;    /* str_hash of them */
    uint32_t version;         /* 1 or 2; 0 when building: the current one (2) */
    uint32_t sketch;          /* version 2: VEC_SKETCH_VERSION when the sketches
                                 follow the payload, 0 when they do not */
} vside_header;

/* Parse the header at p[0..len): 1 and *h when it is well formed (magic,
 * version 1 or 2, its own checksum, element type, dim and n in range,
 * payload_len the size a segment of n x dim takes, sketch 0 or this
 * build's VEC_SKETCH_VERSION), else 0. Reads no byte past len. */
int vside_header_parse(const uint8_t *p, size_t len, vside_header *h);
/* Write h as VSIDE_HEADER bytes (with its checksum) into out. */
void vside_header_build(const vside_header *h, uint8_t out[VSIDE_HEADER]);

/* The bytes of sketches a sidecar with header h carries after its payload. */
size_t vside_sketch_len(const vside_header *h);

/* A mapped sidecar: base points at the segment's bytes (8-byte aligned),
 * sketch at its sketches (vec_sketch_rows of its rows; NULL: it has none). */
typedef struct vside_map {
    void *addr;
    size_t len;
    const uint8_t *base;
    const uint8_t *sketch;
    int fd;                   /* VSIDE_STREAM: the file, open; closed by store_vside_close */
    int has_fd;
} vside_map;

/* How a sidecar is mapped. VSIDE_WHOLE: every page faulted in at once (a
 * reader that keeps the mapping, or reads all of it more than once).
 * VSIDE_STREAM: pages faulted in as they are touched, and the file kept
 * open, for a one-shot scan that reads the vectors with pread (a cold
 * process: setting up the page table of 256 MB of vectors costs more than
 * copying them through a small buffer). */
enum { VSIDE_WHOLE = 0, VSIDE_STREAM = 1 };

/* Map segment seg_id's sidecar when it is valid for this index: its header
 * checks out against the blob's 32-byte header `blob_head` and the expected
 * size `payload_len` of the blob. 1 and *m when mapped, 0 (nothing to free)
 * when the caller must read the blob. */
int store_vside_open(store *st, int64_t seg_id, const uint8_t *blob_head, size_t payload_len,
                     int how, vside_map *m);
void store_vside_close(vside_map *m);

/* After a commit: write the sidecars the index's segments lack (or that
 * lack sketches), remove those of segments it no longer holds. Failures
 * cost only speed (readers fall back to the blobs), so nothing is
 * returned. */
void store_vside_sync(store *st);

/* For `trove check`: compare every sidecar with its blob, byte for byte,
 * and its sketches with those made from the blob; report(ctx, line) for
 * each that differs behind a valid header, and remove it (the next commit
 * writes it again). */
void store_vside_check(store *st, void (*report)(void *ctx, const char *line), void *ctx);

/* The folder of an index's sidecars (caller frees). */
char *store_vside_dir(const char *index_path);
/* Remove an index's sidecar folder (its files are trove's only). */
void store_vside_drop(const char *index_path);
/* After `from` was renamed to `to` (a rebuild): its sidecars follow it,
 * replacing those of the index it replaced. */
void store_vside_move(const char *from, const char *to);

#endif
