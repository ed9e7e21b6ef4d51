/* store_int — the store's private state, shared by the files of store/
 * (store.c: schema and notes; store_vec.c: vectors). Not for other modules. */
#ifndef TROVE_STORE_INT_H
#define TROVE_STORE_INT_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/stat.h>

#include "store/store.h"
#include "util/buf.h"

/* A vector slot whose chunk was deleted in the open transaction. */
typedef struct store_dead_slot {
    int64_t seg_id;
    uint32_t slot;
} store_dead_slot;

/* A statement of the cache (store_stmt_get). */
typedef struct store_cached_stmt {
    char *sql;
    uint64_t hash;          /* of sql, to skip most string compares */
    uint64_t used;          /* the cache's clock at the last get, for eviction */
    sqlite3_stmt *s;
    int out;                /* handed out, not put back yet: never evicted */
} store_cached_stmt;

struct store {
    sqlite3 *db;
    char *path;
    int stamp_on_close;     /* opened for writing and found healthy */
    int damaged;            /* a statement hit damage: never stamp it healthy */
    int checked;            /* verify() ran quick_check and it passed ... */
    struct stat checked_sb; /* ... on the file as it was then */
    store_cached_stmt cached[STORE_STMT_CACHE];
    size_t n_cached;
    uint64_t clock;         /* counts store_stmt_get calls */
    store_dead_slot *dead;  /* folded into segment bitmaps at commit */
    size_t n_dead, cap_dead;
    /* Snapshots (store_snap.c): the id the open transaction commits as, 0
     * while it has changed no note or collection; snap_bare: it is the
     * first snapshot of the index (nothing to undo to, nothing recorded). */
    int64_t snap_id;
    int64_t snap_committed; /* what the last store_commit made, 0: none */
    int snap_bare;
    store_retention snap_ret;   /* which snapshots stay (store_snapshot_retention) */
    char snap_kind[16];
    char *snap_note;
    /* The tokenizer check (store_tokenizer_sync): put off until the open
     * transaction's first full-text write; whether it rebuilt the tables. */
    int tok_pending, tok_rebuilt;
    /* store_mark_updated: rows changed before the open transaction began,
     * and the stamp's "updated" line of an update that changed none
     * ("" when none), written at close. */
    int64_t changes_at_begin;
    char noop_update[128];
    /* Vector sidecars (store_vside.c): the index's identity, read once. */
    char *vside_id;
    int vside_id_read;
    /* SQL trove_note_ok(id): the search's note filter (store_set_note_filter) */
    store_note_filter_fn note_filter;
    void *note_filter_ctx;
    /* note_map rows the open transaction changed (store_nmap.c): a bitmap
     * by row id, or all of them; written at commit. */
    uint8_t *nmap_marks;
    size_t nmap_marks_len;
    int nmap_all;
    /* note_map rows kept across read transactions (store_nmap_keep) */
    struct store_nmap_kept *nmap_kept;
    /* titles_fts rows' lengths kept across read transactions (store_lens.h) */
    struct store_lens *title_lens;
    /* keyword phrases' walks kept across read transactions (store_posts.h) */
    struct store_posts *posts;
    /* store_kept_version's data_version, read once per read transaction:
     * valid while kept_dv_serial is read_serial (counted up by every
     * store_read_begin and store_read_end) */
    int64_t kept_dv;
    uint64_t read_serial, kept_dv_serial;
    /* A fresh index built beside the file (store_beside.c): allowed for
     * every writer (store_beside_allowed); while building, db is the file `beside`
     * (locked by beside_fd) and `live` the connection to path, holding
     * its write lock. */
    int beside_ok;
    char *beside;
    int beside_fd;
    sqlite3 *live;
    /* The build's secondary indexes dropped for the load, their CREATE
     * statements (store_beside_indexes makes them again) */
    char *beside_indexes;
    /* The build's full-text tables write with a larger hash until
     * store_beside_indexes (store_beside.c, bulk_fts_begin) */
    int beside_fts_bulk;
    /* trove_rank() registered on db (store_rank.c), at its first use */
    int rank_ready;
    struct store_rank *rank;   /* its state (store_rank_use) */
    struct rank_keep *rank_keep;   /* store_rank_rows's kept walks (store_rank.c) */
    /* rows per phrase counted by store_rank_rows (its count walk skipped
     * for a phrase counted before; store_rank_hits), in the read
     * transaction open now (emptied at its begin and end), or with
     * df_keep (store_rank_keep) while data_version stays df_version
     * (store_kept_stale) */
    struct store_rank_df *df;
    size_t n_df, cap_df;
    int df_keep;
    int64_t df_version;
};

