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

#define TILE_T 64 /* activation rows per cache tile of 3,072-element rows (a multiple
                     of AR; narrower rows take more: q8pack_tile_rows) */

/* Kinds of packed block (the kernels' compile-time switch): signed bytes
 * stored +128 with one scale (Q8_0, Q5_0) or two (Q6_K), nibbles with a
 * scale and a min (Q4_K), unsigned bytes with a scale and a min (Q5_1,
 * Q5_K). */
enum { K_Q8, K_Q6K, K_Q4K, K_Q5, K_Q4U };
/* K_Q4U is never a pack's kind: it is a Q4_K group unpacked for the AVX2
 * kernel (q4k_unpack_avx2), its nibbles as bytes in K_Q5's layout. */

/* Bytes per group and 32-element block. */
static size_t kind_gb(int kind)
{
    return kind == K_Q8 ? 576 : kind == K_Q4K ? 384 : 640;
}

static int kind_of(int type)
{
    switch (type) {
    case GGML_TYPE_Q8_0: case GGML_TYPE_Q5_0: return K_Q8;
    case GGML_TYPE_Q6_K: return K_Q6K;
    case GGML_TYPE_Q4_K: return K_Q4K;
    case GGML_TYPE_Q5_1: case GGML_TYPE_Q5_K: return K_Q5;
    default: return -1;
    }
}

struct q8pack {
    int type, kind;
    int64_t n_in, n_out, nb; /* nb: 32-element blocks per row */
    size_t gsz;              /* bytes per group of 16 rows */
    uint8_t *data;           /* n_out / 16 groups of gsz bytes */
    bool mapped;             /* data from mem_huge_map, else xmalloc */
};

bool q8pack_type_ok(int type)
{
    return kind_of(type) >= 0;
}

q8pack *q8pack_alloc(int type, int64_t n_in, int64_t n_out)
{
    int kind = kind_of(type);
    int64_t bs = (int64_t)quant_block_size(type);
    if (kind < 0 || n_in <= 0 || n_out <= 0 || n_in % bs || n_out % Q8PACK_NR)
        return NULL;
    q8pack *p = xcalloc(1, sizeof *p);
    p->type = type;
    p->kind = kind;
    p->n_in = n_in;
    p->n_out = n_out;
    p->nb = n_in / 32;
    p->gsz = (size_t)p->nb * kind_gb(kind);
    size_t n = p->gsz * (size_t)(n_out / Q8PACK_NR);
    /* huge pages: filling 100 MB of 4 KB pages faulted a third of the
     * packing time here (26k faults); 2 MB pages take a few dozen */
    p->data = mem_huge_map(n);
    p->mapped = p->data != NULL;
    if (!p->mapped)
        p->data = xmalloc(n);
    return p;
}

size_t q8pack_size(const q8pack *p)
{
    return p ? p->gsz * (size_t)(p->n_out / Q8PACK_NR) : 0;
}

