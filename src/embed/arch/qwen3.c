/* qwen3 — Qwen3 decoders (Qwen3-Embedding, Qwen3-Reranker), following the
 * HF Qwen3 model and llama.cpp's graph:
 *
 *   x = tok_embd[id]
 *   per layer:
 *     h = RMSNorm(x) * attn_norm
 *     q, k, v = Wq h, Wk h, Wv h              (GQA: n_head_kv <= n_head;
 *                                              head_dim from key_length, so
 *                                              n_head * head_dim may differ
 *                                              from n_embd)
 *     q, k = RMSNorm per head * attn_{q,k}_norm, then NeoX RoPE (pairs
 *            (i, i + d/2), base rope.freq_base)
 *     a = softmax(q k / sqrt(head_dim), causal) v
 *     x = x + Wo a
 *     h = RMSNorm(x) * ffn_norm
 *     x = x + Wdown (silu(Wgate h) * Wup h)
 *   out = RMSNorm(x) * output_norm
 *
 * The language-model head (output.weight, absent when tied to token_embd)
 * is only read for rerankers converted without a cls.output head
 * (emodel_token_head). A prefix cache (emodel_kv) holds each layer's keys
 * (after norm and RoPE) and values of a shared prompt prefix; batches that
 * continue it see those keys first, at positions shifted by its length. */
#define EMODEL_INTERNAL
#include "embed/arch/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

typedef struct qwen3_layer {
    kmat q, k, v, o, gate, up, down;
    float *q_b, *k_b, *v_b; /* optional (Qwen2-style biases; Qwen3 has none) */
    float *attn_norm, *q_norm, *k_norm, *ffn_norm;
} qwen3_layer;

typedef struct qwen3_w {
    float *out_norm;
    qwen3_layer *layers;
} qwen3_w;

#define AT(f) EMODEL_AT(qwen3_layer, f)
static const emodel_tensor qwen3_tensors[] = {
    EMODEL_VEC("attn_norm.weight", EMBD, true, AT(attn_norm)),
    EMODEL_MAT("attn_q.weight", EMBD, Q, true, AT(q)),
    EMODEL_MAT("attn_k.weight", EMBD, KV, true, AT(k)),
    EMODEL_MAT("attn_v.weight", EMBD, KV, true, AT(v)),
    EMODEL_VEC("attn_q.bias", Q, false, AT(q_b)),
    EMODEL_VEC("attn_k.bias", KV, false, AT(k_b)),
    EMODEL_VEC("attn_v.bias", KV, false, AT(v_b)),
    EMODEL_VEC("attn_q_norm.weight", HEAD, true, AT(q_norm)),
    EMODEL_VEC("attn_k_norm.weight", HEAD, true, AT(k_norm)),
    EMODEL_MAT("attn_output.weight", Q, EMBD, true, AT(o)),
    EMODEL_VEC("ffn_norm.weight", EMBD, true, AT(ffn_norm)),
    EMODEL_MAT("ffn_gate.weight", EMBD, FF, true, AT(gate)),
    EMODEL_MAT("ffn_up.weight", EMBD, FF, true, AT(up)),
    EMODEL_MAT("ffn_down.weight", FF, EMBD, true, AT(down)),
};
#undef AT

static trove_err qwen3_load(emodel *m, const gguf_file *f)
{
    emodel_hparams *hp = &m->hp;
    qwen3_w *w = xcalloc(1, sizeof *w);
    m->arch = w;
    trove_err e;
    if ((e = emodel_head_dim_eps(m)) ||
        (e = emodel_f64_or(m, "rope.freq_base", 10000.0, &hp->rope_base)))
        return e;
    if (!(hp->rope_base > 1) || hp->rope_base > 1e12)
        return trove_fail(TROVE_ECORRUPT, "%s: RoPE frequency base %g is out of range",
                          gguf_path(f), hp->rope_base);
    w->layers = xcalloc((size_t)hp->n_layer, sizeof *w->layers);
    if ((e = emodel_load_layers(m, qwen3_tensors, sizeof qwen3_tensors / sizeof *qwen3_tensors,
                                sizeof *w->layers, w->layers)) ||
        (e = emodel_vec(m, "output_norm.weight", hp->n_embd, true, &w->out_norm)))
        return e;
    const gguf_tensor *o = gguf_tensor_by_name(f, "output.weight");
    if (o) {
        int64_t rows = o->n_dims >= 2 ? o->ne[1] : 0;
        if (rows < 1 || rows > (1 << 24))
            return trove_fail(TROVE_ECORRUPT, "%s: tensor output.weight is not a matrix",
                              gguf_path(f));
        if ((e = emodel_mat(m, "output.weight", hp->n_embd, rows, true, &m->lm_head,
                            &m->has_lm_head)))
            return e;
    }
    return TROVE_OK;
}

