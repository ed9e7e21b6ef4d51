/* store reads: the SQL of every front-end read (get, multi-get, ls, status,
 * update's bookkeeping), run through store_each() / store_step(): every
 * step is checked, so a damaged file surfaces as store_fail()'s
 * TROVE_ECORRUPT rather than as an empty answer. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_int.h"
#include "util/mem.h"

/* A text column, "" for NULL (a damaged row must not crash a reader). */
static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

/* Parameters of a read, bound in order as text (NULL: left NULL), then
 * `limit` when the SQL has one more parameter (-1: no limit). */
typedef struct read_args {
    const char *text[2];
    int n_text;
    int64_t limit;
    void *out;       /* the caller's array pointer, grown by row_next */
    size_t *n, cap;
} read_args;

static void bind_args(void *ctx, sqlite3_stmt *s)
{
    const read_args *a = ctx;
    for (int i = 0; i < a->n_text; i++)
        if (a->text[i])
            sqlite3_bind_text(s, i + 1, a->text[i], -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(s) > a->n_text)
        sqlite3_bind_int64(s, a->n_text + 1, a->limit);
}

static void *row_next(read_args *a, size_t size)
{
    void **items = a->out;
    xgrow(items, &a->cap, *a->n + 1, size);
    return (char *)*items + (*a->n)++ * size;
}

/* ---- collections ---- */

static trove_err row_collection(void *ctx, sqlite3_stmt *s)
{
    store_collection_row *r = row_next(ctx, sizeof *r);
    r->id = sqlite3_column_int64(s, 0);
    r->name = col_dup(s, 1);
    r->root = col_dup(s, 2);
    r->n_docs = sqlite3_column_int64(s, 3);
    return TROVE_OK;
}

static trove_err list_collections(store *st, const char *sql, store_collection_row **out,
                                  size_t *n)
{
    *out = NULL;
    *n = 0;
    read_args a = {.out = out, .n = n};
    trove_err rc = store_each(st, sql, "listing collections", bind_args, row_collection, &a);
    if (rc) {
        store_collections_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

trove_err store_collections(store *st, store_collection_row **out, size_t *n)
{
    return list_collections(st, "SELECT c.id, c.name, c.root, (SELECT count(*) FROM docs d"
                                " WHERE d.collection_id = c.id) FROM collections c ORDER BY c.name",
                            out, n);
}

trove_err store_collections_uncounted(store *st, store_collection_row **out, size_t *n)
{
    return list_collections(st, "SELECT id, name, root, -1 FROM collections ORDER BY name", out, n);
}

void store_collections_free(store_collection_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].root);
    }
    free(rows);
}

static trove_err row_first_i64(void *ctx, sqlite3_stmt *s)
{
    int64_t *v = ctx;
    v[0] = sqlite3_column_int64(s, 0);
    v[1] = 1;   /* found */
    return TROVE_OK;
}

static void bind_text1(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_text(s, 1, ctx, -1, SQLITE_STATIC);
}

trove_err store_collection_id(store *st, const char *name, int64_t *id)
{
    int64_t v[2] = {0, 0};
    sqlite3_stmt *s = store_stmt_get(st, "SELECT id FROM collections WHERE name = ?");
    if (!s)
        return store_fail(st, "looking up a collection");
    bind_text1((void *)name, s);
    trove_err rc = TROVE_OK;
    if (store_step(st, s, "looking up a collection", &rc) > 0)
        row_first_i64(v, s);
    store_stmt_put(st, s);
    if (rc)
        return rc;
    if (!v[1])
        return trove_fail(TROVE_ENOENT, "no collection named '%s' in the index", name);
    *id = v[0];
    return TROVE_OK;
}

/* ---- documents ---- */

#define DOC_COLUMNS STORE_DOC_COLUMNS STORE_DOC_FROM

