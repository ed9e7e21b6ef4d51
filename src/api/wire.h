/* wire — the JSON form of the api's requests and results (docs/daemon.md).
 *
 * The daemon and its clients (the CLI, the MCP server) exchange the very
 * structs of api.h, serialised losslessly: every field, doubles with 17
 * significant digits, and bytes that are not valid UTF-8 as
 * {"base64": "..."}. A struct decoded from its encoding renders exactly as
 * the original (tests/unit/test_wire.c checks encode → decode → encode).
 *
 * Encoders return a new json_t reference (the caller decrefs). Decoders
 * fill a zeroed struct that the caller frees with the struct's own *_free()
 * (also after a failed decode: what was filled is freed the same way); they
 * return TROVE_EPARSE with a detail naming the field on any type error and
 * never trust a length or count from the input beyond the JSON itself.
 *
 * Request arguments decode into an api_*_opts whose strings are borrowed
 * from a wire_args holder (free it after the call). */
#ifndef TROVE_WIRE_H
#define TROVE_WIRE_H

#include <jansson.h>
#include <stddef.h>

#include "api/api.h"

#define WIRE_PROTOCOL 1
#define WIRE_MAX_REQUEST (1u << 20)   /* bytes of one request line, newline excluded */

/* Bytes as a JSON string, or {"base64": ...} when not valid UTF-8; NULL s
 * is JSON null. */
json_t *wire_bytes(const char *s, size_t len);
json_t *wire_str(const char *s);
/* Either form back to malloc'd bytes (NUL-terminated; *len may be NULL);
 * JSON null gives *out NULL. 0 on a type error. */
int wire_get_bytes(const json_t *v, char **out, size_t *len);

/* Names of trove_err codes ("ENOENT", ...) and back (-1 when unknown). */
const char *wire_err_name(trove_err e);
int wire_err_from_name(const char *name);

/* Strings the decoded request arguments point into. */
typedef struct wire_args {
    char **strs;
    size_t n, cap;
    const char **ptrs;      /* arrays of borrowed strings (collections, tags) */
    size_t n_ptrs, cap_ptrs;
} wire_args;
void wire_args_free(wire_args *w);

/* ---- requests ---- */
json_t *wire_search_opts(const api_search_opts *o);
trove_err wire_search_opts_parse(const json_t *args, api_search_opts *o, wire_args *hold);

/* The query op's arguments: the search arguments plus no_expand,
 * no_rerank, candidates, window_tokens, reranker, expand_model. */
json_t *wire_query_opts(const api_query_opts *o);
trove_err wire_query_opts_parse(const json_t *args, api_query_opts *o, wire_args *hold);

/* ---- results ---- */
json_t *wire_search_results(const search_results *r);
trove_err wire_search_results_parse(const json_t *v, search_results *out);

/* The query op's answer: the search_results object plus "pipeline" (the
 * api_query_info). Decoded strings are owned by what holds them, as in a
 * cold answer (free with search_results_free / api_query_info_free). */
json_t *wire_query_result(const search_results *r, const api_query_info *q);
trove_err wire_query_result_parse(const json_t *v, search_results *out, api_query_info *q);

json_t *wire_note(const api_note *n);
trove_err wire_note_parse(const json_t *v, api_note *out);
json_t *wire_notes(const api_notes *n);
trove_err wire_notes_parse(const json_t *v, api_notes *out);

json_t *wire_listing(const api_listing *l);
trove_err wire_listing_parse(const json_t *v, api_listing *out);

/* A snapshot (store.h) as an object; null when id is 0. */
json_t *wire_snapshot(const store_snapshot *s);
trove_err wire_snapshot_parse(const json_t *v, store_snapshot *out);
json_t *wire_status(const api_status *s);
/* The files `update` skips of a freshness check: {"too_large", "binary",
 * "unreadable"} (counts; the status answer and MCP status carry it). */
json_t *wire_skipped(const index_freshness *f);
trove_err wire_status_parse(const json_t *v, api_status *out);

json_t *wire_update_result(const index_update_result *r);
trove_err wire_update_result_parse(const json_t *v, index_update_result *out);

/* ---- the link graph ---- */
/* similar's arguments: ref, cwd, limit, collections, bm25_weight,
 * vector_weight, model, with_body. */
json_t *wire_similar_opts(const api_similar_opts *o);
trove_err wire_similar_opts_parse(const json_t *args, api_similar_opts *o, wire_args *hold);
/* similar's answer: the search_results object plus "similar" (the info). */
json_t *wire_similar_result(const search_results *r, const api_similar_info *si);
trove_err wire_similar_result_parse(const json_t *v, search_results *out, api_similar_info *si);
json_t *wire_link_set(const api_link_set *s);
trove_err wire_link_set_parse(const json_t *v, api_link_set *out);

#endif