/* store_connect's flag for a file nobody else opens (no WAL) */
#define STORE_BESIDE 0x100
trove_err store_connect(store *st, const char *path, int flags, int fresh);
/* A read transaction begins or ends: store_rank_hits' counts dropped, or
 * looked at again before their next use when kept (store_rank_keep). */
void store_rank_forget(store *st);
/* store_rank_hits' counts dropped, kept or not (the store's close). */
void store_rank_forget_all(store *st);
void store_stmt_clear(store *st);
/* 1 when the connection's file is no longer the one its path names (another
 * writer renamed a new index in) */
int store_file_moved(sqlite3 *db);
/* unlink(PATH SUFFIX), errors ignored (store_check.c) */
void store_remove_with_suffix(const char *path, const char *suffix);
/* store_beside.c, called by store_begin, store_commit, store_rollback and
 * store_close. */
void store_beside_try(store *st);
trove_err store_beside_finish(store *st);
void store_beside_discard(store *st);
/* Make the indexes a build dropped for its load; TROVE_OK when none were. */
trove_err store_beside_indexes(store *st);
/* 0 when TROVE_INDEX_BESIDE=0 (benchmarks and tests of the WAL path) */
int store_beside_allowed(void);

/* Vector segments (store_vec.c) as their sidecars (store_vside.c) need
 * them: a segment's blob is a STORE_SEG_HEADER-byte header then arrays,
 * store_vec_seg_size(n, dim) bytes in all (store_vec.h).
 * store_vec_blob_open opens one and checks its header against dim: head
 * gets the header, *total the size; the caller closes *b (NULL on failure)
 * whatever it returns. */
#define STORE_SEG_HEADER 32
trove_err store_vec_blob_open(store *st, int64_t seg_id, int dim, sqlite3_blob **b,
                              uint8_t *head, size_t *total);
/* The sketches (vec_sketch_rows, vec_sketch_size(n, dim) bytes into out)
 * of the n rows of a segment whose blob bytes are `blob`. */
void store_vec_seg_sketch(const uint8_t *blob, size_t n, int dim, uint8_t *out);

/* Hooks of store.c into store_snap.c: save the before-image of a note or a
 * collection at its first change in the open snapshot ("created" when it
 * did not exist before), finish the snapshot at commit, forget it at
 * rollback. */
trove_err snap_record_doc(store *st, int64_t doc_id);
trove_err snap_record_doc_created(store *st, int64_t doc_id);
trove_err snap_record_coll(store *st, int64_t coll_id);
trove_err snap_record_coll_created(store *st, int64_t coll_id);
trove_err snap_finish(store *st);
void snap_abort(store *st);
/* The v3 -> v4 upgrade step: the index as it is becomes snapshot 1. */
trove_err snap_upgrade(store *st);

/* The snapshot tables (schema version 4, docs/schema.md). undo_* rows of
 * snapshot k hold what k changed, as it was before k: undo_docs one row per
 * note id (kind 0: created in k; 1: its before-image with its title row;
 * 2: only touched, its docs row before), undo_chunks its chunks with their
 * full-text row, undo_names/tags/links
 * the rest, undo_dst the old target of links of unchanged notes whose
 * target note k deleted, undo_vecs the vectors of its chunks, undo_colls the
 * collections (kind as for notes), undo_conf the config.yaml entry of a
 * collection removed in k. Kind 2 rows (touched only) are no longer written:
 * file times are not history; old ones are ignored. undo_docs_doc and
 * undo_conf are created by every writable open (IF NOT EXISTS), so no
 * schema version step is needed; readers never use them. */