static void fill_q8(q8pack *p, const uint8_t *src, int64_t g)
{
    size_t row = (size_t)p->nb * 34;
    uint8_t *dg = p->data + (size_t)g * p->gsz;
    /* word-wise: element group s (4 bytes) of a row moves as one uint32,
     * the xor turning each signed quant into quant + 128 */
    for (int r = 0; r < Q8PACK_NR; r++) {
        const uint8_t *sr = src + (size_t)(g * Q8PACK_NR + r) * row;
        for (int64_t b = 0; b < p->nb; b++) {
            const uint8_t *sb = sr + 34 * b;
            uint8_t *db = dg + (size_t)b * 576;
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

/* Row r's 32-element block q (unsigned quants, element order) into its
 * place in group block db: bytes q + add (the kind's stored form: + 128
 * for a signed quant) or, for K_Q4K, nibble pairs; then its scales sc
 * (Q6_K: two, one per half) and min mn. Word-wise, 4 elements at once:
 * every byte stays below 256 (q + add < 256; a nibble shifted by 4), no
 * carries. */
static void put_block(int kind, uint8_t *db, int r, const uint8_t *q, uint32_t add,
                      const float *sc, const float *mn)
{
    if (kind == K_Q4K) {
        for (int v = 0; v < 4; v++) {
            uint32_t lo, hi;
            memcpy(&lo, q + 4 * v, 4);
            memcpy(&hi, q + 16 + 4 * v, 4);
            lo |= hi << 4;
            memcpy(db + 64 * v + 4 * r, &lo, 4);
        }
        memcpy(db + 256 + 4 * r, sc, 4);
        memcpy(db + 320 + 4 * r, mn, 4);
        return;
    }
    for (int s4 = 0; s4 < 8; s4++) {
        uint32_t w;
        memcpy(&w, q + 4 * s4, 4);
        w += add * 0x01010101u;
        memcpy(db + 64 * s4 + 4 * r, &w, 4);
    }
    memcpy(db + 512 + 4 * r, sc, 4);
    if (kind == K_Q6K)
        memcpy(db + 576 + 4 * r, sc + 1, 4);
    else if (kind == K_Q5)
        memcpy(db + 576 + 4 * r, mn, 4);
}

/* K-quants: each 256-element block through quant_kblock_int, its eight
 * 32-element blocks placed by put_block (Q6_K's q as it is, 0..63: the
 * kernels take its offset of 32 off through the activations' sums). */
static void fill_k(q8pack *p, const uint8_t *src, int64_t g)
{
    size_t row = quant_row_size((ggml_type)p->type, p->n_in), ts = quant_type_size(p->type);
    size_t gb = kind_gb(p->kind);
    uint32_t add = 0;
    uint8_t *dg = p->data + (size_t)g * p->gsz;
    /* super-block outermost: the 16 rows fill the same 8 blocks (5 KB)
     * while they are in L1 */
    for (int64_t sb = 0; sb < p->nb / 8; sb++) {
        for (int r = 0; r < Q8PACK_NR; r++) {
            const uint8_t *sr = src + (size_t)(g * Q8PACK_NR + r) * row;
            uint8_t q[256];
            float sc[16], mn[16];
            quant_kblock_int((ggml_type)p->type, sr + (size_t)sb * ts, q, sc, mn);
            for (int j = 0; j < 8; j++)
                put_block(p->kind, dg + (size_t)(8 * sb + j) * gb, r, q + 32 * j, add,
                          &sc[2 * j], &mn[2 * j]);
        }
    }
}

/* Q5_0 (as K_Q8: q - 16 stored + 128) and Q5_1 (K_Q5), block by block. */
static void fill_q5(q8pack *p, const uint8_t *src, int64_t g)
{
    size_t ts = quant_type_size(p->type), row = (size_t)p->nb * ts, gb = kind_gb(p->kind);
    uint32_t add = p->kind == K_Q8 ? 112 : 0;
    uint8_t *dg = p->data + (size_t)g * p->gsz;
    for (int r = 0; r < Q8PACK_NR; r++) {
        const uint8_t *sr = src + (size_t)(g * Q8PACK_NR + r) * row;
        for (int64_t b = 0; b < p->nb; b++) {
            uint8_t q[32];
            float sc[2] = {0, 0}, mn; /* put_block's signature: Q6_K has two */
            quant_q5block_int((ggml_type)p->type, sr + (size_t)b * ts, q, &sc[0], &mn);
            put_block(p->kind, dg + (size_t)b * gb, r, q, add, sc, &mn);
        }
    }
}

void q8pack_fill(q8pack *p, const void *w, int64_t g0, int64_t g1)
{
    for (int64_t g = g0; g < g1; g++) {
        if (p->type == GGML_TYPE_Q8_0)
            fill_q8(p, w, g);
        else if (p->type == GGML_TYPE_Q5_0 || p->type == GGML_TYPE_Q5_1)
            fill_q5(p, w, g);
        else
            fill_k(p, w, g);
    }
}

q8pack *q8pack_new(int type, const void *w, int64_t n_in, int64_t n_out)
{
    q8pack *p = q8pack_alloc(type, n_in, n_out);
    if (p)
        q8pack_fill(p, w, 0, n_out / Q8PACK_NR);
    return p;
}

void q8pack_free(q8pack *p)
{
    if (!p)
        return;
    if (p->mapped)
        mem_huge_unmap(p->data, q8pack_size(p));
    else
        free(p->data);
    free(p);
}

/* ---- activation tiles ----
 *
 * Activations are stored in tiles of 8 rows, so that a kernel reaches
 * everything of a block through one pointer and constant offsets (8 rows
 * x 3 pointers would not fit the general registers). Per tile, per
 * block: the 8 rows' f32 scales d (byte 0), their int32 -128 * sum(q) over
 * elements 0..15 (byte 32) and 16..31 (byte 64), their f32 -d * sum(q)
 * (byte 96), then the quants, byte 128 + 32 * (k / 4) + 4 * row + k % 4
 * holding element k of the tile's row `row` (384 bytes). Slots past the
 * last row are zero. */

#define AB 384 /* bytes per tile and block */
#define AQ 128 /* offset of the quants */
#define AR 8   /* rows per tile */

size_t q8pack_act_size(int64_t n_in, int64_t rows)
{
    return (size_t)((rows + AR - 1) / AR) * (size_t)(n_in / 32) * AB;
}

/* Must match the SIMD form exactly: fmaxf/fminf give the non-NaN operand
 * like maxps/minps with the constant second, and nearbyintf rounds to
 * nearest even like cvtps2dq under the default rounding mode. sums[0] and
 * sums[1]: sum(q) of the two halves. */
static void quant_block_c(const float *x, int8_t *q, float *d_out, int32_t *sums)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(fabsf(x[j]), amax);
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    sums[0] = sums[1] = 0;
    for (int j = 0; j < 32; j++) {
        float v = fminf(fmaxf(x[j] * id, -127.0f), 127.0f);
        int iv = (int)nearbyintf(v);
        q[j] = (int8_t)iv;
        sums[j / 16] += iv;
    }
    *d_out = d;
}

#ifdef Q8P_X86
__attribute__((target("avx2"))) static int32_t hsum8(__m256i s)
{
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
    return _mm_cvtsi128_si32(t);
}

__attribute__((target("avx2,fma"))) static void quant_block_avx2(const float *x, int8_t *q,
                                                                   float *d_out, int32_t *sums)
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
    for (int i = 0; i < 4; i++) {
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], vid), lo), hi);
        iv[i] = _mm256_cvtps_epi32(t);
    }
    /* int32 -> int8 with the lanes back in order */
    __m256i p01 = _mm256_packs_epi32(iv[0], iv[1]), p23 = _mm256_packs_epi32(iv[2], iv[3]);
    __m256i b = _mm256_packs_epi16(p01, p23);
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)q, b);
    sums[0] = hsum8(_mm256_add_epi32(iv[0], iv[1]));
    sums[1] = hsum8(_mm256_add_epi32(iv[2], iv[3]));
    *d_out = d;
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
                int32_t sums[2] = {0, 0};
                int8_t q[32] = {0};
                if (have) {
#ifdef Q8P_X86
                    if (simd)
                        quant_block_avx2(xr + 32 * b, q, &d, sums);
                    else
#endif
                        quant_block_c(xr + 32 * b, q, &d, sums);
                }
                int32_t clo = -128 * sums[0], chi = -128 * sums[1];
                float cs = -d * (float)(sums[0] + sums[1]);
                memcpy(ab + 4 * slot, &d, 4);
                memcpy(ab + 32 + 4 * slot, &clo, 4);
                memcpy(ab + 64 + 4 * slot, &chi, 4);
                memcpy(ab + 96 + 4 * slot, &cs, 4);
                for (int s4 = 0; s4 < 8; s4++)
                    memcpy(ab + AQ + 32 * s4 + 4 * slot, q + 4 * s4, 4);
            }
        }
    }
}

