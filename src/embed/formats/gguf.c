/* gguf — GGUF reader. Layout of a GGUF v2/v3 file (all little-endian):
 *
 *   "GGUF" u32 version, u64 n_tensors, u64 n_kv
 *   n_kv x  { string key, u32 value_type, value }
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment, then the tensor data section
 *
 * where string = u64 length + bytes, and an array value = u32 element type,
 * u64 count, elements. Every read goes through a cursor that checks the
 * remaining length first; every count is checked against the bytes left
 * before anything is allocated for it, so a hostile header cannot make us
 * allocate more than a small multiple of the file size. */
#include "embed/formats/gguf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/arena.h"
#include "util/fmap.h"
#include "util/mem.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads little-endian files in place and assumes a little-endian host"
#endif

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DEPTH 8 /* nesting of arrays of arrays */

struct gguf_file {
    char *path;
    const unsigned char *base;
    size_t size;
    int mapped;
    uint32_t version;
    size_t alignment;
    size_t data_off;
    int n_kv;
    const char **keys;
    gguf_value *vals;
    int *key_order; /* indices sorted by key, for bsearch */
    size_t n_tensors;
    gguf_tensor *tensors;
    size_t *tensor_order;
    arena arena; /* metadata copies: freed all at once on close */
};

/* ---- bounds-checked cursor ---- */

typedef struct cursor {
    const unsigned char *p;
    size_t pos, size;
    gguf_file *f;
} cursor;

static size_t cur_left(const cursor *c)
{
    return c->size - c->pos;
}

static trove_err cur_need(const cursor *c, size_t n, const char *what)
{
    if (cur_left(c) < n)
        return trove_fail(TROVE_ECORRUPT,
                          "%s: truncated GGUF file: %s at offset %zu needs %zu bytes, "
                          "only %zu left", c->f->path, what, c->pos, n, cur_left(c));
    return TROVE_OK;
}

static trove_err cur_read(cursor *c, void *dst, size_t n, const char *what)
{
    trove_err e = cur_need(c, n, what);
    if (e)
        return e;
    memcpy(dst, c->p + c->pos, n);
    c->pos += n;
    return TROVE_OK;
}

static trove_err cur_u32(cursor *c, uint32_t *v, const char *what)
{
    return cur_read(c, v, 4, what);
}

static trove_err cur_u64(cursor *c, uint64_t *v, const char *what)
{
    return cur_read(c, v, 8, what);
}

/* A GGUF string, copied NUL-terminated into the arena. */
static trove_err cur_str(cursor *c, gguf_str *out, const char *what)
{
    uint64_t len;
    trove_err e = cur_u64(c, &len, what);
    if (e)
        return e;
    if (len > cur_left(c))
        return trove_fail(TROVE_ECORRUPT,
                          "%s: corrupt GGUF file: %s at offset %zu claims %llu bytes, "
                          "only %zu left", c->f->path, what, c->pos - 8,
                          (unsigned long long)len, cur_left(c));
    char *s = arena_alloc(&c->f->arena, (size_t)len + 1);
    memcpy(s, c->p + c->pos, (size_t)len);
    s[len] = '\0';
    c->pos += (size_t)len;
    out->s = s;
    out->len = len;
    return TROVE_OK;
}

/* ---- value types ---- */

static const char *const vtype_names[] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};

const char *gguf_vtype_name(int t)
{
    if (t < 0 || t >= (int)(sizeof vtype_names / sizeof vtype_names[0]))
        return "unknown";
    return vtype_names[t];
}

