#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_int.h"
#include "store/store_lens.h"
#include "store/store_posts.h"
#include "store/store_nmap.h"
#include "store/store_nrec.h"
#include "store/store_vside.h"
#include "store/store_vec.h"
#include "md/md.h"
#include "text/date.h"
#include "text/lang.h"
#include "text/transl.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"


/* SQLite's page cache (KiB, negative) outside and inside a write
 * transaction (store_begin). */
#define STORE_READ_CACHE "-32000"
#define STORE_WRITE_CACHE "-262144"
/* The page size of an index trove creates (an older one keeps its own;
 * a build beside copies the empty index's). 16 KiB rather than SQLite's
 * 4 KiB: a fresh tldr index has a quarter of the pages, so its writer
 * splits and caches fewer and writes it in a quarter of the system calls,
 * the file is 3% smaller (FTS5's 4 KB leaves and the rows pack tighter),
 * and a cold keyword search, whose B-trees are a level lower, faults in
 * fewer pages (docs/performance.md, session 33, w-idx4). */
#define STORE_PAGE_SIZE "16384"

/* The write path's statements (run through the statement cache). */
static const char doc_insert_sql[] =
    "INSERT INTO docs(collection_id, path, path_key, stem, docid, title, size, mtime_ns,"
    " hash, meta, n_lines, lang, tkey)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?, trove_tkey(?2,"
    "   CASE WHEN json_valid(?10) THEN json_extract(?10, '$.permalink') END))";
/* The same for a note whose translation key store_note_prepare found (no
 * frontmatter fields): bound as ?13, computed on a worker thread. */
static const char doc_insert_keyed_sql[] =
    "INSERT INTO docs(collection_id, path, path_key, stem, docid, title, size, mtime_ns,"
    " hash, meta, n_lines, lang, tkey) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)";
static const char chunk_insert_sql[] =
    "INSERT INTO chunks(doc_id, seq, heading, start_byte, end_byte, line_start, line_end)"
    " VALUES (?,?,?,?,?,?,?)";
static const char chunk_fts_insert_sql[] = "INSERT INTO chunks_fts(rowid, heading, body) VALUES (?,?,?)";
static const char title_fts_insert_sql[] =
    "INSERT INTO titles_fts(rowid, title, aliases, filename) VALUES (?,?,?,?)";
static const char name_insert_sql[] = "INSERT INTO names(doc_id, name) VALUES (?,?)";
static const char tag_insert_sql[] = "INSERT OR IGNORE INTO tags(tag, doc_id) VALUES (?,?)";
static const char link_insert_sql[] =
    "INSERT INTO links(src_doc, kind, target, target_key, fragment, line)"
    " VALUES (?,?,?,?,?,?)";
static const char doc_touch_sql[] = "UPDATE docs SET size = ?, mtime_ns = ? WHERE id = ?";

/* Embedding vectors (schema version 3, see store_vec.h). */
#define VEC_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS vec_models(" \
    "  id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL UNIQUE, dim INTEGER NOT NULL," \
    "  name TEXT NOT NULL, created_at INTEGER NOT NULL);" \
    "CREATE TABLE IF NOT EXISTS vec_segs(" \
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, model_id INTEGER NOT NULL, n INTEGER NOT NULL," \
    "  n_dead INTEGER NOT NULL DEFAULT 0, dead BLOB, data BLOB NOT NULL);" \
    "CREATE INDEX IF NOT EXISTS vec_segs_model ON vec_segs(model_id);" \
    "CREATE TABLE IF NOT EXISTS vec_map(" \
    "  chunk_id INTEGER NOT NULL, model_id INTEGER NOT NULL, seg_id INTEGER NOT NULL," \
    "  slot INTEGER NOT NULL, PRIMARY KEY(chunk_id, model_id)) WITHOUT ROWID;"

/* Translation keys (schema version 5, text/transl.h): notes of one
 * collection sharing a key are candidate translations of each other. */
#define TKEY_INDEX_SQL "CREATE INDEX IF NOT EXISTS docs_tkey ON docs(collection_id, tkey);"
/* What search reads of the whole vault, kept at each update: how many
 * copies a translation key has on average (search widens its candidate
 * lists by as much, search/group.h) and how many notes each language has
 * (the vault's majority language, search/lang_pref.h). */
#define VAULT_STATS_SQL \
    "INSERT OR REPLACE INTO meta(key, value) VALUES ('copies_per_tkey', (SELECT" \
    "  CAST(count(*) AS REAL) / max(1, (SELECT count(*) FROM (SELECT 1 FROM docs" \
    "  WHERE tkey IS NOT NULL GROUP BY collection_id, tkey)))" \
    "  FROM docs));" \
    "INSERT OR REPLACE INTO meta(key, value) VALUES ('lang_counts', (SELECT" \
    "  coalesce(json_group_object(lang, n), '{}') FROM" \
    "  (SELECT lang, count(*) AS n FROM docs WHERE lang != '' GROUP BY lang)));"

/* The fields table (schema version 6, docs/schema.md; its rows:
 * STORE_FIELDS_OF in store_int.h). Kept by the store's own writes, not by
 * triggers on docs: a trigger makes every docs insert a statement with a
 * statement journal, and each statement savepoint makes FTS5 flush its
 * pending terms into a new segment, one segment per note instead of one
 * per transaction. Those segments merge unevenly, and the tombstones of
 * deleted notes then stay unmerged (the index did not shrink after mass
 * deletions). Indexes made by a version that had the triggers lose them
 * at their next writable open. */
#define FIELDS_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS fields(doc_id INTEGER NOT NULL, key TEXT NOT NULL," \
    "  type INTEGER NOT NULL, num REAL, txt TEXT);" \
    "CREATE INDEX IF NOT EXISTS fields_doc ON fields(doc_id, key, type, num, txt);" \
    "CREATE INDEX IF NOT EXISTS fields_key ON fields(key);" \
    "DROP TRIGGER IF EXISTS docs_fields_add;" \
    "DROP TRIGGER IF EXISTS docs_fields_del;"
/* One note's fields rows, read and then written one row at a time: a
 * multi-row INSERT ... SELECT would open a statement journal (see above). */
static const char doc_fields_sql[] = STORE_FIELDS_OF("d.id = ?1");
static const char field_insert_sql[] =
    "INSERT INTO fields(doc_id, key, type, num, txt) VALUES (?,?,?,?,?)";

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS collections("
    "  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, root TEXT NOT NULL,"
    "  updated_at INTEGER);"
    "CREATE TABLE IF NOT EXISTS docs("
    "  id INTEGER PRIMARY KEY, collection_id INTEGER NOT NULL, path TEXT NOT NULL,"
    "  path_key TEXT NOT NULL, stem TEXT NOT NULL, docid TEXT NOT NULL, title TEXT NOT NULL,"
    "  size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash INTEGER NOT NULL, meta TEXT,"
    "  n_lines INTEGER NOT NULL, in_degree INTEGER NOT NULL DEFAULT 0,"
    "  lang TEXT NOT NULL DEFAULT '', tkey TEXT,"
    "  UNIQUE(collection_id, path));"
    TKEY_INDEX_SQL
    "CREATE INDEX IF NOT EXISTS docs_path_key ON docs(path_key);"
    "CREATE INDEX IF NOT EXISTS docs_stem ON docs(stem);"
    "CREATE TABLE IF NOT EXISTS names(doc_id INTEGER NOT NULL, name TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS names_name ON names(name);"
    "CREATE INDEX IF NOT EXISTS names_doc ON names(doc_id);"
    "CREATE TABLE IF NOT EXISTS tags(tag TEXT NOT NULL, doc_id INTEGER NOT NULL,"
    "  PRIMARY KEY(tag, doc_id)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS tags_doc ON tags(doc_id);"
    "CREATE TABLE IF NOT EXISTS chunks("
    "  id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL, seq INTEGER NOT NULL,"
    "  heading TEXT NOT NULL, start_byte INTEGER NOT NULL, end_byte INTEGER NOT NULL,"
    "  line_start INTEGER NOT NULL, line_end INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);"
    "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(heading, body, tokenize='trove');"
    "CREATE VIRTUAL TABLE IF NOT EXISTS titles_fts USING fts5(title, aliases, filename,"
    "  tokenize='trove');"
    "CREATE TABLE IF NOT EXISTS links("
    "  id INTEGER PRIMARY KEY, src_doc INTEGER NOT NULL, kind INTEGER NOT NULL,"
    "  target TEXT NOT NULL, target_key TEXT NOT NULL, fragment TEXT, line INTEGER NOT NULL,"
    "  dst_doc INTEGER);"
    "CREATE INDEX IF NOT EXISTS links_src ON links(src_doc);"
    "CREATE INDEX IF NOT EXISTS links_dst ON links(dst_doc);"
    "CREATE INDEX IF NOT EXISTS links_unresolved ON links(target_key) WHERE dst_doc IS NULL;"
    VEC_SCHEMA_SQL
    SNAP_SCHEMA_SQL
    FIELDS_SCHEMA_SQL
    STORE_NREC_SCHEMA_SQL
    STORE_NMAP_SCHEMA_SQL;

char *store_default_path(void)
{
    return fs_xdg_path("TROVE_INDEX", "XDG_CACHE_HOME", ".cache", "trove/index.db");
}

trove_err store_fail(store *st, const char *what)
{
    int code = sqlite3_errcode(st->db);
    const char *msg = sqlite3_errmsg(st->db);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        return trove_fail(TROVE_EBUSY, "%s: index is locked by another trove process (%s); "
                          "try again when it finishes", st->path, what);
    if (code == SQLITE_FULL)
        return trove_fail(TROVE_EIO, "%s: the disk is full (%s); nothing of this transaction was "
                          "written: free some space and run the command again", st->path, what);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_FORMAT) {
        st->damaged = 1;
        return store_damaged(st->path, "%s: %s", what, msg);
    }
    return trove_fail(TROVE_ESQL, "%s: %s: %s", st->path, what, msg);
}

