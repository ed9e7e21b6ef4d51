/* store_pub — reads for `trove publish` (see store_pub.h). */
#include "store/store_pub.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/mem.h"

static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

/* ---- note ids ---- */

typedef struct id_list {
    int64_t a, b;       /* bound parameters */
    int64_t *ids;
    size_t n, cap;
} id_list;

static void bind_ab(void *ctx, sqlite3_stmt *s)
{
    const id_list *l = ctx;
    sqlite3_bind_int64(s, 1, l->a);
    if (sqlite3_bind_parameter_count(s) > 1)
        sqlite3_bind_int64(s, 2, l->b);
}

static trove_err row_id(void *ctx, sqlite3_stmt *s)
{
    id_list *l = ctx;
    xgrow(&l->ids, &l->cap, l->n + 1, sizeof *l->ids);
    l->ids[l->n++] = sqlite3_column_int64(s, 0);
    return TROVE_OK;
}

trove_err store_pub_doc_ids(store *st, int64_t after, size_t limit, int64_t **ids, size_t *n)
{
    id_list l = {.a = after, .b = (int64_t)limit};
    trove_err rc = store_each(st, "SELECT id FROM docs WHERE id > ? ORDER BY id LIMIT ?",
                              "listing notes to publish", bind_ab, row_id, &l);
    if (rc) {
        free(l.ids);
        l.ids = NULL;
        l.n = 0;
    }
    *ids = l.ids;
    *n = l.n;
    return rc;
}

/* ---- one note ---- */

typedef struct doc_ctx {
    int64_t id;              /* first: bind_first */
    store_pub_doc *d;
    int found;
    size_t cap;
} doc_ctx;

/* Binds ?1 to the int64 a context starts with (doc_ctx, since_ctx). */
static void bind_first(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, *(const int64_t *)ctx);
}

static trove_err row_doc(void *ctx, sqlite3_stmt *s)
{
    doc_ctx *c = ctx;
    store_pub_doc *d = c->d;
    c->found = 1;
    store_doc_from_row(s, &d->doc);
    d->lang = col_dup(s, 10);
    d->meta = col_dup(s, 11);
    d->aliases = col_dup(s, 12);
    return TROVE_OK;
}

static trove_err row_tag(void *ctx, sqlite3_stmt *s)
{
    doc_ctx *c = ctx;
    xgrow(&c->d->tags, &c->cap, c->d->n_tags + 1, sizeof *c->d->tags);
    c->d->tags[c->d->n_tags++] = col_dup(s, 0);
    return TROVE_OK;
}

static trove_err row_chunk(void *ctx, sqlite3_stmt *s)
{
    doc_ctx *c = ctx;
    xgrow(&c->d->chunks, &c->cap, c->d->n_chunks + 1, sizeof *c->d->chunks);
    store_pub_chunk *k = &c->d->chunks[c->d->n_chunks++];
    k->id = sqlite3_column_int64(s, 0);
    k->seq = sqlite3_column_int(s, 1);
    k->heading = col_dup(s, 2);
    k->body = col_dup(s, 3);
    k->start_byte = sqlite3_column_int64(s, 4);
    k->end_byte = sqlite3_column_int64(s, 5);
    k->line_start = sqlite3_column_int(s, 6);
    k->line_end = sqlite3_column_int(s, 7);
    return TROVE_OK;
}

trove_err store_pub_doc_load(store *st, int64_t doc_id, store_pub_doc *out, int *found)
{
    memset(out, 0, sizeof *out);
    doc_ctx c = {.id = doc_id, .d = out};
    trove_err rc = store_each(
        st,
        STORE_DOC_COLUMNS ", d.lang, d.meta, (SELECT aliases FROM titles_fts WHERE rowid = d.id)"
        STORE_DOC_FROM "WHERE d.id = ?",
        "reading a note to publish", bind_first, row_doc, &c);
    if (rc == TROVE_OK && c.found) {
        c.cap = 0;
        rc = store_each(st, "SELECT tag FROM tags WHERE doc_id = ? ORDER BY tag",
                        "reading a note's tags", bind_first, row_tag, &c);
    }
    if (rc == TROVE_OK && c.found) {
        c.cap = 0;
        rc = store_each(st,
                        "SELECT c.id, c.seq, c.heading, f.body, c.start_byte, c.end_byte,"
                        " c.line_start, c.line_end FROM chunks c"
                        " JOIN chunks_fts f ON f.rowid = c.id WHERE c.doc_id = ? ORDER BY c.seq",
                        "reading a note's chunks", bind_first, row_chunk, &c);
    }
    if (rc || !c.found)
        store_pub_doc_clear(out);
    *found = rc == TROVE_OK && c.found;
    return rc;
}

void store_pub_doc_clear(store_pub_doc *d)
{
    store_doc_clear(&d->doc);
    free(d->lang);
    free(d->meta);
    free(d->aliases);
    for (size_t i = 0; i < d->n_tags; i++)
        free(d->tags[i]);
    free(d->tags);
    for (size_t i = 0; i < d->n_chunks; i++) {
        free(d->chunks[i].heading);
        free(d->chunks[i].body);
    }
    free(d->chunks);
    memset(d, 0, sizeof *d);
}

