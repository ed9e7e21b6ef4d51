/* kernels — see kernels.h. */

/* Let gcc turn float clamps and selects into SIMD min/max/blend: nothing in
 * this file produces or tests NaN/Inf on purpose (masked attention entries
 * are zeroed, not -inf), and it enables no reassociation, so results stay
 * bit-reproducible. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("finite-math-only", "no-signed-zeros")
#endif

#include "embed/kernels/kernels.h"

#include "embed/kernels/blas.h"
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "util/cpu.h"
#include "util/mem.h"

/* Hot element-wise loops get AVX-512 and AVX2 clones, the baseline build
 * being plain x86-64 (SSE2). The loops are written so that vectorising them
 * reorders nothing (fixed lanes, no reassociation, and ISO C mode leaves
 * fp-contract off), so every clone computes the same floats as the
 * baseline. Each loop is written once as NAME_body (KERN_BODY, inlined into
 * each clone, which compiles it for its instruction set); KERN_CLONES then
 * defines the clones and NAME, which picks one on its first call (util/cpu).
 * Not gcc's target_clones: its ifunc resolvers run at every process start,
 * and their libgcc CPU probe is a dozen cpuid instructions, each a trap to
 * the hypervisor on a virtual machine (30-45 us apiece on the 2-core
 * development VM), although most commands never embed anything. */
#define KERN_BODY static inline __attribute__((always_inline))
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define KERN_CLONES(linkage, name, params, args)                                      \
    __attribute__((target("avx512f"))) static void name##_avx512 params             \
    {                                                                                \
        name##_body args;                                                            \
    }                                                                                \
    __attribute__((target("avx2"))) static void name##_avx2 params                  \
    {                                                                                \
        name##_body args;                                                            \
    }                                                                                \
    static void name##_base params                                                   \
    {                                                                                \
        name##_body args;                                                            \
    }                                                                                \
    linkage void name params                                                         \
    {                                                                                \
        typedef void name##_fn params;                                               \
        static name##_fn *_Atomic pick;                                              \
        name##_fn *f = atomic_load_explicit(&pick, memory_order_relaxed);            \
        if (!f) {                                                                    \
            unsigned simd = cpu_simd();                                              \
            f = simd & CPU_AVX512F ? name##_avx512 : simd & CPU_AVX2 ? name##_avx2   \
                                                                     : name##_base;  \
            atomic_store_explicit(&pick, f, memory_order_relaxed);                   \
        }                                                                            \
        f args;                                                                      \
    }
#else
#define KERN_CLONES(linkage, name, params, args)                                      \
    linkage void name params                                                         \
    {                                                                                \
        name##_body args;                                                            \
    }
#endif

/* Output columns (weight rows) per matmul task. Fixed, so the partition of
 * every product is independent of the thread count. 64 keeps two threads
 * busy even on 384-wide layers. */
#define KERN_NB 64
/* Rows per task for row-wise operations. */
#define KERN_RB 32
/* Products with at least 2 * mb rows are split by rows (blocks of mb =
 * KERN_MB, or KERN_MB / 2 below 4 * KERN_MB rows so a 256-token passage
 * still makes two tasks) instead of
 * columns, so each task packs only its own activations. */
#define KERN_MB 256
/* Below this many elements a row-wise operation runs on the calling thread:
 * waking the pool costs more than the work. */
#define KERN_SMALL (1 << 15)

/* ------------------------------------------------------------------ */
/* thread pool                                                         */

struct kpool {
    int n;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t cv_start, cv_done;
    uint64_t gen;
    int quit;
    int pending; /* worker threads still inside the current job */
    kpool_fn fn;
    void *ctx;
    int n_tasks;
    atomic_int next;
    void **scratch;
    size_t *scratch_cap;
};

typedef struct kworker {
    kpool *p;
    int tid;
} kworker;

static void pool_drain(kpool *p, int tid)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n_tasks)
            break;
        p->fn(p->ctx, t, tid);
    }
}

static void *pool_main(void *arg)
{
    kworker *w = arg;
    kpool *p = w->p;
    int tid = w->tid;
    uint64_t seen = 0;
    free(w);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->gen == seen && !p->quit)
            pthread_cond_wait(&p->cv_start, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        pool_drain(p, tid);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->cv_done);
        pthread_mutex_unlock(&p->mu);
    }
}

kpool *kpool_new(int n_threads)
{
    kpool *p = xcalloc(1, sizeof *p);
    p->n = n_threads < 1 ? 1 : n_threads;
    /* All parallelism is ours; OpenBLAS runs single-threaded inside tasks.
     * Load it now so the setting sticks (a load failure is reported by
     * embed_open, which loads it first). */
    (void)blas_load();
    blas_set_threads(1);
    p->scratch = xcalloc((size_t)p->n, sizeof *p->scratch);
    p->scratch_cap = xcalloc((size_t)p->n, sizeof *p->scratch_cap);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_start, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    atomic_init(&p->next, 0);
    p->th = xcalloc((size_t)p->n, sizeof *p->th);
    for (int i = 1; i < p->n; i++) {
        kworker *w = xmalloc(sizeof *w);
        w->p = p;
        w->tid = i;
        if (pthread_create(&p->th[i], NULL, pool_main, w) != 0) {
            /* Run with the threads we got. */
            free(w);
            p->n = i;
            break;
        }
    }
    return p;
}

void kpool_free(kpool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    for (int i = 0; i < p->n; i++)
        free(p->scratch[i]);
    free(p->scratch);
    free(p->scratch_cap);
    free(p->th);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_start);
    pthread_cond_destroy(&p->cv_done);
    free(p);
}

int kpool_threads(const kpool *p)
{
    return p->n;
}

void kpool_run(kpool *p, int n_tasks, kpool_fn fn, void *ctx)
{
    if (n_tasks <= 0)
        return;
    if (p->n == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++)
            fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->cv_start);
    pthread_mutex_unlock(&p->mu);
    pool_drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void *kpool_scratch(kpool *p, int tid, size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes == 0)
        bytes = 64;
    if (p->scratch_cap[tid] < bytes) {
        free(p->scratch[tid]);
        p->scratch[tid] = aligned_alloc(64, bytes);
        if (!p->scratch[tid])
            p->scratch[tid] = xmalloc(bytes); /* xmalloc aborts cleanly on OOM */
        p->scratch_cap[tid] = bytes;
    }
    return p->scratch[tid];
}

/* ------------------------------------------------------------------ */
/* matrix product                                                      */

static atomic_int quant_path;

void kern_set_quant_path(kern_quant_path path)
{
    atomic_store(&quant_path, (int)path);
}

typedef struct linear_job {
    const kmat *w;
    const float *bias;
    const float *X;
    int64_t ldx, T;
    float *Y;
    int64_t ldy;
    kpool *p;
    const uint8_t *act; /* prepared activations (int8 path) */
    float *wf;          /* the weights as f32 (row-block path: non-f32 types
                           row-major for sgemm; every float type packed for gm) */
    int gm;             /* float weights through gm_gemm (AVX-512/AVX2) */
    size_t act_row;
    size_t w_row;
} linear_job;

KERN_BODY void linear_bias_body(const linear_job *j, int64_t o0, int64_t nb)
{
    if (!j->bias)
        return;
    for (int64_t t = 0; t < j->T; t++) {
        float *y = j->Y + t * j->ldy + o0;
        for (int64_t o = 0; o < nb; o++)
            y[o] += j->bias[o0 + o];
    }
}
KERN_CLONES(static, linear_bias, (const linear_job *j, int64_t o0, int64_t nb), (j, o0, nb))

/* ------------------------------------------------------------------ */
/* float products on AVX-512 or AVX2: trove's own kernel              */

static atomic_int gemm_blas_only;

void kern_set_gemm_blas(int on)
{
    atomic_store(&gemm_blas_only, on != 0);
}

