/* store — the SQLite index: schema, transactions, every write and every
 * read outside search.
 *
 * One store wraps one sqlite3 connection in WAL mode with a busy timeout, the
 * "trove" FTS5 tokenizer registered, and the schema created or checked (see
 * docs/schema.md). The indexer writes through store_doc_insert() and friends
 * inside store_begin()/store_commit(); front ends read through the functions
 * under "reads" (via api/); only the search module runs its own SQL, through
 * store_db(), inside store_read_begin()/store_read_end(). Strings passed in
 * are copied by SQLite; rows handed out are owned by the caller and freed
 * with the matching *_free(). A damaged file reads as TROVE_ECORRUPT with a
 * detail naming the file and the fix, from every function. */
#ifndef TROVE_STORE_H
#define TROVE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "chunk/chunk.h"
#include "md/md.h"
#include "text/tok.h"
#include "util/err.h"

typedef struct store store;
struct sqlite3;

/* Version 2 added docs.lang, version 3 the vector tables (store_vec.h),
 * version 4 the snapshot tables, version 5 docs.tkey (translation keys,
 * text/transl.h), version 6 the typed frontmatter fields, version 7 the
 * notes' packed metadata records (store_nrec.h); an older index
 * is upgraded in place by the first writable store_open() (see
 * docs/schema.md). */
#define STORE_SCHEMA_VERSION 10

/* fields.type: what a frontmatter value is (docs/schema.md). num holds the
 * number, 0/1, or the date in days since 1970-01-01 UTC; txt the text. */
typedef enum store_field_type {
    STORE_FIELD_TEXT = 1, STORE_FIELD_NUMBER, STORE_FIELD_BOOL, STORE_FIELD_DATE, STORE_FIELD_NULL
} store_field_type;

/* $TROVE_INDEX, else $XDG_CACHE_HOME/trove/index.db, else
 * ~/.cache/trove/index.db. Caller frees. */
char *store_default_path(void);

enum {
    STORE_READONLY = 1,   /* never write; a missing file is TROVE_ENOENT */
    STORE_NOVERIFY = 2,   /* skip the check of a file changed behind trove's back (trove check) */
};

/* Open (creating parent folders and the schema unless STORE_READONLY). A
 * missing file with STORE_READONLY is TROVE_ENOENT; a lock held too long is
 * TROVE_EBUSY; a file that is not a trove index, or is damaged, is
 * TROVE_ECORRUPT. A file changed since trove last wrote or checked it (see
 * "<index>-verified") gets SQLite's quick_check first, so a damaged index is
 * reported as damaged by every command. A store opened for writing records
 * the file's state in "<index>-verified" when it is closed. An index of an
 * older schema version is upgraded when opened writable and refused
 * (TROVE_ECORRUPT, asking for `trove update`) when read-only. */
trove_err store_open(const char *path, int flags, store **out);
void store_close(store *st);
/* The raw connection: for search/ (its own SQL) and tests only. A writer's
 * may be another after store_begin(), store_commit() or store_rollback()
 * (a fresh index is written beside its file, store_beside.c): fetch it
 * again rather than keep it. */
struct sqlite3 *store_db(store *st);
/* Statements: the one way store/ and search/ run SQL. A per-connection
 * cache keyed by the SQL text: store_stmt_get() checks a statement out
 * (compiled on first use, then kept: a daemon answers thousands of searches
 * with one store, and compiling their SQL was a fifth of each answer),
 * reset and without bindings; store_stmt_put() hands it back (reset, so a
 * kept statement never pins an old WAL snapshot), never sqlite3_finalize().
 * A checked-out statement is never evicted nor finalized by the cache, so a
 * caller may hold several at once: when the text is already out (nested
 * use) or every one of the STORE_STMT_CACHE slots is out, a fresh
 * statement is compiled and put() finalizes it; when the cache is full the
 * least recently used statement that is not out makes room. NULL on
 * failure (store_fail() says why). */
#define STORE_STMT_CACHE 64
struct sqlite3_stmt *store_stmt_get(store *st, const char *sql);
void store_stmt_put(store *st, struct sqlite3_stmt *s);
/* One step of a statement of st: 1 a row, 0 no more rows, -1 an error, with
 * *err = store_fail(st, what) (the SQLite message; busy, full and damaged
 * files as store_fail says). Every read loop steps through it, so an error
 * is never taken for the end of the rows. */
int store_step(store *st, struct sqlite3_stmt *s, const char *what, trove_err *err);
/* Run `sql` through the cache: bind(ctx, s) binds its parameters (NULL:
 * none), row(ctx, s) is called for each result row (NULL: none expected);
 * a row function's error stops the loop and is returned. The statement is
 * stepped, checked (store_step) and handed back here, whatever happens; a
 * caller building a list frees it when this fails. */
