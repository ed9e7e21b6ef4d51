/* web internals: the server state and a response under construction,
 * shared by the request router (web.c) and the HTML pages (web_page.c). */
#ifndef TROVE_WEB_INT_H
#define TROVE_WEB_INT_H

#include "daemon/front.h"
#include "http/http.h"
#include "util/buf.h"
#include "web/web.h"
#include "web/web_req.h"

typedef struct web_srv {
    api *a;
    front f;
    const web_opts *o;
    http_guard guard;
    char csrf[33];            /* the per-process token of state-changing requests */
} web_srv;

typedef struct web_resp {
    unsigned status;
    const char *type;         /* Content-Type (static) */
    tbuf body;
    char *location;           /* redirect target, owned */
    char *cookie;             /* Set-Cookie, owned */
} web_resp;

/* One search as the request asks (search, vsearch or query) through the
 * daemon or the handle. *has_info: info was filled (query mode). */
trove_err web_run_search(web_srv *s, const web_search_req *q, search_results *res,
                         api_query_info *info, int *has_info);

/* Notes like so->ref (so filled but for its filters), with the date and
 * frontmatter filters the request asks (since=, until=, where=, as the
 * search page reads them: web_search_req), through the daemon or the
 * handle; TROVE_EUSAGE with the sentence when an argument is malformed. */
trove_err web_run_similar(web_srv *s, const web_args *args, api_similar_opts *so,
                          search_results *res, api_similar_info *info);

/* HTML pages (web_page.c). `fragment`: the result list alone, which the
 * page's script swaps in as the user types. */
void web_page_search(web_srv *s, const web_args *args, int fragment, web_resp *r);
void web_page_note(web_srv *s, const web_args *args, web_resp *r);
void web_page_status(web_srv *s, web_resp *r);
/* GET: the question ("roll back to N?"); POST (token checked by the
 * router): the rollback and its outcome. */
void web_page_rollback(web_srv *s, const web_args *args, int post, web_resp *r);
void web_page_error(web_srv *s, web_resp *r, unsigned status, const char *msg);

/* Compiled-in assets (web_assets.c, generated from src/web/assets/). */
typedef struct web_asset {
    const char *name;         /* "app.js" */
    const char *type;
    const unsigned char *data;
    size_t len;
} web_asset;
extern const web_asset web_assets[];
extern const size_t web_n_assets;

#endif
