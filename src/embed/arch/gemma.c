/* gemma — EmbeddingGemma ("gemma-embedding"), following llama.cpp's graph:
 *
 *   x = tok_embd[id] * sqrt(n_embd)
 *   per layer:
 *     h = RMSNorm(x) * attn_norm
 *     q, k, v = Wq h, Wk h, Wv h            (GQA: n_head_kv <= n_head)
 *     q, k = RMSNorm per head * attn_{q,k}_norm, then NeoX RoPE with the
 *            layer's base (rope.freq_base_swa on sliding-window layers,
 *            rope.freq_base on global ones)
 *     a = softmax(q k / sqrt(head_dim) + window mask) v   (bidirectional)
 *     x = x + RMSNorm(Wo a) * post_attention_norm
 *     h = RMSNorm(x) * ffn_norm
 *     x = x + RMSNorm(Wdown (gelu_tanh(Wgate h) * Wup h)) * post_ffw_norm
 *   out = RMSNorm(x) * output_norm
 *
 * Gemma's checkpoints scale by (1 + w); llama.cpp's converter adds the 1
 * when it writes the GGUF, so the stored norm weights are used as is.
 * Layer il uses the sliding window when il % pattern < pattern - 1
 * (attention.sliding_window_pattern, default 6: every sixth layer global);
 * the window is symmetric: |i - j| <= sliding_window / 2. */
#define EMODEL_INTERNAL
#include "embed/arch/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

typedef struct gemma_layer {
    kmat q, k, v, o, gate, up, down;
    float *attn_norm, *q_norm, *k_norm, *post_attn_norm, *ffn_norm, *post_ffw_norm;
    bool swa;
} gemma_layer;

typedef struct gemma_w {
    float *out_norm;
    gemma_layer *layers;
} gemma_w;

#define AT(f) EMODEL_AT(gemma_layer, f)
static const emodel_tensor gemma_tensors[] = {
    EMODEL_VEC("attn_norm.weight", EMBD, true, AT(attn_norm)),
    EMODEL_MAT("attn_q.weight", EMBD, Q, true, AT(q)),
    EMODEL_MAT("attn_k.weight", EMBD, KV, true, AT(k)),
    EMODEL_MAT("attn_v.weight", EMBD, KV, true, AT(v)),
    EMODEL_VEC("attn_q_norm.weight", HEAD, true, AT(q_norm)),
    EMODEL_VEC("attn_k_norm.weight", HEAD, true, AT(k_norm)),
    EMODEL_MAT("attn_output.weight", Q, EMBD, true, AT(o)),
    EMODEL_VEC("post_attention_norm.weight", EMBD, true, AT(post_attn_norm)),
    EMODEL_VEC("ffn_norm.weight", EMBD, true, AT(ffn_norm)),
    EMODEL_MAT("ffn_gate.weight", EMBD, FF, true, AT(gate)),
    EMODEL_MAT("ffn_up.weight", EMBD, FF, true, AT(up)),
    EMODEL_MAT("ffn_down.weight", FF, EMBD, true, AT(down)),
    EMODEL_VEC("post_ffw_norm.weight", EMBD, true, AT(post_ffw_norm)),
};
#undef AT

/* Which layers use the sliding window: a period (uint) or one bool per
 * layer (true = sliding window). */
static trove_err gemma_swa_layers(emodel *m, gemma_w *w)
{
    char key[128];
    int64_t nl = m->hp.n_layer;
    emodel_key(m, "attention.sliding_window_pattern", key, sizeof key);
    int idx = gguf_find_key(m->f, key);
    if (idx >= 0 && gguf_key_type(m->f, idx) == GGUF_TYPE_ARRAY) {
        if ((int64_t)gguf_arr_len(m->f, idx) != nl)
            return trove_fail(TROVE_ECORRUPT, "%s: %s has %llu entries for %lld layers",
                              gguf_path(m->f), key, (unsigned long long)gguf_arr_len(m->f, idx),
                              (long long)nl);
        for (int64_t il = 0; il < nl; il++) {
            int64_t v;
            if (!gguf_arr_i64(m->f, idx, (uint64_t)il, &v))
                return trove_fail(TROVE_ECORRUPT, "%s: %s is not an array of bools",
                                  gguf_path(m->f), key);
            w->layers[il].swa = v != 0;
        }
        return TROVE_OK;
    }
    uint32_t period = 6;
    if (idx >= 0) {
        trove_err e = gguf_get_u32(m->f, key, &period);
        if (e)
            return e;
    }
    for (int64_t il = 0; il < nl; il++)
        w->layers[il].swa = period > 0 && (uint32_t)(il % period) < period - 1;
    return TROVE_OK;
}

