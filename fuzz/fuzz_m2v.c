/* Fuzz target for loading and running a static (model2vec) model from
 * untrusted files. Input layout: [u16 LE tokenizer.json length] [that many
 * bytes of tokenizer.json] [text up to the first NUL] [NUL] [the rest:
 * model.safetensors]. Loading must succeed or fail cleanly; when it loads,
 * the text is tokenised and pooled (every id in range, every mapping entry
 * checked on use). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed/arch/m2v.h"

static volatile double sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t tl = (size_t)data[0] | (size_t)data[1] << 8;
    data += 2;
    size -= 2;
    if (tl > size)
        tl = size;
    const char *tok = (const char *)data;
    data += tl;
    size -= tl;
    const uint8_t *nul = memchr(data, 0, size);
    size_t textlen = nul ? (size_t)(nul - data) : size;
    char *text = malloc(textlen + 1);
    memcpy(text, data, textlen);
    text[textlen] = 0;
    const uint8_t *st = nul ? nul + 1 : data + size;
    size_t stlen = (size_t)(data + size - st);
    m2v *m;
    if (m2v_open_memory(st, stlen, tok, tl, "{\"normalize\": true}", 19, &m) == TROVE_OK) {
        int32_t ids[512];
        size_t n = m2v_tokenize(m, text, textlen, ids, 512);
        for (size_t i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= m2v_n_vocab(m))
                abort();
        float *v = malloc((size_t)m2v_dim(m) * sizeof *v);
        if (m2v_pool(m, ids, n, v) == TROVE_OK)
            sink += v[0];
        free(v);
        m2v_close(m);
    }
    free(text);
    return 0;
}
