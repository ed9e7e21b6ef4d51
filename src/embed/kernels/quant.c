/* quant — tensor element types and dot kernels.
 *
 * Block layouts (llama.cpp's, all little-endian, f16 = IEEE half):
 *
 *   Q8_0 (32 elems, 34 B):  f16 d; int8 qs[32];            x = d * q
 *   Q4_0 (32 elems, 18 B):  f16 d; u8 qs[16];              x = d * (q - 8),
 *       element j < 16 in the low nibble of qs[j], j >= 16 in the high one
 *   Q5_0 (32 elems, 22 B):  f16 d; u8 qh[4]; u8 qs[16];    x = d * (q - 16)
 *   Q5_1 (32 elems, 24 B):  f16 d, m; u8 qh[4]; u8 qs[16]; x = d * q + m
 *       q 5 bits: its low 4 as Q4_0's nibbles, its fifth bit of element j
 *       is bit j of qh read as a little-endian uint32
 *   Q4_K (256 elems, 144 B): f16 d, dmin; u8 scales[12]; u8 qs[128]
 *   Q5_K (256 elems, 176 B): f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
 *       8 sub-blocks of 32 with 6-bit scale sc and min m (packed in scales[],
 *       see kscale()): x = d*sc*q - dmin*m. Each 64-element chunk c uses
 *       qs[32c..32c+31]: low nibbles are sub-block 2c, high nibbles 2c+1;
 *       Q5_K's fifth bit of element l of sub-block k is bit k of qh[l].
 *   Q6_K (256 elems, 210 B): u8 ql[128]; u8 qh[64]; int8 scales[16]; f16 d
 *       x = d * scales[e/16] * (q - 32), q 6 bits: in each 128-element half
 *       h, element 32k+l (k = 0..3) takes its low 4 bits from
 *       ql[64h + l + 32*(k&1)] (low nibble for k < 2, high for k >= 2) and
 *       its top 2 bits from bits 2k..2k+1 of qh[32h + l].
 *
 * Activation rows (internal, see act_layout()):
 *   for Q8_0/Q4_0/Q5_0/Q5_1 weights: f32 d[nb]; f32 s[nb] (= d * sum q); int8 q[n]
 *   for K-quant weights:   f32 d[nb]; int16 bsums[16*nb]; int8 q[n]
 *   for float weights:     f32 x[n] */
#include "embed/kernels/quant.h"

#include <math.h>
#include <string.h>

#include "util/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#define QUANT_X86 1
#include <immintrin.h>
#endif

/* ---- type table ---- */

static const char *const type_names[] = {
    [0] = "F32", [1] = "F16", [2] = "Q4_0", [3] = "Q4_1", [6] = "Q5_0", [7] = "Q5_1",
    [8] = "Q8_0", [9] = "Q8_1", [10] = "Q2_K", [11] = "Q3_K", [12] = "Q4_K",
    [13] = "Q5_K", [14] = "Q6_K", [15] = "Q8_K", [16] = "IQ2_XXS", [17] = "IQ2_XS",
    [18] = "IQ3_XXS", [19] = "IQ1_S", [20] = "IQ4_NL", [21] = "IQ3_S", [22] = "IQ2_S",
    [23] = "IQ4_XS", [24] = "I8", [25] = "I16", [26] = "I32", [27] = "I64", [28] = "F64",
    [29] = "IQ1_M", [30] = "BF16", [34] = "TQ1_0", [35] = "TQ2_0", [39] = "MXFP4",
};

const char *quant_type_name(int type)
{
    if (type < 0 || type >= (int)(sizeof type_names / sizeof type_names[0]) || !type_names[type])
        return "unknown";
    return type_names[type];
}

bool quant_supported(int type)
{
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1: case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K:
        return true;
    default:
        return false;
    }
}

size_t quant_block_size(int type)
{
    switch (type) {
    case GGML_TYPE_F32: case GGML_TYPE_F16: case GGML_TYPE_BF16: return 1;
    case GGML_TYPE_Q8_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
        return QUANT_QK;
    case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K: return QUANT_QK_K;
    default: return 0;
    }
}

size_t quant_type_size(int type)
{
    switch (type) {
    case GGML_TYPE_F32: return 4;
    case GGML_TYPE_F16: case GGML_TYPE_BF16: return 2;
    case GGML_TYPE_Q8_0: return 34;
    case GGML_TYPE_Q4_0: return 18;
    case GGML_TYPE_Q5_0: return 22;
    case GGML_TYPE_Q5_1: return 24;
    case GGML_TYPE_Q4_K: return 144;
    case GGML_TYPE_Q5_K: return 176;
    case GGML_TYPE_Q6_K: return 210;
    default: return 0;
    }
}