/* Products of float weights (F32, F16, BF16) with many rows run here on
 * CPUs with AVX-512 or AVX2 + FMA instead of sgemm: OpenBLAS's speed depends on
 * which kernels it picked (by CPU model when it loaded, or by
 * OPENBLAS_CORETYPE: its Haswell kernels run at half the rate of its
 * AVX-512 ones on the development EPYC), and F16/BF16 weights had to be
 * converted to row-major f32 before sgemm could read them.
 *
 * The weights are packed per product into panels of GM_C = 32 output
 * columns, k-major (panel p, element k: 32 consecutive floats, zero past
 * n_out), converted from F16/BF16 on the way; the product runs in blocks
 * of GM_KC k-steps, and per block and panel over tiles of GM_R = 8 rows
 * (AVX-512: 16 zmm accumulators; AVX2: 6 rows x 16 columns, 12 ymm), each
 * output element one fixed sequence of fused
 * multiply-adds over k = 0 .. n_in - 1 (a k-block continues the sums of the
 * one before it), so the result depends only on the shape, never on the
 * thread count or the blocking. Memory: the packed matrix (n_in x n_out
 * rounded up to 32, as f32) in the calling thread's scratch, per product. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define KERN_GEMM 1
#include <immintrin.h>

#define GM_R 8
#define GM_C 32
#define GM_KC 256
/* Fewer rows than this stay on sgemm on the column path: packing a
 * column block costs as much as 1/T of its product. */
#define KERN_GM_MIN_ROWS 16

/* A tile function: y rows r < R (stride ldy), columns c < C of the panel
 * at P (stride GM_C per k): (first ? 0 : y) + sum over k < kc of
 * x[r * ldx + k] * P[k * GM_C + c], each sum one chain of fused
 * multiply-adds in k order. */
typedef void gm_tile_fn(const float *x, int64_t ldx, const float *P, int64_t kc, float *y,
                        int64_t ldy, int first);

/* AVX-512: 8 rows x 32 columns (16 zmm accumulators). */
__attribute__((target("avx512f"))) static void gm_tile(const float *x, int64_t ldx,
                                                         const float *P, int64_t kc, float *y,
                                                         int64_t ldy, int first)
{
    __m512 a0[GM_R], a1[GM_R];
    _Pragma("GCC unroll 8") for (int r = 0; r < GM_R; r++) {
        a0[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + r * ldy);
        a1[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + r * ldy + 16);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m512 w0 = _mm512_load_ps(P + k * GM_C), w1 = _mm512_load_ps(P + k * GM_C + 16);
        _Pragma("GCC unroll 8") for (int r = 0; r < GM_R; r++) {
            __m512 xv = _mm512_set1_ps(x[r * ldx + k]);
            a0[r] = _mm512_fmadd_ps(xv, w0, a0[r]);
            a1[r] = _mm512_fmadd_ps(xv, w1, a1[r]);
        }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < GM_R; r++) {
        _mm512_storeu_ps(y + r * ldy, a0[r]);
        _mm512_storeu_ps(y + r * ldy + 16, a1[r]);
    }
}

/* AVX2 + FMA: 6 rows x 16 columns (half a panel; 12 ymm accumulators, two
 * panel loads and six broadcasts per k-step, the register file's 16). The
 * same chains as gm_tile, so the same bits: an AVX2 and an AVX-512 CPU
 * give identical products. */
#define GM_R2 6
#define GM_C2 16
/* Half a panel's k-block uses every other 64-byte line (panels are 128
 * bytes per k-step), so 256 k-steps of it fill half the sets of a 32 KB
 * 8-way L1 (Zen 1's) completely, and the x rows evict it; 128 leave room. */
#define GM_KC2 128
__attribute__((target("avx2,fma"))) static void gm_tile_avx2(const float *x, int64_t ldx,
                                                               const float *P, int64_t kc,
                                                               float *y, int64_t ldy, int first)
{
    __m256 a0[GM_R2], a1[GM_R2];
    _Pragma("GCC unroll 6") for (int r = 0; r < GM_R2; r++) {
        a0[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy);
        a1[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(y + r * ldy + 8);
    }
    for (int64_t k = 0; k < kc; k++) {
        __m256 w0 = _mm256_load_ps(P + k * GM_C), w1 = _mm256_load_ps(P + k * GM_C + 8);
        _Pragma("GCC unroll 6") for (int r = 0; r < GM_R2; r++) {
            __m256 xv = _mm256_broadcast_ss(x + r * ldx + k);
            a0[r] = _mm256_fmadd_ps(xv, w0, a0[r]);
            a1[r] = _mm256_fmadd_ps(xv, w1, a1[r]);
        }
    }
    _Pragma("GCC unroll 6") for (int r = 0; r < GM_R2; r++) {
        _mm256_storeu_ps(y + r * ldy, a0[r]);
        _mm256_storeu_ps(y + r * ldy + 8, a1[r]);
    }
}

/* The tile this CPU runs (NULL: none, sgemm) and its shape. */
typedef struct gm_kind {
    gm_tile_fn *tile;
    int rows, cols;
    int kc; /* k-steps per block (<= GM_KC): the blocking never changes a
               sum (each block continues the chains of the one before) */
} gm_kind;

/* Y[t, c0 + c] = sum_k X[t, k] * W[c0 + c, k] for t < T, c < nc, from the
 * packed panels Wp (panel 0 = columns c0 .. c0 + 31, K = n_in), in tiles
 * of g->rows x g->cols. Edge tiles (fewer rows or columns) go through a
 * local block with zero rows: the same sums for the real elements. */
static void gm_gemm_with(const gm_kind *g, const float *X, int64_t ldx, int64_t T,
                         const float *Wp, int64_t K, int64_t nc, float *Y, int64_t ldy)
{
    float xb[GM_R * GM_KC] __attribute__((aligned(64)));
    float yb[GM_R * GM_C] __attribute__((aligned(64)));
    int64_t R = g->rows, C = g->cols, KC = g->kc;
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        int64_t kc = K - k0 < KC ? K - k0 : KC;
        int first = k0 == 0;
        for (int64_t c0 = 0; c0 < nc; c0 += C) {
            /* column c0 is column c0 % GM_C of panel c0 / GM_C */
            const float *P = Wp + (c0 - c0 % GM_C) * K + k0 * GM_C + c0 % GM_C;
            int64_t ncc = nc - c0 < C ? nc - c0 : C;
            for (int64_t t0 = 0; t0 < T; t0 += R) {
                int64_t nr = T - t0 < R ? T - t0 : R;
                float *y = Y + t0 * ldy + c0;
                if (nr == R && ncc == C) {
                    g->tile(X + t0 * ldx + k0, ldx, P, kc, y, ldy, first);
                    continue;
                }
                /* only what the tile reads: the rows past nr as zeros
                 * (clearing all 9 KB per edge tile was 2% of a MiniLM pass
                 * on AVX2: attention's products are one short k-block
                 * of mostly edge tiles) */
                memset(xb + nr * kc, 0, (size_t)((R - nr) * kc) * sizeof(float));
                if (!first)
                    memset(yb, 0, (size_t)(R * C) * sizeof(float));
                for (int64_t r = 0; r < nr; r++) {
                    memcpy(xb + r * kc, X + (t0 + r) * ldx + k0, (size_t)kc * sizeof(float));
                    if (!first)
                        memcpy(yb + r * C, y + r * ldy, (size_t)ncc * sizeof(float));
                }
                g->tile(xb, kc, P, kc, yb, C, first);
                for (int64_t r = 0; r < nr; r++)
                    memcpy(y + r * ldy, yb + r * C, (size_t)ncc * sizeof(float));
            }
        }
    }
}

/* Pack weight rows [o0, o0 + 32) of w (zeros past n_out) into panel P
 * (K x 32 floats). */
static void gm_pack_panel(const kmat *w, size_t w_row, int64_t o0, float *P)
{
    int64_t K = w->n_in;
    float buf[GM_KC];
    for (int64_t c = 0; c < GM_C; c++) {
        int64_t o = o0 + c;
        if (o >= w->n_out) {
            for (int64_t k = 0; k < K; k++)
                P[k * GM_C + c] = 0.0f;
            continue;
        }
        const uint8_t *src = (const uint8_t *)w->data + (size_t)o * w_row;
        for (int64_t k0 = 0; k0 < K; k0 += GM_KC) {
            int64_t kc = K - k0 < GM_KC ? K - k0 : GM_KC;
            /* GM_KC is a multiple of Q8_0's 32-element blocks */
            quant_dequantize_row(w->type, src + quant_row_size(w->type, k0), buf, kc);
            for (int64_t k = 0; k < kc; k++)
                P[(k0 + k) * GM_C + c] = buf[k];
        }
    }
}

