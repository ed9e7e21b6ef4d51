/* vembed — see vembed.h. */
#include "index/vembed.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_vec.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"
#include "vec/vec.h"

/* Bump when vembed_text() changes what it produces: stored vectors of the
 * old text are then stale. */
#define TEXT_FORMAT "t1"

/* Chunks read from the index per round trip. */
#define FETCH 256

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

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
    r->last_commit = now();
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
                         now() - r->t0, committed};
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
        if (now() - r->last_commit >= r->every) {
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

trove_err vembed_run(store *st, embed_model *m, const vembed_opts *opts, vembed_stats *stats)
{
    static const vembed_opts defaults = {0};
    const vembed_opts *o = opts ? opts : &defaults;
    memset(stats, 0, sizeof *stats);
    run r = {.st = st, .m = m, .o = o, .stats = stats, .dim = embed_dim(m), .t0 = now()};
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
    if (rc == TROVE_OK)
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
    while (rc == TROVE_OK) {
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
        if (rc == TROVE_OK && now() - r.last_commit >= r.every) {
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
    stats->secs = now() - r.t0;
    free(texts);
    free(ids);
    free(hs);
    free(r.fbuf);
    free(r.locs);
    pending_free(&r.pend);
    return rc;
}
