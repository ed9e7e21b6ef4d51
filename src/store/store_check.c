/* store check and rebuild: SQLite's integrity check plus trove's own
 * invariants, and replacing a damaged index by a fresh one in one rename. */
#include <errno.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_int.h"
#include "store/store_nmap.h"
#include "store/store_nrec.h"
#include "store/store_vside.h"
#include "util/buf.h"
#include "util/mem.h"

#define MAX_PROBLEMS 200

typedef struct problems {
    char **items;
    size_t n, cap;
} problems;

static void add(problems *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(problems *p, const char *fmt, ...)
{
    if (p->n >= MAX_PROBLEMS)
        return;
    char raw[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    xgrow(&p->items, &p->cap, p->n + 1, sizeof *p->items);
    p->items[p->n++] = store_one_line(raw);
}

static void add_line(void *ctx, const char *line)
{
    add(ctx, "%s", line);
}

/* Each row of PRAGMA integrity_check that is not "ok". */
static void integrity(store *st, problems *p)
{
    sqlite3_stmt *s;
    if (!(s = store_stmt_get(st, "PRAGMA integrity_check(100)"))) {
        add(p, "integrity check: %s", sqlite3_errmsg(store_db(st)));
        return;
    }
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *row = (const char *)sqlite3_column_text(s, 0);
        if (row && strcmp(row, "ok") != 0)
            add(p, "integrity check: %s", row);
    }
    if (step != SQLITE_DONE)
        add(p, "integrity check: %s", sqlite3_errmsg(store_db(st)));
    store_stmt_put(st, s);
}

/* trove's invariants: each query counts the rows that break one. */
static const struct {
    const char *sql;
    const char *what;
} invariants[] = {
    {"SELECT count(*) FROM docs WHERE collection_id NOT IN (SELECT id FROM collections)",
     "notes belong to no collection"},
    {"SELECT count(*) FROM chunks WHERE doc_id NOT IN (SELECT id FROM docs)",
     "chunks belong to no note"},
    {"SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts)",
     "chunks have no full-text row"},
    {"SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)",
     "full-text rows belong to no chunk"},
    {"SELECT count(*) FROM docs WHERE id NOT IN (SELECT rowid FROM titles_fts)",
     "notes have no title row"},
    {"SELECT count(*) FROM titles_fts WHERE rowid NOT IN (SELECT id FROM docs)",
     "title rows belong to no note"},
    {"SELECT count(*) FROM names WHERE doc_id NOT IN (SELECT id FROM docs)",
     "aliases belong to no note"},
    {"SELECT count(*) FROM tags WHERE doc_id NOT IN (SELECT id FROM docs)",
     "tags belong to no note"},
    {"SELECT count(*) FROM links WHERE src_doc NOT IN (SELECT id FROM docs)",
     "links come from no note"},
    {"SELECT count(*) FROM links WHERE dst_doc IS NOT NULL AND dst_doc NOT IN (SELECT id FROM docs)",
     "links point at a note that does not exist"},
    {"SELECT count(*) FROM docs WHERE in_degree != (SELECT count(DISTINCT src_doc) FROM links"
     " WHERE dst_doc = docs.id AND src_doc != docs.id)",
     "notes have an in-degree that does not match their links"},
    {"SELECT count(*) FROM docs d JOIN collections c ON c.id = d.collection_id"
     " WHERE d.docid != trove_docid(c.name, d.path)",
     "notes have a docid that does not match their path"},
    {"SELECT count(*) FROM docs WHERE tkey IS NOT trove_tkey(path, CASE WHEN json_valid(meta)"
     " THEN json_extract(meta, '$.permalink') END)",
     "notes have a translation key that does not match their path and permalink"},
    /* rows missing, rows extra, and rows repeated (EXCEPT compares sets) */
    {"SELECT (SELECT count(*) FROM (" STORE_FIELDS_OF("1") " EXCEPT SELECT doc_id, key, type, num,"
     " txt FROM fields)) + (SELECT count(*) FROM (SELECT doc_id, key, type, num, txt FROM fields"
     " EXCEPT SELECT * FROM (" STORE_FIELDS_OF("1") "))) + abs((SELECT count(*) FROM fields)"
     " - (SELECT count(*) FROM (" STORE_FIELDS_OF("1") ")))",
     "frontmatter fields do not match their notes' frontmatter"},
    {"SELECT count(*) FROM chunks c JOIN docs d ON d.id = c.doc_id WHERE c.start_byte < 0"
     " OR c.end_byte < c.start_byte OR c.end_byte > d.size OR c.line_start < 1"
     " OR c.line_end < c.line_start OR c.line_end > max(d.n_lines, 1)",
     "chunks have byte or line ranges outside their note"},
    {"SELECT count(*) FROM (SELECT doc_id, seq FROM chunks GROUP BY doc_id, seq HAVING count(*) > 1)",
     "chunk sequence numbers repeat within a note"},
    /* Noise floors of the vector models (store_vec.h). */
    {"SELECT count(*) FROM meta WHERE key LIKE 'vec_floor:%' AND (CAST(substr(key, 11) AS INTEGER)"
     " NOT IN (SELECT id FROM vec_models) OR CAST(value AS REAL) NOT BETWEEN -1 AND 1"
     " OR instr(value, ' ') = 0)",
     "noise floors belong to no model or are out of range"},
    /* Snapshots (store_snap.c). */
    {"SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'snapshot'), 0)"
     " != coalesce((SELECT max(id) FROM snapshots), 0)",
     "current snapshot in meta is not the newest snapshot (or more)"},
    {"SELECT count(*) FROM snapshots WHERE id = (SELECT max(id) FROM snapshots) AND"
     " (docs != (SELECT count(*) FROM docs) OR chunks != (SELECT count(*) FROM chunks)"
     " OR links != (SELECT count(*) FROM links))",
     "current snapshot has counts that differ from the index"},
    {"SELECT (SELECT count(*) FROM docs) > 0 AND NOT EXISTS (SELECT 1 FROM snapshots)",
     "index holds notes but no snapshot"},
    /* kept snapshots have gaps where retention merged some away */
    {"SELECT (SELECT count(*) FROM undo_docs u WHERE u.snap <= (SELECT coalesce(min(id), 0) FROM snapshots)"
     "  OR NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = u.snap))"
     " + (SELECT count(*) FROM undo_colls u WHERE u.snap <= (SELECT coalesce(min(id), 0) FROM snapshots)"
     "  OR NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = u.snap))",
     "undo rows belong to no kept snapshot"},
    {"SELECT (SELECT count(*) FROM undo_chunks c WHERE NOT EXISTS (SELECT 1 FROM undo_docs u"
     "  WHERE u.snap = c.snap AND u.doc_id = c.doc_id AND u.kind = 1))"
     " + (SELECT count(*) FROM undo_links l WHERE NOT EXISTS (SELECT 1 FROM undo_docs u"
     "  WHERE u.snap = l.snap AND u.doc_id = l.src_doc AND u.kind = 1))"
     " + (SELECT count(*) FROM undo_names l WHERE NOT EXISTS (SELECT 1 FROM undo_docs u"
     "  WHERE u.snap = l.snap AND u.doc_id = l.doc_id AND u.kind = 1))"
     " + (SELECT count(*) FROM undo_tags l WHERE NOT EXISTS (SELECT 1 FROM undo_docs u"
     "  WHERE u.snap = l.snap AND u.doc_id = l.doc_id AND u.kind = 1))",
     "undo rows belong to no saved note"},
    {"SELECT count(*) FROM undo_docs WHERE kind != 0 AND (path IS NULL OR collection_id IS NULL"
     " OR docid IS NULL)",
     "saved notes lack their path, collection or docid"},
};

static void check_invariants(store *st, problems *p)
{
    for (size_t i = 0; i < sizeof invariants / sizeof *invariants; i++) {
        sqlite3_stmt *s;
        if (!(s = store_stmt_get(st, invariants[i].sql))) {
            add(p, "cannot check that no %s: %s", invariants[i].what, sqlite3_errmsg(store_db(st)));
            continue;
        }
        int step = sqlite3_step(s);
        if (step == SQLITE_ROW && sqlite3_column_int64(s, 0) > 0)
            add(p, "%lld %s", (long long)sqlite3_column_int64(s, 0), invariants[i].what);
        else if (step != SQLITE_ROW)
            add(p, "cannot check that no %s: %s", invariants[i].what, sqlite3_errmsg(store_db(st)));
        store_stmt_put(st, s);
    }
}

trove_err store_check(store *st, char ***out, size_t *n)
{
    problems p = {0};
    trove_err rc = store_read_begin(st);
    if (rc)
        return rc;
    integrity(st, &p);
    check_invariants(st, &p);
    store_vside_check(st, add_line, &p);
    if (store_nrec_check(st, add_line, &p) != TROVE_OK)
        add(&p, "cannot check the notes' metadata records: %s", trove_errmsg());
    if (store_nmap_check(st, add_line, &p) != TROVE_OK)
        add(&p, "cannot check the note map: %s", trove_errmsg());
    store_read_end(st);
    if (p.n == MAX_PROBLEMS)
        add(&p, "(more problems not listed)");
    *out = p.items;
    *n = p.n;
    return TROVE_OK;
}

void store_problems_free(char **problems, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(problems[i]);
    free(problems);
}

/* ---- rebuild ---- */

void store_remove_with_suffix(const char *path, const char *suffix)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s%s", path, suffix);
    unlink(b.data);
    tbuf_free(&b);
}