static trove_err gemma_load(emodel *m, const gguf_file *f)
{
    emodel_hparams *hp = &m->hp;
    gemma_w *w = xcalloc(1, sizeof *w);
    m->arch = w;
    trove_err e;
    char key[128];
    int64_t win;
    uint32_t u;

    if ((e = emodel_head_dim_eps(m)))
        return e;
    if ((e = emodel_f64_or(m, "rope.freq_base", 10000.0, &hp->rope_base)) ||
        (e = emodel_f64_or(m, "rope.freq_base_swa", 10000.0, &hp->rope_base_swa)))
        return e;
    if (!(hp->rope_base > 1) || !(hp->rope_base_swa > 1))
        return trove_fail(TROVE_ECORRUPT, "%s: RoPE frequency base must be > 1", gguf_path(f));
    win = 0;
    if (gguf_find_key(f, emodel_key(m, "attention.sliding_window", key, sizeof key)) >= 0) {
        if ((e = gguf_get_u32(f, key, &u)))
            return e;
        win = u;
    }
    hp->swa_window = win;

    w->layers = xcalloc((size_t)hp->n_layer, sizeof *w->layers);
    if ((e = emodel_load_layers(m, gemma_tensors, sizeof gemma_tensors / sizeof *gemma_tensors,
                                sizeof *w->layers, w->layers)) ||
        (e = gemma_swa_layers(m, w)))
        return e;
    return emodel_vec(m, "output_norm.weight", hp->n_embd, true, &w->out_norm);
}

static void gemma_free(emodel *m)
{
    gemma_w *w = m->arch;
    if (!w)
        return;
    free(w->layers);
    free(w);
    m->arch = NULL;
}

static void gemma_forward(emodel *m, kpool *p, const emodel_batch *b, int64_t s0, int64_t ns,
                          int64_t T, float *x)
{
    gemma_w *w = m->arch;
    const emodel_hparams *hp = &m->hp;
    int64_t H = hp->n_embd, F = hp->n_ff, dk = hp->head_dim;
    int64_t nq = hp->n_head * dk, nkv = hp->n_head_kv * dk;
    emodel_layout(m, b, s0, ns, T);
    float *h = emodel_buf(m, 1, (size_t)(T * H));
    float *q = emodel_buf(m, 2, (size_t)(T * (nq > F ? nq : F)));
    float *k = emodel_buf(m, 3, (size_t)(T * (nkv > F ? nkv : F)));
    float *v = emodel_buf(m, 4, (size_t)(T * nkv));
    float *att = emodel_buf(m, 5, (size_t)(T * nq));
    const float *tab_g = emodel_rope(m, 0, hp->rope_base, m->ws.max_len);
    const float *tab_l = emodel_rope(m, 1, hp->rope_base_swa, m->ws.max_len);

    int64_t off = 0;
    for (int64_t s = s0; s < s0 + ns; s++) {
        emodel_embed_rows(m, b->ids + b->start[s], b->len[s], x + off * H);
        off += b->len[s];
    }
    kern_scale(x, T * H, sqrtf((float)H));

    for (int64_t il = 0; il < hp->n_layer; il++) {
        const gemma_layer *L = &w->layers[il];
        memcpy(h, x, (size_t)(T * H) * sizeof(float));
        kern_rmsnorm(p, h, T, H, H, L->attn_norm, hp->eps);
        kern_linear(p, &L->q, NULL, h, H, T, q, nq);
        kern_linear(p, &L->k, NULL, h, H, T, k, nkv);
        kern_linear(p, &L->v, NULL, h, H, T, v, nkv);
        kern_rmsnorm(p, q, T * hp->n_head, dk, dk, L->q_norm, hp->eps);
        kern_rmsnorm(p, k, T * hp->n_head_kv, dk, dk, L->k_norm, hp->eps);
        const float *tab = L->swa ? tab_l : tab_g;
        kern_rope_neox(p, q, T, nq, hp->n_head, dk, m->ws.pos, tab);
        kern_rope_neox(p, k, T, nkv, hp->n_head_kv, dk, m->ws.pos, tab);
        kattn a = {.n_head = hp->n_head, .n_head_kv = hp->n_head_kv, .head_dim = dk,
                   .scale = 1.0f / sqrtf((float)dk), .window = L->swa ? hp->swa_window : 0};
        kern_attention(p, &a, q, nq, k, v, nkv, att, nq, m->ws.lstart, m->ws.llen, ns);
        kern_linear(p, &L->o, NULL, att, nq, T, h, H);
        kern_rmsnorm(p, h, T, H, H, L->post_attn_norm, hp->eps);
        kern_add(p, x, H, h, H, T, H);

        memcpy(h, x, (size_t)(T * H) * sizeof(float));
        kern_rmsnorm(p, h, T, H, H, L->ffn_norm, hp->eps);
        kern_linear(p, &L->gate, NULL, h, H, T, q, F);
        kern_linear(p, &L->up, NULL, h, H, T, k, F);
        kern_gelu_tanh_mul(p, q, F, k, F, T, F);
        kern_linear(p, &L->down, NULL, q, F, T, h, H);
        kern_rmsnorm(p, h, T, H, H, L->post_ffw_norm, hp->eps);
        kern_add(p, x, H, h, H, T, H);
    }
    kern_rmsnorm(p, x, T, H, H, w->out_norm, hp->eps);
}

const emodel_arch_ops emodel_gemma_ops = {
    .load = gemma_load,
    .forward = gemma_forward,
    .free = gemma_free,
};
