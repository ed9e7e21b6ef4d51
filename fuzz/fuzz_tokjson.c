/* Fuzz target: tokenizer.json (or tokjson binary cache) bytes -> load ->
 * encode a few fixed strings, with and without specials. Binary bytes are
 * also loaded in place (tokjson_borrow, as from a mapped cache entry, whose
 * tables are checked on each lookup instead of at load), from an aligned
 * copy the tokjson frees. Loading may fail
 * (it must say why, not crash); a tokenizer that loads must encode every
 * string with ids in [0, vocab size) and offsets inside the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed/tokenizers/tokjson.h"

static const char *const texts[] = {
    "Hello, world! It's 2024.",
    "  leading spaces\tand\ttabs\n\n    indented code\n",
    "\xE4\xB8\xAD\xE6\x96\x87 caf\xC3\xA9 e\xCC\x81 \xF0\x9F\x98\x80 \xEF\xBC\xA1",
    "bad \xC3 utf8 \xFF\xFE \xED\xA0\x80 end",
    "<unk> [CLS] <s> </s> [SEP] <|endoftext|>",
    "",
};

static void encode_all(tokjson *t);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tokjson *t = NULL;
    if (tokjson_from_buffer(data, size, &t) == TROVE_OK) encode_all(t);
    uint8_t *copy = malloc(size ? size : 1); /* malloc: 8-byte aligned */
    if (!copy) return 0;
    if (size) memcpy(copy, data, size);
    if (tokjson_borrow(copy, size, free, copy, &t) == TROVE_OK)
        encode_all(t); /* frees copy */
    else
        free(copy);
    return 0;
}

static void encode_all(tokjson *t) {
    size_t nv = tokjson_vocab_size(t);
    tokjson_enc e = {0};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        size_t len = strlen(texts[k]);
        for (unsigned flags = 0; flags < 2; flags++) {
            if (tokjson_encode(t, texts[k], len, flags, &e) != TROVE_OK) abort();
            for (size_t i = 0; i < e.n; i++) {
                if (e.ids[i] < 0 || (size_t)e.ids[i] >= nv) abort();
                if (e.start[i] > e.end[i] || e.end[i] > len) abort();
                size_t n;
                (void)tokjson_id_to_token(t, e.ids[i], &n);
            }
        }
    }
    tokjson_enc_free(&e);
    tokjson_free(t);
}
