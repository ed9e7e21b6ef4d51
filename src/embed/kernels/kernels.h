/* kernels — numeric building blocks of the embedding engine: a small thread
 * pool, matrix products (an AVX-512/AVX2 kernel of its own or OpenBLAS sgemm for
 * float weights, int8 dot kernels from quant.h and q8pack.h for quantised
 * ones), normalisations, activations, softmax,
 * RoPE and fused per-head attention.
 *
 * Determinism: every function here splits its work into blocks whose
 * boundaries depend only on the problem shape, never on the thread count,
 * and each output element is produced by exactly one block with a fixed
 * summation order. OpenBLAS is pinned to one thread (kpool_new does it) and
 * called concurrently from the pool's threads on disjoint column blocks, so
 * the vectors trove computes are bit-identical for 1, 2 or N threads.
 *
 * Memory: a kpool owns its threads and one scratch arena per thread
 * (kpool_scratch); callers own every array they pass. Matrices are dense
 * row-major float arrays with an explicit row stride ("ld").
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_EMBED_KERNELS_H
#define TROVE_EMBED_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "embed/kernels/q8pack.h"
#include "embed/kernels/quant.h"

/* ---- thread pool ---- */

typedef struct kpool kpool;

/* Task body: run task `task` (0 <= task < n_tasks) on pool thread `tid`
 * (0 <= tid < kpool_threads). */
typedef void (*kpool_fn)(void *ctx, int task, int tid);

/* n_threads < 1 means 1. Also pins OpenBLAS to a single thread. */
kpool *kpool_new(int n_threads);
void kpool_free(kpool *p); /* NULL is fine */
int kpool_threads(const kpool *p);

/* Run fn for every task in [0, n_tasks), spread over the pool (the calling
 * thread takes part), and return when all are done. Not reentrant: task
 * bodies must not call kpool_run on the same pool. */
void kpool_run(kpool *p, int n_tasks, kpool_fn fn, void *ctx);

/* Per-thread scratch of at least `bytes` bytes, 64-byte aligned; grows on
 * demand and is kept for reuse, so the hot path stops allocating once the
 * largest batch has been seen. Valid until the next call with the same tid
 * or kpool_free. Only thread `tid` may use it. */
void *kpool_scratch(kpool *p, int tid, size_t bytes);

/* ---- matrix product ---- */

/* A weight matrix as stored in the file: n_out rows of n_in elements of
 * `type`, rows quant_row_size(type, n_in) bytes apart (ggml ne = {n_in,
 * n_out}). */
typedef struct kmat {
    ggml_type type;
    int64_t n_in, n_out;
    const void *data;
    const char *name; /* for messages */
    /* q8pack types only (q8pack_type_ok), optional: the same matrix repacked for
     * many-row products (q8pack.h), owned by whoever loaded the matrix. */
    const q8pack *pack;
    /* Set by an architecture whose results may depend on a product's row
     * count (an encoder: no prefix cache to agree with): kern_linear may
     * then multiply large Q8_0 products through the float kernel. */
    bool float_rows_ok;
} kmat;

/* Y[t, o] = sum_i X[t, i] * W[o, i] (+ bias[o]) for t < T, o < n_out.
 * X has row stride ldx >= n_in, Y row stride ldy >= n_out. Float weights
 * go through the AVX-512/AVX2 kernel (16+ rows, kern_set_gemm_blas) or sgemm
 * (F16/BF16 converted into pool scratch), quantised weights through the
 * packed int8 kernels (q8pack), quant_matmul, or dequantised + sgemm. */
void kern_linear(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                 int64_t T, float *Y, int64_t ldy);

/* kern_linear on T rows taken out of a product of T_path rows (an
 * encoder's last layer run on the rows its pooling reads): the path
 * (packed int8, float kernel, sgemm) is the one T_path rows would take.
 * Where kern_linear_rows_exact(w, T_path) each row then gets the bits it
 * would have had in the whole product; elsewhere (sgemm, whose blocking
 * follows the row count) only the same value up to float rounding. */
void kern_linear_like(kpool *p, const kmat *w, const float *bias, const float *X, int64_t ldx,
                      int64_t T, float *Y, int64_t ldy, int64_t T_path);
