/* dupes: MinHash over the index's chunk text, confirmed by vectors
 * (search/dupes.h). */
#include "search/dupes.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_vec.h"
#include "text/minhash.h"
#include "util/buf.h"
#include "util/mem.h"

/* A note or a chunk being compared. */
typedef struct unit {
    int64_t doc_id, chunk_id;   /* chunk_id 0: a whole note */
    int line_start, line_end;
    char *heading;
    float *vec;                 /* unit length, loaded on demand; NULL: none */
    int vec_state;              /* 0 not read, 1 read */
} unit;

typedef struct read_ctx {
    const dupes_opts *o;
    int64_t *colls;             /* collection ids allowed; NULL: all */
    size_t n_colls, cap_colls;
    unit *units;
    minhash_sig *sigs;
    size_t n, cap, cap_sigs;
    minhash_builder *open;      /* the note being read (notes mode) */
} read_ctx;

static int allowed(const read_ctx *c, int64_t coll)
{
    if (!c->colls)
        return 1;
    for (size_t i = 0; i < c->n_colls; i++)
        if (c->colls[i] == coll)
            return 1;
    return 0;
}

static unit *new_unit(read_ctx *c)
{
    xgrow(&c->units, &c->cap, c->n + 1, sizeof *c->units);
    xgrow(&c->sigs, &c->cap_sigs, c->n + 1, sizeof *c->sigs);
    unit *u = &c->units[c->n++];
    memset(u, 0, sizeof *u);
    return u;
}

/* Columns: doc_id, chunk id, collection id, line_start, line_end, heading, body. */
static trove_err row_chunk(void *ctx, sqlite3_stmt *s)
{
    read_ctx *c = ctx;
    int64_t doc_id = sqlite3_column_int64(s, 0);
    if (!allowed(c, sqlite3_column_int64(s, 2)))
        return TROVE_OK;
    const char *body = (const char *)sqlite3_column_text(s, 6);
    size_t len = (size_t)sqlite3_column_bytes(s, 6);
    if (c->o->passages || !c->n || c->units[c->n - 1].doc_id != doc_id) {
        if (c->open)
            minhash_end(c->open);
        unit *u = new_unit(c);
        u->doc_id = doc_id;
        u->line_start = sqlite3_column_int(s, 3);
        if (c->o->passages) {
            u->chunk_id = sqlite3_column_int64(s, 1);
            const char *h = (const char *)sqlite3_column_text(s, 5);
            u->heading = xstrdup(h ? h : "");
        }
        c->open = minhash_begin(&c->sigs[c->n - 1]);
    }
    c->units[c->n - 1].line_end = sqlite3_column_int(s, 4);
    if (body)
        minhash_add(c->open, body, len);
    return TROVE_OK;
}

static trove_err read_units(store *st, read_ctx *c)
{
    for (size_t i = 0; i < c->o->n_collections; i++) {
        int64_t id;
        trove_err rc = store_collection_id(st, c->o->collections[i], &id);
        if (rc)
            return rc;
        xgrow(&c->colls, &c->cap_colls, c->n_colls + 1, sizeof *c->colls);
        c->colls[c->n_colls++] = id;
    }
    trove_err rc = store_each(st,
        "SELECT c.doc_id, c.id, d.collection_id, c.line_start, c.line_end, c.heading, f.body"
        " FROM chunks c JOIN chunks_fts f ON f.rowid = c.id JOIN docs d ON d.id = c.doc_id"
        " ORDER BY c.doc_id, c.seq", "reading chunk text", NULL, row_chunk, c);
    if (c->open)
        minhash_end(c->open);
    c->open = NULL;
    return rc;
}

/* ---- vectors ---- */

typedef struct vec_ctx {
    store *st;
    int64_t model_id;
    int dim;
} vec_ctx;

