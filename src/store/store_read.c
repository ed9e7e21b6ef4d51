/* store reads: the SQL of every front-end read (get, multi-get, ls, status,
 * update's bookkeeping). Every step is checked, so a damaged file surfaces
 * as store_fail()'s TROVE_ECORRUPT rather than as an empty answer. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/mem.h"

/* A text column, "" for NULL (a damaged row must not crash a reader). */
static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

static trove_err prepare(store *st, const char *sql, const char *what, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(store_db(st), sql, -1, s, NULL) != SQLITE_OK) {
        *s = NULL;
        return store_fail(st, what);
    }
    return TROVE_OK;
}

/* Finish a row loop: SQLITE_DONE is success, anything else the error. */
static trove_err finish(store *st, sqlite3_stmt *s, int step_rc, const char *what)
{
    trove_err rc = step_rc == SQLITE_DONE ? TROVE_OK : store_fail(st, what);
    sqlite3_finalize(s);
    return rc;
}

/* ---- collections ---- */

trove_err store_collections(store *st, store_collection_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    static const char what[] = "listing collections";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT c.id, c.name, c.root, (SELECT count(*) FROM docs d"
                           " WHERE d.collection_id = c.id) FROM collections c ORDER BY c.name",
                           what, &s);
    if (rc)
        return rc;
    size_t cap = 0;
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        xgrow(out, &cap, *n + 1, sizeof **out);
        store_collection_row *r = &(*out)[(*n)++];
        r->id = sqlite3_column_int64(s, 0);
        r->name = col_dup(s, 1);
        r->root = col_dup(s, 2);
        r->n_docs = sqlite3_column_int64(s, 3);
    }
    rc = finish(st, s, step, what);
    if (rc) {
        store_collections_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_collections_free(store_collection_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].root);
    }
    free(rows);
}

trove_err store_collection_id(store *st, const char *name, int64_t *id)
{
    static const char what[] = "looking up a collection";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT id FROM collections WHERE name = ?", what, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        return TROVE_OK;
    }
    rc = finish(st, s, step, what);
    return rc ? rc : trove_fail(TROVE_ENOENT, "no collection named '%s' in the index", name);
}

/* ---- documents ---- */

#define DOC_COLUMNS                                                                         \
    "SELECT d.id, d.docid, c.name, c.root, d.path, d.title, d.size, d.mtime_ns, d.n_lines," \
    " d.in_degree FROM docs d JOIN collections c ON c.id = d.collection_id "

static trove_err docs_query(store *st, sqlite3_stmt *s, const char *what, size_t limit,
                            store_doc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int step = SQLITE_DONE;
    while ((!limit || *n < limit) && (step = sqlite3_step(s)) == SQLITE_ROW) {
        xgrow(out, &cap, *n + 1, sizeof **out);
        store_doc *d = &(*out)[(*n)++];
        d->id = sqlite3_column_int64(s, 0);
        const char *docid = (const char *)sqlite3_column_text(s, 1);
        snprintf(d->docid, sizeof d->docid, "%s", docid ? docid : "");
        d->collection = col_dup(s, 2);
        d->root = col_dup(s, 3);
        d->path = col_dup(s, 4);
        d->title = col_dup(s, 5);
        d->size = sqlite3_column_int64(s, 6);
        d->mtime_ns = sqlite3_column_int64(s, 7);
        d->n_lines = sqlite3_column_int(s, 8);
        d->in_degree = sqlite3_column_int(s, 9);
    }
    if (limit && *n == limit)
        step = SQLITE_DONE;
    trove_err rc = finish(st, s, step, what);
    if (rc) {
        store_docs_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

trove_err store_docs_by_docid(store *st, const char *prefix, size_t limit, store_doc **out,
                              size_t *n)
{
    static const char what[] = "looking up a docid";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, DOC_COLUMNS "WHERE substr(d.docid, 1, length(?1)) = ?1"
                           " ORDER BY c.name, d.path", what, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, prefix, -1, SQLITE_STATIC);
    return docs_query(st, s, what, limit, out, n);
}

trove_err store_docs_by_path(store *st, const char *path, size_t limit, store_doc **out, size_t *n)
{
    static const char what[] = "looking up a note path";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, DOC_COLUMNS "WHERE d.path = ?1 ORDER BY c.name", what, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    return docs_query(st, s, what, limit, out, n);
}

trove_err store_docs_list(store *st, const char *collection, const char *prefix, store_doc **out,
                          size_t *n)
{
    static const char what[] = "listing notes";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, DOC_COLUMNS "WHERE (?1 IS NULL OR c.name = ?1)"
                           " AND substr(d.path, 1, length(?2)) = ?2 ORDER BY c.name, d.path",
                           what, &s);
    if (rc)
        return rc;
    if (collection)
        sqlite3_bind_text(s, 1, collection, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, prefix ? prefix : "", -1, SQLITE_STATIC);
    return docs_query(st, s, what, 0, out, n);
}

