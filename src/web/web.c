/* web — the HTTP side of `trove serve`: guards, routing, the JSON API. */
#include "web/web.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "util/esc.h"
#include "util/mem.h"
#include "util/str.h"
#include "web/web_int.h"

/* A POST body (a form) larger than this is refused. */
#define WEB_MAX_BODY 16384

static const char csp[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/* ---- running a search ---- */

trove_err web_run_search(web_srv *s, const web_search_req *q, search_results *res,
                         api_query_info *info, int *has_info)
{
    *has_info = 0;
    api_query_opts qo;
    api_query_opts_init(&qo);
    api_search_opts *ao = &qo.base;
    ao->search.query = q->q;
    ao->search.collections = (const char *const *)q->collections;
    ao->search.n_collections = q->n_collections;
    ao->search.folder = q->folder;
    ao->search.tags = (const char *const *)q->tags;
    ao->search.n_tags = q->n_tags;
    ao->search.langs = (const char *const *)q->langs;
    ao->search.n_langs = q->n_langs;
    ao->search.since = q->since;
    ao->search.until = q->until;
    ao->search.where = (const char *const *)q->where;
    ao->search.n_where = q->n_where;
    if (q->recent)
        ao->search.recent = 1;
    ao->search.limit = (size_t)q->limit;
    ao->search.vector_only = q->mode == WEB_VSEARCH;
    ao->model = s->o->model;
    if (q->mode == WEB_VSEARCH && !ao->model)
        return trove_fail(TROVE_EINVAL, "vsearch needs an embedding model (trove model pull, or "
                          "$TROVE_EMBED_MODEL when starting trove serve)");
    if (q->mode != WEB_QUERY)
        return front_search(&s->f, ao, res);
    qo.reranker = s->o->reranker;
    trove_err rc = front_query(&s->f, &qo, res, info);
    *has_info = rc == TROVE_OK;
    return rc;
}

trove_err web_run_similar(web_srv *s, const web_args *args, api_similar_opts *so,
                          search_results *res, api_similar_info *info)
{
    web_search_req q;
    char msg[256];
    if (!web_search_req_parse(args, &q, msg, sizeof msg))
        return trove_fail(TROVE_EUSAGE, "%s", msg);
    so->filter.since = q.since;
    so->filter.until = q.until;
    so->filter.where = (const char *const *)q.where;
    so->filter.n_where = q.n_where;
    trove_err e = front_similar(&s->f, so, res, info);
    web_search_req_free(&q);
    so->filter.since = so->filter.until = NULL;
    so->filter.where = NULL;
    so->filter.n_where = 0;
    return e;
}

/* ---- responses ---- */

static enum MHD_Result send_resp(struct MHD_Connection *c, web_resp *r)
{
    struct MHD_Response *m = http_mhd.create_response_from_buffer(
        r->body.len, (void *)tbuf_cstr(&r->body), MHD_RESPMEM_MUST_COPY);
    if (!m)
        return MHD_NO;
    http_mhd.add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
                                 r->type ? r->type : "text/html; charset=utf-8");
    http_mhd.add_response_header(m, "Content-Security-Policy", csp);
    http_mhd.add_response_header(m, "X-Content-Type-Options", "nosniff");
    http_mhd.add_response_header(m, "Referrer-Policy", "same-origin");
    http_mhd.add_response_header(m, "X-Frame-Options", "DENY");
    http_mhd.add_response_header(m, "Cache-Control", "no-store");
    if (r->location)
        http_mhd.add_response_header(m, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->cookie)
        http_mhd.add_response_header(m, MHD_HTTP_HEADER_SET_COOKIE, r->cookie);
    enum MHD_Result rc = http_mhd.queue_response(c, r->status ? r->status : 200, m);
    http_mhd.destroy_response(m);
    return rc;
}

static void resp_free(web_resp *r)
{
    tbuf_free(&r->body);
    free(r->location);
    free(r->cookie);
}

static void json_body(web_resp *r, unsigned status, json_t *j)
{
    r->status = status;
    r->type = "application/json";
    char *s = json_dumps(j, JSON_INDENT(2));
    tbuf_puts(&r->body, s ? s : "{}");
    tbuf_putc(&r->body, '\n');
    free(s);
    json_decref(j);
}

