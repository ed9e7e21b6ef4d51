/* quant — ggml tensor element types: block layouts, dequantisation, and the
 * int8 dot-product kernels used for quantised matrix products.
 *
 * Weight layouts are byte-for-byte those of llama.cpp's GGUF files (the
 * block structs are documented in quant.c). A row of n elements of type T
 * occupies quant_row_size(T, n) bytes; n must be a multiple of the block
 * size of T.
 *
 * Quantised matmul works in two steps: quantise each activation row once
 * with quant_quantize_act() into a buffer of quant_act_row_size() bytes (an
 * internal format chosen by this module, not a GGUF layout), then take dot
 * products of that buffer with weight rows (quant_vec_dot / quant_matmul).
 * For float weight types (F32, F16, BF16) the "activation row" is simply the
 * float row, so one code path serves every type.
 *
 * The dot kernels have AVX2 (and AVX512-VNNI) implementations chosen at
 * run time when the CPU supports them and a portable C one; all give
 * results that agree to float rounding. Everything here is stateless and thread-safe; callers own
 * every buffer.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_QUANT_H
#define TROVE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Numeric ids are llama.cpp's (they are stored in GGUF tensor infos). Only
 * the types listed are supported; other ids are named by quant_type_name()
 * for error messages but cannot be read. */
typedef enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15, /* activation-only type in llama.cpp; not accepted in files */
    GGML_TYPE_BF16 = 30,
} ggml_type;

#define QUANT_QK 32   /* elements per block of Q4_0, Q5_0, Q5_1, Q8_0 */
#define QUANT_QK_K 256 /* elements per super-block of the K-quants */

/* "Q4_K", "F32", ... for every id llama.cpp defines; "unknown" otherwise. */
const char *quant_type_name(int type);

/* True for the weight types trove can read: F32, F16, BF16, Q8_0, Q4_0,
 * Q5_0, Q5_1, Q4_K, Q5_K, Q6_K. */
bool quant_supported(int type);

/* Elements per block (1 for float types) and bytes per block; 0 for
 * unsupported types. */
size_t quant_block_size(int type);
size_t quant_type_size(int type);

/* Bytes of a row of n elements; 0 if the type is unsupported, n is not a
 * multiple of the block size, or the size overflows size_t. */
size_t quant_row_size(int type, int64_t n);

/* Convert a row of n elements (n a multiple of the block size) to f32.
 * src need not be aligned. */
void quant_dequantize_row(ggml_type type, const void *src, float *dst, int64_t n);

/* One 256-element block of a K-quant (Q4_K, Q5_K, Q6_K) as integers:
 * element e is scale[e / 16] * q[e] - min[e / 16], q unsigned (below 16,
 * 32 or 64). The Q4_K/Q5_K scale and min repeat over the two halves of
 * each 32-element sub-block; for Q6_K min is 32 * scale (q - 32 in the
 * file's terms). scale and min are exact products of the file's f16 and
 * integer scales. q: 256 entries, scale and min: 16. */
void quant_kblock_int(ggml_type type, const void *block, uint8_t *q, float *scale, float *min);

/* One 32-element block of Q5_0 or Q5_1 as integers: element e is
 * scale * q[e] - min, q unsigned (below 32); for Q5_0 min is 16 * scale
 * (q - 16 in the file's terms), for Q5_1 it is the file's -m. q: 32
 * entries. */
void quant_q5block_int(ggml_type type, const void *block, uint8_t *q, float *scale, float *min);

/* Quantise a row of n floats into `type` (F32, F16, BF16, Q8_0, Q4_0,
 * Q5_0, Q5_1 and the K-quants); dst holds quant_row_size(type, n) bytes. Round-to-nearest,
 * simple per-block scales: good for tests, not llama.cpp's optimising
 * quantiser. */
void quant_quantize_row(ggml_type type, const float *src, void *dst, int64_t n);

/* Half-precision helpers (IEEE binary16 and bfloat16, round to nearest even). */
float quant_f16_to_f32(uint16_t h);
uint16_t quant_f32_to_f16(float f);
float quant_bf16_to_f32(uint16_t h);
uint16_t quant_f32_to_bf16(float f);

/* ---- dot products against weight rows ---- */

/* Bytes needed for one activation row of n elements prepared for weights
 * of type wtype (n a multiple of wtype's block size). Aligned-friendly: a
 * multiple of 32. */
size_t quant_act_row_size(ggml_type wtype, int64_t n);

/* Prepare activation row x (n floats) for dot products with wtype rows:
 * int8 blocks with f32 scales for the quantised types, a float copy for
 * F32/F16/BF16. dst holds quant_act_row_size(wtype, n) bytes and should be
 * 32-byte aligned for speed (correct either way). */
void quant_quantize_act(ggml_type wtype, const float *x, void *dst, int64_t n);

/* Dot product of one weight row (wtype, n elements) with one prepared
 * activation row. */
float quant_vec_dot(ggml_type wtype, const void *wrow, const void *act, int64_t n);

/* out[j * ldo + i] = dot(weight row i, activation row j) for i < n_rows,
 * j < m. Weight rows are consecutive at quant_row_size(wtype, n) bytes
 * apart; activation rows are consecutive at quant_act_row_size(wtype, n)
 * bytes apart. Tiled so each weight block is loaded once for several
 * activation rows. Callers parallelise by splitting the weight rows. */
void quant_matmul(ggml_type wtype, const void *w, int64_t n_rows,
                  const void *act, int64_t m, int64_t n, float *out, int64_t ldo);

/* Kernel selection: QUANT_IMPL_AUTO (default) uses the best path the CPU
 * has: VNNI (AVX2 kernels with AVX512-VNNI's 256-bit vpdpbusd) when it has
 * AVX512-VNNI+VL, else AVX2 when it has AVX2+FMA+F16C, else portable C.
 * The others force a path (tests compare them); forcing one the CPU lacks
 * falls back to the next one down. Every path computes the same integer
 * block sums; results differ between paths only by float summation order,
 * and AVX2 and VNNI agree exactly. Process-wide; set before starting
 * threads. */
typedef enum quant_impl {
    QUANT_IMPL_AUTO,
    QUANT_IMPL_PORTABLE,
    QUANT_IMPL_AVX2,
    QUANT_IMPL_VNNI,
} quant_impl;
void quant_set_impl(quant_impl impl);
bool quant_cpu_has_avx2(void);
bool quant_cpu_has_vnni(void);
const char *quant_impl_name(void); /* "avx512vnni", "avx2" or "portable": the path in use */
/* The path in use (never QUANT_IMPL_AUTO): the forced one or the best one
 * below it that the CPU has. q8pack uses the same choice. */
quant_impl quant_impl_active(void);

#endif
