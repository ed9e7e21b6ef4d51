/* model — loading, validation, chunking, pooling and prefix caches; the
 * layers themselves are in bert.c, gemma.c and qwen3.c. See model.h. */
#define EMODEL_INTERNAL
#include "embed/arch/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* Tokens per forward chunk: large enough for sgemm to run near its peak,
 * small enough that the workspace of a 32 x 256-token batch stays within a
 * few tens of MB (the FFN activations dominate: chunk x n_ff floats). */
#define EMODEL_CHUNK 2048

const char *emodel_pool_name(emodel_pool p)
{
    switch (p) {
    case EMODEL_POOL_NONE: return "none";
    case EMODEL_POOL_MEAN: return "mean";
    case EMODEL_POOL_CLS: return "cls";
    case EMODEL_POOL_LAST: return "last";
    case EMODEL_POOL_RANK: return "rank";
    }
    return "unknown";
}

const emodel_hparams *emodel_hp(const emodel *m)
{
    return &m->hp;
}

const char *emodel_key(emodel *m, const char *suffix, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", m->prefix, suffix);
    return buf;
}

float *emodel_buf(emodel *m, int i, size_t n)
{
    if (m->ws.cap[i] < n) {
        free(m->ws.buf[i]);
        m->ws.buf[i] = xmalloc(n * sizeof(float));
        m->ws.cap[i] = n;
    }
    return m->ws.buf[i];
}

static const char *shape_str(const int64_t *ne, int n, char *buf, size_t cap)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, "[");
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", ne[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
    return buf;
}

static trove_err check_shape(emodel *m, const gguf_tensor *t, const int64_t *want, int n)
{
    bool ok = true;
    for (int i = 0; i < GGUF_MAX_DIMS && ok; i++)
        ok = t->ne[i] == (i < n ? want[i] : 1);
    if (ok)
        return TROVE_OK;
    char a[96], b[96];
    int64_t have[GGUF_MAX_DIMS];
    int nd = t->n_dims > n ? t->n_dims : n;
    for (int i = 0; i < nd; i++)
        have[i] = t->ne[i];
    return trove_fail(TROVE_ECORRUPT, "%s: tensor %s has shape %s, expected %s",
                      gguf_path(m->f), t->name, shape_str(have, nd, a, sizeof a),
                      shape_str(want, n, b, sizeof b));
}

/* TROVE_Q8PACK=0 turns repacking off (benchmarks compare the paths). */
static bool pack_enabled(void)
{
    const char *v = getenv("TROVE_Q8PACK");
    return !(v && strcmp(v, "0") == 0);
}

trove_err emodel_mat(emodel *m, const char *name, int64_t n_in, int64_t n_out, bool required,
                     kmat *out, bool *present)
{
    memset(out, 0, sizeof *out);
    if (present)
        *present = false;
    const gguf_tensor *t = gguf_tensor_by_name(m->f, name);
    if (!t) {
        if (!required)
            return TROVE_OK;
        return trove_fail(TROVE_ECORRUPT, "%s: tensor %s is missing", gguf_path(m->f), name);
    }
    int64_t want[2] = {n_in, n_out};
    trove_err e = check_shape(m, t, want, 2);
    if (e)
        return e;
    size_t row = quant_row_size(t->type, n_in);
    if (row == 0)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tensor %s: rows of %" PRId64
                          " elements cannot be stored as %s", gguf_path(m->f), name, n_in,
                          quant_type_name(t->type));
    if (row * (size_t)n_out > t->nbytes)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor %s: %zu bytes of data, need %zu",
                          gguf_path(m->f), name, t->nbytes, row * (size_t)n_out);
    out->type = t->type;
    out->n_in = n_in;
    out->n_out = n_out;
    out->data = t->data;
    out->name = t->name;
    /* Layer matrices multiply a row per token: repack the q8pack types
     * (Q8_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K) for the int8 kernels (not
     * token_embd or an LM head, read a row at a time).
     * Only reserved here: emodel_pack fills them on the pool's threads
     * when the first forward pass needs them (out->pack is set then). */
    if (q8pack_type_ok(t->type) && strncmp(name, "blk.", 4) == 0 && pack_enabled()) {
        q8pack *pk = q8pack_alloc(t->type, n_in, n_out);
        if (pk) {
            xgrow(&m->packs, &m->cap_packs, m->n_packs + 1, sizeof *m->packs);
            xgrow(&m->pack_mats, &m->cap_pack_mats, m->n_packs + 1, sizeof *m->pack_mats);
            m->packs[m->n_packs] = pk;
            m->pack_mats[m->n_packs++] = out;
        }
    }
    if (present)
        *present = true;
    return TROVE_OK;
}

