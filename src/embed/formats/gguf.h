/* gguf — read-only reader for GGUF model files (versions 2 and 3).
 *
 * gguf_open() maps the file read-only, parses the header, every metadata
 * key/value (all value types, arrays nested to any depth) and every tensor
 * info, and checks every length, count and offset against the file size,
 * so a truncated or corrupt file gives TROVE_ECORRUPT (or
 * TROVE_EUNSUPPORTED for a version or tensor type trove cannot read) with a
 * message naming the file and the fault, never a crash.
 *
 * Memory: the gguf_file owns the mapping and a copy of the metadata
 * (strings NUL-terminated, numeric arrays copied to aligned native arrays;
 * small compared with the weights). Tensor data is never copied:
 * gguf_tensor.data points into the mapping, aligned to the file's
 * general.alignment (default 32). Every pointer handed out stays valid until
 * gguf_close(). A gguf_file is immutable after open, so any number of
 * threads may read it concurrently.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_GGUF_H
#define TROVE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/kernels/quant.h"
#include "util/err.h"

typedef struct gguf_file gguf_file;

/* Metadata value types, with the numeric ids of the GGUF format. */
typedef enum gguf_vtype {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
} gguf_vtype;

/* "uint32", "string", "array", ...; "unknown" for other ids. */
const char *gguf_vtype_name(int t);

typedef struct gguf_str {
    const char *s; /* NUL-terminated copy (may also contain NUL bytes) */
    uint64_t len;  /* bytes, excluding the terminator */
} gguf_str;

/* One parsed metadata value. Scalars are widened: unsigned ints and bools
 * in .u, signed ints in .i, floats in .f (type keeps the stored type). */
typedef struct gguf_value {
    gguf_vtype type;
    gguf_vtype elem;  /* element type when type == GGUF_TYPE_ARRAY */
    uint64_t n;       /* element count of an array */
    union {
        uint64_t u;
        int64_t i;
        double f;
        gguf_str str;                  /* GGUF_TYPE_STRING */
        const void *data;              /* array of numbers/bools: n elements of
                                          the C type of elem (uint8_t for bool),
                                          native endian, aligned */
        const gguf_str *strs;          /* array of strings: n entries */
        const struct gguf_value *vals; /* array of arrays: n entries */
    } v;
} gguf_value;

/* ---- open / close ---- */

/* Map and parse `path`. On failure *out is NULL and the error detail names
 * the file and the fault. */
trove_err gguf_open(const char *path, gguf_file **out);

/* Parse a GGUF image held in memory (for fuzzing and tests). The buffer is
 * not copied: it must outlive the handle, and tensor data is only as
 * aligned as `data` itself. */
trove_err gguf_open_memory(const void *data, size_t size, gguf_file **out);

void gguf_close(gguf_file *f); /* NULL is fine */

/* ---- file facts ---- */
const char *gguf_path(const gguf_file *f);    /* "<memory>" for gguf_open_memory */
uint32_t gguf_version(const gguf_file *f);    /* 2 or 3 */
size_t gguf_file_size(const gguf_file *f);
size_t gguf_alignment(const gguf_file *f);    /* general.alignment or 32 */
size_t gguf_data_offset(const gguf_file *f);  /* file offset of the tensor data section */

/* ---- metadata ---- */
int gguf_n_kv(const gguf_file *f);
int gguf_find_key(const gguf_file *f, const char *key); /* index, or -1 if absent */
const char *gguf_key_name(const gguf_file *f, int idx);
const gguf_value *gguf_kv_value(const gguf_file *f, int idx);
const gguf_value *gguf_get(const gguf_file *f, const char *key); /* NULL if absent */
gguf_vtype gguf_key_type(const gguf_file *f, int idx);

/* Typed scalar getters. Integer getters accept any integer type (and bool)
 * whose value fits the result; float getters accept FLOAT32/FLOAT64 and
 * integers. Absent key: TROVE_ENOENT. Present but of another type or out of
 * range: TROVE_ECORRUPT. Both record a detail naming the file and key; *out
 * is left untouched on failure. */
trove_err gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
trove_err gguf_get_i32(const gguf_file *f, const char *key, int32_t *out);
trove_err gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out);
trove_err gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
trove_err gguf_get_f32(const gguf_file *f, const char *key, float *out);
trove_err gguf_get_f64(const gguf_file *f, const char *key, double *out);
trove_err gguf_get_bool(const gguf_file *f, const char *key, bool *out);
trove_err gguf_get_str(const gguf_file *f, const char *key, const char **out, size_t *len);

/* Convenience forms: `dflt` when the key is absent or not convertible. */
uint32_t gguf_u32_or(const gguf_file *f, const char *key, uint32_t dflt);
int64_t gguf_i64_or(const gguf_file *f, const char *key, int64_t dflt);
float gguf_f32_or(const gguf_file *f, const char *key, float dflt);
bool gguf_bool_or(const gguf_file *f, const char *key, bool dflt);
const char *gguf_str_or(const gguf_file *f, const char *key, const char *dflt);

/* Arrays by key index (idx from gguf_find_key). gguf_arr_len is 0 and
 * gguf_arr_type is -1 when the key is not an array. */
uint64_t gguf_arr_len(const gguf_file *f, int idx);
int gguf_arr_type(const gguf_file *f, int idx);
/* String element i, NUL-terminated; NULL if not a string array or i is out
 * of range. len may be NULL. */
const char *gguf_arr_str(const gguf_file *f, int idx, uint64_t i, size_t *len);
/* Raw elements of a numeric/bool array (see gguf_value.v.data); NULL for
 * string arrays, arrays of arrays and non-arrays. */
const void *gguf_arr_data(const gguf_file *f, int idx);
/* Element i of a numeric/bool array converted to double / int64; false if
 * not such an array, i out of range (or, for the int form, not an integer
 * type or out of int64 range). */
bool gguf_arr_f64(const gguf_file *f, int idx, uint64_t i, double *out);
bool gguf_arr_i64(const gguf_file *f, int idx, uint64_t i, int64_t *out);

/* ---- tensors ---- */
#define GGUF_MAX_DIMS 4

typedef struct gguf_tensor {
    const char *name;
    int n_dims;                /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS]; /* ggml order: ne[0] is the contiguous dim;
                                  dims beyond n_dims are 1; all >= 1, and
                                  ne[0] a multiple of the type's block
                                  size. A PyTorch Linear weight [out, in]
                                  has ne = {in, out}. */
    ggml_type type;            /* always quant_supported() */
    const void *data;          /* into the mapping, inside the file; aligned
                                  at least to the element size for F32 (4)
                                  and F16/BF16 (2) */
    size_t nbytes;             /* quant_row_size(type, ne[0]) * rows */
    uint64_t offset;           /* relative to gguf_data_offset() */
} gguf_tensor;

size_t gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i); /* file order */
const gguf_tensor *gguf_tensor_by_name(const gguf_file *f, const char *name); /* NULL if absent */
int64_t gguf_tensor_nelements(const gguf_tensor *t);

#endif