size_t quant_row_size(int type, int64_t n)
{
    size_t bs = quant_block_size(type);
    if (!bs || n < 0 || n % (int64_t)bs)
        return 0;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)(n / (int64_t)bs), quant_type_size(type), &bytes))
        return 0;
    return bytes;
}

/* ---- half precision ---- */

float quant_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        /* subnormal: value = man * 2^-24, exact in f32 */
        float f = (float)man * (1.0f / 16777216.0f);
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t quant_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)
        return sign | 0x7E00; /* NaN */
    if (ax >= 0x477FF000u)    /* rounds to >= 65520: infinity */
        return sign | 0x7C00;
    if (ax < 0x38800000u) {   /* below 2^-14: subnormal half (or zero) */
        float a;
        memcpy(&a, &ax, 4);
        /* a * 2^24 rounded to nearest even gives the subnormal mantissa */
        return sign | (uint16_t)nearbyintf(a * 16777216.0f);
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xFFF + mant_odd; /* round to nearest even at bit 13 */
    return sign | (uint16_t)(((ax >> 23) - 112) << 10 | ((ax >> 13) & 0x3FF));
}

float quant_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t quant_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7FFF + ((x >> 16) & 1)) >> 16);
}

static float rd_f16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    return quant_f16_to_f32(h);
}

static void wr_f16(uint8_t *p, float f)
{
    uint16_t h = quant_f32_to_f16(f);
    memcpy(p, &h, 2);
}

/* 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block. */
static void kscale(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* ---- dequantisation ---- */

static void dq_q8_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    for (int j = 0; j < 32; j++)
        y[j] = d * (float)(int8_t)b[2 + j];
}

static void dq_q4_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((b[2 + j] & 0xF) - 8);
        y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

/* The 32 5-bit quants (0..31) of a Q5_0/Q5_1 block, in element order;
 * hq: the block's qh[4] followed by its qs[16]. */