static float *own(emodel *m, size_t n)
{
    float *v = xmalloc(n * sizeof(float));
    xgrow(&m->owned, &m->cap_owned, m->n_owned + 1, sizeof *m->owned);
    m->owned[m->n_owned++] = v;
    return v;
}

trove_err emodel_vec(emodel *m, const char *name, int64_t n, bool required, float **out)
{
    *out = NULL;
    const gguf_tensor *t = gguf_tensor_by_name(m->f, name);
    if (!t) {
        if (!required)
            return TROVE_OK;
        return trove_fail(TROVE_ECORRUPT, "%s: tensor %s is missing", gguf_path(m->f), name);
    }
    int64_t want[1] = {n};
    trove_err e = check_shape(m, t, want, 1);
    if (e)
        return e;
    size_t row = quant_row_size(t->type, n);
    if (row == 0 || row > t->nbytes)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor %s: %s vector of %" PRId64
                          " elements does not fit its data", gguf_path(m->f), name,
                          quant_type_name(t->type), n);
    float *v = own(m, (size_t)n);
    quant_dequantize_row(t->type, t->data, v, n);
    *out = v;
    return TROVE_OK;
}

void emodel_embed_rows(emodel *m, const int32_t *ids, int64_t n, float *x)
{
    const uint8_t *base = m->tok_embd.data;
    for (int64_t t = 0; t < n; t++)
        quant_dequantize_row(m->tok_embd.type, base + (size_t)ids[t] * m->tok_row,
                             x + t * m->hp.n_embd, m->hp.n_embd);
}

const float *emodel_rope(emodel *m, int which, double base, int64_t len)
{
    emodel_ws *ws = &m->ws;
    int64_t d = m->hp.head_dim;
    if (ws->rope_len[which] < len) {
        free(ws->rope[which]);
        ws->rope[which] = xmalloc((size_t)(len * d) * sizeof(float));
        kern_rope_table(ws->rope[which], len, d, base);
        ws->rope_len[which] = len;
    }
    return ws->rope[which];
}

void emodel_layout(emodel *m, const emodel_batch *b, int64_t s0, int64_t ns, int64_t T)
{
    emodel_ws *w = &m->ws;
    if (w->pos_cap < (size_t)T) {
        free(w->pos);
        w->pos = xmalloc((size_t)T * sizeof *w->pos);
        w->pos_cap = (size_t)T;
    }
    if (w->lcap < (size_t)ns) {
        free(w->lstart);
        free(w->llen);
        w->lstart = xmalloc((size_t)ns * sizeof *w->lstart);
        w->llen = xmalloc((size_t)ns * sizeof *w->llen);
        w->lcap = (size_t)ns;
    }
    int64_t off = 0, p0 = b->prefix ? b->prefix->n : 0;
    w->max_len = 0;
    for (int64_t s = 0; s < ns; s++) {
        int64_t len = b->len[s0 + s];
        w->lstart[s] = off;
        w->llen[s] = len;
        for (int64_t t = 0; t < len; t++)
            w->pos[off + t] = (int32_t)(p0 + t);
        off += len;
        if (p0 + len > w->max_len)
            w->max_len = p0 + len; /* longest position + 1: the RoPE table's size */
    }
}

/* ---- loading ---- */

static int64_t dim_value(const emodel_hparams *hp, emodel_dim d)
{
    switch (d) {
    case EMODEL_D_NONE: return 0;
    case EMODEL_D_EMBD: return hp->n_embd;
    case EMODEL_D_FF: return hp->n_ff;
    case EMODEL_D_HEAD: return hp->head_dim;
    case EMODEL_D_Q: return hp->n_head * hp->head_dim;
    case EMODEL_D_KV: return hp->n_head_kv * hp->head_dim;
    case EMODEL_D_3EMBD: return 3 * hp->n_embd;
    }
    return 0;
}

