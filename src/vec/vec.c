/* vec — see vec.h. */
#include "vec/vec.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cpu.h"
#include "util/mem.h"

#if defined(__x86_64__) || defined(__i386__)
#define VEC_X86 1
#include <immintrin.h>
#endif

/* ---- quantisation ------------------------------------------------------ */

void vec_quantize(const float *x, int dim, int8_t *q, float *scale)
{
    float amax = 0;
    for (int i = 0; i < dim; i++) {
        float a = fabsf(x[i]);
        if (a > amax && isfinite(a))
            amax = a;
    }
    if (amax == 0) {
        memset(q, 0, (size_t)dim);
        *scale = 0;
        return;
    }
    float inv = 127.0f / amax;
    for (int i = 0; i < dim; i++) {
        float v = isfinite(x[i]) ? x[i] * inv : 0;
        long r = lrintf(v);
        q[i] = (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
    }
    *scale = amax / 127.0f;
}

/* ---- dot products ------------------------------------------------------ */

static int32_t dot_portable(const int8_t *a, const int8_t *b, int dim)
{
    int32_t s = 0;
    for (int i = 0; i < dim; i++)
        s += (int32_t)a[i] * (int32_t)b[i];
    return s;
}

/* out[r] = dot(q, rows + r * dim) for r < n. */
static void dots_portable(const int8_t *q, const uint8_t *qabs, const int8_t *rows, size_t n,
                          int dim, int32_t *out)
{
    (void)qabs;
    for (size_t r = 0; r < n; r++)
        out[r] = dot_portable(q, rows + r * (size_t)dim, dim);
}

#ifdef VEC_X86
__attribute__((target("avx2"))) static inline int32_t hsum_avx2(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* int8 x int8 through maddubs, which multiplies unsigned by signed bytes:
 * |q| * (v with q's sign) = q * v. Pairs sum to at most 2 * 127 * 127, so
 * the int16 step never saturates (components are never -128).
 *
 * Four rows a pass share the query's loads. The next pass's rows are
 * prefetched while this one computes: a scan of the daemon's resident
 * vectors (the tldr pages: 10 MB, more than the L3 of a Zen 1 CCX) waits
 * on memory, and the hardware prefetcher stops at each 4 KiB page; with
 * the prefetch a pass over 38,848 x 256 takes ~40% less CPU there. The
 * instruction mix is kept: on Zen 1 (256-bit ops split in two halves)
 * sign-extending to int16 and madd-ing measured no faster. */
__attribute__((target("avx2"))) static void dots_avx2(const int8_t *q, const uint8_t *qabs,
                                                      const int8_t *rows, size_t n, int dim,
                                                      int32_t *out)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const int full = dim / 32 * 32;
    const size_t pass = 4 * (size_t)dim;
    size_t r = 0;
    for (; r + 4 <= n; r += 4) {
        const int8_t *v0 = rows + r * (size_t)dim, *v1 = v0 + dim, *v2 = v1 + dim, *v3 = v2 + dim;
        if (r + 8 <= n)
            for (size_t off = 0; off < pass; off += 64)
                _mm_prefetch((const char *)v0 + pass + off, _MM_HINT_T0);
        __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
        for (int j = 0; j < full; j += 32) {
            __m256i qs = _mm256_loadu_si256((const __m256i *)(q + j));
            __m256i qa = _mm256_loadu_si256((const __m256i *)(qabs + j));
            __m256i x0 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(v0 + j)), qs);
            __m256i x1 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(v1 + j)), qs);
            __m256i x2 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(v2 + j)), qs);
            __m256i x3 = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(v3 + j)), qs);
            a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x0), ones));
            a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x1), ones));
            a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x2), ones));
            a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x3), ones));
        }
        out[r] = hsum_avx2(a0) + dot_portable(q + full, v0 + full, dim - full);
        out[r + 1] = hsum_avx2(a1) + dot_portable(q + full, v1 + full, dim - full);
        out[r + 2] = hsum_avx2(a2) + dot_portable(q + full, v2 + full, dim - full);
        out[r + 3] = hsum_avx2(a3) + dot_portable(q + full, v3 + full, dim - full);
    }
    for (; r < n; r++) {
        const int8_t *v = rows + r * (size_t)dim;
        __m256i a = _mm256_setzero_si256();
        for (int j = 0; j < full; j += 32) {
            __m256i qs = _mm256_loadu_si256((const __m256i *)(q + j));
            __m256i qa = _mm256_loadu_si256((const __m256i *)(qabs + j));
            __m256i x = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(v + j)), qs);
            a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_maddubs_epi16(qa, x), ones));
        }
        out[r] = hsum_avx2(a) + dot_portable(q + full, v + full, dim - full);
    }
}
#endif

typedef void (*dots_fn)(const int8_t *q, const uint8_t *qabs, const int8_t *rows, size_t n,
                        int dim, int32_t *out);

static _Atomic int force_portable;

void vec_force_portable(int on)
{
    force_portable = on;
}

static dots_fn pick_kernel(void)
{
#ifdef VEC_X86
    if (!force_portable) {
        if (cpu_simd() & CPU_AVX2)
            return dots_avx2;
    }
#endif
    return dots_portable;
}

const char *vec_impl_name(void)
{
    return pick_kernel() == dots_portable ? "portable" : "avx2";
}

