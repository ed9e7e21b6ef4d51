/* store_graph: the SQL of the link graph's reads (store_graph.h). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_graph.h"
#include "store/store_int.h"
#include "util/mem.h"
#include "util/str.h"

static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

static char *col_dup_or_null(sqlite3_stmt *s, int col)
{
    return sqlite3_column_type(s, col) == SQLITE_NULL ? NULL : col_dup(s, col);
}

/* ---- one note ---- */

typedef struct find_ctx {
    const char *collection, *path;
    store_doc *out;
    int found;
} find_ctx;

static void bind_find(void *ctx, sqlite3_stmt *s)
{
    const find_ctx *f = ctx;
    sqlite3_bind_text(s, 1, f->collection, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, f->path, -1, SQLITE_STATIC);
}

static trove_err row_find(void *ctx, sqlite3_stmt *s)
{
    find_ctx *f = ctx;
    store_doc_from_row(s, f->out);
    f->found = 1;
    return TROVE_OK;
}

trove_err store_doc_find(store *st, const char *collection, const char *path, store_doc *out)
{
    memset(out, 0, sizeof *out);
    find_ctx f = {collection, path, out, 0};
    trove_err rc = store_each(st,
        "SELECT d.id, d.docid, c.name, c.root, d.path, d.title, d.size, d.mtime_ns, d.n_lines,"
        " d.in_degree FROM docs d JOIN collections c ON c.id = d.collection_id"
        " WHERE c.name = ?1 AND d.path = ?2", "looking up a note", bind_find, row_find, &f);
    if (rc == TROVE_OK && !f.found)
        rc = trove_fail(TROVE_ENOENT, "%s/%s: not found in the index (a new file is indexed by "
                        "`trove update`)", collection, path);
    if (rc)
        store_doc_clear(out);
    return rc;
}

/* ---- links ---- */

typedef struct links_ctx {
    int64_t doc_id;
    store_link_row **out;
    size_t *n, cap;
} links_ctx;

static void bind_doc(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const links_ctx *)ctx)->doc_id);
}

/* Columns: kind, target, fragment, line, then the other note's id, docid,
 * collection, root, path, title (NULL when unresolved). */
static trove_err row_link(void *ctx, sqlite3_stmt *s)
{
    links_ctx *l = ctx;
    xgrow(l->out, &l->cap, *l->n + 1, sizeof **l->out);
    store_link_row *r = &(*l->out)[(*l->n)++];
    memset(r, 0, sizeof *r);
    r->kind = sqlite3_column_int(s, 0);
    r->target = col_dup(s, 1);
    r->fragment = col_dup_or_null(s, 2);
    r->line = sqlite3_column_int(s, 3);
    if (sqlite3_column_type(s, 4) == SQLITE_NULL)
        return TROVE_OK;
    r->doc_id = sqlite3_column_int64(s, 4);
    const char *docid = (const char *)sqlite3_column_text(s, 5);
    snprintf(r->docid, sizeof r->docid, "%s", docid ? docid : "");
    r->collection = col_dup(s, 6);
    r->root = col_dup(s, 7);
    r->path = col_dup(s, 8);
    r->title = col_dup(s, 9);
    return TROVE_OK;
}

static trove_err links_query(store *st, const char *sql, int64_t doc_id, store_link_row **out,
                             size_t *n)
{
    *out = NULL;
    *n = 0;
    links_ctx l = {doc_id, out, n, 0};
    trove_err rc = store_each(st, sql, "reading links", bind_doc, row_link, &l);
    if (rc) {
        store_link_rows_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

trove_err store_links_to(store *st, int64_t doc_id, store_link_row **out, size_t *n)
{
    return links_query(st,
        "SELECT l.kind, l.target, l.fragment, l.line, d.id, d.docid, c.name, c.root, d.path,"
        " d.title FROM links l JOIN docs d ON d.id = l.src_doc"
        " JOIN collections c ON c.id = d.collection_id"
        " WHERE l.dst_doc = ?1 AND l.src_doc != ?1 ORDER BY c.name, d.path, l.line, l.id",
        doc_id, out, n);
}

trove_err store_links_from(store *st, int64_t doc_id, store_link_row **out, size_t *n)
{
    return links_query(st,
        "SELECT l.kind, l.target, l.fragment, l.line, d.id, d.docid, c.name, c.root, d.path,"
        " d.title FROM links l LEFT JOIN docs d ON d.id = l.dst_doc"
        " LEFT JOIN collections c ON c.id = d.collection_id"
        " WHERE l.src_doc = ?1 ORDER BY l.line, l.id", doc_id, out, n);
}

void store_link_rows_free(store_link_row *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].target);
        free(r[i].fragment);
        free(r[i].collection);
        free(r[i].root);
        free(r[i].path);
        free(r[i].title);
    }
    free(r);
}

/* ---- names ---- */

typedef struct names_ctx {
    int64_t doc_id;
    char ***out;
    size_t *n, cap;
} names_ctx;

static void bind_names(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const names_ctx *)ctx)->doc_id);
}

static void add_name(names_ctx *c, const char *name, size_t len)
{
    while (len && (*name == ' ' || *name == '\t'))
        name++, len--;
    while (len && (name[len - 1] == ' ' || name[len - 1] == '\t' || name[len - 1] == '\r'))
        len--;
    if (!len)
        return;
    char *copy = xstrndup(name, len);
    char *key = str_fold(copy);
    for (size_t i = 0; i < *c->n; i++) {
        char *other = str_fold((*c->out)[i]);
        int same = strcmp(other, key) == 0;
        free(other);
        if (same) {
            free(key);
            free(copy);
            return;
        }
    }
    free(key);
    xgrow(c->out, &c->cap, *c->n + 1, sizeof **c->out);
    (*c->out)[(*c->n)++] = copy;
}

/* title, aliases (newline-separated, as titles_fts holds them), file name */
static trove_err row_names(void *ctx, sqlite3_stmt *s)
{
    names_ctx *c = ctx;
    for (int col = 0; col < 3; col++) {
        const char *t = (const char *)sqlite3_column_text(s, col);
        while (t && *t) {
            size_t len = strcspn(t, "\n");
            add_name(c, t, len);
            t += len + (t[len] == '\n');
        }
    }
    return TROVE_OK;
}

trove_err store_doc_names(store *st, int64_t doc_id, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    names_ctx c = {doc_id, out, n, 0};
    trove_err rc = store_each(st, "SELECT title, aliases, filename FROM titles_fts WHERE rowid = ?1",
                              "reading a note's names", bind_names, row_names, &c);
    if (rc) {
        store_names_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- translations ---- */

typedef struct ids_ctx {
    int64_t doc_id;
    int64_t **ids;
    size_t *n, cap;
} ids_ctx;

static void bind_ids(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const ids_ctx *)ctx)->doc_id);
}

static trove_err row_id(void *ctx, sqlite3_stmt *s)
{
    ids_ctx *c = ctx;
    xgrow(c->ids, &c->cap, *c->n + 1, sizeof **c->ids);
    (*c->ids)[(*c->n)++] = sqlite3_column_int64(s, 0);
    return TROVE_OK;
}

trove_err store_doc_translations(store *st, int64_t doc_id, int64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    ids_ctx c = {doc_id, ids, n, 0};
    trove_err rc = store_each(st,
        "SELECT ?1 UNION ALL SELECT t.id FROM docs d JOIN docs t"
        " ON t.collection_id = d.collection_id AND t.tkey = d.tkey AND t.id != d.id"
        " WHERE d.id = ?1 AND d.tkey IS NOT NULL",
        "reading a note's translations", bind_ids, row_id, &c);
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}