/* Panels of f32 rows: P[k * 32 + c] = A[o0 + c][k] (zero past n_out), for
 * every panel of n_out rows of K (stride lda). */
static void gm_pack_rows(const float *A, int64_t lda, int64_t n_out, int64_t K, float *P)
{
    for (int64_t o0 = 0; o0 < n_out; o0 += GM_C, P += GM_C * K)
        for (int64_t c = 0; c < GM_C; c++) {
            const float *a = o0 + c < n_out ? A + (o0 + c) * lda : NULL;
            for (int64_t k = 0; k < K; k++)
                P[k * GM_C + c] = a ? a[k] : 0.0f;
        }
}

/* Panels of columns: P[k * 32 + c] = B[k][o0 + c] (zero past n_out), B
 * being K rows of n_out (stride ldb). */
static void gm_pack_cols(const float *B, int64_t ldb, int64_t K, int64_t n_out, float *P)
{
    for (int64_t o0 = 0; o0 < n_out; o0 += GM_C, P += GM_C * K) {
        int64_t nc = n_out - o0 < GM_C ? n_out - o0 : GM_C;
        for (int64_t k = 0; k < K; k++) {
            memcpy(P + k * GM_C, B + k * ldb + o0, (size_t)nc * sizeof(float));
            for (int64_t c = nc; c < GM_C; c++)
                P[k * GM_C + c] = 0.0f;
        }
    }
}

/* The float kernel's tile on this CPU: AVX-512's, else AVX2 + FMA's, else
 * none (sgemm). */
static const gm_kind *gm_pick(void)
{
    static const gm_kind k512 = {gm_tile, GM_R, GM_C, GM_KC},
                         k2 = {gm_tile_avx2, GM_R2, GM_C2, GM_KC2}, none = {NULL, 0, 0, 0};
    static const gm_kind *_Atomic pick;
    const gm_kind *g = atomic_load_explicit(&pick, memory_order_relaxed);
    if (!g) {
        unsigned simd = cpu_simd();
        g = simd & CPU_AVX512F                      ? &k512
            : (simd & (CPU_AVX2 | CPU_FMA)) == (CPU_AVX2 | CPU_FMA) ? &k2
                                                    : &none;
        atomic_store_explicit(&pick, g, memory_order_relaxed);
    }
    return g;
}

static int gm_cpu(void)
{
    return gm_pick()->tile && !atomic_load(&gemm_blas_only);
}

static void gm_gemm(const float *X, int64_t ldx, int64_t T, const float *Wp, int64_t K,
                    int64_t nc, float *Y, int64_t ldy)
{
    gm_gemm_with(gm_pick(), X, ldx, T, Wp, K, nc, Y, ldy);
}

/* Q8_0 on a CPU with AVX2 and no VNNI (quant_impl_active() is AVX2):
 * there the int8 products are bound by the one integer-multiply pipe
 * (Zen 1: vpmaddubsw and the vpmaddwd that widens its pair sums both run
 * on it, as two halves; 26-27 GFLOP per CPU-second against the float
 * tile's 30-31, and no way found to widen off that pipe for less, see
 * docs/performance.md, session 33), so Q8_0 weights are dequantised into
 * the float kernel's panels per product, like F16 (exact: d * q fits an
 * f32), and the activations stay f32: different numbers from the int8
 * path (closer to F32's), in products of KERN_Q8_FLOAT_MIN_ROWS rows or
 * more (q8_float_rows; fewer rows keep the q8pack). */
static bool gm_q8_float(ggml_type type)
{
    /* not on AVX-512 CPUs without VNNI: measured only on Zen 1 */
    return type == GGML_TYPE_Q8_0 && quant_impl_active() == QUANT_IMPL_AVX2 &&
           !(cpu_simd() & CPU_AVX512F) && gm_cpu();
}

static int gm_ok(const kmat *w)
{
    return gm_cpu() && (w->type == GGML_TYPE_F32 || w->type == GGML_TYPE_F16 ||
                        w->type == GGML_TYPE_BF16 || gm_q8_float(w->type));
}

static void gm_pack_task(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    (void)tid;
    int64_t o0 = (int64_t)task * GM_C;
    gm_pack_panel(j->w, j->w_row, o0, j->wf + o0 * j->w->n_in);
}
#endif

/* Q8_0 products of at least this many rows go through the float kernel
 * (gm_q8_float); smaller ones stay on the packed int8 kernels. Converting
 * the whole matrix into panels costs about as much as the product of a
 * few hundred rows saves (MiniLM-shaped Q8_0 at 16 rows: one 221-token
 * passage took 221-268 ms CPU int8, 325-349 float, the pack built either
 * way): so a text embedded alone and in a large batch no longer gets the
 * same bits on such a CPU (cosine 0.9997), which only encoders allow
 * (kmat.float_rows_ok: a decoder's prefix cache must match its whole pass). */
#define KERN_Q8_FLOAT_MIN_ROWS 512

static bool q8_float_rows(const kmat *w, int64_t T)
{
#ifdef KERN_GEMM
    return w->float_rows_ok && T >= KERN_Q8_FLOAT_MIN_ROWS && gm_q8_float(w->type);
#else
    (void)w;
    (void)T;
    return false;
#endif
}

static void linear_task_float(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    const kmat *w = j->w;
    int64_t o0 = (int64_t)task * KERN_NB;
    int64_t nb = w->n_out - o0 < KERN_NB ? w->n_out - o0 : KERN_NB;
#ifdef KERN_GEMM
    if (j->gm) {
        float *P = kpool_scratch(j->p, tid, (size_t)(KERN_NB * w->n_in) * sizeof(float));
        for (int64_t c = 0; c < nb; c += GM_C)
            gm_pack_panel(w, j->w_row, o0 + c, P + c * w->n_in);
        gm_gemm(j->X, j->ldx, j->T, P, w->n_in, nb, j->Y + o0, j->ldy);
        linear_bias(j, o0, nb);
        return;
    }
#endif
    const float *B;
    if (w->type == GGML_TYPE_F32) {
        B = (const float *)w->data + o0 * w->n_in;
    } else {
        float *tmp = kpool_scratch(j->p, tid, (size_t)(nb * w->n_in) * sizeof(float));
        const uint8_t *src = (const uint8_t *)w->data + (size_t)o0 * j->w_row;
        for (int64_t o = 0; o < nb; o++)
            quant_dequantize_row(w->type, src + (size_t)o * j->w_row, tmp + o * w->n_in, w->n_in);
        B = tmp;
    }
    blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)j->T, (blasint)nb,
                (blasint)w->n_in, 1.0f, j->X, (blasint)j->ldx, B, (blasint)w->n_in, 0.0f,
                j->Y + o0, (blasint)j->ldy);
    linear_bias(j, o0, nb);
}

/* Every row block packs (and dequantises) the whole weight matrix: for
 * matrices of at least this many elements (4 MB as f32, beyond the L2
 * caches: a 0.6B decoder's projections) that costs a quarter of the
 * product at KERN_MB rows (measured, Qwen3-0.6B shape), so their large
 * batches use twice as many rows per block. */
#define KERN_BIG_W (1 << 20)

static int64_t row_block(int64_t T, const kmat *w)
{
    if (T >= 4 * KERN_MB && w->n_in * w->n_out >= KERN_BIG_W)
        return 2 * KERN_MB;
    return T >= 4 * KERN_MB ? KERN_MB : KERN_MB / 2;
}

/* Weight rows [o0, o0 + KERN_NB) as f32 into the shared j->wf, before
 * the row tasks of a product of a non-f32 matrix. */
