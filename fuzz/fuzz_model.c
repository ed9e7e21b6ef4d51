/* Fuzz target: model loading and a tiny forward pass on mutated GGUF
 * models (seeds: fuzz/seeds/model/, small bert, gemma-embedding and qwen3 files
 * written by tests/tools/make_models.py --fuzz-seeds). Every malformed
 * hyperparameter, missing or misshapen tensor must give an error, never a
 * crash, and any model that loads must run. */
#include <stddef.h>
#include <stdint.h>

#include "embed/formats/gguf.h"
#include "embed/kernels/kernels.h"
#include "embed/arch/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f;
    if (gguf_open_memory(data, size, &f) != TROVE_OK)
        return 0;
    emodel *m;
    if (emodel_load(f, &m) == TROVE_OK) {
        const emodel_hparams *hp = emodel_hp(m);
        /* keep each run cheap: only small models go forward */
        if (hp->n_embd <= 128 && hp->n_ff <= 512 && hp->n_layer <= 4 && hp->n_out <= 512 &&
            hp->head_dim <= 128) {
            int32_t ids[5];
            for (int i = 0; i < 5; i++)
                ids[i] = (int32_t)((i * 7 + 1) % hp->n_vocab);
            int64_t start[2] = {0, 2}, len[2] = {2, 3};
            emodel_batch b = {.ids = ids, .start = start, .len = len, .n_seq = 2};
            static float out[5 * 1024];
            kpool *p = kpool_new(1);
            int64_t need = hp->n_cls_out > hp->n_out ? hp->n_cls_out : hp->n_out;
            if (need <= 1024 && hp->n_embd <= 1024) {
                (void)emodel_forward(m, p, &b, hp->pool, out);
                (void)emodel_forward(m, p, &b, EMODEL_POOL_MEAN, out);
                /* decoders: the same continuations of a cached prefix */
                emodel_kv *kv = NULL;
                if (hp->causal && emodel_kv_new(m, p, ids, 3, &kv) == TROVE_OK) {
                    b.prefix = kv;
                    (void)emodel_forward(m, p, &b, hp->pool, out);
                    emodel_kv_free(kv);
                }
            }
            kpool_free(p);
        }
        emodel_free(m);
    }
    gguf_close(f);
    return 0;
}
