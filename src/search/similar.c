/* similar: a note's distinctive terms and mean vector as one query
 * (search/similar.h). */
#include "search/similar.h"

#include <ctype.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_graph.h"
#include "store/store_vec.h"
#include "text/query.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

#define SIMILAR_DEFAULT_LIMIT 10
#define TERMS_MAX_DISTINCT 50000   /* a huge note: the rest of its words are not read */

void similar_opts_init(similar_opts *o)
{
    memset(o, 0, sizeof *o);
    o->limit = SIMILAR_DEFAULT_LIMIT;
    o->bm25_weight = -1;
    o->vector_weight = -1;
}

/* ---- the note's terms ---------------------------------------------------- */

typedef struct term {
    char *tok;          /* as indexed (folded, stemmed) */
    char *surface;      /* its first occurrence as written */
    int tf;             /* occurrences in the note */
    int chunks;         /* chunks of the note holding it */
    int last_chunk;
    double w;
} term;

typedef struct term_table {
    term *items;
    size_t n;
    uint32_t *slots;    /* index + 1, 0 empty */
    size_t cap;         /* slots, a power of two */
    const char *text;   /* the chunk being read */
    int chunk;
} term_table;

static size_t term_slot(const term_table *t, const char *tok, size_t len)
{
    size_t h = (size_t)str_hash(tok, len) & (t->cap - 1);
    while (t->slots[h]) {
        const term *x = &t->items[t->slots[h] - 1];
        if (strlen(x->tok) == len && memcmp(x->tok, tok, len) == 0)
            break;
        h = (h + 1) & (t->cap - 1);
    }
    return h;
}

static void term_grow(term_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    uint32_t *old = t->slots;
    size_t old_cap = t->cap;
    t->slots = xcalloc(cap, sizeof *t->slots);
    t->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i])
            continue;
        const term *x = &t->items[old[i] - 1];
        t->slots[term_slot(t, x->tok, strlen(x->tok))] = old[i];
    }
    free(old);
    t->items = xrealloc(t->items, cap / 2 * sizeof *t->items);
}

/* Words that say nothing of a topic: one character, digits only, or an
 * English stopword. */
static int uninformative(const char *surface, size_t len)
{
    if (len < 2)
        return 1;
    int digits = 1;
    char low[32];
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)surface[i];
        if (!isdigit(ch))
            digits = 0;
        if (i < sizeof low)
            low[i] = (char)tolower(ch);
    }
    if (digits)
        return 1;
    return len < sizeof low && query_is_stopword(low, len);
}

static int on_note_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    term_table *t = ctx;
    if (uninformative(t->text + start, end - start))
        return 0;
    if (t->n + 1 > t->cap / 2) {
        if (t->n >= TERMS_MAX_DISTINCT)
            return 0;
        term_grow(t);
    }
    size_t h = term_slot(t, tok, len);
    if (!t->slots[h]) {
        term *x = &t->items[t->n];
        memset(x, 0, sizeof *x);
        x->tok = xstrndup(tok, len);
        x->surface = xstrndup(t->text + start, end - start);
        x->last_chunk = -1;
        t->slots[h] = (uint32_t)++t->n;
    }
    term *x = &t->items[t->slots[h] - 1];
    x->tf++;
    if (x->last_chunk != t->chunk) {
        x->last_chunk = t->chunk;
        x->chunks++;
    }
    return 0;
}

static void term_table_free(term_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->items[i].tok);
        free(t->items[i].surface);
    }
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

typedef struct body_ctx {
    term_table *t;
    int64_t doc_id;
} body_ctx;

static void bind_doc(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const body_ctx *)ctx)->doc_id);
}

static trove_err row_body(void *ctx, sqlite3_stmt *s)
{
    body_ctx *b = ctx;
    static const tok_opts opts = {.stem = 1, .query = 1};
    const char *body = (const char *)sqlite3_column_text(s, 0);
    if (!body)
        return TROVE_OK;
    b->t->text = body;
    tok_run(&opts, body, (size_t)sqlite3_column_bytes(s, 0), b->t, on_note_token);
    b->t->chunk++;
    return TROVE_OK;
}

static trove_err read_note_terms(store *st, int64_t doc_id, term_table *t)
{
    body_ctx b = {t, doc_id};
    return store_each(st, "SELECT f.body FROM chunks c JOIN chunks_fts f ON f.rowid = c.id"
                      " WHERE c.doc_id = ?1 ORDER BY c.seq", "reading a note's text", bind_doc,
                      row_body, &b);
}

static int cmp_term_w(const void *a, const void *b)
{
    const term *x = a, *y = b;
    if (x->w != y->w)
        return x->w < y->w ? 1 : -1;
    return strcmp(x->tok, y->tok);
}

