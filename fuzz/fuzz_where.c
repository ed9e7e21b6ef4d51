/* Fuzz target: where_parse (the --where conditions) and date_parse_bound
 * (--since/--until) on arbitrary bytes: never crash, and a parsed condition
 * is well formed (a key, values as its operator needs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/where.h"
#include "text/date.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    memcpy(in, data, size);
    in[size] = '\0';
    where_cond w;
    if (where_parse(in, &w) == TROVE_OK) {
        int needs_values = w.op != WHERE_EXISTS && w.op != WHERE_MISSING;
        if (!w.key || !*w.key || (needs_values && w.n_values == 0) ||
            (!needs_values && w.n_values != 0) || w.n_values > WHERE_MAX_VALUES) {
            fprintf(stderr, "bad condition from %s\n", in);
            abort();
        }
        for (size_t i = 0; i < w.n_values; i++)
            if (!w.values[i].text)
                abort();
        where_cond_free(&w);
    }
    double d;
    for (int until = 0; until <= 1; until++)
        (void)date_parse_bound(in, 20000.5, until, &d);
    int64_t day;
    (void)date_from_name(in, size, &day);
    double span;
    (void)date_parse_span(in, &span);
    free(in);
    return 0;
}