/* ---- products ---- */

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

/* Weight element e (0..31) of row o of a packed block, as the signed
 * integer the block's scale multiplies (Q4_K, Q5_1, Q5_K: before its
 * min). */
static int wq(int kind, const uint8_t *gb, int o, int e)
{
    if (kind == K_Q4K) {
        uint8_t v = gb[64 * (e % 16 / 4) + 4 * o + e % 4];
        return e < 16 ? v & 0xF : v >> 4;
    }
    return (int)gb[64 * (e / 4) + 4 * o + e % 4] - (kind == K_Q5 ? 0 : kind == K_Q6K ? 32 : 128);
}

/* The reference: the same integers and float operations as the SIMD
 * kernels, one (row, activation) pair at a time. fmaf is exact-rounded
 * like vfmadd. */
static void group_c(int kind, const uint8_t *g, int64_t nb, const uint8_t *a, int r,
                    const float *bias, float *out, int64_t ldo)
{
    size_t gbs = kind_gb(kind);
    for (int k = 0; k < r; k++) {
        for (int o = 0; o < Q8PACK_NR; o++) {
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *gb = g + (size_t)b * gbs, *ab = a + (size_t)b * AB;
                float dx = ldf(ab + 4 * k);
                int32_t is[2] = {0, 0};
                for (int e = 0; e < 32; e++)
                    is[e / 16] += wq(kind, gb, o, e) *
                                  (int8_t)ab[AQ + 32 * (e / 4) + 4 * k + e % 4];
                if (kind == K_Q6K) {
                    acc = fmaf((float)is[0], ldf(gb + 512 + 4 * o) * dx, acc);
                    acc = fmaf((float)is[1], ldf(gb + 576 + 4 * o) * dx, acc);
                } else if (kind == K_Q8) {
                    acc = fmaf((float)(is[0] + is[1]), ldf(gb + 512 + 4 * o) * dx, acc);
                } else {
                    size_t so = kind == K_Q4K ? 256 : 512, mo = kind == K_Q4K ? 320 : 576;
                    acc = fmaf((float)(is[0] + is[1]), ldf(gb + so + 4 * o) * dx, acc);
                    acc = fmaf(ldf(gb + mo + 4 * o), ldf(ab + 96 + 4 * k), acc);
                }
            }
            out[k * ldo + o] = bias ? acc + bias[o] : acc;
        }
    }
}