int32_t vec_dot_i8(const int8_t *a, const int8_t *b, int dim)
{
    uint8_t abs_small[256];
    uint8_t *qabs = dim <= 256 ? abs_small : xmalloc((size_t)dim);
    for (int i = 0; i < dim; i++)
        qabs[i] = (uint8_t)(a[i] < 0 ? -a[i] : a[i]);
    int32_t out;
    pick_kernel()(a, qabs, b, 1, dim, &out);
    if (qabs != abs_small)
        free(qabs);
    return out;
}

/* ---- sketches ---------------------------------------------------------- */

/* A sketch codes a vector in two bits a component after a fixed random
 * rotation (random signs, then a Walsh-Hadamard transform over the next
 * power of two P >= dim, at least 64, zeros padded): the rotation spreads
 * every component's weight over all P, so two bits a component lose about
 * the same everywhere (the default model's vectors share a large mean
 * direction: sign bits of the raw components kept 0.97 of the exact top
 * 10 at 1M, two bits after the rotation 1.0; docs/performance.md, session
 * 35). Component i of the rotated row y is coded c_i = s_i (1 + 2 m_i):
 * s_i = +1 when y_i > 0 else -1, m_i = 1 when |y_i| >= 0.98 sigma (sigma:
 * y's root mean square; the 2-bit Lloyd-Max bound of a Gaussian), so c_i
 * is one of -3, -1, 1, 3. With the row's factor
 *     f = scale * |row|^2 / <y, c>
 * (RaBitQ's correction: the code's length and angle to y undone) the dot
 * product of the dequantised row with a query rotated the same way (z) is
 * about f <z, c> / P; the query's own positive constant ranks rows alike
 * and is left out.
 *
 * Layout, for a first stage that looks codes up 32 rows at a time
 * (FastScan): rows in blocks of SK_ROWS; components in pairs ("groups",
 * G = P / 2 of them), a group's two codes one nibble (bit 0 s, bit 1 m of
 * the first component, bits 2-3 the second's). A block is G / 2 runs of 32
 * bytes, run v byte j holding row j's nibble of group 2v (low) and of
 * group 2v + 1 (high), then the 32 rows' factors (float). A block past
 * the last row is padded with zero codes and factors. */
#define SK_ROWS 32

static int sketch_pad(int dim)
{
    int p = 64;
    while (p < dim)
        p *= 2;
    return p;
}

static size_t sketch_block_bytes(int dim)
{
    return (size_t)sketch_pad(dim) / 4 * SK_ROWS + SK_ROWS * sizeof(float);
}

size_t vec_sketch_size(size_t n, int dim)
{
    return (n + SK_ROWS - 1) / SK_ROWS * sketch_block_bytes(dim);
}

/* The rotation's fixed signs (a hash of the component), made once. */
static int8_t rot_signs[VEC_MAX_DIM];
static pthread_once_t rot_once = PTHREAD_ONCE_INIT;

static void rot_signs_make(void)
{
    for (int i = 0; i < VEC_MAX_DIM; i++) {
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull + 0x7F4A7C159E3779B9ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        rot_signs[i] = (z ^ (z >> 31)) & 1 ? -1 : 1;
    }
}

/* y[0..p) = H D x (unnormalised: |y|^2 = p |x|^2), in integers (|y_i| <=
 * p 127), so exact and the same on every CPU; the butterflies of one
 * stage are independent, so the compiler runs them in vector lanes. */
static void rotate(const int8_t *x, int dim, int32_t *y, int p)
{
    pthread_once(&rot_once, rot_signs_make);
    for (int i = 0; i < p; i++)
        y[i] = i < dim ? (int32_t)x[i] * rot_signs[i] : 0;
    for (int h = 1; h < p; h *= 2)
        for (int i = 0; i < p; i += 2 * h)
            for (int j = i; j < i + h; j++) {
                int32_t a = y[j], b = y[j + h];
                y[j] = a + b;
                y[j + h] = a - b;
            }
}

/* Row j of a block: its codes and factor. sigma^2 = |y|^2 / p = |x|^2
 * exactly (the rotation keeps lengths up to p), so the bar needs no pass
 * over y; every sum is of integers, exact. */
static void sketch_one(const int8_t *x, float scale, int dim, int32_t *y, int p, uint8_t *blk,
                       size_t j)
{
    rotate(x, dim, y, p);
    int64_t norm = 0, dot = 0;
    for (int i = 0; i < dim; i++)
        norm += (int64_t)x[i] * x[i];
    /* |y_i| >= 0.98 sigma, |y_i| an integer: the same as |y_i| >= bar,
     * bar = 0.98 sigma rounded up (by hand: ceil would bind libm at start) */
    double sigma98 = 0.98 * sqrt((double)norm);
    int64_t bar = (int64_t)sigma98;
    bar += (double)bar < sigma98;
    for (int v = 0; v < p / 4; v++) {   /* a run's byte: four components */
        unsigned byte = 0;
        for (int c = 0; c < 4; c++) {
            int32_t a = y[4 * v + c];
            int64_t mag = a < 0 ? -(int64_t)a : a;
            unsigned m = mag >= bar;
            byte |= ((unsigned)(a > 0) | m << 1) << (2 * c);
            dot += m ? 3 * mag : mag;   /* y_i c_i */
        }
        blk[(size_t)v * SK_ROWS + j] = (uint8_t)byte;
    }
    float f = dot > 0 ? (float)((double)norm / (double)dot * scale) : 0.0f;
    memcpy(blk + (size_t)p / 4 * SK_ROWS + j * sizeof f, &f, sizeof f);
}

