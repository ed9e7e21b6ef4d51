/* wire — the JSON form of the api's requests and results (docs/daemon.md).
 *
 * The daemon and its clients (the CLI, the MCP server) exchange the very
 * structs of api.h, serialised losslessly: every field, doubles with 17
 * significant digits, and bytes that are not valid UTF-8 as
 * {"base64": "..."}. A struct decoded from its encoding renders exactly as
 * the original (tests/unit/test_wire.c checks encode → decode → encode).
 *
 * One table per struct. Every struct that crosses the socket has one
 * wire_type: a row per member {key, offset, kind, required}. wire_emit()
 * and wire_parse() are the only code that reads a table; the named
 * functions below (wire_note, wire_status_parse, ...) are those two on one
 * table each. Requests are rows of wire_requests[]: {op, args, answer,
 * api call}.
 *
 * To add a field: the member in its struct and one row in its table in
 * wire.c (W(type, member, KIND), or WK() when the key differs from the
 * member's name). test_wire fails until you do: it checks that the rows
 * cover every byte of each struct (alignment padding aside: a small member
 * that fits a padding hole slips through) and round-trips every row
 * filled with a value. A member the wire must not carry (a callback, a
 * handle) is a WIRE_LOCAL row. A front end that shows the new field in its
 * own JSON (cli/out.c, mcp/mcp_tools.c) adds a WIRE_PICK to its view.
 * To add a request: its argument struct (below, or an api_*_opts) and its
 * table, a WIRE_OP_* and its row in wire_requests[] (op name, the argument
 * and answer tables, the api call that answers it). The daemon serves it
 * and a front end asks for it with dcl_try() or dcl_or_cold()
 * (daemon/client.h) with no more code; the answer is a struct with a table
 * like any other.
 *
 * Encoders return a new json_t reference (the caller decrefs). Decoders
 * fill a zeroed struct that the caller frees with the struct's own *_free()
 * (also after a failed decode: what was filled is freed the same way); they
 * return TROVE_EPARSE with a detail naming the field on any type error and
 * never trust a length or count from the input beyond the JSON itself. A
 * missing key keeps the struct's value (its default); null is NULL for a
 * string and NaN for a double (non-finite doubles are sent as null).
 *
 * Request arguments decode into an argument struct (api_*_opts or the
 * wire_*_args below) whose strings are borrowed from a wire_args holder
 * (free it after the call); a missing or null string keeps the default. */
#ifndef TROVE_WIRE_H
#define TROVE_WIRE_H

#include <jansson.h>
#include <stddef.h>

#include "api/api.h"

#define WIRE_PROTOCOL 1
#define WIRE_MAX_REQUEST (1u << 20)   /* bytes of one request line, newline excluded */

/* Bytes as a JSON string, or {"base64": ...} when not valid UTF-8 or
 * holding a NUL; NULL s is JSON null. */
json_t *wire_bytes(const char *s, size_t len);
json_t *wire_str(const char *s);
/* Either form back to malloc'd bytes (NUL-terminated; *len may be NULL);
 * JSON null gives *out NULL. 0 on a type error. */
int wire_get_bytes(const json_t *v, char **out, size_t *len);

/* The error codes on the wire: the trove_err names ("ENOENT", ...: the
 * daemon's own answer, which the cold path would give too), then the
 * daemon's refusals (it could not serve the request: the client answers
 * cold; WIRE_EWALK: an update asked not to walk, which the daemon's
 * watcher cannot vouch for — the message says why, and the client walks).
 * Every code has a name (a static assert in wire.c keeps them in
 * step with util/err.h); wire_code_from_name gives -1 for an unknown one. */
enum { WIRE_EPROTO = TROVE_ERR_COUNT, WIRE_EMISMATCH, WIRE_E2BIG, WIRE_EWALK, WIRE_CODE_COUNT };
const char *wire_code_name(int code);
int wire_code_from_name(const char *name);

/* ---- tables ---- */

/* Strings the decoded request arguments point into. */
typedef struct wire_args {
    void **blocks;
    size_t n, cap;
} wire_args;
void wire_args_free(wire_args *w);