static trove_err load_layer(emodel *m, int il, const emodel_tensor *spec, size_t n,
                            unsigned char *L)
{
    char name[96];
    for (size_t i = 0; i < n; i++) {
        const emodel_tensor *t = &spec[i];
        if (t->when && *(const bool *)(L + t->when - 1) != t->when_is)
            continue;
        snprintf(name, sizeof name, "blk.%d.%s", il, t->name);
        int64_t in = dim_value(&m->hp, t->in);
        bool *present = t->present ? (bool *)(L + t->present - 1) : NULL;
        trove_err e;
        if (t->out == EMODEL_D_NONE) {
            float **v = (float **)(void *)(L + t->field - 1);
            e = emodel_vec(m, name, in, t->required, v);
            if (!e && present)
                *present = *v != NULL;
        } else {
            e = emodel_mat(m, name, in, dim_value(&m->hp, t->out), t->required,
                           (kmat *)(void *)(L + t->field - 1), present);
        }
        if (e)
            return e;
    }
    return TROVE_OK;
}

trove_err emodel_load_layers(emodel *m, const emodel_tensor *spec, size_t n, size_t layer_size,
                             void *layers)
{
    unsigned char *all = layers;
    for (int il = 0; il < m->hp.n_layer; il++) {
        trove_err e = load_layer(m, il, spec, n, all + (size_t)il * layer_size);
        if (e)
            return e;
    }
    return TROVE_OK;
}

static trove_err req_u32(emodel *m, const char *suffix, int64_t lo, int64_t hi, int64_t *out)
{
    char key[128];
    uint32_t v;
    emodel_key(m, suffix, key, sizeof key);
    trove_err e = gguf_get_u32(m->f, key, &v);
    if (e == TROVE_ENOENT)
        return trove_fail(TROVE_ECORRUPT, "%s: metadata key %s is missing", gguf_path(m->f), key);
    if (e)
        return e;
    if ((int64_t)v < lo || (int64_t)v > hi)
        return trove_fail(TROVE_ECORRUPT, "%s: %s = %u is out of range [%" PRId64 ", %" PRId64
                          "]", gguf_path(m->f), key, v, lo, hi);
    *out = v;
    return TROVE_OK;
}

static trove_err opt_u32(emodel *m, const char *suffix, int64_t lo, int64_t hi, int64_t dflt,
                         int64_t *out)
{
    char key[128];
    if (gguf_find_key(m->f, emodel_key(m, suffix, key, sizeof key)) < 0) {
        *out = dflt;
        return TROVE_OK;
    }
    return req_u32(m, suffix, lo, hi, out);
}

trove_err emodel_f64_or(emodel *m, const char *suffix, double dflt, double *out)
{
    char key[128];
    double v;
    emodel_key(m, suffix, key, sizeof key);
    if (gguf_find_key(m->f, key) < 0) {
        *out = dflt;
        return TROVE_OK;
    }
    trove_err e = gguf_get_f64(m->f, key, &v);
    if (e)
        return e;
    *out = v;
    return TROVE_OK;
}

trove_err emodel_head_dim_eps(emodel *m)
{
    emodel_hparams *hp = &m->hp;
    trove_err e;
    int64_t dk, dv;
    if ((e = opt_u32(m, "attention.key_length", 1, 1 << 16, hp->n_embd / hp->n_head, &dk)) ||
        (e = opt_u32(m, "attention.value_length", 1, 1 << 16, dk, &dv)))
        return e;
    if (dk < 2 || dk > 4096 || dk % 2 || dv != dk)
        return trove_fail(TROVE_ECORRUPT, "%s: unsupported head size (key %lld, value %lld)",
                          gguf_path(m->f), (long long)dk, (long long)dv);
    hp->head_dim = dk;
    double eps;
    if ((e = emodel_f64_or(m, "attention.layer_norm_rms_epsilon", 1e-6, &eps)))
        return e;
    if (!(eps >= 0 && eps < 1))
        return trove_fail(TROVE_ECORRUPT, "%s: %sattention.layer_norm_rms_epsilon out of range",
                          gguf_path(m->f), m->prefix);
    hp->eps = (float)eps;
    return TROVE_OK;
}

