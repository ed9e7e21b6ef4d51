/* Fuzz target: the daemon's request and answer decoders (api/wire, every
 * table of wire_types[]) on arbitrary bytes: no crash, no leak, and
 * whatever decodes re-encodes to
 * JSON that decodes to the same encoding (the round trip the CLI relies on
 * to print through a daemon exactly what it prints cold). */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"

static void same_or_abort(json_t *a, json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *y = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!x || !y || strcmp(x, y) != 0) {
        fprintf(stderr, "round trip differs:\n%s\n%s\n", x ? x : "?", y ? y : "?");
        abort();
    }
    free(x);
    free(y);
}

#define ROUND_TRIP(T, parse, encode, freefn)                  \
    do {                                                      \
        T v1, v2;                                             \
        memset(&v1, 0, sizeof v1);                            \
        if (parse(j, &v1) == TROVE_OK) {                      \
            json_t *e1 = encode(&v1);                         \
            memset(&v2, 0, sizeof v2);                        \
            if (parse(e1, &v2) != TROVE_OK)                   \
                abort();                                      \
            json_t *e2 = encode(&v2);                         \
            same_or_abort(e1, e2);                            \
            json_decref(e1);                                  \
            json_decref(e2);                                  \
            freefn(&v2);                                      \
        }                                                     \
        freefn(&v1);                                          \
    } while (0)

/* The query answer is two structs: results + pipeline. */
typedef struct qres {
    search_results r;
    api_query_info q;
} qres;

static trove_err qres_parse(const json_t *j, qres *x)
{
    return wire_query_result_parse(j, &x->r, &x->q);
}

static json_t *qres_encode(const qres *x)
{
    return wire_query_result(&x->r, &x->q);
}

static void qres_free(qres *x)
{
    search_results_free(&x->r);
    api_query_info_free(&x->q);
}

/* Every table: decode, encode, decode the encoding, encode again: the
 * same JSON. Request arguments borrow their strings from a holder. */
static void round_trip(const wire_type *t, const json_t *j)
{
    int held = t->init && !t->is_null;
    void *v1 = calloc(1, t->size), *v2 = calloc(1, t->size);
    wire_args h1 = {0}, h2 = {0};
    if (wire_parse(t, j, v1, held ? &h1 : NULL) == TROVE_OK) {
        json_t *e1 = wire_emit(t, v1);
        if (wire_parse(t, e1, v2, held ? &h2 : NULL) != TROVE_OK)
            abort();
        json_t *e2 = wire_emit(t, v2);
        same_or_abort(e1, e2);
        json_decref(e1);
        json_decref(e2);
    }
    if (!held) {
        wire_free(t, v1);
        wire_free(t, v2);
    }
    wire_args_free(&h1);
    wire_args_free(&h2);
    free(v1);
    free(v2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *root = json_loadb((const char *)data, size, 0, &err);
    if (!root)
        return 0;
    const json_t *args = json_object_get(root, "args");
    json_t *j = json_object_get(root, "result");
    if (!j)
        j = root;
    for (const wire_type *const *t = wire_types; *t; t++)
        round_trip(*t, (*t)->init && !(*t)->is_null && args ? args : j);
    ROUND_TRIP(qres, qres_parse, qres_encode, qres_free);
    char *b;
    size_t len;
    if (wire_get_bytes(j, &b, &len))
        free(b);
    json_decref(root);
    return 0;
}