static void q5_unpack(const uint8_t *hq, uint8_t *q)
{
    uint32_t qh;
    memcpy(&qh, hq, 4);
    for (int j = 0; j < 16; j++) {
        q[j] = (uint8_t)((hq[4 + j] & 0xF) | (((qh >> j) & 1) << 4));
        q[j + 16] = (uint8_t)((hq[4 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
    }
}

/* llama.cpp's arithmetic: (q - 16) * d, and q * d + m. */
static void dq_q5(const uint8_t *b, float *y, int one)
{
    uint8_t q[32];
    float d = rd_f16(b);
    q5_unpack(b + (one ? 4 : 2), q);
    if (one) {
        float m = rd_f16(b + 2);
        for (int j = 0; j < 32; j++)
            y[j] = (float)q[j] * d + m;
    } else {
        for (int j = 0; j < 32; j++)
            y[j] = (float)(q[j] - 16) * d;
    }
}

void quant_q5block_int(ggml_type type, const void *block, uint8_t *q, float *scale, float *min)
{
    const uint8_t *b = block;
    int one = type == GGML_TYPE_Q5_1;
    q5_unpack(b + (one ? 4 : 2), q);
    *scale = rd_f16(b);
    *min = one ? -rd_f16(b + 2) : 16.0f * *scale;
}

static void dq_kaffine(const uint8_t *b, float *y, int five)
{
    float d = rd_f16(b), dmin = rd_f16(b + 2);
    const uint8_t *sc = b + 4, *qh = b + 16, *qs = five ? b + 48 : b + 16;
    for (int c = 0; c < 4; c++) {
        int s0, m0, s1, m1;
        kscale(sc, 2 * c, &s0, &m0);
        kscale(sc, 2 * c + 1, &s1, &m1);
        float d0 = d * (float)s0, d1 = d * (float)s1;
        float n0 = dmin * (float)m0, n1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
            if (five) {
                lo += ((qh[l] >> (2 * c)) & 1) << 4;
                hi += ((qh[l] >> (2 * c + 1)) & 1) << 4;
            }
            y[64 * c + l] = d0 * (float)lo - n0;
            y[64 * c + 32 + l] = d1 * (float)hi - n1;
        }
    }
}

/* The 256 6-bit quants (0..63) of a Q6_K block, in element order. */
static void q6_unpack(const uint8_t *b, uint8_t *q)
{
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        uint8_t *y = q + 128 * h;
        for (int l = 0; l < 32; l++) {
            y[l] = (uint8_t)((ql[l] & 0xF) | ((qh[l] & 3) << 4));
            y[l + 32] = (uint8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
            y[l + 64] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            y[l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
}

void quant_kblock_int(ggml_type type, const void *block, uint8_t *q, float *scale, float *min)
{
    const uint8_t *b = block;
    if (type == GGML_TYPE_Q6_K) {
        float d = rd_f16(b + 208);
        const int8_t *sc = (const int8_t *)(b + 192);
        q6_unpack(b, q);
        for (int i = 0; i < 16; i++) {
            scale[i] = d * (float)sc[i];
            min[i] = 32.0f * scale[i];
        }
        return;
    }
    int five = type == GGML_TYPE_Q5_K;
    float d = rd_f16(b), dmin = rd_f16(b + 2);
    const uint8_t *qh = b + 16, *qs = five ? b + 48 : b + 16;
    for (int c = 0; c < 4; c++) {
        for (int h = 0; h < 2; h++) {
            int j = 2 * c + h, sc, m;
            kscale(b + 4, j, &sc, &m);
            scale[2 * j] = scale[2 * j + 1] = d * (float)sc;
            min[2 * j] = min[2 * j + 1] = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                int v = h ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 0xF;
                if (five)
                    v += ((qh[l] >> j) & 1) << 4;
                q[32 * j + l] = (uint8_t)v;
            }
        }
    }
}

static void dq_q6_k(const uint8_t *b, float *y)
{
    float d = rd_f16(b + 208);
    const int8_t *sc = (const int8_t *)(b + 192);
    uint8_t q[256];
    q6_unpack(b, q);
    for (int e = 0; e < 256; e++)
        y[e] = d * (float)sc[e / 16] * (float)(q[e] - 32);
}

#ifdef QUANT_X86
/* Q8_0 rows with AVX2: the same single multiply per element as dq_q8_0,
 * so the result is bit-identical; this runs on every batched product. */
__attribute__((target("avx2"))) static void dq_q8_0_row_avx2(const uint8_t *p, float *y,
                                                             int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, p += 34, y += 32) {
        __m256 d = _mm256_set1_ps(rd_f16(p));
        for (int j = 0; j < 32; j += 8) {
            __m128i q = _mm_loadl_epi64((const __m128i *)(const void *)(p + 2 + j));
            __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
            _mm256_storeu_ps(y + j, _mm256_mul_ps(d, f));
        }
    }
}

/* F16 and BF16 rows 8 at a time. Both conversions are exact (every half
 * and every bfloat is a float), so these equal the scalar loops bit for
 * bit (a signalling NaN comes back quiet from F16C). They run for every float product of an F16 or
 * BF16 file: the scalar F16 loop, with its branches per element, took a
 * fifth of an F16 MiniLM pass. */
__attribute__((target("avx2,f16c"))) static void dq_f16_row_avx2(const uint8_t *p, float *y,
                                                                 int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const void *)(p + 2 * i))));
    for (; i < n; i++)
        y[i] = rd_f16(p + 2 * i);
}

__attribute__((target("avx2"))) static void dq_bf16_row_avx2(const uint8_t *p, float *y,
                                                            int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const void *)(p + 2 * i)));
        _mm256_storeu_si256((void *)(y + i), _mm256_slli_epi32(h, 16));
    }
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        y[i] = quant_bf16_to_f32(h);
    }
}
#endif

/* Whole rows of the element types and of Q8_0 without the per-block switch. */
static int dequantize_row_fast(ggml_type type, const uint8_t *p, float *y, int64_t n)
{
    switch (type) {
    case GGML_TYPE_F32:
        memcpy(y, p, (size_t)n * sizeof *y);
        return 1;
    case GGML_TYPE_F16:
#ifdef QUANT_X86
        if (quant_cpu_has_avx2()) {
            dq_f16_row_avx2(p, y, n);
            return 1;
        }
#endif
        for (int64_t i = 0; i < n; i++)
            y[i] = rd_f16(p + 2 * i);
        return 1;
    case GGML_TYPE_BF16:
#ifdef QUANT_X86
        if (quant_cpu_has_avx2()) {
            dq_bf16_row_avx2(p, y, n);
            return 1;
        }
#endif
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            y[i] = quant_bf16_to_f32(h);
        }
        return 1;
#ifdef QUANT_X86
    case GGML_TYPE_Q8_0:
        if (!quant_cpu_has_avx2())
            return 0;
        dq_q8_0_row_avx2(p, y, n / 32);
        return 1;
#endif
    default:
        return 0;
    }
}