static trove_err load_common(emodel *m)
{
    emodel_hparams *hp = &m->hp;
    trove_err e;
    if ((e = req_u32(m, "embedding_length", 1, 1 << 16, &hp->n_embd)) ||
        (e = req_u32(m, "block_count", 1, EMODEL_MAX_LAYERS, &hp->n_layer)) ||
        (e = req_u32(m, "attention.head_count", 1, hp->n_embd, &hp->n_head)) ||
        (e = opt_u32(m, "attention.head_count_kv", 1, hp->n_head, hp->n_head, &hp->n_head_kv)) ||
        (e = req_u32(m, "feed_forward_length", 1, 1 << 20, &hp->n_ff)) ||
        (e = opt_u32(m, "context_length", 1, 1 << 20, 512, &hp->n_ctx)))
        return e;
    if (hp->n_head % hp->n_head_kv)
        return trove_fail(TROVE_ECORRUPT, "%s: head_count %" PRId64 " is not a multiple of "
                          "head_count_kv %" PRId64, gguf_path(m->f), hp->n_head, hp->n_head_kv);
    int64_t pool;
    /* a decoder's only meaningful summary is its last token (llama.cpp
     * defaults qwen3 files without the key to it too) */
    int64_t dflt = hp->causal ? EMODEL_POOL_LAST : EMODEL_POOL_MEAN;
    if ((e = opt_u32(m, "pooling_type", 0, 4, dflt, &pool)))
        return e;
    hp->pool = (emodel_pool)pool;

    const gguf_tensor *t = gguf_tensor_by_name(m->f, "token_embd.weight");
    if (!t)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor token_embd.weight is missing",
                          gguf_path(m->f));
    if (t->n_dims != 2 || t->ne[1] < 1)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor token_embd.weight is not a matrix",
                          gguf_path(m->f));
    hp->n_vocab = t->ne[1];
    return emodel_mat(m, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->tok_embd, NULL);
}

static trove_err load_heads(emodel *m)
{
    emodel_hparams *hp = &m->hp;
    trove_err e;
    /* Cross-encoder head: cls = dense (n_embd -> n_embd) + tanh, cls.output
     * = n_embd -> labels. Either may be absent (jina-style rerankers have
     * only cls.output... or only cls). */
    const gguf_tensor *co = gguf_tensor_by_name(m->f, "cls.output.weight");
    if ((e = emodel_mat(m, "cls.weight", hp->n_embd, hp->n_embd, false, &m->cls, &m->has_cls)) ||
        (e = emodel_vec(m, "cls.bias", hp->n_embd, false, &m->cls_b)))
        return e;
    if (co) {
        int64_t labels = co->n_dims >= 2 ? co->ne[1] : 1;
        if (labels < 1 || labels > 1024)
            labels = 1;
        if ((e = emodel_mat(m, "cls.output.weight", hp->n_embd, labels, true, &m->cls_out,
                            &m->has_cls_out)) ||
            (e = emodel_vec(m, "cls.output.bias", labels, false, &m->cls_out_b)))
            return e;
        hp->n_cls_out = labels;
    } else if (m->has_cls) {
        hp->n_cls_out = hp->n_embd;
    }
    /* sentence-transformers Dense modules after pooling. */
    hp->n_out = hp->n_embd;
    const gguf_tensor *d2 = gguf_tensor_by_name(m->f, "dense_2.weight");
    if (d2) {
        int64_t o = d2->n_dims >= 2 ? d2->ne[1] : 0;
        if (o < 1 || o > (1 << 16))
            return trove_fail(TROVE_ECORRUPT, "%s: tensor dense_2.weight is not a matrix",
                              gguf_path(m->f));
        if ((e = emodel_mat(m, "dense_2.weight", hp->n_embd, o, true, &m->dense2, &m->has_dense2)) ||
            (e = emodel_vec(m, "dense_2.bias", o, false, &m->dense2_b)))
            return e;
        hp->n_out = o;
    }
    const gguf_tensor *d3 = gguf_tensor_by_name(m->f, "dense_3.weight");
    if (d3) {
        int64_t o = d3->n_dims >= 2 ? d3->ne[1] : 0;
        if (o < 1 || o > (1 << 16))
            return trove_fail(TROVE_ECORRUPT, "%s: tensor dense_3.weight is not a matrix",
                              gguf_path(m->f));
        if ((e = emodel_mat(m, "dense_3.weight", hp->n_out, o, true, &m->dense3, &m->has_dense3)) ||
            (e = emodel_vec(m, "dense_3.bias", o, false, &m->dense3_b)))
            return e;
        hp->n_out = o;
    }
    return TROVE_OK;
}

