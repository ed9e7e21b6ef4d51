#include "store/store_rank.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "text/tok.h"
#include "util/err.h"
#include "util/mem.h"

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ctx)
{
    (void)api, (void)fts;
    ++*(int64_t *)ctx;
    return SQLITE_OK;
}

/* As fts5Bm25GetData (fts5_aux.c) computes them, for the n phrases from
 * `first`: the same statements in the same order. */
static int rank_stats(const Fts5ExtensionApi *api, Fts5Context *fts, store_rank *r, int first,
                      int n)
{
    sqlite3_int64 n_row = 0, n_token = 0;
    int rc = api->xRowCount(fts, &n_row);
    if (n_row <= 0)
        n_row = 1;
    if (rc == SQLITE_OK)
        rc = api->xColumnTotalSize(fts, -1, &n_token);
    if (rc != SQLITE_OK)
        return rc;
    free(r->idf);
    free(r->hits);
    r->idf = xcalloc(n ? (size_t)n : 1, sizeof *r->idf);
    r->hits = xcalloc(n ? (size_t)n : 1, sizeof *r->hits);
    r->n_phrase = n;
    r->avgdl = (double)n_token / (double)n_row;
    for (int i = 0; rc == SQLITE_OK && i < n; i++) {
        sqlite3_int64 n_hit = 0;
        rc = api->xQueryPhrase(fts, first + i, &n_hit, count_row);
        if (rc == SQLITE_OK) {
            double idf = log((n_row - n_hit + 0.5) / (n_hit + 0.5));
            if (idf <= 0.0)
                idf = 1e-6;
            r->idf[i] = idf;
            r->hits[i] = n_hit;
        }
    }
    r->have = rc == SQLITE_OK;
    return rc;
}

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
        rc = rank_stats(api, fts, r, first, n);
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
    /* fts5Bm25Function's sum, term for term; a phrase's frequency adds
     * its column's weight per instance, small integers: exact in any
     * order, so per phrase is as good as xInst's order. */
    const double k1 = STORE_RANK_K1, b = STORE_RANK_B;
    double score = 0.0;
    for (int i = 0; i < r->n_phrase; i++) {
        double freq = 0.0;
        Fts5PhraseIter it;
        int col, off;
        for (rc = api->xPhraseFirst(fts, first + i, &it, &col, &off);
             rc == SQLITE_OK && col >= 0; api->xPhraseNext(fts, &it, &col, &off))
            freq += col < 2 ? r->weight[col] : 1.0;
        if (rc != SQLITE_OK) {
            sqlite3_result_error_code(ctx, rc);
            return;
        }
        score += r->idf[i] * ((freq * (k1 + 1.0)) / (freq + k1 * (1 - b + b * d / r->avgdl)));
    }
    sqlite3_result_double(ctx, score);
}

trove_err store_rank_ready(store *st)
{
    if (st->rank_ready)
        return TROVE_OK;
    fts5_api *api = tok_fts5_api(st->db);
    if (!api || api->iVersion < 2)
        return trove_fail(TROVE_EUNSUPPORTED, "SQLite has no usable FTS5 (fts5_api missing)");
    int rc = api->xCreateFunction(api, "trove_rank", st, rank_fn, NULL);
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
    r->idf = NULL;
    r->hits = NULL;
    r->have = 0;
}

double store_rank_bound(const store_rank *r, int i)
{
    return r->idf[i] * (STORE_RANK_K1 + 1.0);
}
