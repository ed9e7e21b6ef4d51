/* Fuzz the parsers of untrusted text in model pulls: Content-Range header
 * values (from any server) and `trove model pull` specs (from the user). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/fetch.h"
#include "models/models.h"
#include "util/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t a, b, t;
    if (fetch_parse_content_range((const char *)data, size, &a, &b, &t) == 0 &&
        (a < 0 || b < a || (t >= 0 && b >= t)))
        abort();
    char *s = xstrndup((const char *)data, size);
    models_plan p;
    if (models_plan_pull(s, NULL, &p) == TROVE_OK) {
        /* every destination stays inside the models folder */
        char *dir = models_dir();
        size_t n = strlen(dir);
        for (size_t i = 0; i < p.n_items; i++)
            if (strncmp(p.items[i].dest, dir, n) != 0 || p.items[i].dest[n] != '/' ||
                strstr(p.items[i].dest + n, "/../") || strstr(p.items[i].dest + n, "/./"))
                abort();
        free(dir);
    }
    models_plan_free(&p);
    free(s);
    return 0;
}