/* A term in more than this share of the chunks says little of a topic,
 * and counting it (and ranking by it) costs a read of its whole doclist:
 * it is counted up to the cap only, and left out at the cap. */
#define COMMON_SHARE 50   /* 1 / 50: 2 % of the chunks */
#define COMMON_MIN 64

/* How many chunks hold the term (FTS5 reading its doclist), at most `cap`. */
static trove_err term_df(store *st, sqlite3_stmt *df, const term *x, int64_t cap, double *out)
{
    tbuf phrase = {0};
    tbuf_putc(&phrase, '"');
    for (const char *p = x->surface; *p; p++) {
        if (*p == '"')
            tbuf_putc(&phrase, '"');
        tbuf_putc(&phrase, *p);
    }
    tbuf_putc(&phrase, '"');
    sqlite3_reset(df);
    sqlite3_bind_text(df, 1, phrase.data, (int)phrase.len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(df, 2, cap);
    trove_err rc = TROVE_OK;
    *out = 0;
    if (store_step(st, df, "reading term frequencies", &rc) > 0)
        *out = (double)sqlite3_column_int64(df, 0);
    tbuf_free(&phrase);
    return rc;
}

static trove_err weigh_terms(store *st, term_table *t)
{
    /* N: the highest chunk id, an upper bound of the chunk count read in
     * O(log n) (count(*) reads the whole table); idf only ranks terms. */
    sqlite3_stmt *n_stmt = store_stmt_get(st, "SELECT max(id) FROM chunks");
    if (!n_stmt)
        return store_fail(st, "counting chunks");
    trove_err rc = TROVE_OK;
    double n_chunks = 0;
    if (store_step(st, n_stmt, "counting chunks", &rc) > 0)
        n_chunks = (double)sqlite3_column_int64(n_stmt, 0);
    store_stmt_put(st, n_stmt);
    int64_t cap = (int64_t)n_chunks / COMMON_SHARE;
    if (cap < COMMON_MIN)
        cap = COMMON_MIN;
    sqlite3_stmt *df = rc ? NULL : store_stmt_get(st, "SELECT count(*) FROM (SELECT 1 FROM"
                                                      " chunks_fts WHERE chunks_fts MATCH ?1"
                                                      " LIMIT ?2)");
    if (!rc && !df)
        rc = store_fail(st, "reading term frequencies");
    for (size_t i = 0; rc == TROVE_OK && i < t->n; i++) {
        term *x = &t->items[i];
        double d = 0;
        rc = term_df(st, df, x, cap, &d);
        /* A term no other chunk holds finds nothing else; a common one
         * finds everything. */
        if (rc || d <= x->chunks || (d >= (double)cap && n_chunks > COMMON_MIN)) {
            x->w = 0;
            continue;
        }
        double idf = log((n_chunks - d + 0.5) / (d + 0.5));
        x->w = idf > 0 ? (1 + log((double)x->tf)) * idf : 0;
    }
    if (df)
        store_stmt_put(st, df);
    if (rc == TROVE_OK)
        qsort(t->items, t->n, sizeof *t->items, cmp_term_w);
    return rc;
}

/* ---- shared terms of a result ----------------------------------------------- */

typedef struct shared_ctx {
    const term *terms;
    size_t n_terms;
    unsigned char *has;
    int64_t doc_id;
} shared_ctx;

static int on_result_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    shared_ctx *c = ctx;
    for (size_t i = 0; i < c->n_terms; i++)
        if (!c->has[i] && strlen(c->terms[i].tok) == len && memcmp(c->terms[i].tok, tok, len) == 0)
            c->has[i] = 1;
    return 0;
}

static void bind_shared(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const shared_ctx *)ctx)->doc_id);
}

static trove_err row_shared(void *ctx, sqlite3_stmt *s)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    const char *body = (const char *)sqlite3_column_text(s, 0);
    if (body)
        tok_run(&opts, body, (size_t)sqlite3_column_bytes(s, 0), ctx, on_result_token);
    return TROVE_OK;
}

static trove_err shared_terms(store *st, const term *terms, size_t n_terms, int64_t doc_id,
                              char **out)
{
    unsigned char has[SIMILAR_TERMS] = {0};
    shared_ctx c = {terms, n_terms, has, doc_id};
    trove_err rc = store_each(st, "SELECT f.body FROM chunks c JOIN chunks_fts f ON f.rowid = c.id"
                              " WHERE c.doc_id = ?1", "reading a result's text", bind_shared,
                              row_shared, &c);
    tbuf b = {0};
    for (size_t i = 0; i < n_terms; i++)
        if (has[i])
            tbuf_printf(&b, "%s%s", b.len ? " " : "", terms[i].surface);
    *out = xstrdup(tbuf_cstr(&b));
    tbuf_free(&b);
    return rc;
}

