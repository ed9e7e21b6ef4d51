/* Tests for quant: half conversions (exhaustive, and against the CPU's F16C
 * instructions), dequantisation of random blocks against a second, loop-
 * by-loop transcription of llama.cpp's reference dequantisers, quantise/
 * dequantise error bounds, dot kernels against double-precision dots, the
 * AVX2 kernels against the portable ones (and the VNNI ones against AVX2,
 * bit for bit), and quant_matmul against
 * quant_vec_dot (bit-identical, whatever the tiling). The C-vs-numpy check of
 * dequantisation is in test_gguf.c (it needs the Python writer's file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "embed/kernels/quant.h"
#include "util/mem.h"

#include "testutil.h"

static const ggml_type all_types[] = {
    GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
    GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
    GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
};
#define NTYPES (sizeof all_types / sizeof all_types[0])

static tu_rng rng = {0x9E3779B97F4A7C15ull};

/* ---- tables ---- */

static void test_type_table(void **state)
{
    (void)state;
    size_t bsz[] = {1, 1, 1, 32, 32, 256, 256, 256, 32, 32};
    size_t tsz[] = {4, 2, 2, 34, 18, 144, 176, 210, 22, 24};
    const char *names[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K",
                           "Q5_0", "Q5_1"};
    for (size_t i = 0; i < NTYPES; i++) {
        assert_true(quant_supported(all_types[i]));
        assert_int_equal(quant_block_size(all_types[i]), bsz[i]);
        assert_int_equal(quant_type_size(all_types[i]), tsz[i]);
        assert_string_equal(quant_type_name(all_types[i]), names[i]);
        assert_int_equal(quant_row_size(all_types[i], 512), 512 / bsz[i] * tsz[i]);
    }
    assert_int_equal(quant_row_size(GGML_TYPE_Q8_0, 48), 0);
    assert_int_equal(quant_row_size(GGML_TYPE_Q4_K, 128), 0);
    assert_int_equal(quant_row_size(GGML_TYPE_Q5_1, 48), 0);
    assert_int_equal(quant_row_size(GGML_TYPE_Q5_0, 384), 12 * 22); /* MiniLM's width */
    assert_int_equal(quant_row_size(GGML_TYPE_F32, ((int64_t)1 << 62) + 4), 0); /* overflow */
    assert_int_equal(quant_row_size(3, 32), 0);
    assert_false(quant_supported(3));
    assert_false(quant_supported(GGML_TYPE_Q8_K));
    assert_false(quant_supported(-1));
    assert_string_equal(quant_type_name(3), "Q4_1");
    assert_string_equal(quant_type_name(99), "unknown");
    assert_string_equal(quant_type_name(-5), "unknown");
}

/* ---- halves ---- */

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_to_f16(float f)
{
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}
__attribute__((target("f16c"))) static float hw_from_f16(uint16_t h)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}
static int have_f16c(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c");
}
#else
static uint16_t hw_to_f16(float f) { return quant_f32_to_f16(f); }
static float hw_from_f16(uint16_t h) { return quant_f16_to_f32(h); }
static int have_f16c(void) { return 0; }
#endif