/* 1 when the file opens as SQLite and holds tables, none of them trove's
 * meta table: another program's database. A damaged file is not foreign. */
static int foreign(const char *path)
{
    sqlite3 *db = NULL;
    int result = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *s;
        if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(name = 'meta'), 0) FROM"
                               " sqlite_schema WHERE type = 'table'", -1, &s, NULL) == SQLITE_OK) {
            if (sqlite3_step(s) == SQLITE_ROW)
                result = sqlite3_column_int(s, 0) > 0 && sqlite3_column_int(s, 1) == 0;
            sqlite3_finalize(s);
        }
    }
    sqlite3_close(db);
    return result;
}

trove_err store_rebuild_begin(const char *path, char **tmp_path)
{
    *tmp_path = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            return trove_fail(TROVE_EINVAL, "%s is not a file; not rebuilding it", path);
        char head[16] = {0};
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(head, 1, sizeof head, f) : 0;
        if (f)
            fclose(f);
        if (sb.st_size > 0 && (got < sizeof head || memcmp(head, "SQLite format 3", 16) != 0))
            return trove_fail(TROVE_EINVAL, "%s is not an SQLite file, so not a trove index; "
                              "not deleting it (point --index or TROVE_INDEX elsewhere)", path);
        if (foreign(path))
            return trove_fail(TROVE_EINVAL, "%s holds another program's tables, not a trove "
                              "index; not deleting it (point --index or TROVE_INDEX elsewhere)", path);
    }
    tbuf b = {0};
    tbuf_printf(&b, "%s.rebuild", path);
    store_rebuild_abort(b.data);
    *tmp_path = tbuf_detach(&b);
    return TROVE_OK;
}

