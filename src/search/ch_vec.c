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

/* The two-stage scan where asked for (search.h, vec_scan): on the
 * segments that carry sketches, which a resident process's are
 * (search/vcache.h: the sidecars', else made there) and a cold search's
 * are when their sidecars have them (store_vside.h: written with the
 * segments); the others are scanned exactly. At depth 0 (every note) it
 * is exact. */
static void two_stage(const search_opts *o, size_t depth, vec_topk *t)
{
    if (!depth || o->vec_candidates <= 0)
        return;
    if (o->vec_scan == SEARCH_VEC_SCAN_TWO_STAGE)
        vec_topk_two_stage(t, depth * (size_t)o->vec_candidates, 0);
    else if (o->vec_scan == SEARCH_VEC_SCAN_AUTO)
        vec_topk_two_stage(t, depth * (size_t)o->vec_candidates, SEARCH_VEC_SCAN_AUTO_ROWS);
}

/* A scan started by vec_start and finished by vec_run: what it reads is
 * held until then. The scan itself reads no SQL (the segments are in
 * memory or read by pread), so it runs on a pool's worker while the
 * keyword channels read the index on the search's thread. */
struct search_vec_scan {
    vec_topk *t;
    int8_t *qq;
    uint8_t *allow, *chunks;
    int64_t model_id;
    int64_t seg_first, seg_last;   /* the model's segments, for a failed read's message */
    vcache *cache;
    vcache_taken *taken;       /* with a cache: the segments held */
    store_vec_seg *seg;        /* without: each sidecar read through a small buffer */
    const vec_block **blk;
    size_t n_blk, n_seg;
    pool *pool;
    pool_job job;
    int submitted;
};

static void scan_job(void *arg)
{
    search_vec_scan *v = arg;
    vec_topk_scan_all(v->t, v->blk, v->n_blk);
}

/* Without a cache: every segment opened as a stream (store_vec_segment_stream),
 * scanned as one (the threads start once). */
static trove_err open_streams(store *st, const int64_t *segs, size_t n_segs, int dim,
                              search_vec_scan *v)
{
    v->seg = xcalloc(n_segs ? n_segs : 1, sizeof *v->seg);
    v->blk = xcalloc(n_segs ? n_segs : 1, sizeof *v->blk);
    trove_err rc = TROVE_OK;
    for (; rc == TROVE_OK && v->n_seg < n_segs; v->n_seg++) {
        rc = store_vec_segment_stream(st, segs[v->n_seg], dim, &v->seg[v->n_seg]);
        v->blk[v->n_seg] = &v->seg[v->n_seg].blk;
    }
    v->n_blk = rc == TROVE_OK ? v->n_seg : 0;
    return rc;
}

/* Waits for the scan when one was started, then frees what it held. */
static void scan_free(search_vec_scan *v)
{
    if (!v)
        return;
    if (v->submitted)
        pool_wait(v->pool, &v->job);
    vcache_give(v->cache, v->taken);
    for (size_t i = 0; i < v->n_seg; i++)
        store_vec_segment_free(&v->seg[i]);
    free(v->seg);
    if (!v->taken)
        free(v->blk);   /* a cache's blocks are its own */
    vec_topk_free(v->t);
    free(v->allow);
    free(v->chunks);
    free(v->qq);
    free(v);
}

/* qf: the query's vector (embed_query), NULL when it has none. Reads
 * what the scan needs and starts it (*started: NULL when there is none to
 * run: no vector, no segment, a blank query). */
