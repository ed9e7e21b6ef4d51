/* q8pack — see q8pack.h. */
#include "embed/kernels/q8pack.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "embed/kernels/quant.h"
#include "util/mem.h"

#if defined(__x86_64__) || defined(__i386__)
#define Q8P_X86 1
#include <immintrin.h>
#endif

#define GB 576           /* bytes per group and block: 512 quants + 16 f32 scales */
#define TILE_T 64        /* activation rows per cache tile (a multiple of AR) */

struct q8pack {
    int64_t n_in, n_out, nb;
    uint8_t *data; /* n_out / 16 groups of nb * GB bytes */
};

q8pack *q8pack_alloc(int64_t n_in, int64_t n_out)
{
    if (n_in <= 0 || n_out <= 0 || n_in % 32 || n_out % Q8PACK_NR)
        return NULL;
    q8pack *p = xcalloc(1, sizeof *p);
    p->n_in = n_in;
    p->n_out = n_out;
    p->nb = n_in / 32;
    p->data = xmalloc((size_t)p->nb * GB * (size_t)(n_out / Q8PACK_NR));
    return p;
}

void q8pack_fill(q8pack *p, const void *q8_0, int64_t g0, int64_t g1)
{
    size_t gsz = (size_t)p->nb * GB, row = (size_t)p->nb * 34;
    const uint8_t *src = q8_0;
    /* word-wise: element group s (4 bytes) of a row moves as one uint32,
     * the xor turning each signed quant into quant + 128 */
    for (int64_t g = g0; g < g1; g++) {
        uint8_t *dg = p->data + (size_t)g * gsz;
        for (int r = 0; r < Q8PACK_NR; r++) {
            const uint8_t *sr = src + (size_t)(g * Q8PACK_NR + r) * row;
            for (int64_t b = 0; b < p->nb; b++) {
                const uint8_t *sb = sr + 34 * b;
                uint8_t *db = dg + (size_t)b * GB;
                uint16_t h;
                memcpy(&h, sb, 2);
                float d = quant_f16_to_f32(h);
                memcpy(db + 512 + 4 * r, &d, 4);
                for (int s4 = 0; s4 < 8; s4++) {
                    uint32_t w;
                    memcpy(&w, sb + 2 + 4 * s4, 4);
                    w ^= 0x80808080u;
                    memcpy(db + 64 * s4 + 4 * r, &w, 4);
                }
            }
        }
    }
}

q8pack *q8pack_new(const void *q8_0, int64_t n_in, int64_t n_out)
{
    q8pack *p = q8pack_alloc(n_in, n_out);
    if (p)
        q8pack_fill(p, q8_0, 0, n_out / Q8PACK_NR);
    return p;
}

void q8pack_free(q8pack *p)
{
    if (!p)
        return;
    free(p->data);
    free(p);
}

/* ---- activation tiles ----
 *
 * Activations are stored in tiles of 8 rows, so that a kernel reaches
 * everything of a block through one pointer and constant offsets (8 rows
 * x 3 pointers would not fit the general registers). Per tile, per
 * block: the 8 rows' f32 scales, their int32 -128 * sum(q), then the
 * quants, byte 64 + 32 * (k / 4) + 4 * row + k % 4 holding element k of
 * the tile's row `row` (320 bytes). Slots past the last row are zero. */

#define AB 320 /* bytes per tile and block */
#define AR 8   /* rows per tile */

size_t q8pack_act_size(int64_t n_in, int64_t rows)
{
    return (size_t)((rows + AR - 1) / AR) * (size_t)(n_in / 32) * AB;
}

/* Must match the SIMD form exactly: fmaxf/fminf give the non-NaN operand
 * like maxps/minps with the constant second, and nearbyintf rounds to
 * nearest even like cvtps2dq under the default rounding mode. */
static void quant_block_c(const float *x, int8_t *q, float *d_out, int32_t *corr)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(fabsf(x[j]), amax);
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; j++) {
        float v = fminf(fmaxf(x[j] * id, -127.0f), 127.0f);
        int iv = (int)nearbyintf(v);
        q[j] = (int8_t)iv;
        sum += iv;
    }
    *d_out = d;
    *corr = -128 * sum;
}

#ifdef Q8P_X86
__attribute__((target("avx2,fma"))) static void quant_block_avx2(const float *x, int8_t *q,
                                                                   float *d_out, int32_t *corr)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
        v[i] = _mm256_loadu_ps(x + 8 * i);
        m = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), m);
    }
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    float amax = _mm_cvtss_f32(h);
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 vid = _mm256_set1_ps(id), lo = _mm256_set1_ps(-127.0f),
                 hi = _mm256_set1_ps(127.0f);
    __m256i iv[4];
    __m256i s = _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], vid), lo), hi);
        iv[i] = _mm256_cvtps_epi32(t);
        s = _mm256_add_epi32(s, iv[i]);
    }
    /* int32 -> int8 with the lanes back in order */
    __m256i p01 = _mm256_packs_epi32(iv[0], iv[1]), p23 = _mm256_packs_epi32(iv[2], iv[3]);
    __m256i b = _mm256_packs_epi16(p01, p23);
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, b);
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    *d_out = d;
    *corr = -128 * _mm_cvtsi128_si32(t);
}
#endif

