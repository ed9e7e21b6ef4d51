/* embed_bench — see embed.h. Timing code for `trove model bench`; it lives
 * in the engine because it needs the engine's BLAS and quant-path knobs. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "embed/embed.h"
#include "embed/kernels/blas.h"
#include "embed/kernels/kernels.h"
#include "util/clock.h"
#include "util/mem.h"

/* OpenBLAS sgemm rate on the shape of a batched FFN product (2048 tokens,
 * 384 -> 1536), with OpenBLAS's own threading, in GFLOP/s. */
static double sgemm_gflops(int threads)
{
    const int M = 2048, N = 1536, K = 384;
    if (blas_load() != TROVE_OK)
        return 0;
    float *a = xmalloc((size_t)M * K * sizeof *a), *b = xmalloc((size_t)N * K * sizeof *b);
    float *c = xmalloc((size_t)M * N * sizeof *c);
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < (size_t)N * K; i++)
        b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    blas_set_threads(threads);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = clock_seconds();
        blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
        double t = clock_seconds() - t0;
        if (t < best)
            best = t;
    }
    blas_set_threads(1);
    free(a);
    free(b);
    free(c);
    return 2.0 * M * N * K / best / 1e9;
}

/* Matmul FLOPs per token of a transformer (q, k, v, o, up, down; gated
 * FFNs have three FFN products) plus attention scores and values; 0 for a
 * static model. */
static double flops_per_token(const embed_info *in, int tokens)
{
    if (in->n_layer <= 0)
        return 0;
    double H = (double)in->n_embd, F = (double)in->n_ff, Tq = (double)tokens;
    double qkv = H * (double)in->head_dim * (double)(in->n_head + 2 * in->n_head_kv);
    bool gated = strcmp(in->arch, "gemma-embedding") == 0 || strcmp(in->arch, "qwen3") == 0;
    double ffn = (gated ? 3.0 : 2.0) * H * F;
    double att = 2.0 * Tq * (double)in->head_dim * (double)in->n_head;
    return 2.0 * (qkv + H * (double)in->head_dim * (double)in->n_head + ffn + att) *
           (double)in->n_layer;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

trove_err embed_bench(embed_model *m, const embed_bench_opts *o, embed_bench_result *r)
{
    embed_info in;
    embed_get_info(m, &in);
    int batch = o->batch > 0 ? o->batch : 1, tokens = o->tokens >= 3 ? o->tokens : 3;
    int iters = o->iters > 0 ? o->iters : 1;
    if (in.n_ctx > 0 && tokens > in.n_ctx)
        tokens = (int)in.n_ctx;
    if (in.n_vocab <= 5)
        return trove_fail(TROVE_EINVAL, "bench: vocabulary of %lld tokens is too small",
                          (long long)in.n_vocab);
    kern_set_quant_path(o->quant_path == EMBED_QUANT_INT8    ? KERN_QUANT_INT8
                        : o->quant_path == EMBED_QUANT_SGEMM ? KERN_QUANT_SGEMM
                                                             : KERN_QUANT_AUTO);
    size_t n = (size_t)batch * (size_t)tokens;
    int32_t *ids = xmalloc(n * sizeof *ids);
    int64_t *start = xmalloc((size_t)batch * sizeof *start);
    int64_t *len = xmalloc((size_t)batch * sizeof *len);
    uint64_t x = 88172645463325252ull;
    for (int s = 0; s < batch; s++) {
        start[s] = (int64_t)s * tokens;
        len[s] = tokens;
        for (int t = 0; t < tokens; t++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ids[start[s] + t] = (int32_t)(5 + x % (uint64_t)(in.n_vocab - 5));
        }
    }
    float *vec = xmalloc((size_t)batch * (size_t)embed_dim(m) * sizeof *vec);
    /* warm-up sizes the workspace and faults in the weights */
    trove_err e = embed_tokens(m, ids, start, len, (size_t)batch, vec);
    double best = 1e30;
    for (int i = 0; i < iters && !e; i++) {
        double t1 = clock_seconds();
        e = embed_tokens(m, ids, start, len, (size_t)batch, vec);
        double t = clock_seconds() - t1;
        if (t < best)
            best = t;
    }
    double lat[21];
    int64_t qs = 0, ql = tokens < 16 ? tokens : 16;
    for (int i = 0; i < 21 && !e; i++) {
        double t1 = clock_seconds();
        e = embed_tokens(m, ids, &qs, &ql, 1, vec);
        lat[i] = (clock_seconds() - t1) * 1e3;
    }
    free(ids);
    free(start);
    free(len);
    free(vec);
    if (!e) {
        qsort(lat, 21, sizeof *lat, cmp_double);
        double fpt = flops_per_token(&in, tokens);
        memset(r, 0, sizeof *r);
        r->batch = batch;
        r->tokens = tokens;
        r->tokens_per_s = (double)n / best;
        r->gflops = r->tokens_per_s * fpt / 1e9;
        r->sgemm_gflops = fpt > 0 ? sgemm_gflops(in.threads) : 0;
        r->query16_ms = lat[10];
    }
    kern_set_quant_path(KERN_QUANT_AUTO);
    return e;
}
