/* safetensors — see safetensors.h. */
#include "embed/formats/safetensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed/kernels/quant.h"
#include "util/fmap.h"
#include "util/mem.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads little-endian files in place and assumes a little-endian host"
#endif

#define ST_MAX_HEADER (100u * 1024u * 1024u) /* the format's own limit */

struct st_file {
    char *path;
    const unsigned char *base;
    size_t size;
    bool mapped;
    st_tensor *t;
    size_t n;
    char **meta; /* key, value, key, value ... */
    size_t n_meta;
};

static const struct {
    const char *name;
    size_t size;
} DTYPES[ST_DTYPE_COUNT] = {
    [ST_F64] = {"F64", 8}, [ST_F32] = {"F32", 4}, [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I64] = {"I64", 8}, [ST_I32] = {"I32", 4},
    [ST_I16] = {"I16", 2}, [ST_I8] = {"I8", 1}, [ST_U8] = {"U8", 1},
    [ST_BOOL] = {"BOOL", 1},
};

const char *st_dtype_name(st_dtype t)
{
    return (unsigned)t < ST_DTYPE_COUNT ? DTYPES[t].name : "?";
}

size_t st_dtype_size(st_dtype t)
{
    return (unsigned)t < ST_DTYPE_COUNT ? DTYPES[t].size : 0;
}

void st_close(st_file *f)
{
    if (!f)
        return;
    if (f->mapped)
        fmap_close(&(fmap){f->base, f->size});
    for (size_t i = 0; i < f->n; i++)
        free((char *)f->t[i].name);
    for (size_t i = 0; i < 2 * f->n_meta; i++)
        free(f->meta[i]);
    free(f->meta);
    free(f->t);
    free(f->path);
    free(f);
}

static int cmp_offset(const void *a, const void *b)
{
    const st_tensor *x = a, *y = b;
    return (x->data > y->data) - (x->data < y->data);
}

/* Parse one tensor entry of the header into t. */
static trove_err parse_tensor(st_file *f, const char *name, json_t *v, const unsigned char *data,
                              uint64_t data_len, st_tensor *t)
{
    const char *p = f->path;
    if (!json_is_object(v))
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': header entry is not an object", p, name);
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape");
    json_t *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) || json_array_size(off) != 2)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': needs dtype, shape and data_offsets",
                          p, name);
    int d = -1;
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(json_string_value(dt), DTYPES[i].name) == 0)
            d = i;
    if (d < 0)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported", p, name,
                          json_string_value(dt));
    t->dtype = (st_dtype)d;
    size_t nd = json_array_size(sh);
    if (nd > ST_MAX_DIMS)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': %zu dimensions (at most %d)", p, name,
                          nd, ST_MAX_DIMS);
    t->n_dims = (int)nd;
    uint64_t n = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *x = json_array_get(sh, i);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': bad shape entry %zu", p, name, i);
        uint64_t e = (uint64_t)json_integer_value(x);
        if (e && n > UINT64_MAX / e / 8)
            return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': shape overflows", p, name);
        n *= e;
        t->shape[i] = (int64_t)e;
    }
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b))
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': bad data_offsets", p, name);
    uint64_t ob = (uint64_t)json_integer_value(b), oe = (uint64_t)json_integer_value(e);
    if (oe > data_len)
        return trove_fail(TROVE_ECORRUPT,
                          "%s: tensor '%s': data [%llu, %llu) beyond the %llu data bytes "
                          "(truncated file?)",
                          p, name, (unsigned long long)ob, (unsigned long long)oe,
                          (unsigned long long)data_len);
    if (oe - ob != n * DTYPES[d].size)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s': %llu data bytes for %llu %s elements",
                          p, name, (unsigned long long)(oe - ob), (unsigned long long)n,
                          DTYPES[d].name);
    t->n_elem = (int64_t)n;
    t->data = data + ob;
    t->nbytes = (size_t)(oe - ob);
    t->name = xstrdup(name);
    return TROVE_OK;
}

static trove_err parse(st_file *f)
{
    const char *p = f->path;
    if (f->size < 8)
        return trove_fail(TROVE_ECORRUPT, "%s: %zu bytes is too short for a safetensors file", p,
                          f->size);
    uint64_t hlen;
    memcpy(&hlen, f->base, 8);
    if (hlen > ST_MAX_HEADER || hlen > f->size - 8)
        return trove_fail(TROVE_ECORRUPT,
                          "%s: header length %llu does not fit the %zu-byte file (not safetensors?)",
                          p, (unsigned long long)hlen, f->size);
    if (hlen < 2 || f->base[8] != '{')
        return trove_fail(TROVE_ECORRUPT, "%s: header is not a JSON object (not safetensors?)", p);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)f->base + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return trove_fail(TROVE_ECORRUPT, "%s: header JSON: %s (column %d)", p,
                          root ? "not an object" : jerr.text, root ? 0 : jerr.column);
    }
    const unsigned char *data = f->base + 8 + hlen;
    uint64_t data_len = f->size - 8 - hlen;
    f->t = xcalloc(json_object_size(root) + 1, sizeof *f->t);
    trove_err e = TROVE_OK;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(v) && !json_is_null(v)) {
                e = trove_fail(TROVE_ECORRUPT, "%s: __metadata__ is not an object", p);
                break;
            }
            const char *mk;
            json_t *mv;
            f->meta = xcalloc(2 * json_object_size(v) + 1, sizeof *f->meta);
            json_object_foreach(v, mk, mv) {
                if (!json_is_string(mv))
                    continue; /* the format says strings only; ignore the rest */
                f->meta[2 * f->n_meta] = xstrdup(mk);
                f->meta[2 * f->n_meta + 1] = xstrdup(json_string_value(mv));
                f->n_meta++;
            }
            continue;
        }
        if ((e = parse_tensor(f, key, v, data, data_len, &f->t[f->n])))
            break;
        f->n++;
    }
    json_decref(root);
    if (e)
        return e;
    qsort(f->t, f->n, sizeof *f->t, cmp_offset);
    for (size_t i = 1; i < f->n; i++)
        if (f->t[i].data < f->t[i - 1].data + f->t[i - 1].nbytes)
            return trove_fail(TROVE_ECORRUPT, "%s: tensors '%s' and '%s' overlap", p,
                              f->t[i - 1].name, f->t[i].name);
    return TROVE_OK;
}