static void qwen3_free(emodel *m)
{
    qwen3_w *w = m->arch;
    if (!w)
        return;
    free(w->layers);
    free(w);
    m->arch = NULL;
}

/* The last layer after attention when only each sequence's last row is
 * read (emodel_ws.last_only): output projection, residuals and the FFN,
 * 87% of a layer's products, for those ns rows instead of all T. The rows
 * go to a compact ns-row matrix and back to their places in x; the other
 * rows of x keep the previous layer's values. */
static void qwen3_last_rows(emodel *m, kpool *p, const qwen3_layer *L, int64_t ns, float *att,
                            float *x)
{
    const emodel_hparams *hp = &m->hp;
    int64_t H = hp->n_embd, F = hp->n_ff, nq = hp->n_head * hp->head_dim;
    const int64_t *st = m->ws.lstart, *ln = m->ws.llen;
    float *xs = emodel_buf(m, 6, (size_t)(ns * H));
    float *h = emodel_buf(m, 1, (size_t)(ns * H));
    float *g = emodel_buf(m, 2, (size_t)(ns * F)), *u = emodel_buf(m, 3, (size_t)(ns * F));
    /* row st + ln - 1 >= s, increasing: moving row by row upwards is safe */
    for (int64_t s = 0; s < ns; s++) {
        int64_t r = st[s] + ln[s] - 1;
        memmove(att + s * nq, att + r * nq, (size_t)nq * sizeof(float));
        memcpy(xs + s * H, x + r * H, (size_t)H * sizeof(float));
    }
    kern_linear(p, &L->o, NULL, att, nq, ns, h, H);
    kern_add(p, xs, H, h, H, ns, H);
    memcpy(h, xs, (size_t)(ns * H) * sizeof(float));
    kern_rmsnorm(p, h, ns, H, H, L->ffn_norm, hp->eps);
    const kmat *wm[2] = {&L->gate, &L->up};
    float *ys[2] = {g, u};
    int64_t lds[2] = {F, F};
    kern_linear_n(p, 2, wm, NULL, h, H, ns, ys, lds);
    kern_silu_mul(p, g, F, u, F, ns, F);
    kern_linear(p, &L->down, NULL, g, F, ns, h, H);
    kern_add(p, xs, H, h, H, ns, H);
    for (int64_t s = 0; s < ns; s++)
        memcpy(x + (st[s] + ln[s] - 1) * H, xs + s * H, (size_t)H * sizeof(float));
}

/* The chunk [s0, s0 + ns) of b into x (T x n_embd final hidden states).
 * With capture (one sequence; its prefix, if any, is capture itself), each
 * layer's keys and values are appended there too, after its n rows. */