typedef void (*store_bind_fn)(void *ctx, struct sqlite3_stmt *s);
typedef trove_err (*store_row_fn)(void *ctx, struct sqlite3_stmt *s);
trove_err store_each(store *st, const char *sql, const char *what, store_bind_fn bind,
                     store_row_fn row, void *ctx);
const char *store_path(const store *st);
/* SQL trove_note_ok(id), for search/: 1 when fn(ctx, id) says the note
 * passes (1), 0 when not (0), an SQL error when fn fails (-1); 1 for every
 * note while no fn is set. Registered once per connection, so a search
 * setting its own fn expires no compiled statement. fn NULL: unset. */
typedef int (*store_note_filter_fn)(void *ctx, int64_t doc_id);
void store_set_note_filter(store *st, store_note_filter_fn fn, void *ctx);

trove_err store_begin(store *st);     /* BEGIN IMMEDIATE */
trove_err store_commit(store *st);
void store_rollback(store *st);
/* A read snapshot: every statement between the two sees the same index, and
 * SQLite takes its locks once instead of per statement. */
trove_err store_read_begin(store *st);
void store_read_end(store *st);

/* Run one SQL statement with no result rows; error detail names the SQL. */
/* Give free pages back to the file system when they pass
 * STORE_RECLAIM_MIN_PAGES pages of 4 KiB (1 MiB, whatever the index's page
 * size) and a tenth of the file (always with force):
 * incremental vacuum, or for an index made before it, one VACUUM that
 * converts it (see docs/schema.md). store_commit() calls it; best effort,
 * outside a transaction. */
#define STORE_RECLAIM_MIN_PAGES 256
void store_reclaim(store *st, int force);
trove_err store_exec(store *st, const char *sql);
/* Turn the connection's last error into a trove_fail() with context;
 * SQLITE_CORRUPT, SQLITE_NOTADB and SQLITE_FORMAT become store_damaged(). */
trove_err store_fail(store *st, const char *what);
/* TROVE_ECORRUPT with the one message for a damaged index: the file, why,
 * and the fix (`trove update --rebuild`, or delete the file). */
trove_err store_damaged(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- tokenizer version ---- */
/* Make the full-text tables match the running tokenizer (tok_version()):
 * when the meta key 'tokenizer' differs (an index built by an older trove,
 * with CJK bigrams, or another dictionary), both FTS5 tables are rebuilt
 * from their stored text with the current tokenizer and the key is
 * updated. Asking for the version loads the segmenters (the Chinese
 * dictionary, checked whole, and MeCab), so beside it the index records
 * tok_stamp() ('tokenizer_stamp'): while the stamp is unchanged the check
 * is put off until the transaction's first write of full-text rows
 * (store_doc_insert, store_doc_delete), and a transaction that writes none
 * (an update that finds nothing changed) loads no segmenter and writes
 * nothing here. Call inside store_begin(). A key separate from
 * schema_version: re-tokenizing needs no schema change. */
trove_err store_tokenizer_sync(store *st);
/* 1 when the open (or last) transaction rebuilt the full-text tables. */
int store_tokenizer_rebuilt(const store *st);
/* *same = 1 when the index records the running tokenizer's stamp
 * (tok_stamp()) beside a version: then an update that writes no full-text
 * row re-tokenizes nothing (no segmenter is loaded to find out). */
trove_err store_tokenizer_current(store *st, int *same);

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

/* All documents of a collection (path, size, mtime, hash), by id:
 * one allocation, the paths inside it (free with store_files_free). */
trove_err store_files(store *st, int64_t collection_id, store_file **out, size_t *n);
void store_files_free(store_file *files, size_t n);

struct store_prep;

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
    const char *lang;       /* ISO 639-1 code from lang_detect(), NULL or "" unknown */
    const struct store_prep *prep;  /* made by store_note_prepare() of this
                                       note; NULL: store_doc_insert makes it */
} store_note;

/* What store_doc_insert() derives from a note without the database: the
 * title, the path's keys, each chunk's heading path and full-text columns,
 * the alias and link keys, and with `tokens` the tokens of every full-text
 * column (a tok_tape the insert offers FTS5, so the writer does not
 * tokenize). store_note_prepare() reads only the note (no store, no
 * database): the indexer runs it on worker threads beside the writer. The
 * prep points into nothing of the note's; free with store_prep_free(). */
