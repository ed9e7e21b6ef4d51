/* Tests for q8pack: the packed Q8_0, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K products against a
 * double-precision dot of the dequantised weights with the int8
 * activations (the same quantised values), quant.c's row-by-row int8 dot
 * (Q8_0: the same integers, another float order) and a float dot; the AVX2 and AVX512-VNNI kernels and the
 * SIMD activation quantiser bit for bit against the portable C; products
 * split over output-row ranges (as threads split them) bit for bit
 * against one call; odd row counts (every micro-tile remainder, more than
 * one activation tile); matrices that cannot be packed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "embed/kernels/q8pack.h"
#include "embed/kernels/quant.h"
#include "util/mem.h"

#include "testutil.h"

static tu_rng rng = {0x2545F4914F6CDD1Dull};


/* Random Q8_0 rows: every byte pattern of the quants (-128 included) and
 * scales of a few magnitudes, one block in 17 with scale 0. */
static uint8_t *random_q8(int64_t rows, int64_t n)
{
    size_t rs = quant_row_size(GGML_TYPE_Q8_0, n);
    uint8_t *w = xmalloc(rs * (size_t)rows);
    for (int64_t i = 0; i < rows * (n / 32); i++) {
        uint8_t *b = w + 34 * i;
        float d = i % 17 == 5 ? 0.0f : (float)(tu_rng_u32(&rng) % 1000 + 1) * (i % 3 ? 1e-4f : 1e-2f);
        uint16_t h = quant_f32_to_f16(d);
        memcpy(b, &h, 2);
        for (int k = 0; k < 32; k++)
            b[2 + k] = (uint8_t)tu_rng_u32(&rng);
    }
    return w;
}