trove_err store_rebuild_finish(const char *tmp_path, const char *path)
{
    /* A stale WAL beside the new file would be replayed into it. */
    store_remove_with_suffix(path, "-wal");
    store_remove_with_suffix(path, "-shm");
    if (rename(tmp_path, path) != 0) {
        int e = errno;
        store_rebuild_abort(tmp_path);
        return trove_fail(TROVE_EIO, "cannot move the rebuilt index %s to %s: %s", tmp_path, path,
                          strerror(e));
    }
    /* Its vector sidecars name the rebuilt index's identity: they go with it. */
    store_vside_move(tmp_path, path);
    /* The stamp describes the same inode, size and mtime under its new name. */
    tbuf from = {0}, to = {0};
    tbuf_printf(&from, "%s-verified", tmp_path);
    tbuf_printf(&to, "%s-verified", path);
    if (rename(from.data, to.data) != 0)
        unlink(to.data);
    tbuf_free(&from);
    tbuf_free(&to);
    return TROVE_OK;
}

void store_rebuild_abort(const char *tmp_path)
{
    unlink(tmp_path);
    store_remove_with_suffix(tmp_path, "-wal");
    store_remove_with_suffix(tmp_path, "-shm");
    store_remove_with_suffix(tmp_path, "-journal");
    store_remove_with_suffix(tmp_path, "-verified");
    store_vside_drop(tmp_path);
}