void quant_dequantize_row(ggml_type type, const void *src, float *dst, int64_t n)
{
    const uint8_t *p = src;
    size_t bs = quant_block_size(type), ts = quant_type_size(type);
    if (!bs)
        return;
    if (dequantize_row_fast(type, p, dst, n))
        return;
    int64_t nb = n / (int64_t)bs;
    for (int64_t i = 0; i < nb; i++, p += ts) {
        float *y = dst + i * (int64_t)bs;
        switch (type) {
        case GGML_TYPE_F32: memcpy(y, p, 4); break;
        case GGML_TYPE_F16: *y = rd_f16(p); break;
        case GGML_TYPE_BF16: { uint16_t h; memcpy(&h, p, 2); *y = quant_bf16_to_f32(h); break; }
        case GGML_TYPE_Q8_0: dq_q8_0(p, y); break;
        case GGML_TYPE_Q4_0: dq_q4_0(p, y); break;
        case GGML_TYPE_Q5_0: dq_q5(p, y, 0); break;
        case GGML_TYPE_Q5_1: dq_q5(p, y, 1); break;
        case GGML_TYPE_Q4_K: dq_kaffine(p, y, 0); break;
        case GGML_TYPE_Q5_K: dq_kaffine(p, y, 1); break;
        case GGML_TYPE_Q6_K: dq_q6_k(p, y); break;
        default: return;
        }
    }
}

/* ---- quantisation (weights, for tests and tools) ---- */

/* Round to nearest and clamp, in float so that huge, infinite or NaN
 * inputs (NaN gives 0) never reach an undefined float-to-int conversion. */
static int qround(float v, int lo, int hi)
{
    if (!(v == v))
        return 0 < lo ? lo : 0 > hi ? hi : 0;
    v = fminf(fmaxf(v, (float)lo), (float)hi);
    return (int)nearbyintf(v);
}

static float inv(float d)
{
    return d != 0.0f ? 1.0f / d : 0.0f;
}

static void q_q8_0(const float *x, uint8_t *b)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    wr_f16(b, amax / 127.0f);
    float id = inv(rd_f16(b));
    for (int j = 0; j < 32; j++)
        b[2 + j] = (uint8_t)(int8_t)qround(x[j] * id, -127, 127);
}

static void q_q4_0(const float *x, uint8_t *b)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    wr_f16(b, max / -8.0f);
    float id = inv(rd_f16(b));
    for (int j = 0; j < 16; j++) {
        int lo = qround(floorf(x[j] * id + 8.5f), 0, 15);
        int hi = qround(floorf(x[j + 16] * id + 8.5f), 0, 15);
        b[2 + j] = (uint8_t)(lo | (hi << 4));
    }
}

/* The 5-bit quants q (0..31) into a block's qh[4] and qs[16]. */
static void q5_pack(const int *q, uint8_t *hq)
{
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        hq[4 + j] = (uint8_t)((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        qh |= (uint32_t)(q[j] >> 4) << j | (uint32_t)(q[j + 16] >> 4) << (j + 16);
    }
    memcpy(hq, &qh, 4);
}

/* Q5_0 like Q4_0 (the extreme value maps to -16), Q5_1 an affine fit of
 * [min, max] in 31 steps. */
static void q_q5(const float *x, uint8_t *b, int one)
{
    int q[32];
    if (one) {
        float lo = x[0], hi = x[0];
        for (int j = 1; j < 32; j++) {
            lo = fminf(lo, x[j]);
            hi = fmaxf(hi, x[j]);
        }
        wr_f16(b, (hi - lo) / 31.0f);
        wr_f16(b + 2, lo);
        float id = inv(rd_f16(b)), m = rd_f16(b + 2);
        for (int j = 0; j < 32; j++)
            q[j] = qround((x[j] - m) * id, 0, 31);
        q5_pack(q, b + 4);
        return;
    }
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    wr_f16(b, max / -16.0f);
    float id = inv(rd_f16(b));
    for (int j = 0; j < 32; j++)
        q[j] = qround(floorf(x[j] * id + 16.5f), 0, 31);
    q5_pack(q, b + 2);
}

/* Q4_K / Q5_K: per sub-block affine fit [min(0, lo), hi] with nmax steps,
 * scales and mins quantised to 6 bits against per-block d and dmin. */
static void q_kaffine(const float *x, uint8_t *b, int five)
{
    int nmax = five ? 31 : 15;
    float scale[8], mins[8], smax = 0, mmax = 0;
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = x[32 * j];
        for (int l = 0; l < 32; l++) {
            lo = fminf(lo, x[32 * j + l]);
            hi = fmaxf(hi, x[32 * j + l]);
        }
        scale[j] = (hi - lo) / (float)nmax;
        mins[j] = -lo;
        smax = fmaxf(smax, scale[j]);
        mmax = fmaxf(mmax, mins[j]);
    }
    wr_f16(b, smax / 63.0f);
    wr_f16(b + 2, mmax / 63.0f);
    float d = rd_f16(b), dmin = rd_f16(b + 2);
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = qround(scale[j] * inv(d), 0, 63);
        mn[j] = qround(mins[j] * inv(dmin), 0, 63);
    }
    uint8_t *s = b + 4;
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
    }
    uint8_t *qh = b + 16, *qs = five ? b + 48 : b + 16;
    if (five)
        memset(qh, 0, 32);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int q[2];
            for (int k = 0; k < 2; k++) {
                int j = 2 * c + k;
                float es = d * (float)sc[j], em = dmin * (float)mn[j];
                q[k] = qround((x[32 * j + l] + em) * inv(es), 0, nmax);
            }
            qs[32 * c + l] = (uint8_t)((q[0] & 0xF) | ((q[1] & 0xF) << 4));
            if (five)
                qh[l] |= (uint8_t)(((q[0] >> 4) << (2 * c)) | ((q[1] >> 4) << (2 * c + 1)));
        }
}