/* Bytes of a fixed-size value type; 0 for string, array and unknown ids. */
static size_t vtype_size(uint32_t t)
{
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

/* Smallest encoding of one element, used to bound counts before allocating. */
static size_t vtype_min_size(uint32_t t)
{
    if (t == GGUF_TYPE_STRING)
        return 8;
    if (t == GGUF_TYPE_ARRAY)
        return 12;
    return vtype_size(t);
}

static bool vtype_valid(uint32_t t)
{
    return t <= GGUF_TYPE_FLOAT64;
}

static void scalar_decode(gguf_value *v, const unsigned char *p)
{
    switch (v->type) {
    case GGUF_TYPE_UINT8: v->v.u = p[0]; break;
    case GGUF_TYPE_BOOL: v->v.u = p[0] != 0; break;
    case GGUF_TYPE_INT8: v->v.i = (int8_t)p[0]; break;
    case GGUF_TYPE_UINT16: { uint16_t x; memcpy(&x, p, 2); v->v.u = x; break; }
    case GGUF_TYPE_INT16: { int16_t x; memcpy(&x, p, 2); v->v.i = x; break; }
    case GGUF_TYPE_UINT32: { uint32_t x; memcpy(&x, p, 4); v->v.u = x; break; }
    case GGUF_TYPE_INT32: { int32_t x; memcpy(&x, p, 4); v->v.i = x; break; }
    case GGUF_TYPE_FLOAT32: { float x; memcpy(&x, p, 4); v->v.f = x; break; }
    case GGUF_TYPE_UINT64: { uint64_t x; memcpy(&x, p, 8); v->v.u = x; break; }
    case GGUF_TYPE_INT64: { int64_t x; memcpy(&x, p, 8); v->v.i = x; break; }
    case GGUF_TYPE_FLOAT64: { double x; memcpy(&x, p, 8); v->v.f = x; break; }
    default: break;
    }
}

static trove_err parse_value(cursor *c, uint32_t type, gguf_value *v, const char *key, int depth);

static trove_err parse_array(cursor *c, gguf_value *v, const char *key, int depth)
{
    uint32_t elem;
    uint64_t n;
    trove_err e;
    if ((e = cur_u32(c, &elem, "array element type")) || (e = cur_u64(c, &n, "array length")))
        return e;
    if (!vtype_valid(elem))
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: key '%s': array element "
                          "type %u is not a GGUF value type", c->f->path, key, elem);
    if (elem == GGUF_TYPE_ARRAY && depth >= GGUF_MAX_DEPTH)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: key '%s': arrays nested "
                          "deeper than %d levels", c->f->path, key, GGUF_MAX_DEPTH);
    size_t min = vtype_min_size(elem);
    if (n > cur_left(c) / min)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: key '%s': array of %llu %s "
                          "values at offset %zu cannot fit in the %zu bytes left",
                          c->f->path, key, (unsigned long long)n, gguf_vtype_name((int)elem),
                          c->pos, cur_left(c));
    v->elem = (gguf_vtype)elem;
    v->n = n;
    size_t sz = vtype_size(elem);
    if (sz) {
        /* Fixed-size elements: copy so callers get aligned native arrays. */
        void *dst = arena_alloc(&c->f->arena, (size_t)n * sz);
        memcpy(dst, c->p + c->pos, (size_t)n * sz);
        c->pos += (size_t)n * sz;
        v->v.data = dst;
        return TROVE_OK;
    }
    if (elem == GGUF_TYPE_STRING) {
        gguf_str *strs = arena_alloc(&c->f->arena, (size_t)n * sizeof *strs);
        for (uint64_t i = 0; i < n; i++)
            if ((e = cur_str(c, &strs[i], "array string")))
                return e;
        v->v.strs = strs;
        return TROVE_OK;
    }
    gguf_value *vals = arena_alloc(&c->f->arena, (size_t)n * sizeof *vals);
    for (uint64_t i = 0; i < n; i++)
        if ((e = parse_value(c, GGUF_TYPE_ARRAY, &vals[i], key, depth + 1)))
            return e;
    v->v.vals = vals;
    return TROVE_OK;
}

static trove_err parse_value(cursor *c, uint32_t type, gguf_value *v, const char *key, int depth)
{
    memset(v, 0, sizeof *v);
    if (!vtype_valid(type))
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: key '%s' has value type %u, "
                          "which is not a GGUF value type", c->f->path, key, type);
    v->type = (gguf_vtype)type;
    if (type == GGUF_TYPE_STRING)
        return cur_str(c, &v->v.str, "string value");
    if (type == GGUF_TYPE_ARRAY)
        return parse_array(c, v, key, depth);
    size_t sz = vtype_size(type);
    trove_err e = cur_need(c, sz, "scalar value");
    if (e)
        return e;
    scalar_decode(v, c->p + c->pos);
    c->pos += sz;
    return TROVE_OK;
}

/* ---- sorted indexes ---- */

/* qsort has no context argument; the file being sorted is passed in a
 * thread-local so concurrent opens on different threads stay independent. */
static _Thread_local const gguf_file *tl_sort_file;