typedef enum wire_kind {
    WIRE_STR,      /* char * (NUL-terminated; bytes as wire_bytes) */
    WIRE_BYTES,    /* char * with its size_t length at aux */
    WIRE_FIXED,    /* char[size] inline */
    WIRE_STRS,     /* char ** with its size_t count at aux */
    WIRE_DOUBLES,  /* double * with its size_t count at aux, which an earlier
                      row (a WIRE_STRS of as many) sets */
    WIRE_NAME,     /* const char * to one of names[] (static); an unknown
                      one decodes as names[0] */
    WIRE_INT,      /* int (and int-sized enums: lo..hi when lo < hi) */
    WIRE_LONG,
    WIRE_I64,
    WIRE_SIZE,     /* size_t, >= 0 on the wire */
    WIRE_DOUBLE,
    WIRE_OBJ,      /* a struct inline (sub); key "": its keys merge into
                      this object */
    WIRE_ARRAY,    /* a pointer to sub structs with their size_t count at aux */
    WIRE_LOCAL,    /* a member that stays in this process (coverage only) */
} wire_kind;

typedef struct wire_type wire_type;

/* The rows hold no pointers: a pointer in a static table is a relocation
 * the dynamic loader writes at every process start, which costs the page it
 * lies on a copy (~36 KB of these tables were 9 of the pages every `trove`
 * process copied, docs/performance.md "session 28"). So the key is inline
 * and a sub table or a names list is a number: wire_sub(), wire_names(). */
#define WIRE_KEY_MAX 24      /* a key's bytes, its NUL included */

typedef struct wire_field {
    char key[WIRE_KEY_MAX];  /* "": an OBJ whose keys merge into this object */
    size_t off;              /* of the member in its struct */
    wire_kind kind;
    int required;            /* decoding fails when missing or null */
    int path;                /* a file path: the client sends it absolute */
    size_t size;             /* sizeof the member (one element when n) */
    size_t aux;              /* BYTES, STRS, ARRAY: offset of the size_t
                                length or count; OBJ with n: of the count
                                of elements in use, when has_count */
    int has_count;
    size_t n;                /* > 0: a fixed array of n of this kind: a JSON
                                array (at most n long), or an object keyed
                                by names[] when names */
    unsigned short names;    /* a names list (NULL-terminated) for wire_names(); 0: none */
    int soa;                 /* OBJ with n: each sub member is itself an
                                array of n (a struct of arrays) */
    long lo, hi;             /* INT: the accepted range when lo < hi */
    unsigned short sub;      /* OBJ, ARRAY: the table, for wire_sub() */
} wire_field;

struct wire_type {
    const char *what;        /* "a result", "search": for error details */
    size_t size;             /* sizeof the struct */
    const wire_field *fields;
    size_t n_fields;
    /* Optional: the struct is sent as null when is_null (and a null or
     * missing one decodes through init); check runs after a decode. */
    int (*is_null)(const void *obj);
    void (*init)(void *obj);
    trove_err (*check)(const void *obj);
    void (*free)(void *obj);   /* the struct's own *_free(), else wire_free walks the rows */
};

/* A row's sub table (OBJ, ARRAY) and names list (NULL: none). */
const wire_type *wire_sub(const wire_field *f);
const char *const *wire_names(const wire_field *f);

/* The struct at obj as a JSON object (new reference). */
json_t *wire_emit(const wire_type *t, const void *obj);
/* v into the struct at obj (keys it lacks keep their values). hold NULL:
 * strings are malloc'd into the struct (freed with it); else they are
 * borrowed from hold (request arguments). */
trove_err wire_parse(const wire_type *t, const json_t *v, void *obj, wire_args *hold);

/* Frees what obj owns (not obj): with the struct's own *_free() when the
 * table names one, else what wire_parse(t, ..., NULL) malloc'd into it. */
void wire_free(const wire_type *t, void *obj);

/* ---- views: a front end's JSON of a struct, chosen from its table ----
 * The CLI's --json and the MCP tools show a search_result their own way
 * (other keys, some fields left out, docids as "#1a2b3c4d", strings made
 * safe for their readers) but from the same rows: a view lists, in order,
 * the keys it writes, each with the row it shows, or none for a value only
 * that front end computes (own()). */
typedef struct wire_view wire_view;
typedef struct wire_pick {
    const char *key;         /* in the front end's object */
    const char *row;         /* the table row it shows; NULL: own() */
    const char *prefix;      /* strings: written before the value ("#" for docids) */
    const wire_view *sub;    /* WIRE_ARRAY rows: the view of each element */
} wire_pick;
#define WIRE_PICK(k, ...) {.key = k, .row = k, __VA_ARGS__}
#define WIRE_AS(k, r, ...) {.key = k, .row = r, __VA_ARGS__}
#define WIRE_OWN(k) {.key = k, .row = NULL}