trove_err emodel_load(const gguf_file *f, emodel **out)
{
    *out = NULL;
    const char *arch = gguf_str_or(f, "general.architecture", NULL);
    if (!arch)
        return trove_fail(TROVE_ECORRUPT, "%s: metadata key general.architecture is missing",
                          gguf_path(f));
    emodel *m = xcalloc(1, sizeof *m);
    m->f = f;
    m->hp.arch_name = arch;
    if (strcmp(arch, "bert") == 0) {
        m->hp.arch = EMODEL_BERT;
        m->ops = &emodel_bert_ops;
    } else if (strcmp(arch, "gemma-embedding") == 0) {
        m->hp.arch = EMODEL_GEMMA;
        m->ops = &emodel_gemma_ops;
    } else if (strcmp(arch, "qwen3") == 0) {
        m->hp.arch = EMODEL_QWEN3;
        m->hp.causal = true;
        m->ops = &emodel_qwen3_ops;
    } else {
        free(m);
        return trove_fail(TROVE_EUNSUPPORTED, "%s: unsupported architecture '%s' (trove runs "
                          "bert, gemma-embedding and qwen3)", gguf_path(f), arch);
    }
    if (strlen(arch) + 2 > sizeof m->prefix) {
        free(m);
        return trove_fail(TROVE_EUNSUPPORTED, "%s: architecture name too long", gguf_path(f));
    }
    snprintf(m->prefix, sizeof m->prefix, "%s.", arch);
    trove_err e = load_common(m);
    if (!e) {
        m->tok_row = quant_row_size(m->tok_embd.type, m->hp.n_embd);
        e = m->ops->load(m, f);
    }
    if (!e)
        e = load_heads(m);
    if (e) {
        emodel_free(m);
        return e;
    }
    *out = m;
    return TROVE_OK;
}

void emodel_free(emodel *m)
{
    if (!m)
        return;
    kprof_print();
    if (m->ops && m->ops->free)
        m->ops->free(m);
    for (size_t i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    for (size_t i = 0; i < m->n_packs; i++)
        q8pack_free(m->packs[i]);
    free(m->packs);
    free(m->pack_mats);
    for (int i = 0; i < 8; i++)
        free(m->ws.buf[i]);
    for (int i = 0; i < 2; i++)
        free(m->ws.rope[i]);
    free(m->ws.pos);
    free(m->ws.lstart);
    free(m->ws.llen);
    free(m);
}

/* ---- forward ---- */

/* Pooled vector of one sequence's hidden states h (len x n); a decoder's
 * rank head reads the last token, the only one that has seen them all. */
static void pool_rows(emodel_pool pool, bool causal, const float *h, int64_t len, int64_t n,
                      float *dst)
{
    if (pool == EMODEL_POOL_RANK && causal)
        pool = EMODEL_POOL_LAST;
    if (pool == EMODEL_POOL_CLS || pool == EMODEL_POOL_RANK) {
        memcpy(dst, h, (size_t)n * sizeof(float));
    } else if (pool == EMODEL_POOL_LAST) {
        memcpy(dst, h + (len - 1) * n, (size_t)n * sizeof(float));
    } else {
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int64_t t = 0; t < len; t++)
                s += h[t * n + i];
            dst[i] = (float)(s / (double)len);
        }
    }
}