static int cmp_key_idx(const void *a, const void *b)
{
    const gguf_file *f = tl_sort_file;
    return strcmp(f->keys[*(const int *)a], f->keys[*(const int *)b]);
}

static int cmp_tensor_idx(const void *a, const void *b)
{
    const gguf_file *f = tl_sort_file;
    return strcmp(f->tensors[*(const size_t *)a].name, f->tensors[*(const size_t *)b].name);
}

/* ---- parsing ---- */

static trove_err parse_kvs(cursor *c, uint64_t n_kv)
{
    gguf_file *f = c->f;
    /* Each entry takes at least 8 (key length) + 4 (type) + 1 bytes. */
    if (n_kv > cur_left(c) / 13 || n_kv > (uint64_t)INT32_MAX)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: header claims %llu metadata "
                          "entries, more than the file can hold", f->path,
                          (unsigned long long)n_kv);
    f->n_kv = (int)n_kv;
    f->keys = xcalloc(n_kv ? n_kv : 1, sizeof *f->keys);
    f->vals = xcalloc(n_kv ? n_kv : 1, sizeof *f->vals);
    for (int i = 0; i < f->n_kv; i++) {
        gguf_str key;
        uint32_t type;
        trove_err e;
        if ((e = cur_str(c, &key, "metadata key")))
            return e;
        if (strlen(key.s) != key.len)
            return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: metadata key %d "
                              "contains a NUL byte", f->path, i);
        f->keys[i] = key.s;
        if ((e = cur_u32(c, &type, "metadata value type")))
            return e;
        if ((e = parse_value(c, type, &f->vals[i], key.s, 0)))
            return e;
    }
    f->key_order = xmalloc((n_kv ? n_kv : 1) * sizeof *f->key_order);
    for (int i = 0; i < f->n_kv; i++)
        f->key_order[i] = i;
    tl_sort_file = f;
    qsort(f->key_order, (size_t)f->n_kv, sizeof *f->key_order, cmp_key_idx);
    for (int i = 1; i < f->n_kv; i++)
        if (strcmp(f->keys[f->key_order[i - 1]], f->keys[f->key_order[i]]) == 0)
            return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: duplicate metadata key "
                              "'%s'", f->path, f->keys[f->key_order[i]]);
    return TROVE_OK;
}

static trove_err read_alignment(gguf_file *f)
{
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_value *v = gguf_get(f, "general.alignment");
    if (!v)
        return TROVE_OK;
    if (v->type != GGUF_TYPE_UINT32)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: general.alignment has type "
                          "%s, expected uint32", f->path, gguf_vtype_name(v->type));
    if (v->v.u == 0 || (v->v.u & (v->v.u - 1)) != 0)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: general.alignment %llu is "
                          "not a power of two", f->path, (unsigned long long)v->v.u);
    f->alignment = (size_t)v->v.u;
    return TROVE_OK;
}

static trove_err parse_tensor_info(cursor *c, size_t i, gguf_tensor *t)
{
    gguf_file *f = c->f;
    gguf_str name;
    uint32_t n_dims, type;
    trove_err e;
    if ((e = cur_str(c, &name, "tensor name")))
        return e;
    if (strlen(name.s) != name.len)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: name of tensor %zu contains "
                          "a NUL byte", f->path, i);
    t->name = name.s;
    if ((e = cur_u32(c, &n_dims, "tensor dimension count")))
        return e;
    if (n_dims < 1 || n_dims > GGUF_MAX_DIMS)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' has %u "
                          "dimensions (1 to %d allowed)", f->path, t->name, n_dims, GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    int64_t nel = 1;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        if (d < t->n_dims && (e = cur_u64(c, &ne, "tensor dimension")))
            return e;
        if (ne == 0)
            return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' has an empty "
                              "dimension %d", f->path, t->name, d);
        if (ne > (uint64_t)INT64_MAX || __builtin_mul_overflow(nel, (int64_t)ne, &nel))
            return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' has too many "
                              "elements (dimension %d is %llu)", f->path, t->name, d,
                              (unsigned long long)ne);
        t->ne[d] = (int64_t)ne;
    }
    if ((e = cur_u32(c, &type, "tensor type")) || (e = cur_u64(c, &t->offset, "tensor offset")))
        return e;
    if (!quant_supported((int)type))
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tensor '%s' has type %s (%u), which trove "
                          "cannot read (supported: F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)",
                          f->path, t->name, quant_type_name((int)type), type);
    t->type = (ggml_type)type;
    size_t bs = quant_block_size((int)type);
    if (t->ne[0] % (int64_t)bs != 0)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' of type %s has "
                          "rows of %lld elements, not a multiple of the block size %zu",
                          f->path, t->name, quant_type_name((int)type), (long long)t->ne[0], bs);
    size_t row = quant_row_size((int)type, t->ne[0]);
    size_t nbytes;
    if (row == 0 || __builtin_mul_overflow(row, (size_t)(nel / t->ne[0]), &nbytes))
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' is too large",
                          f->path, t->name);
    t->nbytes = nbytes;
    return TROVE_OK;
}