static void dequant_task(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    const kmat *w = j->w;
    (void)tid;
    int64_t o0 = (int64_t)task * KERN_NB;
    int64_t o1 = o0 + KERN_NB < w->n_out ? o0 + KERN_NB : w->n_out;
    for (int64_t o = o0; o < o1; o++)
        quant_dequantize_row(w->type, (const uint8_t *)w->data + (size_t)o * j->w_row,
                             j->wf + o * w->n_in, w->n_in);
}

/* Rows [t0, t0 + nt) of the product, all columns (large batches). */
static void linear_task_rows(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    const kmat *w = j->w;
    int64_t mb = row_block(j->T, w);
    int64_t t0 = (int64_t)task * mb;
    int64_t nt = j->T - t0 < mb ? j->T - t0 : mb;
    (void)tid;
    float *Y = j->Y + t0 * j->ldy;
#ifdef KERN_GEMM
    if (j->gm)
        gm_gemm(j->X + t0 * j->ldx, j->ldx, nt, j->wf, w->n_in, w->n_out, Y, j->ldy);
    else
#endif
        blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)nt, (blasint)w->n_out,
                   (blasint)w->n_in, 1.0f, j->X + t0 * j->ldx, (blasint)j->ldx,
                   w->type == GGML_TYPE_F32 ? w->data : j->wf, (blasint)w->n_in, 0.0f, Y,
                   (blasint)j->ldy);
    if (j->bias)
        for (int64_t t = 0; t < nt; t++)
            for (int64_t o = 0; o < w->n_out; o++)
                Y[t * j->ldy + o] += j->bias[o];
}

static void act_task(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    (void)tid;
    int64_t t0 = (int64_t)task * KERN_RB;
    int64_t t1 = t0 + KERN_RB < j->T ? t0 + KERN_RB : j->T;
    for (int64_t t = t0; t < t1; t++)
        quant_quantize_act(j->w->type, j->X + t * j->ldx, (void *)(j->act + (size_t)t * j->act_row),
                           j->w->n_in);
}

static void act_task_pack(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    (void)tid;
    int64_t t0 = (int64_t)task * KERN_RB;
    int64_t nt = j->T - t0 < KERN_RB ? j->T - t0 : KERN_RB;
    q8pack_quantize_act(j->X + t0 * j->ldx, j->ldx, t0, nt, j->w->n_in, (void *)j->act);
}

/* Output columns per task of a packed product. Each task streams every
 * activation row through the cache once (q8pack_matmul keeps a tile of
 * them while the task's weight groups pass): on one thread, one task for
 * the whole product, so that happens once, not n_out / KERN_NB times
 * (3-5% of a 384 -> 1536 Q8_0 product on Zen 1); the same sums either way. */
static int64_t pack_task_cols(const kpool *p, const kmat *w)
{
    return kpool_threads(p) == 1 ? w->n_out : KERN_NB;
}

static void linear_task_pack(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    const kmat *w = j->w;
    (void)tid;
    int64_t cols = pack_task_cols(j->p, w);
    int64_t o0 = (int64_t)task * cols;
    int64_t nb = w->n_out - o0 < cols ? w->n_out - o0 : cols;
    q8pack_matmul(w->pack, o0, nb, j->act, j->T, j->bias, j->Y, j->ldy);
}

static void linear_task_quant(void *ctx, int task, int tid)
{
    const linear_job *j = ctx;
    const kmat *w = j->w;
    (void)tid;
    int64_t o0 = (int64_t)task * KERN_NB;
    int64_t nb = w->n_out - o0 < KERN_NB ? w->n_out - o0 : KERN_NB;
    quant_matmul(w->type, (const uint8_t *)w->data + (size_t)o0 * j->w_row, nb, j->act, j->T,
                 w->n_in, j->Y + o0, j->ldy);
    linear_bias(j, o0, nb);
}

/* Prepared-activation buffer shared by all tasks of one product: kept in a
 * static per-pool slot would complicate ownership, so it lives in the
 * calling thread's scratch (tid 0 is the caller; int8 tasks use no other
 * scratch). */
static void linear_run(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                       int64_t T, float *Y, int64_t ldy, int64_t T_path);

void kern_linear(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                 int64_t T, float *Y, int64_t ldy)
{
    kern_linear_like(p, w, bias, X, ldx, T, Y, ldy, T);
}

void kern_linear_like(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                      int64_t T, float *Y, int64_t ldy, int64_t T_path)
{
    if (!kprof_on()) {
        linear_run(p, w, bias, X, ldx, T, Y, ldy, T_path);
        return;
    }
    double t0 = kprof_now_ms();
    linear_run(p, w, bias, X, ldx, T, Y, ldy, T_path);
    kprof_add(KPROF_LINEAR, kprof_now_ms() - t0, 2.0 * (double)T * (double)w->n_in * (double)w->n_out);
}

bool kern_linear_rows_exact(const kmat *w, int64_t T_path)
{
    int path = atomic_load(&quant_path);
    bool is_float = w->type == GGML_TYPE_F32 || w->type == GGML_TYPE_F16 ||
                    w->type == GGML_TYPE_BF16 ||
                    (path == KERN_QUANT_AUTO && q8_float_rows(w, T_path));
    if (w->pack && path == KERN_QUANT_AUTO && !is_float)
        return true; /* q8pack: exact int32 sums, one float chain per row */
    if (is_float) {
#ifdef KERN_GEMM
        return T_path >= KERN_GM_MIN_ROWS && gm_ok(w); /* one fma chain per output */
#else
        return false;
#endif
    }
    /* int8 row by row, or dequantised + sgemm (blocking by the row count) */
    return path == KERN_QUANT_INT8 || (path == KERN_QUANT_AUTO && T_path <= KERN_INT8_MAX_ROWS);
}

/* T_path: the row count that picks the path (kern_linear_like). */
static void linear_run(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                       int64_t T, float *Y, int64_t ldy, int64_t T_path)
{
    if (T <= 0 || w->n_out <= 0)
        return;
    linear_job j = {
        .w = w, .bias = bias, .X = X, .ldx = ldx, .T = T, .Y = Y, .ldy = ldy, .p = p,
        .w_row = quant_row_size(w->type, w->n_in),
    };
    int n_tasks = (int)((w->n_out + KERN_NB - 1) / KERN_NB);
    int path = atomic_load(&quant_path);
    bool is_float = w->type == GGML_TYPE_F32 || w->type == GGML_TYPE_F16 ||
                    w->type == GGML_TYPE_BF16 ||
                    (path == KERN_QUANT_AUTO && q8_float_rows(w, T_path));
    if (w->pack && path == KERN_QUANT_AUTO && !is_float) {
        /* KERN_NB is a multiple of Q8PACK_NR and n_out of both */
        /* KERN_RB (rows per quantisation task) is a multiple of 8 */
        j.act = kpool_scratch(p, 0, q8pack_act_size(w->n_in, T));
        kpool_run(p, (int)((T + KERN_RB - 1) / KERN_RB), act_task_pack, &j);
        int64_t cols = pack_task_cols(p, w);
        kpool_run(p, (int)((w->n_out + cols - 1) / cols), linear_task_pack, &j);
        return;
    }
    bool int8 = path == KERN_QUANT_INT8 || (path == KERN_QUANT_AUTO && T_path <= KERN_INT8_MAX_ROWS);
    if (is_float || !int8) {
        int64_t mb = row_block(T, w);
        if (T >= 2 * mb) {
            /* Non-f32 weights are converted once per product, shared by
             * the row blocks (each used to convert the whole matrix:
             * T / mb times the work, a fifth of an F16 MiniLM pass). The
             * buffer is the caller's scratch: row tasks use none. */
#ifdef KERN_GEMM
            j.gm = gm_ok(w);
            if (j.gm) {
                int64_t np = (w->n_out + GM_C - 1) / GM_C;
                j.wf = kpool_scratch(p, 0, (size_t)(np * GM_C * w->n_in) * sizeof(float));
                kpool_run(p, (int)np, gm_pack_task, &j);
            } else
#endif
            if (w->type != GGML_TYPE_F32) {
                j.wf = kpool_scratch(p, 0, (size_t)(w->n_out * w->n_in) * sizeof(float));
                kpool_run(p, n_tasks, dequant_task, &j);
            }
            kpool_run(p, (int)((T + mb - 1) / mb), linear_task_rows, &j);
        } else {
#ifdef KERN_GEMM
            j.gm = T_path >= KERN_GM_MIN_ROWS && gm_ok(w);
#endif
            kpool_run(p, n_tasks, linear_task_float, &j);
        }
        return;
    }
    j.act_row = quant_act_row_size(w->type, w->n_in);
    j.act = kpool_scratch(p, 0, j.act_row * (size_t)T);
    kpool_run(p, (int)((T + KERN_RB - 1) / KERN_RB), act_task, &j);
    kpool_run(p, n_tasks, linear_task_quant, &j);
}