static json_t *jstr(const char *s)
{
    tbuf b = {0};
    esc_utf8(&b, s ? s : "", s ? strlen(s) : 0);
    json_t *j = json_stringn(tbuf_cstr(&b), b.len);
    tbuf_free(&b);
    return j;
}

static unsigned err_status(trove_err e)
{
    return e == TROVE_ENOENT ? 404 : e == TROVE_EINVAL || e == TROVE_EUSAGE ? 400
           : e == TROVE_EACCES ? 403 : 500;
}

static void json_error(web_resp *r, unsigned status, const char *msg)
{
    json_body(r, status, json_pack("{s:i, s:o}", "version", 1, "error", jstr(msg)));
}

static void json_fail(web_resp *r, trove_err e)
{
    const char *m = trove_errmsg();
    json_error(r, err_status(e), m && *m ? m : trove_strerror(e));
}

/* ---- the JSON API ---- */

static void api_search_json(web_srv *s, const web_args *args, web_resp *r)
{
    web_search_req q;
    char msg[160];
    if (!web_search_req_parse(args, &q, msg, sizeof msg)) {
        json_error(r, 400, msg);
    } else if (!*q.q) {
        json_error(r, 400, "q: a query is required");
    } else {
        search_results res;
        api_query_info info;
        int has_info;
        trove_err e = web_run_search(s, &q, &res, &info, &has_info);
        if (e) {
            json_fail(r, e);
        } else {
            const char *warn[2];
            size_t nw = 0;
            if (res.vec_error)
                warn[nw++] = res.vec_error;
            char *text = s->o->results_json(q.q, &res, has_info ? &info : NULL, q.explain,
                                            warn, nw);
            r->type = "application/json";
            tbuf_puts(&r->body, text);
            free(text);
            search_results_free(&res);
            if (has_info)
                api_query_info_free(&info);
        }
    }
    web_search_req_free(&q);
}

static void api_get_json(web_srv *s, const web_args *args, web_resp *r)
{
    const char *ref = web_arg(args, "ref"), *v;
    long line = 0, count = 0;
    if (!ref || !*ref)
        return json_error(r, 400, "ref: a note (COLLECTION/PATH, PATH or #DOCID) is required");
    if (((v = web_arg(args, "line")) && !str_to_long(v, 1, 1L << 40, &line)) ||
        ((v = web_arg(args, "count")) && !str_to_long(v, 0, 1L << 40, &count)))
        return json_error(r, 400, "line and count must be positive numbers");
    api_note n;
    trove_err e = front_get(&s->f, ref, line, count, &n);
    if (e)
        return json_fail(r, e);
    json_t *j = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:o}", "version", 1,
                          "docid", jstr(n.docid), "collection", jstr(n.collection),
                          "path", jstr(n.path), "file", jstr(n.root), "title", jstr(n.title),
                          "line_start", (json_int_t)n.line_start, "line_end",
                          (json_int_t)n.line_end, "n_lines", (json_int_t)n.n_lines,
                          "text", jstr(""));
    tbuf b = {0};
    esc_utf8(&b, n.text ? n.text : "", n.text ? n.len : 0);
    json_object_set_new(j, "text", json_stringn(tbuf_cstr(&b), b.len));
    tbuf_reset(&b);
    tbuf_printf(&b, "%s/%s", n.root ? n.root : "", n.path ? n.path : "");
    json_object_set_new(j, "file", jstr(b.data));
    tbuf_free(&b);
    api_note_free(&n);
    json_body(r, 200, j);
}

