/* web — `trove serve`: a local web page for searching and reading notes,
 * and the JSON API under /api/ it shares with scripts (docs/web.md).
 *
 * A front end like the CLI and MCP: every request is parsed (web_req.h),
 * answered by one api call — through the running daemon when one answers
 * (daemon/front.h), else by the handle given — and rendered as HTML
 * (web_page.c; notes through web_md.h) or JSON. Requests are served one at
 * a time on libmicrohttpd's thread (http/http.h), which owns the api
 * handle while serving.
 *
 * Security: Host and Origin are checked on every request (DNS rebinding),
 * every response carries a Content-Security-Policy that allows only the
 * server's own script and style, state changes (rollback) are POSTs that
 * carry the per-process token the page got from the server, and a bound
 * address that is not loopback requires `token` (bearer header, or the
 * cookie that `?token=` sets). */
#ifndef TROVE_WEB_H
#define TROVE_WEB_H

#include "api/api.h"
#include "search/search.h"
#include "util/err.h"

typedef struct web_opts {
    const char *host;                 /* numeric */
    int port;                         /* 0: any free port */
    const char *token;                /* required of clients when non-NULL */
    const char *const *origins;       /* extra browser origins allowed */
    size_t n_origins;
    const char *model;                /* embedding model path, NULL: keywords only */
    const char *reranker;             /* `query` reranker, NULL: lexical */
    int use_daemon;                   /* answer through the daemon when one runs */
    const char *freshness;            /* a sentence for the status page: who keeps the
                                         index up to date (the daemon's watcher, or nobody) */
    /* Search results as `trove search --json` prints them (with
     * --explain when `explain`): a new string the server frees. */
    char *(*results_json)(const char *query, const search_results *res,
                          const api_query_info *info, int explain,
                          const char *const *warnings, size_t n_warnings);
    void (*on_listen)(const char *url, void *ctx);
    void *ctx;
    volatile int *stop;               /* serve until set */
} web_opts;

trove_err web_serve(api *a, const web_opts *o);

#endif
