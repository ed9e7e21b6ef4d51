/* vembed — see vembed.h. */
#include "index/vembed.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_vec.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/mem.h"
#include "util/str.h"
#include "vec/vec.h"

/* Bump when vembed_text() changes what it produces: stored vectors of the
 * old text are then stale. */
#define TEXT_FORMAT "t1"

/* Chunks read from the index per round trip. */
#define FETCH 256

char *vembed_fingerprint(const embed_model *m)
{
    embed_info info;
    embed_get_info(m, &info);
    tbuf b = {0};
    tbuf_printf(&b, "%s|%s", info.fingerprint ? info.fingerprint : "", TEXT_FORMAT);
    return tbuf_detach(&b);
}

/* The heading column holds the title and each heading on its own line
 * (" \n"-separated, see store.c); a chunk reads best as "Title / Heading"
 * followed by its text. */
char *vembed_text(const char *heading, const char *body)
{
    tbuf b = {0};
    for (const char *p = heading; *p; p++) {
        if (p[0] == ' ' && p[1] == '\n') {
            tbuf_puts(&b, " / ");
            p++;
        } else {
            tbuf_putc(&b, *p);
        }
    }
    if (b.len)
        tbuf_puts(&b, "\n\n");
    tbuf_puts(&b, body);
    return tbuf_detach(&b);
}

/* Vectors waiting for the next commit; they own their components. */
typedef struct pending {
    store_vec_entry *e;
    int8_t **q;
    size_t n, cap, qcap;
} pending;

static int8_t *pending_push(pending *p, int64_t chunk_id, uint64_t hash, int dim)
{
    xgrow(&p->e, &p->cap, p->n + 1, sizeof *p->e);
    if (p->n >= p->qcap) {
        size_t old = p->qcap;
        xgrow(&p->q, &p->qcap, p->n + 1, sizeof *p->q);
        for (size_t i = old; i < p->qcap; i++)
            p->q[i] = NULL;
    }
    if (!p->q[p->n])
        p->q[p->n] = xmalloc((size_t)dim);
    p->e[p->n] = (store_vec_entry){chunk_id, hash, 0, p->q[p->n]};
    return p->q[p->n++];
}

static void pending_free(pending *p)
{
    for (size_t i = 0; i < p->qcap; i++)
        free(p->q[i]);
    free(p->q);
    free(p->e);
}

typedef struct run {
    store *st;
    embed_model *m;
    const vembed_opts *o;
    vembed_stats *stats;
    int64_t model_id;
    int dim;
    store_vec_loc *locs;
    size_t n_locs;
    pending pend;
    float *fbuf;          /* batch x dim floats */
    double every;         /* seconds between commits */
    double t0, last_commit;
} run;

static trove_err flush(run *r)
{
    if (r->pend.n == 0)
        return TROVE_OK;
    trove_err rc = store_begin(r->st);
    size_t added = 0;
    if (rc == TROVE_OK)
        rc = store_vec_add(r->st, r->model_id, r->dim, r->pend.e, r->pend.n, &added);
    if (rc == TROVE_OK)
        rc = store_commit(r->st);
    if (rc) {
        store_rollback(r->st);
        return rc;
    }
    r->stats->stored += added;
    r->pend.n = 0;
    r->last_commit = clock_seconds();
    return TROVE_OK;
}

/* A stored vector of the same model and text, copied into place. */
static int try_reuse(run *r, int64_t chunk_id, uint64_t hash)
{
    size_t lo = 0, hi = r->n_locs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->locs[mid].text_hash < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < r->n_locs && r->locs[lo].text_hash == hash; lo++) {
        int8_t *q = pending_push(&r->pend, chunk_id, hash, r->dim);
        float scale;
        uint64_t got;
        if (store_vec_read(r->st, r->locs[lo].seg_id, r->locs[lo].slot, r->dim, q, &scale, &got) ==
                TROVE_OK && got == hash) {
            r->pend.e[r->pend.n - 1].scale = scale;
            return 1;
        }
        r->pend.n--;   /* merged away since: look further, or embed */
    }
    return 0;
}