static void api_status_json(web_srv *s, web_resp *r)
{
    api_status st;
    json_t *daemon = NULL;
    trove_err e = front_status(&s->f, &st, &daemon);
    if (e)
        return json_fail(r, e);
    json_t *cols = json_array();
    for (size_t i = 0; i < st.n_collections; i++) {
        const api_status_collection *c = &st.collections[i];
        json_t *cj = json_pack("{s:o, s:o, s:I}", "name", jstr(c->name), "path", jstr(c->path),
                               "notes", (json_int_t)c->notes);
        if (c->fresh_known)
            json_object_set_new(cj, "changed", json_pack("{s:I, s:I, s:I}", "added",
                                (json_int_t)c->fresh.added, "changed",
                                (json_int_t)c->fresh.changed, "deleted",
                                (json_int_t)c->fresh.deleted));
        if (c->problem)
            json_object_set_new(cj, "problem", jstr(c->problem));
        json_array_append_new(cols, cj);
    }
    json_t *j = json_pack("{s:i, s:o, s:o, s:b, s:I, s:I, s:{s:I, s:I, s:I}, s:I, s:o, s:o, s:o}",
                          "version", 1, "config", jstr(st.config_file), "index",
                          jstr(st.index_path), "index_exists", st.index_exists, "index_bytes",
                          (json_int_t)st.index_bytes, "last_update", (json_int_t)st.last_update,
                          "counts", "notes", (json_int_t)st.counts.docs, "chunks",
                          (json_int_t)st.counts.chunks, "links", (json_int_t)st.counts.links,
                          "snapshot", (json_int_t)st.snapshot.id, "collections", cols,
                          "daemon", daemon ? daemon : json_null(),
                          "freshness", jstr(s->o->freshness));
    api_status_free(&st);
    json_body(r, 200, j);
}

static void api_snapshots_json(web_srv *s, web_resp *r)
{
    api_snapshots sn;
    trove_err e = api_snapshot_list(s->a, 0, &sn);
    if (e)
        return json_fail(r, e);
    json_t *items = json_array();
    for (size_t i = 0; i < sn.n; i++) {
        const store_snapshot *x = &sn.items[i];
        json_array_append_new(items, json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:I}", "id",
                                               (json_int_t)x->id, "created_at",
                                               (json_int_t)x->created_at, "kind", jstr(x->kind),
                                               "note", jstr(x->note), "added",
                                               (json_int_t)x->added, "removed",
                                               (json_int_t)x->removed, "modified",
                                               (json_int_t)x->modified));
    }
    json_body(r, 200, json_pack("{s:i, s:I, s:o, s:s}", "version", 1, "current",
                                (json_int_t)sn.current, "snapshots", items, "token", s->csrf));
    api_snapshots_free(&sn);
}

static void api_rollback_json(web_srv *s, const web_args *args, web_resp *r)
{
    const char *v = web_arg(args, "id");
    long id;
    if (!v || !str_to_long(v, 1, 1L << 53, &id))
        return json_error(r, 400, "id: the snapshot to roll back to is required");
    api_rollback rb;
    trove_err e = api_snapshot_rollback(s->a, id, &rb);
    if (e)
        return json_fail(r, e);
    json_body(r, 200, json_pack("{s:i, s:I, s:I, s:b}", "version", 1, "from",
                                (json_int_t)rb.from, "current", (json_int_t)rb.made.id, "noop",
                                rb.noop));
    api_rollback_free(&rb);
}

static json_t *graph_note_json(const api_graph_note *g)
{
    return json_pack("{s:o, s:o, s:o, s:o}", "docid", jstr(g->docid), "collection",
                     jstr(g->collection), "path", jstr(g->path), "title",
                     jstr(g->title && *g->title ? g->title : g->path));
}

/* links as JSON; `unique`: one entry per note (the graph), else every link
 * with its line and text */
static json_t *links_json(const api_link *l, size_t n, int unique)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!l[i].note.docid[0])
            continue;
        int seen = 0;
        for (size_t k = 0; unique && k < i && !seen; k++)
            seen = strcmp(l[k].note.docid, l[i].note.docid) == 0;
        if (seen)
            continue;
        json_t *j = graph_note_json(&l[i].note);
        if (!unique) {
            json_object_set_new(j, "target", jstr(l[i].target));
            json_object_set_new(j, "line", json_integer(l[i].line));
            json_object_set_new(j, "text", jstr(l[i].text));
        }
        json_array_append_new(a, j);
    }
    return a;
}

/* /api/links (every link with its line) and /api/graph (the neighbourhood:
 * each note once) */