void store_doc_from_row(sqlite3_stmt *s, store_doc *d)
{
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

static trove_err row_doc(void *ctx, sqlite3_stmt *s)
{
    store_doc_from_row(s, row_next(ctx, sizeof(store_doc)));
    return TROVE_OK;
}

static trove_err docs_query(store *st, const char *sql, const char *what, read_args *a,
                            store_doc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    a->out = out;
    a->n = n;
    trove_err rc = store_each(st, sql, what, bind_args, row_doc, a);
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
    read_args a = {{prefix}, 1, limit ? (int64_t)limit : -1, NULL, NULL, 0};
    return docs_query(st, DOC_COLUMNS "WHERE substr(d.docid, 1, length(?1)) = ?1"
                      " ORDER BY c.name, d.path LIMIT ?2", "looking up a docid", &a, out, n);
}

trove_err store_docs_by_path(store *st, const char *path, size_t limit, store_doc **out, size_t *n)
{
    read_args a = {{path}, 1, limit ? (int64_t)limit : -1, NULL, NULL, 0};
    return docs_query(st, DOC_COLUMNS "WHERE d.path = ?1 ORDER BY c.name LIMIT ?2",
                      "looking up a note path", &a, out, n);
}

trove_err store_docs_list(store *st, const char *collection, const char *prefix, store_doc **out,
                          size_t *n)
{
    read_args a = {{collection, prefix ? prefix : ""}, 2, -1, NULL, NULL, 0};
    return docs_query(st, DOC_COLUMNS "WHERE (?1 IS NULL OR c.name = ?1)"
                      " AND substr(d.path, 1, length(?2)) = ?2 ORDER BY c.name, d.path",
                      "listing notes", &a, out, n);
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
    trove_err rc;
    if (after_collection) {
        read_args first = {{after_collection, after_path ? after_path : ""}, 2, (int64_t)limit,
                           NULL, NULL, 0};
        rc = docs_query(st, DOC_COLUMNS "WHERE c.name = ?1 AND d.path > ?2 ORDER BY d.path"
                        " LIMIT ?3", what, &first, out, n);
        if (rc != TROVE_OK || *n == limit)
            return rc;
    }
    read_args rest = {{after_collection}, 1, (int64_t)(limit - *n), NULL, NULL, 0};
    store_doc *more;
    size_t n_more;
    rc = docs_query(st, DOC_COLUMNS "WHERE ?1 IS NULL OR c.name > ?1 ORDER BY c.name, d.path"
                    " LIMIT ?2", what, &rest, &more, &n_more);
    if (rc == TROVE_OK && n_more) {
        *out = xrealloc(*out, (*n + n_more) * sizeof **out);
        memcpy(*out + *n, more, n_more * sizeof *more);
        *n += n_more;
    }
    free(more);
    if (rc) {
        store_docs_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_doc_clear(store_doc *d)
{
    free(d->collection);
    free(d->root);
    free(d->path);
    free(d->title);
    memset(d, 0, sizeof *d);
}

void store_docs_free(store_doc *docs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        store_doc_clear(&docs[i]);
    free(docs);
}

/* ---- counts and meta ---- */

/* Embeds of images and other files never resolve to a note; they are
 * counted apart so that dangling note links stand out. A target whose last
 * segment has an extension other than .md is such a file. */
#define LINK_TO_FILE                                                                        \
    "lower(target) NOT LIKE '%.md' AND instr(replace(target, rtrim(target,"                 \
    " replace(target, '/', '')), ''), '.') > 0"

static trove_err row_counts(void *ctx, sqlite3_stmt *s)
{
    store_counts *out = ctx;
    out->docs = sqlite3_column_int64(s, 0);
    out->chunks = sqlite3_column_int64(s, 1);
    out->links = sqlite3_column_int64(s, 2);
    out->dangling = sqlite3_column_int64(s, 3);
    out->to_files = sqlite3_column_int64(s, 4);
    return TROVE_OK;
}

trove_err store_counts_get(store *st, store_counts *out)
{
    memset(out, 0, sizeof *out);
    return store_each(st, "SELECT (SELECT count(*) FROM docs), (SELECT count(*) FROM chunks),"
                      " (SELECT count(*) FROM links),"
                      " (SELECT count(*) FROM links WHERE dst_doc IS NULL AND NOT (" LINK_TO_FILE ")),"
                      " (SELECT count(*) FROM links WHERE dst_doc IS NULL AND (" LINK_TO_FILE "))",
                      "counting notes", NULL, row_counts, out);
}

typedef struct doc_counts {
    int64_t id;
    store_counts counts;
} doc_counts;

static void bind_doc_counts(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((doc_counts *)ctx)->id);
}

static trove_err row_doc_counts(void *ctx, sqlite3_stmt *s)
{
    return row_counts(&((doc_counts *)ctx)->counts, s);
}

trove_err store_counts_of_doc(store *st, int64_t doc_id, store_counts *out)
{
    doc_counts c = {.id = doc_id};
    trove_err rc = store_each(st, "SELECT (SELECT count(*) FROM docs WHERE id = ?1),"
                              " (SELECT count(*) FROM chunks WHERE doc_id = ?1),"
                              " (SELECT count(*) FROM links WHERE src_doc = ?1),"
                              " (SELECT count(*) FROM links WHERE src_doc = ?1 AND dst_doc IS NULL"
                              " AND NOT (" LINK_TO_FILE ")),"
                              " (SELECT count(*) FROM links WHERE src_doc = ?1 AND dst_doc IS NULL"
                              " AND (" LINK_TO_FILE "))",
                              "counting a note", bind_doc_counts, row_doc_counts, &c);
    *out = c.counts;
    return rc;
}

static trove_err row_value(void *ctx, sqlite3_stmt *s)
{
    char **value = ctx;
    free(*value);
    *value = col_dup(s, 0);
    return TROVE_OK;
}

trove_err store_meta_get(store *st, const char *key, char **value)
{
    *value = NULL;
    sqlite3_stmt *s = store_stmt_get(st, "SELECT value FROM meta WHERE key = ?");
    if (!s)
        return store_fail(st, "reading index metadata");
    bind_text1((void *)key, s);
    trove_err rc = TROVE_OK;
    if (store_step(st, s, "reading index metadata", &rc) > 0)
        row_value(value, s);
    store_stmt_put(st, s);
    if (rc) {
        free(*value);
        *value = NULL;
    }
    return rc;
}

static void bind_meta(void *ctx, sqlite3_stmt *s)
{
    const char *const *kv = ctx;
    sqlite3_bind_text(s, 1, kv[0], -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, kv[1], -1, SQLITE_STATIC);
}

trove_err store_meta_set(store *st, const char *key, const char *value)
{
    const char *kv[2] = {key, value};
    return store_each(st, "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                      "writing index metadata", bind_meta, NULL, kv);
}