/* True when the path a product of T_path rows of w takes computes each
 * output row on its own (the q8pack and int8 kernels, the AVX-512/AVX2
 * float kernel), so any subset of the rows gets the same bits. */
bool kern_linear_rows_exact(const kmat *w, int64_t T_path);

/* Y[i] = X W[i]^T (+ bias[i]) for n <= KERN_LINEAR_N_MAX products of the
 * same input X (Q, K and V; gate and up): when every W[i] has a q8pack of
 * the same n_in, X is quantised once and the products share one pool
 * round; otherwise n kern_linear calls. bias may be NULL, or hold NULLs.
 * Results are bit-identical to kern_linear's. */
#define KERN_LINEAR_N_MAX 4
void kern_linear_n(kpool *p, int n, const kmat *const *w, const float *const *bias,
                   const float *X, int64_t ldx, int64_t T, float *const *Y, const int64_t *ldy);

/* How quantised weights are multiplied. AUTO (default): a matrix
 * with a q8pack goes through the packed int8 kernels (q8pack_matmul) for
 * any number of rows, except Q8_0 on a CPU with AVX2 but neither VNNI nor AVX-512 in
 * products of at least 512 rows of a float_rows_ok matrix: there the float kernel (weights
 * dequantised per product, activations f32) is faster. Otherwise the int8 kernels
 * (activations quantised to 8 bits, integer dot products) for products of
 * at most KERN_INT8_MAX_ROWS activation rows, where reading the compact
 * weights directly wins; above that, weight blocks are dequantised into
 * per-thread scratch and multiplied with sgemm, which is faster once the
 * dequantisation is shared by many rows. The choice depends only on the
 * product's shape, never on the thread count. INT8 / SGEMM force a path
 * and ignore packs (tests, bench). Process-wide. */
typedef enum kern_quant_path { KERN_QUANT_AUTO, KERN_QUANT_INT8, KERN_QUANT_SGEMM } kern_quant_path;
#define KERN_INT8_MAX_ROWS 8
void kern_set_quant_path(kern_quant_path path);

/* Float weights (F32, F16, BF16) in products of at least 16 rows run on
 * trove's own kernel where the CPU has AVX-512 or AVX2 + FMA (weights
 * packed per product, converted on the way; each sum one chain of fused
 * multiply-adds over n_in, the same bits on either), else on sgemm; on = 1 forces sgemm (tests, bench). Process-wide. */
void kern_set_gemm_blas(int on);

/* ---- row-wise operations (rows of n floats, row stride ld) ---- */

/* y = (x - mean) / sqrt(var + eps) * w + b, in place; w/b may be NULL. */
void kern_layernorm(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld, const float *w,
                    const float *b, float eps);

/* y = x / sqrt(mean(x^2) + eps) * w, in place; w may be NULL. */
void kern_rmsnorm(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld, const float *w,
                  float eps);

/* x[r] += y[r] for every row (residual). */
void kern_add(kpool *p, float *x, int64_t ldx, const float *y, int64_t ldy, int64_t rows,
              int64_t n);

/* In-place activations over rows x n. */
void kern_gelu_erf(kpool *p, float *x, int64_t rows, int64_t n, int64_t ld);
/* gate[r, i] = gelu_tanh(gate[r, i]) * up[r, i] */
void kern_gelu_tanh_mul(kpool *p, float *gate, int64_t ldg, const float *up, int64_t ldu,
                        int64_t rows, int64_t n);
/* gate[r, i] = silu(gate[r, i]) * up[r, i], silu(x) = x / (1 + e^-x) (SwiGLU) */
void kern_silu_mul(kpool *p, float *gate, int64_t ldg, const float *up, int64_t ldu,
                   int64_t rows, int64_t n);
void kern_tanh(float *x, int64_t n);
void kern_scale(float *x, int64_t n, float s);

/* Numerically stable softmax of one row in place. */
void kern_softmax(float *x, int64_t n);

/* ---- RoPE (NeoX layout: pairs (i, i + d/2)) ---- */

/* Fill tab (len * d floats: cos[d/2] then sin[d/2] for each position) for
 * positions 0..len-1, rotary dimension d (even), frequency base `base`.
 * Angles are computed in double precision. */
void kern_rope_table(float *tab, int64_t len, int64_t d, double base);