/* ---- changes since a snapshot ---- */

typedef struct since_ctx {
    int64_t since;           /* first: bind_first */
    int64_t n;
} since_ctx;

static trove_err row_since_n(void *ctx, sqlite3_stmt *s)
{
    ((since_ctx *)ctx)->n = sqlite3_column_int64(s, 0);
    return TROVE_OK;
}

/* 1 when the undo rows after `since` say exactly what changed since:
 * `since` is still a kept snapshot (one merged into the next kept one
 * leaves rows that go back past it, and notes created and deleted inside
 * the merged span leave none at all), and no collection was renamed or
 * removed since (a rename changes every docid of the collection and
 * records only the collection row). The undo rows of every kept snapshot
 * after the oldest are there, and a kept `since` is at least the oldest. */
static trove_err exact_since(store *st, int64_t since, int *exact)
{
    since_ctx c = {.since = since};
    *exact = 0;
    trove_err rc = store_each(st,
                              "SELECT EXISTS(SELECT 1 FROM snapshots WHERE id = ?1) AND NOT"
                              " EXISTS(SELECT 1 FROM undo_colls WHERE snap > ?1 AND kind = 1)",
                              "checking the snapshots since the last publish", bind_first,
                              row_since_n, &c);
    if (rc == TROVE_OK)
        *exact = c.n == 1;
    return rc;
}

typedef struct before_ctx {
    int64_t doc_id, since, snap;
    int kind;
    char docid[9];
    int seen;
    store_pub_changes *out;
    size_t cap;
} before_ctx;

static void bind_before(void *ctx, sqlite3_stmt *s)
{
    const before_ctx *b = ctx;
    sqlite3_bind_int64(s, 1, b->doc_id);
    sqlite3_bind_int64(s, 2, b->snap ? b->snap : b->since);
}

static trove_err row_before(void *ctx, sqlite3_stmt *s)
{
    before_ctx *b = ctx;
    b->seen = 1;
    b->snap = sqlite3_column_int64(s, 0);
    b->kind = sqlite3_column_int(s, 1);
    const char *id = (const char *)sqlite3_column_text(s, 2);
    snprintf(b->docid, sizeof b->docid, "%s", id ? id : "");
    return TROVE_OK;
}

static trove_err row_before_seq(void *ctx, sqlite3_stmt *s)
{
    before_ctx *b = ctx;
    store_pub_changes *o = b->out;
    char id[32];
    snprintf(id, sizeof id, "%s-%d", b->docid, sqlite3_column_int(s, 0));
    xgrow(&o->before_ids, &b->cap, o->n_before + 1, sizeof *o->before_ids);
    o->before_ids[o->n_before++] = xstrdup(id);
    return TROVE_OK;
}

/* The chunk ids note doc_id had as of b->since: its earliest before-image
 * after it (kind 1), nothing when it was created after it (kind 0). */
static trove_err before_ids(store *st, before_ctx *b)
{
    b->snap = 0;
    b->seen = 0;
    trove_err rc = store_each(st,
                              "SELECT snap, kind, docid FROM undo_docs WHERE doc_id = ?1"
                              " AND snap > ?2 AND kind IN (0, 1) ORDER BY snap LIMIT 1",
                              "reading a note's before-image", bind_before, row_before, b);
    if (rc || !b->seen || b->kind != 1)
        return rc;
    return store_each(st, "SELECT seq FROM undo_chunks WHERE doc_id = ?1 AND snap = ?2"
                          " ORDER BY seq",
                      "reading a note's chunks before", bind_before, row_before_seq, b);
}

trove_err store_pub_changes_since(store *st, int64_t since, store_pub_changes *out)
{
    memset(out, 0, sizeof *out);
    int exact;
    trove_err rc = exact_since(st, since, &exact);
    if (rc || !exact)
        return rc;
    id_list l = {.a = since};
    rc = store_each(st, "SELECT DISTINCT doc_id FROM undo_docs WHERE snap > ? AND kind IN (0, 1)"
                        " ORDER BY doc_id",
                    "listing the notes changed since the last publish", bind_ab, row_id, &l);
    out->doc_ids = l.ids;
    out->n_docs = l.n;
    before_ctx b = {.since = since, .out = out};
    for (size_t i = 0; rc == TROVE_OK && i < l.n; i++) {
        b.doc_id = l.ids[i];
        rc = before_ids(st, &b);
    }
    if (rc)
        store_pub_changes_clear(out);
    else
        out->complete = 1;
    return rc;
}

void store_pub_changes_clear(store_pub_changes *c)
{
    free(c->doc_ids);
    for (size_t i = 0; i < c->n_before; i++)
        free(c->before_ids[i]);
    free(c->before_ids);
    memset(c, 0, sizeof *c);
}