static const float *unit_vec(const vec_ctx *v, unit *u, trove_err *rc)
{
    if (u->vec_state)
        return u->vec;
    u->vec_state = 1;
    float *x = xmalloc((size_t)v->dim * sizeof *x);
    size_t n = 0;
    *rc = u->chunk_id ? store_vec_chunk_get(v->st, u->chunk_id, v->model_id, v->dim, x, &n)
                      : store_vec_doc_mean(v->st, u->doc_id, v->model_id, v->dim, x, &n);
    double norm = 0;
    for (int i = 0; i < v->dim; i++)
        norm += (double)x[i] * x[i];
    if (*rc || n == 0 || norm <= 0) {
        free(x);
        return NULL;
    }
    for (int i = 0; i < v->dim; i++)
        x[i] = (float)(x[i] / sqrt(norm));
    return u->vec = x;
}

static double cosine(const float *a, const float *b, int dim)
{
    double d = 0;
    for (int i = 0; i < dim; i++)
        d += (double)a[i] * b[i];
    return d;
}

/* NAN when either side has no vector. */
static double pair_cosine(const vec_ctx *v, unit *a, unit *b, trove_err *rc)
{
    if (!v->model_id)
        return NAN;
    const float *x = unit_vec(v, a, rc);
    const float *y = *rc ? NULL : unit_vec(v, b, rc);
    return x && y ? cosine(x, y, v->dim) : NAN;
}

/* ---- groups ---- */

typedef struct member {
    size_t unit;
    dupe_item item;
} member;

static int cmp_item(const void *x, const void *y)
{
    const dupe_item *a = x, *b = y;
    int c = strcmp(a->collection, b->collection);
    if (!c)
        c = strcmp(a->path, b->path);
    return c ? c : a->line_start - b->line_start;
}

static int cmp_group(const void *x, const void *y)
{
    const dupe_group *a = x, *b = y;
    if (a->n != b->n)
        return a->n < b->n ? 1 : -1;
    if (a->similarity != b->similarity)
        return a->similarity < b->similarity ? 1 : -1;
    return cmp_item(&a->items[0], &b->items[0]);
}

static char *col_dup(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return xstrdup(t ? t : "");
}

static trove_err fill_item(store *st, const unit *u, dupe_item *it)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT d.docid, col.name, col.root, d.path, d.title"
                                         " FROM docs d JOIN collections col"
                                         " ON col.id = d.collection_id WHERE d.id = ?1");
    if (!s)
        return store_fail(st, "reading a duplicate");
    sqlite3_bind_int64(s, 1, u->doc_id);
    trove_err rc = TROVE_OK;
    int row = store_step(st, s, "reading a duplicate", &rc);
    if (row > 0) {
        const char *docid = (const char *)sqlite3_column_text(s, 0);
        snprintf(it->docid, sizeof it->docid, "%s", docid ? docid : "");
        it->collection = col_dup(s, 1);
        it->root = col_dup(s, 2);
        it->path = col_dup(s, 3);
        it->title = col_dup(s, 4);
    } else if (row == 0) {
        rc = trove_fail(TROVE_ECORRUPT, "a chunk of note %lld has no note", (long long)u->doc_id);
    }
    store_stmt_put(st, s);
    if (u->heading) {
        /* The heading path as stored: parts joined by 0x1f (store.c). */
        tbuf h = {0};
        for (const char *p = u->heading; *p; p++) {
            if (*p == '\x1f')
                tbuf_puts(&h, " > ");
            else
                tbuf_putc(&h, *p);
        }
        it->heading = xstrdup(tbuf_cstr(&h));
        tbuf_free(&h);
    }
    it->line_start = u->line_start;
    it->line_end = u->line_end;
    return rc;
}