#ifdef Q8P_X86
#define KINL __attribute__((always_inline)) inline

/* 16 weight rows x r activation rows (r <= 8; kind and r constants after
 * inlining). The unsigned weights' +128 offset (Q8_0, Q5_0) is taken off
 * by starting the sums at the activations' -128 * sum(q), Q6_K's 32 by
 * starting them at a quarter of it; Q4_K's nibbles and Q5_1/Q5_K's bytes
 * carry none. */
__attribute__((target("avx512f,avx512vnni,fma"))) static KINL void
group_vnni_r(int kind, const uint8_t *g, int64_t nb, const uint8_t *a, int r,
             const float *bias, float *out, int64_t ldo)
{
    size_t gbs = kind_gb(kind);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512 acc[8];
    _Pragma("GCC unroll 8")
    for (int k = 0; k < r; k++)
        acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * gbs, *ab = a + (size_t)b * AB;
        __m512i is[8];
        if (kind == K_Q6K) {
            _Pragma("GCC unroll 2")
            for (int h = 0; h < 2; h++) {
                _Pragma("GCC unroll 8")
                for (int k = 0; k < r; k++)
                    is[k] = _mm512_set1_epi32(ld32(ab + 32 + 32 * h + 4 * k) / 4);
                _Pragma("GCC unroll 4")
                for (int s = 4 * h; s < 4 * h + 4; s++) {
                    __m512i w = _mm512_loadu_si512((const void *)(gb + 64 * s));
                    _Pragma("GCC unroll 8")
                    for (int k = 0; k < r; k++)
                        is[k] = _mm512_dpbusd_epi32(
                            is[k], w, _mm512_set1_epi32(ld32(ab + AQ + 32 * s + 4 * k)));
                }
                __m512 dw = _mm512_loadu_ps((const float *)(gb + 512 + 64 * h));
                _Pragma("GCC unroll 8")
                for (int k = 0; k < r; k++)
                    acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[k]),
                                             _mm512_mul_ps(dw, _mm512_set1_ps(ldf(ab + 4 * k))),
                                             acc[k]);
            }
            continue;
        }
        _Pragma("GCC unroll 8")
        for (int k = 0; k < r; k++)
            is[k] = kind == K_Q8 ? _mm512_set1_epi32(ld32(ab + 32 + 4 * k) + ld32(ab + 64 + 4 * k))
                                 : _mm512_setzero_si512();
        if (kind == K_Q8 || kind == K_Q5) {
            _Pragma("GCC unroll 8")
            for (int s = 0; s < 8; s++) {
                __m512i w = _mm512_loadu_si512((const void *)(gb + 64 * s));
                _Pragma("GCC unroll 8")
                for (int k = 0; k < r; k++)
                    is[k] = _mm512_dpbusd_epi32(is[k], w,
                                                _mm512_set1_epi32(ld32(ab + AQ + 32 * s + 4 * k)));
            }
        } else {
            _Pragma("GCC unroll 4")
            for (int v = 0; v < 4; v++) {
                __m512i x = _mm512_loadu_si512((const void *)(gb + 64 * v));
                __m512i wl = _mm512_and_si512(x, low4);
                __m512i wh = _mm512_and_si512(_mm512_srli_epi32(x, 4), low4);
                _Pragma("GCC unroll 8")
                for (int k = 0; k < r; k++) {
                    is[k] = _mm512_dpbusd_epi32(is[k], wl,
                                                _mm512_set1_epi32(ld32(ab + AQ + 32 * v + 4 * k)));
                    is[k] = _mm512_dpbusd_epi32(
                        is[k], wh, _mm512_set1_epi32(ld32(ab + AQ + 32 * (v + 4) + 4 * k)));
                }
            }
        }
        __m512 dw = _mm512_loadu_ps((const float *)(gb + (kind == K_Q4K ? 256 : 512)));
        _Pragma("GCC unroll 8")
        for (int k = 0; k < r; k++)
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[k]),
                                     _mm512_mul_ps(dw, _mm512_set1_ps(ldf(ab + 4 * k))), acc[k]);
        if (kind == K_Q4K || kind == K_Q5) {
            __m512 mw = _mm512_loadu_ps((const float *)(gb + (kind == K_Q4K ? 320 : 576)));
            _Pragma("GCC unroll 8")
            for (int k = 0; k < r; k++)
                acc[k] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ldf(ab + 96 + 4 * k)), acc[k]);
        }
    }
    _Pragma("GCC unroll 8")
    for (int k = 0; k < r; k++)
        _mm512_storeu_ps(out + k * ldo, bias ? _mm512_add_ps(acc[k], _mm512_loadu_ps(bias))
                                             : acc[k]);
}