static trove_err check_batch(emodel *m, const emodel_batch *b, emodel_pool pool)
{
    if (pool == EMODEL_POOL_RANK && !m->has_cls && !m->has_cls_out)
        return trove_fail(TROVE_EINVAL, "%s: model has no classification head (cls.*), it "
                          "cannot rerank", gguf_path(m->f));
    int64_t p0 = 0;
    if (b->prefix) {
        if (b->prefix->m != m)
            return trove_fail(TROVE_EINVAL, "%s: the prefix cache belongs to another model",
                              gguf_path(m->f));
        p0 = b->prefix->n;
    }
    for (int64_t s = 0; s < b->n_seq; s++) {
        if (b->len[s] < 1 || p0 + b->len[s] > m->hp.n_ctx)
            return trove_fail(TROVE_EINVAL, "sequence %" PRId64 " has %" PRId64 " tokens%s; the "
                              "model takes 1 to %" PRId64, s, p0 + b->len[s],
                              p0 ? " with its prefix" : "", m->hp.n_ctx);
        const int32_t *ids = b->ids + b->start[s];
        for (int64_t t = 0; t < b->len[s]; t++)
            if (ids[t] < 0 || ids[t] >= m->hp.n_vocab)
                return trove_fail(TROVE_EINVAL, "token id %d is outside the vocabulary (%" PRId64
                                  " entries)", ids[t], m->hp.n_vocab);
    }
    return TROVE_OK;
}

static trove_err forward_run(emodel *m, kpool *p, const emodel_batch *b, emodel_pool pool,
                             float *out);

/* ---- repacking (q8pack's types), once, on the pool ---- */

#define PACK_CHUNK 4 /* groups of 16 rows per task */

typedef struct pack_job {
    emodel *m;
    int64_t *first; /* first task of each matrix, n_packs + 1 entries */
} pack_job;

static void pack_task(void *ctx, int task, int tid)
{
    const pack_job *j = ctx;
    (void)tid;
    size_t i = 0;
    while (j->first[i + 1] <= task)
        i++;
    const kmat *w = j->m->pack_mats[i];
    int64_t groups = w->n_out / Q8PACK_NR;
    int64_t g0 = (task - j->first[i]) * PACK_CHUNK;
    int64_t g1 = g0 + PACK_CHUNK < groups ? g0 + PACK_CHUNK : groups;
    q8pack_fill(j->m->packs[i], w->data, g0, g1);
}

/* Fill every reserved pack and attach it to its matrix: the work of the
 * whole file's packable layers (a few hundred ms for 0.6B weights), spread
 * over the pool instead of serialised in emodel_load. */
static void pack_all(emodel *m, kpool *p)
{
    if (m->packed)
        return;
    m->packed = true;
    if (m->n_packs == 0)
        return;
    pack_job j = {.m = m, .first = xmalloc((m->n_packs + 1) * sizeof(int64_t))};
    j.first[0] = 0;
    for (size_t i = 0; i < m->n_packs; i++) {
        int64_t groups = m->pack_mats[i]->n_out / Q8PACK_NR;
        j.first[i + 1] = j.first[i] + (groups + PACK_CHUNK - 1) / PACK_CHUNK;
    }
    if (j.first[m->n_packs] > INT32_MAX / 2) { /* absurd shapes: keep the old path */
        free(j.first);
        return;
    }
    kpool_run(p, (int)j.first[m->n_packs], pack_task, &j);
    free(j.first);
    for (size_t i = 0; i < m->n_packs; i++)
        m->pack_mats[i]->pack = m->packs[i];
}

trove_err emodel_forward(emodel *m, kpool *p, const emodel_batch *b, emodel_pool pool,
                         float *out)
{
    pack_all(m, p);
    if (!kprof_on())
        return forward_run(m, p, b, pool, out);
    double t0 = kprof_now_ms();
    trove_err e = forward_run(m, p, b, pool, out);
    kprof_add(KPROF_FORWARD, kprof_now_ms() - t0, 0);
    return e;
}