struct wire_view {
    const wire_pick *picks;
    size_t n;
    /* every string the view writes (bytes that may not be valid UTF-8) */
    json_t *(*text)(const char *s, size_t len);
    /* an own key's value for obj (NULL: leave the key out); ctx as given */
    json_t *(*own)(const void *obj, const char *key, void *ctx);
};

json_t *wire_emit_view(const wire_type *t, const void *obj, const wire_view *v, void *ctx);

/* Every table, for the tests that walk them (NULL-terminated). */
extern const wire_type *const wire_types[];

/* ---- requests ---- */

/* The arguments of the requests without an api_*_opts of their own. */
typedef struct wire_get_args {
    const char *ref;         /* required */
    const char *cwd;         /* where a relative on-disk ref is resolved; NULL: the daemon's */
    long line, count;
} wire_get_args;

typedef struct wire_multi_get_args {
    const char *glob;        /* required */
    long max_bytes;
} wire_multi_get_args;

typedef struct wire_ls_args {
    const char *target;      /* NULL: the collections */
} wire_ls_args;

typedef struct wire_links_args {
    const char *ref;         /* required */
    const char *cwd;         /* as wire_get_args */
} wire_links_args;

/* The query op's answer: the results and what the pipeline did. */
typedef struct wire_query_answer {
    search_results results;
    api_query_info info;
} wire_query_answer;

/* similar's answer: the results and why they came ("similar"). */
typedef struct wire_similar_answer {
    search_results results;
    api_similar_info info;
} wire_similar_answer;

/* One request: its op, the tables of its arguments and its answer, and the
 * api call that answers it (in the daemon, and cold when there is none):
 * args and out point to structs of those tables; out is freed with
 * wire_free(result, out) after TROVE_OK. hello and shutdown are the
 * daemon's own (no result, no call). */
typedef struct wire_request {
    const char *op;
    const wire_type *args;     /* NULL: none */
    const wire_type *result;
    trove_err (*call)(api *a, void *args, void *out);
} wire_request;

enum {
    WIRE_OP_HELLO, WIRE_OP_SHUTDOWN, WIRE_OP_SEARCH, WIRE_OP_VSEARCH, WIRE_OP_QUERY,
    WIRE_OP_GET, WIRE_OP_MULTI_GET, WIRE_OP_LS, WIRE_OP_STATUS, WIRE_OP_UPDATE,
    WIRE_OP_SIMILAR, WIRE_OP_LINKS, WIRE_OP_DUPES, WIRE_OP_EVAL,
    WIRE_N_OPS
};
extern const wire_request wire_requests[WIRE_N_OPS];
/* The WIRE_OP_* of op, -1 when none. */
int wire_op_find(const char *op);
/* wire_requests[op].call, with out zeroed first. */
trove_err wire_call(api *a, int op, void *args, void *out);


json_t *wire_search_opts(const api_search_opts *o);
trove_err wire_search_opts_parse(const json_t *args, api_search_opts *o, wire_args *hold);

/* One search option by its row: front ends whose keys are their own (the
 * MCP tools' arguments) take an option as the row of the search request
 * it fills. The row's kind is the value's type (WIRE_STR text, WIRE_STRS
 * a list, WIRE_INT/WIRE_SIZE a number whose bounds are the row of
 * api_search_opt_table by the same name); wire_search_row aborts on a row
 * the table lacks (a front end's typo, seen at once). _parse reads v into
 * that member of o alone (strings borrowed from hold; TROVE_EPARSE naming
 * the row on a type error). */
extern const wire_type wire_search_args_type;
const wire_field *wire_search_row(const char *row);
trove_err wire_search_row_parse(const char *row, const json_t *v, api_search_opts *o,
                                wire_args *hold);

/* The query op's arguments: the search arguments plus no_expand,
 * no_rerank, candidates, window_tokens, reranker, expand_model. */
json_t *wire_query_opts(const api_query_opts *o);
trove_err wire_query_opts_parse(const json_t *args, api_query_opts *o, wire_args *hold);

/* ---- results ---- */

/* A search_result, for the front ends' views; every other table is
 * reached through wire_requests[] or wire_types[]. */
extern const wire_type wire_result_type;
/* One of a result's passages (--passages), for views that show them. */
extern const wire_type wire_passage_type;

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

#endif