static void q_q6_k(const float *x, uint8_t *b)
{
    float scale[16], amax_s = 0;
    for (int g = 0; g < 16; g++) {
        float amax = 0, max = 0;
        for (int l = 0; l < 16; l++)
            if (fabsf(x[16 * g + l]) > amax) {
                amax = fabsf(x[16 * g + l]);
                max = x[16 * g + l];
            }
        scale[g] = max / -32.0f;
        amax_s = fmaxf(amax_s, fabsf(scale[g]));
    }
    wr_f16(b + 208, amax_s / 127.0f);
    float d = rd_f16(b + 208);
    int8_t *sc = (int8_t *)(b + 192);
    for (int g = 0; g < 16; g++)
        sc[g] = (int8_t)qround(scale[g] * inv(d), -128, 127);
    memset(b, 0, 192);
    for (int e = 0; e < 256; e++) {
        float es = d * (float)sc[e / 16];
        int q = qround(x[e] * inv(es), -32, 31) + 32;
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        uint8_t *lb = &b[64 * h + l + 32 * (k & 1)];
        *lb |= (uint8_t)(k < 2 ? (q & 0xF) : (q & 0xF) << 4);
        b[128 + 32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
    }
}

void quant_quantize_row(ggml_type type, const float *src, void *dst, int64_t n)
{
    uint8_t *p = dst;
    size_t bs = quant_block_size(type), ts = quant_type_size(type);
    if (!bs)
        return;
    int64_t nb = n / (int64_t)bs;
    for (int64_t i = 0; i < nb; i++, p += ts) {
        const float *x = src + i * (int64_t)bs;
        switch (type) {
        case GGML_TYPE_F32: memcpy(p, x, 4); break;
        case GGML_TYPE_F16: wr_f16(p, *x); break;
        case GGML_TYPE_BF16: { uint16_t h = quant_f32_to_bf16(*x); memcpy(p, &h, 2); break; }
        case GGML_TYPE_Q8_0: q_q8_0(x, p); break;
        case GGML_TYPE_Q4_0: q_q4_0(x, p); break;
        case GGML_TYPE_Q5_0: q_q5(x, p, 0); break;
        case GGML_TYPE_Q5_1: q_q5(x, p, 1); break;
        case GGML_TYPE_Q4_K: q_kaffine(x, p, 0); break;
        case GGML_TYPE_Q5_K: q_kaffine(x, p, 1); break;
        case GGML_TYPE_Q6_K: q_q6_k(x, p); break;
        default: return;
        }
    }
}

/* ---- activation rows ---- */

typedef enum { ACT_F32, ACT_Q8_32, ACT_Q8_K } act_kind;

typedef struct act_view {
    const float *d;      /* per-block scale */
    const float *s;      /* ACT_Q8_32: d * sum(q) per block */
    const int16_t *bsum; /* ACT_Q8_K: sums of q per 16 elements */
    const int8_t *q;
    const float *x;      /* ACT_F32 */
} act_view;

static size_t align32(size_t n)
{
    return (n + 31) & ~(size_t)31;
}

static act_kind act_kind_of(ggml_type w)
{
    switch (w) {
    case GGML_TYPE_Q8_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: case GGML_TYPE_Q5_1:
        return ACT_Q8_32;
    case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: case GGML_TYPE_Q6_K: return ACT_Q8_K;
    default: return ACT_F32;
    }
}

/* Byte offset of the int8 quants within an activation row. */
static size_t act_q_off(act_kind k, int64_t n)
{
    size_t nb = k == ACT_Q8_32 ? (size_t)n / 32 : (size_t)n / 256;
    return k == ACT_Q8_32 ? align32(8 * nb) : align32(36 * nb);
}

size_t quant_act_row_size(ggml_type wtype, int64_t n)
{
    act_kind k = act_kind_of(wtype);
    if (k == ACT_F32)
        return align32((size_t)n * 4);
    return act_q_off(k, n) + align32((size_t)n);
}

static act_view act_view_of(ggml_type wtype, const void *act, int64_t n)
{
    const uint8_t *p = act;
    act_view v = {0};
    act_kind k = act_kind_of(wtype);
    if (k == ACT_F32) {
        v.x = act;
        return v;
    }
    v.d = act;
    if (k == ACT_Q8_32)
        v.s = (const float *)(p + 4 * ((size_t)n / 32));
    else
        v.bsum = (const int16_t *)(p + 4 * ((size_t)n / 256));
    v.q = (const int8_t *)(p + act_q_off(k, n));
    return v;
}

/* Symmetric int8 quantisation of one block; returns sum of the quants. */
static int quantize_block_i8(const float *x, int8_t *q, int len, float *d_out)
{
    float amax = 0;
    for (int j = 0; j < len; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = inv(d);
    int sum = 0;
    for (int j = 0; j < len; j++) {
        int v = qround(x[j] * id, -127, 127);
        q[j] = (int8_t)v;
        sum += v;
    }
    *d_out = d;
    return sum;
}

void quant_quantize_act(ggml_type wtype, const float *x, void *dst, int64_t n)
{
    uint8_t *p = dst;
    act_kind k = act_kind_of(wtype);
    if (k == ACT_F32) {
        memcpy(dst, x, (size_t)n * sizeof(float));
        return;
    }
    int8_t *q = (int8_t *)(p + act_q_off(k, n));
    if (k == ACT_Q8_32) {
        size_t nb = (size_t)n / 32;
        float *d = (float *)p, *s = (float *)(p + 4 * nb);
        for (size_t i = 0; i < nb; i++) {
            int sum = quantize_block_i8(x + 32 * i, q + 32 * i, 32, &d[i]);
            s[i] = d[i] * (float)sum;
        }
        return;
    }
    size_t nb = (size_t)n / 256;
    float *d = (float *)p;
    int16_t *bsum = (int16_t *)(p + 4 * nb);
    for (size_t i = 0; i < nb; i++) {
        quantize_block_i8(x + 256 * i, q + 256 * i, 256, &d[i]);
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += q[256 * i + 16 * g + l];
            bsum[16 * i + g] = (int16_t)s;
        }
    }
}

/* ---- portable dot kernels ---- */

static float dot_f32_c(const void *w, const float *x, int64_t n)
{
    const float *a = w;
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += a[i + k] * x[i + k];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        s += a[i] * x[i];
    return s;
}

static float dot_half_c(const void *w, const float *x, int64_t n, int bf)
{
    const uint8_t *p = w;
    float s = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        s += (bf ? quant_bf16_to_f32(h) : quant_f16_to_f32(h)) * x[i];
    }
    return s;
}

