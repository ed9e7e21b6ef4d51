#include "store/store_rank.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "text/tok.h"
#include "util/err.h"
#include "util/mem.h"


/* The row's length in tokens: the note map's, else FTS5's. */
static int row_length(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r,
                      double *d)
{
    int64_t len;
    if (r->nmap && r->rc == TROVE_OK &&
        store_nmap_chunk_len(r->nmap, api->xRowid(fts), &len, &r->rc) > 0) {
        *d = (double)len;
        return SQLITE_OK;
    }
    if (r->rc != TROVE_OK)
        return SQLITE_ERROR;
    int n_tok = 0;
    int rc = api->xColumnSize(fts, -1, &n_tok);
    *d = (double)n_tok;
    return rc;
}

/* Phrase i's part of a row's score: fts5Bm25Function's term, the same
 * double operations in the same order (rank_fn and the phrase walk add
 * these up in phrase order, so their sums are the same bits). */
static double term_score(double idf, double freq, double d, double avgdl)
{
    const double k1 = STORE_RANK_K1, b = STORE_RANK_B;
    return idf * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * d / avgdl)));
}

/* Phrase `phrase`'s weighted frequency in the cursor's row: its column's
 * weight per instance, small integers: exact in any order. */
static int phrase_freq(const Fts5ExtensionApi *api, Fts5Context *fts, const store_rank *r,
                       int phrase, double *freq)
{
    Fts5PhraseIter it;
    int col, off, rc;
    *freq = 0.0;
    for (rc = api->xPhraseFirst(fts, phrase, &it, &col, &off); rc == SQLITE_OK && col >= 0;
         api->xPhraseNext(fts, &it, &col, &off))
        *freq += col < 2 ? r->weight[col] : 1.0;
    return rc;
}

static int rank_phrases(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r, int first,
                        int n, int score);

static void rank_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                    int n_val, sqlite3_value **val)
{
    (void)val;
    store *st = api->xUserData(fts);
    store_rank *r = n_val == 0 ? st->rank : NULL;
    if (!r) {
        sqlite3_result_error(ctx, "trove_rank: no rank state bound", -1);
        return;
    }
    int all = api->xPhraseCount(fts), rc = SQLITE_OK;
    int n = r->n_query > 0 && r->n_query <= all ? r->n_query : all, first = all - n;
    if (!r->have || r->n_phrase != n)
        rc = rank_phrases(api, fts, r, first, n, 0);
    double d = 0;
    if (rc == SQLITE_OK)
        rc = row_length(api, fts, r, &d);
    if (r->rc != TROVE_OK) {
        /* the note map's own error (its statement's), said by this one */
        sqlite3_result_error(ctx, trove_errmsg(), -1);
        return;
    }
    if (rc != SQLITE_OK) {
        sqlite3_result_error_code(ctx, rc);
        return;
    }
    /* fts5Bm25Function's sum, term for term; per phrase is as good as
     * xInst's order (phrase_freq). */
    double score = 0.0;
    for (int i = 0; i < r->n_phrase; i++) {
        double freq;
        if ((rc = phrase_freq(api, fts, r, first + i, &freq)) != SQLITE_OK) {
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        score += term_score(r->idf[i], freq, d, r->avgdl);
    }
    sqlite3_result_double(ctx, score);
}

/* ---- every row's score by walking each phrase's rows -------------------- */

/* The rows met so far (r->row_id, r->row_score) by id: open addressing,
 * index + 1 per slot (0: empty), and each row's length; then the current
 * phrase's rows (index, frequency) until its IDF is known. */
typedef struct row_walk {
    store_rank *r;
    size_t *slots, n_slots, cap_rows;
    double *len;
    size_t *pend;
    double *pend_freq;
    size_t n_pend, cap_pend;
    int64_t n_hit;
} row_walk;

/* xQueryPhrase's callback for the statistics alone. */
static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
    (void)api, (void)fts;
    ((row_walk *)ctx)->n_hit++;
    return SQLITE_OK;
}