static trove_err forward_run(emodel *m, kpool *p, const emodel_batch *b, emodel_pool pool,
                             float *out)
{
    trove_err e = check_batch(m, b, pool);
    if (e)
        return e;
    const emodel_hparams *hp = &m->hp;
    int64_t n = hp->n_embd;
    int64_t s0 = 0;
    m->ws.last_only = hp->causal && (pool == EMODEL_POOL_LAST || pool == EMODEL_POOL_RANK);
    m->ws.first_only = !hp->causal && (pool == EMODEL_POOL_CLS || pool == EMODEL_POOL_RANK);
    while (s0 < b->n_seq) {
        int64_t ns = 0, T = 0;
        while (s0 + ns < b->n_seq && (ns == 0 || T + b->len[s0 + ns] <= EMODEL_CHUNK))
            T += b->len[s0 + ns++];
        float *x = emodel_buf(m, 0, (size_t)(T * n));
        m->ops->forward(m, p, b, s0, ns, T, x);

        if (pool == EMODEL_POOL_NONE) {
            int64_t off = 0;
            for (int64_t s = s0; s < s0 + ns; s++) {
                memcpy(out + b->start[s] * n, x + off * n, (size_t)(b->len[s] * n) * sizeof(float));
                off += b->len[s];
            }
            s0 += ns;
            continue;
        }
        float *P = emodel_buf(m, 6, (size_t)(ns * n));
        int64_t off = 0;
        for (int64_t s = 0; s < ns; s++) {
            pool_rows(pool, hp->causal, x + off * n, b->len[s0 + s], n, P + s * n);
            off += b->len[s0 + s];
        }
        if (pool == EMODEL_POOL_RANK) {
            float *H = P;
            if (m->has_cls) {
                H = emodel_buf(m, 7, (size_t)(ns * n));
                kern_linear(p, &m->cls, m->cls_b, P, n, ns, H, n);
                kern_tanh(H, ns * n);
            }
            if (m->has_cls_out)
                kern_linear(p, &m->cls_out, m->cls_out_b, H, n, ns, out + s0 * hp->n_cls_out,
                            hp->n_cls_out);
            else
                memcpy(out + s0 * hp->n_cls_out, H, (size_t)(ns * n) * sizeof(float));
        } else if (m->has_dense2 || m->has_dense3) {
            float *cur = P;
            int64_t w = n;
            if (m->has_dense2) {
                float *D = emodel_buf(m, 7, (size_t)(ns * m->dense2.n_out));
                kern_linear(p, &m->dense2, m->dense2_b, cur, w, ns, D, m->dense2.n_out);
                cur = D;
                w = m->dense2.n_out;
            }
            if (m->has_dense3) {
                float *D = emodel_buf(m, cur == P ? 7 : 1, (size_t)(ns * m->dense3.n_out));
                kern_linear(p, &m->dense3, m->dense3_b, cur, w, ns, D, m->dense3.n_out);
                cur = D;
                w = m->dense3.n_out;
            }
            memcpy(out + s0 * hp->n_out, cur, (size_t)(ns * w) * sizeof(float));
        } else {
            memcpy(out + s0 * n, P, (size_t)(ns * n) * sizeof(float));
        }
        s0 += ns;
    }
    return TROVE_OK;
}

/* ---- prefix caches and token heads (decoders) ---- */

static trove_err check_ids(emodel *m, const int32_t *ids, int64_t n)
{
    for (int64_t t = 0; t < n; t++)
        if (ids[t] < 0 || ids[t] >= m->hp.n_vocab)
            return trove_fail(TROVE_EINVAL, "token id %d is outside the vocabulary (%" PRId64
                              " entries)", ids[t], m->hp.n_vocab);
    return TROVE_OK;
}

/* Room in kv for `need` tokens: each layer's slab moves to its place in
 * larger arrays (the layers are laid out cap apart). */
static void kv_reserve(emodel_kv *kv, int64_t layers, int64_t need)
{
    if (need <= kv->cap)
        return;
    int64_t cap = kv->cap ? kv->cap : 16;
    while (cap < need)
        cap *= 2;
    size_t row = (size_t)kv->width * sizeof(float);
    float *k = xmalloc((size_t)(layers * cap) * row), *v = xmalloc((size_t)(layers * cap) * row);
    for (int64_t il = 0; il < layers && kv->n; il++) {
        memcpy(k + il * cap * kv->width, kv->k + il * kv->cap * kv->width, (size_t)kv->n * row);
        memcpy(v + il * cap * kv->width, kv->v + il * kv->cap * kv->width, (size_t)kv->n * row);
    }
    free(kv->k);
    free(kv->v);
    kv->k = k;
    kv->v = v;
    kv->cap = cap;
}