static trove_err build_groups(store *st, read_ctx *c, const minhash_pair *p, const double *cos,
                              const unsigned char *keep, size_t n_pairs, dupes_result *out)
{
    long *g = xmalloc((c->n ? c->n : 1) * sizeof *g);
    size_t ng = minhash_group(c->n, p, n_pairs, keep, g);
    out->groups = xcalloc(ng ? ng : 1, sizeof *out->groups);
    out->n = ng;
    for (size_t k = 0; k < ng; k++) {
        out->groups[k].similarity = 1;
        out->groups[k].cosine = NAN;
    }
    for (size_t i = 0; i < n_pairs; i++) {
        if (!keep[i])
            continue;
        dupe_group *gr = &out->groups[g[p[i].a]];
        if (p[i].similarity < gr->similarity)
            gr->similarity = p[i].similarity;
        if (!isnan(cos[i]) && (isnan(gr->cosine) || cos[i] < gr->cosine))
            gr->cosine = cos[i];
    }
    size_t *cap = xcalloc(ng ? ng : 1, sizeof *cap);
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < c->n; i++) {
        if (g[i] < 0)
            continue;
        dupe_group *gr = &out->groups[g[i]];
        xgrow(&gr->items, &cap[g[i]], gr->n + 1, sizeof *gr->items);
        dupe_item *it = &gr->items[gr->n++];
        memset(it, 0, sizeof *it);
        rc = fill_item(st, &c->units[i], it);
    }
    free(cap);
    free(g);
    if (rc)
        return rc;
    for (size_t k = 0; k < ng; k++)
        qsort(out->groups[k].items, out->groups[k].n, sizeof *out->groups[k].items, cmp_item);
    qsort(out->groups, ng, sizeof *out->groups, cmp_group);
    return TROVE_OK;
}

trove_err dupes_run(store *st, const dupes_opts *o, dupes_result *out)
{
    memset(out, 0, sizeof *out);
    double threshold = o->threshold > 0 ? o->threshold : DUPES_THRESHOLD;
    if (!(threshold > 0 && threshold <= 1))
        return trove_fail(TROVE_EINVAL, "--threshold must be in (0, 1], not %g", threshold);
    read_ctx c = {.o = o};
    vec_ctx v = {st, 0, 0};
    minhash_pair *p = NULL;
    size_t n_pairs = 0;
    unsigned char *keep = NULL;
    double *cos = NULL;
    trove_err rc = store_read_begin(st);
    if (rc)
        return rc;
    rc = read_units(st, &c);
    if (rc == TROVE_OK)
        rc = store_vec_model_pick(st, NULL, &v.model_id, &v.dim, &out->vec_model);
    if (rc == TROVE_OK) {
        out->units = c.n;
        minhash_pairs(c.sigs, c.n, threshold, &p, &n_pairs);
        out->candidates = n_pairs;
        keep = xmalloc(n_pairs ? n_pairs : 1);
        cos = xmalloc((n_pairs ? n_pairs : 1) * sizeof *cos);
        for (size_t i = 0; rc == TROVE_OK && i < n_pairs; i++) {
            cos[i] = pair_cosine(&v, &c.units[p[i].a], &c.units[p[i].b], &rc);
            keep[i] = isnan(cos[i]) || cos[i] >= DUPES_VEC_MIN;
            out->rejected += !keep[i];
        }
    }
    if (rc == TROVE_OK)
        rc = build_groups(st, &c, p, cos, keep, n_pairs, out);
    store_read_end(st);
    for (size_t i = 0; i < c.n; i++) {
        free(c.units[i].heading);
        free(c.units[i].vec);
    }
    free(c.units);
    free(c.sigs);
    free(c.colls);
    free(keep);
    free(cos);
    minhash_pairs_free(p);
    if (rc)
        dupes_result_free(out);
    return rc;
}

void dupes_result_free(dupes_result *r)
{
    for (size_t k = 0; k < r->n; k++) {
        for (size_t i = 0; i < r->groups[k].n; i++) {
            dupe_item *it = &r->groups[k].items[i];
            free(it->collection);
            free(it->root);
            free(it->path);
            free(it->title);
            free(it->heading);
        }
        free(r->groups[k].items);
    }
    free(r->groups);
    free(r->vec_model);
    memset(r, 0, sizeof *r);
}
