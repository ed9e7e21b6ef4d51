/* Fuzz target: the daemon's request and answer decoders (api/wire) on
 * arbitrary bytes: no crash, no leak, and whatever decodes re-encodes to
 * JSON that decodes to the same encoding (the round trip the CLI relies on
 * to print through a daemon exactly what it prints cold). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"

static void same_or_abort(json_t *a, json_t *b)
{
    char *x = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
    char *y = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
    if (!x || !y || strcmp(x, y) != 0)
        abort();
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

/* similar's answer: results + the info. */
typedef struct sres {
    search_results r;
    api_similar_info s;
} sres;

static trove_err sres_parse(const json_t *j, sres *x)
{
    return wire_similar_result_parse(j, &x->r, &x->s);
}

static json_t *sres_encode(const sres *x)
{
    return wire_similar_result(&x->r, &x->s);
}

static void sres_free(sres *x)
{
    search_results_free(&x->r);
    api_similar_info_free(&x->s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t err;
    json_t *root = json_loadb((const char *)data, size, 0, &err);
    if (!root)
        return 0;
    const json_t *args = json_object_get(root, "args");
    api_search_opts o;
    wire_args hold = {0};
    if (wire_search_opts_parse(args ? args : root, &o, &hold) == TROVE_OK) {
        json_t *e = wire_search_opts(&o);
        json_decref(e);
    }
    wire_args_free(&hold);
    api_query_opts qo;
    if (wire_query_opts_parse(args ? args : root, &qo, &hold) == TROVE_OK) {
        json_t *e = wire_query_opts(&qo);
        json_decref(e);
    }
    wire_args_free(&hold);
    api_similar_opts so;
    if (wire_similar_opts_parse(args ? args : root, &so, &hold) == TROVE_OK)
        json_decref(wire_similar_opts(&so));
    wire_args_free(&hold);
    api_dupes_opts dopt;
    if (wire_dupes_opts_parse(args ? args : root, &dopt, &hold) == TROVE_OK)
        json_decref(wire_dupes_opts(&dopt));
    wire_args_free(&hold);
    api_eval_opts eo;
    if (wire_eval_opts_parse(args ? args : root, &eo, &hold) == TROVE_OK)
        json_decref(wire_eval_opts(&eo));
    wire_args_free(&hold);
    json_t *j = json_object_get(root, "result");
    if (!j)
        j = root;
    ROUND_TRIP(search_results, wire_search_results_parse, wire_search_results, search_results_free);
    ROUND_TRIP(qres, qres_parse, qres_encode, qres_free);
    ROUND_TRIP(api_note, wire_note_parse, wire_note, api_note_free);
    ROUND_TRIP(api_notes, wire_notes_parse, wire_notes, api_notes_free);
    ROUND_TRIP(api_listing, wire_listing_parse, wire_listing, api_listing_free);
    ROUND_TRIP(api_status, wire_status_parse, wire_status, api_status_free);
    ROUND_TRIP(index_update_result, wire_update_result_parse, wire_update_result,
               index_update_result_free);
    ROUND_TRIP(sres, sres_parse, sres_encode, sres_free);
    ROUND_TRIP(api_link_set, wire_link_set_parse, wire_link_set, api_link_set_free);
    ROUND_TRIP(dupes_result, wire_dupes_parse, wire_dupes, dupes_result_free);
    ROUND_TRIP(api_eval_result, wire_eval_result_parse, wire_eval_result, api_eval_result_free);
    char *b;
    size_t len;
    if (wire_get_bytes(j, &b, &len))
        free(b);
    json_decref(root);
    return 0;
}