/* ids continuing kv into it; the last token's final hidden state (or NULL
 * on error, with the error set). */
static trove_err kv_run(emodel *m, kpool *p, emodel_kv *kv, const int32_t *ids, int64_t n,
                        float **last)
{
    if (!m->ops->prefill)
        return trove_fail(TROVE_EINVAL, "%s: %s is not a decoder; it has no key/value cache",
                          gguf_path(m->f), m->hp.arch_name);
    if (kv->m != m)
        return trove_fail(TROVE_EINVAL, "%s: the key/value cache belongs to another model",
                          gguf_path(m->f));
    if (n < 1 || kv->n + n > m->hp.n_ctx)
        return trove_fail(TROVE_EINVAL, "%" PRId64 " tokens after %" PRId64 "; the model takes "
                          "at most %" PRId64 " in all", n, kv->n, m->hp.n_ctx);
    trove_err e = check_ids(m, ids, n);
    if (e)
        return e;
    kv_reserve(kv, m->hp.n_layer, kv->n + n);
    pack_all(m, p);
    double t0 = kprof_on() ? kprof_now_ms() : 0;
    m->ws.last_only = true; /* only the last row's output is read */
    *last = m->ops->prefill(m, p, ids, n, kv);
    kv->n += n;
    if (kprof_on())
        kprof_add(KPROF_FORWARD, kprof_now_ms() - t0, 0);
    return TROVE_OK;
}

trove_err emodel_kv_new(emodel *m, kpool *p, const int32_t *ids, int64_t n, emodel_kv **out)
{
    *out = NULL;
    if (n >= m->hp.n_ctx)
        return trove_fail(TROVE_EINVAL, "prefix of %" PRId64 " tokens; the model takes 1 to %"
                          PRId64, n, m->hp.n_ctx - 1);
    emodel_kv *kv = xcalloc(1, sizeof *kv);
    kv->m = m;
    kv->width = m->hp.n_head_kv * m->hp.head_dim;
    float *last;
    trove_err e = n == 0 && m->ops->prefill ? TROVE_OK : kv_run(m, p, kv, ids, n, &last);
    if (e) {
        emodel_kv_free(kv);
        return e;
    }
    *out = kv;
    return TROVE_OK;
}

trove_err emodel_kv_extend(emodel *m, kpool *p, emodel_kv *kv, const int32_t *ids, int64_t n,
                           float *logits)
{
    float *last;
    trove_err e = kv_run(m, p, kv, ids, n, &last);
    if (e || !logits)
        return e;
    const kmat *head = m->has_lm_head ? &m->lm_head : &m->tok_embd;
    kern_linear(p, head, NULL, last, m->hp.n_embd, 1, logits, head->n_out);
    return TROVE_OK;
}

void emodel_kv_free(emodel_kv *kv)
{
    if (!kv)
        return;
    free(kv->k);
    free(kv->v);
    free(kv);
}

int64_t emodel_lm_rows(const emodel *m)
{
    return m->has_lm_head ? m->lm_head.n_out : m->tok_embd.n_out;
}

int64_t emodel_kv_len(const emodel_kv *kv)
{
    return kv->n;
}

trove_err emodel_token_head(emodel *m, const int32_t *ids, int n)
{
    const kmat *src = m->has_lm_head ? &m->lm_head : &m->tok_embd;
    if (n < 1 || n > 64)
        return trove_fail(TROVE_EINVAL, "a token head takes 1 to 64 tokens, not %d", n);
    int64_t H = m->hp.n_embd;
    size_t row = quant_row_size(src->type, H);
    float *w = own(m, (size_t)(n * H));
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= src->n_out)
            return trove_fail(TROVE_EINVAL, "%s: token %d has no row in %s", gguf_path(m->f),
                              ids[i], src->name);
        quant_dequantize_row(src->type, (const uint8_t *)src->data + (size_t)ids[i] * row,
                             w + i * H, H);
    }
    m->cls_out = (kmat){.type = GGML_TYPE_F32, .n_in = H, .n_out = n, .data = w,
                        .name = "token head"};
    m->cls_out_b = NULL;
    m->has_cls_out = true;
    m->has_cls = false;
    m->hp.n_cls_out = n;
    return TROVE_OK;
}