static void put_f16(uint8_t *p, float f)
{
    uint16_t h = quant_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* Random rows of `type`: Q8_0 as above; the others with every byte of
 * the quants (the 5th bits of Q5_0/Q5_1 too) and the packed 6-bit (Q4_K,
 * Q5_K) or int8 (Q6_K) scales random, and f16 (super-)block scales of a
 * few magnitudes (one in 7 zero); Q5_1's m of either sign. */
static uint8_t *random_w(ggml_type type, int64_t rows, int64_t n)
{
    if (type == GGML_TYPE_Q8_0)
        return random_q8(rows, n);
    size_t ts = quant_type_size(type), bs = quant_block_size(type);
    size_t nb = (size_t)rows * (size_t)(n / (int64_t)bs);
    uint8_t *w = xmalloc(ts * nb);
    for (size_t i = 0; i < ts * nb; i++)
        w[i] = (uint8_t)tu_rng_u32(&rng);
    for (size_t i = 0; i < nb; i++) {
        uint8_t *b = w + ts * i;
        float d = i % 7 == 3 ? 0.0f : (float)(tu_rng_u32(&rng) % 1000 + 1) * (i % 2 ? 1e-5f : 1e-3f);
        if (type == GGML_TYPE_Q6_K) {
            put_f16(b + 208, d);
        } else if (type == GGML_TYPE_Q5_0) {
            put_f16(b, d);
        } else if (type == GGML_TYPE_Q5_1) {
            put_f16(b, d);
            put_f16(b + 2, ((float)(tu_rng_u32(&rng) % 2001) - 1000.0f) * 1e-4f);
        } else {
            put_f16(b, d);
            put_f16(b + 2, (float)(tu_rng_u32(&rng) % 1000) * 1e-5f);
        }
    }
    return w;
}

static float *random_act(int64_t T, int64_t n)
{
    float *x = xmalloc((size_t)(T * n) * sizeof *x);
    for (int64_t i = 0; i < T * n; i++) {
        int64_t t = i / n, blk = (i % n) / 32;
        if (t % 5 == 3 && blk == 1)
            x[i] = 0.0f; /* an all-zero block: scale 0 */
        else if (t % 4 == 1)
            x[i] = i % 2 ? 7.5f : -7.5f; /* the int8 extremes */
        else
            x[i] = tu_rng_gauss(&rng) * (i % 7 ? 1.0f : 4.0f);
    }
    return x;
}

static void run(quant_impl impl, const q8pack *p, const float *x, int64_t T, int64_t n,
                int64_t n_out, int64_t split, float *out, int64_t ldo, uint8_t *act)
{
    quant_set_impl(impl);
    /* in two ranges, as pool tasks do */
    int64_t half = T > 8 ? 8 : T;
    q8pack_quantize_act(x, n, 0, half, n, act);
    if (T > half)
        q8pack_quantize_act(x + half * n, n, half, T - half, n, act);
    for (int64_t o = 0; o < n_out; o += split)
        q8pack_matmul(p, o, split < n_out - o ? split : n_out - o, act, T, NULL, out, ldo);
    quant_set_impl(QUANT_IMPL_AUTO);
}

static void check_shape(ggml_type type, int64_t n, int64_t n_out, int64_t T)
{
    uint8_t *w = random_w(type, n_out, n);
    float *x = random_act(T, n);
    q8pack *p = q8pack_new(type, w, n, n_out);
    assert_non_null(p);
    int64_t ldo = n_out + 3;
    size_t as = q8pack_act_size(n, T);
    assert_int_equal(as % 64, 0);
    size_t osz = (size_t)(T * ldo) * sizeof(float);
    float *ref = xmalloc(osz), *got = xmalloc(osz);
    uint8_t *act = aligned_alloc(64, as), *act2 = aligned_alloc(64, as);
    memset(ref, 0x7f, osz);
    run(QUANT_IMPL_PORTABLE, p, x, T, n, n_out, n_out, ref, ldo, act);

    /* against the dequantised weights times the int8 activations of
     * quant.c's Q8_0 form (the same values), quant.c's row dot (Q8_0: the
     * same integers) and a float dot */
    size_t rs = quant_row_size(type, n), qs = quant_act_row_size(GGML_TYPE_Q8_0, n);
    uint8_t *qa = aligned_alloc(32, qs);
    float *wd = xmalloc((size_t)n * sizeof *wd);
    quant_set_impl(QUANT_IMPL_PORTABLE);
    for (int64_t t = 0; t < T; t++) {
        quant_quantize_act(GGML_TYPE_Q8_0, x + t * n, qa, n);
        const float *dx = (const float *)(const void *)qa;
        /* quant.c's Q8_0 form: f32 d[nb], f32 s[nb], then the quants 32-aligned */
        const int8_t *qx = (const int8_t *)(qa + (8 * (size_t)(n / 32) + 31) / 32 * 32);
        for (int64_t o = 0; o < n_out; o++) {
            quant_dequantize_row(type, w + o * rs, wd, n);
            double s = 0, sq = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                s += (double)wd[i] * x[t * n + i];
                sq += (double)wd[i] * dx[i / 32] * qx[i];
                mag += fabs((double)wd[i] * x[t * n + i]);
            }
            float g = ref[t * ldo + o];
            if (fabs((double)g - sq) > 1e-5 * mag + 1e-30)
                fail_msg("%s row %lld act %lld: packed %g, dequantised x int8 %g (|.| %g)",
                         quant_type_name(type), (long long)o, (long long)t, (double)g, sq, mag);
            if (type == GGML_TYPE_Q8_0 || type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1) {
                /* the same activation form: quant.c's row dot of the same integers */
                float d = quant_vec_dot(type, w + o * rs, qa, n);
                if (fabs((double)g - d) > 1e-5 * mag + 1e-30)
                    fail_msg("%s row %lld act %lld: packed %g, quant_vec_dot %g (|.| %g)",
                             quant_type_name(type), (long long)o, (long long)t, (double)g,
                             (double)d, mag);
            }
            if (fabs((double)g - s) > 3e-2 * mag + 1e-30) /* int8 activations */
                fail_msg("%s row %lld act %lld: packed %g, float dot %g (|.| %g)",
                         quant_type_name(type), (long long)o, (long long)t, (double)g, s, mag);
        }
        for (int64_t o = n_out; o < ldo; o++) /* the ldo gap is not written */
            assert_true(memcmp(&ref[t * ldo + o], "\x7f\x7f\x7f\x7f", 4) == 0);
    }
    quant_set_impl(QUANT_IMPL_AUTO);

    /* SIMD paths and split products: bit-identical */
    quant_impl impls[2] = {QUANT_IMPL_AVX2, QUANT_IMPL_VNNI};
    bool have[2] = {quant_cpu_has_avx2(), quant_cpu_has_vnni()};
    for (int i = 0; i < 2; i++) {
        if (!have[i])
            continue;
        for (int64_t split = Q8PACK_NR; split <= n_out; split *= 2) {
            memset(got, 0x7f, osz);
            run(impls[i], p, x, T, n, n_out, split, got, ldo, act2);
            if (memcmp(act, act2, as) != 0)
                fail_msg("activation quantisation differs: portable vs impl %d", (int)impls[i]);
            if (memcmp(ref, got, osz) != 0)
                fail_msg("impl %d split %lld: not bit-identical to portable", (int)impls[i],
                         (long long)split);
        }
    }
    q8pack_free(p);
    free(w);
    free(x);
    free(ref);
    free(got);
    free(act);
    free(act2);
    free(qa);
    free(wd);
}