#define VNNI_KIND(NAME, KIND)                                                                 \
    __attribute__((target("avx512f,avx512vnni,fma"))) static void NAME(                      \
        const uint8_t *g, int64_t nb, const uint8_t *a, int r, const float *bias, float *out, \
        int64_t ldo)                                                                          \
    {                                                                                         \
        switch (r) {                                                                          \
        case 8: group_vnni_r(KIND, g, nb, a, 8, bias, out, ldo); break;                         \
        case 7: group_vnni_r(KIND, g, nb, a, 7, bias, out, ldo); break;                         \
        case 6: group_vnni_r(KIND, g, nb, a, 6, bias, out, ldo); break;                         \
        case 5: group_vnni_r(KIND, g, nb, a, 5, bias, out, ldo); break;                         \
        case 4: group_vnni_r(KIND, g, nb, a, 4, bias, out, ldo); break;                         \
        case 3: group_vnni_r(KIND, g, nb, a, 3, bias, out, ldo); break;                         \
        case 2: group_vnni_r(KIND, g, nb, a, 2, bias, out, ldo); break;                         \
        default: group_vnni_r(KIND, g, nb, a, 1, bias, out, ldo); break;                         \
        }                                                                                     \
    }
VNNI_KIND(group_vnni_q8, K_Q8)
VNNI_KIND(group_vnni_q6k, K_Q6K)
VNNI_KIND(group_vnni_q4k, K_Q4K)
VNNI_KIND(group_vnni_q5, K_Q5)

/* The signed products of 32 bytes of weights w (Q8_0, Q5_0: stored
 * unsigned with +128) and activations x: AVX2 has no unsigned-by-signed
 * 4-way dot without int16 saturation for unsigned bytes up to 255, so
 * vpmaddubsw multiplies |w| by x with w's sign (pair sums within 2 * 128 *
 * 127) and needs no offset correction: the same exact integers; Q4_K's
 * nibbles, Q6_K's bytes (below 64) and Q5_1/Q5_K's (below 32) multiply
 * directly. vpmaddwd
 * by ones widens the pair sums to int32 per 4 elements.
 *
 * 8 weight rows (half h of the group) x r activation rows (r <= 4). */