/* Several packed products of one input: the activations are quantised
 * once, and the products' column tasks run in one pool round. */
typedef struct linear_n_job {
    linear_job j[KERN_LINEAR_N_MAX];
    int first[KERN_LINEAR_N_MAX + 1]; /* first task of each product */
    int n;
} linear_n_job;

static void linear_n_task(void *ctx, int task, int tid)
{
    const linear_n_job *nj = ctx;
    int i = 0;
    while (task >= nj->first[i + 1])
        i++;
    linear_task_pack((void *)&nj->j[i], task - nj->first[i], tid);
}

void kern_linear_n(kpool *p, int n, const kmat *const *w, const float *const *bias,
                   const float *X, int64_t ldx, int64_t T, float *const *Y, const int64_t *ldy)
{
    bool packed = n >= 1 && n <= KERN_LINEAR_N_MAX && T > 0 &&
                  atomic_load(&quant_path) == KERN_QUANT_AUTO;
    for (int i = 0; i < n && packed; i++)
        packed = w[i]->pack && !q8_float_rows(w[i], T) && w[i]->n_in == w[0]->n_in &&
                 w[i]->n_out > 0;
    if (!packed) {
        for (int i = 0; i < n; i++)
            kern_linear(p, w[i], bias ? bias[i] : NULL, X, ldx, T, Y[i], ldy[i]);
        return;
    }
    double t0 = kprof_on() ? kprof_now_ms() : 0, flop = 0;
    linear_n_job nj = {.n = n};
    const uint8_t *act = kpool_scratch(p, 0, q8pack_act_size(w[0]->n_in, T));
    nj.first[0] = 0;
    for (int i = 0; i < n; i++) {
        nj.j[i] = (linear_job){.w = w[i], .bias = bias ? bias[i] : NULL, .X = X, .ldx = ldx,
                               .T = T, .Y = Y[i], .ldy = ldy[i], .p = p, .act = act};
        int64_t cols = pack_task_cols(p, w[i]);
        nj.first[i + 1] = nj.first[i] + (int)((w[i]->n_out + cols - 1) / cols);
        flop += 2.0 * (double)T * (double)w[i]->n_in * (double)w[i]->n_out;
    }
    kpool_run(p, (int)((T + KERN_RB - 1) / KERN_RB), act_task_pack, &nj.j[0]);
    kpool_run(p, nj.first[n], linear_n_task, &nj);
    if (kprof_on())
        kprof_add(KPROF_LINEAR, kprof_now_ms() - t0, flop);
}

/* ------------------------------------------------------------------ */
/* row-wise operations                                                 */

typedef struct rows_job {
    float *x;
    const float *y;
    int64_t rows, n, ld, ldy;
    const float *w, *b;
    float eps;
    void (*row)(const struct rows_job *j, float *x, const float *y);
} rows_job;

static void rows_task(void *ctx, int task, int tid)
{
    const rows_job *j = ctx;
    (void)tid;
    int64_t r0 = (int64_t)task * KERN_RB;
    int64_t r1 = r0 + KERN_RB < j->rows ? r0 + KERN_RB : j->rows;
    for (int64_t r = r0; r < r1; r++)
        j->row(j, j->x + r * j->ld, j->y ? j->y + r * j->ldy : NULL);
}

static void rows_run(kpool *p, rows_job *j)
{
    int n_tasks = (int)((j->rows + KERN_RB - 1) / KERN_RB);
    if (j->rows * j->n < KERN_SMALL) {
        for (int t = 0; t < n_tasks; t++)
            rows_task(j, t, 0);
        return;
    }
    kpool_run(p, n_tasks, rows_task, j);
}

/* Sums of a row in double precision, in 8 lanes combined in a fixed order:
 * a single running double sum cannot be vectorised (that would reorder
 * it) and ran at one add per 4 cycles, 3% of a Qwen3 pass in RMSNorm
 * alone. The lanes make the order fixed and vectorisable; the result
 * depends only on n, never on threads or the clone picked. */
static inline __attribute__((always_inline)) double lane_sum(const float *x, int64_t n, double c,
                                                             int squares)
{
    double s8[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) {
            double d = (double)x[i + l] - c;
            s8[l] += squares ? d * d : d;
        }
    double s = 0;
    for (int l = 0; l < 8; l++)
        s += s8[l];
    for (; i < n; i++) {
        double d = (double)x[i] - c;
        s += squares ? d * d : d;
    }
    return s;
}

KERN_BODY void layernorm_row_body(const rows_job *j, float *x, const float *y)
{
    (void)y;
    double mean = lane_sum(x, j->n, 0.0, 0) / (double)j->n;
    double var = lane_sum(x, j->n, mean, 1) / (double)j->n;
    float inv = (float)(1.0 / sqrt(var + j->eps));
    float m = (float)mean;
    for (int64_t i = 0; i < j->n; i++) {
        float v = (x[i] - m) * inv;
        if (j->w)
            v *= j->w[i];
        if (j->b)
            v += j->b[i];
        x[i] = v;
    }
}
KERN_CLONES(static, layernorm_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_layernorm(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld, const float *w,
                    const float *b, float eps)
{
    rows_job j = {.x = x, .rows = rows, .n = n, .ld = ld, .w = w, .b = b, .eps = eps,
                  .row = layernorm_row};
    rows_run(p, &j);
}

KERN_BODY void rmsnorm_row_body(const rows_job *j, float *x, const float *y)
{
    (void)y;
    double ss = lane_sum(x, j->n, 0.0, 1);
    float inv = (float)(1.0 / sqrt(ss / (double)j->n + j->eps));
    if (j->w)
        for (int64_t i = 0; i < j->n; i++)
            x[i] = x[i] * inv * j->w[i];
    else
        for (int64_t i = 0; i < j->n; i++)
            x[i] = x[i] * inv;
}
KERN_CLONES(static, rmsnorm_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_rmsnorm(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld, const float *w,
                  float eps)
{
    rows_job j = {.x = x, .rows = rows, .n = n, .ld = ld, .w = w, .eps = eps, .row = rmsnorm_row};
    rows_run(p, &j);
}

KERN_BODY void add_row_body(const rows_job *j, float *x, const float *y)
{
    for (int64_t i = 0; i < j->n; i++)
        x[i] += y[i];
}
KERN_CLONES(static, add_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_add(kpool *p, float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,
              int64_t n)
{
    rows_job j = {.x = x, .y = y, .rows = rows, .n = n, .ld = ldx, .ldy = ldy, .row = add_row};
    rows_run(p, &j);
}

/* Vectorisable elementary functions. libm's expf/erff/tanhf are scalar
 * calls and were a quarter of the run time; these are plain arithmetic that
 * gcc turns into SIMD, accurate to a few float ulps (exp: relative 2e-7;
 * erf: absolute 1.5e-7, Abramowitz & Stegun 7.1.26), far inside the
 * engine's 1e-4 tolerance. They are deterministic like everything here. */
static inline __attribute__((always_inline)) float fexp(float x)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: float add rounds to an integer */
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504088896341f + magic;
    /* unsigned: NaN input (corrupt weights) must give garbage, not UB */
    union { float f; uint32_t i; } u = {.f = t}, m = {.f = magic}, sc;
    uint32_t n = u.i - m.i;
    float fn = t - magic;
    float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f +
                                       r * (8.3333338e-3f + r * 1.3888889e-3f)))));
    sc.i = (n + 127u) << 23;
    return p * sc.f;
}