static void report(run *r, int committed)
{
    if (!r->o->progress)
        return;
    vembed_progress p = {r->stats->embedded + r->stats->reused, r->stats->pending,
                         clock_seconds() - r->t0, committed};
    r->o->progress(r->o->progress_ctx, &p);
}

/* Embed texts[0..n) (chunk ids ids[], hashes hs[]) in batches. */
static trove_err embed_some(run *r, const char *const *texts, const int64_t *ids,
                            const uint64_t *hs, size_t n, size_t batch)
{
    for (size_t off = 0; off < n; off += batch) {
        size_t cnt = n - off < batch ? n - off : batch;
        if (r->o->model_lock)
            pthread_mutex_lock(r->o->model_lock);
        trove_err rc = embed_texts(r->m, texts + off, cnt, EMBED_DOCUMENT, r->fbuf);
        if (r->o->model_lock)
            pthread_mutex_unlock(r->o->model_lock);
        if (rc)
            return rc;
        for (size_t i = 0; i < cnt; i++) {
            int8_t *q = pending_push(&r->pend, ids[off + i], hs[off + i], r->dim);
            vec_quantize(r->fbuf + i * (size_t)r->dim, r->dim, q, &r->pend.e[r->pend.n - 1].scale);
        }
        r->stats->embedded += cnt;
        report(r, 0);
        if (r->o->interrupted && *r->o->interrupted)
            return TROVE_EINTR;
        if (clock_seconds() - r->last_commit >= r->every) {
            if ((rc = flush(r)) != TROVE_OK)
                return rc;
            report(r, 1);
        }
    }
    return TROVE_OK;
}

static trove_err prepare_model(run *r, const char *name)
{
    char *fp = vembed_fingerprint(r->m);
    trove_err rc = store_begin(r->st);
    if (rc == TROVE_OK && r->o->force) {
        int64_t old;
        rc = store_vec_model_find(r->st, fp, &old, NULL);
        if (rc == TROVE_OK && old)
            rc = store_vec_model_drop(r->st, old);
    }
    if (rc == TROVE_OK)
        rc = store_vec_model_ensure(r->st, fp, r->dim, name, &r->model_id);
    if (rc == TROVE_OK)
        rc = store_commit(r->st);
    else
        store_rollback(r->st);
    free(fp);
    return rc;
}

/* ---- noise floor ---------------------------------------------------------
 * What a query unrelated to every note reaches (vembed.h). Probes are
 * embedded as queries and scanned against every live vector; each gives
 * the best similarity it reaches:
 *   text probes (transformers): FLOOR_PROBES nonsense strings (made-up
 *     words, punctuation runs, letters of several scripts mixed), the same
 *     for every index; the floor is above all of them, by half their spread
 *     above their median (a new nonsense string is not one of the probes);
 *   word probes (static models, whose vector of nonsense is zero when no
 *     word of it is known, else that of its stray letters or signs, which
 *     are words to it): FLOOR_WORDS random words of the model's
 *     vocabulary; the floor is what FLOOR_WORD_QUANTILE of them stay under.
 * Similarities of random pairs of notes were tried and are no floor for
 * queries: with GloVe on SciFact unrelated chunks reach a median of 0.87,
 * a one-word query's real match 0.6 (docs/performance.md). */