static size_t slot_of(const row_walk *w, int64_t id)
{
    size_t h = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull) & (w->n_slots - 1);
    while (w->slots[h] && w->r->row_id[w->slots[h] - 1] != id)
        h = (h + 1) & (w->n_slots - 1);
    return h;
}

static void walk_grow(row_walk *w)
{
    size_t ns = w->n_slots ? w->n_slots * 2 : 1024;
    free(w->slots);
    w->slots = xcalloc(ns, sizeof *w->slots);
    w->n_slots = ns;
    for (size_t i = 0; i < w->r->n_rows; i++)
        w->slots[slot_of(w, w->r->row_id[i])] = i + 1;
}

/* xQueryPhrase's callback: one row of the phrase walked (its only phrase,
 * 0, in the cursor fts). */
static int walk_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
    row_walk *w = ctx;
    store_rank *r = w->r;
    w->n_hit++;
    if (2 * (r->n_rows + 1) > w->n_slots)
        walk_grow(w);
    int64_t id = api->xRowid(fts);
    size_t h = slot_of(w, id);
    if (!w->slots[h]) {
        double d = 0;
        int rc = row_length(api, fts, r, &d);
        if (rc != SQLITE_OK)
            return rc;
        if (r->n_rows == w->cap_rows) {
            w->cap_rows = w->cap_rows ? 2 * w->cap_rows : 1024;
            r->row_id = xrealloc(r->row_id, w->cap_rows * sizeof *r->row_id);
            r->row_score = xrealloc(r->row_score, w->cap_rows * sizeof *r->row_score);
            w->len = xrealloc(w->len, w->cap_rows * sizeof *w->len);
        }
        r->row_id[r->n_rows] = id;
        r->row_score[r->n_rows] = 0.0;
        w->len[r->n_rows] = d;
        w->slots[h] = ++r->n_rows;
    }
    double freq;
    int rc = phrase_freq(api, fts, r, 0, &freq);
    if (rc != SQLITE_OK)
        return rc;
    if (w->n_pend == w->cap_pend) {
        w->cap_pend = w->cap_pend ? 2 * w->cap_pend : 1024;
        w->pend = xrealloc(w->pend, w->cap_pend * sizeof *w->pend);
        w->pend_freq = xrealloc(w->pend_freq, w->cap_pend * sizeof *w->pend_freq);
    }
    w->pend[w->n_pend] = w->slots[h] - 1;
    w->pend_freq[w->n_pend++] = freq;
    return SQLITE_OK;
}

/* The statistics of the n phrases from `first`, as fts5Bm25GetData
 * (fts5_aux.c) computes them, the same statements in the same order: the
 * rows of each phrase walked (xQueryPhrase) and counted. With `score`,
 * the same walk also gives every row met its score: each row's terms
 * added in phrase order as rank_fn adds them (a phrase absent from a row
 * adds +0.0 there: the same bits). The rows of an expression that is the
 * phrases OR-ed are exactly the rows met. */
static int rank_phrases(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r, int first,
                        int n, int score)
{
    sqlite3_int64 n_row = 0, n_token = 0;
    int rc = api->xRowCount(fts, &n_row);
    if (n_row <= 0)
        n_row = 1;
    if (rc == SQLITE_OK)
        rc = api->xColumnTotalSize(fts, -1, &n_token);
    if (rc != SQLITE_OK)
        return rc;
    if (score)
        store_rank_free(r);
    free(r->idf);
    free(r->hits);
    r->idf = xcalloc(n ? (size_t)n : 1, sizeof *r->idf);
    r->hits = xcalloc(n ? (size_t)n : 1, sizeof *r->hits);
    r->n_phrase = n;
    r->avgdl = (double)n_token / (double)n_row;
    row_walk w = {.r = r};
    for (int i = 0; rc == SQLITE_OK && i < n; i++) {
        w.n_hit = 0;
        w.n_pend = 0;
        rc = api->xQueryPhrase(fts, first + i, &w, score ? walk_row : count_row);
        if (rc != SQLITE_OK || r->rc != TROVE_OK)
            break;
        int64_t n_hit = w.n_hit;
        double idf = log((n_row - n_hit + 0.5) / (n_hit + 0.5));
        if (idf <= 0.0)
            idf = 1e-6;
        r->idf[i] = idf;
        r->hits[i] = n_hit;
        for (size_t k = 0; k < w.n_pend; k++)
            r->row_score[w.pend[k]] += term_score(idf, w.pend_freq[k], w.len[w.pend[k]], r->avgdl);
    }
    free(w.slots);
    free(w.len);
    free(w.pend);
    free(w.pend_freq);
    r->have = rc == SQLITE_OK && r->rc == TROVE_OK;
    return rc;
}

