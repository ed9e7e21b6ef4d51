/* safetensors — read-only reader for .safetensors files (Hugging Face):
 *
 *   u64 N (little-endian) | N bytes of JSON header | tensor data
 *
 * The header maps each tensor name to {"dtype", "shape", "data_offsets":
 * [begin, end]} (offsets relative to the data section) plus an optional
 * "__metadata__" object of string values. st_open() maps the file
 * read-only and checks everything before handing a tensor out: header
 * length within the file (and at most 100 MB), well-formed JSON (jansson),
 * known dtype, shape product without overflow, end - begin equal to the
 * element count times the element size, ranges inside the data section,
 * no two tensors overlapping. A truncated or hostile file gives
 * TROVE_ECORRUPT (TROVE_EUNSUPPORTED for an unknown dtype) naming the file
 * and the tensor at fault, never a crash.
 *
 * Memory: the st_file owns the mapping and the parsed header; tensor data
 * is never copied (st_tensor.data points into the mapping and may be
 * unaligned: read it through the st_* accessors or memcpy). Everything
 * stays valid until st_close(). Immutable after open: any number of threads
 * may read one st_file.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it). */
#ifndef TROVE_SAFETENSORS_H
#define TROVE_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct st_file st_file;

typedef enum st_dtype {
    ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL,
    ST_DTYPE_COUNT
} st_dtype;

const char *st_dtype_name(st_dtype t); /* "F32", ... */
size_t st_dtype_size(st_dtype t);      /* bytes per element */

#define ST_MAX_DIMS 8

typedef struct st_tensor {
    const char *name;
    st_dtype dtype;
    int n_dims;                    /* 0 (scalar) .. ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS];    /* row-major: shape[n_dims-1] is contiguous */
    int64_t n_elem;                /* product of shape (1 for a scalar) */
    const unsigned char *data;     /* into the mapping; maybe unaligned */
    size_t nbytes;
} st_tensor;

/* Map and parse `path`. On failure *out is NULL and the error detail names
 * the file and the fault. */
trove_err st_open(const char *path, st_file **out);
/* Parse an image held in memory (fuzzing, tests): not copied, must outlive
 * the handle. `name` is used in messages. */
trove_err st_open_memory(const void *data, size_t size, const char *name, st_file **out);
void st_close(st_file *f); /* NULL is fine */

const char *st_path(const st_file *f);
size_t st_file_size(const st_file *f);
size_t st_n_tensors(const st_file *f);
const st_tensor *st_tensor_at(const st_file *f, size_t i); /* in data-offset order */
const st_tensor *st_get(const st_file *f, const char *name); /* NULL if absent */
/* "__metadata__" string value, or NULL. */
const char *st_meta(const st_file *f, const char *key);

/* Element i (0 <= i < n_elem, unchecked) as a float of a floating tensor
 * (F64/F32/F16/BF16; integer types converted too). */
float st_elem_f32(const st_tensor *t, int64_t i);
/* Element i of an integer tensor (I64/I32/I16/I8/U8/BOOL); false if t is a
 * floating type. */
bool st_elem_i64(const st_tensor *t, int64_t i, int64_t *out);
/* Row r of a 2-D floating tensor (shape [rows, cols]) converted to float
 * into out[cols]; unchecked r. */
void st_row_f32(const st_tensor *t, int64_t r, float *out);
/* out[0..cols) += scale * row r, without a temporary (the pooling hot
 * path of static models). */
void st_row_axpy(const st_tensor *t, int64_t r, float scale, float *out);

#endif