/* Rotate n_heads heads of dimension d in each of `rows` rows (row stride
 * ld); row r is at position pos[r], looked up in tab. Spread over the
 * pool p in blocks of rows (p may be NULL: the calling thread). */
void kern_rope_neox(kpool *p, float *x, int64_t rows, int64_t ld, int64_t n_heads, int64_t d,
                    const int32_t *pos, const float *tab);

/* ---- attention ---- */

typedef struct kattn {
    int64_t n_head, n_head_kv, head_dim;
    float scale;    /* multiplies q.k */
    int64_t window; /* symmetric sliding window: token i sees j iff
                       |i - j| <= window / 2; 0 = everyone sees everyone */
    int causal;     /* nonzero: token i sees only j <= i (window must be 0) */
    /* A shared prefix every sequence continues (decoders reusing the keys
     * and values of a common prompt): n_prefix rows of keys pk and values
     * pv (stride ldp, n_head_kv * head_dim wide) that every token sees
     * before its own sequence's keys. n_prefix 0: none. */
    const float *pk, *pv;
    int64_t n_prefix, ldp;
    /* Nonzero (bidirectional attention without a window or prefix only):
     * only each sequence's first row attends (an encoder's last layer
     * when only that row is pooled); the other rows of Q are not read and
     * those of O not written. Row 0's output has the same bits as in a
     * whole pass (each output is one fixed chain of fused multiply-adds
     * over the keys, whatever the row count). */
    int first_only;
} kattn;

/* Attention for n_seq packed sequences: sequence s occupies rows
 * seq_start[s] .. seq_start[s] + seq_len[s] - 1 of Q (stride ldq,
 * n_head * head_dim wide), K and V (stride ldkv, n_head_kv * head_dim
 * wide); the result goes to O (stride ldo, n_head * head_dim wide).
 * Tokens only attend within their own sequence (and the shared prefix),
 * bidirectionally unless a->causal. One task per (sequence, KV head):
 * the query heads of a GQA group share one product over their keys and
 * values. */
void kern_attention(kpool *p, const kattn *a, const float *Q, int64_t ldq, const float *K,
                    const float *V, int64_t ldkv, float *O, int64_t ldo, const int64_t *seq_start,
                    const int64_t *seq_len, int64_t n_seq);

/* Causal attention with head sizes that are multiples of 64 runs on
 * AVX-512 micro-kernels where the CPU has them (scores only up to each
 * row tile's last visible key), other attention without a prefix on the
 * AVX-512/AVX2 float kernel of kern_linear (keys and values packed per task);
 * on = 1 forces the sgemm path everywhere (tests, bench). Process-wide. */
void kern_set_attn_sgemm(int on);

/* ---- profile ---- */

/* With TROVE_PROFILE set in the environment (read once), kern_linear and
 * kern_attention add their process CPU time (and the linear products' multiply-
 * adds) to process-wide counters, and emodel_forward its own total, so
 * the time of a forward pass splits into matrix products, attention and
 * the rest (norms, activations, RoPE, embedding lookup, pooling). Calls
 * come from the thread that drives the pool, one at a time (a debugging
 * aid: models run concurrently from several threads would race on the
 * counters). Off: one branch per call. */
typedef enum kprof_cat { KPROF_LINEAR, KPROF_ATTN, KPROF_FORWARD, KPROF_N } kprof_cat;
typedef struct kprof_totals {
    double ms[KPROF_N];
    double linear_flop; /* 2 * rows * n_in * n_out summed over products */
    int64_t calls[KPROF_N];
} kprof_totals;
int kprof_on(void);
double kprof_now_ms(void); /* process CPU time, ms */
void kprof_add(kprof_cat c, double ms, double flop);
kprof_totals kprof_get(void);
/* The process's totals so far, as one line to stderr ("trove profile
 * ..."; emodel_free calls it); nothing when profiling is off or no forward
 * pass was recorded. */
void kprof_print(void);

/* ---- pooling ---- */

/* L2-normalise a vector in place (left as is when its norm is 0). */
void kern_l2norm(float *x, int64_t n);

/* Dot product with a fixed summation order (double accumulator). */
double kern_dot(const float *a, const float *b, int64_t n);

#endif