static trove_err place_tensor(gguf_file *f, gguf_tensor *t)
{
    if (t->offset % f->alignment != 0)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: tensor '%s' data offset %llu "
                          "is not a multiple of the alignment %zu", f->path, t->name,
                          (unsigned long long)t->offset, f->alignment);
    size_t avail = f->size - f->data_off;
    if (t->offset > avail || t->nbytes > avail - t->offset)
        return trove_fail(TROVE_ECORRUPT, "%s: truncated or corrupt GGUF file: tensor '%s' "
                          "(%zu bytes at data offset %llu) extends past the end of the file "
                          "(data section holds %zu bytes)", f->path, t->name, t->nbytes,
                          (unsigned long long)t->offset, avail);
    t->data = f->base + f->data_off + t->offset;
    /* Float tensors are read through float and uint16_t pointers. A file
     * with general.alignment 1 or 2 (legal, never seen in practice) or a
     * misaligned memory image could break that; refuse rather than fault. */
    size_t need = t->type == GGML_TYPE_F32 ? 4 : quant_type_size(t->type) == 2 ? 2 : 1;
    if ((uintptr_t)t->data % need != 0)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tensor '%s' (%s) data is not aligned to %zu "
                          "bytes (general.alignment %zu)", f->path, t->name,
                          quant_type_name(t->type), need, f->alignment);
    return TROVE_OK;
}

static trove_err parse_tensors(cursor *c, uint64_t n)
{
    gguf_file *f = c->f;
    /* Each info takes at least 8 (name length) + 4 + 8 (one dim) + 4 + 8 bytes. */
    if (n > cur_left(c) / 32)
        return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: header claims %llu tensors, "
                          "more than the file can hold", f->path, (unsigned long long)n);
    f->n_tensors = (size_t)n;
    f->tensors = xcalloc(n ? n : 1, sizeof *f->tensors);
    trove_err e;
    for (size_t i = 0; i < f->n_tensors; i++)
        if ((e = parse_tensor_info(c, i, &f->tensors[i])))
            return e;
    size_t pad = (f->alignment - c->pos % f->alignment) % f->alignment;
    f->data_off = c->pos + pad;
    if (f->data_off > f->size) {
        if (f->n_tensors > 0)
            return trove_fail(TROVE_ECORRUPT, "%s: truncated GGUF file: the tensor data section "
                              "would start at offset %zu, past the end of the file (%zu bytes)",
                              f->path, f->data_off, f->size);
        f->data_off = f->size;
    }
    for (size_t i = 0; i < f->n_tensors; i++)
        if ((e = place_tensor(f, &f->tensors[i])))
            return e;
    f->tensor_order = xmalloc((n ? n : 1) * sizeof *f->tensor_order);
    for (size_t i = 0; i < f->n_tensors; i++)
        f->tensor_order[i] = i;
    tl_sort_file = f;
    qsort(f->tensor_order, f->n_tensors, sizeof *f->tensor_order, cmp_tensor_idx);
    for (size_t i = 1; i < f->n_tensors; i++)
        if (strcmp(f->tensors[f->tensor_order[i - 1]].name,
                   f->tensors[f->tensor_order[i]].name) == 0)
            return trove_fail(TROVE_ECORRUPT, "%s: corrupt GGUF file: duplicate tensor name "
                              "'%s'", f->path, f->tensors[f->tensor_order[i]].name);
    return TROVE_OK;
}