#define FLOOR_PROBES 48
#define FLOOR_WORDS 128
#define FLOOR_WORD_QUANTILE 0.9

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void put_utf8(tbuf *b, unsigned cp)
{
    if (cp < 0x80) {
        tbuf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        tbuf_putc(b, (char)(0xC0 | cp >> 6));
        tbuf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        tbuf_putc(b, (char)(0xE0 | cp >> 12));
        tbuf_putc(b, (char)(0x80 | (cp >> 6 & 0x3F)));
        tbuf_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

/* Text probe i (a fixed seed: the same strings for every index). */
static char *floor_probe(uint64_t *rng, int i)
{
    static const char letters[] = "bcdfghjklmnpqrstvwxzyaeiou";
    static const char punct[] = "+-*/=_~^|<>#%&!?.,:;@$";
    /* first code point and size of a run of letters of each script */
    static const unsigned scripts[][2] = {
        {0x0430, 32}, {0x03B1, 25}, {0x0561, 38}, {0x10D0, 33}, {0x16A0, 75}, {0x05D0, 27},
    };
    tbuf b = {0};
    int kind = i % 4, n = 4 + (int)(rng_next(rng) % 7);
    for (int k = 0; k < n; k++) {
        uint64_t r = rng_next(rng);
        if (kind == 0 || (kind == 1 && r % 6 != 0)) {
            /* made-up words, mostly consonants (the vowels are the last 6) */
            tbuf_putc(&b, letters[r % 5 == 0 ? 20 + (r >> 8) % 6 : (r >> 8) % 20]);
        } else if (kind == 1) {
            tbuf_putc(&b, ' ');
        } else if (kind == 2) {
            tbuf_putc(&b, punct[(r >> 8) % (sizeof punct - 1)]);
        } else {
            const unsigned *sc = scripts[(r >> 8) % (sizeof scripts / sizeof *scripts)];
            put_utf8(&b, r % 3 == 0 ? (unsigned)letters[(r >> 16) % 20]
                                    : sc[0] + (unsigned)((r >> 16) % sc[1]));
        }
    }
    return tbuf_detach(&b);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, cmp_double);
    return v[(size_t)(q * (double)(n - 1) + 0.5)];
}

/* Probe vectors, quantised, each with its top-1 scan (zero vectors left
 * out: they tell nothing). */
typedef struct probes {
    int8_t *q;
    vec_topk **tk;
    size_t n, cap;
    int dim;
} probes;

static void probes_add(probes *p, const float *x)
{
    double norm = 0;
    for (int d = 0; d < p->dim; d++)
        norm += (double)x[d] * x[d];
    if (norm < 1e-12 || p->n >= p->cap)
        return;
    float qs;
    int8_t *q = p->q + p->n * (size_t)p->dim;
    vec_quantize(x, p->dim, q, &qs);
    p->tk[p->n++] = vec_topk_new(1, p->dim, q, qs, &(vec_filter){.min_score = -INFINITY}, 1);
}

/* The best similarity each probe reached, into top[]; frees the scans. */
static size_t probes_take(probes *p, double *top)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        size_t n;
        const vec_hit *h = vec_topk_results(p->tk[i], &n);
        if (n)
            top[k++] = h[0].score;
        vec_topk_free(p->tk[i]);
    }
    p->n = 0;
    return k;
}

static trove_err embed_probes(embed_model *m, pthread_mutex_t *lock, int dim, float *fv,
                              size_t *n_words)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    char *texts[FLOOR_PROBES];
    for (int i = 0; i < FLOOR_PROBES; i++)
        texts[i] = floor_probe(&rng, i);
    embed_info info;
    embed_get_info(m, &info);
    /* Single words need no framing in a static model (a transformer's
     * embed_tokens would need its special tokens: text probes only). */
    int32_t words[FLOOR_WORDS];
    int64_t start[FLOOR_WORDS], len[FLOOR_WORDS];
    *n_words = strcmp(info.format, "model2vec") == 0 && info.n_vocab > 1000 ? FLOOR_WORDS : 0;
    for (size_t i = 0; i < *n_words; i++) {
        /* past the first hundredth: special tokens and the commonest words */
        int64_t lo = info.n_vocab / 100;
        words[i] = (int32_t)(lo + (int64_t)(rng_next(&rng) % (uint64_t)(info.n_vocab - lo)));
        start[i] = (int64_t)i;
        len[i] = 1;
    }
    if (lock)
        pthread_mutex_lock(lock);
    trove_err rc = embed_texts(m, (const char *const *)texts, FLOOR_PROBES, EMBED_QUERY, fv);
    if (rc == TROVE_OK && *n_words)
        rc = embed_tokens(m, words, start, len, *n_words, fv + (size_t)FLOOR_PROBES * (size_t)dim);
    if (lock)
        pthread_mutex_unlock(lock);
    for (int i = 0; i < FLOOR_PROBES; i++)
        free(texts[i]);
    return rc;
}