/* ---- the query -------------------------------------------------------------- */

static int excluded(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* Drop the note and its translations, keep at most `limit`. */
static void keep_others(search_results *out, const int64_t *ids, size_t n_ids, size_t limit)
{
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        search_result *r = &out->items[i];
        if (kept < limit && !excluded(ids, n_ids, r->doc_id)) {
            if (kept != i)
                out->items[kept] = *r;
            kept++;
            continue;
        }
        search_result_clear(r);
    }
    out->n = kept;
}

trove_err similar_run(store *st, const config *cfg, const similar_opts *o, search_results *out,
                      similar_info *info)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    size_t limit = o->limit ? o->limit : SIMILAR_DEFAULT_LIMIT;
    term_table t = {0};
    int64_t *ids = NULL;
    size_t n_ids = 0;
    float *qvec = NULL;
    int64_t model_id = 0;
    int dim = 0;
    trove_err rc = store_read_begin(st);
    if (rc)
        return rc;
    rc = store_doc_translations(st, o->doc_id, &ids, &n_ids);
    if (rc == TROVE_OK)
        rc = read_note_terms(st, o->doc_id, &t);
    if (rc == TROVE_OK)
        rc = weigh_terms(st, &t);
    if (rc == TROVE_OK)
        rc = store_vec_model_pick(st, o->vec_fingerprint, &model_id, &dim, &info->vec_model);
    if (rc == TROVE_OK && model_id) {
        qvec = xmalloc((size_t)dim * sizeof *qvec);
        rc = store_vec_doc_mean(st, o->doc_id, model_id, dim, qvec, &info->vec_chunks);
    }
    store_read_end(st);
    if (rc == TROVE_OK && info->vec_chunks == 0) {
        free(info->vec_model);
        info->vec_model = NULL;
    }
    /* The query: the best terms, OR-ed by the query parser. */
    tbuf q = {0};
    size_t n_terms = 0;
    for (size_t i = 0; rc == TROVE_OK && i < t.n && n_terms < SIMILAR_TERMS && t.items[i].w > 0; i++)
        n_terms++;
    info->terms = xcalloc(n_terms ? n_terms : 1, sizeof *info->terms);
    info->term_weights = xcalloc(n_terms ? n_terms : 1, sizeof *info->term_weights);
    for (size_t i = 0; i < n_terms; i++) {
        info->terms[i] = xstrdup(t.items[i].surface);
        info->term_weights[i] = t.items[i].w;
        tbuf_printf(&q, "%s%s", i ? " " : "", t.items[i].surface);
    }
    info->n_terms = n_terms;
    if (rc == TROVE_OK && (n_terms || info->vec_chunks)) {
        search_opts so;
        memset(&so, 0, sizeof so);
        so.rrf_k = o->rrf_k;
        so.query = tbuf_cstr(&q);
        if (o->filter)
            search_opts_filters(&so, o->filter);
        so.limit = limit + n_ids;
        so.each_translation = 1;
        so.graph_weight = 0;
        so.lang_bonus = 0;
        so.with_snippet = 1;
        so.weights[SEARCH_CH_TITLE] = 0;
        so.weights[SEARCH_CH_BM25] = o->bm25_weight >= 0 ? o->bm25_weight : 1.0;
        so.weights[SEARCH_CH_VECTOR] = o->vector_weight >= 0 ? o->vector_weight : 1.0;
        if (info->vec_chunks) {
            so.query_vec = qvec;
            so.vec_model_id = model_id;
            so.vec_dim = dim;
        }
        so.vec_cache = o->vec_cache;
        so.pool = o->pool;
        so.vec_threads = o->vec_threads;
        so.hide_globs = o->hide_globs;
        so.hide_key = o->hide_key;
        rc = search_run(st, cfg, &so, out);
    }
    if (rc == TROVE_OK) {
        keep_others(out, ids, n_ids, limit);
        info->shared = xcalloc(out->n ? out->n : 1, sizeof *info->shared);
        info->n_shared = out->n;
        for (size_t i = 0; rc == TROVE_OK && i < out->n; i++)
            rc = shared_terms(st, t.items, n_terms, out->items[i].doc_id, &info->shared[i]);
    }
    tbuf_free(&q);
    free(qvec);
    free(ids);
    term_table_free(&t);
    if (rc) {
        search_results_free(out);
        similar_info_free(info);
    }
    return rc;
}

void similar_info_free(similar_info *info)
{
    for (size_t i = 0; i < info->n_terms; i++)
        free(info->terms[i]);
    free(info->terms);
    free(info->term_weights);
    for (size_t i = 0; i < info->n_shared; i++)
        free(info->shared[i]);
    free(info->shared);
    free(info->vec_model);
    memset(info, 0, sizeof *info);
}
