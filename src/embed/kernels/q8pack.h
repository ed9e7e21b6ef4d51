/* q8pack — Q8_0 weight matrices repacked for products with many activation
 * rows (a batch of tokens: reranking candidates, passages), multiplied in
 * int8 with AVX512-VNNI's vpdpbusd, AVX2's vpmaddubsw, or portable C.
 *
 * Why: a GGUF Q8_0 row keeps each 32-element block's quants next to its
 * f16 scale, so a dot product per (weight row, activation row) pays a
 * horizontal sum and a scale broadcast per block, which makes the row-by-
 * row int8 kernels of quant.c slower than dequantising to f32 and calling
 * sgemm once a product has more than a few rows. Here the weights of 16
 * output rows are interleaved, 4 consecutive elements of each row in one
 * 32-bit lane, so one vpdpbusd multiplies 4 elements of 16 rows by one
 * broadcast group of 4 activation bytes; a block's 8 such steps give 16
 * exact int32 block sums with no horizontal work, then one conversion and
 * one fused multiply-add per 16 rows apply both scales.
 *
 * Layout of a packed matrix: groups of 16 weight rows; per group, per
 * 32-element block, 512 bytes of quants, byte 64 * (k / 4) + 4 * row +
 * k % 4 holding element k of the group's row `row` as an unsigned byte
 * (q + 128), then the 16 rows' block scales as f32 (576 bytes per group
 * and block). Activation rows are quantised per 32-element block like
 * quant_quantize_act does for Q8_0 (scale max|x| / 127, round to nearest
 * even, quants in -127..127), with each block's -128 * sum(q) stored so
 * that the unsigned weights' +128 offset cancels exactly.
 *
 * Results: every path computes, per (weight row, activation row), the
 * same exact int32 block sums and then acc = fma((float)isum, dw * dx,
 * acc) block after block, so VNNI, AVX2 and portable results are
 * bit-identical, and so are products split differently over threads.
 *
 * Memory: a q8pack owns its packed copy (1.125 bytes per weight);
 * callers own activation and output buffers. Thread-safe once built.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_Q8PACK_H
#define TROVE_Q8PACK_H

#include <stddef.h>
#include <stdint.h>

#define Q8PACK_NR 16 /* weight rows per group */

typedef struct q8pack q8pack;

/* Pack a Q8_0 matrix of n_out rows of n_in elements (GGUF layout, rows
 * consecutive). NULL when it cannot be packed: n_in not a multiple of 32
 * or n_out not a multiple of Q8PACK_NR. */
q8pack *q8pack_new(const void *q8_0, int64_t n_in, int64_t n_out);
void q8pack_free(q8pack *p); /* NULL is fine */

/* The same in two steps, so that several threads can fill one matrix:
 * q8pack_alloc reserves the packed copy (nothing is read yet), then
 * q8pack_fill packs groups [g0, g1) (of n_out / Q8PACK_NR) from the GGUF
 * rows; calls on disjoint ranges may run concurrently, and the matrix may
 * be multiplied once every group has been filled. */
q8pack *q8pack_alloc(int64_t n_in, int64_t n_out);
void q8pack_fill(q8pack *p, const void *q8_0, int64_t g0, int64_t g1);

/* Bytes of the prepared form of `rows` activation rows of n_in elements
 * (a multiple of 64). */
size_t q8pack_act_size(int64_t n_in, int64_t rows);

/* Quantise activation rows t0 .. t0 + rows - 1 (x: row t0, stride ldx)
 * into their places in dst, the prepared form of the whole product. t0
 * must be a multiple of 8; unused slots of the last tile are zeroed, so
 * callers may quantise disjoint ranges (multiples of 8 apart) in
 * parallel. */
void q8pack_quantize_act(const float *x, int64_t ldx, int64_t t0, int64_t rows, int64_t n_in,
                         void *dst);

/* out[t * ldo + o] = dot(weight row o, activation row t) for t < T and
 * o0 <= o < o0 + no; o0 and no multiples of Q8PACK_NR. */
void q8pack_matmul(const q8pack *p, int64_t o0, int64_t no, const void *act, int64_t T,
                   float *out, int64_t ldo);

#endif