/* Estimate the floor over the model's live vectors and store it. */
static trove_err floor_estimate(store *st, embed_model *m, int64_t model_id, int dim,
                                pthread_mutex_t *lock, int64_t live)
{
    size_t cap = FLOOR_PROBES + FLOOR_WORDS, n_words = 0;
    float *fv = xmalloc(cap * (size_t)dim * sizeof *fv);
    trove_err rc = embed_probes(m, lock, dim, fv, &n_words);
    probes text = {xmalloc(FLOOR_PROBES * (size_t)dim), xmalloc(FLOOR_PROBES * sizeof(vec_topk *)),
                   0, FLOOR_PROBES, dim};
    probes word = {xmalloc(FLOOR_WORDS * (size_t)dim), xmalloc(FLOOR_WORDS * sizeof(vec_topk *)),
                   0, FLOOR_WORDS, dim};
    /* A static model knows a nonsense string only by its stray letters or
     * signs ("x", "+"), which are words to it: its word probes say more. */
    for (size_t i = n_words ? FLOOR_PROBES : 0; rc == TROVE_OK && i < FLOOR_PROBES + n_words; i++)
        probes_add(i < FLOOR_PROBES ? &text : &word, fv + i * (size_t)dim);
    int64_t *segs = NULL;
    size_t n_segs = 0;
    if (rc == TROVE_OK)
        rc = store_read_begin(st);
    if (rc == TROVE_OK)
        rc = store_vec_segments(st, model_id, &segs, &n_segs);
    for (size_t i = 0; rc == TROVE_OK && i < n_segs; i++) {
        store_vec_seg seg;
        rc = store_vec_segment_load(st, segs[i], dim, &seg);
        for (size_t p = 0; rc == TROVE_OK && p < text.n; p++)
            vec_topk_scan(text.tk[p], &seg.blk);
        for (size_t p = 0; rc == TROVE_OK && p < word.n; p++)
            vec_topk_scan(word.tk[p], &seg.blk);
        store_vec_segment_free(&seg);
    }
    store_read_end(st);
    double ttop[FLOOR_PROBES], wtop[FLOOR_WORDS], floor = -1;
    size_t nt = probes_take(&text, ttop), nw = probes_take(&word, wtop);
    if (nt) {
        double max = quantile(ttop, nt, 1.0), mid = quantile(ttop, nt, 0.5);
        floor = max + 0.5 * (max - mid);
    }
    if (nw)
        floor = fmax(floor, quantile(wtop, nw, FLOOR_WORD_QUANTILE));
    floor = floor > 1 ? 1 : floor;
    /* Nothing known of any probe: no floor, the query's own vector decides. */
    if (rc == TROVE_OK && (nt || nw)) {
        rc = store_begin(st);
        if (rc == TROVE_OK)
            rc = store_vec_floor_set(st, model_id, floor, live);
        if (rc == TROVE_OK)
            rc = store_commit(st);
        else
            store_rollback(st);
    }
    free(segs);
    free(text.q);
    free(text.tk);
    free(word.q);
    free(word.tk);
    free(fv);
    return rc;
}

trove_err vembed_floor_refresh(store *st, embed_model *m, const vembed_opts *opts)
{
    char *fp = vembed_fingerprint(m);
    int64_t model_id;
    int dim;
    trove_err rc = store_vec_model_find(st, fp, &model_id, &dim);
    free(fp);
    if (rc || !model_id || dim != embed_dim(m))
        return rc;
    store_vec_model *models;
    size_t n;
    int64_t live = 0;
    if ((rc = store_vec_models(st, &models, &n)))
        return rc;
    for (size_t i = 0; i < n; i++)
        if (models[i].id == model_id)
            live = models[i].vectors;
    store_vec_models_free(models, n);
    double floor;
    int64_t at;
    int have;
    if ((rc = store_vec_floor_get(st, model_id, &floor, &at, &have)))
        return rc;
    /* Fresh while the index has grown or shrunk by a tenth at most. */
    int64_t moved = live > at ? live - at : at - live;
    if (have && moved * 10 <= at)
        return TROVE_OK;
    if (live == 0)
        return TROVE_OK;
    return floor_estimate(st, m, model_id, dim, opts ? opts->model_lock : NULL, live);
}

