/* web_req — the web server's request input: query-string and form
 * arguments (web_args) and what a search request asks for (web_search_req).
 * Pure functions over bytes (no sockets, no api), so the fuzzer reaches
 * them (fuzz/fuzz_web_req.c).
 *
 * Ownership: web_args and web_search_req own their strings; free them
 * with web_args_free / web_search_req_free. */
#ifndef TROVE_WEB_REQ_H
#define TROVE_WEB_REQ_H

#include <stddef.h>

/* Arguments beyond this many are ignored; a key or value longer than
 * WEB_MAX_ARG bytes is cut there. */
#define WEB_MAX_ARGS 64
#define WEB_MAX_ARG 4096

typedef struct web_kv {
    char *key, *value;
} web_kv;

typedef struct web_args {
    web_kv items[WEB_MAX_ARGS];
    size_t n;
} web_args;

/* One argument, already decoded (key and value of any bytes). */
void web_args_add(web_args *a, const char *key, size_t key_len, const char *value,
                  size_t value_len);
/* application/x-www-form-urlencoded: "k=v&k2=v2", %XX and '+' decoded
 * (a malformed %-escape stays as written). */
void web_args_parse(web_args *a, const char *s, size_t len);
/* The first value of `key`, NULL when absent. */
const char *web_arg(const web_args *a, const char *key);
void web_args_free(web_args *a);

typedef enum web_mode { WEB_SEARCH, WEB_VSEARCH, WEB_QUERY } web_mode;
extern const char *const web_mode_names[3];

typedef struct web_search_req {
    web_mode mode;
    char *q;                   /* "" when none */
    char **collections;        /* c=NAME (repeatable, comma-separated too) */
    size_t n_collections;
    char *folder;              /* NULL when none */
    char **tags;               /* tags=a,b (repeatable) */
    size_t n_tags;
    char **langs;              /* lang=en,de */
    size_t n_langs;
    char *since, *until;       /* since=2024-05-01, until=7d (as --since/--until); NULL: none */
    char **where;              /* where=status=done (repeatable; one value may hold several
                                  conditions separated by ';'), as --where */
    size_t n_where;
    int recent;                /* recent=1: the recency prior (--recent); 0: as configured */
    long limit;                /* n=N (1..1000), default 20 */
    int explain;               /* explain=1 */
} web_search_req;

/* 0 and a sentence in err when an argument is malformed (unknown mode,
 * a bad n, a language that is no code). */
int web_search_req_parse(const web_args *a, web_search_req *out, char *err, size_t err_size);
void web_search_req_free(web_search_req *r);

#endif