/* trove_rank_rows(TABLE), called once (LIMIT 1): rank_phrases, scoring,
 * into the bound state. */
static void rank_rows_fn(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx,
                         int n_val, sqlite3_value **val)
{
    (void)n_val, (void)val;
    store *st = api->xUserData(fts);
    store_rank *r = st->rank;
    if (!r) {
        sqlite3_result_error(ctx, "trove_rank_rows: no rank state bound", -1);
        return;
    }
    int rc = rank_phrases(api, fts, r, 0, api->xPhraseCount(fts), 1);
    if (r->rc != TROVE_OK)
        sqlite3_result_error(ctx, trove_errmsg(), -1);
    else if (rc != SQLITE_OK)
        sqlite3_result_error_code(ctx, rc);
    else
        sqlite3_result_int64(ctx, (sqlite3_int64)r->n_rows);
}

trove_err store_rank_rows(store *st, store_rank_table table, const char *fts, store_rank *r)
{
    trove_err rc = store_rank_ready(st);
    if (rc)
        return rc;
    sqlite3_stmt *s = store_stmt_get(st, table == STORE_RANK_TITLES
                                             ? "SELECT trove_rank_rows(titles_fts) FROM titles_fts"
                                               " WHERE titles_fts MATCH ?1 LIMIT 1"
                                             : "SELECT trove_rank_rows(chunks_fts) FROM chunks_fts"
                                               " WHERE chunks_fts MATCH ?1 LIMIT 1");
    if (!s)
        return store_fail(st, "keyword search");
    store_rank *was = st->rank;
    st->rank = r;
    store_rank_free(r);
    sqlite3_bind_text(s, 1, fts, -1, SQLITE_STATIC);
    store_step(st, s, "keyword search", &rc);
    store_stmt_put(st, s);
    st->rank = was;
    if (r->rc)
        rc = r->rc;   /* the note map's error, under the statement's */
    if (rc)
        store_rank_free(r);
    return rc;
}

trove_err store_rank_ready(store *st)
{
    if (st->rank_ready)
        return TROVE_OK;
    fts5_api *api = tok_fts5_api(st->db);
    if (!api || api->iVersion < 2)
        return trove_fail(TROVE_EUNSUPPORTED, "SQLite has no usable FTS5 (fts5_api missing)");
    int rc = api->xCreateFunction(api, "trove_rank", st, rank_fn, NULL);
    if (rc == SQLITE_OK)
        rc = api->xCreateFunction(api, "trove_rank_rows", st, rank_rows_fn, NULL);
    if (rc != SQLITE_OK)
        return trove_fail(TROVE_ESQL, "registering trove_rank: %s", sqlite3_errstr(rc));
    st->rank_ready = 1;
    return TROVE_OK;
}

void store_rank_use(store *st, store_rank *r)
{
    st->rank = r;
}

void store_rank_free(store_rank *r)
{
    free(r->idf);
    free(r->hits);
    free(r->row_id);
    free(r->row_score);
    r->idf = NULL;
    r->hits = NULL;
    r->row_id = NULL;
    r->row_score = NULL;
    r->n_rows = 0;
    r->have = 0;
}

double store_rank_bound(const store_rank *r, int i)
{
    return r->idf[i] * (STORE_RANK_K1 + 1.0);
}