typedef struct store_prep {
    char docid[9];
    char *title, *path_key, *stem, *filename;
    size_t n_chunks;
    char **headings;       /* per chunk: the heading path joined by U+001F */
    char **fts_heads;      /* per chunk: chunks_fts.heading (title and headings) */
    char **fts_bodies;     /* per chunk: chunks_fts.body (md_clean_text) */
    size_t *fts_head_lens, *fts_body_lens;   /* their lengths */
    char *aliases;         /* the aliases, one a line (titles_fts.aliases) */
    char **alias_keys;     /* per alias: folded (names) */
    char **link_keys;      /* per md link: its key; NULL for [[#heading]] links */
    size_t n_aliases, n_links;
    tok_tape tape;         /* with tokens: the full-text columns' tokens */
    int tkey_known;        /* no frontmatter fields (no permalink): tkey is */
    char *tkey;            /* ... docs.tkey, transl_key(path, NULL) (NULL: SQL NULL) */
} store_prep;

/* tape: NULL, no tokens; else an empty tape (zeroed, or emptied by
 * tok_tape_recycle: its arrays are reused) that becomes out->tape, *tape
 * zeroed. */
void store_note_prepare(const store_note *note, tok_tape *tape, store_prep *out);
void store_prep_free(store_prep *p);

trove_err store_doc_insert(store *st, const store_note *note, int64_t *doc_id);
trove_err store_doc_delete(store *st, int64_t doc_id);
trove_err store_doc_touch(store *st, int64_t doc_id, int64_t size, int64_t mtime_ns);

/* Resolve every unresolved link the Obsidian way (exact path, then file
 * name, then alias/title; case-insensitive; same collection first, then the
 * shortest path) and recompute each note's in-degree. */
trove_err store_links_resolve(store *st);

/* ---- reads ---- */

typedef struct store_collection_row {
    int64_t id;
    char *name;
    char *root;
    int64_t n_docs;
} store_collection_row;

/* Every collection in the index with its number of notes, sorted by name. */
trove_err store_collections(store *st, store_collection_row **out, size_t *n);
/* The same without counting the notes (n_docs -1): no scan of `docs`. */
trove_err store_collections_uncounted(store *st, store_collection_row **out, size_t *n);
void store_collections_free(store_collection_row *rows, size_t n);
/* Id of the collection `name`; TROVE_ENOENT when the index has none. */
trove_err store_collection_id(store *st, const char *name, int64_t *id);

/* One indexed note as the readers list it. */
typedef struct store_doc {
    int64_t id;
    char docid[9];
    char *collection;
    char *root;          /* collection folder, as indexed */
    char *path;          /* relative to root */
    char *title;
    int64_t size, mtime_ns;
    int n_lines;
    int in_degree;
} store_doc;

/* ---- the agent boundary's rule (api.h: api_set_boundary; store_hide.c) ----
 * A note is kept from agents when a glob of config `mcp: exclude:` matches
 * its "COLLECTION/PATH", its PATH or a folder of either ("journal" hides
 * journal/2024/x.md), or when its frontmatter's private key (config
 * `mcp: private_key:`, default "private") holds anything but false, no,
 * off, 0, null or nothing. */
typedef struct store_hide_globs store_hide_globs;
/* NULL when n is 0. One object is used by one thread at a time. */
store_hide_globs *store_hide_globs_new(const char *const *globs, size_t n);
void store_hide_globs_free(store_hide_globs *h);
/* 1 when the globs hide the note (h NULL: 0). */
int store_hide_globs_match(store_hide_globs *h, const char *collection, const char *path);
/* The ids of the notes whose `key` flag hides them, ascending (caller
 * frees *ids; key NULL or "": none). */
trove_err store_private_ids(store *st, const char *key, int64_t **ids, size_t *n);
/* SQL: "note ID is flagged private by the key bound here (lower case)";
 * search's filters append it, store_private_ids reads it. With the SQL
 * function trove_hide_path(GLOBS, COLLECTION, PATH) (GLOBS one a line):
 * the same rule as store_hide_globs_match. */
/* SQL: "the globs bound here hide the note (COLL: its collection's name,
 * PATH its path)" (one rule with store_hide_globs_match). */
#define STORE_HIDE_PATH_SQL(COLL, PATH) "trove_hide_path(?, " COLL ", " PATH ")"
/* The languages of the indexed notes with their counts, most notes first
 * (caller frees *out with free()), the notes the rule hides left out
 * (globs one a line and key, NULL: none). */
typedef struct store_lang_count {
    char lang[16];
    int64_t notes;
} store_lang_count;
trove_err store_lang_counts(store *st, const char *hide_globs, const char *hide_key,
                            store_lang_count **out, size_t *n);
