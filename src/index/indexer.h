/* indexer — bring the index in line with the files of a collection.
 *
 * index_collection() walks one collection, skips files whose (size, mtime)
 * are unchanged, confirms changed ones by content hash, and re-indexes new
 * and changed notes; notes whose files are gone are removed, and a removed
 * note whose content reappears under a new path is counted as a rename. It
 * must run inside a store transaction opened by the caller (one `trove
 * update` is one transaction), and the caller calls store_links_resolve()
 * once after all collections when anything changed. Problems with single
 * files are reported through opts->warn and never stop the run. */
#ifndef TROVE_INDEXER_H
#define TROVE_INDEXER_H

#include <signal.h>
#include <stddef.h>

#include "chunk/chunk.h"
#include "config/config.h"
#include "store/store.h"

typedef struct index_opts {
    size_t max_file_bytes;       /* larger files are skipped with a warning */
    chunk_opts chunk;
    /* Called after each file (done of total) of a collection; NULL: none.
     * The indexer prints nothing itself: front ends draw what they like. */
    void (*progress)(void *ctx, const char *collection, size_t done, size_t total);
    void *progress_ctx;
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    volatile sig_atomic_t *interrupted;  /* checked between files */
    /* Threads that read, hash, parse, chunk, detect the language of and
     * tokenize the files ahead of the one thread that writes (the caller's):
     * -1 one per CPU beyond the first (at most 3); 0 none, the caller's
     * thread does everything. The index is the same either way: the writer
     * takes the files in walk order, warnings and progress come from it. */
    int workers;
    size_t queue;        /* files prepared ahead of the writer (at least 1) */
} index_opts;

/* Defaults: 16 MiB file cap, default chunking, no callbacks, workers -1,
 * a queue of INDEX_DEFAULT_QUEUE files; the environment's TROVE_INDEX_WORKERS
 * and TROVE_INDEX_QUEUE (numbers, at most 1024) override the last two
 * (tests, benchmarks). */
void index_opts_init(index_opts *o);

/* Files a worker may prepare ahead of the writer. The writer stops for
 * whole milliseconds now and then (FTS5 writing out its hash of new terms:
 * ~25 ms each time on the tldr pages); a ring of 64 files (~3 ms of a
 * worker's work) filled up at each and left the worker asleep. 1,024 files
 * hold ~40 ms of it; the claimed files' bytes stay capped (indexer.c,
 * PIPE_BYTES). */
#define INDEX_DEFAULT_QUEUE 1024

#define INDEX_DEFAULT_MAX_FILE_BYTES (16u << 20)

typedef struct index_stats {
    size_t files;        /* files matched by the walk */
    size_t added, updated, renamed, removed, unchanged, skipped;
} index_stats;

/* `cfg` (may be NULL) names the other collections: a folder of this one
 * that is another collection's root is skipped (with a warning), so no note
 * is indexed twice. Files are read with fs_read_inside(): a symlink leading
 * outside the collection folder is skipped with a warning. */
trove_err index_collection(store *st, const config *cfg, const config_collection *coll,
                           const index_opts *opts, index_stats *stats);

/* What `update` would do, judged by (size, mtime) alone: counts of new,
 * changed and deleted files. Read-only. A file not in the index of a
 * collection that was indexed before is one `update` skipped, or a new
 * one: its size and first 8 KiB tell (over the size limit, binary,
 * unreadable: the skipped_* counts, not `added`). (Symlinks leading out of
 * the collection are left out by the walk, as `update` leaves them out.) */
typedef struct index_freshness {
    size_t files, fresh, added, changed, deleted;
    size_t skipped_large, skipped_binary, skipped_unreadable;
} index_freshness;

trove_err index_check_freshness(store *st, const config *cfg, const config_collection *coll,
                                index_freshness *out);

/* ---- a whole `trove update` ---- */

typedef struct index_update_collection {
    char *name;
    index_stats stats;
    double seconds;
    char *missing;       /* folder gone or not a folder: why (notes kept); else NULL */
} index_update_collection;

typedef struct index_update_result {
    index_update_collection *collections;   /* in config order */
    size_t n_collections;
    size_t dropped;      /* collections removed from the index, no longer configured */
    int changed;         /* anything added, changed, renamed or removed */
    int retokenized;     /* the index was built by another tokenizer (CJK
                            bigrams, another dictionary): its full-text
                            tables were rebuilt (store_tokenizer_sync) */
    int64_t snapshot;    /* the snapshot this update committed; 0: none
                            (nothing changed) */
} index_update_result;

/* Bring the index in line with the config in one transaction: re-tokenize
 * the full-text tables when tok_version() differs from the one recorded in
 * the index, drop the
 * collections the config no longer lists (only when `names` is empty),
 * index each selected collection (all when n_names is 0; every name must be
 * configured), resolve links when anything changed, and record the time of
 * the update. A collection whose folder is missing is reported in the
 * result, not an error. On error (TROVE_EINTR when interrupted) the
 * transaction is rolled back and the index is unchanged. */
trove_err index_update(store *st, const config *cfg, const char *const *names, size_t n_names,
                       const index_opts *opts, index_update_result *out);
void index_update_result_free(index_update_result *r);

#endif