void q8pack_quantize_act(const float *x, int64_t ldx, int64_t t0, int64_t rows, int64_t n_in,
                         void *dst)
{
    int64_t nb = n_in / 32;
#ifdef Q8P_X86
    bool simd = quant_impl_active() != QUANT_IMPL_PORTABLE;
#endif
    for (int64_t tile = t0 / AR; tile * AR < t0 + rows; tile++) {
        uint8_t *tp = (uint8_t *)dst + (size_t)tile * (size_t)nb * AB;
        for (int slot = 0; slot < AR; slot++) {
            int64_t t = tile * AR + slot;
            bool have = t >= t0 && t < t0 + rows;
            const float *xr = x + (t - t0) * ldx;
            for (int64_t b = 0; b < nb; b++) {
                uint8_t *ab = tp + (size_t)b * AB;
                float d = 0;
                int32_t corr = 0;
                int8_t q[32] = {0};
                if (have) {
#ifdef Q8P_X86
                    if (simd)
                        quant_block_avx2(xr + 32 * b, q, &d, &corr);
                    else
#endif
                        quant_block_c(xr + 32 * b, q, &d, &corr);
                }
                memcpy(ab + 4 * slot, &d, 4);
                memcpy(ab + 32 + 4 * slot, &corr, 4);
                for (int s4 = 0; s4 < 8; s4++)
                    memcpy(ab + 64 + 32 * s4 + 4 * slot, q + 4 * s4, 4);
            }
        }
    }
}

/* ---- products ---- */

/* The reference: the same integers and float operations as the SIMD
 * kernels, one (row, activation) pair at a time. fmaf is exact-rounded
 * like vfmadd. */
static void group_c(const uint8_t *g, int64_t nb, const uint8_t *a, int r, float *out,
                    int64_t ldo)
{
    for (int k = 0; k < r; k++) {
        for (int o = 0; o < Q8PACK_NR; o++) {
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *gb = g + (size_t)b * GB, *ab = a + (size_t)b * AB;
                int32_t is;
                float dw, dx;
                memcpy(&is, ab + 32 + 4 * k, 4);
                for (int e = 0; e < 32; e++)
                    is += (int32_t)gb[64 * (e / 4) + 4 * o + e % 4] *
                          (int8_t)ab[64 + 32 * (e / 4) + 4 * k + e % 4];
                memcpy(&dw, gb + 512 + 4 * o, 4);
                memcpy(&dx, ab + 4 * k, 4);
                acc = fmaf((float)is, dw * dx, acc);
            }
            out[k * ldo + o] = acc;
        }
    }
}

#ifdef Q8P_X86
#define KINL __attribute__((always_inline)) inline

static inline int32_t ld32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline float ldf(const uint8_t *p)
{
    float v;
    memcpy(&v, p, 4);
    return v;
}

/* 16 weight rows x r activation rows (r <= 8, a constant after inlining). */
__attribute__((target("avx512f,avx512vnni,fma"))) static KINL void
group_vnni_r(const uint8_t *g, int64_t nb, const uint8_t *a, int r, float *out, int64_t ldo)
{
    __m512 acc[8];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < r; k++)
        acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * GB, *ab = a + (size_t)b * AB;
        __m512i is[8];
        _Pragma("GCC unroll 8")
        for (int k = 0; k < r; k++)
            is[k] = _mm512_set1_epi32(ld32(ab + 32 + 4 * k));
        _Pragma("GCC unroll 8")
        for (int s = 0; s < 8; s++) {
            __m512i w = _mm512_loadu_si512((const void *)(gb + 64 * s));
            _Pragma("GCC unroll 8")
            for (int k = 0; k < r; k++)
                is[k] = _mm512_dpbusd_epi32(is[k], w,
                                            _mm512_set1_epi32(ld32(ab + 64 + 32 * s + 4 * k)));
        }
        __m512 dw = _mm512_loadu_ps((const float *)(gb + 512));
        _Pragma("GCC unroll 8")
        for (int k = 0; k < r; k++)
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[k]),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(ldf(ab + 4 * k))), acc[k]);
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < r; k++)
        _mm512_storeu_ps(out + k * ldo, acc[k]);
}