#define STORE_PRIVATE_SQL(ID) \
    "EXISTS (SELECT 1 FROM fields hf WHERE hf.doc_id = " ID " AND hf.key = ? AND NOT" \
    " (hf.type = 5 OR (hf.type IN (2, 3) AND hf.num = 0) OR" \
    " lower(trim(coalesce(hf.txt, ''))) IN ('', 'false', 'no', 'off', '0')))"

/* Notes whose docid starts with `prefix` (at most `limit`). */
trove_err store_docs_by_docid(store *st, const char *prefix, size_t limit, store_doc **out,
                              size_t *n);
/* Notes whose relative path is exactly `path`, in any collection. */
trove_err store_docs_by_path(store *st, const char *path, size_t limit, store_doc **out, size_t *n);
/* Notes of `collection` (NULL: all) whose path starts with `prefix` (NULL or
 * "": all), ordered by collection name and path. */
trove_err store_docs_list(store *st, const char *collection, const char *prefix, store_doc **out,
                          size_t *n);
/* Keyset paging over every note in (collection name, path) order: at most
 * `limit` notes strictly after the key (after_collection, after_path);
 * after_collection NULL: from the first note. Each page is an index range
 * read, so every page costs the same wherever it starts, and notes added or
 * removed before the key between two pages do not shift the next one. */
trove_err store_docs_after(store *st, const char *after_collection, const char *after_path,
                           size_t limit, store_doc **out, size_t *n);
void store_docs_free(store_doc *docs, size_t n);
/* Frees one store_doc's strings and zeroes it (the struct is the caller's). */
void store_doc_clear(store_doc *d);

typedef struct store_counts {
    int64_t docs, chunks, links;
    int64_t dangling;        /* unresolved links to notes */
    int64_t to_files;        /* unresolved links to other files (images, PDFs) */
} store_counts;

trove_err store_counts_get(store *st, store_counts *out);
/* The same for one note: 1 (0: no such note), its chunks, its links out. */
trove_err store_counts_of_doc(store *st, int64_t doc_id, store_counts *out);

/* meta key/value: *value is NULL when the key is absent (caller frees). */
trove_err store_meta_get(store *st, const char *key, char **value);
trove_err store_meta_set(store *st, const char *key, const char *value);
/* Record now (Unix seconds) as the time of the last update: in meta
 * 'last_update' when the open transaction changed anything, else (an
 * update that found nothing to do) in the "<index>-verified" stamp when
 * the store closes, so that such an update writes no page of the index. */
trove_err store_mark_updated(store *st);
/* Unix seconds of the last update, 0 if never: the newer of meta
 * 'last_update' and the stamp's time of an update that changed nothing. */
trove_err store_last_update(store *st, int64_t *when);
/* For an update that found nothing to change without opening a writer (the
 * daemon's, when its watcher vouches: docs/architecture.md): its time in
 * the "-verified" stamp, as store_mark_updated records a no-op update's;
 * nothing when the stamp does not describe the file as it is now. */
trove_err store_note_noop_update(store *st);
/* SQLite's data_version of this connection: it changes whenever another
 * connection, of this process or another, commits to the index. */
trove_err store_data_version(store *st, int64_t *v);
/* store_data_version for what a resident reader keeps per data_version
 * (store_nmap_keep, store_lens.h, store_posts.h): inside a
 * store_read_begin/store_read_end transaction it is read once and given
 * again (the transaction's snapshot cannot change), outside one asked
 * each time. */
trove_err store_kept_version(store *st, int64_t *v);
/* For a keeper whose contents were read at data_version *at: 0 when they
 * still hold, 1 when another connection committed since (*at is then the
 * version now: the keeper empties itself and keeps on), -1 when the
 * version cannot be read (the error cleared: the caller reads the index
 * as without a keeper). */
int store_kept_stale(store *st, int64_t *at);

/* ---- whole-index operations ---- */

/* SQLite's integrity_check plus trove's own invariants (chunks belong to
 * notes, FTS rows match chunks and notes, links and names point at notes,
 * in-degrees match the links, docids match their paths, byte and line
 * ranges are sane). Each problem is one malloc'd line in *problems (free
 * with store_problems_free); none is success. TROVE_ECORRUPT only when the
 * file cannot be read at all. */
trove_err store_check(store *st, char ***problems, size_t *n);
void store_problems_free(char **problems, size_t n);

