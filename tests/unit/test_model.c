/* Tests of the embedding engine's kernels and of embed.h on small
 * random-weight models written by tests/tools/make_models.py, checked
 * against the numpy reference (tests/tools/ref_forward.py) it stores next
 * to each model. The CLI-level and MiniLM-shaped checks are in
 * tests/e2e/test_model_*.py. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "embed/embed.h"
#include "embed/formats/gguf.h"
#include "embed/kernels/kernels.h"
#include "embed/arch/model.h"
#include "embed/kernels/quant.h"

#include "testutil.h"
#include "util/cpu.h"

static char models[512];

static tu_rng rng = {0x9E3779B97F4A7C15ull};

static void fill(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tu_rng_sym(&rng) * scale;
}

/* ---- kernels ---- */

static void naive_linear(const float *X, int64_t T, const float *W, int64_t n_in, int64_t n_out,
                         const float *b, double *Y)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t o = 0; o < n_out; o++) {
            double s = b ? b[o] : 0;
            for (int64_t i = 0; i < n_in; i++)
                s += (double)X[t * n_in + i] * W[o * n_in + i];
            Y[t * n_out + o] = s;
        }
}

static void check_linear(ggml_type type, int64_t T, int64_t n_in, int64_t n_out, double tol)
{
    float *W = malloc((size_t)(n_in * n_out) * sizeof *W), *X = malloc((size_t)(T * n_in) * sizeof *X);
    float *b = malloc((size_t)n_out * sizeof *b);
    fill(W, (size_t)(n_in * n_out), 0.1f);
    fill(X, (size_t)(T * n_in), 1.0f);
    fill(b, (size_t)n_out, 0.5f);
    size_t row = quant_row_size(type, n_in);
    uint8_t *q = malloc(row * (size_t)n_out);
    for (int64_t o = 0; o < n_out; o++)
        quant_quantize_row(type, W + o * n_in, q + (size_t)o * row, n_in);
    float *Wd = malloc((size_t)(n_in * n_out) * sizeof *Wd); /* what the file holds */
    for (int64_t o = 0; o < n_out; o++)
        quant_dequantize_row(type, q + (size_t)o * row, Wd + o * n_in, n_in);
    double *want = malloc((size_t)(T * n_out) * sizeof *want);
    naive_linear(X, T, Wd, n_in, n_out, b, want);
    kmat m = {.type = type, .n_in = n_in, .n_out = n_out, .data = q, .name = "w"};
    float *y1 = malloc((size_t)(T * n_out) * sizeof *y1), *y3 = malloc((size_t)(T * n_out) * sizeof *y3);
    kpool *p1 = kpool_new(1), *p3 = kpool_new(3);
    kern_linear(p1, &m, b, X, n_in, T, y1, n_out);
    kern_linear(p3, &m, b, X, n_in, T, y3, n_out);
    double err = 0, scale = 0;
    for (int64_t i = 0; i < T * n_out; i++) {
        err = fmax(err, fabs(y1[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    if (err > tol * (1 + scale))
        fail_msg("%s T=%lld %lldx%lld: max error %g (scale %g)", quant_type_name(type),
                 (long long)T, (long long)n_in, (long long)n_out, err, scale);
    assert_memory_equal(y1, y3, (size_t)(T * n_out) * sizeof *y1);
    /* the packed path, where the matrix packs: int8 activations, any T */
    q8pack *pk = q8pack_new(type, q, n_in, n_out);
    if (pk) {
        m.pack = pk;
        kern_linear(p1, &m, b, X, n_in, T, y1, n_out);
        kern_linear(p3, &m, b, X, n_in, T, y3, n_out);
        for (int64_t i = 0; i < T * n_out; i++)
            if (fabs(y1[i] - want[i]) > 2e-2 * (1 + scale))
                fail_msg("%s packed T=%lld: element %lld %g, want %g", quant_type_name(type),
                         (long long)T, (long long)i, (double)y1[i], want[i]);
        assert_memory_equal(y1, y3, (size_t)(T * n_out) * sizeof *y1);
        q8pack_free(pk);
    }
    kpool_free(p1);
    kpool_free(p3);
    free(W), free(X), free(b), free(q), free(Wd), free(want), free(y1), free(y3);
}

/* The float kernel (AVX-512 or AVX2 + FMA) sums every element in one order
 * whatever the product's size: a row's result is the same bits in a 20-row
 * product (column blocks) and in a 600-row one (row blocks), the bits of
 * one fmaf chain over k (so AVX2 and AVX-512 CPUs agree), and with sgemm
 * forced it still agrees to rounding. */
static void test_linear_rows_independent(void **state)
{
    (void)state;
    int64_t n_in = 384, n_out = 96, T = 600, T1 = 20;
    float *W = malloc((size_t)(n_in * n_out) * sizeof *W), *X = malloc((size_t)(T * n_in) * sizeof *X);
    float *ya = malloc((size_t)(T * n_out) * sizeof *ya), *yb = malloc((size_t)(T * n_out) * sizeof *yb);
    fill(W, (size_t)(n_in * n_out), 0.1f);
    fill(X, (size_t)(T * n_in), 1.0f);
    kmat m = {.type = GGML_TYPE_F32, .n_in = n_in, .n_out = n_out, .data = W, .name = "w"};
    kpool *p = kpool_new(2);
    kern_linear(p, &m, NULL, X, n_in, T, ya, n_out);
    kern_linear(p, &m, NULL, X, n_in, T1, yb, n_out);
    unsigned simd = cpu_simd();
    if (simd & CPU_AVX512F || (simd & (CPU_AVX2 | CPU_FMA)) == (CPU_AVX2 | CPU_FMA)) {
        assert_memory_equal(ya, yb, (size_t)(T1 * n_out) * sizeof *ya);
        for (int64_t t = 0; t < T; t++)
            for (int64_t o = 0; o < n_out; o++) {
                float a = 0.0f;
                for (int64_t k = 0; k < n_in; k++)
                    a = fmaf(X[t * n_in + k], W[o * n_in + k], a);
                if (memcmp(&a, &ya[t * n_out + o], sizeof a) != 0)
                    fail_msg("row %lld column %lld: %.9g, the fmaf chain %.9g", (long long)t,
                             (long long)o, (double)ya[t * n_out + o], (double)a);
            }
    }
    kern_set_gemm_blas(1);
    kern_linear(p, &m, NULL, X, n_in, T, yb, n_out);
    kern_set_gemm_blas(0);
    for (int64_t i = 0; i < T * n_out; i++)
        assert_true(fabs(ya[i] - yb[i]) <= 1e-5 * (1 + fabs(yb[i])));
    kpool_free(p);
    free(W), free(X), free(ya), free(yb);
}

/* Q8_0 in an encoder's large product (kmat.float_rows_ok, 512+ rows): on a
 * CPU with AVX2 but no VNNI the float kernel, f32 activations, so the
 * dequantised product to float rounding; elsewhere the packed int8
 * kernels (also with AVX-512 and no VNNI: not measured there). Either way
 * the same bits on 1 and 3 threads. */
static void test_linear_q8_float(void **state)
{
    (void)state;
    int64_t n_in = 384, n_out = 64, T = 600;
    float *W = malloc((size_t)(n_in * n_out) * sizeof *W), *X = malloc((size_t)(T * n_in) * sizeof *X);
    fill(W, (size_t)(n_in * n_out), 0.1f);
    fill(X, (size_t)(T * n_in), 1.0f);
    size_t row = quant_row_size(GGML_TYPE_Q8_0, n_in);
    uint8_t *q = malloc(row * (size_t)n_out);
    float *Wd = malloc((size_t)(n_in * n_out) * sizeof *Wd);
    for (int64_t o = 0; o < n_out; o++) {
        quant_quantize_row(GGML_TYPE_Q8_0, W + o * n_in, q + (size_t)o * row, n_in);
        quant_dequantize_row(GGML_TYPE_Q8_0, q + (size_t)o * row, Wd + o * n_in, n_in);
    }
    double *want = malloc((size_t)(T * n_out) * sizeof *want);
    naive_linear(X, T, Wd, n_in, n_out, NULL, want);
    q8pack *pk = q8pack_new(GGML_TYPE_Q8_0, q, n_in, n_out);
    kmat m = {.type = GGML_TYPE_Q8_0, .n_in = n_in, .n_out = n_out, .data = q, .name = "w",
              .pack = pk, .float_rows_ok = true};
    float *y1 = malloc((size_t)(T * n_out) * sizeof *y1), *y3 = malloc((size_t)(T * n_out) * sizeof *y3);
    kpool *p1 = kpool_new(1), *p3 = kpool_new(3);
    kern_linear(p1, &m, NULL, X, n_in, T, y1, n_out);
    kern_linear(p3, &m, NULL, X, n_in, T, y3, n_out);
    unsigned simd = cpu_simd();
    bool float_path = quant_impl_active() == QUANT_IMPL_AVX2 && !(simd & CPU_AVX512F) &&
                      (simd & (CPU_AVX2 | CPU_FMA)) == (CPU_AVX2 | CPU_FMA);
    double tol = float_path ? 1e-5 : 2e-2;
    for (int64_t i = 0; i < T * n_out; i++)
        if (fabs(y1[i] - want[i]) > tol * (1 + fabs(want[i])))
            fail_msg("element %lld: %g, want %g", (long long)i, (double)y1[i], want[i]);
    assert_memory_equal(y1, y3, (size_t)(T * n_out) * sizeof *y1);
    kpool_free(p1);
    kpool_free(p3);
    q8pack_free(pk);
    free(W), free(X), free(q), free(Wd), free(want), free(y1), free(y3);
}

static void test_linear(void **state)
{
    (void)state;
    check_linear(GGML_TYPE_F32, 5, 64, 200, 1e-5);
    check_linear(GGML_TYPE_F32, 600, 96, 70, 1e-5);  /* row-split path, 128-row blocks */
    check_linear(GGML_TYPE_F32, 1100, 32, 70, 1e-5); /* 256-row blocks */
    check_linear(GGML_TYPE_F16, 7, 64, 130, 1e-5);
    check_linear(GGML_TYPE_BF16, 600, 64, 40, 1e-5);
    /* float weights, 16+ rows: the float kernel where the CPU has AVX-512 or AVX2 + FMA
     * (edge tiles: rows not a multiple of 8, columns of 32; n_in past one
     * 256-step block), else sgemm; then sgemm forced */
    check_linear(GGML_TYPE_F32, 37, 300, 45, 1e-5);  /* column blocks */
    check_linear(GGML_TYPE_F16, 530, 520, 70, 1e-5); /* row blocks */
    check_linear(GGML_TYPE_BF16, 300, 384, 96, 1e-5);
    check_linear(GGML_TYPE_F32, 16, 8, 33, 1e-5);
    kern_set_gemm_blas(1);
    check_linear(GGML_TYPE_F16, 530, 96, 70, 1e-5);
    check_linear(GGML_TYPE_F32, 37, 300, 45, 1e-5);
    kern_set_gemm_blas(0);
    /* int8 paths quantise the activations too */
    kern_set_quant_path(KERN_QUANT_INT8);
    check_linear(GGML_TYPE_Q8_0, 9, 128, 100, 2e-2);
    check_linear(GGML_TYPE_Q4_0, 3, 64, 65, 2e-2);
    check_linear(GGML_TYPE_Q4_K, 4, 256, 66, 2e-2);
    check_linear(GGML_TYPE_Q5_K, 4, 256, 64, 2e-2);
    check_linear(GGML_TYPE_Q6_K, 2, 512, 3, 2e-2);
    check_linear(GGML_TYPE_Q5_0, 5, 96, 40, 2e-2);
    check_linear(GGML_TYPE_Q5_1, 3, 384, 33, 2e-2);
    check_linear(GGML_TYPE_Q8_0, 600, 64, 10, 2e-2);
    kern_set_quant_path(KERN_QUANT_SGEMM);
    check_linear(GGML_TYPE_Q8_0, 9, 128, 100, 1e-5);
    check_linear(GGML_TYPE_Q4_K, 520, 256, 10, 1e-5);
    check_linear(GGML_TYPE_Q5_1, 40, 96, 20, 1e-5);
    kern_set_quant_path(KERN_QUANT_AUTO);
    check_linear(GGML_TYPE_Q8_0, 2, 64, 100, 2e-2); /* int8 */
    check_linear(GGML_TYPE_Q8_0, 40, 64, 100, 1e-5); /* sgemm */
    check_linear(GGML_TYPE_Q4_K, 37, 512, 48, 1e-5); /* packed (and sgemm, unpacked) */
    check_linear(GGML_TYPE_Q6_K, 70, 256, 32, 1e-5);
    check_linear(GGML_TYPE_Q5_0, 37, 384, 48, 1e-5); /* 384 wide: MiniLM's Q4_K_M */
    check_linear(GGML_TYPE_Q5_1, 21, 384, 32, 1e-5);
    check_linear(GGML_TYPE_Q5_K, 19, 256, 16, 1e-5);
}

static void test_rowops(void **state)
{
    (void)state;
    enum { R = 40, N = 70 };
    float x[R * N], w[N], b[N];
    fill(x, R * N, 3.0f);
    fill(w, N, 1.0f);
    fill(b, N, 1.0f);
    float y[R * N];
    memcpy(y, x, sizeof x);
    kpool *p = kpool_new(2);
    kern_layernorm(p, y, R, N, N, w, b, 1e-5f);
    for (int r = 0; r < R; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < N; i++)
            m += x[r * N + i];
        m /= N;
        for (int i = 0; i < N; i++)
            v += (x[r * N + i] - m) * (x[r * N + i] - m);
        v /= N;
        for (int i = 0; i < N; i++)
            assert_true(fabs(y[r * N + i] - ((x[r * N + i] - m) / sqrt(v + 1e-5) * w[i] + b[i])) < 1e-5);
    }
    memcpy(y, x, sizeof x);
    kern_rmsnorm(p, y, R, N, N, w, 1e-6f);
    for (int r = 0; r < R; r++) {
        double ss = 0;
        for (int i = 0; i < N; i++)
            ss += (double)x[r * N + i] * x[r * N + i];
        for (int i = 0; i < N; i++)
            assert_true(fabs(y[r * N + i] - x[r * N + i] / sqrt(ss / N + 1e-6) * w[i]) < 1e-5);
    }
    /* activations over a wide range, against libm */
    float g[R * N], u[R * N];
    for (int i = 0; i < R * N; i++)
        g[i] = u[i] = (float)(i - R * N / 2) / 200.0f;
    kern_gelu_erf(p, g, R, N, N);
    for (int i = 0; i < R * N; i++) {
        double v = u[i];
        assert_true(fabs(g[i] - 0.5 * v * (1 + erf(v / sqrt(2.0)))) < 2e-6);
    }
    float ones[R * N];
    for (int i = 0; i < R * N; i++) {
        g[i] = u[i];
        ones[i] = 1.0f;
    }
    kern_gelu_tanh_mul(p, g, N, ones, N, R, N);
    for (int i = 0; i < R * N; i++) {
        double v = u[i];
        double want = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
        assert_true(fabs(g[i] - want) < 2e-6);
    }
    /* softmax of large-range scores */
    float s[37];
    double sum = 0, mx = -1e30;
    for (int i = 0; i < 37; i++) {
        s[i] = tu_rng_sym(&rng) * 60.0f;
        mx = fmax(mx, s[i]);
    }
    float s0[37];
    memcpy(s0, s, sizeof s);
    kern_softmax(s, 37);
    for (int i = 0; i < 37; i++)
        sum += exp(s0[i] - mx);
    for (int i = 0; i < 37; i++)
        assert_true(fabs(s[i] - exp(s0[i] - mx) / sum) < 1e-6);
    kpool_free(p);
}

static void test_rope_and_attention(void **state)
{
    (void)state;
    enum { T = 11, NH = 4, NKV = 2, D = 8 };
    float tab[T * D];
    kern_rope_table(tab, T, D, 10000.0);
    float q[T * NH * D], k[T * NKV * D], v[T * NKV * D], o1[T * NH * D], o2[T * NH * D];
    fill(q, T * NH * D, 1.0f);
    fill(k, T * NKV * D, 1.0f);
    fill(v, T * NKV * D, 1.0f);
    float q0[T * NH * D];
    memcpy(q0, q, sizeof q);
    int32_t pos[T];
    for (int t = 0; t < T; t++)
        pos[t] = t;
    kern_rope_neox(NULL, q, T, NH * D, NH, D, pos, tab);
    /* pair (i, i + D/2) of head h at position t rotated by t * 10000^(-2i/D) */
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < D / 2; i++) {
                double th = t * pow(10000.0, -2.0 * i / D);
                const float *a = q0 + t * NH * D + h * D;
                const float *r = q + t * NH * D + h * D;
                assert_true(fabs(r[i] - (a[i] * cos(th) - a[i + D / 2] * sin(th))) < 1e-5);
                assert_true(fabs(r[i + D / 2] - (a[i] * sin(th) + a[i + D / 2] * cos(th))) < 1e-5);
            }
    /* two sequences (5 and 6 tokens), window 4 (sees |i - j| <= 2) */
    int64_t start[2] = {0, 5}, len[2] = {5, 6};
    kattn a = {.n_head = NH, .n_head_kv = NKV, .head_dim = D, .scale = 0.5f, .window = 4};
    kpool *p1 = kpool_new(1), *p2 = kpool_new(2);
    kern_attention(p1, &a, q, NH * D, k, v, NKV * D, o1, NH * D, start, len, 2);
    kern_attention(p2, &a, q, NH * D, k, v, NKV * D, o2, NH * D, start, len, 2);
    assert_memory_equal(o1, o2, sizeof o1);
    for (int s = 0; s < 2; s++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < len[s]; i++) {
                double w[T], tot = 0, mx = -1e30;
                int kh = h / (NH / NKV);
                for (int j = 0; j < len[s]; j++) {
                    double d = 0;
                    for (int e = 0; e < D; e++)
                        d += (double)q[(start[s] + i) * NH * D + h * D + e] *
                             k[(start[s] + j) * NKV * D + kh * D + e];
                    w[j] = abs(i - j) <= 2 ? d * 0.5 : -1e300;
                    mx = fmax(mx, w[j]);
                }
                for (int j = 0; j < len[s]; j++) {
                    w[j] = abs(i - j) <= 2 ? exp(w[j] - mx) : 0;
                    tot += w[j];
                }
                for (int e = 0; e < D; e++) {
                    double want = 0;
                    for (int j = 0; j < len[s]; j++)
                        want += w[j] / tot * v[(start[s] + j) * NKV * D + kh * D + e];
                    assert_true(fabs(o1[(start[s] + i) * NH * D + h * D + e] - want) < 1e-5);
                }
            }
    kpool_free(p1);
    kpool_free(p2);
}

/* Bidirectional attention of BERT's shape (several 128-row query blocks,
 * edge tiles): the float kernel (AVX-512 or AVX2)'s products agree with sgemm's
 * (kern_set_attn_sgemm forces those) to rounding, and 1 and 2 threads give
 * the same bits. */
static void test_attention_long(void **state)
{
    (void)state;
    enum { T = 300, NH = 2, D = 64 };
    size_t n = (size_t)T * NH * D;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *o1 = malloc(n * 4),
          *o2 = malloc(n * 4), *o3 = malloc(n * 4);
    fill(q, n, 1.0f);
    fill(k, n, 1.0f);
    fill(v, n, 1.0f);
    int64_t start[2] = {0, 37}, len[2] = {37, T - 37};
    kattn a = {.n_head = NH, .n_head_kv = NH, .head_dim = D, .scale = 0.125f};
    kpool *p1 = kpool_new(1), *p2 = kpool_new(2);
    kern_attention(p1, &a, q, NH * D, k, v, NH * D, o1, NH * D, start, len, 2);
    kern_attention(p2, &a, q, NH * D, k, v, NH * D, o2, NH * D, start, len, 2);
    assert_memory_equal(o1, o2, n * 4);
    kern_set_attn_sgemm(1);
    kern_attention(p2, &a, q, NH * D, k, v, NH * D, o3, NH * D, start, len, 2);
    kern_set_attn_sgemm(0);
    for (size_t i = 0; i < n; i++)
        assert_true(fabs(o1[i] - o3[i]) < 1e-5);
    kpool_free(p1);
    kpool_free(p2);
    free(q), free(k), free(v), free(o1), free(o2), free(o3);
}

/* Causal attention over a shared prefix against a double-precision
 * reference: every token sees the P prefix keys and its own sequence's
 * keys up to itself; 1, 3 and 2 threads give the same bits. */
static void check_causal_prefix(int P, int T, int NH, int NKV, int D)
{
    size_t nq = (size_t)T * NH * D, nk = (size_t)T * NKV * D, np_ = (size_t)(P ? P : 1) * NKV * D;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *pk = malloc(np_ * 4),
          *pv = malloc(np_ * 4), *o1 = malloc(nq * 4), *o2 = malloc(nq * 4),
          *o3 = malloc(nq * 4);
    double *w = malloc((size_t)(P + T) * sizeof *w);
    fill(q, nq, 1.0f);
    fill(k, nk, 1.0f);
    fill(v, nk, 1.0f);
    fill(pk, np_, 1.0f);
    fill(pv, np_, 1.0f);
    /* three sequences: 3 tokens, the rest split unevenly (several query blocks) */
    int64_t start[3] = {0, 3, 3 + (T - 3) / 3}, len[3] = {3, (T - 3) / 3, T - 3 - (T - 3) / 3};
    for (int with_prefix = 0; with_prefix < 2; with_prefix++) {
        kattn a = {.n_head = NH, .n_head_kv = NKV, .head_dim = D, .scale = 0.4f, .causal = 1};
        if (with_prefix && P)
            a.pk = pk, a.pv = pv, a.n_prefix = P, a.ldp = NKV * D;
        kpool *p1 = kpool_new(1), *p2 = kpool_new(2), *p3 = kpool_new(3);
        kern_attention(p1, &a, q, NH * D, k, v, NKV * D, o1, NH * D, start, len, 3);
        kern_attention(p2, &a, q, NH * D, k, v, NKV * D, o2, NH * D, start, len, 3);
        kern_attention(p3, &a, q, NH * D, k, v, NKV * D, o3, NH * D, start, len, 3);
        assert_memory_equal(o1, o2, nq * 4);
        assert_memory_equal(o1, o3, nq * 4);
        int np = (int)a.n_prefix;
        for (int s = 0; s < 3; s++)
            for (int h = 0; h < NH; h++)
                for (int i = 0; i < len[s]; i++) {
                    double tot = 0, mx = -1e30;
                    int kh = h / (NH / NKV), n = np + i + 1;
                    const float *qi = q + (start[s] + i) * NH * D + h * D;
                    for (int j = 0; j < n; j++) {
                        const float *kj = j < np ? pk + j * NKV * D + kh * D
                                                 : k + (start[s] + j - np) * NKV * D + kh * D;
                        double d = 0;
                        for (int e = 0; e < D; e++)
                            d += (double)qi[e] * kj[e];
                        w[j] = d * 0.4;
                        mx = fmax(mx, w[j]);
                    }
                    for (int j = 0; j < n; j++)
                        tot += (w[j] = exp(w[j] - mx));
                    for (int e = 0; e < D; e++) {
                        double want = 0;
                        for (int j = 0; j < n; j++) {
                            const float *vj = j < np ? pv + j * NKV * D + kh * D
                                                     : v + (start[s] + j - np) * NKV * D + kh * D;
                            want += w[j] / tot * vj[e];
                        }
                        double got = o1[(start[s] + i) * NH * D + h * D + e];
                        if (fabs(got - want) > 1e-5)
                            fail_msg("P %d T %d heads %d/%d D %d prefix %d seq %d head %d row "
                                     "%d: %g vs %g", P, T, NH, NKV, D, with_prefix, s, h, i, got,
                                     want);
                    }
                }
        kpool_free(p1);
        kpool_free(p2);
        kpool_free(p3);
    }
    free(q), free(k), free(v), free(pk), free(pv), free(o1), free(o2), free(o3), free(w);
}

/* GQA groups of 1, 2 and 4 query heads (stacked into one product per KV
 * head), odd head sizes and prefix lengths, sequences spanning several
 * query blocks (64 rows per head for groups of 2), the real Qwen3 head
 * shape, on both attention paths. */
static void test_causal_prefix_attention(void **state)
{
    (void)state;
    check_causal_prefix(5, 140, 4, 2, 8);
    check_causal_prefix(7, 301, 8, 2, 12);
    check_causal_prefix(3, 205, 3, 3, 5);
    check_causal_prefix(0, 97, 6, 3, 17);
    /* head sizes of 64k: the AVX-512 micro-kernels where the CPU has
     * them (8-row score tiles, 32-key steps: odd lengths and prefixes
     * leave every kind of remainder), then the same on sgemm */
    for (int sg = 0; sg < 2; sg++) {
        kern_set_attn_sgemm(sg);
        check_causal_prefix(9, 270, 4, 2, 128);
        check_causal_prefix(68, 77, 2, 1, 64);
        check_causal_prefix(31, 45, 3, 3, 192);
        check_causal_prefix(0, 35, 8, 2, 64);
    }
    kern_set_attn_sgemm(0);
}

/* kern_linear_n (three products of one input sharing the quantised
 * activations, as a Q4_K_M file mixes Q8_0, Q4_K, Q6_K and, for rows not
 * a multiple of 256, Q5_0/Q5_1) gives kern_linear's bits, packed or not,
 * with biases, for odd row counts and 1 or 2 threads. */
static void check_linear_n(const ggml_type *types)
{
    enum { NI = 256, NA = 48, NB = 80, NC = 16 };
    int64_t outs[3] = {NA, NB, NC};
    float *wf[3];
    void *wq[3];
    q8pack *pk[3];
    kmat m[3];
    float *bias[3];
    for (int i = 0; i < 3; i++) {
        wf[i] = malloc((size_t)(NI * outs[i]) * 4);
        fill(wf[i], (size_t)(NI * outs[i]), 0.2f);
        wq[i] = malloc(quant_row_size(types[i], NI) * (size_t)outs[i]);
        for (int64_t r = 0; r < outs[i]; r++)
            quant_quantize_row(types[i], wf[i] + r * NI,
                               (uint8_t *)wq[i] + r * quant_row_size(types[i], NI), NI);
        pk[i] = q8pack_new(types[i], wq[i], NI, outs[i]);
        assert_non_null(pk[i]);
        m[i] = (kmat){.type = types[i], .n_in = NI, .n_out = outs[i], .data = wq[i],
                      .name = "w", .pack = pk[i]};
        bias[i] = malloc((size_t)outs[i] * 4);
        fill(bias[i], (size_t)outs[i], 0.5f);
    }
    int64_t Ts[3] = {1, 37, 70};
    for (int ti = 0; ti < 3; ti++)
        for (int packed = 0; packed < 2; packed++)
            for (int th = 1; th <= 2; th++) {
                int64_t T = Ts[ti], ldx = NI + 3;
                float *X = malloc((size_t)(T * ldx) * 4);
                fill(X, (size_t)(T * ldx), 1.0f);
                kpool *p = kpool_new(th);
                const kmat *wm[3];
                kmat um[3];
                float *ref[3], *got[3];
                int64_t ld[3];
                for (int i = 0; i < 3; i++) {
                    um[i] = m[i];
                    if (!packed)
                        um[i].pack = NULL;
                    wm[i] = &um[i];
                    ld[i] = outs[i] + 1;
                    ref[i] = calloc((size_t)(T * ld[i]), 4);
                    got[i] = calloc((size_t)(T * ld[i]), 4);
                    kern_linear(p, wm[i], i == 1 ? NULL : bias[i], X, ldx, T, ref[i], ld[i]);
                }
                const float *bs[3] = {bias[0], NULL, bias[2]};
                kern_linear_n(p, 3, wm, bs, X, ldx, T, got, ld);
                for (int i = 0; i < 3; i++) {
                    if (memcmp(ref[i], got[i], (size_t)(T * ld[i]) * 4) != 0)
                        fail_msg("T %lld packed %d threads %d product %d differs", (long long)T,
                                 packed, th, i);
                    free(ref[i]);
                    free(got[i]);
                }
                kpool_free(p);
                free(X);
            }
    for (int i = 0; i < 3; i++) {
        q8pack_free(pk[i]);
        free(wf[i]);
        free(wq[i]);
        free(bias[i]);
    }
}

static void test_linear_n(void **state)
{
    (void)state;
    check_linear_n((const ggml_type[]){GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K});
    check_linear_n((const ggml_type[]){GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q5_K});
}

static void test_swiglu(void **state)
{
    (void)state;
    /* SwiGLU's silu(g) * u */
    float g[64], u[64], g0[64];
    for (int i = 0; i < 64; i++)
        g[i] = g0[i] = (float)(i - 32) / 3.0f, u[i] = 0.5f + (float)i / 64.0f;
    kpool *p = kpool_new(2);
    kern_silu_mul(p, g, 16, u, 16, 4, 16);
    for (int i = 0; i < 64; i++)
        assert_true(fabs(g[i] - g0[i] / (1 + exp(-(double)g0[i])) * u[i]) < 1e-5);
    kpool_free(p);
}

typedef struct sum_ctx {
    long out[1000];
} sum_ctx;

static void sum_task(void *ctx, int task, int tid)
{
    sum_ctx *c = ctx;
    (void)tid;
    c->out[task] = (long)task * task;
}

static void test_pool(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        kpool *p = kpool_new(n);
        assert_int_equal(kpool_threads(p), n);
        for (int rep = 0; rep < 50; rep++) {
            sum_ctx c = {{0}};
            kpool_run(p, 1000, sum_task, &c);
            for (int i = 0; i < 1000; i++)
                assert_int_equal(c.out[i], (long)i * i);
        }
        for (int t = 0; t < n; t++) {
            void *s = kpool_scratch(p, t, 1000 + (size_t)t);
            assert_true(((uintptr_t)s & 63) == 0);
            memset(s, 1, 1000);
        }
        kpool_free(p);
    }
}

/* ---- models ---- */

static int setup_models(void **state)
{
    (void)state;
    const char *src = getenv("TROVE_SOURCE_DIR");
    if (!src)
        src = ".";
    snprintf(models, sizeof models, "/tmp/trove-test-model-XXXXXX");
    if (!mkdtemp(models))
        return -1;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/tests/tools/make_models.py %s", src, models);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown_models(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", models);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *mpath(const char *name, const char *ext)
{
    static char buf[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s%s", models, name, ext);
    return buf[k];
}

typedef struct request {
    int32_t *ids;
    int64_t *start, *len;
    size_t n, n_ids;
    double *want; /* n x dim */
    size_t dim;
} request;

static void load_request(const char *name, const char *refname, request *r)
{
    json_error_t je;
    json_t *req = json_load_file(mpath(name, ".req.json"), 0, &je);
    json_t *ref = json_load_file(mpath(refname, ".ref.json"), 0, &je);
    assert_non_null(req);
    assert_non_null(ref);
    json_t *seqs = json_object_get(req, "seqs"), *vecs = json_object_get(ref, "vectors");
    memset(r, 0, sizeof *r);
    r->n = json_array_size(seqs);
    r->start = calloc(r->n, sizeof *r->start);
    r->len = calloc(r->n, sizeof *r->len);
    for (size_t i = 0; i < r->n; i++)
        r->n_ids += json_array_size(json_array_get(seqs, i));
    r->ids = calloc(r->n_ids, sizeof *r->ids);
    size_t off = 0;
    for (size_t i = 0; i < r->n; i++) {
        json_t *s = json_array_get(seqs, i);
        r->start[i] = (int64_t)off;
        r->len[i] = (int64_t)json_array_size(s);
        for (size_t j = 0; j < json_array_size(s); j++)
            r->ids[off++] = (int32_t)json_integer_value(json_array_get(s, j));
    }
    r->dim = json_array_size(json_array_get(vecs, 0));
    r->want = calloc(r->n * r->dim, sizeof *r->want);
    for (size_t i = 0; i < r->n; i++)
        for (size_t j = 0; j < r->dim; j++)
            r->want[i * r->dim + j] = json_number_value(json_array_get(json_array_get(vecs, i), j));
    json_decref(req);
    json_decref(ref);
}

static void free_request(request *r)
{
    free(r->ids), free(r->start), free(r->len), free(r->want);
}

static float *run_model(const char *name, const request *r, int threads)
{
    embed_opts o = {.threads = threads};
    trove_err e;
    embed_model *m = embed_open(mpath(name, ".gguf"), &o, &e);
    if (!m)
        fail_msg("open %s: %s", name, trove_errmsg());
    assert_int_equal(embed_dim(m), (int)r->dim);
    float *v = calloc(r->n * r->dim, sizeof *v);
    e = embed_tokens(m, r->ids, r->start, r->len, r->n, v);
    if (e)
        fail_msg("embed %s: %s", name, trove_errmsg());
    embed_close(m);
    return v;
}

static void test_float_models(void **state)
{
    (void)state;
    const char *names[] = {"bert_f32", "bert_f16", "bert_fused_cls", "bert_last", "gemma_f32",
                           "gemma_long", "qwen3_emb_f32"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        request r;
        load_request(names[k], names[k], &r);
        float *v1 = run_model(names[k], &r, 1);
        float *v2 = run_model(names[k], &r, 2);
        double err = 0;
        for (size_t i = 0; i < r.n * r.dim; i++)
            err = fmax(err, fabs(v1[i] - r.want[i]));
        if (err > 1e-4)
            fail_msg("%s: max abs error %g", names[k], err);
        assert_memory_equal(v1, v2, r.n * r.dim * sizeof *v1);
        free(v1), free(v2);
        free_request(&r);
    }
}

static void test_quantized_models(void **state)
{
    (void)state;
    struct { const char *name, *ref; double min_cos; } cases[] = {
        {"bert_q8", "bert_f32", 0.999}, {"gemma_q8", "gemma_f32", 0.999},
        {"bert256_q4_k", "bert256_f32", 0.99}, {"bert_q40", "bert_q40", 0.9995},
        {"bert256_q6_k", "bert256_q6_k", 0.9995}, {"qwen3_emb_q8", "qwen3_emb_f32", 0.999},
        {"qwen3_emb_q8", "qwen3_emb_q8", 0.9995},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        request r;
        load_request(cases[k].name, cases[k].ref, &r);
        float *v1 = run_model(cases[k].name, &r, 1);
        float *v3 = run_model(cases[k].name, &r, 3);
        for (size_t i = 0; i < r.n; i++) {
            double d = 0, a = 0, b = 0;
            for (size_t j = 0; j < r.dim; j++) {
                d += v1[i * r.dim + j] * r.want[i * r.dim + j];
                a += (double)v1[i * r.dim + j] * v1[i * r.dim + j];
                b += r.want[i * r.dim + j] * r.want[i * r.dim + j];
            }
            if (d / sqrt(a * b) < cases[k].min_cos)
                fail_msg("%s vs %s: sequence %zu cosine %.6f", cases[k].name, cases[k].ref, i,
                         d / sqrt(a * b));
        }
        assert_memory_equal(v1, v3, r.n * r.dim * sizeof *v1);
        free(v1), free(v3);
        free_request(&r);
    }
}

static void test_api(void **state)
{
    (void)state;
    trove_err e;
    embed_opts o = {.threads = 2, .dim = 16};
    embed_model *m = embed_open(mpath("gemma_f32", ".gguf"), &o, &e);
    assert_non_null(m);
    assert_int_equal(embed_dim(m), 16);
    embed_info in;
    embed_get_info(m, &in);
    assert_string_equal(in.arch, "gemma-embedding");
    assert_string_equal(in.query_prompt, "task: search result | query: ");
    assert_int_equal(in.dim_native, 64);
    const char *texts[] = {"the search index", "", "vault note with code"};
    float q[3 * 16], d[3 * 16], again[3 * 16];
    assert_int_equal(embed_texts(m, texts, 3, EMBED_QUERY, q), TROVE_OK);
    assert_int_equal(embed_texts(m, texts, 3, EMBED_DOCUMENT, d), TROVE_OK);
    assert_int_equal(embed_texts(m, texts, 3, EMBED_QUERY, again), TROVE_OK);
    assert_memory_equal(q, again, sizeof q);
    assert_memory_not_equal(q, d, sizeof q); /* prompts differ */
    for (int i = 0; i < 3; i++) {
        double n = 0;
        for (int j = 0; j < 16; j++)
            n += (double)q[i * 16 + j] * q[i * 16 + j];
        assert_true(fabs(n - 1) < 1e-5);
    }
    float s;
    assert_int_equal(embed_rerank(m, "q", texts, 1, &s), TROVE_EINVAL);
    embed_close(m);

    /* prompts are overridable */
    embed_opts o2 = {.threads = 1, .query_prompt = "", .doc_prompt = ""};
    m = embed_open(mpath("gemma_f32", ".gguf"), &o2, &e);
    assert_non_null(m);
    float a[64], b[64];
    assert_int_equal(embed_texts(m, texts, 1, EMBED_QUERY, a), TROVE_OK);
    assert_int_equal(embed_texts(m, texts, 1, EMBED_DOCUMENT, b), TROVE_OK);
    assert_memory_equal(a, b, sizeof a);
    embed_close(m);

    /* reranker */
    m = embed_open(mpath("rerank_f32", ".gguf"), NULL, &e);
    assert_non_null(m);
    embed_info ri;
    embed_get_info(m, &ri);
    assert_int_equal(ri.rerank_tokens, 256); /* encoder cross-encoder default */
    const char *docs[] = {"fast local search", "token data", "the model ranks text"};
    float sc[3], sc2[3];
    assert_int_equal(embed_rerank(m, "search", docs, 3, sc), TROVE_OK);
    assert_int_equal(embed_rerank(m, "search", docs, 3, sc2), TROVE_OK);
    assert_memory_equal(sc, sc2, sizeof sc);
    assert_true(sc[0] != sc[1]);
    assert_int_equal(embed_texts(m, docs, 1, EMBED_DOCUMENT, a), TROVE_EINVAL);
    embed_close(m);
}

/* ---- Qwen3 rerankers: prefix cache against whole sequences ---- */

typedef struct rank_req {
    int32_t *prefix, *seqs, *cands;
    int64_t n_prefix, *sstart, *slen, *cstart, *clen;
    size_t n;
    int32_t rank_tokens[2];
    bool lm_head;
} rank_req;

static int32_t *json_ids(json_t *arr, int64_t *start, int64_t *len, size_t *total)
{
    size_t n = json_array_size(arr), tot = 0;
    for (size_t i = 0; i < n; i++)
        tot += json_array_size(json_array_get(arr, i));
    int32_t *ids = calloc(tot + 1, sizeof *ids);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_array_get(arr, i);
        start[i] = (int64_t)off;
        len[i] = (int64_t)json_array_size(s);
        for (size_t j = 0; j < json_array_size(s); j++)
            ids[off++] = (int32_t)json_integer_value(json_array_get(s, j));
    }
    if (total)
        *total = tot;
    return ids;
}

static void load_rank(const char *name, rank_req *r)
{
    json_error_t je;
    json_t *req = json_load_file(mpath(name, ".req.json"), 0, &je);
    assert_non_null(req);
    memset(r, 0, sizeof *r);
    json_t *pre = json_object_get(req, "prefix"), *rt = json_object_get(req, "rank_tokens");
    r->n = json_array_size(json_object_get(req, "seqs"));
    r->n_prefix = (int64_t)json_array_size(pre);
    r->prefix = calloc((size_t)r->n_prefix, sizeof *r->prefix);
    for (int64_t i = 0; i < r->n_prefix; i++)
        r->prefix[i] = (int32_t)json_integer_value(json_array_get(pre, (size_t)i));
    r->sstart = calloc(r->n, sizeof(int64_t)), r->slen = calloc(r->n, sizeof(int64_t));
    r->cstart = calloc(r->n, sizeof(int64_t)), r->clen = calloc(r->n, sizeof(int64_t));
    r->seqs = json_ids(json_object_get(req, "seqs"), r->sstart, r->slen, NULL);
    r->cands = json_ids(json_object_get(req, "cands"), r->cstart, r->clen, NULL);
    if (rt) {
        r->lm_head = true;
        r->rank_tokens[0] = (int32_t)json_integer_value(json_array_get(rt, 0));
        r->rank_tokens[1] = (int32_t)json_integer_value(json_array_get(rt, 1));
    }
    json_decref(req);
}

static void free_rank(rank_req *r)
{
    free(r->prefix), free(r->seqs), free(r->cands);
    free(r->sstart), free(r->slen), free(r->cstart), free(r->clen);
}

/* P(yes) of every candidate, whole sequences or prefix cache + candidates. */
static void run_rank(const char *name, const rank_req *r, int threads, bool use_prefix, double *p)
{
    gguf_file *f;
    emodel *m;
    assert_int_equal(gguf_open(mpath(name, ".gguf"), &f), TROVE_OK);
    if (emodel_load(f, &m))
        fail_msg("load %s: %s", name, trove_errmsg());
    if (r->lm_head)
        assert_int_equal(emodel_token_head(m, r->rank_tokens, 2), TROVE_OK);
    assert_int_equal(emodel_hp(m)->n_cls_out, 2);
    kpool *pool = kpool_new(threads);
    float *v = calloc(r->n * 2, sizeof *v);
    emodel_kv *kv = NULL;
    emodel_batch b = {.ids = r->seqs, .start = r->sstart, .len = r->slen, .n_seq = (int64_t)r->n};
    if (use_prefix) {
        assert_int_equal(emodel_kv_new(m, pool, r->prefix, r->n_prefix, &kv), TROVE_OK);
        assert_int_equal(emodel_kv_len(kv), r->n_prefix);
        b = (emodel_batch){.ids = r->cands, .start = r->cstart, .len = r->clen,
                           .n_seq = (int64_t)r->n, .prefix = kv};
    }
    trove_err e = emodel_forward(m, pool, &b, EMODEL_POOL_RANK, v);
    if (e)
        fail_msg("%s: %s", name, trove_errmsg());
    for (size_t i = 0; i < r->n; i++) {
        double a = v[2 * i], c = v[2 * i + 1], mx = fmax(a, c);
        p[i] = exp(a - mx) / (exp(a - mx) + exp(c - mx));
    }
    emodel_kv_free(kv);
    kpool_free(pool);
    free(v);
    emodel_free(m);
    gguf_close(f);
}

static void test_qwen3_rank_models(void **state)
{
    (void)state;
    struct { const char *name, *ref; double tol; } cases[] = {
        {"qwen3_rank_f32", "qwen3_rank_f32", 1e-4}, {"qwen3_rank_lm", "qwen3_rank_lm", 1e-4},
        /* Q8_0 layers multiply int8-quantised activations (q8pack, as
         * llama.cpp does for Q8_0 weights); the numpy reference keeps them
         * in float: up to ~1e-2 in P(yes) on this 64-wide model */
        {"qwen3_rank_q8", "qwen3_rank_q8", 1.5e-2}, {"qwen3_rank_q8", "qwen3_rank_f32", 2e-2},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        rank_req r;
        load_rank(cases[k].name, &r);
        json_error_t je;
        json_t *rj = json_load_file(mpath(cases[k].ref, ".ref.json"), 0, &je);
        assert_non_null(rj);
        double whole[8], pre1[8], pre3[8];
        assert_true(r.n <= 8);
        run_rank(cases[k].name, &r, 1, false, whole);
        run_rank(cases[k].name, &r, 1, true, pre1);
        run_rank(cases[k].name, &r, 3, true, pre3);
        for (size_t i = 0; i < r.n; i++) {
            double want = json_number_value(json_array_get(json_object_get(rj, "vectors"), i));
            if (getenv("TROVE_TEST_VERBOSE"))
                fprintf(stderr, "%s vs %s: candidate %zu: %.7f reference %.7f\n", cases[k].name,
                        cases[k].ref, i, whole[i], want);
            if (fabs(whole[i] - want) > cases[k].tol || fabs(pre1[i] - want) > cases[k].tol)
                fail_msg("%s vs %s: candidate %zu: whole %.7f, prefix %.7f, reference %.7f",
                         cases[k].name, cases[k].ref, i, whole[i], pre1[i], want);
            /* the cache changes only the order of float sums */
            assert_true(fabs(whole[i] - pre1[i]) < 1e-5);
            assert_true(pre1[i] == pre3[i]);
        }
        json_decref(rj);
        free_rank(&r);
    }
}

/* Reranking and embedding through embed.h with Qwen3 files. */
static void test_qwen3_api(void **state)
{
    (void)state;
    trove_err e;
    embed_opts o = {.threads = 2};
    embed_model *m = embed_open(mpath("qwen3_emb_f32", ".gguf"), &o, &e);
    assert_non_null(m);
    embed_info in;
    embed_get_info(m, &in);
    assert_string_equal(in.arch, "qwen3");
    assert_int_equal(in.rerank_tokens, 128); /* decoders read a shorter window */
    assert_string_equal(in.tokenizer, "gpt2");
    assert_string_equal(in.pooling, "last");
    assert_string_equal(in.query_prompt, "Instruct: Given a web search query, retrieve relevant "
                                         "passages that answer the query\nQuery:");
    assert_string_equal(in.doc_prompt, "");
    /* "$A <|endoftext|>": the last id is <|endoftext|> */
    int32_t ids[64];
    size_t n = embed_tokenize(m, "the search index", 1, ids, 64);
    size_t n0 = embed_tokenize(m, "the search index", 0, ids + 32, 32);
    assert_int_equal(n, n0 + 1);
    assert_memory_equal(ids, ids + 32, n0 * sizeof *ids);
    /* truncation keeps the end-of-text token */
    assert_int_equal(embed_tokenize(m, "the search index", 1, ids + 40, 2), 2);
    assert_int_equal(ids[41], ids[n - 1]);
    const char *texts[] = {"the search index", "vault note with code"};
    float q[2 * 64], d[2 * 64];
    assert_int_equal(embed_texts(m, texts, 2, EMBED_QUERY, q), TROVE_OK);
    assert_int_equal(embed_texts(m, texts, 2, EMBED_DOCUMENT, d), TROVE_OK);
    assert_memory_not_equal(q, d, sizeof q);
    float s;
    assert_int_equal(embed_rerank(m, "q", texts, 1, &s), TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), "not a reranker"));
    embed_close(m);

    m = embed_open(mpath("qwen3_chat", ".gguf"), &o, &e);
    assert_non_null(m);
    assert_int_equal(embed_rerank(m, "q", texts, 1, &s), TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), "not a reranker"));
    embed_close(m);
    assert_null(embed_open(mpath("qwen3_rank_noyes", ".gguf"), &o, &e));
    assert_int_equal(e, TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), "\"yes\"/\"no\""));

    /* rerankers: prefix cache = whole prompts; thread counts agree */
    const char *docs[] = {"fast local search", "", "3 token data", "  indented code", "\nnew line",
                          "(paren) the model ranks text", "\xe4\xb8\xad\xe6\x96\x87 text"};
    enum { ND = sizeof docs / sizeof *docs };
    const char *models[] = {"qwen3_rank_f32", "qwen3_rank_lm", "qwen3_rank_q8"};
    for (size_t k = 0; k < 3; k++) {
        float a[ND], b[ND], c[ND];
        embed_opts o1 = {.threads = 1}, o3 = {.threads = 3},
                   on = {.threads = 2, .rerank_no_prefix_cache = 1};
        embed_model *m1 = embed_open(mpath(models[k], ".gguf"), &o1, &e);
        embed_model *m3 = embed_open(mpath(models[k], ".gguf"), &o3, &e);
        embed_model *mn = embed_open(mpath(models[k], ".gguf"), &on, &e);
        assert_non_null(m1), assert_non_null(m3), assert_non_null(mn);
        embed_get_info(m1, &in);
        assert_string_equal(in.pooling, "rank");
        assert_int_equal(in.rerank_tokens, 128); /* the decoder default */
        assert_int_equal(embed_rerank(m1, "search index", docs, ND, a), TROVE_OK);
        assert_int_equal(embed_rerank(m3, "search index", docs, ND, b), TROVE_OK);
        assert_int_equal(embed_rerank(mn, "search index", docs, ND, c), TROVE_OK);
        assert_memory_equal(a, b, sizeof a);
        for (int i = 0; i < ND; i++) {
            assert_true(a[i] >= 0 && a[i] <= 1);
            assert_true(fabsf(a[i] - c[i]) < 1e-5f);
        }
        assert_true(a[0] != a[1]);
        float v[64];
        assert_int_equal(embed_texts(m1, docs, 1, EMBED_DOCUMENT, v), TROVE_EINVAL);
        /* the split prompt tokenises as the whole prompt does */
        for (int i = 0; i < ND; i++) {
            char full[1024];
            snprintf(full, sizeof full,
                     "<|im_start|>system\nJudge whether the Document meets the requirements based "
                     "on the Query and the Instruct provided. Note that the answer can only be "
                     "\"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a web "
                     "search query, retrieve relevant passages that answer the query\n<Query>: "
                     "search index\n<Document>: %s<|im_end|>\n<|im_start|>assistant\n<think>\n\n"
                     "</think>\n\n", docs[i]);
            int32_t w[512], p[512];
            size_t nw = embed_tokenize(m1, full, 0, w, 512);
            size_t np = embed_tokenize_pair(m1, "search index", docs[i], p, NULL, 512);
            assert_int_equal(nw, np);
            assert_memory_equal(w, p, nw * sizeof *w);
        }
        embed_close(m1), embed_close(m3), embed_close(mn);
    }

    /* documents are cut to rerank_tokens; another instruction changes scores */
    static char long_doc[8000];
    long_doc[0] = 0;
    for (int i = 0; i < 300; i++)
        strcat(long_doc, "search index token ");
    embed_opts ow = {.threads = 2, .rerank_tokens = 16};
    m = embed_open(mpath("qwen3_rank_f32", ".gguf"), &ow, &e);
    int32_t p1[600], p2[600];
    size_t n1 = embed_tokenize_pair(m, "q", long_doc, p1, NULL, 600);
    size_t n2 = embed_tokenize_pair(m, "q", "search index token search index token search index "
                                    "token search index token search index token search index "
                                    "token", p2, NULL, 600);
    assert_int_equal(n1, n2);
    assert_memory_equal(p1, p2, n1 * sizeof *p1);
    const char *ld[] = {long_doc};
    float s1, s2;
    assert_int_equal(embed_rerank(m, "q", ld, 1, &s1), TROVE_OK);
    embed_close(m);
    embed_opts oi = {.threads = 2, .rerank_tokens = 16, .rerank_instruction = "Find notes"};
    m = embed_open(mpath("qwen3_rank_f32", ".gguf"), &oi, &e);
    assert_int_equal(embed_rerank(m, "q", ld, 1, &s2), TROVE_OK);
    assert_true(s1 != s2);
    embed_close(m);
}