__attribute__((target("avx2,fma"))) static KINL void
half_avx2_r(int kind, const uint8_t *g, int64_t nb, const uint8_t *a, int r, int h,
            const float *bias, float *out, int64_t ldo)
{
    size_t gbs = kind_gb(kind);
    __m256 acc[4];
    const __m256i flip = _mm256_set1_epi8((char)0x80), low4 = _mm256_set1_epi8(0x0F);
    _Pragma("GCC unroll 4")
    for (int k = 0; k < r; k++)
        acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * gbs, *ab = a + (size_t)b * AB;
        __m256i is[4];
        if (kind == K_Q4K) {
            /* The nibbles' pair products (at most 2 * 15 * 128 = 3,840)
             * are summed in int16 over the whole block, 8 of them (30,720:
             * no overflow, so the same integers), and widened once:
             * vpmaddwd, like vpmaddubsw, runs on one pipe of Zen 1 as two
             * halves, and one per pair sum was half the kernel's work. */
            __m256i ps[4];
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++)
                ps[k] = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int v = 0; v < 4; v++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(gb + 64 * v + 32 * h));
                __m256i wl = _mm256_and_si256(x, low4);
                __m256i wh = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
                _Pragma("GCC unroll 4")
                for (int k = 0; k < r; k++) {
                    __m256i xl = _mm256_set1_epi32(ld32(ab + AQ + 32 * v + 4 * k));
                    __m256i xh = _mm256_set1_epi32(ld32(ab + AQ + 32 * (v + 4) + 4 * k));
                    ps[k] = _mm256_add_epi16(ps[k], _mm256_maddubs_epi16(wl, xl));
                    ps[k] = _mm256_add_epi16(ps[k], _mm256_maddubs_epi16(wh, xh));
                }
            }
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++)
                is[k] = _mm256_madd_epi16(ps[k], _mm256_set1_epi16(1));
            __m256 dw = _mm256_loadu_ps((const float *)(gb + 256 + 32 * h));
            __m256 mw = _mm256_loadu_ps((const float *)(gb + 320 + 32 * h));
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++) {
                acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[k]),
                                         _mm256_mul_ps(dw, _mm256_set1_ps(ldf(ab + 4 * k))),
                                         acc[k]);
                acc[k] = _mm256_fmadd_ps(mw, _mm256_set1_ps(ldf(ab + 96 + 4 * k)), acc[k]);
            }
            continue;
        }
        if (kind == K_Q6K) {
            /* Q6_K's quants are stored as in the file (0..63), so
             * vpmaddubsw multiplies them by the activations directly, with
             * no vpsignb/vpabsb/+128 flip: pair sums within 2 * 63 * 127 =
             * 16,002, two of them summed in int16 (32,004), one vpmaddwd
             * per two steps; each half block's sums start at -32 * sum(x)
             * (a quarter of the stored -128 * sum(x)), which takes the
             * quants' offset of 32 off. The same integers as q - 32. */
            _Pragma("GCC unroll 2")
            for (int part = 0; part < 2; part++) {
                _Pragma("GCC unroll 4")
                for (int k = 0; k < r; k++)
                    is[k] = _mm256_set1_epi32(ld32(ab + 32 + 32 * part + 4 * k) / 4);
                _Pragma("GCC unroll 2")
                for (int s = 4 * part; s < 4 * part + 4; s += 2) {
                    __m256i w0 = _mm256_loadu_si256((const __m256i *)(gb + 64 * s + 32 * h));
                    __m256i w1 = _mm256_loadu_si256((const __m256i *)(gb + 64 * s + 64 + 32 * h));
                    _Pragma("GCC unroll 4")
                    for (int k = 0; k < r; k++) {
                        __m256i x0 = _mm256_set1_epi32(ld32(ab + AQ + 32 * s + 4 * k));
                        __m256i x1 = _mm256_set1_epi32(ld32(ab + AQ + 32 * s + 32 + 4 * k));
                        __m256i ps = _mm256_add_epi16(_mm256_maddubs_epi16(w0, x0),
                                                      _mm256_maddubs_epi16(w1, x1));
                        is[k] = _mm256_add_epi32(is[k],
                                                 _mm256_madd_epi16(ps, _mm256_set1_epi16(1)));
                    }
                }
                __m256 dw = _mm256_loadu_ps((const float *)(gb + 512 + 64 * part + 32 * h));
                _Pragma("GCC unroll 4")
                for (int k = 0; k < r; k++)
                    acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[k]),
                                             _mm256_mul_ps(dw, _mm256_set1_ps(ldf(ab + 4 * k))),
                                             acc[k]);
            }
            continue;
        }
        /* Q8_0, Q5_0, Q5_1, Q5_K: one sum over the block. Pair products
         * summed in int16 over G sub-blocks before one vpmaddwd widens
         * them (as Q4_K above): Q5_1/Q5_K's bytes are below 32, 4 * 2 * 31
         * * 128 = 31,744; no overflow, the same integers. Q8_0/Q5_0 (|w|
         * up to 128) widen each. */
        const int G = kind == K_Q8 ? 1 : kind == K_Q4U ? 8 : 4;
        _Pragma("GCC unroll 4")
        for (int k = 0; k < r; k++)
            is[k] = _mm256_setzero_si256();
        _Pragma("GCC unroll 8")
        for (int s = 0; s < 8; s += G) {
            __m256i ps[4];
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++)
                ps[k] = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int j = s; j < s + G; j++) {
                __m256i w = _mm256_loadu_si256((const __m256i *)(gb + 64 * j + 32 * h));
                bool u = kind == K_Q5 || kind == K_Q4U; /* unsigned bytes: multiply directly */
                if (!u)
                    w = _mm256_xor_si256(w, flip);
                __m256i wa = u ? w : _mm256_abs_epi8(w);
                _Pragma("GCC unroll 4")
                for (int k = 0; k < r; k++) {
                    __m256i x = _mm256_set1_epi32(ld32(ab + AQ + 32 * j + 4 * k));
                    __m256i pp = u ? _mm256_maddubs_epi16(w, x)
                                   : _mm256_maddubs_epi16(wa, _mm256_sign_epi8(x, w));
                    ps[k] = G == 1 ? pp : _mm256_add_epi16(ps[k], pp);
                }
            }
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++)
                is[k] = _mm256_add_epi32(is[k], _mm256_madd_epi16(ps[k], _mm256_set1_epi16(1)));
        }
        __m256 dw = _mm256_loadu_ps((const float *)(gb + 512 + 32 * h));
        _Pragma("GCC unroll 4")
        for (int k = 0; k < r; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[k]),
                                     _mm256_mul_ps(dw, _mm256_set1_ps(ldf(ab + 4 * k))), acc[k]);
        if (kind == K_Q5 || kind == K_Q4U) {
            __m256 mw = _mm256_loadu_ps((const float *)(gb + 576 + 32 * h));
            _Pragma("GCC unroll 4")
            for (int k = 0; k < r; k++)
                acc[k] = _mm256_fmadd_ps(mw, _mm256_set1_ps(ldf(ab + 96 + 4 * k)), acc[k]);
        }
    }
    /* the bias (when given) added as the tile is stored: the same float
     * add as a pass after the product, without reading the output back */
    _Pragma("GCC unroll 4")
    for (int k = 0; k < r; k++)
        _mm256_storeu_ps(out + k * ldo + 8 * h,
                         bias ? _mm256_add_ps(acc[k], _mm256_loadu_ps(bias + 8 * h)) : acc[k]);
}

