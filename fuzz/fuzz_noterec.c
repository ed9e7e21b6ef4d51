/* Fuzz target: noterec_open/noterec_next (a note's packed metadata record,
 * store/noterec.h, bytes read from the index) on arbitrary bytes: never
 * read past the end, every entry's key and text inside the record, and a
 * record re-encoded from its entries decodes to the same entries; and
 * noterec_date (the note map's date) answers for a record exactly when
 * it decodes whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/noterec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes: ASan sees any read past the end */
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    int64_t mtime;
    noterec_iter it;
    if (noterec_open(in, size, &mtime, &it) == 0) {
        tbuf again = {0};
        noterec_begin(&again, mtime);
        noterec_entry e;
        int r;
        while ((r = noterec_next(&it, &e)) == 1) {
            if (e.key < (const char *)in || e.key + e.key_len > (const char *)in + size ||
                (e.txt && e.txt + e.txt_len > (const char *)in + size))
                abort();
            noterec_add(&again, &e);
        }
        if (r == 0) {
            /* well formed: its re-encoding is byte for byte the same */
            if (again.len != size || memcmp(again.data, in, size) != 0) {
                /* a NaN or -0 num of an entry without a number is written as 0 */
                noterec_iter a, b;
                noterec_entry x, y;
                int64_t m2;
                if (noterec_open((const uint8_t *)again.data, again.len, &m2, &a) != 0 ||
                    noterec_open(in, size, &m2, &b) != 0)
                    abort();
                while (noterec_next(&b, &x) == 1) {
                    if (noterec_next(&a, &y) != 1 || x.src != y.src || x.type != y.type ||
                        x.has_num != y.has_num || x.key_len != y.key_len ||
                        memcmp(x.key, y.key, x.key_len) || !x.txt != !y.txt ||
                        x.txt_len != y.txt_len || (x.txt && memcmp(x.txt, y.txt, x.txt_len)))
                        abort();
                }
            }
        }
        tbuf_free(&again);
        static const char *const keys[] = {"date", "created"};
        double days;
        int src = noterec_date(in, size, keys, 2, &days);
        if ((src < 0) != (r != 0) || src > 3)
            abort();
    }
    free(in);
    return 0;
}
