/* ch_vec — the vector channel: exact int8 top-k over the chunk embeddings
 * of the active model (vec/vec.h); a note ranks by its best chunk (cosine
 * similarity). The query is embedded before the read transaction opens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/vembed.h"
#include "search/search_int.h"
#include "search/vcache.h"
#include "store/store_vec.h"
#include "util/mem.h"

/* Collections in scope without any vector of the model: the searched ones,
 * else every indexed one. */
static trove_err find_unembedded(store *st, const search_opts *o, int64_t model_id,
                                 search_results *out)
{
    const char **names = NULL;
    size_t n = 0;
    char **owned = NULL;
    sqlite3_stmt *s = NULL;
    trove_err rc = TROVE_OK;
    if (o->n_collections) {
        names = (const char **)o->collections;
        n = o->n_collections;
    } else {
        if ((rc = prepare(st, "SELECT name FROM collections ORDER BY name", &s)))
            return rc;
        size_t cap = 0;
        while (step_row(st, s, "listing collections", &rc) > 0) {
            xgrow(&owned, &cap, n + 1, sizeof *owned);
            owned[n++] = xstrdup((const char *)sqlite3_column_text(s, 0));
        }
        store_stmt_put(st, s);
        names = (const char **)owned;
    }
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        int has;
        rc = store_vec_collection_has(st, model_id, names[i], &has);
        if (rc == TROVE_OK && !has) {
            out->vec_missing = xrealloc(out->vec_missing, (out->n_vec_missing + 1) * sizeof(char *));
            out->vec_missing[out->n_vec_missing++] = xstrdup(names[i]);
        }
    }
    for (size_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    return rc;
}

/* The query's vector, computed before the search's read transaction opens:
 * the model's lock may be waited for (another search, the watcher's
 * embedding), and a read transaction held meanwhile would pin the WAL.
 * NULL (and TROVE_OK) when the index holds no vector of the model: then
 * nothing is embedded. */
static trove_err embed_query(store *st, const search_opts *o, float **qf)
{
    *qf = NULL;
    if (o->query_vec) {
        *qf = xmalloc((size_t)o->vec_dim * sizeof **qf);
        memcpy(*qf, o->query_vec, (size_t)o->vec_dim * sizeof **qf);
        return TROVE_OK;
    }
    char *fp = vembed_fingerprint(o->model);
    int64_t model_id;
    int dim;
    trove_err rc = store_vec_model_find(st, fp, &model_id, &dim);
    free(fp);
    if (rc || !model_id || dim != embed_dim(o->model))
        return rc;
    *qf = xmalloc((size_t)dim * sizeof **qf);
    const char *text = o->query ? o->query : "";
    if (o->model_lock)
        pthread_mutex_lock(o->model_lock);
    rc = embed_texts(o->model, &text, 1, EMBED_QUERY, *qf);
    if (o->model_lock)
        pthread_mutex_unlock(o->model_lock);
    if (rc) {
        free(*qf);
        *qf = NULL;
    }
    return rc;
}

/* Whether a query vector is zero: a static model knew none of its words. */
static int vec_blank(const float *x, int dim)
{
    double norm = 0;
    for (int i = 0; i < dim; i++)
        norm += (double)x[i] * x[i];
    return norm < 1e-12;
}

/* The lowest similarity the scan keeps: strictly above the noise floor
 * (what unrelated text reaches), and for vsearch at least --min-score. */
static float vec_min_score(const search_opts *o, const search_results *out)
{
    float min = o->vector_only ? (float)o->min_score : -INFINITY;
    if (out->vec_floor_known)
        min = fmaxf(min, nextafterf((float)out->vec_floor, INFINITY));
    return min;
}

/* Every segment in one scan (the threads start once): each sidecar read
 * through a small buffer, not mapped (store_vec_segment_stream). */