void vec_sketch_rows(const int8_t *rows, const float *scale, size_t n, int dim, uint8_t *out)
{
    int p = sketch_pad(dim);
    size_t bb = sketch_block_bytes(dim);
    memset(out, 0, vec_sketch_size(n, dim));
    int32_t *y = xmalloc((size_t)p * sizeof *y);
    for (size_t r = 0; r < n; r++)
        sketch_one(rows + r * (size_t)dim, scale ? scale[r] : 1.0f, dim, y, p,
                   out + r / SK_ROWS * bb, r % SK_ROWS);
    free(y);
}

/* The query rotated (z = H D q) and rounded to 4 bits, z'_i in [-QC, QC],
 * and for each group a table of its 16 codes' <z', c> over its two
 * components plus SK_BIAS (0..2 SK_BIAS: a byte), each table twice (both
 * halves of a 256-bit register). A row's <z', c> is then the sum of its
 * groups' entries less G SK_BIAS, in integers. */
#define QC 7
#define SK_BIAS (2 * 3 * QC)

typedef struct qlut {
    uint8_t *lut;       /* G x 32 bytes */
    int groups;         /* G */
    size_t block;       /* sketch_block_bytes */
} qlut;

static void qlut_make(qlut *ql, const int8_t *q, int dim)
{
    int p = sketch_pad(dim);
    ql->groups = p / 2;
    ql->block = sketch_block_bytes(dim);
    free(ql->lut);
    ql->lut = xmalloc((size_t)ql->groups * 32);
    int32_t *z = xmalloc((size_t)p * sizeof *z);
    rotate(q, dim, z, p);
    float amax = 0;
    for (int i = 0; i < p; i++)
        amax = fabsf((float)z[i]) > amax ? fabsf((float)z[i]) : amax;
    for (int g = 0; g < ql->groups; g++) {
        int z0 = amax > 0 ? (int)lrintf((float)z[2 * g] * QC / amax) : 0;
        int z1 = amax > 0 ? (int)lrintf((float)z[2 * g + 1] * QC / amax) : 0;
        for (int code = 0; code < 16; code++) {
            int c0 = ((code & 1) ? 1 : -1) * ((code & 2) ? 3 : 1);
            int c1 = ((code & 4) ? 1 : -1) * ((code & 8) ? 3 : 1);
            uint8_t v = (uint8_t)(z0 * c0 + z1 * c1 + SK_BIAS);
            ql->lut[(size_t)g * 32 + code] = ql->lut[(size_t)g * 32 + 16 + code] = v;
        }
    }
    free(z);
}

/* sum[j] = the table sums of the 32 rows of one block. */
static void block_sums_portable(const qlut *ql, const uint8_t *blk, uint32_t *sum)
{
    for (int j = 0; j < SK_ROWS; j++) {
        uint32_t s = 0;
        for (int v = 0; v < ql->groups / 2; v++) {
            uint8_t x = blk[(size_t)v * SK_ROWS + (size_t)j];
            s += ql->lut[(size_t)(2 * v) * 32 + (x & 15)] + ql->lut[(size_t)(2 * v + 1) * 32 + (x >> 4)];
        }
        sum[j] = s;
    }
}

#ifdef VEC_X86
/* The same 32 rows at once: one shuffle looks up a group's entries for
 * every row. Two groups' entries (<= 2 SK_BIAS each) add in bytes, then
 * go to 16-bit sums (even rows in the low bytes, odd in the high), which
 * are folded into 32 bits every 256 runs (256 x 168 < 65,536). */
__attribute__((target("avx2"))) static void block_sums_avx2(const qlut *ql, const uint8_t *blk,
                                                            uint32_t *sum)
{
    const __m256i nib = _mm256_set1_epi8(0x0f), low = _mm256_set1_epi16(0x00ff);
    int runs = ql->groups / 2;
    for (int j = 0; j < SK_ROWS; j++)
        sum[j] = 0;
    for (int v0 = 0; v0 < runs; v0 += 256) {
        int v1 = v0 + 256 < runs ? v0 + 256 : runs;
        __m256i even = _mm256_setzero_si256(), odd = even;
        for (int v = v0; v < v1; v++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(blk + (size_t)v * SK_ROWS));
            __m256i lo = _mm256_and_si256(x, nib);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
            __m256i t0 = _mm256_loadu_si256((const __m256i *)(ql->lut + (size_t)(2 * v) * 32));
            __m256i t1 = _mm256_loadu_si256((const __m256i *)(ql->lut + (size_t)(2 * v + 1) * 32));
            __m256i r = _mm256_add_epi8(_mm256_shuffle_epi8(t0, lo), _mm256_shuffle_epi8(t1, hi));
            even = _mm256_add_epi16(even, _mm256_and_si256(r, low));
            odd = _mm256_add_epi16(odd, _mm256_srli_epi16(r, 8));
        }
        uint16_t e[16], o[16];
        _mm256_storeu_si256((__m256i *)e, even);
        _mm256_storeu_si256((__m256i *)o, odd);
        for (int w = 0; w < 16; w++) {
            sum[2 * w] += e[w];
            sum[2 * w + 1] += o[w];
        }
    }
}
#endif