/* CLS pooling runs the last layer after attention on each sequence's
 * first row only (bert.c, emodel_ws.first_only): those rows must get the
 * bits of the whole pass (POOL_NONE), for float and packed int8 weights. */
static void check_cls_rows(const char *name)
{
    gguf_file *f;
    assert_int_equal(gguf_open(mpath(name, ".gguf"), &f), TROVE_OK);
    emodel *m;
    assert_int_equal(emodel_load(f, &m), TROVE_OK);
    int32_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = 4 + (i * 7) % 9;
    ids[0] = ids[17] = 2;
    int64_t start[] = {0, 17}, len[] = {17, 23};
    emodel_batch b = {.ids = ids, .start = start, .len = len, .n_seq = 2};
    int64_t H = emodel_hp(m)->n_embd;
    float *all = calloc((size_t)(40 * H), sizeof *all), *cls = calloc((size_t)(2 * H), sizeof *cls);
    kpool *p = kpool_new(2);
    assert_int_equal(emodel_forward(m, p, &b, EMODEL_POOL_NONE, all), TROVE_OK);
    assert_int_equal(emodel_forward(m, p, &b, EMODEL_POOL_CLS, cls), TROVE_OK);
    assert_memory_equal(all, cls, (size_t)H * sizeof *all);
    assert_memory_equal(all + 17 * H, cls + H, (size_t)H * sizeof *all);
    kpool_free(p);
    free(all), free(cls);
    emodel_free(m);
    gguf_close(f);
}