trove_err store_damaged(const char *path, const char *fmt, ...)
{
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    char *why = store_one_line(raw);
    trove_err rc = trove_fail(TROVE_ECORRUPT, "%s: the index is damaged (%s); rebuild it with "
                              "`trove update --rebuild`, or delete the file and run `trove update`",
                              path, why);
    free(why);
    return rc;
}

char *store_one_line(const char *raw)
{
    /* quick_check and integrity_check answer "*** in database main ***\nPage 24: ..." */
    static const char banner[] = "*** in database main ***";
    const char *b = strstr(raw, banner);
    tbuf line = {0};
    for (const char *c = raw; *c; c++) {
        if (c == b) {
            c += sizeof banner - 2;
            continue;
        }
        if ((unsigned char)*c >= 0x20)
            tbuf_putc(&line, *c);
        else if (line.len && line.data[line.len - 1] != ' ' && c[1])
            tbuf_puts(&line, "; ");
    }
    return tbuf_detach(&line);
}

trove_err store_exec(store *st, const char *sql)
{
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return store_fail(st, sql);
    return TROVE_OK;
}

static void sql_docid(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *coll = (const char *)sqlite3_value_text(argv[0]);
    const char *path = (const char *)sqlite3_value_text(argv[1]);
    char id[9];
    store_docid(coll ? coll : "", path ? path : "", id);
    sqlite3_result_text(ctx, id, 8, SQLITE_TRANSIENT);
}

static int count_tables(store *st)
{
    sqlite3_stmt *q;
    int n = -1;
    if (!(q = store_stmt_get(st, "SELECT count(*) FROM sqlite_schema")))
        return -1;
    if (sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int(q, 0);
    store_stmt_put(st, q);
    return n;
}

/* The schema version in meta, 0 when there is none; -1 when the file has
 * no meta table at all (not a trove index); -2 when reading it failed on a
 * damaged file (the connection's error says how). */
static int schema_version(store *st)
{
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "SELECT value FROM meta WHERE key = 'schema_version'"))) {
        int code = sqlite3_errcode(st->db);
        return code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? -2 : -1;
    }
    int version = 0, step = sqlite3_step(q);
    if (step == SQLITE_ROW)
        version = sqlite3_column_int(q, 0);
    store_stmt_put(st, q);
    return step == SQLITE_ROW || step == SQLITE_DONE ? version : -2;
}

static trove_err check_schema(store *st)
{
    if (count_tables(st) == 0)   /* an index truncated to nothing reads as an empty database */
        return store_damaged(st->path, "the file holds no tables; truncated?");
    int version = schema_version(st);
    if (version == -2)
        return store_fail(st, "reading the schema version");
    if (version < 0)
        return trove_fail(TROVE_ECORRUPT, "%s is not a trove index; point --index or "
                          "TROVE_INDEX elsewhere, or delete it and run `trove update`", st->path);
    if (version > 0 && version < STORE_SCHEMA_VERSION)
        return trove_fail(TROVE_ECORRUPT, "%s: index schema version %d is older than this "
                          "trove's %d; run `trove update` once to upgrade it", st->path, version,
                          STORE_SCHEMA_VERSION);
    if (version != STORE_SCHEMA_VERSION)
        return trove_fail(TROVE_ECORRUPT, "%s: index schema version %d, this trove needs %d; "
                          "rebuild it with `trove update --rebuild`", st->path, version,
                          STORE_SCHEMA_VERSION);
    return TROVE_OK;
}

/* SQL trove_lang(text): the ISO 639-1 code lang_detect() gives, "" if none. */
static void sql_lang(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *text = (const char *)sqlite3_value_text(argv[0]);
    int len = sqlite3_value_bytes(argv[0]);
    const char *code = text ? lang_code(lang_detect(text, (size_t)len)) : "";
    sqlite3_result_text(ctx, code, -1, SQLITE_STATIC);
}

/* SQL trove_tkey(path, permalink): transl_key(), the translation key. */
static void sql_tkey(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *path = (const char *)sqlite3_value_text(argv[0]);
    /* typed frontmatter (schema 6): `permalink: 2024` is a number */
    const char *permalink = sqlite3_value_type(argv[1]) != SQLITE_NULL
                                ? (const char *)sqlite3_value_text(argv[1]) : NULL;
    char *key = transl_key(path ? path : "", permalink);
    if (key)
        sqlite3_result_text(ctx, key, -1, free);
    else
        sqlite3_result_null(ctx);
}

/* SQL trove_name_date(path): the date in the note's file name (days since
 * 1970-01-01, text/date.h), NULL when it has none. */
/* The date in a note's file name (days since 1970-01-01, text/date.h); 0
 * when none. */
static int name_date(const char *path, double *days)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    int64_t d;
    if (!date_from_name(name, strlen(name), &d))
        return 0;
    *days = (double)d;
    return 1;
}

static void sql_name_date(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *path = (const char *)sqlite3_value_text(argv[0]);
    double days;
    if (path && name_date(path, &days))
        sqlite3_result_double(ctx, days);
    else
        sqlite3_result_null(ctx);
}

/* SQL trove_note_ok(id): store_set_note_filter() says. */
static void sql_note_ok(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    store *st = sqlite3_user_data(ctx);
    int ok = st->note_filter ? st->note_filter(st->note_filter_ctx, sqlite3_value_int64(argv[0]))
                             : 1;
    if (ok < 0)
        sqlite3_result_error(ctx, "reading a note's metadata failed", -1);
    else
        sqlite3_result_int(ctx, ok);
}

void store_set_note_filter(store *st, store_note_filter_fn fn, void *ctx)
{
    st->note_filter = fn;
    st->note_filter_ctx = ctx;
}

/* SQL trove_meta_retype(meta): md_meta_retype(), for the v6 upgrade. */
static void sql_meta_retype(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    char *out = md_meta_retype((const char *)sqlite3_value_text(argv[0]));
    if (out)
        sqlite3_result_text(ctx, out, -1, free);
    else
        sqlite3_result_null(ctx);
}

/* SQL trove_lang_in(lang, path, codes): whether the note of detected
 * language `lang` at `path` is in one of the space-separated, normalised
 * `codes` (transl_lang_matches): the --lang filter. */
static void sql_lang_in(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *lang = (const char *)sqlite3_value_text(argv[0]);
    const char *path = (const char *)sqlite3_value_text(argv[1]);
    const char *codes = (const char *)sqlite3_value_text(argv[2]);
    int in = 0;
    for (const char *c = codes ? codes : ""; *c && !in;) {
        size_t len = strcspn(c, " ");
        char want[16];
        if (len > 0 && len < sizeof want) {
            memcpy(want, c, len);
            want[len] = '\0';
            in = transl_lang_matches(lang, path, want);
        }
        c += len;
        while (*c == ' ')
            c++;
    }
    sqlite3_result_int(ctx, in);
}

static int docs_has_column(store *st, const char *name)
{
    sqlite3_stmt *q;
    int has = 0;
    if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM pragma_table_info('docs') WHERE name = ?", -1,
                           &q, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
    has = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return has;
}

/* Bring an index of an older schema up to this one, inside the caller's
 * transaction, without re-reading any note. Each step upgrades by one
 * version; a later schema change adds the next step. */
