/* evalset: queries with known answers from the index (search/evalset.h). */
#include "search/evalset.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

const char *const evalset_kind_names[EVAL_N_KINDS] = {"title", "alias", "link", "description",
                                                      "heading"};

typedef struct cands {
    evalset_item *items;
    size_t n, cap;
} cands;

typedef struct build_ctx {
    const char *const *colls;
    size_t n_colls;
    cands per[EVAL_N_KINDS];
    store *st;
} build_ctx;

static int in_scope(const build_ctx *b, const char *coll)
{
    if (!b->n_colls)
        return 1;
    for (size_t i = 0; i < b->n_colls; i++)
        if (coll && strcmp(b->colls[i], coll) == 0)
            return 1;
    return 0;
}

static void add(build_ctx *b, evalset_kind kind, const char *query, size_t len, int64_t doc_id,
                int line_start, int line_end)
{
    while (len && (*query == ' ' || *query == '\t'))
        query++, len--;
    while (len && (query[len - 1] == ' ' || query[len - 1] == '\t' || query[len - 1] == '\r'))
        len--;
    if (!len)
        return;
    cands *c = &b->per[kind];
    xgrow(&c->items, &c->cap, c->n + 1, sizeof *c->items);
    c->items[c->n++] = (evalset_item){kind, xstrndup(query, len), doc_id, "", line_start,
                                      line_end};
}

/* title, aliases: columns doc id, collection, title, aliases ('\n'-separated) */
static trove_err row_names(void *ctx, sqlite3_stmt *s)
{
    build_ctx *b = ctx;
    if (!in_scope(b, (const char *)sqlite3_column_text(s, 1)))
        return TROVE_OK;
    int64_t id = sqlite3_column_int64(s, 0);
    const char *title = (const char *)sqlite3_column_text(s, 2);
    if (title)
        add(b, EVAL_TITLE, title, strlen(title), id, 0, 0);
    for (const char *a = (const char *)sqlite3_column_text(s, 3); a && *a;) {
        size_t len = strcspn(a, "\n");
        add(b, EVAL_ALIAS, a, len, id, 0, 0);
        a += len + (a[len] == '\n');
    }
    return TROVE_OK;
}

/* description: doc id, collection, the field */
static trove_err row_description(void *ctx, sqlite3_stmt *s)
{
    build_ctx *b = ctx;
    const char *d = (const char *)sqlite3_column_text(s, 2);
    if (d && in_scope(b, (const char *)sqlite3_column_text(s, 1)))
        add(b, EVAL_DESCRIPTION, d, strlen(d), sqlite3_column_int64(s, 0), 0, 0);
    return TROVE_OK;
}

/* heading: doc id, collection, heading path (0x1f-joined), lines */
static trove_err row_heading(void *ctx, sqlite3_stmt *s)
{
    build_ctx *b = ctx;
    const char *h = (const char *)sqlite3_column_text(s, 2);
    const char *last = h ? strrchr(h, '\x1f') : NULL;
    if (!last || !in_scope(b, (const char *)sqlite3_column_text(s, 1)))
        return TROVE_OK;   /* the title's own section is the title query */
    add(b, EVAL_HEADING, last + 1, strlen(last + 1), sqlite3_column_int64(s, 0),
        sqlite3_column_int(s, 3), sqlite3_column_int(s, 4));
    return TROVE_OK;
}

/* link: target doc, source collection, the link's line, the source
 * chunk's first line and text */
