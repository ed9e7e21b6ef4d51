/* Fuzz target: qx_parse on any bytes (the output of a generative model is
 * as untrusted as a file): every kept line is a NUL-terminated string of at
 * most QX_MAX_LINE bytes without control characters, counts add up, and a
 * usable result has a lex or vec line. The first bytes up to a NUL (or 16)
 * are the query. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search/qexpand.h"
#include "util/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t qn = 0;
    while (qn < size && qn < 16 && data[qn])
        qn++;
    char *query = xstrndup((const char *)data, qn);
    size_t off = qn < size ? qn + 1 : size;
    qx_result r;
    qx_parse((const char *)data + off, size - off, query, &r);
    for (int k = 0; k < QX_KINDS; k++) {
        if (!r.first[k]) {
            if (r.n[k])
                abort();
            continue;
        }
        size_t n = strlen(r.first[k]);
        if (n == 0 || n > QX_MAX_LINE || r.n[k] == 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)r.first[k][i] < 0x20)
                abort();
    }
    if (qx_usable(&r) != (r.first[QX_LEX] || r.first[QX_VEC]))
        abort();
    qx_result_free(&r);
    free(query);
    return 0;
}