static trove_err upgrade_schema(store *st, int version)
{
    trove_err rc = TROVE_OK;
    if (version == 1 && rc == TROVE_OK) {
        /* v2: docs.lang, detected from the indexed chunk text (the same
         * text, less the frontmatter, the indexer detects from). */
        rc = store_exec(st, "ALTER TABLE docs ADD COLUMN lang TEXT NOT NULL DEFAULT ''");
        if (rc == TROVE_OK)
            rc = store_exec(st, "UPDATE docs SET lang = (SELECT trove_lang(group_concat(f.body, char(10)))"
                                " FROM chunks c JOIN chunks_fts f ON f.rowid = c.id"
                                " WHERE c.doc_id = docs.id)");
        version = 2;
    }
    if (version == 2 && rc == TROVE_OK) {
        /* v3: the vector tables, which schema_sql creates right after. */
        version = 3;
    }
    if (version == 3 && rc == TROVE_OK) {
        /* v4: the snapshot tables; the index as it is becomes snapshot 1. */
        rc = snap_upgrade(st);
        version = 4;
    }
    if (version == 4 && rc == TROVE_OK) {
        /* v5: docs.tkey, the translation key, from each note's path and
         * permalink (text/transl.h). */
        if (!docs_has_column(st, "tkey"))   /* an older index rebuilt by hand may have it */
            rc = store_exec(st, "ALTER TABLE docs ADD COLUMN tkey TEXT");
        if (rc == TROVE_OK)
            rc = store_exec(st, "UPDATE docs SET tkey = trove_tkey(path, CASE WHEN"
                                " json_valid(meta) THEN json_extract(meta, '$.permalink') END)");
        if (rc == TROVE_OK)
            rc = store_exec(st, TKEY_INDEX_SQL VAULT_STATS_SQL);
        version = 5;
    }
    if (version == 5 && rc == TROVE_OK) {
        /* v6: frontmatter values typed (numbers, booleans, null), and the
         * fields table, filled from every note's meta and file name. */
        rc = store_exec(st, "UPDATE docs SET meta = coalesce(trove_meta_retype(meta), meta)"
                            " WHERE meta IS NOT NULL");
        if (rc == TROVE_OK)
            rc = store_exec(st, FIELDS_SCHEMA_SQL
                            "DELETE FROM fields;"   /* a hand-made table: filled once, here */
                            STORE_FIELDS_INSERT("1") ";");
        version = 6;
    }
    if (version == 6 && rc == TROVE_OK) {
        /* v7: note_meta, one packed metadata record per note (store_nrec.h),
         * from the fields, tags and aliases the index holds. */
        rc = store_exec(st, STORE_NREC_SCHEMA_SQL);
        if (rc == TROVE_OK)
            rc = store_nrec_write_each(st, "SELECT id FROM docs", 0);
        version = 7;
    }
    if (version == 7 && rc == TROVE_OK) {
        /* v8: note_map, the chunk -> note and note -> date arrays
         * (store_nmap.h); filled by the next step. */
        rc = store_exec(st, STORE_NMAP_SCHEMA_SQL);
        version = 8;
    }
    if (version == 8 && rc == TROVE_OK) {
        /* v9: note_map's rows numbered segment * STORE_NMAP_KINDS + kind,
         * with the field columns (kind 2) and the chunks' lengths in tokens
         * (kind 7): every row rebuilt from the chunks, records and FTS5
         * sizes the index holds, no note re-read. */
        rc = store_exec(st, "DELETE FROM note_map");
        store_nmap_mark_all(st);
        if (rc == TROVE_OK)
            rc = store_nmap_flush(st);
        version = 9;
    }
    if (version == 9 && rc == TROVE_OK) {
        /* v10: note_map kind 3, each note's in-degree and language (the
         * link prior's inputs, read per search candidate): the rows
         * rebuilt from the index, no note re-read. */
        store_nmap_mark_all(st);
        rc = store_nmap_flush(st);
        version = 10;
    }
    if (rc == TROVE_OK) {
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
                 STORE_SCHEMA_VERSION);
        rc = store_exec(st, sql);
    }
    /* A random identity, so that a process caching immutable rows (the
     * daemon's vector segments) never takes another index's segment of the
     * same id for its own, even when a file is recreated at the same path. */
    if (rc == TROVE_OK)
        rc = store_exec(st, "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', "
                            "lower(hex(randomblob(16))))");
    return rc;
}

/* 1 if the file holds tables but no trove meta table: someone else's data. */
static int foreign_database(store *st)
{
    sqlite3_stmt *q;
    int foreign = 0;
    if (!(q = store_stmt_get(st, "SELECT count(*), sum(name = 'meta') FROM sqlite_schema"
                           " WHERE type = 'table'")))
        return 0;
    if (sqlite3_step(q) == SQLITE_ROW)
        foreign = sqlite3_column_int(q, 0) > 0 && sqlite3_column_int(q, 1) == 0;
    store_stmt_put(st, q);
    return foreign;
}

static trove_err create_schema(store *st)
{
    trove_err rc = store_exec(st, "BEGIN IMMEDIATE");
    if (rc)
        return rc;
    if (foreign_database(st)) {
        store_exec(st, "ROLLBACK");
        return trove_fail(TROVE_ECORRUPT, "%s is not a trove index; point --index or "
                          "TROVE_INDEX elsewhere, or delete it and run `trove update`", st->path);
    }
    int version = schema_version(st);
    if (version > 0 && version < STORE_SCHEMA_VERSION)
        rc = upgrade_schema(st, version);
    if (rc == TROVE_OK && (rc = store_exec(st, schema_sql)) == TROVE_OK) {
        char sql[128];
        snprintf(sql, sizeof sql,
                 "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '%d')",
                 STORE_SCHEMA_VERSION);
        rc = store_exec(st, sql);
    }
    /* A random identity, so that a process caching immutable rows (the
     * daemon's vector segments) never takes another index's segment of the
     * same id for its own, even when a file is recreated at the same path. */
    if (rc == TROVE_OK)
        rc = store_exec(st, "INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', "
                            "lower(hex(randomblob(16))))");
    if (rc) {
        store_exec(st, "ROLLBACK");
        return rc;
    }
    return store_exec(st, "COMMIT");
}

/* ---- the verified stamp ----
 * Beside the index, "<index>-verified" records (device, inode, size, mtime)
 * of the file as trove last left it or last checked it. A file that no
 * longer matches was changed by something else (a copy, a crash, a disk
 * tool, a truncation): it gets a quick_check before anything reads it, so
 * damage is reported by every command, not only by those whose pages it
 * hit. A matching file costs one stat and one small read.
 *
 * A second line, "updated SECS INDEX_ID", is the time of the last `update`
 * that found nothing to change (store_mark_updated): such an update
 * writes no page of the index, and this small file is where its time
 * goes. Every rewrite of the stamp keeps the line; store_last_update
 * believes it only for the index whose meta 'index_id' it names. */

#define STAMP_MAX 256

static char *stamp_path(const char *path)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s-verified", path);
    return tbuf_detach(&b);
}

static void stamp_format(const struct stat *sb, char *out, size_t cap)
{
    snprintf(out, cap, "trove-verified 1 %llu %llu %lld %lld.%09ld\n",
             (unsigned long long)sb->st_dev, (unsigned long long)sb->st_ino,
             (long long)sb->st_size, (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec);
}

/* The stamp file's text (NUL-terminated, at most STAMP_MAX - 1 bytes);
 * "" when there is none. */
static void stamp_read(const char *path, char have[STAMP_MAX])
{
    memset(have, 0, STAMP_MAX);
    char *sp = stamp_path(path);
    int fd = open(sp, O_RDONLY | O_CLOEXEC);
    free(sp);
    if (fd < 0)
        return;
    ssize_t n = read(fd, have, STAMP_MAX - 1);
    close(fd);
    if (n < 0)
        have[0] = '\0';
}

/* The line after the first of a stamp's text ("" when none). */
static const char *stamp_rest(const char *have)
{
    const char *nl = strchr(have, '\n');
    return nl ? nl + 1 : "";
}

static int stamp_matches(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    char want[STAMP_MAX], have[STAMP_MAX];
    stamp_format(&sb, want, sizeof want);
    stamp_read(path, have);
    return strncmp(have, want, strlen(want)) == 0;
}

/* Record `sb` as the healthy state of `path`, keeping the stamp's
 * "updated" line unless `updated` gives a new one; nothing is written
 * when the file would not change. Best effort (a read-only folder only
 * costs a quick_check per run). */
static void stamp_write(const char *path, const struct stat *sb, const char *updated)
{
    char line[STAMP_MAX], have[STAMP_MAX];
    stamp_format(sb, line, sizeof line);
    stamp_read(path, have);
    const char *rest = updated ? updated : stamp_rest(have);
    if (strncmp(rest, "updated ", 8) != 0 || strlen(line) + strlen(rest) >= STAMP_MAX)
        rest = "";
    size_t ll = strlen(line);
    snprintf(line + ll, sizeof line - ll, "%s", rest);
    if (strcmp(line, have) == 0)
        return;
    char *sp = stamp_path(path);
    tbuf tmp = {0};
    tbuf_printf(&tmp, "%s.%ld", sp, (long)getpid());
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    if (f) {
        int ok = fputs(line, f) >= 0;
        ok &= fclose(f) == 0;
        if (!ok || rename(tmp.data, sp) != 0)
            unlink(tmp.data);
    }
    tbuf_free(&tmp);
    free(sp);
}

trove_err store_mark_updated(store *st)
{
    char now[32];
    snprintf(now, sizeof now, "%lld", (long long)store_snapshot_now());
    if (sqlite3_total_changes64(st->db) != st->changes_at_begin || sqlite3_get_autocommit(st->db))
        return store_meta_set(st, "last_update", now);
    char *id = NULL;
    trove_err rc = store_meta_get(st, "index_id", &id);
    if (rc == TROVE_OK && id)
        snprintf(st->noop_update, sizeof st->noop_update, "updated %s %.64s\n", now, id);
    free(id);
    return rc;
}

trove_err store_last_update(store *st, int64_t *when)
{
    char *v = NULL, *id = NULL;
    trove_err rc = store_meta_get(st, "last_update", &v);
    if (rc == TROVE_OK)
        rc = store_meta_get(st, "index_id", &id);
    *when = rc == TROVE_OK && v ? strtoll(v, NULL, 10) : 0;
    char have[STAMP_MAX], sid[72];
    long long secs;
    if (rc == TROVE_OK && id) {
        stamp_read(st->path, have);
        if (sscanf(stamp_rest(have), "updated %lld %71s", &secs, sid) == 2 &&
            strcmp(sid, id) == 0 && secs > *when)
            *when = secs;
    }
    free(v);
    free(id);
    return rc;
}

trove_err store_note_noop_update(store *st)
{
    char *id = NULL;
    trove_err rc = store_meta_get(st, "index_id", &id);
    struct stat sb;
    if (rc == TROVE_OK && id && stamp_matches(st->path) && stat(st->path, &sb) == 0) {
        char line[STAMP_MAX];
        snprintf(line, sizeof line, "updated %lld %.64s\n", (long long)store_snapshot_now(), id);
        stamp_write(st->path, &sb, line);
    }
    free(id);
    return rc;
}

trove_err store_data_version(store *st, int64_t *v)
{
    *v = 0;
    sqlite3_stmt *q = store_stmt_get(st, "PRAGMA data_version");
    if (!q)
        return store_fail(st, "reading the data version");
    trove_err rc = TROVE_OK;
    if (store_step(st, q, "reading the data version", &rc) > 0)
        *v = sqlite3_column_int64(q, 0);
    store_stmt_put(st, q);
    return rc;
}

trove_err store_kept_version(store *st, int64_t *v)
{
    int in_read = st->read_serial & 1 && !sqlite3_get_autocommit(st->db);
    if (in_read && st->kept_dv_serial == st->read_serial) {
        *v = st->kept_dv;
        return TROVE_OK;
    }
    trove_err rc = store_data_version(st, v);
    if (rc == TROVE_OK && in_read) {
        st->kept_dv = *v;
        st->kept_dv_serial = st->read_serial;
    }
    return rc;
}

int store_kept_stale(store *st, int64_t *at)
{
    int64_t version;
    if (store_kept_version(st, &version) != TROVE_OK) {
        trove_errclear();
        return -1;
    }
    if (version == *at)
        return 0;
    *at = version;
    return 1;
}

static trove_err verify(store *st)
{
    if (stamp_matches(st->path))
        return TROVE_OK;
    struct stat before;
    if (stat(st->path, &before) != 0)
        return TROVE_OK;    /* nothing there yet: a new index */
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "PRAGMA quick_check(1)")))
        return store_fail(st, "checking the index");
    int step = sqlite3_step(q);
    trove_err rc = TROVE_OK;
    if (step != SQLITE_ROW) {
        rc = store_fail(st, "checking the index");
    } else {
        const char *res = (const char *)sqlite3_column_text(q, 0);
        if (!res || strcmp(res, "ok") != 0) {
            st->damaged = 1;
            rc = store_damaged(st->path, "integrity check: %s", res ? res : "no answer");
        }
    }
    store_stmt_put(st, q);
    if (rc == TROVE_OK) {
        st->checked = 1;
        st->checked_sb = before;
    }
    return rc;
}