#define SNAP_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS snapshots(id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL," \
    "  kind TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', docs INTEGER NOT NULL," \
    "  chunks INTEGER NOT NULL, links INTEGER NOT NULL, added INTEGER NOT NULL DEFAULT 0," \
    "  removed INTEGER NOT NULL DEFAULT 0, modified INTEGER NOT NULL DEFAULT 0);" \
    "CREATE TABLE IF NOT EXISTS undo_docs(snap INTEGER NOT NULL, doc_id INTEGER NOT NULL," \
    "  kind INTEGER NOT NULL, collection_id INTEGER, path TEXT, path_key TEXT, stem TEXT," \
    "  docid TEXT, title TEXT, size INTEGER, mtime_ns INTEGER, hash INTEGER, meta TEXT," \
    "  n_lines INTEGER, in_degree INTEGER, lang TEXT, t_title TEXT, t_aliases TEXT," \
    "  t_filename TEXT, PRIMARY KEY(snap, doc_id));" \
    "CREATE TABLE IF NOT EXISTS undo_chunks(snap INTEGER NOT NULL, id INTEGER NOT NULL," \
    "  doc_id INTEGER NOT NULL, seq INTEGER, heading TEXT, start_byte INTEGER, end_byte INTEGER," \
    "  line_start INTEGER, line_end INTEGER, f_heading TEXT, f_body TEXT);" \
    "CREATE INDEX IF NOT EXISTS undo_chunks_snap ON undo_chunks(snap, doc_id);" \
    "CREATE TABLE IF NOT EXISTS undo_names(snap INTEGER NOT NULL, doc_id INTEGER NOT NULL," \
    "  name TEXT NOT NULL);" \
    "CREATE INDEX IF NOT EXISTS undo_names_snap ON undo_names(snap);" \
    "CREATE TABLE IF NOT EXISTS undo_tags(snap INTEGER NOT NULL, doc_id INTEGER NOT NULL," \
    "  tag TEXT NOT NULL);" \
    "CREATE INDEX IF NOT EXISTS undo_tags_snap ON undo_tags(snap);" \
    "CREATE TABLE IF NOT EXISTS undo_links(snap INTEGER NOT NULL, id INTEGER NOT NULL," \
    "  src_doc INTEGER NOT NULL, kind INTEGER, target TEXT, target_key TEXT, fragment TEXT," \
    "  line INTEGER, dst_doc INTEGER);" \
    "CREATE INDEX IF NOT EXISTS undo_links_snap ON undo_links(snap);" \
    "CREATE TABLE IF NOT EXISTS undo_dst(snap INTEGER NOT NULL, link_id INTEGER NOT NULL," \
    "  dst_doc INTEGER, PRIMARY KEY(snap, link_id)) WITHOUT ROWID;" \
    "CREATE TABLE IF NOT EXISTS undo_vecs(snap INTEGER NOT NULL, chunk_id INTEGER NOT NULL," \
    "  model_id INTEGER NOT NULL, text_hash INTEGER NOT NULL, scale REAL NOT NULL, q BLOB NOT NULL);" \
    "CREATE INDEX IF NOT EXISTS undo_vecs_snap ON undo_vecs(snap, model_id);" \
    "CREATE TABLE IF NOT EXISTS undo_colls(snap INTEGER NOT NULL, coll_id INTEGER NOT NULL," \
    "  kind INTEGER NOT NULL, name TEXT, root TEXT, updated_at INTEGER," \
    "  PRIMARY KEY(snap, coll_id)) WITHOUT ROWID;" \
    "CREATE INDEX IF NOT EXISTS undo_docs_doc ON undo_docs(doc_id, snap);" \
    "CREATE TABLE IF NOT EXISTS undo_conf(snap INTEGER NOT NULL, coll_id INTEGER NOT NULL," \
    "  conf TEXT NOT NULL, PRIMARY KEY(snap, coll_id)) WITHOUT ROWID;"


/* Frontmatter fields, typed (schema version 6): the --where filters and
 * note dates read them (search/where.h, docs/schema.md). The rows of the
 * notes (docs d) that COND selects: one per top-level scalar of d.meta and
 * per scalar element of a top-level list, and key '' for the date in the
 * file name. type: store_field_type (store.h); txt: the value as text,
 * every type, both cast as the table stores them (`trove check` compares).
 * Written by store_doc_insert (one note), the rollback and the v6 upgrade
 * (many); store_doc_delete removes them. */