trove_err st_open_memory(const void *data, size_t size, const char *name, st_file **out)
{
    st_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(name ? name : "<memory>");
    f->base = data;
    f->size = size;
    trove_err e = parse(f);
    if (e) {
        st_close(f);
        f = NULL;
    }
    *out = f;
    return e;
}

trove_err st_open(const char *path, st_file **out)
{
    *out = NULL;
    fmap fm;
    trove_err rc = fmap_open(path, NULL, &fm);
    if (rc)
        return rc;
    if (fm.len < 8) {
        size_t n = fm.len;
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "%s: %zu bytes is too short for a safetensors file",
                          path, n);
    }
    st_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    f->base = fm.data;
    f->size = fm.len;
    f->mapped = true;
    trove_err e = parse(f);
    if (e) {
        st_close(f);
        return e;
    }
    *out = f;
    return TROVE_OK;
}

const char *st_path(const st_file *f)
{
    return f->path;
}

size_t st_file_size(const st_file *f)
{
    return f->size;
}

size_t st_n_tensors(const st_file *f)
{
    return f->n;
}

const st_tensor *st_tensor_at(const st_file *f, size_t i)
{
    return i < f->n ? &f->t[i] : NULL;
}

const st_tensor *st_get(const st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}

const char *st_meta(const st_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[2 * i], key) == 0)
            return f->meta[2 * i + 1];
    return NULL;
}

/* ---- element access (unaligned-safe loads) ---- */

static float elem(const unsigned char *p, st_dtype d)
{
    switch (d) {
    case ST_F64: {
        double x;
        memcpy(&x, p, 8);
        return (float)x;
    }
    case ST_F32: {
        float x;
        memcpy(&x, p, 4);
        return x;
    }
    case ST_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return quant_f16_to_f32(h);
    }
    case ST_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return quant_bf16_to_f32(h);
    }
    case ST_I64: {
        int64_t x;
        memcpy(&x, p, 8);
        return (float)x;
    }
    case ST_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        return (float)x;
    }
    case ST_I16: {
        int16_t x;
        memcpy(&x, p, 2);
        return (float)x;
    }
    case ST_I8:
        return (float)(int8_t)p[0];
    case ST_U8:
    case ST_BOOL:
    default:
        return (float)p[0];
    }
}

float st_elem_f32(const st_tensor *t, int64_t i)
{
    return elem(t->data + (size_t)i * DTYPES[t->dtype].size, t->dtype);
}

bool st_elem_i64(const st_tensor *t, int64_t i, int64_t *out)
{
    const unsigned char *p = t->data + (size_t)i * DTYPES[t->dtype].size;
    switch (t->dtype) {
    case ST_I64:
        memcpy(out, p, 8);
        return true;
    case ST_I32: {
        int32_t x;
        memcpy(&x, p, 4);
        *out = x;
        return true;
    }
    case ST_I16: {
        int16_t x;
        memcpy(&x, p, 2);
        *out = x;
        return true;
    }
    case ST_I8:
        *out = (int8_t)p[0];
        return true;
    case ST_U8:
    case ST_BOOL:
        *out = p[0];
        return true;
    default:
        return false;
    }
}

void st_row_f32(const st_tensor *t, int64_t r, float *out)
{
    int64_t cols = t->n_dims >= 2 ? t->shape[t->n_dims - 1] : t->n_elem;
    size_t es = DTYPES[t->dtype].size;
    const unsigned char *p = t->data + (size_t)r * (size_t)cols * es;
    if (t->dtype == ST_F32) {
        memcpy(out, p, (size_t)cols * 4);
        return;
    }
    for (int64_t j = 0; j < cols; j++)
        out[j] = elem(p + (size_t)j * es, t->dtype);
}

void st_row_axpy(const st_tensor *t, int64_t r, float scale, float *out)
{
    int64_t cols = t->n_dims >= 2 ? t->shape[t->n_dims - 1] : t->n_elem;
    size_t es = DTYPES[t->dtype].size;
    const unsigned char *p = t->data + (size_t)r * (size_t)cols * es;
    if (t->dtype == ST_F16) {
        for (int64_t j = 0; j < cols; j++) {
            uint16_t h;
            memcpy(&h, p + 2 * (size_t)j, 2);
            out[j] += scale * quant_f16_to_f32(h);
        }
        return;
    }
    for (int64_t j = 0; j < cols; j++)
        out[j] += scale * elem(p + (size_t)j * es, t->dtype);
}