typedef void (*block_sums_fn)(const qlut *ql, const uint8_t *blk, uint32_t *sum);

static block_sums_fn pick_block_sums(void)
{
#ifdef VEC_X86
    if (!force_portable && (cpu_simd() & CPU_AVX2))
        return block_sums_avx2;
#endif
    return block_sums_portable;
}

/* out[i] = the estimate of row i of a block's sketch sk, for i in [lo, hi):
 * f (G SK_BIAS less the row's sum negated: <z', c>). */
static void estimate_rows(const qlut *ql, block_sums_fn fn, const uint8_t *sk, size_t lo,
                          size_t hi, float *out)
{
    uint32_t sum[SK_ROWS];
    int32_t bias = ql->groups * SK_BIAS;
    for (size_t k = lo / SK_ROWS; k * SK_ROWS < hi; k++) {
        const uint8_t *blk = sk + k * ql->block;
        fn(ql, blk, sum);
        const uint8_t *fs = blk + (size_t)ql->groups / 2 * SK_ROWS;
        size_t a = k * SK_ROWS < lo ? lo : k * SK_ROWS;
        size_t b = (k + 1) * SK_ROWS < hi ? (k + 1) * SK_ROWS : hi;
        for (size_t i = a; i < b; i++) {
            float f;
            memcpy(&f, fs + (i % SK_ROWS) * sizeof f, sizeof f);
            out[i] = f * (float)((int32_t)sum[i % SK_ROWS] - bias);
        }
    }
}

/* ---- top-k by note ----------------------------------------------------- */

/* "a ranks below b": lower score, then higher note id. */
static int hit_below(const vec_hit *a, const vec_hit *b)
{
    return a->score < b->score || (a->score == b->score && a->doc_id > b->doc_id);
}

/* Per-thread state. With k > 0 a buffer of hits that may be among the k
 * best notes: once it is full it is compacted (one entry per note, the k
 * best kept), and the worst of those k is the bar a later hit must clear
 * (k notes at least that good were seen, so the final k-th is no worse).
 * A heap kept the k best instead: each of its thousands of replacements
 * sifted through ~10 levels, and a chunk of a kept note had to find its
 * entry; here a hit that clears the bar is one store, and a compaction
 * costs a few passes over the buffer. With k = 0 every note, in a table
 * keyed by note id. */
typedef struct part {
    vec_hit *h;
    size_t n, cap;
    size_t *slots;        /* index + 1, open addressing on doc_id */
    size_t n_slots;
    vec_hit bar;          /* k > 0 and has_bar: the worst of k notes kept */
    int has_bar;
    int32_t *dots;        /* scratch for one run of dot products */
    float *scores;        /* and their scores */
    int8_t *rows;         /* a window of a block read on demand */
} part;

struct vec_topk {
    size_t k;
    int dim;
    int8_t *q;
    uint8_t *qabs;
    float qscale;
    vec_filter f;
    int threads;
    pool *pool;               /* parts run on its workers (vec_topk_use_pool); NULL: threads
                                 started per scan */
    dots_fn kern;
    part *parts;
    vec_hit *results;
    _Atomic int failed;   /* a block's read failed */
    /* two-stage (vec_topk_two_stage): the candidates wanted, the query's
     * planes, and per scan stage one's estimate of every sketched row */
    size_t n_cand, min_rows;
    qlut ql;
    block_sums_fn sums;
    float *est_of;        /* stage one's estimate of every row */
    size_t est_cap;
    float bar;               /* stage two scores the rows whose estimate reaches it */
};

#define DOTS_RUN 256

static size_t slot_of(int64_t doc_id, size_t n_slots)
{
    return (size_t)((uint64_t)doc_id * 0x9E3779B97F4A7C15ull) & (n_slots - 1);
}

/* A better chunk of a note already kept replaces its entry; equal scores
 * keep the lower chunk id so results do not depend on scan order. */
static void improve(vec_hit *e, const vec_hit *x)
{
    if (x->score > e->score)
        *e = *x;
    else if (x->score == e->score && x->chunk_id < e->chunk_id)
        e->chunk_id = x->chunk_id;
}

static void hit_swap(vec_hit *h, size_t a, size_t b)
{
    vec_hit t = h[a];
    h[a] = h[b];
    h[b] = t;
}

/* Reorder h[0..n) (one entry per note: a strict order) so that h[0..m)
 * are the m best, in no particular order; m < n. Quickselect, the pivot
 * the median of three. */
static void select_best(vec_hit *h, size_t n, size_t m)
{
    size_t lo = 0, hi = n;   /* h[0..lo) beat h[lo..n); h[0..hi) beat h[hi..n) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2, last = hi - 1;
        if (hit_below(&h[mid], &h[lo]) == 0)
            hit_swap(h, mid, lo);          /* h[lo] the better of the two */
        if (hit_below(&h[last], &h[lo]) == 0)
            hit_swap(h, last, lo);         /* h[lo] the best of three */
        if (hit_below(&h[last], &h[mid]) == 0)
            hit_swap(h, last, mid);        /* h[mid] the median */
        hit_swap(h, mid, last);            /* the pivot at the end */
        size_t at = lo;
        for (size_t i = lo; i < last; i++)
            if (hit_below(&h[last], &h[i]))
                hit_swap(h, i, at++);
        hit_swap(h, at, last);             /* h[lo..at) beat the pivot at h[at] */
        if (at == m)
            return;
        if (at < m)
            lo = at + 1;
        else
            hi = at;
    }
}

