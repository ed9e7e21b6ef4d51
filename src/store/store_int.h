/* store_int — the store's private state, shared by the files of store/
 * (store.c: schema and notes; store_vec.c: vectors). Not for other modules. */
#ifndef TROVE_STORE_INT_H
#define TROVE_STORE_INT_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>

#include "store/store.h"
#include "util/buf.h"

/* Prepared statements of the write path, compiled once per connection. */
enum {
    S_DOC_INSERT, S_CHUNK_INSERT, S_CHUNK_FTS_INSERT, S_TITLE_FTS_INSERT,
    S_NAME_INSERT, S_TAG_INSERT, S_LINK_INSERT, S_DOC_TOUCH, S_COUNT
};

/* A vector slot whose chunk was deleted in the open transaction. */
typedef struct store_dead_slot {
    int64_t seg_id;
    uint32_t slot;
} store_dead_slot;

/* A statement compiled once for search/ (store_stmt_get). */
typedef struct store_cached_stmt {
    char *sql;
    sqlite3_stmt *s;
    int out;                /* handed out, not put back yet */
} store_cached_stmt;

struct store {
    sqlite3 *db;
    char *path;
    int stamp_on_close;     /* opened for writing and found healthy */
    int damaged;            /* a statement hit damage: never stamp it healthy */
    int checked;            /* verify() ran quick_check and it passed ... */
    struct stat checked_sb; /* ... on the file as it was then */
    sqlite3_stmt *stmt[S_COUNT];
    store_cached_stmt cached[STORE_STMT_CACHE];
    size_t n_cached;
    tbuf scratch;
    store_dead_slot *dead;  /* folded into segment bitmaps at commit */
    size_t n_dead, cap_dead;
};

#endif