static float dot_q8_0_c(const uint8_t *w, const act_view *a, int64_t n)
{
    float s = 0;
    for (int64_t b = 0; b < n / 32; b++, w += 34) {
        const int8_t *q = a->q + 32 * b;
        int32_t is = 0;
        for (int j = 0; j < 32; j++)
            is += (int8_t)w[2 + j] * q[j];
        s += rd_f16(w) * a->d[b] * (float)is;
    }
    return s;
}

static float dot_q4_0_c(const uint8_t *w, const act_view *a, int64_t n)
{
    float s = 0;
    for (int64_t b = 0; b < n / 32; b++, w += 18) {
        const int8_t *q = a->q + 32 * b;
        int32_t is = 0;
        for (int j = 0; j < 16; j++)
            is += (w[2 + j] & 0xF) * q[j] + (w[2 + j] >> 4) * q[j + 16];
        s += rd_f16(w) * (a->d[b] * (float)is - 8.0f * a->s[b]);
    }
    return s;
}

/* Q5_0: the signed q - 16 like Q8_0's quants; Q5_1: unsigned q, plus
 * m times the activation block's sum. */
static float dot_q5_c(const uint8_t *w, const act_view *a, int64_t n, int one)
{
    float s = 0;
    size_t ts = one ? 24 : 22;
    for (int64_t b = 0; b < n / 32; b++, w += ts) {
        const int8_t *q = a->q + 32 * b;
        uint8_t u[32];
        q5_unpack(w + (one ? 4 : 2), u);
        int32_t is = 0;
        for (int j = 0; j < 32; j++)
            is += (u[j] - (one ? 0 : 16)) * q[j];
        s += rd_f16(w) * a->d[b] * (float)is;
        if (one)
            s += rd_f16(w + 2) * a->s[b];
    }
    return s;
}

