/* q8pack — quantised weight matrices (Q8_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)
 * repacked for
 * products with many activation rows (a batch of tokens: reranking
 * candidates, passages), multiplied in int8 with AVX512-VNNI's vpdpbusd,
 * AVX2's vpmaddubsw, or portable C.
 *
 * Why: a GGUF row keeps each block's quants next to its scales, so a dot
 * product per (weight row, activation row) pays a horizontal sum and a
 * scale broadcast per block, which makes the row-by-row int8 kernels of
 * quant.c slower than dequantising to f32 and calling sgemm once a product
 * has more than a few rows. Here the weights of 16 output rows are
 * interleaved, 4 consecutive elements of each row in one 32-bit lane, so
 * one vpdpbusd multiplies 4 elements of 16 rows by one broadcast group of
 * 4 activation bytes; a 32-element block's 8 such steps give 16 exact
 * int32 block sums with no horizontal work, then one conversion and one
 * fused multiply-add per 16 rows apply the scales.
 *
 * Layout of a packed matrix: groups of 16 weight rows; per group, per
 * 32-element block, the quants, step s (elements 4s .. 4s + 3) of the
 * group's row `row` at byte 64 * s + 4 * row + e % 4, then the 16 rows'
 * scales as f32. By weight type:
 *   Q8_0: one unsigned byte per element (q + 128), then d      (576 B)
 *   Q5_0: the same, the byte being the file's q - 16 + 128     (576 B)
 *   Q6_K: one unsigned byte per element (the file's q, 0..63, for q - 32:
 *         the kernels subtract 32 * sum(x)), then the scales of elements 0..15 and 16..31
 *         (d * sc, two per row: the K-quant's sub-blocks are 16 long)  (640 B)
 *   Q4_K: nibbles, 64 * v + 4 * row + e % 4 holding step v in its low and
 *         step v + 4 in its high nibble (v < 4), then d * sc and the
 *         min dmin * m of the 32-element sub-block            (384 B)
 *   Q5_1, Q5_K: one unsigned byte per element (q, below 32), then the
 *         scale (Q5_1: d; Q5_K: d * sc) and the min to subtract (Q5_1:
 *         the file's -m; Q5_K: dmin * m)                        (640 B)
 * (The AVX2 kernel unpacks a Q4_K group's nibbles to Q5_1's byte layout
 * once per tile of activation rows, into a buffer of the call; the pack
 * itself stays nibbles.)
 * So 1.125 bytes per weight for Q8_0 and Q5_0, 1.25 for Q6_K, Q5_1 and
 * Q5_K, 0.75 for Q4_K (the files: 1.0625, 0.6875, 0.82, 0.75, 0.6875,
 * 0.5625). Activation rows are quantised per 32-element block like
 * quant_quantize_act does for Q8_0 (scale max|x| / 127, round to nearest
 * even, quants in -127..127), with -128 * sum(q) of each half block (for
 * the unsigned weights' +128 offset) and -d * sum(q) (for the mins of
 * Q4_K, Q5_1 and Q5_K) stored beside them.
 *
 * Results: every path computes, per (weight row, activation row), the
 * same exact int32 block (or half-block) sums and then the same chain of
 * float fused multiply-adds block after block, so VNNI, AVX2 and portable
 * results are bit-identical, and so are products split differently over
 * threads. Each product equals the dot of the dequantised weights with
 * the int8-quantised activations, up to float rounding.
 *
 * Memory: a q8pack owns its packed copy (above); callers own activation
 * and output buffers. Thread-safe once built.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_Q8PACK_H
#define TROVE_Q8PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define Q8PACK_NR 16 /* weight rows per group */

typedef struct q8pack q8pack;

/* True for the weight types that can be packed: Q8_0, Q5_0, Q5_1, Q4_K,
 * Q5_K, Q6_K. */
bool q8pack_type_ok(int type);

/* Pack a matrix of `type` of n_out rows of n_in elements (GGUF layout,
 * rows consecutive). NULL when it cannot be packed: another type, n_in not
 * a multiple of the type's block size (32 or 256) or n_out not a multiple
 * of Q8PACK_NR. */
q8pack *q8pack_new(int type, const void *w, int64_t n_in, int64_t n_out);
void q8pack_free(q8pack *p); /* NULL is fine */

/* The same in two steps, so that several threads can fill one matrix:
 * q8pack_alloc reserves the packed copy (nothing is read yet), then
 * q8pack_fill packs groups [g0, g1) (of n_out / Q8PACK_NR) from the GGUF
 * rows; calls on disjoint ranges may run concurrently, and the matrix may
 * be multiplied once every group has been filled. */
q8pack *q8pack_alloc(int type, int64_t n_in, int64_t n_out);
void q8pack_fill(q8pack *p, const void *w, int64_t g0, int64_t g1);

/* Bytes of the packed copy. */
size_t q8pack_size(const q8pack *p);

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

/* out[t * ldo + o] = dot(weight row o, activation row t) (+ bias[o] when
 * bias is not NULL: added to each tile while it is in L1, the same float
 * add as a pass after the product) for t < T and o0 <= o < o0 + no; o0
 * and no multiples of Q8PACK_NR. */
void q8pack_matmul(const q8pack *p, int64_t o0, int64_t no, const void *act, int64_t T,
                   const float *bias, float *out, int64_t ldo);

#endif