/* ---- private files ----
 * Notes are private: the index, its WAL and shared-memory files (SQLite
 * gives those the mode of the index) and the folder trove makes for it are
 * the user's alone, whatever the umask. */

static void make_private(const char *path, const char *suffix)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s%s", path, suffix);
    struct stat sb;
    if (lstat(b.data, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() &&
        (sb.st_mode & 077))
        chmod(b.data, sb.st_mode & 0700);
    tbuf_free(&b);
}

static int is_dangling_link(const char *path)
{
    struct stat ls, ts;
    return lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode) && stat(path, &ts) != 0 &&
           errno == ENOENT;
}

/* Create the index file 0600 (SQLite would make it 0644 under the usual
 * umask), or close an existing one to others. 1 when it is new (empty). */
static int prepare_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST && is_dangling_link(path))
        /* O_EXCL refuses any symlink; the user's link to a file not made
         * yet is followed, so that SQLite does not create it 0644 */
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        fchmod(fd, 0600);
        close(fd);
        return 1;
    }
    make_private(path, "");
    make_private(path, "-wal");
    make_private(path, "-shm");
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size == 0;
}

static int64_t pragma_int(store *st, const char *sql)
{
    sqlite3_stmt *q;
    int64_t v = -1;
    if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Free pages are given back to the file system once they are worth it: at
 * least 1 MiB (STORE_RECLAIM_MIN_PAGES of 4 KiB) and a tenth of the file. An index made
 * with incremental auto-vacuum (every index trove creates now) truncates them
 * in place; an older one is converted by one
 * VACUUM, which rewrites the whole file once. Best effort: a busy index
 * keeps its free pages until the next commit. */
void store_reclaim(store *st, int force)
{
    int64_t free_pages = pragma_int(st, "PRAGMA freelist_count");
    int64_t pages = pragma_int(st, "PRAGMA page_count");
    if (free_pages <= 0 || pages <= 0)
        return;
    int64_t page_size = pragma_int(st, "PRAGMA page_size");
    int64_t min_pages = STORE_RECLAIM_MIN_PAGES * 4096 / (page_size >= 512 ? page_size : 4096);
    if (!force && (free_pages < min_pages || free_pages * 10 < pages))
        return;
    if (pragma_int(st, "PRAGMA auto_vacuum") == 2) {
        sqlite3_exec(st->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
        return;
    }
    if (sqlite3_exec(st->db, "PRAGMA auto_vacuum=INCREMENTAL", NULL, NULL, NULL) == SQLITE_OK)
        sqlite3_exec(st->db, "VACUUM", NULL, NULL, NULL);
}

/* SQLite counts every allocation under a global mutex for
 * sqlite3_memory_used() and heap limits, which trove never uses: off,
 * before the first connection initialises the library (a mutex pair per
 * allocation was ~5% of a cold keyword search's instructions).
 * Each connection's page cache would also start with one 20-page block
 * (SQLITE_DEFAULT_PCACHE_INITSZ, ~87 KB) whose free list is written
 * through every page of it: ~20 fresh heap pages, each a page fault (tens
 * of µs on a VM), for a cold search that reads 3 pages through the cache
 * (the file is mapped). No block: pages are allocated as they are used. */
static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)NULL, 0, 0);
}

/* Open st->db on `path` with trove's functions, tokenizer and pragmas:
 * read-only (flags STORE_READONLY), or for writing in WAL mode (a `fresh`
 * file first gets incremental auto-vacuum), or (flags STORE_BESIDE) for
 * writing a file nobody else opens, without the WAL (store_beside.c). */