static float dot_kaffine_c(const uint8_t *w, const act_view *a, int64_t n, int five)
{
    float s = 0;
    size_t ts = five ? 176 : 144;
    for (int64_t b = 0; b < n / 256; b++, w += ts) {
        const int8_t *q = a->q + 256 * b;
        const int16_t *bs = a->bsum + 16 * b;
        const uint8_t *qh = w + 16, *qs = five ? w + 48 : w + 16;
        int32_t sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++) {
            int s0, m0, s1, m1;
            kscale(w + 4, 2 * c, &s0, &m0);
            kscale(w + 4, 2 * c + 1, &s1, &m1);
            int32_t i0 = 0, i1 = 0;
            for (int l = 0; l < 32; l++) {
                int lo = qs[32 * c + l] & 0xF, hi = qs[32 * c + l] >> 4;
                if (five) {
                    lo |= ((qh[l] >> (2 * c)) & 1) << 4;
                    hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
                }
                i0 += lo * q[64 * c + l];
                i1 += hi * q[64 * c + 32 + l];
            }
            sumi += s0 * i0 + s1 * i1;
            summ += m0 * (bs[4 * c] + bs[4 * c + 1]) + m1 * (bs[4 * c + 2] + bs[4 * c + 3]);
        }
        s += a->d[b] * (rd_f16(w) * (float)sumi - rd_f16(w + 2) * (float)summ);
    }
    return s;
}

static float dot_q6_k_c(const uint8_t *w, const act_view *a, int64_t n)
{
    float s = 0;
    for (int64_t b = 0; b < n / 256; b++, w += 210) {
        const int8_t *q = a->q + 256 * b;
        const int8_t *sc = (const int8_t *)(w + 192);
        uint8_t u[256];
        q6_unpack(w, u);
        int32_t sumi = 0;
        for (int g = 0; g < 16; g++) {
            int32_t is = 0;
            for (int l = 0; l < 16; l++)
                is += u[16 * g + l] * q[16 * g + l];
            sumi += sc[g] * (is - 32 * a->bsum[16 * b + g]);
        }
        s += a->d[b] * rd_f16(w + 208) * (float)sumi;
    }
    return s;
}

static float vec_dot_c(ggml_type t, const void *w, const act_view *a, int64_t n)
{
    switch (t) {
    case GGML_TYPE_F32: return dot_f32_c(w, a->x, n);
    case GGML_TYPE_F16: return dot_half_c(w, a->x, n, 0);
    case GGML_TYPE_BF16: return dot_half_c(w, a->x, n, 1);
    case GGML_TYPE_Q8_0: return dot_q8_0_c(w, a, n);
    case GGML_TYPE_Q4_0: return dot_q4_0_c(w, a, n);
    case GGML_TYPE_Q5_0: return dot_q5_c(w, a, n, 0);
    case GGML_TYPE_Q5_1: return dot_q5_c(w, a, n, 1);
    case GGML_TYPE_Q4_K: return dot_kaffine_c(w, a, n, 0);
    case GGML_TYPE_Q5_K: return dot_kaffine_c(w, a, n, 1);
    case GGML_TYPE_Q6_K: return dot_q6_k_c(w, a, n);
    default: return 0.0f;
    }
}

/* ---- x86 SIMD kernels: AVX2, and AVX2 with AVX512-VNNI's vpdpbusd ---- */

#ifdef QUANT_X86
#define MAXR 4
#define KINL __attribute__((always_inline)) inline

#define KFN __attribute__((target("avx2,fma,f16c")))
#define KNAME(n) n##_avx2
#define KDOT(u, s) _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
#include "embed/kernels/quant_x86.inc"
#undef KFN
#undef KNAME
#undef KDOT