static trove_err scan_streams(store *st, const int64_t *segs, size_t n_segs, int dim, vec_topk *t)
{
    store_vec_seg *seg = xcalloc(n_segs, sizeof *seg);
    const vec_block **blk = xcalloc(n_segs, sizeof *blk);
    size_t n = 0;
    trove_err rc = TROVE_OK;
    for (; rc == TROVE_OK && n < n_segs; n++) {
        rc = store_vec_segment_stream(st, segs[n], dim, &seg[n]);
        blk[n] = &seg[n].blk;
    }
    if (rc == TROVE_OK) {
        vec_topk_scan_all(t, blk, n);
        if (vec_topk_failed(t))
            rc = trove_fail(TROVE_EIO, "reading a vector segment from its sidecar file failed "
                            "(segments %lld to %lld)", (long long)segs[0],
                            (long long)segs[n_segs - 1]);
    }
    for (size_t i = 0; i < n; i++)
        store_vec_segment_free(&seg[i]);
    free(blk);
    free(seg);
    return rc;
}

/* qf: the query's vector (embed_query), NULL when it has none. */
static trove_err channel_vector(store *st, const search_opts *o, const float *qf, const search_filter *f,
                                size_t depth, cand_set *cs, search_results *out)
{
    int64_t model_id = o->vec_model_id;
    int dim = o->vec_dim, want_dim = o->vec_dim;
    trove_err rc = TROVE_OK;
    if (!o->query_vec) {
        char *fp = vembed_fingerprint(o->model);
        rc = store_vec_model_find(st, fp, &model_id, &dim);
        free(fp);
        want_dim = embed_dim(o->model);
    }
    int64_t *segs = NULL;
    size_t n_segs = 0;
    if (rc == TROVE_OK && model_id)
        rc = store_vec_segments(st, model_id, &segs, &n_segs);
    if (rc || n_segs == 0 || dim != want_dim || !qf) {
        free(segs);
        out->vec_state = SEARCH_VEC_NONE;
        return rc;
    }
    out->vec_state = SEARCH_VEC_USED;
    int8_t *qq = xmalloc((size_t)dim);
    float qs = 0;
    vec_quantize(qf, dim, qq, &qs);
    rc = store_vec_floor_get(st, model_id, &out->vec_floor, &(int64_t){0},
                             &out->vec_floor_known);
    /* A zero vector is as close to every note as to none: ranking by it
     * ranked the index in id order (every cosine 0). */
    if (rc == TROVE_OK && vec_blank(qf, dim)) {
        out->vec_state = SEARCH_VEC_BLANK;
        free(qq);
        free(segs);
        return find_unembedded(st, o, model_id, out);
    }
    uint8_t *allow = NULL, *chunks = NULL;
    int64_t n_allow = 0, n_chunks = 0;
    if (rc == TROVE_OK)
        rc = search_filter_allowed(st, f, &allow, &n_allow);
    if (rc == TROVE_OK)
        rc = search_filter_chunks(st, f, &chunks, &n_chunks);
    vec_filter vf = {allow, n_allow, vec_min_score(o, out), chunks, n_chunks};
    vec_topk *t = rc == TROVE_OK ? vec_topk_new(depth, dim, qq, qs, &vf, o->vec_threads) : NULL;
    if (rc == TROVE_OK && o->vec_cache)
        rc = vcache_scan(o->vec_cache, st, model_id, dim, t);
    if (rc == TROVE_OK && !o->vec_cache)
        rc = scan_streams(st, segs, n_segs, dim, t);
    if (rc == TROVE_OK) {
        size_t n;
        const vec_hit *h = vec_topk_results(t, &n);
        for (size_t i = 0; i < n; i++) {
            cand *c = search_cand_get(cs, h[i].doc_id, 1);
            c->ch[SEARCH_CH_VECTOR].rank = (int)i + 1;
            c->ch[SEARCH_CH_VECTOR].score = h[i].score;
            c->vec_chunk_id = h[i].chunk_id;
        }
    }
    if (rc == TROVE_OK)
        rc = find_unembedded(st, o, model_id, out);
    vec_topk_free(t);
    free(allow);
    free(chunks);
    free(qq);
    free(segs);
    return rc;
}

static int vec_wanted(const search_ctx *c)
{
    return (c->o->model || c->o->query_vec) && (c->o->vector_only || c->o->weights[SEARCH_CH_VECTOR] > 0);
}

static trove_err vec_before(search_ctx *c)
{
    return embed_query(c->st, c->o, &c->qvec);
}

static trove_err vec_run(search_ctx *c, cand_set *cs)
{
    return channel_vector(c->st, c->o, c->qvec, c->f, c->depth, cs, c->out);
}

const search_channel search_ch_vector = {"vector", vec_wanted, vec_before, vec_run};