trove_err vembed_run(store *st, embed_model *m, const vembed_opts *opts, vembed_stats *stats)
{
    static const vembed_opts defaults = {0};
    const vembed_opts *o = opts ? opts : &defaults;
    memset(stats, 0, sizeof *stats);
    run r = {.st = st, .m = m, .o = o, .stats = stats, .dim = embed_dim(m),
             .t0 = clock_seconds()};
    r.last_commit = r.t0;
    if (r.dim <= 0 || r.dim > VEC_MAX_DIM)
        return trove_fail(TROVE_EUNSUPPORTED, "the model's vectors have %d dimensions (1..%d "
                          "supported)", r.dim, VEC_MAX_DIM);
    embed_info info;
    embed_get_info(m, &info);
    const char *name = o->name && *o->name ? o->name : info.name && *info.name ? info.name : info.arch;
    trove_err rc = prepare_model(&r, name);
    int64_t total = 0;
    if (rc == TROVE_OK)
        rc = store_vec_pending_count(st, r.model_id, &total);
    /* Nothing to embed (a no-op `update`): neither the stored vectors'
     * hashes (a read of every segment and a sort) nor a pass over the
     * chunks that would find none. */
    if (rc == TROVE_OK && total > 0)
        rc = store_vec_locations(st, r.model_id, &r.locs, &r.n_locs);
    if (rc)
        return rc;
    stats->pending = (size_t)total;
    size_t batch = o->batch > 0 ? (size_t)o->batch : 64;
    r.every = o->commit_secs > 0 ? o->commit_secs : 3.0;
    r.fbuf = xmalloc(batch * (size_t)r.dim * sizeof *r.fbuf);
    int64_t after = 0;
    char **texts = xmalloc(FETCH * sizeof *texts);
    int64_t *ids = xmalloc(FETCH * sizeof *ids);
    uint64_t *hs = xmalloc(FETCH * sizeof *hs);
    report(&r, 0);
    while (rc == TROVE_OK && total > 0) {
        store_vec_todo *todo;
        size_t n;
        /* A read transaction per round: a concurrent `update` may commit
         * between rounds; chunks it deleted are skipped at the commit. */
        if ((rc = store_vec_pending(st, r.model_id, after, FETCH, &todo, &n)) || n == 0)
            break;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            char *text = vembed_text(todo[i].heading, todo[i].body);
            uint64_t h = str_hash(text, strlen(text));
            if (try_reuse(&r, todo[i].chunk_id, h)) {
                stats->reused++;
                free(text);
                continue;
            }
            texts[k] = text;
            ids[k] = todo[i].chunk_id;
            hs[k++] = h;
        }
        after = todo[n - 1].chunk_id;
        store_vec_todo_free(todo, n);
        rc = embed_some(&r, (const char *const *)texts, ids, hs, k, batch);
        for (size_t i = 0; i < k; i++)
            free(texts[i]);
        /* Reused vectors cost no model time: commit them on the same clock. */
        if (rc == TROVE_OK && clock_seconds() - r.last_commit >= r.every) {
            rc = flush(&r);
            report(&r, 1);
        }
        if (rc == TROVE_OK && o->interrupted && *o->interrupted)
            rc = TROVE_EINTR;
    }
    /* Keep what was computed, also when interrupted. */
    if (rc == TROVE_OK || rc == TROVE_EINTR) {
        trove_err frc = flush(&r);
        if (frc)
            rc = frc;
        else
            report(&r, 1);
    }
    if (rc == TROVE_OK)
        rc = vembed_floor_refresh(st, m, o);
    stats->secs = clock_seconds() - r.t0;
    free(texts);
    free(ids);
    free(hs);
    free(r.fbuf);
    free(r.locs);
    pending_free(&r.pend);
    return rc;
}