#define AVX2_KIND(NAME, KIND)                                                                 \
    __attribute__((target("avx2,fma"))) static void NAME(                                     \
        const uint8_t *g, int64_t nb, const uint8_t *a, int r, const float *bias, float *out, \
        int64_t ldo)                                                                          \
    {                                                                                         \
        /* rows k0.. of the tile: their bytes sit 4 * k0 further in each block */             \
        for (int k0 = 0; k0 < r; k0 += 4) {                                                   \
            int rr = r - k0 < 4 ? r - k0 : 4;                                                 \
            for (int h = 0; h < 2; h++) {                                                     \
                const uint8_t *ak = a + 4 * k0;                                               \
                float *ok = out + k0 * ldo;                                                   \
                switch (rr) {                                                                 \
                case 4: half_avx2_r(KIND, g, nb, ak, 4, h, bias, ok, ldo); break;                \
                case 3: half_avx2_r(KIND, g, nb, ak, 3, h, bias, ok, ldo); break;                \
                case 2: half_avx2_r(KIND, g, nb, ak, 2, h, bias, ok, ldo); break;                \
                default: half_avx2_r(KIND, g, nb, ak, 1, h, bias, ok, ldo); break;                \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }
AVX2_KIND(group_avx2_q8, K_Q8)
AVX2_KIND(group_avx2_q6k, K_Q6K)
AVX2_KIND(group_avx2_q4k, K_Q4K)
AVX2_KIND(group_avx2_q5, K_Q5)
AVX2_KIND(group_avx2_q4u, K_Q4U)

/* One group of a Q4_K pack with its nibbles as bytes (K_Q4U: K_Q5's
 * layout, step v's low nibbles at 64 * v, its high ones at 64 * (v + 4),
 * then the scales at 512 and the mins at 576) into dst (nb * 640 bytes).
 * On Zen 1 the nibble kernel spent three of its ~25 vector micro-ops per
 * 4 x 32 products unpacking, for every 4 activation rows, on the pipes its
 * vpmaddubsw shares; unpacked once per tile of TILE_T rows, the byte
 * kernel runs ~10% faster on the same integers (memory: the pack stays
 * nibbles, 0.75 bytes a weight; the unpacked group is the call's). */
__attribute__((target("avx2"))) static void q4k_unpack_avx2(const uint8_t *g, int64_t nb,
                                                            uint8_t *dst)
{
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = g + (size_t)b * kind_gb(K_Q4K);
        uint8_t *db = dst + (size_t)b * kind_gb(K_Q4U);
        for (int i = 0; i < 8; i++) { /* step i / 2, half i % 2 */
            __m256i x = _mm256_loadu_si256((const __m256i *)(sb + 32 * i));
            _mm256_storeu_si256((__m256i *)(db + 32 * i), _mm256_and_si256(x, low4));
            _mm256_storeu_si256((__m256i *)(db + 256 + 32 * i),
                                _mm256_and_si256(_mm256_srli_epi16(x, 4), low4));
        }
        memcpy(db + 512, sb + 256, 128); /* scales, then mins */
    }
}

/* Activation rows a tile needs before a Q4_K group is unpacked for it: at
 * 8 the unpacking cost about what it saved (768 -> 3072: 0.77-0.79 ms
 * against 0.79-0.87), at 16 and more it gains 4-11%. */
#define Q4U_MIN_ROWS 16
#endif /* Q8P_X86 */

/* Activation rows per tile for rows of nb blocks: TILE_T rows of 3,072
 * elements (96 blocks: 288 KB of prepared activations, within Zen 1's
 * 512 KB L2) and as many more for narrower rows as fit the same bytes, up
 * to 4 times as many: each weight group then streams from L2/L3 (and, for
 * AVX2 Q4_K, is unpacked to bytes) once per tile. The tiling only orders
 * the work: every output is the same chain whatever the tile. */
static int64_t q8pack_tile_rows(int64_t nb)
{
    int64_t t = TILE_T * 96 / (nb > 0 ? nb : 1);
    t = t < TILE_T ? TILE_T : t > 4 * TILE_T ? 4 * TILE_T : t;
    return t / AR * AR;
}

void q8pack_matmul(const q8pack *p, int64_t o0, int64_t no, const void *act, int64_t T,
                   const float *bias, float *out, int64_t ldo)
{
    typedef void (*group_fn)(const uint8_t *g, int64_t nb, const uint8_t *a, int r,
                             const float *bias, float *out, int64_t ldo);
    group_fn fn = NULL;
#ifdef Q8P_X86
    static const group_fn vnni[4] = {group_vnni_q8, group_vnni_q6k, group_vnni_q4k,
                                     group_vnni_q5};
    static const group_fn avx2[4] = {group_avx2_q8, group_avx2_q6k, group_avx2_q4k,
                                     group_avx2_q5};
    switch (quant_impl_active()) {
    case QUANT_IMPL_VNNI: fn = vnni[p->kind]; break;
    case QUANT_IMPL_AVX2: fn = avx2[p->kind]; break;
    default: break;
    }
#endif
    int64_t nb = p->nb;
    size_t tsz = (size_t)nb * AB;
    const uint8_t *ap = act;
    uint8_t *unpacked = NULL; /* AVX2 Q4_K: a group as bytes, once per tile */
#ifdef Q8P_X86
    if (fn == group_avx2_q4k && T >= Q4U_MIN_ROWS)
        unpacked = xmalloc((size_t)nb * kind_gb(K_Q4U));
#endif
    /* A tile of activation rows stays in L1/L2 while the task's weight
     * groups (at most 4 x 60 KB for 3072-wide rows) stream from L2. */
    int64_t tile = q8pack_tile_rows(nb);
    for (int64_t t0 = 0; t0 < T; t0 += tile) {
        int64_t t1 = t0 + tile < T ? t0 + tile : T;
        for (int64_t o = o0; o < o0 + no; o += Q8PACK_NR) {
            const uint8_t *g = p->data + (size_t)(o / Q8PACK_NR) * p->gsz;
            group_fn gf = fn;
#ifdef Q8P_X86
            /* a tile of a few rows keeps the nibble kernel (the unpacking
             * would cost more than it saves); both give the same bits */
            if (unpacked && t1 - t0 >= Q4U_MIN_ROWS) {
                q4k_unpack_avx2(g, nb, unpacked);
                g = unpacked;
                gf = group_avx2_q4u;
            }
#endif
            for (int64_t t = t0; t < t1; t += AR) {
                int r = t1 - t < AR ? (int)(t1 - t) : AR;
                const uint8_t *at = ap + (size_t)(t / AR) * tsz;
                float *ot = out + t * ldo + o;
                const float *bo = bias ? bias + o : NULL;
                if (gf)
                    gf(g, nb, at, r, bo, ot, ldo);
                else
                    group_c(p->kind, g, nb, at, r, bo, ot, ldo);
            }
        }
    }
    free(unpacked);
}
