/* Fuzz target for the safetensors reader: any byte string must either open
 * or fail cleanly; when it opens, every element of every tensor must be
 * readable through the accessors without leaving the buffer (ASan). */
#include <stdint.h>
#include <stdlib.h>

#include "embed/formats/safetensors.h"

static volatile double sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_file *f;
    if (st_open_memory(data, size, "fuzz", &f))
        return 0;
    float row[64];
    for (size_t i = 0; i < st_n_tensors(f); i++) {
        const st_tensor *t = st_tensor_at(f, i);
        for (int64_t j = 0; j < t->n_elem && j < 4096; j++) {
            int64_t x;
            sink += st_elem_f32(t, j);
            if (st_elem_i64(t, j, &x))
                sink += (double)x;
        }
        if (t->n_dims == 2 && t->shape[1] <= 64)
            for (int64_t r = 0; r < t->shape[0] && r < 256; r++) {
                st_row_f32(t, r, row);
                st_row_axpy(t, r, 0.5f, row);
                sink += row[0];
            }
    }
    sink += st_meta(f, "format") != NULL;
    st_close(f);
    return 0;
}
