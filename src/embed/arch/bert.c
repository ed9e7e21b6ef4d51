/* bert — BERT-family encoders (BERT, MiniLM, bge, e5, and XLM-RoBERTa
 * models such as bge-m3, which llama.cpp's converter stores under arch
 * "bert" with the RoBERTa position offset already cut from
 * position_embd, so positions start at 0 here too).
 *
 * Per layer (post-norm):
 *   a = LayerNorm(x + Wo * Attn(Wq x + bq, Wk x + bk, Wv x + bv) + bo)
 *   x = LayerNorm(a + Wdown * gelu(Wup a + bup) + bdown)
 * Input: LayerNorm(tok_embd[id] + token_types[type] + position_embd[pos]).
 * GELU is the exact erf form (what the HF models were trained with). */
#define EMODEL_INTERNAL
#include "embed/arch/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

typedef struct bert_layer {
    bool fused;
    kmat qkv, q, k, v, o, up, down;
    float *qkv_b, *q_b, *k_b, *v_b, *o_b, *up_b, *down_b;
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
} bert_layer;

typedef struct bert_w {
    kmat pos, types;
    size_t pos_row, types_row;
    float *emb_ln_w, *emb_ln_b;
    bert_layer *layers;
} bert_w;

/* q, k and v are one fused matrix or three, each with an optional bias. */
#define AT(f) EMODEL_AT(bert_layer, f)
#define SPLIT(nm, o, req, f)                                                               \
    {.name = (nm), .in = EMODEL_D_EMBD, .out = (o), .required = (req), .field = AT(f),      \
     .when = AT(fused), .when_is = false}
static const emodel_tensor bert_tensors[] = {
    {.name = "attn_qkv.weight", .in = EMODEL_D_EMBD, .out = EMODEL_D_3EMBD, .field = AT(qkv),
     .present = AT(fused)},
    {.name = "attn_qkv.bias", .in = EMODEL_D_3EMBD, .field = AT(qkv_b), .when = AT(fused),
     .when_is = true},
    SPLIT("attn_q.weight", EMODEL_D_EMBD, true, q),
    SPLIT("attn_q.bias", EMODEL_D_NONE, false, q_b),
    SPLIT("attn_k.weight", EMODEL_D_EMBD, true, k),
    SPLIT("attn_k.bias", EMODEL_D_NONE, false, k_b),
    SPLIT("attn_v.weight", EMODEL_D_EMBD, true, v),
    SPLIT("attn_v.bias", EMODEL_D_NONE, false, v_b),
    EMODEL_MAT("attn_output.weight", EMBD, EMBD, true, AT(o)),
    EMODEL_VEC("attn_output.bias", EMBD, false, AT(o_b)),
    EMODEL_VEC("attn_output_norm.weight", EMBD, true, AT(ln1_w)),
    EMODEL_VEC("attn_output_norm.bias", EMBD, false, AT(ln1_b)),
    EMODEL_MAT("ffn_up.weight", EMBD, FF, true, AT(up)),
    EMODEL_VEC("ffn_up.bias", FF, false, AT(up_b)),
    EMODEL_MAT("ffn_down.weight", FF, EMBD, true, AT(down)),
    EMODEL_VEC("ffn_down.bias", EMBD, false, AT(down_b)),
    EMODEL_VEC("layer_output_norm.weight", EMBD, true, AT(ln2_w)),
    EMODEL_VEC("layer_output_norm.bias", EMBD, false, AT(ln2_b)),
};
#undef SPLIT
#undef AT

