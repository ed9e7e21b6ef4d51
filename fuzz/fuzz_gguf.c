/* Fuzz target for the GGUF reader: any byte string must either open or
 * fail cleanly; when it opens, every metadata value (nested arrays
 * included) and every tensor byte must be readable through the public API
 * without leaving the buffer (ASan checks), and the dot kernels must run on
 * every tensor row. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed/formats/gguf.h"

static volatile double sink;

static void walk_value(const gguf_value *v)
{
    if (v->type == GGUF_TYPE_STRING) {
        sink += (double)strlen(v->v.str.s) + (double)v->v.str.len;
        return;
    }
    if (v->type != GGUF_TYPE_ARRAY) {
        sink += v->v.f;
        return;
    }
    for (uint64_t i = 0; i < v->n; i++) {
        if (v->elem == GGUF_TYPE_STRING)
            sink += (double)v->v.strs[i].len + (double)(unsigned char)v->v.strs[i].s[v->v.strs[i].len];
        else if (v->elem == GGUF_TYPE_ARRAY)
            walk_value(&v->v.vals[i]);
        else if (v->elem == GGUF_TYPE_UINT8 || v->elem == GGUF_TYPE_INT8 || v->elem == GGUF_TYPE_BOOL)
            sink += ((const uint8_t *)v->v.data)[i];
        else if (v->elem == GGUF_TYPE_FLOAT64 || v->elem == GGUF_TYPE_UINT64 || v->elem == GGUF_TYPE_INT64)
            sink += (double)((const uint64_t *)v->v.data)[i];
        else if (v->elem == GGUF_TYPE_UINT16 || v->elem == GGUF_TYPE_INT16)
            sink += ((const uint16_t *)v->v.data)[i];
        else
            sink += ((const uint32_t *)v->v.data)[i];
    }
}

static void walk_tensor(const gguf_tensor *t)
{
    int64_t n = t->ne[0], rows = gguf_tensor_nelements(t) / n;
    size_t rs = quant_row_size(t->type, n);
    if (rs * (size_t)rows != t->nbytes)
        abort();
    float *y = malloc((size_t)n * sizeof *y);
    void *act = aligned_alloc(32, quant_act_row_size(t->type, n));
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *row = (const uint8_t *)t->data + (size_t)r * rs;
        quant_dequantize_row(t->type, row, y, n); /* may hold NaN/inf: fine */
        quant_quantize_act(t->type, y, act, n);
        sink += quant_vec_dot(t->type, row, act, n);
    }
    free(act);
    free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f;
    if (gguf_open_memory(data, size, &f) != TROVE_OK) {
        if (f || !trove_errmsg()[0])
            abort(); /* failures leave no handle and always say why */
        return 0;
    }
    for (int i = 0; i < gguf_n_kv(f); i++) {
        const char *key = gguf_key_name(f, i);
        if (gguf_find_key(f, key) != i)
            abort();
        walk_value(gguf_kv_value(f, i));
        uint32_t u;
        const char *s;
        size_t len;
        (void)gguf_get_u32(f, key, &u);
        (void)gguf_get_str(f, key, &s, &len);
        for (uint64_t j = 0; j < gguf_arr_len(f, i) && j < 64; j++) {
            double d;
            (void)gguf_arr_f64(f, i, j, &d);
            (void)gguf_arr_str(f, i, j, &len);
        }
    }
    for (size_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if (gguf_tensor_by_name(f, t->name) != t)
            abort();
        walk_tensor(t);
    }
    gguf_close(f);
    return 0;
}