/* Two index range reads: the rest of the key's collection (the unique
 * (collection_id, path) index, from the key on), then the collections after
 * it by name. One statement with an OR would scan the key's collection from
 * its first note. */
trove_err store_docs_after(store *st, const char *after_collection, const char *after_path,
                           size_t limit, store_doc **out, size_t *n)
{
    static const char what[] = "listing a page of notes";
    *out = NULL;
    *n = 0;
    if (limit == 0)
        return TROVE_OK;
    sqlite3_stmt *s;
    trove_err rc;
    if (after_collection) {
        rc = prepare(st, DOC_COLUMNS "WHERE c.name = ?1 AND d.path > ?2 ORDER BY d.path LIMIT ?3",
                     what, &s);
        if (rc)
            return rc;
        sqlite3_bind_text(s, 1, after_collection, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, after_path ? after_path : "", -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, (sqlite3_int64)limit);
        if ((rc = docs_query(st, s, what, limit, out, n)) != TROVE_OK || *n == limit)
            return rc;
    }
    rc = prepare(st, DOC_COLUMNS "WHERE ?1 IS NULL OR c.name > ?1 ORDER BY c.name, d.path"
                 " LIMIT ?2", what, &s);
    if (rc == TROVE_OK) {
        if (after_collection)
            sqlite3_bind_text(s, 1, after_collection, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)(limit - *n));
        store_doc *more;
        size_t n_more;
        rc = docs_query(st, s, what, limit - *n, &more, &n_more);
        if (rc == TROVE_OK && n_more) {
            *out = xrealloc(*out, (*n + n_more) * sizeof **out);
            memcpy(*out + *n, more, n_more * sizeof *more);
            *n += n_more;
        }
        free(more);
    }
    if (rc) {
        store_docs_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_docs_free(store_doc *docs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(docs[i].collection);
        free(docs[i].root);
        free(docs[i].path);
        free(docs[i].title);
    }
    free(docs);
}

/* ---- counts and meta ---- */

/* Embeds of images and other files never resolve to a note; they are
 * counted apart so that dangling note links stand out. A target whose last
 * segment has an extension other than .md is such a file. */
#define LINK_TO_FILE                                                                        \
    "lower(target) NOT LIKE '%.md' AND instr(replace(target, rtrim(target,"                 \
    " replace(target, '/', '')), ''), '.') > 0"

trove_err store_counts_get(store *st, store_counts *out)
{
    memset(out, 0, sizeof *out);
    static const char what[] = "counting notes";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM chunks),"
                           " (SELECT count(*) FROM links),"
                           " (SELECT count(*) FROM links WHERE dst_doc IS NULL AND NOT (" LINK_TO_FILE ")),"
                           " (SELECT count(*) FROM links WHERE dst_doc IS NULL AND (" LINK_TO_FILE "))",
                           what, &s);
    if (rc)
        return rc;
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        out->docs = sqlite3_column_int64(s, 0);
        out->chunks = sqlite3_column_int64(s, 1);
        out->links = sqlite3_column_int64(s, 2);
        out->dangling = sqlite3_column_int64(s, 3);
        out->to_files = sqlite3_column_int64(s, 4);
        step = SQLITE_DONE;
    }
    return finish(st, s, step, what);
}

trove_err store_meta_get(store *st, const char *key, char **value)
{
    *value = NULL;
    static const char what[] = "reading index metadata";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT value FROM meta WHERE key = ?", what, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        *value = col_dup(s, 0);
        step = SQLITE_DONE;
    }
    return finish(st, s, step, what);
}

trove_err store_meta_set(store *st, const char *key, const char *value)
{
    static const char what[] = "writing index metadata";
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", what, &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_STATIC);
    return finish(st, s, sqlite3_step(s), what);
}

trove_err store_mark_updated(store *st)
{
    return store_exec(st, "INSERT OR REPLACE INTO meta(key, value)"
                          " VALUES ('last_update', strftime('%s', 'now'))");
}

trove_err store_last_update(store *st, int64_t *when)
{
    char *v;
    trove_err rc = store_meta_get(st, "last_update", &v);
    *when = rc == TROVE_OK && v ? strtoll(v, NULL, 10) : 0;
    free(v);
    return rc;
}