static trove_err bert_load(emodel *m, const gguf_file *f)
{
    emodel_hparams *hp = &m->hp;
    bert_w *w = xcalloc(1, sizeof *w);
    m->arch = w;
    trove_err e;
    char key[128];
    if (hp->n_head_kv != hp->n_head || hp->n_embd % hp->n_head)
        return trove_fail(TROVE_ECORRUPT, "%s: embedding_length %lld is not head_count %lld "
                          "times an integer head size", gguf_path(f), (long long)hp->n_embd,
                          (long long)hp->n_head);
    hp->head_dim = hp->n_embd / hp->n_head;
    if (gguf_find_key(f, emodel_key(m, "attention.layer_norm_epsilon", key, sizeof key)) >= 0) {
        if ((e = gguf_get_f32(f, key, &hp->eps)))
            return e;
    } else {
        hp->eps = 1e-12f;
    }
    if (!(hp->eps >= 0 && hp->eps < 1))
        return trove_fail(TROVE_ECORRUPT, "%s: %s out of range", gguf_path(f), key);

    const gguf_tensor *pt = gguf_tensor_by_name(f, "position_embd.weight");
    if (!pt)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor position_embd.weight is missing",
                          gguf_path(f));
    int64_t n_pos = pt->n_dims == 2 ? pt->ne[1] : 0;
    if (n_pos < 1)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor position_embd.weight is not a matrix",
                          gguf_path(f));
    if ((e = emodel_mat(m, "position_embd.weight", hp->n_embd, n_pos, true, &w->pos, NULL)))
        return e;
    if (n_pos < hp->n_ctx)
        hp->n_ctx = n_pos;
    w->pos_row = quant_row_size(w->pos.type, hp->n_embd);

    const gguf_tensor *tt = gguf_tensor_by_name(f, "token_types.weight");
    if (tt) {
        int64_t nt = tt->n_dims == 2 ? tt->ne[1] : 1;
        if (nt < 1 || nt > 1024)
            return trove_fail(TROVE_ECORRUPT, "%s: tensor token_types.weight has %lld rows",
                              gguf_path(f), (long long)nt);
        if ((e = emodel_mat(m, "token_types.weight", hp->n_embd, nt, true, &w->types, NULL)))
            return e;
        hp->n_types = nt;
        w->types_row = quant_row_size(w->types.type, hp->n_embd);
    }
    if ((e = emodel_vec(m, "token_embd_norm.weight", hp->n_embd, true, &w->emb_ln_w)) ||
        (e = emodel_vec(m, "token_embd_norm.bias", hp->n_embd, false, &w->emb_ln_b)))
        return e;
    w->layers = xcalloc((size_t)hp->n_layer, sizeof *w->layers);
    if ((e = emodel_load_layers(m, bert_tensors, sizeof bert_tensors / sizeof *bert_tensors,
                                sizeof *w->layers, w->layers)))
        return e;
    /* an encoder has no prefix cache whose results must match the whole
     * pass's: its large products may take the float kernel (kmat) */
    for (int64_t il = 0; il < hp->n_layer; il++) {
        bert_layer *L = &w->layers[il];
        kmat *mats[] = {&L->qkv, &L->q, &L->k, &L->v, &L->o, &L->up, &L->down};
        for (size_t i = 0; i < sizeof mats / sizeof *mats; i++)
            mats[i]->float_rows_ok = true;
    }
    return TROVE_OK;
}

static void bert_free(emodel *m)
{
    bert_w *w = m->arch;
    if (!w)
        return;
    free(w->layers);
    free(w);
    m->arch = NULL;
}

static void bert_input(emodel *m, const emodel_batch *b, int64_t s0, int64_t ns, float *x)
{
    bert_w *w = m->arch;
    int64_t H = m->hp.n_embd;
    float *row = emodel_buf(m, 5, (size_t)H);
    int64_t off = 0;
    for (int64_t s = s0; s < s0 + ns; s++) {
        int64_t len = b->len[s];
        const int32_t *ids = b->ids + b->start[s];
        emodel_embed_rows(m, ids, len, x + off * H);
        for (int64_t t = 0; t < len; t++) {
            float *xt = x + (off + t) * H;
            if (m->hp.n_types > 0) {
                int64_t ty = b->types ? b->types[b->start[s] + t] : 0;
                if (ty >= m->hp.n_types)
                    ty = 0;
                quant_dequantize_row(w->types.type,
                                     (const uint8_t *)w->types.data + (size_t)ty * w->types_row,
                                     row, H);
                for (int64_t i = 0; i < H; i++)
                    xt[i] += row[i];
            }
            quant_dequantize_row(w->pos.type, (const uint8_t *)w->pos.data + (size_t)t * w->pos_row,
                                 row, H);
            for (int64_t i = 0; i < H; i++)
                xt[i] += row[i];
        }
        off += len;
    }
}

/* The last layer after attention when only each sequence's first row is
 * read (emodel_ws.first_only: CLS or rank pooling): output projection,
 * residuals, norms and the FFN, 5/6 of a layer's products, for those ns
 * rows instead of all T, each product on the path all T rows would take
 * (kern_linear_like), and only where that path computes rows on their own
 * (kern_linear_rows_exact), so the pooled rows get the same bits. The
 * rows go to a compact ns-row matrix and back to their places in x; the
 * other rows of x keep the previous layer's values. */
static void bert_first_rows(emodel *m, kpool *p, const bert_layer *L, int64_t ns, int64_t T,
                            float *att, float *x)
{
    const emodel_hparams *hp = &m->hp;
    int64_t H = hp->n_embd, F = hp->n_ff;
    const int64_t *st = m->ws.lstart;
    float *xs = emodel_buf(m, 6, (size_t)(ns * H));
    float *tmp = emodel_buf(m, 3, (size_t)(ns * H));
    float *ff = emodel_buf(m, 4, (size_t)(ns * F));
    /* row st[s] >= s, increasing: moving row by row upwards is safe */
    for (int64_t s = 0; s < ns; s++) {
        memmove(att + s * H, att + st[s] * H, (size_t)H * sizeof(float));
        memcpy(xs + s * H, x + st[s] * H, (size_t)H * sizeof(float));
    }
    kern_linear_like(p, &L->o, L->o_b, att, H, ns, tmp, H, T);
    kern_add(p, tmp, H, xs, H, ns, H);
    kern_layernorm(p, tmp, ns, H, H, L->ln1_w, L->ln1_b, hp->eps);
    kern_linear_like(p, &L->up, L->up_b, tmp, H, ns, ff, F, T);
    kern_gelu_erf(p, ff, ns, F, F);
    kern_linear_like(p, &L->down, L->down_b, ff, F, ns, xs, H, T);
    kern_add(p, xs, H, tmp, H, ns, H);
    kern_layernorm(p, xs, ns, H, H, L->ln2_w, L->ln2_b, hp->eps);
    for (int64_t s = 0; s < ns; s++)
        memcpy(x + st[s] * H, xs + s * H, (size_t)H * sizeof(float));
}