#define STORE_FIELD_TYPE(T, A) \
    "CASE WHEN " T " IN ('integer', 'real') THEN 2 WHEN " T " IN ('true', 'false') THEN 3" \
    " WHEN " T " = 'null' THEN 5 WHEN " T " = 'text' AND " A \
    " GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' AND julianday(" A ") IS NOT NULL" \
    " THEN 4 ELSE 1 END"
#define STORE_FIELD_NUM(T, A) \
    "CAST(CASE WHEN " T " IN ('integer', 'real') THEN " A " WHEN " T " = 'true' THEN 1" \
    " WHEN " T " = 'false' THEN 0 WHEN " T " = 'text' AND " A \
    " GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN julianday(" A ") - 2440587.5 END" \
    " AS REAL)"
#define STORE_FIELD_TXT(T, A) \
    "CAST(CASE WHEN " T " = 'true' THEN 'true' WHEN " T " = 'false' THEN 'false' ELSE " A " END" \
    " AS TEXT)"
#define STORE_FIELD_COLS(E) \
    "d.id, lower(e.key), " STORE_FIELD_TYPE(E ".type", E ".atom") ", " \
    STORE_FIELD_NUM(E ".type", E ".atom") ", " STORE_FIELD_TXT(E ".type", E ".atom")
#define STORE_FIELDS_META "json_each(CASE WHEN json_valid(d.meta) THEN d.meta ELSE '{}' END) e"
#define STORE_FIELDS_OF(COND) \
    "SELECT " STORE_FIELD_COLS("e") " FROM docs d, " STORE_FIELDS_META \
    " WHERE (" COND ") AND e.type NOT IN ('array', 'object') AND e.key != ''" \
    " UNION ALL SELECT " STORE_FIELD_COLS("l") " FROM docs d, " STORE_FIELDS_META \
    ", json_each(e.value) l WHERE (" COND ") AND e.type = 'array'" \
    " AND l.type NOT IN ('array', 'object') AND e.key != ''" \
    " UNION ALL SELECT d.id, '', 4, trove_name_date(d.path), NULL FROM docs d" \
    " WHERE (" COND ") AND trove_name_date(d.path) IS NOT NULL"
#define STORE_FIELDS_INSERT(COND) \
    "INSERT INTO fields(doc_id, key, type, num, txt) " STORE_FIELDS_OF(COND)

/* A note's row: STORE_DOC_COLUMNS selects (id, docid, collection, root,
 * path, title, size, mtime_ns, n_lines, in_degree) as columns 0..9 from
 * docs d joined to collections c; a reader may select more after them.
 * store_doc_from_row copies them into d, the strings malloc'd into d
 * (store_doc_clear frees them). */
#define STORE_DOC_COLUMNS                                                                    \
    "SELECT d.id, d.docid, c.name, c.root, d.path, d.title, d.size, d.mtime_ns, d.n_lines," \
    " d.in_degree"
#define STORE_DOC_FROM " FROM docs d JOIN collections c ON c.id = d.collection_id "
void store_doc_from_row(sqlite3_stmt *s, store_doc *d);

/* A message from SQLite's checks as one line (malloc'd): the "*** in
 * database main ***" banner dropped, line breaks joined with "; ". */
char *store_one_line(const char *raw);

/* The SQL function trove_hide_path (store_hide.c), registered by store_open. */
void store_sql_hide_path(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* 1 when the blob that SQL (one parameter, ?1 = id) reads equals WANT; no
 * row reads as an empty blob. 0 otherwise, and on a failure, which goes to
 * *rc naming WHAT. For `trove check`'s rebuild-and-compare of derived rows. */
int store_blob_equals(store *st, const char *sql, int64_t id, const tbuf *want,
                      const char *what, trove_err *rc);

/* Point *blob (NULL: none open yet) at row `row` of table.column, read
 * only: 1; 0 when there is no such row (the handle is then closed; also
 * when there is no such table); -1 with *rc naming WHAT on an error. The
 * caller closes *blob before its read transaction ends. */
int store_blob_at(store *st, sqlite3_blob **blob, const char *table, const char *column,
                  int64_t row, const char *what, trove_err *rc);

#endif
