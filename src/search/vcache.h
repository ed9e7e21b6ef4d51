/* vcache — vector segments kept in memory across searches, for a resident
 * process (the daemon, through api_models) that runs many searches on one
 * index.
 *
 * A segment's vectors never change once written, and segment ids are never
 * reused (store_vec.h, docs/schema.md), so a segment's loaded block can be
 * kept by (index identity, segment id) for as long as the process lives.
 * What does change is read from the index by every scan, in the search's
 * own read transaction: the list of the model's segments and their dead
 * bitmaps (small). Vectors of listed segments already held are used as they
 * are, new ones are loaded (and kept), and held segments of the model that
 * are no longer listed (merged, rewritten, dropped) are let go. Correctness
 * therefore never depends on when the cache was filled.
 *
 * Two-stage scans (vec_topk_two_stage, search.h vector_scan): a scan that
 * asks for them and is large enough gets each held segment's sketches
 * (vec.h), taken up on the segment's first such scan and kept with it
 * (counted in its bytes; 68 bytes a vector at 256-d): its sidecar's
 * (store_vside.h, made by the writer), else, where the scan allows it,
 * made then (an index whose sidecars predate them); exact scans never
 * hold them.
 *
 * Sharing: one vcache serves every thread. Entries are immutable (but for
 * the sketches, set once under the lock) and reference counted; the cache's lock is held only to look up, insert and
 * unlink entries, never while a segment is read from SQLite or scanned.
 *
 * Memory: at most max_bytes of segment data are kept (least recently used
 * unreferenced entries go first); a segment that does not fit is loaded for
 * the one scan and freed, as without a cache. An index with no identity yet
 * (store_index_id NULL) is scanned without caching.
 *
 * Ownership: the creator frees the cache after every scan using it ended. */
#ifndef TROVE_VCACHE_H
#define TROVE_VCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "vec/vec.h"

/* Default bound when the owner sets none: 1 GiB (about 2.7 M vectors of 384
 * dimensions). */
#define VCACHE_DEFAULT_BYTES ((size_t)1 << 30)

typedef struct vcache vcache;

vcache *vcache_new(size_t max_bytes);
void vcache_free(vcache *c);

/* Feed every segment of the model, as st's open read transaction sees it,
 * to t. dim is the model's width. A two-stage t gets every segment's
 * sketches (made where the sidecar has none). */
trove_err vcache_scan(vcache *c, store *st, int64_t model_id, int dim, vec_topk *t);

/* vcache_scan in halves, for a scan run on another thread while this one
 * reads the index on: vcache_take does every read of the index (in st's
 * read transaction) and holds the segments, scanning into t at once only
 * one that does not fit in the cache; the blocks it lists are what is left
 * to scan (vec_topk_scan_all), and stay valid until vcache_give, which
 * lets them go (always called, on failure too; h may then hold nothing).
 * A two-stage t gets the sketches stored with the segments, and with make
 * those made here for segments stored without (make 0: those are scanned
 * exactly, as a cold search scans them). */
typedef struct vcache_taken vcache_taken;
trove_err vcache_take(vcache *c, store *st, int64_t model_id, int dim, vec_topk *t, int make,
                      vcache_taken **h);
const vec_block *const *vcache_taken_blocks(const vcache_taken *h, size_t *n);
void vcache_give(vcache *c, vcache_taken *h);

typedef struct vcache_stats {
    long loaded;        /* segments read from the index */
    long served;        /* segments scanned from memory without reading them */
    long evicted;       /* let go for room */
    long dropped;       /* let go because the index no longer lists them */
    size_t segments;    /* held now */
    size_t bytes;       /* their size */
    size_t max_bytes;
} vcache_stats;
void vcache_stats_get(vcache *c, vcache_stats *out);

#endif