/* One entry per note (improve), then the k best of them, the worst of
 * which becomes the bar once there are k. */
static void compact(part *p, size_t k)
{
    size_t ns = 16;
    while (ns < 2 * p->n)
        ns *= 2;
    if (ns > p->n_slots) {
        free(p->slots);
        p->slots = xmalloc(ns * sizeof *p->slots);
        p->n_slots = ns;
    }
    ns = p->n_slots;
    memset(p->slots, 0, ns * sizeof *p->slots);
    size_t w = 0;
    for (size_t i = 0; i < p->n; i++) {
        size_t s = slot_of(p->h[i].doc_id, ns);
        while (p->slots[s] && p->h[p->slots[s] - 1].doc_id != p->h[i].doc_id)
            s = (s + 1) & (ns - 1);
        if (p->slots[s]) {
            improve(&p->h[p->slots[s] - 1], &p->h[i]);
        } else {
            p->h[w] = p->h[i];
            p->slots[s] = ++w;
        }
    }
    p->n = w;
    if (p->n < k)
        return;
    if (p->n > k)
        select_best(p->h, p->n, k);
    p->n = k;
    size_t worst = 0;
    for (size_t i = 1; i < k; i++)
        if (hit_below(&p->h[i], &p->h[worst]))
            worst = i;
    p->bar = p->h[worst];
    p->has_bar = 1;
}

/* A hit that may be among the k best notes: kept for the next compaction. */
static void buffer_offer(part *p, size_t k, const vec_hit *x)
{
    if (p->has_bar && hit_below(x, &p->bar))
        return;
    p->h[p->n++] = *x;   /* part_ready made room */
    if (p->n == p->cap)
        compact(p, k);
}

static void table_offer(part *p, const vec_hit *x)
{
    if (p->n_slots == 0 || p->n * 2 >= p->n_slots) {
        size_t ns = p->n_slots ? p->n_slots * 2 : 1024;
        free(p->slots);
        p->slots = xcalloc(ns, sizeof *p->slots);
        p->n_slots = ns;
        for (size_t i = 0; i < p->n; i++) {
            size_t s = slot_of(p->h[i].doc_id, ns);
            while (p->slots[s])
                s = (s + 1) & (ns - 1);
            p->slots[s] = i + 1;
        }
    }
    size_t s = slot_of(x->doc_id, p->n_slots);
    while (p->slots[s]) {
        vec_hit *e = &p->h[p->slots[s] - 1];
        if (e->doc_id == x->doc_id) {
            improve(e, x);
            return;
        }
        s = (s + 1) & (p->n_slots - 1);
    }
    xgrow(&p->h, &p->cap, p->n + 1, sizeof *p->h);
    p->h[p->n] = *x;
    p->slots[s] = ++p->n;
}

static int entry_allowed(const vec_topk *t, const vec_block *b, size_t i)
{
    if (b->dead && (b->dead[i >> 3] >> (i & 7) & 1))
        return 0;
    if (t->f.doc_allow) {
        int64_t d = b->doc_id[i];
        if (d < 0 || d >= t->f.n_doc_allow || !(t->f.doc_allow[d >> 3] >> (d & 7) & 1))
            return 0;
    }
    if (t->f.chunk_allow) {
        int64_t c = b->chunk_id[i];
        if (c < 0 || c >= t->f.n_chunk_allow || !(t->f.chunk_allow[c >> 3] >> (c & 7) & 1))
            return 0;
    }
    return 1;
}

/* Scan entries [from, to) of a block into one part; rows holds the vectors
 * of entries [base, to). Runs of allowed entries go through the kernel
 * together. A score below the heap's minimum is dropped before the entry's
 * ids are read (most entries, once the heap is full). */
static void scan_rows(vec_topk *t, part *p, const vec_block *b, const int8_t *rows, size_t base,
                      size_t from, size_t to)
{
    size_t i = from;
    while (i < to) {
        while (i < to && !entry_allowed(t, b, i))
            i++;
        size_t j = i;
        while (j < to && j - i < DOTS_RUN && entry_allowed(t, b, j))
            j++;
        if (j == i)
            break;
        size_t n = j - i;
        t->kern(t->q, t->qabs, rows + (i - base) * (size_t)t->dim, n, t->dim, p->dots);
        /* the run's scores first, in a loop the compiler vectorises (the
         * same two float products, so the same bits), then the few that
         * clear the bars */
        const float *scale = b->scale + i;
        for (size_t r = 0; r < n; r++)
            p->scores[r] = (float)p->dots[r] * t->qscale * scale[r];
        for (size_t r = 0; r < n; r++) {
            float score = p->scores[r];
            if (!(score >= t->f.min_score) || (p->has_bar && score < p->bar.score))
                continue;
            vec_hit x = {b->doc_id[i + r], b->chunk_id[i + r], score};
            if (t->k)
                buffer_offer(p, t->k, &x);
            else
                table_offer(p, &x);
        }
        i = j;
    }
}

