/* vec — int8 embedding vectors: quantisation and the exact top-k scan.
 *
 * A vector is stored as dim int8 components q[i] in [-127, 127] and one
 * float scale s, so that x[i] ~ s * q[i] (s = max|x| / 127). The dot product
 * of two such vectors is s_a * s_b * sum(q_a[i] * q_b[i]), computed in int32
 * by an AVX2 kernel when the CPU has it (chosen at run time) and a portable
 * loop otherwise; both give identical integers.
 *
 * vec_search() scans blocks of vectors (one block = one stored segment,
 * contiguous in memory) against a query and keeps the best `k` notes, each
 * with its best chunk: a note is one result however many of its chunks
 * match. Filters (a bitmap of allowed note ids, a minimum score, a bitmap
 * of dead entries per block) apply inside the scan, before the top-k, so a
 * filtered search is never starved. Large scans are split over threads.
 *
 * No SQL here: store/store_vec.h reads blocks out of the index. The caller
 * owns every array; vec_topk keeps its own heap, freed by vec_topk_free(). */
#ifndef TROVE_VEC_H
#define TROVE_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/pool.h"

#define VEC_MAX_DIM 8192

/* Quantise x[0..dim) into q with one scale. A zero vector gets scale 0. */
void vec_quantize(const float *x, int dim, int8_t *q, float *scale);

/* sum(a[i] * b[i]) over dim components (a, b in [-127, 127]). */
int32_t vec_dot_i8(const int8_t *a, const int8_t *b, int dim);

/* Which kernel vec_dot_i8 and the scan use: "avx2" or "portable". */
const char *vec_impl_name(void);
/* Tests and benches: force the portable kernel (1) or pick the best (0). */
void vec_force_portable(int on);

/* One contiguous run of n vectors (a segment of the index). The vectors
 * are either in memory (data) or read on demand (data NULL): read(read_ctx,
 * from, n, dst) copies rows [from, from + n) into dst (n * dim bytes) and
 * returns 0, or -1 when they cannot be read (the scan of the block stops:
 * vec_topk_failed). A scan reads such a block in windows of some tens of
 * KiB into a buffer that stays in the CPU's cache, each thread its own
 * rows. */
typedef struct vec_block {
    const int8_t *data;       /* n * dim components, row after row; or NULL */
    const float *scale;       /* n */
    const int64_t *chunk_id;  /* n */
    const int64_t *doc_id;    /* n */
    const uint8_t *dead;      /* bit i set: entry i is deleted; NULL: none */
    size_t n;
    int (*read)(void *read_ctx, size_t from, size_t n, int8_t *dst);
    void *read_ctx;
    /* the sketch of rows [0, n) (vec_sketch_rows of exactly them), for
     * a two-stage scan (vec_topk_two_stage); NULL: none. A block read on
     * demand (data NULL) gives stage two each of its rows by one read. */
    const uint8_t *sketch;
} vec_block;

/* Sketches, for the two-stage scan's first stage: each vector coded in
 * two bits a component after a fixed random rotation, with one float that
 * corrects the code's length (vec.c "sketches" says how and in which
 * layout: rows in blocks of 32), vec_sketch_size(n, dim) bytes for n rows
 * (68 a row at 256 dimensions: a pass over them reads ~1/4 of what the
 * exact scan reads). scale: the rows' scales (NULL: 1), folded into the
 * sketches so the first stage reads nothing else. The same bytes on every
 * CPU. */
size_t vec_sketch_size(size_t n, int dim);
/* The sketches' format (coding, rotation, layout): bytes made by another
 * version are never read as these (stored sketches carry it:
 * store/store_vside.h). Change it with any change of vec_sketch_rows'
 * output. */
#define VEC_SKETCH_VERSION 1
void vec_sketch_rows(const int8_t *rows, const float *scale, size_t n, int dim, uint8_t *out);

typedef struct vec_hit {
    int64_t doc_id, chunk_id;
    float score;              /* dot product of the dequantised vectors */
} vec_hit;

typedef struct vec_filter {
    const uint8_t *doc_allow; /* bit d set: note d may be returned; NULL: all */
    int64_t n_doc_allow;      /* bits in doc_allow; ids beyond are refused */
    float min_score;          /* entries below are skipped (-inf: none) */
    const uint8_t *chunk_allow; /* bit c set: chunk c may be returned; NULL: all */
    int64_t n_chunk_allow;
} vec_filter;

/* The best k notes seen so far (k = 0: every note), fed block by block. */
typedef struct vec_topk vec_topk;

/* threads <= 0: every online CPU; 1: the calling thread only. */
vec_topk *vec_topk_new(size_t k, int dim, const int8_t *query, float query_scale,
                       const vec_filter *filter, int threads);
/* The scan's shares run on p's workers (util/pool.h) instead of threads
 * started per scan; NULL: started per scan. The results are the same
 * either way (vec_topk_results). */
void vec_topk_use_pool(vec_topk *t, pool *p);
/* Two-stage scan (n_cand > 0, k > 0), for a scan (vec_topk_scan_all) of
 * at least min_rows rows: the rows of blocks that carry sketches are
 * ranked by their sketch's estimate of the dot product with the query,
 * and only about the n_cand best (a bar taken from a sample of the
 * estimates, with 1/8 more rows for its error) are scored exactly; blocks without
 * sketches are scanned exactly. The results are the exact top-k of the
 * rows scored, which is the exact scan's top-k whenever each of its
 * notes' best chunks is among them: an approximation, off by default
 * (n_cand 0: every row scored). */
void vec_topk_two_stage(vec_topk *t, size_t n_cand, size_t min_rows);
/* The least rows a scan of t takes in two stages; SIZE_MAX when t is
 * exact. A caller makes sketches only for scans at least this large. */
size_t vec_topk_two_stage_rows(const vec_topk *t);
void vec_topk_scan(vec_topk *t, const vec_block *b);
/* The blocks as one scan: their rows taken end to end and split into one
 * share per thread, so threads start once, not once per block. */
void vec_topk_scan_all(vec_topk *t, const vec_block *const *b, size_t nb);
/* 1 when a block's read failed: the results then miss part of it. */
int vec_topk_failed(const vec_topk *t);
/* Results, best first (score descending, then doc id ascending); *n set to
 * their count. The array belongs to t and stays valid until vec_topk_free. */
const vec_hit *vec_topk_results(vec_topk *t, size_t *n);
void vec_topk_free(vec_topk *t);

#endif