static void test_pool_none(void **state)
{
    (void)state;
    const char *names[] = {"bert_fused_cls", "bert_f32", "bert_q8", "bert256_q4_k",
                           "bert256_q6_k"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        check_cls_rows(names[i]);
    /* bad input */
    gguf_file *f;
    assert_int_equal(gguf_open(mpath("bert_fused_cls", ".gguf"), &f), TROVE_OK);
    emodel *m;
    assert_int_equal(emodel_load(f, &m), TROVE_OK);
    float *out = calloc((size_t)emodel_hp(m)->n_embd, sizeof *out);
    kpool *p = kpool_new(2);
    int32_t bad[] = {2, 100000, 3};
    int64_t bs[] = {0}, bl[] = {3}, zero[] = {0};
    emodel_batch bb = {.ids = bad, .start = bs, .len = bl, .n_seq = 1};
    assert_int_equal(emodel_forward(m, p, &bb, EMODEL_POOL_MEAN, out), TROVE_EINVAL);
    bb.len = zero;
    assert_int_equal(emodel_forward(m, p, &bb, EMODEL_POOL_MEAN, out), TROVE_EINVAL);
    kpool_free(p);
    free(out);
    emodel_free(m);
    gguf_close(f);
}

static void test_broken(void **state)
{
    (void)state;
    struct { const char *name; trove_err code; const char *msg; } cases[] = {
        {"bad_shape", TROVE_ECORRUPT, "blk.1.attn_q.weight has shape [64, 96], expected [64, 64]"},
        {"bad_missing", TROVE_ECORRUPT, "blk.0.attn_q.weight is missing"},
        {"bad_arch", TROVE_EUNSUPPORTED, "unsupported architecture 'mamba'"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        trove_err e = TROVE_OK;
        embed_model *m = embed_open(mpath(cases[k].name, ".gguf"), NULL, &e);
        assert_null(m);
        assert_int_equal(e, cases[k].code);
        if (!strstr(trove_errmsg(), cases[k].msg))
            fail_msg("%s: message '%s'", cases[k].name, trove_errmsg());
    }
    trove_err e = TROVE_OK;
    assert_null(embed_open(mpath("does_not_exist", ".gguf"), NULL, &e));
    assert_int_not_equal(e, TROVE_OK);
    /* every truncation of a model fails cleanly */
    FILE *fp = fopen(mpath("gemma_f32", ".gguf"), "rb");
    assert_non_null(fp);
    static unsigned char buf[1 << 21];
    size_t n = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    size_t cuts[] = {0, 8, 24, 100, 1000, n / 3, n - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        const char *p = mpath("cut", ".gguf");
        fp = fopen(p, "wb");
        fwrite(buf, 1, cuts[k], fp);
        fclose(fp);
        assert_null(embed_open(p, NULL, &e));
        assert_int_not_equal(e, TROVE_OK);
    }
}

int main(void)
{
    const struct CMUnitTest kernels[] = {
        cmocka_unit_test(test_pool),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_linear_rows_independent),
        cmocka_unit_test(test_linear_q8_float),
        cmocka_unit_test(test_attention_long),
        cmocka_unit_test(test_rowops),
        cmocka_unit_test(test_rope_and_attention),
        cmocka_unit_test(test_causal_prefix_attention),
        cmocka_unit_test(test_swiglu),
        cmocka_unit_test(test_linear_n),
    };
    const struct CMUnitTest model_tests[] = {
        cmocka_unit_test(test_float_models),
        cmocka_unit_test(test_quantized_models),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_qwen3_rank_models),
        cmocka_unit_test(test_qwen3_api),
        cmocka_unit_test(test_pool_none),
        cmocka_unit_test(test_broken),
    };
    int rc = cmocka_run_group_tests_name("kernels", kernels, NULL, NULL);
    rc += cmocka_run_group_tests_name("models", model_tests, setup_models, teardown_models);
    return rc;
}