static trove_err parse(gguf_file *f)
{
    cursor c = {f->base, 0, f->size, f};
    char magic[4];
    uint32_t version;
    uint64_t n_tensors, n_kv;
    trove_err e;
    if ((e = cur_read(&c, magic, 4, "magic")))
        return e;
    if (memcmp(magic, "GGUF", 4) != 0)
        return trove_fail(TROVE_ECORRUPT, "%s: not a GGUF file (bad magic)", f->path);
    if ((e = cur_u32(&c, &version, "version")))
        return e;
    if (version == 1)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: GGUF version 1 is not supported (only 2 "
                          "and 3); convert the model again with a current llama.cpp", f->path);
    if ((version & 0xFFFF) == 0 && version != 0)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: GGUF version field %#x: big-endian GGUF "
                          "files are not supported", f->path, version);
    if (version != 2 && version != 3)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: GGUF version %u is not supported (only 2 "
                          "and 3)", f->path, version);
    f->version = version;
    if ((e = cur_u64(&c, &n_tensors, "tensor count")) || (e = cur_u64(&c, &n_kv, "metadata count")))
        return e;
    if ((e = parse_kvs(&c, n_kv)) || (e = read_alignment(f)))
        return e;
    return parse_tensors(&c, n_tensors);
}

static trove_err finish_open(gguf_file *f, gguf_file **out)
{
    trove_err e = parse(f);
    if (e) {
        gguf_close(f);
        return e;
    }
    *out = f;
    return TROVE_OK;
}

trove_err gguf_open_memory(const void *data, size_t size, gguf_file **out)
{
    *out = NULL;
    gguf_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup("<memory>");
    f->base = data;
    f->size = size;
    if (!data && size)
        return gguf_close(f), trove_fail(TROVE_EINVAL, "gguf_open_memory: NULL buffer");
    return finish_open(f, out);
}

trove_err gguf_open(const char *path, gguf_file **out)
{
    *out = NULL;
    fmap fm;
    trove_err rc = fmap_open(path, NULL, &fm);
    if (rc)
        return rc;
    if (fm.len < 24) {
        size_t n = fm.len;
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "%s: truncated GGUF file: %zu bytes, shorter than "
                          "the 24-byte header", path, n);
    }
    gguf_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    f->base = fm.data;
    f->size = fm.len;
    f->mapped = 1;
    return finish_open(f, out);
}

void gguf_close(gguf_file *f)
{
    if (!f)
        return;
    if (f->mapped)
        fmap_close(&(fmap){f->base, f->size});
    arena_free(&f->arena);
    free(f->keys);
    free(f->vals);
    free(f->key_order);
    free(f->tensors);
    free(f->tensor_order);
    free(f->path);
    free(f);
}

/* ---- file facts ---- */

const char *gguf_path(const gguf_file *f) { return f->path; }
uint32_t gguf_version(const gguf_file *f) { return f->version; }
size_t gguf_file_size(const gguf_file *f) { return f->size; }
size_t gguf_alignment(const gguf_file *f) { return f->alignment; }
size_t gguf_data_offset(const gguf_file *f) { return f->data_off; }

/* ---- metadata ---- */

int gguf_n_kv(const gguf_file *f)
{
    return f->n_kv;
}