static inline __attribute__((always_inline)) float ferf(float x)
{
    float a = fabsf(x);
    float t = 1.0f / (1.0f + 0.3275911f * a);
    float y = 1.0f - (((((1.061405429f * t - 1.453152027f) * t) + 1.421413741f) * t -
                       0.284496736f) * t + 0.254829592f) * t * fexp(-a * a);
    return copysignf(y, x);
}

static inline __attribute__((always_inline)) float ftanh(float x)
{
    x = x < -9.0f ? -9.0f : x > 9.0f ? 9.0f : x;
    return 1.0f - 2.0f / (fexp(2.0f * x) + 1.0f);
}

KERN_BODY void gelu_erf_row_body(const rows_job *j, float *x, const float *y)
{
    (void)y;
    for (int64_t i = 0; i < j->n; i++)
        x[i] = 0.5f * x[i] * (1.0f + ferf(x[i] * 0.70710678118654752f));
}
KERN_CLONES(static, gelu_erf_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_gelu_erf(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld)
{
    rows_job j = {.x = x, .rows = rows, .n = n, .ld = ld, .row = gelu_erf_row};
    rows_run(p, &j);
}

KERN_BODY void gelu_tanh_mul_row_body(const rows_job *j, float *x, const float *y)
{
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (int64_t i = 0; i < j->n; i++) {
        float v = x[i];
        x[i] = 0.5f * v * (1.0f + ftanh(c * (v + 0.044715f * v * v * v))) * y[i];
    }
}
KERN_CLONES(static, gelu_tanh_mul_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_gelu_tanh_mul(kpool *p, float *gate, int64_t ldg, const float *up, int64_t ldu,
                        int64_t rows, int64_t n)
{
    rows_job j = {.x = gate, .y = up, .rows = rows, .n = n, .ld = ldg, .ldy = ldu,
                  .row = gelu_tanh_mul_row};
    rows_run(p, &j);
}

KERN_BODY void silu_mul_row_body(const rows_job *j, float *x, const float *y)
{
    for (int64_t i = 0; i < j->n; i++)
        x[i] = x[i] / (1.0f + fexp(-x[i])) * y[i];
}
KERN_CLONES(static, silu_mul_row, (const rows_job *j, float *x, const float *y), (j, x, y))

void kern_silu_mul(kpool *p, float *gate, int64_t ldg, const float *up, int64_t ldu,
                   int64_t rows, int64_t n)
{
    rows_job j = {.x = gate, .y = up, .rows = rows, .n = n, .ld = ldg, .ldy = ldu,
                  .row = silu_mul_row};
    rows_run(p, &j);
}

void kern_tanh(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = ftanh(x[i]);
}

void kern_scale(float *x, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++)
        x[i] *= s;
}

/* Max and sum use 8 independent lanes combined in a fixed order, so gcc
 * can vectorise them without reassociating anything. */
KERN_BODY void kern_softmax_body(float *x, int64_t n)
{
    if (n <= 0)
        return;
    float mx8[8], s8[8];
    for (int l = 0; l < 8; l++) {
        mx8[l] = x[0];
        s8[l] = 0.0f;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            mx8[l] = x[i + l] > mx8[l] ? x[i + l] : mx8[l];
    float mx = mx8[0];
    for (int l = 1; l < 8; l++)
        mx = mx8[l] > mx ? mx8[l] : mx;
    for (; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (i = 0; i < n; i++)
        x[i] = fexp(x[i] - mx);
    for (i = 0; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s8[l] += x[i + l];
    double sum = 0;
    for (int l = 0; l < 8; l++)
        sum += s8[l];
    for (; i < n; i++)
        sum += x[i];
    float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++)
        x[i] *= inv;
}
KERN_CLONES(, kern_softmax, (float *x, int64_t n), (x, n))

/* ------------------------------------------------------------------ */
/* RoPE                                                                */

void kern_rope_table(float *tab, int64_t len, int64_t d, double base)
{
    int64_t h = d / 2;
    for (int64_t pos = 0; pos < len; pos++) {
        float *row = tab + pos * d;
        for (int64_t i = 0; i < h; i++) {
            double theta = (double)pos * pow(base, -2.0 * (double)i / (double)d);
            row[i] = (float)cos(theta);
            row[h + i] = (float)sin(theta);
        }
    }
}

typedef struct rope_job {
    float *x;
    int64_t rows, ld, n_heads, d;
    const int32_t *pos;
    const float *tab;
} rope_job;

KERN_BODY void rope_task_body(void *ctx, int task, int tid)
{
    const rope_job *j = ctx;
    (void)tid;
    int64_t h = j->d / 2;
    int64_t r0 = (int64_t)task * KERN_RB;
    int64_t r1 = r0 + KERN_RB < j->rows ? r0 + KERN_RB : j->rows;
    for (int64_t r = r0; r < r1; r++) {
        const float *cs = j->tab + (int64_t)j->pos[r] * j->d;
        for (int64_t hd = 0; hd < j->n_heads; hd++) {
            float *v = j->x + r * j->ld + hd * j->d;
            for (int64_t i = 0; i < h; i++) {
                float x0 = v[i], x1 = v[h + i];
                float c = cs[i], s = cs[h + i];
                v[i] = x0 * c - x1 * s;
                v[h + i] = x0 * s + x1 * c;
            }
        }
    }
}
KERN_CLONES(static, rope_task, (void *ctx, int task, int tid), (ctx, task, tid))

void kern_rope_neox(kpool *p, float *x, int64_t rows, int64_t ld, int64_t n_heads, int64_t d,
                    const int32_t *pos, const float *tab)
{
    rope_job j = {.x = x, .rows = rows, .ld = ld, .n_heads = n_heads, .d = d, .pos = pos,
                  .tab = tab};
    int n_tasks = (int)((rows + KERN_RB - 1) / KERN_RB);
    if (!p || rows * n_heads * d < KERN_SMALL) {
        for (int t = 0; t < n_tasks; t++)
            rope_task(&j, t, 0);
        return;
    }
    kpool_run(p, n_tasks, rope_task, &j);
}

/* ------------------------------------------------------------------ */
/* attention                                                           */

typedef struct attn_job {
    const kattn *a;
    const float *Q, *K, *V;
    int64_t ldq, ldkv, ldo;
    float *O;
    const int64_t *start, *len;
    kpool *p;
} attn_job;

/* Query rows per block and KV head on the sgemm path: the g = n_head /
 * n_head_kv query heads of a GQA group are stacked into one g * qb-row
 * matrix, so each product reads the group's keys and values once with g
 * times as many rows; qb = KERN_QB / g (at least KERN_QB_MIN) rows per
 * head. (Smaller blocks for causal attention, which scores each block's
 * whole diagonal square, measured no faster: smaller products.) The
 * blocks depend only on the shape, never on the threads. */
#define KERN_QB 128
#define KERN_QB_MIN 16

/* Causal attention with AVX-512 micro-kernels instead of sgemm, for head
 * sizes that are multiples of 64 (Qwen3: 128). Per (sequence, KV head),
 * the keys (prefix first) are transposed once into Kt (d x KP, zero-
 * padded to 32 columns); then, per tile of 8 stacked query rows, scores
 * are computed only up to the tile's last visible key (rounded up to 32),
 * so the masked upper triangle costs at most one 32-column strip per
 * tile instead of half of every query block, and nothing is packed per
 * call. Every score and output element is one fixed sequence of fused
 * multiply-adds (over the head dimension, then over the keys), so results
 * depend only on the shape, never on the thread count. */
static atomic_int attn_sgemm_only;

void kern_set_attn_sgemm(int on)
{
    atomic_store(&attn_sgemm_only, on != 0);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define KERN_ATTN_FAST 1
#include <immintrin.h>

#define AT_R 8  /* query rows per score tile */
#define AT_C 32 /* key columns per score step (2 vectors) */
#define AT_PR 4 /* query rows per output tile */

/* S[m][c0 .. c0 + nc) = scale * q_m . Kt[:, c], for 8 rows (pointers),
 * nc a multiple of 32. */
__attribute__((target("avx512f,fma"))) static void at_scores(const float *const *qr,
                                                               const float *Kt, int64_t ldk,
                                                               int64_t d, int64_t nc, float scale,
                                                               float *const *sr)
{
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t c = 0; c < nc; c += AT_C) {
        __m512 a0[AT_R], a1[AT_R];
        _Pragma("GCC unroll 8") for (int r = 0; r < AT_R; r++)
            a0[r] = _mm512_setzero_ps(), a1[r] = _mm512_setzero_ps();
        const float *kc = Kt + c;
        for (int64_t e = 0; e < d; e++) {
            __m512 k0 = _mm512_loadu_ps(kc + e * ldk), k1 = _mm512_loadu_ps(kc + e * ldk + 16);
            _Pragma("GCC unroll 8") for (int r = 0; r < AT_R; r++) {
                __m512 qv = _mm512_set1_ps(qr[r][e]);
                a0[r] = _mm512_fmadd_ps(qv, k0, a0[r]);
                a1[r] = _mm512_fmadd_ps(qv, k1, a1[r]);
            }
        }
        _Pragma("GCC unroll 8") for (int r = 0; r < AT_R; r++) {
            _mm512_storeu_ps(sr[r] + c, _mm512_mul_ps(a0[r], sc));
            _mm512_storeu_ps(sr[r] + c + 16, _mm512_mul_ps(a1[r], sc));
        }
    }
}

/* out_r[0 .. d) = sum_{j < n} S_r[j] * V_j for 4 rows, V_j = pv row j for
 * j < P, else v row j - P; d a multiple of 64. */
__attribute__((target("avx512f,fma"))) static void
at_values(const float *const *sr, int64_t n, const float *pv, int64_t ldp, int64_t P,
          const float *v, int64_t ldv, int64_t d, float *const *orow)
{
    for (int64_t c = 0; c < d; c += 64) {
        __m512 acc[AT_PR][4];
        _Pragma("GCC unroll 4") for (int r = 0; r < AT_PR; r++)
            _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) acc[r][u] = _mm512_setzero_ps();
        for (int64_t j = 0; j < n; j++) {
            const float *vr = (j < P ? pv + j * ldp : v + (j - P) * ldv) + c;
            __m512 v0 = _mm512_loadu_ps(vr), v1 = _mm512_loadu_ps(vr + 16),
                   v2 = _mm512_loadu_ps(vr + 32), v3 = _mm512_loadu_ps(vr + 48);
            _Pragma("GCC unroll 4") for (int r = 0; r < AT_PR; r++) {
                __m512 sv = _mm512_set1_ps(sr[r][j]);
                acc[r][0] = _mm512_fmadd_ps(sv, v0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(sv, v1, acc[r][1]);
                acc[r][2] = _mm512_fmadd_ps(sv, v2, acc[r][2]);
                acc[r][3] = _mm512_fmadd_ps(sv, v3, acc[r][3]);
            }
        }
        _Pragma("GCC unroll 4") for (int r = 0; r < AT_PR; r++)
            _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++)
                _mm512_storeu_ps(orow[r] + c + 16 * u, acc[r][u]);
    }
}

static int at_fast_ok(const kattn *a)
{
    static atomic_int cpu = -1;
    int c = atomic_load(&cpu);
    if (c < 0) {
        c = cpu_simd() & CPU_AVX512F ? 1 : 0;
        atomic_store(&cpu, c);
    }
    return c && a->causal && a->window == 0 && !a->first_only && a->head_dim % 64 == 0 &&
           !atomic_load(&attn_sgemm_only);
}

/* One (sequence, KV head) task of the fast path: per tile of 8 query rows
 * of one head, scores, softmax, then the outputs while the 8 score rows
 * are still in L1. */
static void attn_task_fast(const attn_job *j, int64_t s, int64_t kvh, int tid)
{
    const kattn *a = j->a;
    int64_t g = a->n_head / a->n_head_kv, T = j->len[s], d = a->head_dim, P = a->n_prefix;
    const float *q = j->Q + j->start[s] * j->ldq + kvh * g * d;
    const float *k = j->K + j->start[s] * j->ldkv + kvh * d;
    const float *v = j->V + j->start[s] * j->ldkv + kvh * d;
    float *o = j->O + j->start[s] * j->ldo + kvh * g * d;
    const float *pk = P ? a->pk + kvh * d : NULL, *pv = P ? a->pv + kvh * d : NULL;
    int64_t KP = (P + T + AT_C - 1) / AT_C * AT_C;
    /* scratch: Kt (d x KP), 8 score rows and a sink row for the scores of
     * rows past the end (KP each), a sink output row (d) */
    float *Kt = kpool_scratch(j->p, tid, (size_t)((d + AT_R + 1) * KP + d) * sizeof(float));
    float *S = Kt + d * KP, *ssink = S + AT_R * KP, *osink = ssink + KP;
    for (int64_t c = 0; c < KP; c++) {
        const float *kr = c < P ? pk + c * a->ldp : c < P + T ? k + (c - P) * j->ldkv : NULL;
        for (int64_t e = 0; e < d; e++)
            Kt[e * KP + c] = kr ? kr[e] : 0.0f;
    }
    for (int64_t hh = 0; hh < g; hh++)
        for (int64_t t0 = 0; t0 < T; t0 += AT_R) {
            int64_t nr = T - t0 < AT_R ? T - t0 : AT_R;
            const float *qr[AT_R];
            float *sr[AT_R];
            for (int r = 0; r < AT_R; r++) {
                qr[r] = q + (t0 + (r < nr ? r : nr - 1)) * j->ldq + hh * d;
                sr[r] = r < nr ? S + r * KP : ssink;
            }
            int64_t lim = (P + t0 + nr + AT_C - 1) / AT_C * AT_C;
            at_scores(qr, Kt, KP, d, lim, a->scale, sr);
            for (int64_t r = 0; r < nr; r++) {
                float *row = S + r * KP;
                int64_t n = P + t0 + r + 1;
                kern_softmax(row, n);
                for (int64_t c = n; c < lim; c++)
                    row[c] = 0.0f;
            }
            for (int64_t r0 = 0; r0 < nr; r0 += AT_PR) {
                int64_t np = nr - r0 < AT_PR ? nr - r0 : AT_PR;
                const float *srow[AT_PR];
                float *orow[AT_PR];
                for (int r = 0; r < AT_PR; r++) {
                    srow[r] = S + (r0 + (r < np ? r : np - 1)) * KP;
                    orow[r] = r < np ? o + (t0 + r0 + r) * j->ldo + hh * d : osink;
                }
                at_values(srow, P + t0 + r0 + np, pv, a->ldp, P, v, j->ldkv, d, orow);
            }
        }
}
#endif

static void attn_task(void *ctx, int task, int tid)
{
    const attn_job *j = ctx;
    const kattn *a = j->a;
    int64_t g = a->n_head / a->n_head_kv;
    int64_t s = task / a->n_head_kv, kvh = task % a->n_head_kv;
    int64_t T = j->len[s], d = a->head_dim;
    if (T <= 0)
        return;
    /* query rows: all T, or the first alone (keys and values: all T) */
    int64_t Tq = a->first_only ? 1 : T;
#ifdef KERN_ATTN_FAST
    if (at_fast_ok(a)) {
        attn_task_fast(j, s, kvh, tid);
        return;
    }
#endif
    const float *q = j->Q + j->start[s] * j->ldq + kvh * g * d;
    const float *k = j->K + j->start[s] * j->ldkv + kvh * d;
    const float *v = j->V + j->start[s] * j->ldkv + kvh * d;
    float *o = j->O + j->start[s] * j->ldo + kvh * g * d;
    int64_t P = a->n_prefix;
    const float *pk = P ? a->pk + kvh * d : NULL, *pv = P ? a->pv + kvh * d : NULL;
    int64_t half = a->window > 0 ? a->window / 2 : T;
    int64_t qb = KERN_QB / g;
    qb = qb < KERN_QB_MIN ? KERN_QB_MIN : qb;
    qb = Tq < qb ? Tq : qb;
    int64_t M = g * qb; /* stacked rows: head hh's row i is row hh * nr + i */
    /* Without a prefix the two products run on the AVX-512/AVX2 float kernel
     * where there is one: keys and values packed into its panels once per
     * task (all blocks share them unless a window moves the keys). */
    int gm = 0;
#ifdef KERN_GEMM
    gm = P == 0 && gm_cpu() && !atomic_load(&attn_sgemm_only);
#endif
    int64_t T32 = (T + 31) / 32 * 32, d32 = (d + 31) / 32 * 32;
    int64_t sq = (M * (P + T) + 2 * M * d + 15) / 16 * 16;
    /* scratch: scores (M x (P + T)), then stacked queries and outputs (M x
     * d); 64-byte aligned after them, the packed keys and values */
    float *S = kpool_scratch(j->p, tid,
                             (size_t)(sq + (gm ? T32 * d + d32 * T : 0)) * sizeof(float));
    float *Qs = S + M * (P + T), *Os = Qs + M * d;
    float *PK = S + sq, *PV = PK + T32 * d;
    int64_t packed_c0 = -1, packed_nc = -1;

    for (int64_t r0 = 0; r0 < Tq; r0 += qb) {
        int64_t nr = Tq - r0 < qb ? Tq - r0 : qb, mr = g * nr;
        /* keys any row of the block can see */
        int64_t c0 = r0 - half < 0 ? 0 : r0 - half;
        int64_t c1 = r0 + nr - 1 + half >= T ? T - 1 : r0 + nr - 1 + half;
        if (a->causal)
            c0 = 0, c1 = r0 + nr - 1;
        int64_t nc = c1 - c0 + 1, ld = P + nc;
        const float *qa = q + r0 * j->ldq;
        int64_t ldqa = j->ldq;
        if (g > 1) {
            for (int64_t hh = 0; hh < g; hh++)
                for (int64_t i = 0; i < nr; i++)
                    memcpy(Qs + (hh * nr + i) * d, q + (r0 + i) * j->ldq + hh * d,
                           (size_t)d * sizeof(float));
            qa = Qs;
            ldqa = d;
        }
        if (P)
            blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mr, (blasint)P,
                       (blasint)d, a->scale, qa, (blasint)ldqa, pk, (blasint)a->ldp, 0.0f, S,
                       (blasint)ld);
#ifdef KERN_GEMM
        if (gm) {
            if (c0 != packed_c0 || nc != packed_nc) {
                gm_pack_rows(k + c0 * j->ldkv, j->ldkv, nc, d, PK);
                gm_pack_cols(v + c0 * j->ldkv, j->ldkv, nc, d, PV);
                packed_c0 = c0, packed_nc = nc;
            }
            gm_gemm(qa, ldqa, mr, PK, d, nc, S, ld);
            for (int64_t m = 0; m < mr; m++)
                kern_scale(S + m * ld, nc, a->scale);
        } else
#endif
        blas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mr, (blasint)nc,
                   (blasint)d, a->scale, qa, (blasint)ldqa, k + c0 * j->ldkv, (blasint)j->ldkv,
                   0.0f, S + P, (blasint)ld);
        for (int64_t m = 0; m < mr; m++) {
            float *row = S + m * ld;
            int64_t gi = r0 + m % nr;
            int64_t lo = (gi - half < 0 ? 0 : gi - half) - c0;
            int64_t hi = (a->causal ? gi : gi + half >= T ? T - 1 : gi + half) - c0;
            for (int64_t jj = 0; jj < lo; jj++)
                row[P + jj] = 0.0f;
            for (int64_t jj = hi + 1; jj < nc; jj++)
                row[P + jj] = 0.0f;
            if (P) /* the prefix and keys [0, hi]: contiguous (no window with a prefix) */
                kern_softmax(row, P + hi + 1);
            else
                kern_softmax(row + lo, hi - lo + 1);
        }
        /* stacked heads go to scratch, then to their columns of O; one
         * head writes O directly */
        float *oa = g > 1 ? Os : o + r0 * j->ldo;
        int64_t ldoa = g > 1 ? d : j->ldo;
        if (P)
            blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)mr, (blasint)d,
                       (blasint)P, 1.0f, S, (blasint)ld, pv, (blasint)a->ldp, 0.0f, oa,
                       (blasint)ldoa);