static trove_err row_link(void *ctx, sqlite3_stmt *s)
{
    build_ctx *b = ctx;
    if (!in_scope(b, (const char *)sqlite3_column_text(s, 1)))
        return TROVE_OK;
    int line = sqlite3_column_int(s, 2), at = sqlite3_column_int(s, 3);
    const char *p = (const char *)sqlite3_column_text(s, 4);
    for (; p && at < line; at++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return TROVE_OK;
    char *raw = xstrndup(p, strcspn(p, "\n"));
    char *q = evalset_unlink_line(raw);
    add(b, EVAL_LINK, q, strlen(q), sqlite3_column_int64(s, 0), 0, 0);
    free(q);
    free(raw);
    return TROVE_OK;
}

char *evalset_unlink_line(const char *line)
{
    tbuf b = {0};
    for (const char *p = line; *p;) {
        const char *open = p[0] == '!' && p[1] == '[' && p[2] == '[' ? p + 1 : p;
        if (open[0] == '[' && open[1] == '[') {
            const char *close = strstr(open + 2, "]]");
            if (close) {
                const char *in = open + 2, *bar = memchr(in, '|', (size_t)(close - in));
                const char *from = bar ? bar + 1 : in;
                const char *to = bar ? close : in + strcspn(in, "#|]");
                if (to > close)
                    to = close;
                tbuf_append(&b, from, (size_t)(to - from));
                p = close + 2;
                continue;
            }
        }
        if (p[0] == '[') {
            const char *mid = strstr(p + 1, "](");
            const char *end = mid ? strchr(mid + 2, ')') : NULL;
            if (mid && end && !memchr(p + 1, '\n', (size_t)(mid - p - 1))) {
                tbuf_append(&b, p + 1, (size_t)(mid - p - 1));
                p = end + 1;
                continue;
            }
        }
        tbuf_putc(&b, *p++);
    }
    char *out = xstrdup(tbuf_cstr(&b));
    tbuf_free(&b);
    return out;
}

static trove_err answer_docid(store *st, evalset_item *it)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT docid FROM docs WHERE id = ?1");
    if (!s)
        return store_fail(st, "reading an answer's docid");
    sqlite3_bind_int64(s, 1, it->doc_id);
    trove_err rc = TROVE_OK;
    if (store_step(st, s, "reading an answer's docid", &rc) > 0) {
        const char *d = (const char *)sqlite3_column_text(s, 0);
        snprintf(it->docid, sizeof it->docid, "%s", d ? d : "");
    }
    store_stmt_put(st, s);
    return rc;
}

/* Keep `keep` of the candidates, evenly spread over them. */
static void sample(cands *c, size_t keep, evalset *out, size_t *cap, evalset_kind kind)
{
    out->found[kind] = c->n;
    size_t take = c->n < keep ? c->n : keep;
    for (size_t j = 0; j < take; j++) {
        size_t i = j * c->n / take;
        xgrow(&out->items, cap, out->n + 1, sizeof *out->items);
        out->items[out->n++] = c->items[i];
        c->items[i].query = NULL;
    }
    out->per_kind[kind] = take;
    for (size_t i = 0; i < c->n; i++)
        free(c->items[i].query);
    free(c->items);
    memset(c, 0, sizeof *c);
}

trove_err evalset_build(store *st, size_t per_kind, const char *const *collections,
                        size_t n_collections, evalset *out)
{
    memset(out, 0, sizeof *out);
    build_ctx b = {collections, n_collections, {{0}}, st};
    trove_err rc = store_read_begin(st);
    if (rc)
        return rc;
    rc = store_each(st, "SELECT d.id, c.name, t.title, t.aliases FROM docs d"
                    " JOIN collections c ON c.id = d.collection_id"
                    " JOIN titles_fts t ON t.rowid = d.id ORDER BY d.id",
                    "reading titles", NULL, row_names, &b);
    if (rc == TROVE_OK)
        rc = store_each(st, "SELECT d.id, c.name, json_extract(d.meta, '$.description') FROM docs d"
                        " JOIN collections c ON c.id = d.collection_id WHERE json_valid(d.meta)"
                        " AND json_type(d.meta, '$.description') = 'text' ORDER BY d.id",
                        "reading descriptions", NULL, row_description, &b);
    if (rc == TROVE_OK)
        rc = store_each(st, "SELECT k.doc_id, c.name, k.heading, k.line_start, k.line_end"
                        " FROM chunks k JOIN docs d ON d.id = k.doc_id"
                        " JOIN collections c ON c.id = d.collection_id ORDER BY k.id",
                        "reading headings", NULL, row_heading, &b);
    if (rc == TROVE_OK)
        rc = store_each(st, "SELECT l.dst_doc, c.name, l.line, k.line_start, f.body FROM links l"
                        " JOIN docs d ON d.id = l.src_doc JOIN collections c ON c.id = d.collection_id"
                        " JOIN chunks k ON k.doc_id = l.src_doc AND l.line BETWEEN k.line_start"
                        "  AND k.line_end JOIN chunks_fts f ON f.rowid = k.id"
                        " WHERE l.dst_doc IS NOT NULL AND l.dst_doc != l.src_doc AND l.kind != 1"
                        " ORDER BY l.id", "reading links", NULL, row_link, &b);
    size_t cap = 0;
    for (int k = 0; k < EVAL_N_KINDS; k++) {
        if (rc == TROVE_OK)
            sample(&b.per[k], per_kind, out, &cap, (evalset_kind)k);
        for (size_t i = 0; i < b.per[k].n; i++)
            free(b.per[k].items[i].query);
        free(b.per[k].items);
    }
    for (size_t i = 0; rc == TROVE_OK && i < out->n; i++)
        rc = answer_docid(st, &out->items[i]);
    store_read_end(st);
    if (rc)
        evalset_free(out);
    return rc;
}

void evalset_free(evalset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].query);
    free(s->items);
    memset(s, 0, sizeof *s);
}