/* Separate q, k, v (the first n of them) of x's T rows into their columns
 * of qkv (stride 3H): one quantisation of x for all of them (kern_linear_n;
 * the same bits as three kern_linear calls). */
static void bert_qkv(kpool *p, const bert_layer *L, const float *x, int64_t T, float *qkv,
                     int n)
{
    int64_t H = L->q.n_in;
    const kmat *wm[3] = {&L->q, &L->k, &L->v};
    const float *bs[3] = {L->q_b, L->k_b, L->v_b};
    float *ys[3] = {qkv, qkv + H, qkv + 2 * H};
    int64_t lds[3] = {3 * H, 3 * H, 3 * H};
    kern_linear_n(p, n, wm + 3 - n, bs + 3 - n, x, H, T, ys + 3 - n, lds);
}

/* The last layer's q, k and v when only each sequence's first row
 * attends (kattn.first_only): keys and values of all T rows, queries of
 * the ns first rows alone, each on the path all T rows would take
 * (kern_linear_like; the caller checked kern_linear_rows_exact), so they
 * get the same bits; written to those rows' places in qkv. */
static void bert_qkv_first(emodel *m, kpool *p, const bert_layer *L, int64_t ns, int64_t T,
                           const float *x, float *qkv)
{
    int64_t H = m->hp.n_embd;
    const int64_t *st = m->ws.lstart;
    float *xs = emodel_buf(m, 6, (size_t)(ns * H));
    float *qs = emodel_buf(m, 3, (size_t)(ns * H));
    bert_qkv(p, L, x, T, qkv, 2);
    for (int64_t s = 0; s < ns; s++)
        memcpy(xs + s * H, x + st[s] * H, (size_t)H * sizeof(float));
    kern_linear_like(p, &L->q, L->q_b, xs, H, ns, qs, H, T);
    for (int64_t s = 0; s < ns; s++)
        memcpy(qkv + st[s] * 3 * H, qs + s * H, (size_t)H * sizeof(float));
}

static void bert_forward(emodel *m, kpool *p, const emodel_batch *b, int64_t s0, int64_t ns,
                         int64_t T, float *x)
{
    bert_w *w = m->arch;
    const emodel_hparams *hp = &m->hp;
    int64_t H = hp->n_embd, F = hp->n_ff;
    emodel_layout(m, b, s0, ns, T);
    float *qkv = emodel_buf(m, 1, (size_t)(T * 3 * H));
    float *att = emodel_buf(m, 2, (size_t)(T * H));
    float *tmp = emodel_buf(m, 3, (size_t)(T * H));
    float *ff = emodel_buf(m, 4, (size_t)(T * F));

    bert_input(m, b, s0, ns, x);
    kern_layernorm(p, x, T, H, H, w->emb_ln_w, w->emb_ln_b, hp->eps);

    kattn a = {.n_head = hp->n_head, .n_head_kv = hp->n_head, .head_dim = hp->head_dim,
               .scale = 1.0f / sqrtf((float)hp->head_dim), .window = 0};
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const bert_layer *L = &w->layers[il];
        bool first = il == hp->n_layer - 1 && m->ws.first_only &&
                     kern_linear_rows_exact(&L->o, T) && kern_linear_rows_exact(&L->up, T) &&
                     kern_linear_rows_exact(&L->down, T);
        if (L->fused)
            kern_linear(p, &L->qkv, L->qkv_b, x, H, T, qkv, 3 * H);
        else if (first && kern_linear_rows_exact(&L->q, T))
            bert_qkv_first(m, p, L, ns, T, x, qkv);
        else
            bert_qkv(p, L, x, T, qkv, 3);
        /* the last layer pooled from its first rows: only they attend */
        a.first_only = first;
        kern_attention(p, &a, qkv, 3 * H, qkv + H, qkv + 2 * H, 3 * H, att, H, m->ws.lstart,
                       m->ws.llen, ns);
        if (first) {
            bert_first_rows(m, p, L, ns, T, att, x);
            break;
        }
        kern_linear(p, &L->o, L->o_b, att, H, T, tmp, H);
        kern_add(p, tmp, H, x, H, T, H);
        kern_layernorm(p, tmp, T, H, H, L->ln1_w, L->ln1_b, hp->eps);

        kern_linear(p, &L->up, L->up_b, tmp, H, T, ff, F);
        kern_gelu_erf(p, ff, T, F, F);
        kern_linear(p, &L->down, L->down_b, ff, F, T, x, H);
        kern_add(p, x, H, tmp, H, T, H);
        kern_layernorm(p, x, T, H, H, L->ln2_w, L->ln2_b, hp->eps);
    }
}

const emodel_arch_ops emodel_bert_ops = {
    .load = bert_load,
    .forward = bert_forward,
    .free = bert_free,
};