#ifdef KERN_GEMM
        if (gm)
            gm_gemm(S, ld, mr, PV, nc, d, oa, ldoa);
        else
#endif
        blas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)mr, (blasint)d,
                   (blasint)nc, 1.0f, S + P, (blasint)ld, v + c0 * j->ldkv, (blasint)j->ldkv,
                   P ? 1.0f : 0.0f, oa, (blasint)ldoa);
        if (g > 1)
            for (int64_t hh = 0; hh < g; hh++)
                for (int64_t i = 0; i < nr; i++)
                    memcpy(o + (r0 + i) * j->ldo + hh * d, Os + (hh * nr + i) * d,
                           (size_t)d * sizeof(float));
    }
}

void kern_attention(kpool *p, const kattn *a, const float *Q, int64_t ldq, const float *K,
                    const float *V, int64_t ldkv, float *O, int64_t ldo, const int64_t *seq_start,
                    const int64_t *seq_len, int64_t n_seq)
{
    attn_job j = {.a = a, .Q = Q, .K = K, .V = V, .ldq = ldq, .ldkv = ldkv, .ldo = ldo, .O = O,
                  .start = seq_start, .len = seq_len, .p = p};
    double t0 = kprof_on() ? kprof_now_ms() : 0;
    kpool_run(p, (int)(n_seq * a->n_head_kv), attn_task, &j);
    if (kprof_on())
        kprof_add(KPROF_ATTN, kprof_now_ms() - t0, 0);
}