__attribute__((target("avx512f,avx512vnni,fma"))) static void
group_vnni(const uint8_t *g, int64_t nb, const uint8_t *a, int r, float *out, int64_t ldo)
{
    switch (r) {
    case 8: group_vnni_r(g, nb, a, 8, out, ldo); break;
    case 7: group_vnni_r(g, nb, a, 7, out, ldo); break;
    case 6: group_vnni_r(g, nb, a, 6, out, ldo); break;
    case 5: group_vnni_r(g, nb, a, 5, out, ldo); break;
    case 4: group_vnni_r(g, nb, a, 4, out, ldo); break;
    case 3: group_vnni_r(g, nb, a, 3, out, ldo); break;
    case 2: group_vnni_r(g, nb, a, 2, out, ldo); break;
    default: group_vnni_r(g, nb, a, 1, out, ldo); break;
    }
}

/* 8 weight rows (half h of the group) x r activation rows (r <= 4). AVX2
 * has no unsigned-by-signed 4-way dot without int16 saturation for
 * unsigned bytes up to 255, so it multiplies |w| by x with w's sign
 * (pair sums within 2 * 128 * 127) and needs no offset correction: the
 * same exact integers. */
__attribute__((target("avx2,fma"))) static KINL void
half_avx2_r(const uint8_t *g, int64_t nb, const uint8_t *a, int r, int h, float *out,
            int64_t ldo)
{
    __m256 acc[4];
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    _Pragma("GCC unroll 4")
    for (int k = 0; k < r; k++)
        acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * GB, *ab = a + (size_t)b * AB;
        __m256i is[4];
        _Pragma("GCC unroll 4")
        for (int k = 0; k < r; k++)
            is[k] = _mm256_setzero_si256();
        _Pragma("GCC unroll 8")
        for (int s = 0; s < 8; s++) {
            __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256((const __m256i *)(gb + 64 * s + 32 * h)), flip);
            __m256i wa = _mm256_abs_epi8(w);
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++) {
                __m256i x = _mm256_set1_epi32(ld32(ab + 64 + 32 * s + 4 * k));
                __m256i p = _mm256_maddubs_epi16(wa, _mm256_sign_epi8(x, w));
                is[k] = _mm256_add_epi32(is[k], _mm256_madd_epi16(p, ones));
            }
        }
        __m256 dw = _mm256_loadu_ps((const float *)(gb + 512 + 32 * h));
        _Pragma("GCC unroll 4")
        for (int k = 0; k < r; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[k]),
                                     _mm256_mul_ps(dw, _mm256_set1_ps(ldf(ab + 4 * k))), acc[k]);
    }
    _Pragma("GCC unroll 4")
    for (int k = 0; k < r; k++)
        _mm256_storeu_ps(out + k * ldo + 8 * h, acc[k]);
}

__attribute__((target("avx2,fma"))) static void
group_avx2(const uint8_t *g, int64_t nb, const uint8_t *a, int r, float *out, int64_t ldo)
{
    /* rows k0.. of the tile: their bytes sit 4 * k0 further in each block */
    for (int k0 = 0; k0 < r; k0 += 4) {
        int rr = r - k0 < 4 ? r - k0 : 4;
        for (int h = 0; h < 2; h++) {
            switch (rr) {
            case 4: half_avx2_r(g, nb, a + 4 * k0, 4, h, out + k0 * ldo, ldo); break;
            case 3: half_avx2_r(g, nb, a + 4 * k0, 3, h, out + k0 * ldo, ldo); break;
            case 2: half_avx2_r(g, nb, a + 4 * k0, 2, h, out + k0 * ldo, ldo); break;
            default: half_avx2_r(g, nb, a + 4 * k0, 1, h, out + k0 * ldo, ldo); break;
            }
        }
    }
}
#endif /* Q8P_X86 */

typedef void (*group_fn)(const uint8_t *g, int64_t nb, const uint8_t *a, int r, float *out,
                         int64_t ldo);

void q8pack_matmul(const q8pack *p, int64_t o0, int64_t no, const void *act, int64_t T,
                   float *out, int64_t ldo)
{
    group_fn fn = group_c;
#ifdef Q8P_X86
    switch (quant_impl_active()) {
    case QUANT_IMPL_VNNI: fn = group_vnni; break;
    case QUANT_IMPL_AVX2: fn = group_avx2; break;
    default: break;
    }
#endif
    int64_t nb = p->nb;
    size_t gsz = (size_t)nb * GB, tsz = (size_t)nb * AB;
    const uint8_t *ap = act;
    /* A tile of activation rows stays in L1/L2 while the task's weight
     * groups (at most 4 x 60 KB for 3072-wide rows) stream from L2. */
    for (int64_t t0 = 0; t0 < T; t0 += TILE_T) {
        int64_t t1 = t0 + TILE_T < T ? t0 + TILE_T : T;
        for (int64_t o = o0; o < o0 + no; o += Q8PACK_NR) {
            const uint8_t *g = p->data + (size_t)(o / Q8PACK_NR) * gsz;
            for (int64_t t = t0; t < t1; t += AR) {
                int r = t1 - t < AR ? (int)(t1 - t) : AR;
                fn(g, nb, ap + (size_t)(t / AR) * tsz, r, out + t * ldo + o, ldo);
            }
        }
    }
}
