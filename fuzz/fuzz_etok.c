/* Fuzz target: tokenizer construction and encoding on arbitrary input.
 *
 * Input layout (every field optional; missing bytes read as absent):
 *   [flags:1] [charsmap length:4 LE] [charsmap bytes] [n extra pieces:1]
 *   n x ([len:1] [type:1] [score:1] [bytes]) [text: the rest]
 * flags bits 0-1 choose the kind (bert, t5, llama), bit 2 remove extra
 * whitespace, bit 3 no space prefix, bit 4 add bos, bit 5 add eos.
 * A fixed base vocabulary supplies the unknown/special pieces, so most
 * inputs build; a build may still fail (bad charsmap) but must not crash,
 * and every id produced must be in range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "embed/tokenizers/etok.h"

#define M "\xE2\x96\x81"

static const char *const base[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "<unk>", "<s>", "</s>", M, M "a", "a", "b", "ab",
    M "the", "the", "[[", "<0xC3>", "<0xA9>", "<0xE4>", "\xE4\xBD\xA0", M "\xE4\xBD\xA0",
};
static const int32_t base_types[] = {3, 2, 3, 3, 2, 3, 3, 1, 1, 1, 1, 5, 1, 1, 4, 6, 6, 6, 1, 1};
#define NBASE (sizeof base / sizeof base[0])
#define MAXEXTRA 64

static size_t take(const uint8_t **p, size_t *n, size_t k) {
    size_t got = k < *n ? k : *n;
    *p += got;
    *n -= got;
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data;
    size_t n = size;
    uint8_t flags = n ? p[0] : 0;
    take(&p, &n, 1);
    uint32_t clen = 0;
    for (int i = 0; i < 4 && n; i++) {
        clen |= (uint32_t)p[0] << (8 * i);
        take(&p, &n, 1);
    }
    const uint8_t *charsmap = p;
    size_t cgot = take(&p, &n, clen);

    const char *text[NBASE + MAXEXTRA];
    size_t len[NBASE + MAXEXTRA];
    float score[NBASE + MAXEXTRA];
    int32_t type[NBASE + MAXEXTRA];
    size_t nv = 0;
    for (; nv < NBASE; nv++) {
        text[nv] = base[nv];
        len[nv] = strlen(base[nv]);
        score[nv] = -(float)nv;
        type[nv] = base_types[nv];
    }
    size_t extra = n ? p[0] % MAXEXTRA : 0;
    take(&p, &n, 1);
    for (size_t i = 0; i < extra && n >= 3; i++) {
        size_t l = p[0] % 16;
        type[nv] = p[1] % 8;
        score[nv] = -(float)p[2] / 8.0f;
        take(&p, &n, 3);
        text[nv] = (const char *)p;
        len[nv] = take(&p, &n, l);
        nv++;
    }

    etok_vocab v;
    etok_vocab_init(&v, (etok_kind)(1 + (flags & 3) % 3));
    v.n = nv;
    v.text = text;
    v.len = len;
    v.scores = score;
    v.types = type;
    v.remove_extra_ws = flags & 4;
    v.add_space_prefix = !(flags & 8);
    v.add_bos = flags & 16;
    v.add_eos = flags & 32;
    v.special.bos = 5;
    v.special.eos = 6;
    v.special.unk = v.kind == ETOK_WPM ? 1 : 4;
    if (cgot) {
        v.charsmap = charsmap;
        v.charsmap_len = cgot;
    }
    etok *t = NULL;
    if (etok_new(&v, &t) != TROVE_OK) return 0;

    int32_t ids[512];
    uint8_t segs[512];
    size_t full = 0;
    size_t k = etok_encode(t, (const char *)p, n, true, ids, 512, &full);
    if (k > 512 || (full <= 512 && k != full)) abort();
    char buf[16];
    for (size_t i = 0; i < k; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= nv) abort();
        etok_decode_piece(t, ids[i], buf, sizeof buf);
    }
    size_t half = n / 2;
    k = etok_encode_pair(t, (const char *)p, half, (const char *)p + half, n - half, ids, segs,
                         1 + n % 40);
    for (size_t i = 0; i < k; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= nv || segs[i] > 1) abort();
    etok_free(t);
    return 0;
}