/* ------------------------------------------------------------------ */
/* profile                                                             */

static pthread_once_t prof_once = PTHREAD_ONCE_INIT;
static int prof_enabled;
static kprof_totals prof;

static void prof_init(void)
{
    const char *v = getenv("TROVE_PROFILE");
    prof_enabled = v && *v && strcmp(v, "0") != 0;
}

int kprof_on(void)
{
    pthread_once(&prof_once, prof_init);
    return prof_enabled;
}

/* Process CPU time (every thread of the pool), not wall time: on a shared
 * machine waiting for a CPU would otherwise count as work. */
double kprof_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void kprof_add(kprof_cat c, double ms, double flop)
{
    prof.ms[c] += ms;
    prof.calls[c]++;
    if (c == KPROF_LINEAR)
        prof.linear_flop += flop;
}

kprof_totals kprof_get(void)
{
    return prof;
}

void kprof_print(void)
{
    if (!kprof_on() || prof.calls[KPROF_FORWARD] == 0)
        return;
    double f = prof.ms[KPROF_FORWARD], l = prof.ms[KPROF_LINEAR], a = prof.ms[KPROF_ATTN];
    double rest = f - l - a;
    fprintf(stderr,
            "trove profile (process CPU time): forward %.1f ms (%lld calls); matrix products "
            "%.1f ms (%.0f%%, %lld calls, %.1f GFLOP per CPU-second); attention %.1f ms (%.0f%%); "
            "rest %.1f ms (%.0f%%); quant kernels %s\n",
            f, (long long)prof.calls[KPROF_FORWARD], l, f > 0 ? 100 * l / f : 0,
            (long long)prof.calls[KPROF_LINEAR], l > 0 ? prof.linear_flop / l / 1e6 : 0, a,
            f > 0 ? 100 * a / f : 0, rest, f > 0 ? 100 * rest / f : 0, quant_impl_name());
}

/* ------------------------------------------------------------------ */
/* pooling helpers                                                     */

double kern_dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

void kern_l2norm(float *x, int64_t n)
{
    double ss = kern_dot(x, x, n);
    if (ss <= 0)
        return;
    float inv = (float)(1.0 / sqrt(ss));
    for (int64_t i = 0; i < n; i++)
        x[i] *= inv;
}