trove_err store_connect(store *st, const char *path, int flags_in, int fresh)
{
    int readonly = flags_in & STORE_READONLY;
    int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    trove_err rc = TROVE_OK;
    st->rank_ready = 0;   /* trove_rank() is registered per connection */
    if (sqlite3_open_v2(path, &st->db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        return trove_fail(TROVE_EIO, "%s: cannot open index: %s", path,
                          st->db ? sqlite3_errmsg(st->db) : "out of memory");
    }
    sqlite3_busy_timeout(st->db, 5000);
    sqlite3_extended_result_codes(st->db, 0);
    if ((rc = tok_register_fts5(st->db)) != TROVE_OK)
        return rc;
    sqlite3_create_function(st->db, "trove_docid", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_docid, NULL, NULL);
    sqlite3_create_function(st->db, "trove_lang", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_lang, NULL, NULL);
    sqlite3_create_function(st->db, "trove_tkey", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_tkey, NULL, NULL);
    sqlite3_create_function(st->db, "trove_lang_in", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_lang_in, NULL, NULL);
    sqlite3_create_function(st->db, "trove_hide_path", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            store_sql_hide_path, NULL, NULL);
    sqlite3_create_function(st->db, "trove_name_date", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                            sql_name_date, NULL, NULL);
    sqlite3_create_function(st->db, "trove_meta_retype", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                            NULL, sql_meta_retype, NULL, NULL);
    sqlite3_create_function(st->db, "trove_note_ok", 1, SQLITE_UTF8, st, sql_note_ok, NULL, NULL);
    if (!readonly && !(flags_in & STORE_BESIDE)) {
        /* before the first table: a file that can shrink (store_reclaim),
         * in pages of STORE_PAGE_SIZE */
        if (fresh && ((rc = store_exec(st, "PRAGMA page_size=" STORE_PAGE_SIZE)) != TROVE_OK ||
                      (rc = store_exec(st, "PRAGMA auto_vacuum=INCREMENTAL")) != TROVE_OK))
            return rc;
        if ((rc = store_exec(st, "PRAGMA journal_mode=WAL")) != TROVE_OK) {
            /* Out of WAL mode and locked: another writer is building this
             * empty index beside it (store_beside.c). Its lock is waited
             * for at store_begin, which then finds the file moved. */
            if (rc != TROVE_EBUSY)
                return rc;
            trove_errclear();
        }
        store_exec(st, "PRAGMA synchronous=NORMAL");
    }
    store_exec(st, "PRAGMA cache_size=" STORE_READ_CACHE);
    /* Readers map the file: vector segments (megabytes per search) are then
     * copied straight from the page cache instead of through read() calls.
     * As much as SQLite maps (its compile-time cap clamps this: 2 GiB less
     * 64 KiB on Linux): a 1M-note index is 2.1 GB, and a page past the map
     * costs a pread and a page-cache copy (-8-10% of a cold keyword
     * search's CPU at 1M, docs/performance.md session 35). */
    if (readonly)
        store_exec(st, "PRAGMA mmap_size=4294967296");
    store_exec(st, "PRAGMA temp_store=MEMORY");
    return TROVE_OK;
}

trove_err store_open(const char *path, int flags_in, store **out)
{
    static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
    pthread_once(&setup_once, sqlite_setup);
    *out = NULL;
    int readonly = flags_in & STORE_READONLY;
    struct stat sb;
    if (readonly && stat(path, &sb) != 0)
        return trove_fail(TROVE_ENOENT, "%s: no index yet; add a collection with `trove collection "
                          "add PATH` and run `trove update`", path);
    if (!readonly && fs_mkdir_parents_private(path) != 0)
        return trove_fail(TROVE_EIO, "cannot create the folder of %s: %s", path, strerror(errno));
    int fresh = !readonly && prepare_file(path);

    store *st = xcalloc(1, sizeof *st);
    st->path = xstrdup(path);
    st->snap_ret = STORE_RETENTION_DEFAULT;
    strcpy(st->snap_kind, "update");
    trove_err rc = store_connect(st, path, readonly ? STORE_READONLY : 0, fresh);
    if (rc)
        goto fail;
    if (!(flags_in & STORE_NOVERIFY) && (rc = verify(st)) != TROVE_OK)
        goto fail;
    if (!readonly && (rc = create_schema(st)) != TROVE_OK)
        goto fail;
    if ((rc = check_schema(st)) != TROVE_OK)
        goto fail;
    /* Stamped only once it is known to be a trove index: no litter beside
     * someone else's database. */
    if (st->checked)
        stamp_write(path, &st->checked_sb, NULL);
    st->stamp_on_close = !readonly;
    st->beside_ok = !readonly && store_beside_allowed();
    *out = st;
    return TROVE_OK;
fail:
    store_close(st);
    return rc;
}

/* Runs one statement with up to two text parameters (b NULL: one); a
 * failure is reported as `what`, or as the statement when what is NULL. */
static trove_err exec_bound_as(store *st, const char *sql, const char *a, const char *b,
                               const char *what)
{
    sqlite3_stmt *s;
    if (!(s = store_stmt_get(st, sql)))
        return store_fail(st, what ? what : sql);
    sqlite3_bind_text(s, 1, a, -1, SQLITE_STATIC);
    if (b)
        sqlite3_bind_text(s, 2, b, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    store_stmt_put(st, s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? TROVE_OK : store_fail(st, what ? what : sql);
}

static trove_err exec_bound(store *st, const char *sql, const char *a, const char *b)
{
    return exec_bound_as(st, sql, a, b, NULL);
}

static trove_err meta_put(store *st, const char *key, const char *value, const char *what)
{
    return value ? exec_bound_as(st, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", key,
                                 value, what)
                 : exec_bound_as(st, "DELETE FROM meta WHERE key = ?", key, NULL, what);
}

static int str_same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The check itself: ask the tokenizer for its version (this loads the
 * segmenters: the Chinese dictionary, verified, and MeCab), rebuild the
 * full-text tables when it is not the recorded one, and record the
 * version and `stamp` where they changed. */
static trove_err tokenizer_sync_now(store *st, const char *have, const char *have_stamp,
                                    const char *stamp, int64_t n_docs)
{
    const char *version = tok_version();
    trove_err rc = TROVE_OK;
    if (!str_same(have, version)) {
        if (n_docs > 0) {
            if ((rc = store_exec(st, "INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")) ||
                (rc = store_exec(st, "INSERT INTO titles_fts(titles_fts) VALUES('rebuild')")))
                return rc;
            st->tok_rebuilt = 1;
            store_nmap_mark_all(st);   /* the chunks' lengths in tokens changed */
        }
        rc = meta_put(st, "tokenizer", version, "recording the tokenizer version");
    }
    if (rc == TROVE_OK && !str_same(have_stamp, stamp))
        rc = meta_put(st, "tokenizer_stamp", stamp, "recording the tokenizer stamp");
    return rc;
}

/* Read the recorded version, stamp and the number of notes. */
static trove_err tokenizer_recorded(store *st, char **have, char **have_stamp, int64_t *n_docs)
{
    *have = *have_stamp = NULL;
    *n_docs = 0;
    sqlite3_stmt *q;
    if (!(q = store_stmt_get(st, "SELECT (SELECT value FROM meta WHERE key = 'tokenizer'),"
                           " (SELECT value FROM meta WHERE key = 'tokenizer_stamp'),"
                           " (SELECT count(*) FROM docs)")))
        return store_fail(st, "reading the tokenizer version");
    trove_err rc = TROVE_OK;
    if (store_step(st, q, "reading the tokenizer version", &rc) > 0) {
        const char *v = (const char *)sqlite3_column_text(q, 0);
        const char *sv = (const char *)sqlite3_column_text(q, 1);
        *have = v ? xstrdup(v) : NULL;
        *have_stamp = sv ? xstrdup(sv) : NULL;
        *n_docs = sqlite3_column_int64(q, 2);
    }
    store_stmt_put(st, q);
    return rc;
}

trove_err store_tokenizer_sync(store *st)
{
    st->tok_pending = 0;
    st->tok_rebuilt = 0;
    char *have, *have_stamp;
    int64_t n_docs;
    trove_err rc = tokenizer_recorded(st, &have, &have_stamp, &n_docs);
    if (rc)
        return rc;   /* not "no version": that would rebuild the full-text tables */
    char *stamp = tok_stamp() ? xstrdup(tok_stamp()) : NULL;
    if (have && stamp && str_same(have_stamp, stamp))
        st->tok_pending = 1;   /* checked at the first full-text write, if any */
    else
        rc = tokenizer_sync_now(st, have, have_stamp, stamp, n_docs);
    free(have);
    free(have_stamp);
    free(stamp);
    return rc;
}

/* The check store_tokenizer_sync put off, before the transaction's first
 * write of full-text rows (a delete tokenizes the stored text too). */
static trove_err tokenizer_ready(store *st)
{
    if (!st->tok_pending)
        return TROVE_OK;
    st->tok_pending = 0;
    char *have, *have_stamp;
    int64_t n_docs;
    trove_err rc = tokenizer_recorded(st, &have, &have_stamp, &n_docs);
    if (rc == TROVE_OK)
        rc = tokenizer_sync_now(st, have, have_stamp, have_stamp, n_docs);
    free(have);
    free(have_stamp);
    return rc;
}

trove_err store_tokenizer_current(store *st, int *same)
{
    *same = 0;
    char *have = NULL, *have_stamp = NULL;
    trove_err rc = store_meta_get(st, "tokenizer", &have);
    if (rc == TROVE_OK)
        rc = store_meta_get(st, "tokenizer_stamp", &have_stamp);
    const char *stamp = tok_stamp();
    *same = rc == TROVE_OK && have && have_stamp && stamp && strcmp(have_stamp, stamp) == 0;
    free(have);
    free(have_stamp);
    return rc;
}

int store_tokenizer_rebuilt(const store *st)
{
    return st->tok_rebuilt;
}

/* A writer leaves no WAL behind. SQLite's close checkpoints and deletes it
 * only when no other connection has the file open; with a daemon's readers
 * open (a watcher update, a `trove update` beside the daemon) it stayed, and
 * every later process that opened the index first (each cold search once
 * the daemon was gone) replayed all of it before its first read: a
 * 12.9 MB WAL (one tokenizer rebuild of the tldr pages) cost each cold
 * search 3,152 reads and ~30% more CPU (docs/performance.md, session 31,
 * w-cvec). A TRUNCATE checkpoint works beside idle readers; one reading
 * right now makes it fail at once (no busy wait), leaving what
 * the close's own checkpoint leaves. */
static void wal_truncate(sqlite3 *db)
{
    sqlite3_busy_timeout(db, 0);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

/* Every cached statement finalized (before db is closed or replaced). */
void store_stmt_clear(store *st)
{
    for (size_t i = 0; i < st->n_cached; i++) {
        sqlite3_finalize(st->cached[i].s);
        free(st->cached[i].sql);
    }
    st->n_cached = 0;
}

void store_close(store *st)
{
    if (!st)
        return;
    if (st->beside)
        store_beside_discard(st);   /* a build never committed */
    store_stmt_clear(st);
    free(st->dead);
    store_nmap_forget(st);
    store_nmap_kept_free(st);
    store_lens_free(st);
    store_posts_free(st);
    store_rank_forget_all(st);
    free(st->df);
    free(st->snap_note);
    free(st->vside_id);
    if (st->stamp_on_close && !st->damaged)
        wal_truncate(st->db);
    sqlite3_close_v2(st->db);
    /* After the close (and its checkpoint) the file is as this writer left
     * it: record that, so readers need no check until someone else
     * changes it. */
    struct stat sb;
    if (st->stamp_on_close && !st->damaged && stat(st->path, &sb) == 0)
        stamp_write(st->path, &sb, st->noop_update[0] ? st->noop_update : NULL);
    free(st->path);
    free(st);
}

sqlite3 *store_db(store *st)
{
    return st->db;
}

const char *store_path(const store *st)
{
    return st->path;
}

int store_file_moved(sqlite3 *db)
{
    int moved = 0;
    return sqlite3_file_control(db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved;
}

trove_err store_begin(store *st)
{
    if (st->beside_ok)
        store_beside_try(st);
    st->changes_at_begin = sqlite3_total_changes64(st->db);
    /* A write transaction's pages stay in the cache until the commit:
     * spilled to the WAL early, they are written, read back and written
     * again (a fresh tldr index: 25% more WAL writes at 32 MB). The cache
     * only grows as pages are touched; the commit or rollback shrinks it
     * back (256 MB: a 1M-note update, whose index outgrows any cache,
     * spills a part, not all of it). */
    trove_err rc = store_exec(st, "BEGIN IMMEDIATE");
    if (rc == TROVE_OK && !st->beside && store_file_moved(st->db)) {
        /* Another writer renamed a new file in (a build beside, a rebuild)
         * while this one waited for the old file's lock: write the new. */
        sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
        store_stmt_clear(st);
        sqlite3_close_v2(st->db);
        st->db = NULL;
        rc = store_connect(st, st->path, 0, 0);
        if (rc == TROVE_OK)
            rc = store_exec(st, "BEGIN IMMEDIATE");
        st->changes_at_begin = sqlite3_total_changes64(st->db);
    }
    if (rc == TROVE_OK)
        store_exec(st, "PRAGMA cache_size=" STORE_WRITE_CACHE);
    return rc;
}

trove_err store_commit(store *st)
{
    trove_err rc = store_beside_indexes(st);
    if (rc == TROVE_OK)
        rc = store_vec_fold(st);
    if (rc == TROVE_OK)
        rc = snap_finish(st);
    if (rc == TROVE_OK)
        rc = store_nmap_flush(st);
    if (rc == TROVE_OK)
        rc = store_exec(st, "COMMIT");
    if (rc == TROVE_OK && st->beside)
        rc = store_beside_finish(st);
    if (rc == TROVE_OK) {
        st->snap_committed = st->snap_id;
        st->tok_pending = 0;
        snap_abort(st);   /* committed: the next transaction is a new snapshot */
        store_exec(st, "PRAGMA cache_size=" STORE_READ_CACHE);
        store_reclaim(st, 0);
        store_vside_sync(st);   /* the sealed vector segments' sidecars */
    }
    return rc;
}

int64_t store_committed_snapshot(const store *st)
{
    return st->snap_committed;
}

void store_rollback(store *st)
{
    store_vec_discard(st);
    store_nmap_forget(st);
    snap_abort(st);
    st->tok_pending = 0;
    st->noop_update[0] = '\0';
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    if (st->beside)
        store_beside_discard(st);
    sqlite3_exec(st->db, "PRAGMA cache_size=" STORE_READ_CACHE, NULL, NULL, NULL);
}

trove_err store_read_begin(store *st)
{
    store_rank_forget(st);
    st->read_serial |= 1;   /* odd: in a read transaction ... */
    st->read_serial += 2;   /* ... a new one */
    return store_exec(st, "BEGIN");
}

void store_read_end(store *st)
{
    store_rank_forget(st);
    st->read_serial += st->read_serial & 1;   /* even: none */
    if (!sqlite3_get_autocommit(st->db))
        sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
}

static uint64_t sql_hash(const char *sql)
{
    return str_hash(sql, strlen(sql));
}

/* The slot a new statement goes to: a free one, else the least recently
 * used one that is not out (finalized here); NULL when every slot is out. */
static store_cached_stmt *cache_slot(store *st)
{
    if (st->n_cached < STORE_STMT_CACHE)
        return &st->cached[st->n_cached++];
    store_cached_stmt *lru = NULL;
    for (size_t i = 0; i < st->n_cached; i++)
        if (!st->cached[i].out && (!lru || st->cached[i].used < lru->used))
            lru = &st->cached[i];
    if (lru) {
        sqlite3_finalize(lru->s);
        free(lru->sql);
        memset(lru, 0, sizeof *lru);
    }
    return lru;
}

sqlite3_stmt *store_stmt_get(store *st, const char *sql)
{
    uint64_t h = sql_hash(sql);
    int known = 0;
    st->clock++;
    for (size_t i = 0; i < st->n_cached && !known; i++) {
        store_cached_stmt *c = &st->cached[i];
        if (c->hash != h || strcmp(c->sql, sql) != 0)
            continue;
        if (!c->out) {
            c->out = 1;
            c->used = st->clock;
            return c->s;
        }
        known = 1;   /* in use further up: compile another, uncached */
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v3(st->db, sql, -1, known ? 0 : SQLITE_PREPARE_PERSISTENT, &s, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(s);
        return NULL;
    }
    store_cached_stmt *slot = known ? NULL : cache_slot(st);
    if (slot)
        *slot = (store_cached_stmt){xstrdup(sql), h, st->clock, s, 1};
    return s;
}

void store_stmt_put(store *st, sqlite3_stmt *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < st->n_cached; i++) {
        if (st->cached[i].s == s) {
            /* Reset ends its read of the index: a kept statement must not
             * pin an old snapshot of the WAL. */
            sqlite3_reset(s);
            sqlite3_clear_bindings(s);
            st->cached[i].out = 0;
            return;
        }
    }
    sqlite3_finalize(s);   /* not kept: compiled for a nested or overflowing use */
}

int store_blob_equals(store *st, const char *sql, int64_t id, const tbuf *want,
                      const char *what, trove_err *rc)
{
    sqlite3_stmt *s = store_stmt_get(st, sql);
    if (!s) {
        *rc = store_fail(st, what);
        return 0;
    }
    sqlite3_bind_int64(s, 1, id);
    const void *have = NULL;
    size_t len = 0;
    if (store_step(st, s, what, rc) > 0) {
        have = sqlite3_column_blob(s, 0);
        len = (size_t)sqlite3_column_bytes(s, 0);
    }
    int same = len == want->len && (len == 0 || memcmp(have, want->data, len) == 0);
    store_stmt_put(st, s);
    return same;
}

int store_blob_at(store *st, sqlite3_blob **blob, const char *table, const char *column,
                  int64_t row, const char *what, trove_err *rc)
{
    int sc;
    if (*blob) {
        sc = sqlite3_blob_reopen(*blob, row);
        if (sc != SQLITE_OK) {
            /* a row that is not there aborts the handle: open afresh next time */
            sqlite3_blob_close(*blob);
            *blob = NULL;
        }
    } else {
        sc = sqlite3_blob_open(st->db, "main", table, column, row, 0, blob);
        if (sc != SQLITE_OK && *blob) {
            sqlite3_blob_close(*blob);
            *blob = NULL;
        }
    }
    if (sc == SQLITE_ERROR && !*blob)
        return 0;   /* "no such rowid" (or no such table) */
    if (sc != SQLITE_OK) {
        *rc = store_fail(st, what);
        return -1;
    }
    return 1;
}

int store_step(store *st, sqlite3_stmt *s, const char *what, trove_err *err)
{
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW)
        return 1;
    if (r == SQLITE_DONE)
        return 0;
    *err = store_fail(st, what);
    return -1;
}

trove_err store_each(store *st, const char *sql, const char *what, store_bind_fn bind,
                     store_row_fn row, void *ctx)
{
    sqlite3_stmt *s = store_stmt_get(st, sql);
    if (!s)
        return store_fail(st, what);
    if (bind)
        bind(ctx, s);
    trove_err rc = TROVE_OK;
    int r;
    while ((r = store_step(st, s, what, &rc)) > 0)
        if (row && (rc = row(ctx, s)) != TROVE_OK)
            break;
    store_stmt_put(st, s);
    return rc;
}

/* Step a write statement of the cache to completion and hand it back. */
static trove_err step_done(store *st, sqlite3_stmt *s, const char *what)
{
    trove_err rc = TROVE_OK;
    while (store_step(st, s, what, &rc) > 0)
        ;
    store_stmt_put(st, s);
    return rc;
}

void store_docid(const char *collection, const char *path, char out[9])
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", collection, path);
    uint64_t h = str_hash(b.data, b.len);
    tbuf_free(&b);
    snprintf(out, 9, "%08x", (unsigned)(h >> 32));
}

/* ---- collections ---- */

trove_err store_collection_ensure(store *st, const char *name, const char *root, int64_t *id)
{
    /* Unchanged (every update of every collection): no write, so an update
     * that finds nothing new is no snapshot. */
    sqlite3_stmt *s;
    if (!(s = store_stmt_get(st, "SELECT id, root = ?2 FROM collections WHERE name = ?1")))
        return store_fail(st, "looking up collection");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, root, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    int64_t have = step == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    int same = step == SQLITE_ROW && sqlite3_column_int(s, 1);
    store_stmt_put(st, s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return store_fail(st, "looking up collection");
    if (same) {
        *id = have;
        return TROVE_OK;
    }
    trove_err rc = have ? snap_record_coll(st, have) : TROVE_OK;
    if (rc)
        return rc;
    if (!(s = store_stmt_get(st, "INSERT INTO collections(name, root) VALUES (?1, ?2)"
                           " ON CONFLICT(name) DO UPDATE SET root = excluded.root"
                           " RETURNING id")))
        return store_fail(st, "registering collection");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, root, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW)
        *id = sqlite3_column_int64(s, 0);
    else
        rc = store_fail(st, "registering collection");
    store_stmt_put(st, s);
    if (rc == TROVE_OK && !have)
        rc = snap_record_coll_created(st, *id);
    return rc;
}


trove_err store_collection_delete(store *st, const char *name)
{
    sqlite3_stmt *s;
    if (!(s = store_stmt_get(st, "SELECT d.id FROM docs d JOIN collections c"
                           " ON c.id = d.collection_id WHERE c.name = ?")))
        return store_fail(st, "listing collection documents");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int64_t *ids = NULL;
    size_t n = 0, cap = 0;
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "listing collection documents", &rc) > 0) {
        xgrow(&ids, &cap, n + 1, sizeof *ids);
        ids[n++] = sqlite3_column_int64(s, 0);
    }
    store_stmt_put(st, s);
    for (size_t i = 0; i < n && rc == TROVE_OK; i++)
        rc = store_doc_delete(st, ids[i]);
    free(ids);
    int64_t coll_id;
    if (rc == TROVE_OK && store_collection_id(st, name, &coll_id) == TROVE_OK)
        rc = snap_record_coll(st, coll_id);
    if (rc == TROVE_OK)
        rc = exec_bound(st, "DELETE FROM collections WHERE name = ?", name, NULL);
    if (rc == TROVE_OK)
        rc = store_links_resolve(st);
    return rc;
}

trove_err store_collection_rename(store *st, const char *from, const char *to)
{
    /* Only the collection row is recorded: the docids follow from its name,
     * and an undo recomputes them (O(1) to record, O(collection) to undo). */
    int64_t coll_id;
    if (store_collection_id(st, from, &coll_id) == TROVE_OK) {
        trove_err rrc = snap_record_coll(st, coll_id);
        if (rrc)
            return rrc;
    }
    trove_err rc = exec_bound(st, "UPDATE collections SET name = ?2 WHERE name = ?1", from, to);
    if (rc == TROVE_OK)
        rc = exec_bound(st, "UPDATE docs SET docid = trove_docid(?1, path) WHERE collection_id ="
                        " (SELECT id FROM collections WHERE name = ?1)", to, NULL);
    return rc;
}

/* ---- documents ---- */

trove_err store_files(store *st, int64_t collection_id, store_file **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *s;
    /* One pass over the table in rowid order (the unary + keeps SQLite off
     * the (collection_id, path) index, whose path order cost a seek into
     * the table per row: 2.4k instructions a note). */
    if (!(s = store_stmt_get(st, "SELECT id, path, size, mtime_ns, hash FROM docs"
                           " WHERE +collection_id = ?")))
        return store_fail(st, "listing documents");
    sqlite3_bind_int64(s, 1, collection_id);
    /* The paths go to one pool (offsets first: it moves as it grows), then
     * rows and paths to one block: a no-op update of 100k notes made 100k
     * allocations here. */
    store_file *rows = NULL;
    size_t cap = 0;
    tbuf pool = {0};
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "listing documents", &rc) > 0) {
        xgrow(&rows, &cap, *n + 1, sizeof *rows);
        store_file *f = &rows[(*n)++];
        f->id = sqlite3_column_int64(s, 0);
        const char *path = (const char *)sqlite3_column_text(s, 1);
        f->path = (char *)(uintptr_t)pool.len;
        tbuf_puts(&pool, path ? path : "");
        tbuf_putc(&pool, '\0');
        f->size = sqlite3_column_int64(s, 2);
        f->mtime_ns = sqlite3_column_int64(s, 3);
        f->hash = (uint64_t)sqlite3_column_int64(s, 4);
        f->seen = 0;
    }
    store_stmt_put(st, s);
    if (rc == TROVE_OK && *n) {
        *out = xmalloc(*n * sizeof *rows + pool.len);
        char *paths = (char *)(*out + *n);
        memcpy(paths, pool.data, pool.len);
        for (size_t i = 0; i < *n; i++) {
            (*out)[i] = rows[i];
            (*out)[i].path = paths + (uintptr_t)rows[i].path;
        }
    } else {
        *n = 0;
    }
    free(rows);
    tbuf_free(&pool);
    return rc;
}