/* Rows of a window read on demand: ~64 KiB, which stays in L2 while it is
 * scanned (the copy out of the page cache costs less than the page-table
 * set-up and TLB misses of mapping the file in every cold process). Each
 * of its pages is a fresh page a cold process faults in once: 256 KiB per
 * thread cost ~130 of a cold hybrid search's ~930 page faults, 64 KiB ~34,
 * for 4x the reads (~160 for the tldr pages' 10 MB, ~2 µs each). */
static size_t window_rows(int dim)
{
    size_t w = ((size_t)64 << 10) / (size_t)dim;
    return w < 64 ? 64 : w;
}

static void scan_range(vec_topk *t, part *p, const vec_block *b, size_t from, size_t to)
{
    if (b->data) {
        scan_rows(t, p, b, b->data, 0, from, to);
        return;
    }
    size_t w = window_rows(t->dim);
    for (size_t at = from; at < to && !t->failed; at += w) {
        size_t n = to - at < w ? to - at : w;
        if (!b->read || b->read(b->read_ctx, at, n, p->rows) != 0) {
            t->failed = 1;
            return;
        }
        scan_rows(t, p, b, p->rows, at, at, at + n);
    }
}

vec_topk *vec_topk_new(size_t k, int dim, const int8_t *query, float query_scale,
                       const vec_filter *filter, int threads)
{
    vec_topk *t = xcalloc(1, sizeof *t);
    t->k = k;
    t->dim = dim;
    t->q = xmalloc((size_t)dim);
    t->qabs = xmalloc((size_t)dim);
    memcpy(t->q, query, (size_t)dim);
    for (int i = 0; i < dim; i++)
        t->qabs[i] = (uint8_t)(query[i] < 0 ? -query[i] : query[i]);
    t->qscale = query_scale;
    if (filter)
        t->f = *filter;
    else
        t->f.min_score = -INFINITY;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    t->threads = threads > 16 ? 16 : threads;
    t->kern = pick_kernel();
    t->parts = xcalloc((size_t)t->threads, sizeof *t->parts);
    for (int i = 0; i < t->threads; i++) {
        t->parts[i].dots = xmalloc(DOTS_RUN * sizeof(int32_t));
        t->parts[i].scores = xmalloc(DOTS_RUN * sizeof(float));
    }
    return t;
}

/* A share of a scan: rows [from, to) of the blocks taken end to end, each
 * block's part of it handed to `each` (lo, hi: rows of that block; base:
 * the block's first row in the whole). */
typedef struct job job;
struct job {
    vec_topk *t;
    part *p;
    const vec_block *const *b;
    size_t nb;
    size_t from, to;
    void (*each)(job *j, const vec_block *b, size_t base, size_t lo, size_t hi);
};

static void *run_job(void *arg)
{
    job *j = arg;
    size_t base = 0;
    for (size_t i = 0; i < j->nb && base < j->to; i++) {
        size_t n = j->b[i]->n;
        size_t lo = j->from > base ? j->from - base : 0;
        size_t hi = j->to - base < n ? j->to - base : n;
        if (lo < hi)
            j->each(j, j->b[i], base, lo, hi);
        base += n;
    }
    return NULL;
}

static void run_pool_job(void *arg)
{
    run_job(arg);
}

/* Run jobs[0..nt): the first on this thread, the others on the pool's
 * workers or threads started for them. */
static void run_jobs(vec_topk *t, job *jobs, int nt)
{
    if (nt <= 1) {
        run_job(&jobs[0]);
        return;
    }
    if (t->pool) {
        pool_job pj[16];
        for (int i = 1; i < nt; i++)
            pool_submit(t->pool, &pj[i], run_pool_job, &jobs[i]);
        run_job(&jobs[0]);
        for (int i = 1; i < nt; i++)
            pool_wait(t->pool, &pj[i]);
        return;
    }
    pthread_t tid[16];
    int started[16] = {0};
    for (int i = 1; i < nt; i++)
        started[i] = pthread_create(&tid[i], NULL, run_job, &jobs[i]) == 0;
    run_job(&jobs[0]);
    for (int i = 1; i < nt; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            run_job(&jobs[i]);  /* no thread to be had: do it here */
    }
}

static void exact_each(job *j, const vec_block *b, size_t base, size_t lo, size_t hi)
{
    (void)base;
    scan_range(j->t, j->p, b, lo, hi);
}

/* What a part needs, allocated by the calling thread: a worker that calls
 * malloc gets an arena of its own (a 64 MiB reservation, trimmed, and
 * fresh pages) in every process that scans. */
static void part_ready(vec_topk *t, part *p, int reads)
{
    if (reads && !p->rows)
        p->rows = xmalloc(window_rows(t->dim) * (size_t)t->dim);
    if (t->k && !p->h) {
        /* k more (256 to 65,536): a compaction every k or more hits, at
         * most ~1.1 x k of memory beyond the k entries a heap took */
        size_t extra = t->k < 256 ? 256 : t->k > 65536 ? 65536 : t->k;
        p->cap = t->k + extra;
        p->h = xmalloc(p->cap * sizeof *p->h);
        size_t ns = 16;
        while (ns < 2 * p->cap)
            ns *= 2;
        p->slots = xmalloc(ns * sizeof *p->slots);   /* compact's table */
        p->n_slots = ns;
    }
}