static void test_f16(void **state)
{
    (void)state;
    int hw = have_f16c();
    for (uint32_t h = 0; h < 65536; h++) {
        float f = quant_f16_to_f32((uint16_t)h);
        if (isnan(f)) {
            assert_true((h & 0x7C00) == 0x7C00 && (h & 0x3FF));
            continue;
        }
        assert_int_equal(quant_f32_to_f16(f), h);
        if (hw) {
            float g = hw_from_f16((uint16_t)h);
            assert_memory_equal(&f, &g, 4);
        }
    }
    assert_true(quant_f16_to_f32(0x3C00) == 1.0f);
    assert_true(quant_f16_to_f32(0xC000) == -2.0f);
    assert_true(quant_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
    assert_int_equal(quant_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(quant_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(quant_f32_to_f16(-1e10f), 0xFC00);
    assert_int_equal(quant_f32_to_f16(1.0f + ldexpf(1.0f, -11)), 0x3C00); /* tie to even */
    assert_int_equal(quant_f32_to_f16(ldexpf(1.0f, -25)), 0);            /* tie to even */
    assert_true(isnan(quant_f16_to_f32(quant_f32_to_f16(NAN))));
    if (hw) {
        for (int i = 0; i < 200000; i++) {
            uint32_t bits = tu_rng_u32(&rng) << 16 ^ tu_rng_u32(&rng);
            float f;
            memcpy(&f, &bits, 4);
            if (isnan(f))
                continue;
            if (quant_f32_to_f16(f) != hw_to_f16(f))
                fail_msg("f16(%a): ours %04x, F16C %04x", (double)f, quant_f32_to_f16(f),
                         hw_to_f16(f));
        }
    }
    /* bfloat16 */
    assert_true(quant_bf16_to_f32(0x3F80) == 1.0f);
    assert_int_equal(quant_f32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(quant_f32_to_bf16(1.00390625f), 0x3F80);  /* tie to even */
    assert_int_equal(quant_f32_to_bf16(1.01171875f), 0x3F82);  /* tie to even, up */
    assert_true(isnan(quant_bf16_to_f32(quant_f32_to_bf16(NAN))));
    for (uint32_t h = 0; h < 65536; h++) {
        float f = quant_bf16_to_f32((uint16_t)h);
        if (!isnan(f))
            assert_int_equal(quant_f32_to_bf16(f), h);
    }
    /* Whole rows (F16C / AVX2 where the CPU has them, 8 at a time, and a
     * scalar tail: 65,536 + 5 elements) give the scalar conversion's bits
     * for every half and bfloat; NaNs stay NaN (F16C quiets them). */
    enum { N = 65536 + 5 };
    uint16_t *hs = malloc(N * sizeof *hs);
    float *y = malloc(N * sizeof *y);
    for (uint32_t i = 0; i < N; i++)
        hs[i] = (uint16_t)(i * 40503u); /* odd multiplier: every value once, then 5 more */
    for (int bf = 0; bf < 2; bf++) {
        quant_dequantize_row(bf ? GGML_TYPE_BF16 : GGML_TYPE_F16, hs, y, N);
        for (uint32_t i = 0; i < N; i++) {
            float want = bf ? quant_bf16_to_f32(hs[i]) : quant_f16_to_f32(hs[i]);
            if (isnan(want))
                assert_true(isnan(y[i]));
            else
                assert_memory_equal(&y[i], &want, 4);
        }
    }
    free(hs);
    free(y);
}

/* ---- reference dequantisers: transcriptions of llama.cpp's loops ---- */

static float h2f(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return quant_f16_to_f32(h);
}

static void ref_scale_min(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
    }
}

static void ref_q4_k(const uint8_t *blk, float *y)
{
    const uint8_t *q = blk + 16;
    float d = h2f(blk), min = h2f(blk + 2);
    int is = 0;
    uint8_t sc, m;
    for (int j = 0; j < 256; j += 64) {
        ref_scale_min(is + 0, blk + 4, &sc, &m);
        float d1 = d * sc, m1 = min * m;
        ref_scale_min(is + 1, blk + 4, &sc, &m);
        float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        q += 32;
        is += 2;
    }
}

static void ref_q5_k(const uint8_t *blk, float *y)
{
    const uint8_t *ql = blk + 48, *qh = blk + 16;
    float d = h2f(blk), min = h2f(blk + 2);
    int is = 0;
    uint8_t sc, m, u1 = 1, u2 = 2;
    for (int j = 0; j < 256; j += 64) {
        ref_scale_min(is + 0, blk + 4, &sc, &m);
        float d1 = d * sc, m1 = min * m;
        ref_scale_min(is + 1, blk + 4, &sc, &m);
        float d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        ql += 32;
        is += 2;
        u1 = (uint8_t)(u1 << 2);
        u2 = (uint8_t)(u2 << 2);
    }
}

static void ref_q6_k(const uint8_t *blk, float *y)
{
    const uint8_t *ql = blk, *qh = blk + 128;
    const int8_t *sc = (const int8_t *)(blk + 192);
    float d = h2f(blk + 208);
    for (int n = 0; n < 256; n += 128) {
        for (int l = 0; l < 32; ++l) {
            int is = l / 16;
            int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l + 0] = d * sc[is + 0] * q1;
            y[l + 32] = d * sc[is + 2] * q2;
            y[l + 64] = d * sc[is + 4] * q3;
            y[l + 96] = d * sc[is + 6] * q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

static void ref_q4_0(const uint8_t *blk, float *y)
{
    float d = h2f(blk);
    for (int j = 0; j < 16; ++j) {
        y[j] = ((blk[2 + j] & 0x0F) - 8) * d;
        y[j + 16] = ((blk[2 + j] >> 4) - 8) * d;
    }
}

/* llama.cpp's dequantize_row_q5_0 / _q5_1, loop by loop */
static void ref_q5_0(const uint8_t *blk, float *y)
{
    float d = h2f(blk);
    uint32_t qh;
    memcpy(&qh, blk + 2, 4);
    for (int j = 0; j < 16; ++j) {
        uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
        uint8_t xh_1 = (uint8_t)(((qh >> (j + 12))) & 0x10);
        int32_t x0 = ((blk[6 + j] & 0x0F) | xh_0) - 16;
        int32_t x1 = ((blk[6 + j] >> 4) | xh_1) - 16;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

static void ref_q5_1(const uint8_t *blk, float *y)
{
    float d = h2f(blk), m = h2f(blk + 2);
    uint32_t qh;
    memcpy(&qh, blk + 4, 4);
    for (int j = 0; j < 16; ++j) {
        uint8_t xh_0 = (uint8_t)(((qh >> (j + 0)) << 4) & 0x10);
        uint8_t xh_1 = (uint8_t)(((qh >> (j + 12))) & 0x10);
        int x0 = (blk[8 + j] & 0x0F) | xh_0;
        int x1 = (blk[8 + j] >> 4) | xh_1;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

static void ref_q8_0(const uint8_t *blk, float *y)
{
    float d = h2f(blk);
    for (int j = 0; j < 32; ++j)
        y[j] = (int8_t)blk[2 + j] * d;
}

/* A random block with sane f16 scales (random bytes elsewhere). */
static void random_block(ggml_type t, uint8_t *b)
{
    size_t ts = quant_type_size(t);
    for (size_t i = 0; i < ts; i++)
        b[i] = (uint8_t)tu_rng_u32(&rng);
    uint16_t d = quant_f32_to_f16(0.01f + (float)(tu_rng_u32(&rng) % 1000) / 1000.0f);
    uint16_t dmin = quant_f32_to_f16((float)(tu_rng_u32(&rng) % 1000) / 4000.0f);
    size_t doff = t == GGML_TYPE_Q6_K ? 208 : 0;
    memcpy(b + doff, &d, 2);
    if (t == GGML_TYPE_Q4_K || t == GGML_TYPE_Q5_K)
        memcpy(b + 2, &dmin, 2);
    if (t == GGML_TYPE_Q5_1) { /* m: an offset of either sign */
        uint16_t m = quant_f32_to_f16(((float)(tu_rng_u32(&rng) % 2001) - 1000.0f) / 1000.0f);
        memcpy(b + 2, &m, 2);
    }
}

static void test_dequant_reference(void **state)
{
    (void)state;
    struct { ggml_type t; void (*ref)(const uint8_t *, float *); } cases[] = {
        {GGML_TYPE_Q8_0, ref_q8_0}, {GGML_TYPE_Q4_0, ref_q4_0}, {GGML_TYPE_Q4_K, ref_q4_k},
        {GGML_TYPE_Q5_K, ref_q5_k}, {GGML_TYPE_Q6_K, ref_q6_k}, {GGML_TYPE_Q5_0, ref_q5_0},
        {GGML_TYPE_Q5_1, ref_q5_1},
    };
    uint8_t blk[4][210];
    float got[1024], want[1024];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ggml_type t = cases[c].t;
        size_t bs = quant_block_size(t), ts = quant_type_size(t);
        for (int iter = 0; iter < 200; iter++) {
            uint8_t row[4 * 210];
            for (int k = 0; k < 4; k++) {
                random_block(t, blk[k]);
                memcpy(row + k * ts, blk[k], ts);
                cases[c].ref(blk[k], want + k * bs);
            }
            quant_dequantize_row(t, row, got, (int64_t)(4 * bs));
            for (size_t e = 0; e < 4 * bs; e++)
                if (got[e] != want[e])
                    fail_msg("%s element %zu: got %g want %g", quant_type_name(t), e,
                             (double)got[e], (double)want[e]);
        }
    }
    /* quant_q5block_int's integers (q8pack's input) give the same values */
    for (int iter = 0; iter < 200; iter++) {
        ggml_type t = iter % 2 ? GGML_TYPE_Q5_1 : GGML_TYPE_Q5_0;
        uint8_t q[32];
        float sc, mn;
        random_block(t, blk[0]);
        quant_dequantize_row(t, blk[0], want, 32);
        quant_q5block_int(t, blk[0], q, &sc, &mn);
        for (int e = 0; e < 32; e++) {
            assert_true(q[e] < 32);
            if (sc * (float)q[e] - mn != want[e])
                fail_msg("%s element %d: %g * %d - %g != %g", quant_type_name(t), e, (double)sc,
                         q[e], (double)mn, (double)want[e]);
        }
    }
    /* float types */
    float src[64], back[64];
    uint8_t raw[256];
    for (int i = 0; i < 64; i++)
        src[i] = tu_rng_gauss(&rng) * 100.0f;
    quant_quantize_row(GGML_TYPE_F32, src, raw, 64);
    quant_dequantize_row(GGML_TYPE_F32, raw, back, 64);
    assert_memory_equal(src, back, sizeof src);
    quant_quantize_row(GGML_TYPE_F16, src, raw, 64);
    quant_dequantize_row(GGML_TYPE_F16, raw, back, 64);
    for (int i = 0; i < 64; i++) {
        uint16_t h;
        memcpy(&h, raw + 2 * i, 2);
        assert_int_equal(h, quant_f32_to_f16(src[i]));
        assert_true(back[i] == quant_f16_to_f32(h));
    }
    quant_quantize_row(GGML_TYPE_BF16, src, raw, 64);
    quant_dequantize_row(GGML_TYPE_BF16, raw, back, 64);
    for (int i = 0; i < 64; i++)
        assert_true(fabsf(back[i] - src[i]) <= fabsf(src[i]) / 256.0f);
}

/* Quantise then dequantise random rows: relative RMS error within bounds
 * typical of each format. */
static void test_quantize_error(void **state)
{
    (void)state;
    const double max_rel[] = {0, 1e-3, 5e-3, 0.01, 0.12, 0.12, 0.06, 0.05, 0.06, 0.06};
    enum { N = 4096 };
    float *x = xmalloc(N * sizeof *x), *y = xmalloc(N * sizeof *y);
    uint8_t *q = xmalloc(N * 4);
    for (int i = 0; i < N; i++)
        x[i] = tu_rng_gauss(&rng) * (i % 512 < 40 ? 0.01f : 1.0f);
    for (size_t t = 0; t < NTYPES; t++) {
        quant_quantize_row(all_types[t], x, q, N);
        quant_dequantize_row(all_types[t], q, y, N);
        double err = 0, ref = 0;
        for (int i = 0; i < N; i++) {
            err += (double)(y[i] - x[i]) * (y[i] - x[i]);
            ref += (double)x[i] * x[i];
        }
        double rel = sqrt(err / ref);
        if (rel > max_rel[t])
            fail_msg("%s: relative RMS error %g > %g", quant_type_name(all_types[t]), rel,
                     max_rel[t]);
    }
    /* non-finite and huge inputs: defined quants, no crash */
    for (int i = 0; i < N; i++)
        x[i] = i % 4 == 0 ? NAN : i % 4 == 1 ? INFINITY : i % 4 == 2 ? -1e38f : 1.0f;
    for (size_t t = 0; t < NTYPES; t++) {
        quant_quantize_row(all_types[t], x, q, N);
        quant_dequantize_row(all_types[t], q, y, N);
        void *act = aligned_alloc(32, quant_act_row_size(all_types[t], N));
        quant_quantize_act(all_types[t], x, act, N);
        (void)quant_vec_dot(all_types[t], q, act, N);
        free(act);
    }
    /* zero rows quantise to zeros */
    memset(x, 0, N * sizeof *x);
    for (size_t t = 0; t < NTYPES; t++) {
        quant_quantize_row(all_types[t], x, q, N);
        quant_dequantize_row(all_types[t], q, y, N);
        for (int i = 0; i < N; i++)
            assert_true(y[i] == 0.0f);
    }
    free(x);
    free(y);
    free(q);
}

/* ---- dot kernels ---- */

/* Reference: double-precision dot of the dequantised weights with the float
 * activations; the tolerance covers the int8 rounding of the activations. */
static double dot_ref(const float *w, const float *x, int64_t n, double *mag)
{
    double s = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        s += (double)w[i] * x[i];
        m += fabs((double)w[i] * x[i]);
    }
    *mag = m;
    return s;
}

static void check_dots(quant_impl impl)
{
    quant_set_impl(impl);
    enum { N = 1024, ROWS = 7, M = 6 };
    float *w = xmalloc(ROWS * N * sizeof *w), *wd = xmalloc(ROWS * N * sizeof *wd);
    float *x = xmalloc(M * N * sizeof *x);
    for (int i = 0; i < ROWS * N; i++)
        w[i] = tu_rng_gauss(&rng);
    for (int i = 0; i < M * N; i++)
        x[i] = tu_rng_gauss(&rng) * (i % 3 ? 1.0f : 0.1f);
    for (size_t t = 0; t < NTYPES; t++) {
        ggml_type ty = all_types[t];
        size_t rs = quant_row_size(ty, N), as = quant_act_row_size(ty, N);
        assert_int_equal(as % 32, 0);
        uint8_t *wq = xmalloc(ROWS * rs);
        uint8_t *aq = aligned_alloc(32, M * as);
        for (int r = 0; r < ROWS; r++) {
            quant_quantize_row(ty, w + r * N, wq + r * rs, N);
            quant_dequantize_row(ty, wq + r * rs, wd + r * N, N);
        }
        for (int j = 0; j < M; j++)
            quant_quantize_act(ty, x + j * N, aq + j * as, N);
        /* float activations are exact; int8 ones carry ~0.4% per element */
        double tol = ty == GGML_TYPE_F32 || ty == GGML_TYPE_F16 || ty == GGML_TYPE_BF16 ? 1e-5 : 1e-2;
        float out[M * 9];
        memset(out, 0, sizeof out);
        quant_matmul(ty, wq, ROWS, aq, M, N, out, 9);
        for (int j = 0; j < M; j++)
            for (int r = 0; r < ROWS; r++) {
                float d = quant_vec_dot(ty, wq + r * rs, aq + j * as, N);
                double mag;
                double want = dot_ref(wd + r * N, x + j * N, N, &mag);
                if (fabs(d - want) > tol * mag)
                    fail_msg("%s (%s) row %d act %d: %g vs %g (|.| %g)", quant_type_name(ty),
                             quant_impl_name(), r, j, (double)d, want, mag);
                /* matmul is bit-identical to vec_dot whatever the tile */
                if (memcmp(&out[j * 9 + r], &d, 4) != 0)
                    fail_msg("%s (%s): matmul %a != vec_dot %a", quant_type_name(ty),
                             quant_impl_name(), (double)out[j * 9 + r], (double)d);
            }
        for (int j = 0; j < M; j++)
            for (int r = ROWS; r < 9; r++)
                assert_true(out[j * 9 + r] == 0.0f); /* ldo gap untouched */
        free(wq);
        free(aq);
    }
    free(w);
    free(wd);
    free(x);
    quant_set_impl(QUANT_IMPL_AUTO);
}

static void test_dots_portable(void **state)
{
    (void)state;
    check_dots(QUANT_IMPL_PORTABLE);
    quant_set_impl(QUANT_IMPL_PORTABLE);
    assert_string_equal(quant_impl_name(), "portable");
    quant_set_impl(QUANT_IMPL_AUTO);
}

static void test_dots_avx2(void **state)
{
    (void)state;
    if (!quant_cpu_has_avx2()) {
        skip();
        return;
    }
    check_dots(QUANT_IMPL_AVX2);
    quant_set_impl(QUANT_IMPL_AVX2);
    assert_string_equal(quant_impl_name(), "avx2");
    quant_set_impl(QUANT_IMPL_AUTO);
}

static void test_dots_vnni(void **state)
{
    (void)state;
    if (!quant_cpu_has_vnni()) {
        skip();
        return;
    }
    check_dots(QUANT_IMPL_VNNI);
    quant_set_impl(QUANT_IMPL_VNNI);
    assert_string_equal(quant_impl_name(), "avx512vnni");
    quant_set_impl(QUANT_IMPL_AUTO);
    assert_string_equal(quant_impl_name(), "avx512vnni");
}

/* AVX2 and portable kernels agree to float rounding on random weight
 * blocks (raw random bytes: every bit pattern of the quants) and odd
 * activations, including the int8 extremes. */
static void test_avx2_vs_portable(void **state)
{
    (void)state;
    if (!quant_cpu_has_avx2()) {
        skip();
        return;
    }
    enum { N = 2048 };
    float *x = xmalloc(N * sizeof *x);
    for (size_t t = 0; t < NTYPES; t++) {
        ggml_type ty = all_types[t];
        size_t rs = quant_row_size(ty, N), bs = quant_block_size(ty), ts = quant_type_size(ty);
        uint8_t *wq = xmalloc(rs);
        uint8_t *aq = aligned_alloc(32, quant_act_row_size(ty, N));
        float *wd = xmalloc(N * sizeof *wd);
        for (int iter = 0; iter < 30; iter++) {
            if (bs > 1) {
                for (size_t b = 0; b < N / bs; b++)
                    random_block(ty, wq + b * ts);
            } else {
                for (int i = 0; i < N; i++)
                    wd[i] = tu_rng_gauss(&rng);
                quant_quantize_row(ty, wd, wq, N);
            }
            for (int i = 0; i < N; i++)
                x[i] = iter % 3 == 0 ? (i % 2 ? 5.0f : -5.0f) : tu_rng_gauss(&rng);
            quant_quantize_act(ty, x, aq, N);
            quant_set_impl(QUANT_IMPL_PORTABLE);
            float p = quant_vec_dot(ty, wq, aq, N);
            quant_set_impl(QUANT_IMPL_AVX2);
            float a = quant_vec_dot(ty, wq, aq, N);
            if (quant_cpu_has_vnni()) {
                /* same integer sums, same float order: bit-identical */
                quant_set_impl(QUANT_IMPL_VNNI);
                float v = quant_vec_dot(ty, wq, aq, N);
                if (memcmp(&v, &a, 4) != 0)
                    fail_msg("%s: avx2 %a vnni %a", quant_type_name(ty), (double)a, (double)v);
            }
            quant_dequantize_row(ty, wq, wd, N);
            double mag = 0;
            for (int i = 0; i < N; i++)
                mag += fabs((double)wd[i] * x[i]);
            if (fabs((double)p - a) > 1e-5 * mag + 1e-6)
                fail_msg("%s: portable %g avx2 %g (|.| %g)", quant_type_name(ty), (double)p,
                         (double)a, mag);
        }
        free(wq);
        free(aq);
        free(wd);
    }
    free(x);
    quant_set_impl(QUANT_IMPL_AUTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_table),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_dequant_reference),
        cmocka_unit_test(test_quantize_error),
        cmocka_unit_test(test_dots_portable),
        cmocka_unit_test(test_dots_avx2),
        cmocka_unit_test(test_dots_vnni),
        cmocka_unit_test(test_avx2_vs_portable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
