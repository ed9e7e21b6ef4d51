/* store — the SQLite index: schema, transactions, and every write.
 *
 * One store wraps one sqlite3 connection in WAL mode with a busy timeout, the
 * "trove" FTS5 tokenizer registered, and the schema created or checked (see
 * docs/schema.md). The indexer writes through store_doc_insert() and friends
 * inside store_begin()/store_commit(); the search module reads with its own
 * SQL through store_db(). Strings passed in are copied by SQLite; rows handed
 * out are owned by the caller and freed with the matching *_free(). */
#ifndef TROVE_STORE_H
#define TROVE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "chunk/chunk.h"
#include "md/md.h"
#include "util/err.h"

typedef struct store store;
struct sqlite3;

#define STORE_SCHEMA_VERSION 2

/* $TROVE_INDEX, else $XDG_CACHE_HOME/trove/index.db, else
 * ~/.cache/trove/index.db. Caller frees. */
char *store_default_path(void);

/* Open (creating parent folders and the schema unless readonly). A missing
 * file with readonly set is TROVE_ENOENT; a file that is not a trove index or
 * is damaged is TROVE_ECORRUPT; a lock held too long is TROVE_EBUSY. */
trove_err store_open(const char *path, int readonly, store **out);
void store_close(store *st);
struct sqlite3 *store_db(store *st);
const char *store_path(const store *st);

trove_err store_begin(store *st);     /* BEGIN IMMEDIATE */
trove_err store_commit(store *st);
void store_rollback(store *st);

/* Run one SQL statement with no result rows; error detail names the SQL. */
trove_err store_exec(store *st, const char *sql);
/* Turn the connection's last error into a trove_fail() with context. */
trove_err store_fail(store *st, const char *what);

/* ---- collections ---- */
trove_err store_collection_ensure(store *st, const char *name, const char *root, int64_t *id);
trove_err store_collection_delete(store *st, const char *name);   /* with its docs */
trove_err store_collection_rename(store *st, const char *from, const char *to);

/* ---- documents ---- */
typedef struct store_file {
    int64_t id;
    char *path;
    int64_t size, mtime_ns;
    uint64_t hash;
    int seen;           /* scratch flag for the indexer */
} store_file;

/* All documents of a collection (path, size, mtime, hash), sorted by path. */
trove_err store_files(store *st, int64_t collection_id, store_file **out, size_t *n);
void store_files_free(store_file *files, size_t n);

typedef struct store_note {
    int64_t collection_id;
    const char *collection; /* its name (for the docid) */
    const char *path;       /* relative to the collection root */
    const char *text;       /* raw file bytes */
    size_t len;
    int64_t mtime_ns;
    uint64_t hash;
    const md_doc *md;
    const chunk_list *chunks;
} store_note;

trove_err store_doc_insert(store *st, const store_note *note, int64_t *doc_id);
trove_err store_doc_delete(store *st, int64_t doc_id);
trove_err store_doc_touch(store *st, int64_t doc_id, int64_t size, int64_t mtime_ns);

/* Resolve every unresolved link the Obsidian way (exact path, then file
 * name, then alias/title; case-insensitive; same collection first, then the
 * shortest path) and recompute each note's in-degree. */
trove_err store_links_resolve(store *st);

/* Short stable document id: 8 hex digits of a hash of "collection/path". */
void store_docid(const char *collection, const char *path, char out[9]);

#endif