static trove_err vector_start(store *st, const search_opts *o, const float *qf,
                              const search_filter *f, size_t depth, search_results *out,
                              search_vec_scan **started)
{
    *started = NULL;
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
    search_vec_scan *v = xcalloc(1, sizeof *v);
    v->model_id = model_id;
    v->seg_first = segs[0];
    v->seg_last = segs[n_segs - 1];
    v->qq = xmalloc((size_t)dim);
    float qs = 0;
    vec_quantize(qf, dim, v->qq, &qs);
    rc = store_vec_floor_get(st, model_id, &out->vec_floor, &(int64_t){0},
                             &out->vec_floor_known);
    /* A zero vector is as close to every note as to none: ranking by it
     * ranked the index in id order (every cosine 0). */
    if (rc == TROVE_OK && vec_blank(qf, dim)) {
        out->vec_state = SEARCH_VEC_BLANK;
        scan_free(v);
        free(segs);
        return find_unembedded(st, o, model_id, out);
    }
    int64_t n_allow = 0, n_chunks = 0;
    if (rc == TROVE_OK)
        rc = search_filter_allowed(st, f, &v->allow, &n_allow);
    if (rc == TROVE_OK)
        rc = search_filter_chunks(st, f, &v->chunks, &n_chunks);
    vec_filter vf = {v->allow, n_allow, vec_min_score(o, out), v->chunks, n_chunks};
    if (rc == TROVE_OK) {
        v->t = vec_topk_new(depth, dim, v->qq, qs, &vf, o->vec_threads);
        vec_topk_use_pool(v->t, o->pool);
        two_stage(o, depth, v->t);
    }
    if (rc == TROVE_OK && o->vec_cache) {
        v->cache = o->vec_cache;
        /* auto: the stored sketches alone, as a cold search has them, so
         * the daemon's answer is the cold one's and no search makes any */
        rc = vcache_take(o->vec_cache, st, model_id, dim, v->t,
                         o->vec_scan == SEARCH_VEC_SCAN_TWO_STAGE, &v->taken);
        if (rc == TROVE_OK)
            v->blk = (const vec_block **)vcache_taken_blocks(v->taken, &v->n_blk);
    }
    if (rc == TROVE_OK && !o->vec_cache)
        rc = open_streams(st, segs, n_segs, dim, v);
    free(segs);
    if (rc) {
        scan_free(v);
        return rc;
    }
    v->pool = o->pool;
    pool_submit(v->pool, &v->job, scan_job, v);
    v->submitted = 1;
    *started = v;
    return TROVE_OK;
}

/* The started scan's notes into cs, then what the index lacks. */
static trove_err vector_finish(store *st, const search_opts *o, search_vec_scan *v, cand_set *cs,
                               search_results *out)
{
    pool_wait(v->pool, &v->job);
    v->submitted = 0;
    if (vec_topk_failed(v->t))
        return trove_fail(TROVE_EIO, "reading a vector segment from its sidecar file failed "
                          "(segments %lld to %lld)", (long long)v->seg_first,
                          (long long)v->seg_last);
    size_t n;
    const vec_hit *h = vec_topk_results(v->t, &n);
    for (size_t i = 0; i < n; i++) {
        cand *c = search_cand_get(cs, h[i].doc_id, 1);
        c->ch[SEARCH_CH_VECTOR].rank = (int)i + 1;
        c->ch[SEARCH_CH_VECTOR].score = h[i].score;
        c->vec_chunk_id = h[i].chunk_id;
    }
    return find_unembedded(st, o, v->model_id, out);
}

static int vec_wanted(const search_ctx *c)
{
    return (c->o->model || c->o->query_vec) && (c->o->vector_only || c->o->weights[SEARCH_CH_VECTOR] > 0);
}

static trove_err vec_before(search_ctx *c)
{
    return embed_query(c->st, c->o, &c->qvec);
}

static trove_err vec_start(search_ctx *c)
{
    return vector_start(c->st, c->o, c->qvec, c->f, c->depth, c->out, &c->vec_scan);
}

static trove_err vec_run(search_ctx *c, cand_set *cs)
{
    trove_err rc = c->vec_scan ? vector_finish(c->st, c->o, c->vec_scan, cs, c->out) : TROVE_OK;
    scan_free(c->vec_scan);
    c->vec_scan = NULL;
    return rc;
}

static void vec_end(search_ctx *c)
{
    scan_free(c->vec_scan);
    c->vec_scan = NULL;
}

const search_channel search_ch_vector = {.name = "vector", .wanted = vec_wanted,
                                         .before = vec_before, .run = vec_run,
                                         .start = vec_start, .end = vec_end};