/* Below this many bytes of vectors a scan runs on the calling thread:
 * starting a thread costs about as much as scanning ~100 KiB. */
#define PARALLEL_MIN_BYTES (1u << 20)

/* Split rows [0, rows) of b into one job per thread (as many as `bytes`
 * of work warrant), each with `each`; returns how many. */
static int plan_jobs(vec_topk *t, const vec_block *const *b, size_t nb, size_t rows,
                     size_t bytes, int reads,
                     void (*each)(job *, const vec_block *, size_t, size_t, size_t), job *jobs)
{
    int nt = t->threads;
    if (nt > 1 && bytes / (size_t)nt < PARALLEL_MIN_BYTES / 2)
        nt = (int)(bytes / (PARALLEL_MIN_BYTES / 2));
    if (nt < 1)
        nt = 1;
    size_t per = (rows + (size_t)nt - 1) / (size_t)nt;
    for (int i = 0; i < nt; i++) {
        size_t from = (size_t)i * per, to = from + per > rows ? rows : from + per;
        jobs[i] = (job){t, &t->parts[i], b, nb, from < rows ? from : rows, to, each};
        part_ready(t, &t->parts[i], reads);
    }
    return nt;
}

static void scan_exact(vec_topk *t, const vec_block *const *b, size_t nb)
{
    size_t rows = 0;
    int reads = 0;
    for (size_t i = 0; i < nb; i++) {
        rows += b[i]->n;
        reads |= !b[i]->data;
    }
    job jobs[16];
    int nt = plan_jobs(t, b, nb, rows, rows * (size_t)t->dim, reads, exact_each, jobs);
    run_jobs(t, jobs, nt);
}

/* Stage one: the estimate of every row of [lo, hi) (vec_sketch_rows; -inf
 * for a row the filters or the dead bitmap leave out). */
static void sketch_each(job *j, const vec_block *b, size_t base, size_t lo, size_t hi)
{
    vec_topk *t = j->t;
    float *e = t->est_of + base;
    estimate_rows(&t->ql, t->sums, b->sketch, lo, hi, e);
    if (b->dead || t->f.doc_allow || t->f.chunk_allow)
        for (size_t i = lo; i < hi; i++)
            if (!entry_allowed(t, b, i))
                e[i] = -INFINITY;
}

/* Stage two: rows of [lo, hi) whose estimate reaches the bar scored
 * exactly; a block read on demand (a cold search's sidecar) gives each
 * such row by one read. */
static void rescore_each(job *j, const vec_block *b, size_t base, size_t lo, size_t hi)
{
    vec_topk *t = j->t;
    part *p = j->p;
    const float *e = t->est_of + base;
    for (size_t i = lo; i < hi && !t->failed; i++) {
        if (!(e[i] >= t->bar))
            continue;
        const int8_t *row = b->data ? b->data + i * (size_t)t->dim : p->rows;
        if (!b->data && (!b->read || b->read(b->read_ctx, i, 1, p->rows) != 0)) {
            t->failed = 1;
            return;
        }
        int32_t dot;
        t->kern(t->q, t->qabs, row, 1, t->dim, &dot);
        float score = (float)dot * t->qscale * b->scale[i];
        if (!(score >= t->f.min_score) || (p->has_bar && score < p->bar.score))
            continue;
        vec_hit x = {b->doc_id[i], b->chunk_id[i], score};
        buffer_offer(p, t->k, &x);
    }
}

/* The bar of stage two: an estimate that about n_cand of the rows' reach,
 * from a sample of them (every stride-th row, so that ~1,000 sampled rows
 * lie above it; the same rows however the scan was split), binned
 * between the sample's least and greatest estimate, with 1/8 more rows
 * than n_cand asked for against the sample's error. */
#define EST_BINS 4096

static float stage_two_bar(const float *e, size_t rows, size_t n_cand)
{
    size_t stride = n_cand / 1024 ? n_cand / 1024 : 1;
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < rows; i += stride)
        if (e[i] != -INFINITY) {
            lo = e[i] < lo ? e[i] : lo;
            hi = e[i] > hi ? e[i] : hi;
        }
    if (!(lo < hi))
        return -FLT_MAX;   /* every row the filters allow */
    float inv = (float)EST_BINS / (hi - lo);
    uint32_t *hist = xcalloc(EST_BINS, sizeof *hist);
    for (size_t i = 0; i < rows; i += stride)
        if (e[i] != -INFINITY) {
            float x = (e[i] - lo) * inv;
            hist[x >= EST_BINS - 1 ? EST_BINS - 1 : (unsigned)x]++;
        }
    size_t want = (n_cand + n_cand / 8 + stride - 1) / stride, seen = 0;
    float bar = -FLT_MAX;   /* the sample short of want: every row */
    for (size_t d = EST_BINS; d-- > 1;) {
        seen += hist[d];
        if (seen >= want) {
            bar = lo + (float)d / inv;
            break;
        }
    }
    free(hist);
    return bar;
}

/* The two stages over blocks that all carry sketches: every row's
 * estimate, then the rows that reach the bar (stage_two_bar) scored
 * exactly. */