static void test_small_shapes(void **state)
{
    (void)state;
    for (int64_t T = 1; T <= 19; T++)
        check_shape(GGML_TYPE_Q8_0, 96, 48, T);
}

static void test_tiles(void **state)
{
    (void)state;
    check_shape(GGML_TYPE_Q8_0, 1024, 64, 70); /* two activation tiles, a remainder of 6 */
    check_shape(GGML_TYPE_Q8_0, 384, 32, 129);
}

/* Q5_0 and Q5_1 (32-element blocks, llama-quantize's fallback for rows
 * that are not a multiple of 256): every micro-tile remainder (T 1..19),
 * MiniLM's 384-wide rows, more than one activation tile. */
static void test_q5(void **state)
{
    (void)state;
    ggml_type types[2] = {GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};
    for (int i = 0; i < 2; i++) {
        for (int64_t T = 1; T <= 19; T++)
            check_shape(types[i], 96, 48, T);
        check_shape(types[i], 384, 32, 70);
        check_shape(types[i], 1536, 16, 9);
    }
}

/* K-quants: every micro-tile remainder (T 1..13), one and several
 * super-blocks per row, more than one activation tile. */
static void test_kquants(void **state)
{
    (void)state;
    ggml_type types[3] = {GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    for (int i = 0; i < 3; i++) {
        for (int64_t T = 1; T <= 13; T++)
            check_shape(types[i], 256, 32, T);
        check_shape(types[i], 768, 48, 70);
    }
    /* Q4_K on AVX2 unpacks a group for tiles of 16 rows or more: the
     * smallest such tile, one with a remainder of 3 rows, and a second
     * tile that is unpacked after a first one */
    int64_t q4_rows[3] = {16, 19, 83};
    for (int i = 0; i < 3; i++)
        check_shape(GGML_TYPE_Q4_K, 512, 32, q4_rows[i]);
}

static void test_unpackable(void **state)
{
    (void)state;
    uint8_t *w = random_q8(24, 64);
    assert_null(q8pack_new(GGML_TYPE_Q8_0, w, 64, 24)); /* 24 rows: not groups of 16 */
    assert_null(q8pack_new(GGML_TYPE_Q8_0, w, 48, 16)); /* 48 elements: not blocks of 32 */
    assert_null(q8pack_new(GGML_TYPE_Q4_K, w, 64, 16)); /* not super-blocks of 256 */
    assert_null(q8pack_new(GGML_TYPE_Q5_K, w, 64, 16));
    assert_null(q8pack_new(GGML_TYPE_Q5_0, w, 48, 16)); /* 48 elements: not blocks of 32 */
    assert_null(q8pack_new(GGML_TYPE_Q5_1, w, 64, 8));  /* 8 rows */
    assert_null(q8pack_new(GGML_TYPE_Q4_0, w, 64, 16)); /* a type it does not pack */
    assert_false(q8pack_type_ok(GGML_TYPE_Q4_0));
    assert_true(q8pack_type_ok(GGML_TYPE_Q5_0) && q8pack_type_ok(GGML_TYPE_Q5_1) &&
                q8pack_type_ok(GGML_TYPE_Q5_K));
    q8pack_free(NULL);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_shapes),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_q5),
        cmocka_unit_test(test_kquants),
        cmocka_unit_test(test_unpackable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