int gguf_find_key(const gguf_file *f, const char *key)
{
    int lo = 0, hi = f->n_kv;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->keys[f->key_order[mid]]);
        if (c == 0)
            return f->key_order[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

const char *gguf_key_name(const gguf_file *f, int idx)
{
    return idx >= 0 && idx < f->n_kv ? f->keys[idx] : NULL;
}

const gguf_value *gguf_kv_value(const gguf_file *f, int idx)
{
    return idx >= 0 && idx < f->n_kv ? &f->vals[idx] : NULL;
}

const gguf_value *gguf_get(const gguf_file *f, const char *key)
{
    return gguf_kv_value(f, gguf_find_key(f, key));
}

gguf_vtype gguf_key_type(const gguf_file *f, int idx)
{
    const gguf_value *v = gguf_kv_value(f, idx);
    return v ? v->type : (gguf_vtype)-1;
}

static bool is_unsigned(gguf_vtype t)
{
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 ||
           t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_BOOL;
}

static bool is_signed(gguf_vtype t)
{
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 ||
           t == GGUF_TYPE_INT64;
}

static bool is_float(gguf_vtype t)
{
    return t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64;
}

/* Integer value as a sign + magnitude, so every conversion can be range checked. */
static bool val_int(const gguf_value *v, bool *neg, uint64_t *mag)
{
    if (is_unsigned(v->type)) {
        *neg = false;
        *mag = v->v.u;
        return true;
    }
    if (is_signed(v->type)) {
        *neg = v->v.i < 0;
        *mag = *neg ? (uint64_t)0 - (uint64_t)v->v.i : (uint64_t)v->v.i;
        return true;
    }
    return false;
}

static trove_err lookup(const gguf_file *f, const char *key, const gguf_value **v)
{
    *v = gguf_get(f, key);
    if (!*v)
        return trove_fail(TROVE_ENOENT, "%s: metadata key '%s' not found", f->path, key);
    return TROVE_OK;
}

static trove_err bad_type(const gguf_file *f, const char *key, const gguf_value *v, const char *want)
{
    return trove_fail(TROVE_ECORRUPT, "%s: metadata key '%s' has type %s, expected %s",
                      f->path, key, gguf_vtype_name(v->type), want);
}

static trove_err get_int(const gguf_file *f, const char *key, int64_t lo, uint64_t hi,
                         const char *want, bool *neg, uint64_t *mag)
{
    const gguf_value *v;
    trove_err e = lookup(f, key, &v);
    if (e)
        return e;
    if (!val_int(v, neg, mag))
        return bad_type(f, key, v, want);
    bool ok = *neg ? (lo < 0 && *mag <= (uint64_t)0 - (uint64_t)lo) : *mag <= hi;
    if (!ok)
        return trove_fail(TROVE_ECORRUPT, "%s: metadata key '%s': value %s%llu does not fit "
                          "in %s", f->path, key, *neg ? "-" : "", (unsigned long long)*mag, want);
    return TROVE_OK;
}

static int64_t signed_of(bool neg, uint64_t mag)
{
    return neg ? (int64_t)(0 - mag) : (int64_t)mag;
}

trove_err gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out)
{
    bool neg = false;
    uint64_t m = 0;
    trove_err e = get_int(f, key, 0, UINT32_MAX, "uint32", &neg, &m);
    if (!e)
        *out = (uint32_t)m;
    return e;
}

trove_err gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out)
{
    bool neg = false;
    uint64_t m = 0;
    trove_err e = get_int(f, key, 0, UINT64_MAX, "uint64", &neg, &m);
    if (!e)
        *out = m;
    return e;
}

trove_err gguf_get_i32(const gguf_file *f, const char *key, int32_t *out)
{
    bool neg = false;
    uint64_t m = 0;
    trove_err e = get_int(f, key, INT32_MIN, INT32_MAX, "int32", &neg, &m);
    if (!e)
        *out = (int32_t)signed_of(neg, m);
    return e;
}

trove_err gguf_get_i64(const gguf_file *f, const char *key, int64_t *out)
{
    bool neg = false;
    uint64_t m = 0;
    trove_err e = get_int(f, key, INT64_MIN, INT64_MAX, "int64", &neg, &m);
    if (!e)
        *out = signed_of(neg, m);
    return e;
}

trove_err gguf_get_f64(const gguf_file *f, const char *key, double *out)
{
    const gguf_value *v;
    trove_err e = lookup(f, key, &v);
    if (e)
        return e;
    bool neg = false;
    uint64_t m = 0;
    if (is_float(v->type))
        *out = v->v.f;
    else if (v->type != GGUF_TYPE_BOOL && val_int(v, &neg, &m))
        *out = neg ? -(double)m : (double)m;
    else
        return bad_type(f, key, v, "a number");
    return TROVE_OK;
}

trove_err gguf_get_f32(const gguf_file *f, const char *key, float *out)
{
    double d;
    trove_err e = gguf_get_f64(f, key, &d);
    if (!e)
        *out = (float)d;
    return e;
}

trove_err gguf_get_bool(const gguf_file *f, const char *key, bool *out)
{
    const gguf_value *v;
    trove_err e = lookup(f, key, &v);
    if (e)
        return e;
    bool neg = false;
    uint64_t m = 0;
    if (!val_int(v, &neg, &m) || neg || m > 1)
        return bad_type(f, key, v, "bool");
    *out = m != 0;
    return TROVE_OK;
}