static void scan_two_stage(vec_topk *t, const vec_block *const *b, size_t nb)
{
    size_t rows = 0;
    int reads = 0;
    for (size_t i = 0; i < nb; i++) {
        rows += b[i]->n;
        reads |= !b[i]->data;
    }
    if (rows <= t->n_cand || rows < t->min_rows) {   /* small: every row scored */
        scan_exact(t, b, nb);
        return;
    }
    if (rows > t->est_cap) {
        free(t->est_of);
        t->est_of = xmalloc(rows * sizeof *t->est_of);
        t->est_cap = rows;
    }
    job jobs[16];
    int nt = plan_jobs(t, b, nb, rows, rows * (size_t)t->ql.groups, reads, sketch_each, jobs);
    run_jobs(t, jobs, nt);
    t->bar = stage_two_bar(t->est_of, rows, t->n_cand);
    for (int i = 0; i < nt; i++)
        jobs[i].each = rescore_each;
    run_jobs(t, jobs, nt);
}

void vec_topk_scan_all(vec_topk *t, const vec_block *const *b, size_t nb)
{
    size_t n_sk = 0;
    if (t->n_cand && t->k)
        for (size_t i = 0; i < nb; i++)
            n_sk += b[i]->sketch != NULL;
    if (n_sk == 0) {
        scan_exact(t, b, nb);
        return;
    }
    /* the sketched blocks in two stages, the others exactly */
    const vec_block **sk = xmalloc(nb * sizeof *sk), **ex = xmalloc(nb * sizeof *ex);
    size_t n_ex = 0;
    n_sk = 0;
    for (size_t i = 0; i < nb; i++) {
        if (b[i]->sketch)
            sk[n_sk++] = b[i];
        else
            ex[n_ex++] = b[i];
    }
    if (n_ex)
        scan_exact(t, ex, n_ex);
    scan_two_stage(t, sk, n_sk);
    free(sk);
    free(ex);
}

size_t vec_topk_two_stage_rows(const vec_topk *t)
{
    return t->n_cand && t->k ? t->min_rows : SIZE_MAX;
}

void vec_topk_two_stage(vec_topk *t, size_t n_cand, size_t min_rows)
{
    t->n_cand = n_cand;
    t->min_rows = min_rows;
    if (!n_cand)
        return;
    qlut_make(&t->ql, t->q, t->dim);
    t->sums = pick_block_sums();
}

void vec_topk_use_pool(vec_topk *t, pool *p)
{
    t->pool = p;
}

void vec_topk_scan(vec_topk *t, const vec_block *b)
{
    vec_topk_scan_all(t, &b, 1);
}

int vec_topk_failed(const vec_topk *t)
{
    return t->failed;
}

/* h[0..n) best first (one entry per note: a strict order, so any sort
 * gives the same array). A merge sort with the comparison inlined: qsort's
 * call per comparison cost ~0.15 ms for the channel's 2 x 600 hits. */
static void sort_best_first(vec_hit *h, vec_hit *tmp, size_t n)
{
    if (n < 2)
        return;
    if (n <= 16) {   /* insertion sort */
        for (size_t i = 1; i < n; i++) {
            vec_hit x = h[i];
            size_t j = i;
            for (; j > 0 && hit_below(&h[j - 1], &x); j--)
                h[j] = h[j - 1];
            h[j] = x;
        }
        return;
    }
    size_t half = n / 2;
    sort_best_first(h, tmp, half);
    sort_best_first(h + half, tmp, n - half);
    memcpy(tmp, h, half * sizeof *h);
    size_t i = 0, j = half, o = 0;
    while (i < half && j < n)
        h[o++] = hit_below(&tmp[i], &h[j]) ? h[j++] : tmp[i++];
    while (i < half)
        h[o++] = tmp[i++];
}

const vec_hit *vec_topk_results(vec_topk *t, size_t *n)
{
    /* Merge the parts: a note's score is its best over every part. Each
     * part kept every hit that may be the best of one of its k best notes,
     * which always include the notes of the global k best (a note beaten
     * by k others in one part is beaten by at least as many overall). */
    part all = {0};
    if (t->k) {
        for (int i = 0; i < t->threads; i++)
            all.n += t->parts[i].n;
        all.h = xmalloc((all.n ? all.n : 1) * sizeof *all.h);
        all.n = 0;
        for (int i = 0; i < t->threads; i++) {
            if (!t->parts[i].n)
                continue;   /* a part no thread used has no buffer */
            memcpy(all.h + all.n, t->parts[i].h, t->parts[i].n * sizeof *all.h);
            all.n += t->parts[i].n;
        }
        compact(&all, t->k);
    } else {
        for (int i = 0; i < t->threads; i++)
            for (size_t j = 0; j < t->parts[i].n; j++)
                table_offer(&all, &t->parts[i].h[j]);
    }
    vec_hit *tmp = xmalloc((all.n / 2 + 1) * sizeof *tmp);
    sort_best_first(all.h, tmp, all.n);
    free(tmp);
    free(t->results);
    t->results = all.h;
    free(all.slots);
    *n = all.n;
    return t->results;
}

void vec_topk_free(vec_topk *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->threads; i++) {
        free(t->parts[i].h);
        free(t->parts[i].slots);
        free(t->parts[i].dots);
        free(t->parts[i].scores);
        free(t->parts[i].rows);
    }
    free(t->est_of);
    free(t->ql.lut);
    free(t->parts);
    free(t->results);
    free(t->q);
    free(t->qabs);
    free(t);
}
