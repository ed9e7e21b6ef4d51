/* Fuzz target: the Chinese-English dictionary's loader, lookups and the
 * gloss parser.
 *   - the input is cut into CC-CEDICT senses at '/' and each goes through
 *     xdict_gloss_terms: every term must be short, ASCII and of at most
 *     XDICT_TERM_WORDS words;
 *   - the input is written as a dictionary file twice: as it is (the
 *     loader must refuse it cleanly or accept it), and with a valid header
 *     laid over it (magic, version, size, block table and checksum made
 *     right where the input's offsets leave room for them, so the section
 *     checks and every lookup's bounds checks see arbitrary tables);
 *     lookups of a few keys must stay inside the mapping. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "xlate/xdict.h"
#include "xlate/xlate.h"

static void check_term(void *ctx, const char *t, size_t len)
{
    (void)ctx;
    if (len == 0 || len >= XDICT_TERM_MAX)
        abort();
    size_t words = 1;
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)t[i] >= 0x80 || t[i] == '\0')
            abort();
        words += t[i] == ' ';
    }
    if (words > XDICT_TERM_WORDS)
        abort();
}

static void lookups(const char *path)
{
    xdict *d;
    if (xdict_open(path, &d) != TROVE_OK)
        return;
    static const char *keys[] = {"curve", "forget", "遗忘", "", "a", "\xff"};
    xdict_val v[8];
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        size_t n = xdict_zh(d, keys[i], strlen(keys[i]), v, 8);
        n += xdict_en(d, keys[i], strlen(keys[i]), v, 8);
        for (size_t k = 0; k < n && k < 8; k++)
            if (v[k].len && (v[k].s[0] == 0x7f && v[k].s[v[k].len - 1] == 0x7f))
                fputc(0, stderr);   /* reads every byte of the value */
    }
    xlate_out o;
    xlate_query(d, "forgetting curve 遗忘曲线", NULL, NULL, &o);
    xlate_out_free(&o);
    xdict_close(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || s[i] == '/') {
            xdict_gloss_terms(s + start, i - start, NULL, check_term);
            start = i + 1;
        }

    char path[] = "/tmp/fuzz-xdict-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    close(fd);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
        lookups(path);
    }
    if (size >= sizeof(xdict_hdr)) {
        unsigned char *buf = malloc(size);
        memcpy(buf, data, size);
        xdict_hdr h;
        memcpy(&h, buf, sizeof h);
        memcpy(h.magic, XDICT_MAGIC, 8);
        h.byte_order = 0x01020304u;
        h.version = XDICT_VERSION;
        h.file_size = size;
        if (h.off_zh <= size && h.off_blocks >= sizeof h && h.off_blocks % 8 == 0) {
            uint64_t n = (size - h.off_zh + XDICT_BLOCK - 1) / XDICT_BLOCK;
            if (h.off_blocks <= h.off_zh && n * 8 <= h.off_zh - h.off_blocks) {
                h.n_blocks = (uint32_t)n;
                for (uint64_t b = 0; b < n; b++) {
                    uint64_t at = h.off_zh + b * XDICT_BLOCK;
                    uint64_t len = size - at < XDICT_BLOCK ? size - at : XDICT_BLOCK;
                    uint64_t hash = XXH3_64bits(buf + at, len);
                    memcpy(buf + h.off_blocks + b * 8, &hash, 8);
                }
            }
        }
        h.payload_hash = h.off_blocks <= size && h.n_blocks <= (size - h.off_blocks) / 8
                             ? XXH3_64bits(buf + h.off_blocks, (size_t)h.n_blocks * 8)
                             : 0;
        memcpy(buf, &h, sizeof h);
        f = fopen(path, "wb");
        if (f) {
            fwrite(buf, 1, size, f);
            fclose(f);
            lookups(path);
        }
        free(buf);
    }
    unlink(path);
    return 0;
}