static void qwen3_run(emodel *m, kpool *p, const emodel_batch *b, int64_t s0, int64_t ns,
                      int64_t T, float *x, emodel_kv *capture)
{
    qwen3_w *w = m->arch;
    const emodel_hparams *hp = &m->hp;
    int64_t H = hp->n_embd, F = hp->n_ff, dk = hp->head_dim;
    int64_t nq = hp->n_head * dk, nkv = hp->n_head_kv * dk;
    const emodel_kv *pre = b->prefix;
    emodel_layout(m, b, s0, ns, T);
    float *h = emodel_buf(m, 1, (size_t)(T * H));
    float *q = emodel_buf(m, 2, (size_t)(T * (nq > F ? nq : F)));
    float *k = emodel_buf(m, 3, (size_t)(T * (nkv > F ? nkv : F)));
    float *v = emodel_buf(m, 4, (size_t)(T * nkv));
    float *att = emodel_buf(m, 5, (size_t)(T * nq));
    const float *tab = emodel_rope(m, 0, hp->rope_base, m->ws.max_len);

    int64_t off = 0;
    for (int64_t s = s0; s < s0 + ns; s++) {
        emodel_embed_rows(m, b->ids + b->start[s], b->len[s], x + off * H);
        off += b->len[s];
    }
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const qwen3_layer *L = &w->layers[il];
        memcpy(h, x, (size_t)(T * H) * sizeof(float));
        kern_rmsnorm(p, h, T, H, H, L->attn_norm, hp->eps);
        {
            const kmat *wm[3] = {&L->q, &L->k, &L->v};
            const float *bs[3] = {L->q_b, L->k_b, L->v_b};
            float *ys[3] = {q, k, v};
            int64_t lds[3] = {nq, nkv, nkv};
            kern_linear_n(p, 3, wm, bs, h, H, T, ys, lds);
        }
        kern_rmsnorm(p, q, T * hp->n_head, dk, dk, L->q_norm, hp->eps);
        kern_rmsnorm(p, k, T * hp->n_head_kv, dk, dk, L->k_norm, hp->eps);
        kern_rope_neox(p, q, T, nq, hp->n_head, dk, m->ws.pos, tab);
        kern_rope_neox(p, k, T, nkv, hp->n_head_kv, dk, m->ws.pos, tab);
        if (capture) { /* rows [n, n + T) of the layer's slab */
            size_t lay = (size_t)((il * capture->cap + capture->n) * nkv);
            memcpy(capture->k + lay, k, (size_t)(T * nkv) * sizeof(float));
            memcpy(capture->v + lay, v, (size_t)(T * nkv) * sizeof(float));
        }
        kattn a = {.n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = dk,
                   .scale = 1.0f / sqrtf((float)dk), .causal = 1};
        if (pre) {
            a.pk = pre->k + il * pre->cap * nkv;
            a.pv = pre->v + il * pre->cap * nkv;
            a.n_prefix = pre->n;
            a.ldp = nkv;
        }
        kern_attention(p, &a, q, nq, k, v, nkv, att, nq, m->ws.lstart, m->ws.llen, ns);
        if (il == hp->n_layer - 1 && m->ws.last_only) {
            qwen3_last_rows(m, p, L, ns, att, x);
            break;
        }
        kern_linear(p, &L->o, NULL, att, nq, T, h, H);
        kern_add(p, x, H, h, H, T, H);

        memcpy(h, x, (size_t)(T * H) * sizeof(float));
        kern_rmsnorm(p, h, T, H, H, L->ffn_norm, hp->eps);
        {
            const kmat *wm[2] = {&L->gate, &L->up};
            float *ys[2] = {q, k};
            int64_t lds[2] = {F, F};
            kern_linear_n(p, 2, wm, NULL, h, H, T, ys, lds);
        }
        kern_silu_mul(p, q, F, k, F, T, F);
        kern_linear(p, &L->down, NULL, q, F, T, h, H);
        kern_add(p, x, H, h, H, T, H);
    }
    kern_rmsnorm(p, x, T, H, H, w->out_norm, hp->eps);
}

static void qwen3_forward(emodel *m, kpool *p, const emodel_batch *b, int64_t s0, int64_t ns,
                          int64_t T, float *x)
{
    qwen3_run(m, p, b, s0, ns, T, x, NULL);
}

static float *qwen3_prefill(emodel *m, kpool *p, const int32_t *ids, int64_t n, emodel_kv *kv)
{
    int64_t start = 0;
    emodel_batch b = {.ids = ids, .start = &start, .len = &n, .n_seq = 1,
                      .prefix = kv->n ? kv : NULL};
    float *x = emodel_buf(m, 0, (size_t)(n * m->hp.n_embd));
    qwen3_run(m, p, &b, 0, 1, n, x, kv);
    return x + (n - 1) * m->hp.n_embd;
}

const emodel_arch_ops emodel_qwen3_ops = {
    .load = qwen3_load,
    .forward = qwen3_forward,
    .prefill = qwen3_prefill,
    .free = qwen3_free,
};