void store_files_free(store_file *files, size_t n)
{
    (void)n;
    free(files);   /* the paths live in the same block */
}

static trove_err insert_chunks(store *st, int64_t doc_id, const store_note *note,
                               const store_prep *p)
{
    const chunk_list *cl = note->chunks;
    for (size_t i = 0; i < cl->n; i++) {
        const chunk *c = &cl->items[i];
        sqlite3_stmt *s = store_stmt_get(st, chunk_insert_sql);
        if (!s)
            return store_fail(st, "preparing chunk insert");
        sqlite3_bind_int64(s, 1, doc_id);
        sqlite3_bind_int(s, 2, (int)i);
        sqlite3_bind_text(s, 3, p->headings[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, (int64_t)c->start_byte);
        sqlite3_bind_int64(s, 5, (int64_t)c->end_byte);
        sqlite3_bind_int(s, 6, c->line_start);
        sqlite3_bind_int(s, 7, c->line_end);
        trove_err rc = step_done(st, s, "inserting chunk");
        if (rc)
            return rc;
        int64_t chunk_id = sqlite3_last_insert_rowid(st->db);
        store_nmap_mark_chunk(st, chunk_id);

        s = store_stmt_get(st, chunk_fts_insert_sql);
        if (!s)
            return store_fail(st, "preparing chunk text insert");
        sqlite3_bind_int64(s, 1, chunk_id);
        sqlite3_bind_text(s, 2, p->fts_heads[i], (int)p->fts_head_lens[i], SQLITE_STATIC);
        sqlite3_bind_text(s, 3, p->fts_bodies[i], (int)p->fts_body_lens[i], SQLITE_STATIC);
        if ((rc = step_done(st, s, "indexing chunk text")))
            return rc;
    }
    return TROVE_OK;
}

/* Aliases go to `names` (link resolution, case-folded) and, with the title
 * and file name, to titles_fts (the title channel). */
static trove_err insert_names(store *st, int64_t doc_id, const store_prep *p)
{
    for (size_t i = 0; i < p->n_aliases; i++) {
        sqlite3_stmt *s = store_stmt_get(st, name_insert_sql);
        if (!s)
            return store_fail(st, "preparing alias insert");
        sqlite3_bind_int64(s, 1, doc_id);
        sqlite3_bind_text(s, 2, p->alias_keys[i], -1, SQLITE_STATIC);
        trove_err rc = step_done(st, s, "inserting alias");
        if (rc)
            return rc;
    }
    sqlite3_stmt *s = store_stmt_get(st, title_fts_insert_sql);
    if (!s)
        return store_fail(st, "preparing title insert");
    sqlite3_bind_int64(s, 1, doc_id);
    sqlite3_bind_text(s, 2, p->title, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, p->aliases, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, p->filename, -1, SQLITE_STATIC);
    return step_done(st, s, "indexing title");
}

static trove_err insert_tags(store *st, int64_t doc_id, const md_doc *md)
{
    for (size_t i = 0; i < md->n_tags; i++) {
        sqlite3_stmt *s = store_stmt_get(st, tag_insert_sql);
        if (!s)
            return store_fail(st, "preparing tag insert");
        sqlite3_bind_text(s, 1, md->tags[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, doc_id);
        trove_err rc = step_done(st, s, "inserting tag");
        if (rc)
            return rc;
    }
    return TROVE_OK;
}

/* The fields row of a note without frontmatter fields (docs.meta NULL):
 * STORE_FIELDS_OF finds only its file name's date, if any. */
static trove_err insert_name_date(store *st, int64_t doc_id, double days)
{
    sqlite3_stmt *s = store_stmt_get(st, field_insert_sql);
    if (!s)
        return store_fail(st, "preparing field insert");
    sqlite3_bind_int64(s, 1, doc_id);
    sqlite3_bind_text(s, 2, "", 0, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, 4);
    sqlite3_bind_double(s, 4, days);
    sqlite3_bind_null(s, 5);
    return step_done(st, s, "inserting field");
}

/* The note's typed frontmatter fields (store_int.h), one single-row
 * insert each (doc_fields_sql says why). */
static trove_err insert_fields(store *st, int64_t doc_id)
{
    sqlite3_stmt *q = store_stmt_get(st, doc_fields_sql);
    if (!q)
        return store_fail(st, "preparing the note's fields");
    sqlite3_bind_int64(q, 1, doc_id);
    trove_err rc = TROVE_OK;
    while (rc == TROVE_OK && store_step(st, q, "reading the note's fields", &rc) > 0) {
        sqlite3_stmt *s = store_stmt_get(st, field_insert_sql);
        if (!s) {
            rc = store_fail(st, "preparing field insert");
            break;
        }
        for (int i = 0; i < 5; i++)
            sqlite3_bind_value(s, i + 1, sqlite3_column_value(q, i));
        rc = step_done(st, s, "inserting field");
    }
    store_stmt_put(st, q);
    return rc;
}

static trove_err insert_links(store *st, int64_t doc_id, const store_note *note,
                              const store_prep *p)
{
    const md_doc *md = note->md;
    for (size_t i = 0; i < md->n_links; i++) {
        const md_link *l = &md->links[i];
        if (!l->target[0])
            continue;  /* same-note [[#heading]] links say nothing about the graph */
        sqlite3_stmt *s = store_stmt_get(st, link_insert_sql);
        if (!s)
            return store_fail(st, "preparing link insert");
        sqlite3_bind_int64(s, 1, doc_id);
        sqlite3_bind_int(s, 2, (int)l->kind);
        sqlite3_bind_text(s, 3, l->target, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, p->link_keys[i], -1, SQLITE_STATIC);
        if (l->fragment)
            sqlite3_bind_text(s, 5, l->fragment, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 6, l->line);
        trove_err rc = step_done(st, s, "inserting link");
        if (rc)
            return rc;
    }
    return TROVE_OK;
}

trove_err store_doc_insert(store *st, const store_note *note, int64_t *doc_id)
{
    store_prep own;
    const store_prep *p = note->prep;
    if (!p) {
        store_note_prepare(note, NULL, &own);
        p = &own;
    }
    trove_err rc = tokenizer_ready(st);
    sqlite3_stmt *s =
        rc ? NULL : store_stmt_get(st, p->tkey_known ? doc_insert_keyed_sql : doc_insert_sql);
    if (rc) {
        goto done;
    } else if (!s) {
        rc = store_fail(st, "preparing document insert");
        goto done;
    }
    sqlite3_bind_int64(s, 1, note->collection_id);
    sqlite3_bind_text(s, 2, note->path, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, p->path_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, p->stem, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, p->docid, 8, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, p->title, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, (int64_t)note->len);
    sqlite3_bind_int64(s, 8, note->mtime_ns);
    sqlite3_bind_int64(s, 9, (int64_t)note->hash);
    if (note->md->meta_json)
        sqlite3_bind_text(s, 10, note->md->meta_json, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 11, note->md->n_lines);
    sqlite3_bind_text(s, 12, note->lang ? note->lang : "", -1, SQLITE_STATIC);
    if (p->tkey_known && p->tkey)
        sqlite3_bind_text(s, 13, p->tkey, -1, SQLITE_STATIC);
    if ((rc = step_done(st, s, note->path)) != TROVE_OK)
        goto done;
    *doc_id = sqlite3_last_insert_rowid(st->db);
    /* Without frontmatter fields the note's fields rows and record follow
     * from what is bound here; else they are read back through SQL's JSON
     * functions (STORE_FIELDS_OF), which decide the typing. */
    int plain = !note->md->meta_json;
    double days;
    int dated = plain && name_date(note->path, &days);
    if ((rc = snap_record_doc_created(st, *doc_id)) != TROVE_OK)
        goto done;
    if (plain ? dated && (rc = insert_name_date(st, *doc_id, days)) != TROVE_OK
              : (rc = insert_fields(st, *doc_id)) != TROVE_OK)
        goto done;
    /* FTS5 replays the tokens a worker made of these texts (tok_tape) */
    tok_tape_offer(&p->tape);
    if ((rc = insert_chunks(st, *doc_id, note, p)) == TROVE_OK &&
        (rc = insert_names(st, *doc_id, p)) == TROVE_OK &&
        (rc = insert_tags(st, *doc_id, note->md)) == TROVE_OK &&
        (rc = plain ? store_nrec_write_plain(st, *doc_id, note->mtime_ns, dated ? &days : NULL,
                                             note->md->tags, note->md->n_tags, p->alias_keys,
                                             p->n_aliases)
                    : store_nrec_write(st, *doc_id)) == TROVE_OK)
        rc = insert_links(st, *doc_id, note, p);
    tok_tape_offer(NULL);
done:
    if (p == &own)
        store_prep_free(&own);
    return rc;
}

trove_err store_doc_delete(store *st, int64_t doc_id)
{
    /* First the before-image (vectors included), then the delete. */
    trove_err vrc = tokenizer_ready(st);
    if (vrc == TROVE_OK)
        vrc = snap_record_doc(st, doc_id);
    if (vrc == TROVE_OK)
        vrc = store_vec_doc_deleted(st, doc_id);
    if (vrc == TROVE_OK)
        vrc = store_nmap_mark_note_chunks(st, doc_id);
    if (vrc)
        return vrc;
    store_nmap_mark_note(st, doc_id);
    static const char *const sqls[] = {
        "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?1)",
        "DELETE FROM chunks WHERE doc_id = ?1",
        "DELETE FROM titles_fts WHERE rowid = ?1",
        "DELETE FROM names WHERE doc_id = ?1",
        "DELETE FROM tags WHERE doc_id = ?1",
        "DELETE FROM links WHERE src_doc = ?1",
        "UPDATE links SET dst_doc = NULL WHERE dst_doc = ?1",
        "DELETE FROM fields WHERE doc_id = ?1",
        "DELETE FROM note_meta WHERE doc_id = ?1",
        "DELETE FROM docs WHERE id = ?1",
    };
    for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++) {
        sqlite3_stmt *s = store_stmt_get(st, sqls[i]);
        if (!s)
            return store_fail(st, sqls[i]);
        sqlite3_bind_int64(s, 1, doc_id);
        trove_err rc = step_done(st, s, "deleting document");
        if (rc)
            return rc;
    }
    return TROVE_OK;
}

trove_err store_doc_touch(store *st, int64_t doc_id, int64_t size, int64_t mtime_ns)
{
    /* Same bytes, new file time (`touch`, `git checkout`, `cp -p`): the
     * stored time is updated in place and nothing is recorded, so a
     * transaction of touches alone is no snapshot. File times only decide
     * which files `update` re-reads; they are not history. */
    sqlite3_stmt *s = store_stmt_get(st, doc_touch_sql);
    if (!s)
        return store_fail(st, "preparing touch");
    sqlite3_bind_int64(s, 1, size);
    sqlite3_bind_int64(s, 2, mtime_ns);
    sqlite3_bind_int64(s, 3, doc_id);
    trove_err rc = step_done(st, s, "updating file times");
    return rc ? rc : store_nrec_write(st, doc_id);   /* the record holds the file time */
}

/* One pass of store_links_resolve(): every link still unresolved that
 * CANDIDATES (a join of d, the candidate notes, and s, the linking note,
 * for the link l) finds a note for gets the preferred one. The targets are
 * found first, by one read of the unresolved links (MATERIALIZED), and only
 * the links that found one are written: an UPDATE with the lookup as a
 * correlated subquery rewrote every unresolved link, found or not, and
 * evaluated the lookup inside the write (issue 20, docs/performance.md
 * "1M notes on today's main"). Ties keep the candidate the lookup meets
 * first, as before. */
#define LINKS_PASS(CANDIDATES) \
    "WITH r AS MATERIALIZED (SELECT lid, dst FROM (SELECT l.id AS lid, (SELECT d.id FROM " \
    CANDIDATES " ORDER BY d.collection_id != s.collection_id, length(d.path) LIMIT 1) AS dst" \
    " FROM links l WHERE l.dst_doc IS NULL) WHERE dst IS NOT NULL)" \
    " UPDATE links SET dst_doc = r.dst FROM r WHERE links.id = r.lid"

trove_err store_links_resolve(store *st)
{
    /* Each pass only touches links still unresolved, in order of preference:
     * the exact path, then the file name (its last path segment: the key
     * itself when it has no '/'), then a title or alias. A candidate in the
     * linking note's own collection wins, then the shortest path
     * (Obsidian's "closest" rule, simplified). */
    static const char *const passes[] = {
        LINKS_PASS("docs d, docs s WHERE s.id = l.src_doc AND d.path_key = l.target_key"),
        LINKS_PASS("docs d, docs s WHERE s.id = l.src_doc"
                   " AND d.stem = CASE WHEN instr(l.target_key, '/') = 0 THEN l.target_key"
                   " ELSE replace(l.target_key, rtrim(l.target_key, replace(l.target_key, '/', '')),"
                   " '') END"
                   " AND (instr(l.target_key, '/') = 0 OR d.path_key LIKE '%/' || l.target_key"
                   " ESCAPE '\\')"),
        LINKS_PASS("names n JOIN docs d ON d.id = n.doc_id, docs s"
                   " WHERE s.id = l.src_doc AND n.name = l.target_key"),
    };
    /* In-degrees, a note's distinct other notes linking to it (trove
     * check's invariant, store_check.c, says the same): only the rows
     * whose count changed are written (a blanket UPDATE rewrote every
     * note's row at every update), and their note map rows marked (kind 3
     * holds the in-degrees). The counts
     * come from one sort of the (target, source) pairs: a count per note
     * through links_dst fetched each link's row at random, twice. */
    static const char *const degrees[] = {
        "UPDATE docs SET in_degree = 0 WHERE in_degree != 0 AND id NOT IN"
        "  (SELECT dst_doc FROM links WHERE dst_doc IS NOT NULL AND src_doc != dst_doc)"
        " RETURNING id",
        "UPDATE docs SET in_degree = c.n FROM (SELECT dst, count(*) AS n FROM"
        "  (SELECT DISTINCT +dst_doc AS dst, src_doc FROM links"
        "   WHERE dst_doc IS NOT NULL AND src_doc != dst_doc) GROUP BY dst) AS c"
        " WHERE docs.id = c.dst AND docs.in_degree != c.n RETURNING docs.id"};
    /* the indexes a fresh build deferred, made before the passes read them */
    trove_err rc = store_beside_indexes(st);
    for (size_t i = 0; rc == TROVE_OK && i < sizeof passes / sizeof *passes; i++)
        rc = store_exec(st, passes[i]);
    for (size_t i = 0; rc == TROVE_OK && i < sizeof degrees / sizeof *degrees; i++) {
        sqlite3_stmt *s = store_stmt_get(st, degrees[i]);
        if (!s)
            return store_fail(st, "counting links");
        while (store_step(st, s, "counting links", &rc) > 0)
            store_nmap_mark_in_degree(st, sqlite3_column_int64(s, 0));
        store_stmt_put(st, s);
    }
    return rc ? rc : store_exec(st, VAULT_STATS_SQL);
}