static void api_links_json(web_srv *s, const web_args *args, web_resp *r, int graph)
{
    const char *ref = web_arg(args, "ref");
    if (!ref || !*ref)
        return json_error(r, 400, "ref: a note (COLLECTION/PATH, PATH or #DOCID) is required");
    api_link_set ls;
    trove_err e = front_links(&s->f, ref, &ls);
    if (e)
        return json_fail(r, e);
    json_t *j = json_pack("{s:i, s:o, s:o, s:o}", "version", 1, "note",
                          graph_note_json(&ls.note), "back",
                          links_json(ls.back, ls.n_back, graph), "out",
                          links_json(ls.out, ls.n_out, graph));
    api_link_set_free(&ls);
    json_body(r, 200, j);
}

static void api_similar_json(web_srv *s, const web_args *args, web_resp *r)
{
    const char *ref = web_arg(args, "ref"), *v;
    long n = 10;
    if (!ref || !*ref)
        return json_error(r, 400, "ref: a note (COLLECTION/PATH, PATH or #DOCID) is required");
    if ((v = web_arg(args, "n")) && !str_to_long(v, 1, 1000, &n))
        return json_error(r, 400, "n must be a number from 1 to 1000");
    api_similar_opts so;
    api_similar_opts_init(&so);
    so.ref = ref;
    so.limit = (size_t)n;
    so.model = s->o->model;
    search_results res;
    api_similar_info info;
    trove_err e = web_run_similar(s, args, &so, &res, &info);
    if (e)
        return json_fail(r, e);
    char *text = s->o->results_json(ref, &res, NULL, 0, NULL, 0);
    r->type = "application/json";
    tbuf_puts(&r->body, text);
    free(text);
    search_results_free(&res);
    api_similar_info_free(&info);
}

/* ---- requests ---- */

typedef struct web_req_state {
    tbuf body;
    int too_big;
} web_req_state;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    web_args_add(cls, key, strlen(key), value, value ? strlen(value) : 0);
    return MHD_YES;
}

static const char *cookie_token(struct MHD_Connection *c)
{
    return http_mhd.lookup_connection_value(c, MHD_COOKIE_KIND, "trove_token");
}

/* The client's right to ask: Host, Origin, and the token of a remote server. */
static int allowed(web_srv *s, struct MHD_Connection *c, const web_args *args, web_resp *r)
{
    if (!http_host_ok(&s->guard, http_header(c, MHD_HTTP_HEADER_HOST))) {
        web_page_error(s, r, 403, "Forbidden: the Host header does not name this server "
                       "(a page reached through another name is refused).");
        return 0;
    }
    if (!http_origin_ok(&s->guard, http_header(c, MHD_HTTP_HEADER_ORIGIN))) {
        web_page_error(s, r, 403, "Forbidden: requests from another site's page are refused.");
        return 0;
    }
    if (!s->guard.token)
        return 1;
    const char *given = web_arg(args, "token");
    if (given && http_secret_ok(s->guard.token, given)) {
        r->cookie = xstrdup("");
        tbuf ck = {0};
        tbuf_printf(&ck, "trove_token=%s; Path=/; HttpOnly; SameSite=Strict", s->guard.token);
        free(r->cookie);
        r->cookie = tbuf_detach(&ck);
        return 1;
    }
    if (http_bearer_ok(&s->guard, http_header(c, MHD_HTTP_HEADER_AUTHORIZATION)) ||
        http_secret_ok(s->guard.token, cookie_token(c) ? cookie_token(c) : "\x01"))
        return 1;
    web_page_error(s, r, 401, "Unauthorized: open this page once with ?token=TOKEN (mcp.token "
                   "in config.yaml), or send Authorization: Bearer TOKEN.");
    return 0;
}

static const web_asset *asset(const char *url)
{
    if (strncmp(url, "/static/", 8) != 0)
        return NULL;
    for (size_t i = 0; i < web_n_assets; i++)
        if (strcmp(url + 8, web_assets[i].name) == 0)
            return &web_assets[i];
    return NULL;
}

