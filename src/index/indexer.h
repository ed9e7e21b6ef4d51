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
    int progress;                /* draw a progress bar on stderr */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    volatile sig_atomic_t *interrupted;  /* checked between files */
} index_opts;

#define INDEX_DEFAULT_MAX_FILE_BYTES (16u << 20)

typedef struct index_stats {
    size_t files;        /* files matched by the walk */
    size_t added, updated, renamed, removed, unchanged, skipped;
} index_stats;

trove_err index_collection(store *st, const config_collection *coll, const index_opts *opts,
                           index_stats *stats);

/* What `update` would do, judged by (size, mtime) alone, without reading
 * any file: counts of new, changed and deleted files. Read-only. */
typedef struct index_freshness {
    size_t files, fresh, added, changed, deleted;
} index_freshness;

trove_err index_check_freshness(store *st, const config_collection *coll,
                                index_freshness *out);

#endif