trove_err gguf_get_str(const gguf_file *f, const char *key, const char **out, size_t *len)
{
    const gguf_value *v;
    trove_err e = lookup(f, key, &v);
    if (e)
        return e;
    if (v->type != GGUF_TYPE_STRING)
        return bad_type(f, key, v, "string");
    *out = v->v.str.s;
    if (len)
        *len = (size_t)v->v.str.len;
    return TROVE_OK;
}

/* The _or forms leave the error detail alone when the key is absent. */
#define OR_GETTER(name, T, getter)                                         \
    T name(const gguf_file *f, const char *key, T dflt)                    \
    {                                                                      \
        T out = dflt;                                                      \
        const gguf_value *v = gguf_get(f, key);                            \
        if (v && getter(f, key, &out) != TROVE_OK)                         \
            out = dflt;                                                    \
        return out;                                                        \
    }

OR_GETTER(gguf_u32_or, uint32_t, gguf_get_u32)
OR_GETTER(gguf_i64_or, int64_t, gguf_get_i64)
OR_GETTER(gguf_f32_or, float, gguf_get_f32)
OR_GETTER(gguf_bool_or, bool, gguf_get_bool)

const char *gguf_str_or(const gguf_file *f, const char *key, const char *dflt)
{
    const gguf_value *v = gguf_get(f, key);
    return v && v->type == GGUF_TYPE_STRING ? v->v.str.s : dflt;
}

/* ---- arrays ---- */

static const gguf_value *arr(const gguf_file *f, int idx)
{
    const gguf_value *v = gguf_kv_value(f, idx);
    return v && v->type == GGUF_TYPE_ARRAY ? v : NULL;
}

uint64_t gguf_arr_len(const gguf_file *f, int idx)
{
    const gguf_value *v = arr(f, idx);
    return v ? v->n : 0;
}

int gguf_arr_type(const gguf_file *f, int idx)
{
    const gguf_value *v = arr(f, idx);
    return v ? (int)v->elem : -1;
}

const char *gguf_arr_str(const gguf_file *f, int idx, uint64_t i, size_t *len)
{
    const gguf_value *v = arr(f, idx);
    if (!v || v->elem != GGUF_TYPE_STRING || i >= v->n)
        return NULL;
    if (len)
        *len = (size_t)v->v.strs[i].len;
    return v->v.strs[i].s;
}

const void *gguf_arr_data(const gguf_file *f, int idx)
{
    const gguf_value *v = arr(f, idx);
    return v && vtype_size(v->elem) ? v->v.data : NULL;
}

/* Element i of a numeric array decoded into a scalar gguf_value. */
static bool arr_elem(const gguf_file *f, int idx, uint64_t i, gguf_value *out)
{
    const gguf_value *v = arr(f, idx);
    size_t sz = v ? vtype_size(v->elem) : 0;
    if (!sz || i >= v->n)
        return false;
    memset(out, 0, sizeof *out);
    out->type = v->elem;
    scalar_decode(out, (const unsigned char *)v->v.data + i * sz);
    return true;
}

bool gguf_arr_f64(const gguf_file *f, int idx, uint64_t i, double *out)
{
    gguf_value e;
    bool neg = false;
    uint64_t m = 0;
    if (!arr_elem(f, idx, i, &e))
        return false;
    if (is_float(e.type))
        *out = e.v.f;
    else if (val_int(&e, &neg, &m))
        *out = neg ? -(double)m : (double)m;
    else
        return false;
    return true;
}

bool gguf_arr_i64(const gguf_file *f, int idx, uint64_t i, int64_t *out)
{
    gguf_value e;
    bool neg = false;
    uint64_t m = 0;
    if (!arr_elem(f, idx, i, &e) || !val_int(&e, &neg, &m))
        return false;
    if (!neg && m > (uint64_t)INT64_MAX)
        return false;
    *out = signed_of(neg, m);
    return true;
}

/* ---- tensors ---- */

size_t gguf_n_tensors(const gguf_file *f)
{
    return f->n_tensors;
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, size_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_tensor_by_name(const gguf_file *f, const char *name)
{
    size_t lo = 0, hi = f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gguf_tensor *t = &f->tensors[f->tensor_order[mid]];
        int c = strcmp(name, t->name);
        if (c == 0)
            return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

int64_t gguf_tensor_nelements(const gguf_tensor *t)
{
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}