static void route(web_srv *s, struct MHD_Connection *c, const char *url, int post,
                  web_args *args, web_resp *r)
{
    const web_asset *as;
    if (post) {
        /* every state change: the page's token, from a form or a header */
        const char *t = web_arg(args, "csrf");
        if (!t)
            t = http_header(c, "X-Trove-Token");
        if (!http_secret_ok(s->csrf, t ? t : "\x01"))
            return web_page_error(s, r, 403, "Forbidden: this request lacks the page's token "
                                  "(reload the status page and try again).");
        if (strcmp(url, "/api/rollback") == 0)
            return api_rollback_json(s, args, r);
        if (strcmp(url, "/rollback") == 0)
            return web_page_rollback(s, args, 1, r);
        return web_page_error(s, r, 404, "Not found.");
    }
    if (strcmp(url, "/") == 0)
        return web_page_search(s, args, web_arg(args, "frag") != NULL, r);
    if (strcmp(url, "/note") == 0)
        return web_page_note(s, args, r);
    if (strcmp(url, "/status") == 0)
        return web_page_status(s, r);
    if (strcmp(url, "/rollback") == 0)
        return web_page_rollback(s, args, 0, r);
    if (strcmp(url, "/api/search") == 0)
        return api_search_json(s, args, r);
    if (strcmp(url, "/api/get") == 0)
        return api_get_json(s, args, r);
    if (strcmp(url, "/api/links") == 0 || strcmp(url, "/api/graph") == 0)
        return api_links_json(s, args, r, url[5] == 'g');
    if (strcmp(url, "/api/similar") == 0)
        return api_similar_json(s, args, r);
    if (strcmp(url, "/api/status") == 0)
        return api_status_json(s, r);
    if (strcmp(url, "/api/snapshots") == 0)
        return api_snapshots_json(s, r);
    if (strncmp(url, "/api/", 5) == 0)
        return json_error(r, 404, "no such API endpoint (docs/web.md lists them)");
    if ((as = asset(url))) {
        r->type = as->type;
        tbuf_append(&r->body, as->data, as->len);
        return;
    }
    web_page_error(s, r, 404, "Not found.");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_cls)
{
    (void)version;
    web_srv *s = cls;
    int post = strcmp(method, "POST") == 0;
    web_req_state *st = *req_cls;
    if (!st) {
        /* Answer in a later call, once the request (a POST's body, a GET's
         * none) has been read: libmicrohttpd closes a connection whose
         * answer was queued in the first call, and a browser then opens a
         * new one for each search typed. */
        *req_cls = st = xcalloc(1, sizeof *st);
        return MHD_YES;
    }
    if (post && *upload_size) {
        if (st->body.len + *upload_size > WEB_MAX_BODY)
            st->too_big = 1;
        else
            tbuf_append(&st->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    web_resp r = {0};
    web_args args = {0};
    http_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
    if (post)
        web_args_parse(&args, tbuf_cstr(&st->body), st->body.len);
    if (!post && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        web_page_error(s, &r, 405, "Method not allowed.");
    else if (st->too_big)
        web_page_error(s, &r, 413, "Request body too large.");
    else if (allowed(s, c, &args, &r))
        route(s, c, url, post, &args, &r);
    trove_errclear();
    enum MHD_Result rc = send_resp(c, &r);
    resp_free(&r);
    web_args_free(&args);
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    web_req_state *st = *req_cls;
    if (st) {
        tbuf_free(&st->body);
        free(st);
        *req_cls = NULL;
    }
}

static void random_hex(char *out, size_t n_bytes)
{
    unsigned char rnd[32];
    size_t got = 0;
    while (got < n_bytes) {
        ssize_t k = getrandom(rnd + got, n_bytes - got, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            unsigned long x = (unsigned long)time(NULL) ^ (unsigned long)(size_t)out;
            for (; got < n_bytes; got++, x = x * 6364136223846793005UL + 1)
                rnd[got] = (unsigned char)(x >> 33);
            break;
        }
        got += (size_t)k;
    }
    for (size_t i = 0; i < n_bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
}

trove_err web_serve(api *a, const web_opts *o)
{
    trove_err rc = http_load("trove serve");
    if (rc)
        return rc;
    web_srv s = {.a = a, .f = {a, o->use_daemon}, .o = o};
    s.guard = (http_guard){.host = o->host, .token = o->token, .origins = o->origins,
                           .n_origins = o->n_origins};
    random_hex(s.csrf, 16);
    http_serve_opts so = {
        .host = o->host, .port = o->port, .path = "/",
        .handler = on_request, .handler_cls = &s,
        .completed = on_completed, .completed_cls = &s,
        .on_listen = o->on_listen, .ctx = o->ctx, .stop = o->stop,
    };
    return http_serve(&so);
}