#define KFN __attribute__((target("avx2,fma,f16c,avx512vnni,avx512vl")))
#define KNAME(n) n##_vnni
#define KDOT(u, s) _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s)
#include "embed/kernels/quant_x86.inc"
#undef KFN
#undef KNAME
#undef KDOT
#endif /* QUANT_X86 */

/* ---- dispatch ---- */

static _Atomic int forced_impl = QUANT_IMPL_AUTO;
static _Atomic int cpu_features = -1; /* bit 0: AVX2+FMA+F16C, bit 1: AVX512-VNNI+VL */

static int cpu_detect(void)
{
    int f = cpu_features;
    if (f >= 0)
        return f;
    f = 0;
#ifdef QUANT_X86
    /* util/cpu, not __builtin_cpu_supports(): that one's libgcc constructor
     * costs every trove process its start-up cpuid calls. */
    unsigned have = cpu_simd();
    if ((have & (CPU_AVX2 | CPU_FMA | CPU_F16C)) == (CPU_AVX2 | CPU_FMA | CPU_F16C)) {
        f |= 1;
        if ((have & (CPU_AVX512VNNI | CPU_AVX512VL)) == (CPU_AVX512VNNI | CPU_AVX512VL))
            f |= 2;
    }
#endif
    cpu_features = f;
    return f;
}

bool quant_cpu_has_avx2(void)
{
    return cpu_detect() & 1;
}

bool quant_cpu_has_vnni(void)
{
    return cpu_detect() & 2;
}

void quant_set_impl(quant_impl impl)
{
    forced_impl = (int)impl;
}

/* The path in use: the forced one, or the best one below it the CPU has. */
static quant_impl active_impl(void)
{
    quant_impl forced = (quant_impl)forced_impl;
    quant_impl want = forced == QUANT_IMPL_AUTO ? QUANT_IMPL_VNNI : forced;
    if (want == QUANT_IMPL_VNNI && !quant_cpu_has_vnni())
        want = QUANT_IMPL_AVX2;
    if (want == QUANT_IMPL_AVX2 && !quant_cpu_has_avx2())
        want = QUANT_IMPL_PORTABLE;
    return want;
}

quant_impl quant_impl_active(void)
{
    return active_impl();
}

const char *quant_impl_name(void)
{
    switch (active_impl()) {
    case QUANT_IMPL_VNNI: return "avx512vnni";
    case QUANT_IMPL_AVX2: return "avx2";
    default: return "portable";
    }
}

typedef void (*simd_dot_fn)(ggml_type t, const void *w, const act_view *a, int r, int64_t n,
                            float *out);

static simd_dot_fn simd_kernel(void)
{
#ifdef QUANT_X86
    switch (active_impl()) {
    case QUANT_IMPL_VNNI: return vec_dot_vnni;
    case QUANT_IMPL_AVX2: return vec_dot_avx2;
    default: break;
    }
#endif
    return NULL;
}

float quant_vec_dot(ggml_type wtype, const void *wrow, const void *act, int64_t n)
{
    act_view a = act_view_of(wtype, act, n);
    simd_dot_fn k = simd_kernel();
    if (k) {
        float out;
        k(wtype, wrow, &a, 1, n, &out);
        return out;
    }
    return vec_dot_c(wtype, wrow, &a, n);
}

void quant_matmul(ggml_type wtype, const void *w, int64_t n_rows,
                  const void *act, int64_t m, int64_t n, float *out, int64_t ldo)
{
    size_t wstride = quant_row_size(wtype, n), astride = quant_act_row_size(wtype, n);
    const uint8_t *wp = w, *ap = act;
    simd_dot_fn kern = simd_kernel();
    /* Activation tiles of up to MAXR rows in the outer loop stay in L1
     * while weight rows stream past; each weight block is used MAXR times. */
    for (int64_t j0 = 0; j0 < m; j0 += 4) {
        int r = m - j0 < 4 ? (int)(m - j0) : 4;
        act_view av[4];
        for (int k = 0; k < r; k++)
            av[k] = act_view_of(wtype, ap + (size_t)(j0 + k) * astride, n);
        for (int64_t i = 0; i < n_rows; i++) {
            const uint8_t *wr = wp + (size_t)i * wstride;
            float res[4];
            if (kern) {
                kern(wtype, wr, av, r, n, res);
            } else {
                for (int k = 0; k < r; k++)
                    res[k] = vec_dot_c(wtype, wr, &av[k], n);
            }
            for (int k = 0; k < r; k++)
                out[(j0 + k) * ldo + i] = res[k];
        }
    }
}
