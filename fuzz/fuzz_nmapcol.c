/* Fuzz target: the note map's field columns (store/nmapcol.h, note_map
 * kind 2: bytes read from the index) on arbitrary bytes: the header, the
 * directory looked up for keys it may or may not hold, every listed key's
 * block decoded and every slot's code asked; never a read past the end,
 * every code inside the dictionary or NMAPCOL_UNKNOWN, every set's value
 * indexes inside it. The input's first byte also seeds a row built from
 * entries taken from the rest, which must decode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/nmapcol.h"

static void check_row(const uint8_t *in, size_t size)
{
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    if (nmapcol_header(in, size, &flags, &n_keys, &n_slots, &dir_end) < 0)
        return;
    static const char *const keys[] = {"", "status", "a", "priority", "date"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        nmapcol_dir_entry e;
        int found = nmapcol_dir_find(in, size, keys[k], strlen(keys[k]), &e);
        if (found <= 0 || !e.coded || e.off > size || e.len > size - e.off)
            continue;
        if (e.key < in || e.key + e.key_len > in + size)
            abort();
        nmapcol_col c;
        if (nmapcol_col_parse(in + e.off, e.len, n_slots, &c) != 0)
            continue;
        for (uint32_t s = 0; s < c.n_sets; s++)
            for (uint32_t i = c.set_start[s]; i < c.set_start[s + 1]; i++)
                if (c.set_codes[i] >= c.n_values)
                    abort();
        for (uint32_t slot = 0; slot <= n_slots; slot++) {
            uint32_t code = nmapcol_code(&c, slot);
            if (code != NMAPCOL_UNKNOWN && code > c.n_values + c.n_sets)
                abort();
            (void)nmapcol_has_record(in, size, slot);
        }
        nmapcol_col_free(&c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: ASan sees any read past the end */
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    check_row(in, size);

    /* a row built from the input's bytes decodes, whatever they are */
    nmapcol_builder *b = nmapcol_builder_new();
    static const char *const keys[] = {"", "status", "a", "priority"};
    for (size_t i = 0; i + 3 <= size; i += 3) {
        if (in[i] & 1)
            nmapcol_note(b, (uint32_t)(i / 3) % 4096);
        noterec_entry e = {NOTEREC_FIELD, in[i + 1] & 7, in[i + 1] >> 7, (double)in[i + 2],
                           keys[in[i] >> 6], strlen(keys[in[i] >> 6]),
                           (const char *)in + i + 2, in[i + 1] & 8 ? 1 : 0};
        if (in[i] & 2)
            e.txt = NULL;
        nmapcol_field(b, &e);
        if ((in[i] & 0x3c) == 0x3c)
            nmapcol_note_unknown(b);
    }
    tbuf row = {0};
    nmapcol_finish(b, &row);
    nmapcol_builder_free(b);
    if (row.len) {
        int flags;
        uint32_t n_keys, n_slots, dir_end;
        if (nmapcol_header((const uint8_t *)row.data, row.len, &flags, &n_keys, &n_slots,
                           &dir_end) != 0)
            abort();
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
            nmapcol_dir_entry e;
            nmapcol_col c;
            int found = nmapcol_dir_find((const uint8_t *)row.data, row.len, keys[k],
                                         strlen(keys[k]), &e);
            if (found < 0 || (found && e.coded &&
                              nmapcol_col_parse((const uint8_t *)row.data + e.off, e.len,
                                                n_slots, &c) != 0))
                abort();
            if (found && e.coded)
                nmapcol_col_free(&c);
        }
        check_row((const uint8_t *)row.data, row.len);
    }
    tbuf_free(&row);
    free(in);
    return 0;
}