/* Rebuild: refuse a file that is not an SQLite database or holds another
 * program's tables (nothing but a trove index is ever deleted), then name a
 * fresh temporary index beside it (caller frees) with no leftovers. Fill it,
 * close it, and store_rebuild_finish() puts it in place of `path` in one
 * rename (its stale WAL files removed first); store_rebuild_abort() removes
 * it, leaving `path` untouched. */
trove_err store_rebuild_begin(const char *path, char **tmp_path);
trove_err store_rebuild_finish(const char *tmp_path, const char *path);
void store_rebuild_abort(const char *tmp_path);

/* ---- snapshots (store_snap.c) ----
 * Every committed transaction that changes notes or collections is a
 * numbered snapshot. The live tables always hold the current one; before a
 * note or collection is first changed in a transaction its old rows (and
 * its chunks' vectors) are copied to undo tables keyed by the snapshot, so
 * a snapshot costs what it changed. Rolling back applies the undo rows of
 * the newer snapshots, newest first, and commits the result as a new
 * snapshot (so a rollback can itself be rolled back). Transactions that only
 * add vectors are not snapshots. See docs/architecture.md, "Snapshots". */

typedef struct store_snapshot {
    int64_t id;              /* 0: none yet (an index never updated) */
    int64_t created_at;      /* Unix seconds */
    char kind[16];           /* update, collection, rollback, upgrade */
    char *note;              /* e.g. "rollback to 3"; "" when none */
    int64_t docs, chunks, links;        /* in the index as of this snapshot */
    int64_t added, removed, modified;   /* notes, by path, against the one before */
} store_snapshot;

/* Which snapshots stay (and so can be rolled back to), decided at each
 * commit, in the same transaction: the newest `last`, every one of the
 * last `minutes` minutes, the newest of each of the last `hourly` hours and
 * of each of the last `daily` days (local days), and always the current
 * one. A snapshot between two kept ones is merged into the next kept one
 * (its undo rows folded in, so rollback to every kept one stays exact);
 * those older than the oldest kept one go with their undo rows. */
typedef struct store_retention {
    int last, minutes, hourly, daily;
} store_retention;
#define STORE_RETENTION_DEFAULT ((store_retention){5, 60, 24, 30})
void store_snapshot_retention(store *st, const store_retention *r);
/* "Now" for snapshot times and retention: $TROVE_NOW (Unix seconds; for
 * tests only, so that retention can be tested without waiting), else the
 * clock. */
int64_t store_snapshot_now(void);
/* What the open transaction is, for the list (kind: a short word; note:
 * copied). Default: "update", no note. */
void store_snapshot_label(store *st, const char *kind, const char *note);
/* The current snapshot (id 0 and zero counts when there is none). Free
 * with store_snapshot_clear(). */
trove_err store_snapshot_current(store *st, store_snapshot *out);
/* The snapshot the last successful store_commit() on st committed as; 0
 * when that transaction changed no note or collection (no snapshot). */
int64_t store_committed_snapshot(const store *st);
void store_snapshot_clear(store_snapshot *s);
/* The kept snapshots, newest first, at most `limit` (0: all kept). */
trove_err store_snapshots(store *st, size_t limit, store_snapshot **out, size_t *n);
void store_snapshots_free(store_snapshot *s, size_t n);
/* Make snapshot `id` current again in one transaction of its own: the undo
 * rows of every newer snapshot are applied, newest first, and the result is
 * committed as a new snapshot of kind "rollback". A crash or error leaves
 * the index as it was. `id` must be a kept snapshot (TROVE_ENOENT names the
 * kept ones); `id` equal to the current one changes nothing (*made gets the
 * current snapshot, *noop 1). */
/* *colls (may be NULL) gets the collections the rollback put back into the
 * index, with the settings recorded when they were removed (conf: what
 * store_snapshot_coll_conf() was given, NULL when nothing was recorded, e.g.
 * dropped by an `update` after a hand edit of config.yaml). */
typedef struct store_restored_coll {
    char *name, *root, *conf;
} store_restored_coll;
trove_err store_snapshot_rollback(store *st, int64_t id, store_snapshot *made, int *noop,
                                  store_restored_coll **colls, size_t *n_colls);
void store_restored_colls_free(store_restored_coll *c, size_t n);
/* Record, in the open transaction's snapshot, the settings of collection
 * `name` (an opaque text: config.yaml's entry as JSON, see config.h) before
 * it is removed, so that a rollback past the removal can put the entry back
 * into config.yaml. Call inside store_begin(), before store_collection_delete. */
trove_err store_snapshot_coll_conf(store *st, const char *name, const char *conf);

/* Short stable document id: 8 hex digits of a hash of "collection/path". */
void store_docid(const char *collection, const char *path, char out[9]);

#endif
