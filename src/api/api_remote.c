/* api_remote — `trove search --remote URL`: the same query against an
 * index `trove publish opensearch` made (docs/scaling.md). The query is
 * analysed by trove (its terms for the `terms` field) and embedded by the
 * model whose fingerprint the index's _meta names; the filters are mapped
 * onto the published fields; the hits become search_results, one per note,
 * rendered by the front ends like local ones. libcurl is loaded only here
 * (fetch/fetch.h), so a local search never pays for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "embed/embed.h"
#include "publish/pub.h"
#include "publish/pub_send.h"
#include "search/snippet.h"
#include "search/where.h"
#include "text/date.h"
#include "text/tok.h"
#include "util/mem.h"

/* Hits asked for per result wanted: a note's chunks come one hit each. */
#define REMOTE_HITS_PER_NOTE 4
#define REMOTE_MAX_HITS 1000

typedef struct remote_target {
    char *base, *index;
} remote_target;

/* "http://host:9200/notes" -> base "http://host:9200", index "notes"
 * (none: "trove"). */
static trove_err split_remote(const char *url, remote_target *t)
{
    const char *scheme = strstr(url, "://");
    const char *slash = scheme ? strchr(scheme + 3, '/') : NULL;
    t->base = slash ? xstrndup(url, (size_t)(slash - url)) : xstrdup(url);
    const char *name = slash ? slash + 1 : "";
    size_t n = strlen(name);
    while (n > 0 && name[n - 1] == '/')
        n--;
    t->index = n ? xstrndup(name, n) : xstrdup("trove");
    return api_publish_index_check(t->index);
}

typedef struct terms_buf {
    tbuf text;
    snippet_term *items;
    size_t n, cap;
} terms_buf;

static int add_term(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    terms_buf *t = ctx;
    if (t->text.len)
        tbuf_putc(&t->text, ' ');
    tbuf_append(&t->text, token, len);
    xgrow(&t->items, &t->cap, t->n + 1, sizeof *t->items);
    t->items[t->n++] = (snippet_term){xstrndup(token, len), 0};
    return 0;
}

static void terms_free(terms_buf *t)
{
    tbuf_free(&t->text);
    for (size_t i = 0; i < t->n; i++)
        free((char *)t->items[i].token);
    free(t->items);
}

/* The index's _meta.trove; TROVE_ENOENT when there is no such index. */
static trove_err remote_meta(pub_conn *c, const remote_target *t, const char *shown, pub_meta *m)
{
    tbuf path = {0};
    tbuf_printf(&path, "%s/_mapping", t->index);
    fetch_http_resp rs;
    trove_err rc = pub_request(c, "GET", path.data, NULL, &rs);
    if (rc == TROVE_OK && rs.status == 404)
        rc = trove_fail(TROVE_ENOENT, "%s has no index '%s': publish one with `trove publish "
                        "opensearch %s --index %s`", shown, t->index, shown, t->index);
    else if (rc == TROVE_OK && rs.status != 200)
        rc = trove_fail(TROVE_EIO, "GET %s/%s: HTTP %ld", shown, path.data, rs.status);
    else if (rc == TROVE_OK &&
             (rc = pub_meta_parse(rs.body.data ? rs.body.data : "", rs.body.len, m)) ==
                 TROVE_OK && !m->is_trove)
        rc = trove_fail(TROVE_EUNSUPPORTED, "%s/%s was not made by `trove publish`", shown,
                        t->index);
    else if (rc == TROVE_OK && m->format != PUB_FORMAT)
        rc = trove_fail(TROVE_EUNSUPPORTED, "%s/%s holds documents of format %d; this trove "
                        "reads format %d", shown, t->index, m->format, PUB_FORMAT);
    fetch_http_resp_free(&rs);
    tbuf_free(&path);
    return rc;
}

/* The query's vector, from the model the index was published with
 * (checked by fingerprint); NULL with the reason in out when none. */
static trove_err remote_vector(api *a, const api_search_opts *o, const pub_meta *m,
                               search_results *out, float **vec)
{
    *vec = NULL;
    if (m->dim <= 0 || !o->model) {
        out->vec_state = m->dim <= 0 ? SEARCH_VEC_NONE : SEARCH_VEC_OFF;
        if (o->search.vector_only)
            return trove_fail(TROVE_EUNSUPPORTED, m->dim <= 0
                              ? "the published index has no vectors (run `trove embed`, "
                                "then publish again)"
                              : "vsearch needs an embedding model (--model)");
        return TROVE_OK;
    }
    embed_model *em;
    trove_err rc = api_embedder(a, o->model, 0, &em);
    if (rc)
        return rc;
    char *fp = vembed_fingerprint(em);
    if (strcmp(fp, m->fingerprint) != 0) {
        rc = trove_fail(TROVE_EUNSUPPORTED, "the index was published with vectors of model "
                        "'%s', and %s is another model (fingerprints differ): search with "
                        "--model of that one, or --no-vector", m->model, o->model);
        free(fp);
        return rc;
    }
    free(fp);
    if (embed_dim(em) != m->dim)
        return trove_fail(TROVE_EUNSUPPORTED, "the index has %d-d vectors, the model makes %d",
                          m->dim, embed_dim(em));
    *vec = xmalloc((size_t)m->dim * sizeof **vec);
    const char *text = o->search.query ? o->search.query : "";
    pthread_mutex_t *lock = api_em_lock(a);
    if (lock)
        pthread_mutex_lock(lock);
    rc = embed_texts(em, &text, 1, EMBED_QUERY, *vec);
    if (lock)
        pthread_mutex_unlock(lock);
    double norm = 0;
    for (int i = 0; rc == TROVE_OK && i < m->dim; i++)
        norm += (double)(*vec)[i] * (*vec)[i];
    if (rc || norm <= 0) {
        free(*vec);
        *vec = NULL;
        out->vec_state = SEARCH_VEC_BLANK;
        return rc;
    }
    out->vec_state = SEARCH_VEC_USED;
    return TROVE_OK;
}

/* --since/--until as inclusive days "YYYY-MM-DD". */
static trove_err day_bound(const char *spec, int until, char out[11])
{
    double d;
    trove_err rc = date_parse_bound(spec, date_now(), until, &d);
    if (rc == TROVE_OK)
        date_format(until ? d - 1 : d, out);
    return rc;
}

typedef struct remote_where {
    where_cond *conds;
    pub_where *w;
    const char ***values;
    size_t n;
} remote_where;

static void remote_where_free(remote_where *rw)
{
    for (size_t i = 0; i < rw->n; i++) {
        where_cond_free(&rw->conds[i]);
        free(rw->values[i]);
    }
    free(rw->conds);
    free(rw->w);
    free(rw->values);
}

static trove_err parse_where(const search_opts *so, remote_where *rw)
{
    size_t n = so->n_where;
    rw->conds = xcalloc(n ? n : 1, sizeof *rw->conds);
    rw->w = xcalloc(n ? n : 1, sizeof *rw->w);
    rw->values = xcalloc(n ? n : 1, sizeof *rw->values);
    for (size_t i = 0; i < n; i++) {
        trove_err rc = where_parse(so->where[i], &rw->conds[i]);
        if (rc)
            return rc;
        rw->n = i + 1;
        where_cond *c = &rw->conds[i];
        rw->values[i] = xcalloc(c->n_values ? c->n_values : 1, sizeof *rw->values[i]);
        for (size_t k = 0; k < c->n_values; k++)
            rw->values[i][k] = c->values[k].text;
        rw->w[i] = (pub_where){c->key, (int)c->op, rw->values[i], c->n_values};
    }
    return TROVE_OK;
}

static char **copy_strs(char *const *s, size_t n)
{
    char **out = n ? xmalloc(n * sizeof *out) : NULL;
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(s[i]);
    return out;
}

/* One result per note: its best hit. */
static void add_result(api *a, const pub_hit *h, const terms_buf *terms, search_results *out)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->items[i].docid, h->docid) == 0 &&
            strcmp(out->items[i].collection, h->collection) == 0)
            return;
    search_result *r = &out->items[out->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->docid, sizeof r->docid, "%s", h->docid);
    r->collection = xstrdup(h->collection);
    const config_collection *cc = config_find_collection(&a->cfg, h->collection);
    r->root = xstrdup(cc ? cc->path : "");
    r->path = xstrdup(h->path);
    r->title = xstrdup(h->title);
    r->heading_path = copy_strs(h->heading, h->n_heading);
    r->n_heading_path = h->n_heading;
    r->line_start = h->line_start;
    r->line_end = h->line_end;
    r->start_byte = h->start_byte;
    r->end_byte = h->end_byte;
    r->score = h->score;
    r->snippet = snippet_make(h->text, strlen(h->text), terms->items, terms->n, 200);
    const char **ctx = config_contexts_for(&a->cfg, r->collection, r->path, &r->n_context);
    r->context = r->n_context ? xmalloc(r->n_context * sizeof *r->context) : NULL;
    for (size_t k = 0; k < r->n_context; k++)
        r->context[k] = xstrdup(ctx[k]);
    free(ctx);
    r->tags = copy_strs(h->tags, h->n_tags);
    r->n_tags = h->n_tags;
    r->in_degree = h->in_degree;
    r->prior = 1;
    r->recency = 1;
    snprintf(r->lang, sizeof r->lang, "%s", h->lang);
    int64_t days;
    size_t used;
    if (*h->date && date_read_day(h->date, strlen(h->date), &days, &used) == 1 && used == 10)
        r->date = (double)days;
    r->date_source = xstrdup(h->date_source);
}

static trove_err run_remote(api *a, const api_search_opts *o, pub_conn *c,
                            const remote_target *t, const char *shown, search_results *out)
{
    pub_meta m = {0};
    float *vec = NULL;
    terms_buf terms = {0};
    remote_where rw = {0};
    pub_hit *hits = NULL;
    size_t n_hits = 0;
    char since[11], until[11], *body = NULL;
    int hybrid = 0;
    const search_opts *so = &o->search;
    trove_err rc = remote_meta(c, t, shown, &m);
    if (rc == TROVE_OK)
        rc = remote_vector(a, o, &m, out, &vec);
    if (rc == TROVE_OK) {
        tok_opts to = {.stem = 1, .query = 1};
        const char *q = so->query ? so->query : "";
        tok_run(&to, q, strlen(q), &terms, add_term);
        rc = parse_where(so, &rw);
    }
    if (rc == TROVE_OK && so->since)
        rc = day_bound(so->since, 0, since);
    if (rc == TROVE_OK && so->until)
        rc = day_bound(so->until, 1, until);
    size_t want = so->limit ? so->limit : REMOTE_MAX_HITS;
    size_t k = want * REMOTE_HITS_PER_NOTE;
    if (k > REMOTE_MAX_HITS || k / REMOTE_HITS_PER_NOTE != want)
        k = REMOTE_MAX_HITS;
    if (rc == TROVE_OK) {
        pub_search_req rq = {
            .query = so->query, .terms = tbuf_cstr(&terms.text), .vec = vec, .dim = m.dim,
            .vector_only = so->vector_only, .k = k, .collections = so->collections,
            .n_collections = so->n_collections, .folder = so->folder, .tags = so->tags,
            .n_tags = so->n_tags, .langs = so->langs, .n_langs = so->n_langs,
            .since = so->since ? since : NULL, .until = so->until ? until : NULL,
            .where = rw.w, .n_where = rw.n};
        rc = pub_search_body(&rq, &body, &hybrid);
    }
    if (rc == TROVE_OK) {
        tbuf path = {0};
        tbuf_printf(&path, "%s/_search", t->index);
        if (hybrid) {
            char *pipe = pub_pipeline_name(t->index);
            tbuf_printf(&path, "?search_pipeline=%s", pipe);
            free(pipe);
        }
        fetch_http_resp rs;
        rc = pub_request(c, "POST", path.data, body, &rs);
        if (rc == TROVE_OK && rs.status != 200)
            rc = trove_fail(TROVE_EIO, "POST %s/%s: HTTP %ld: %.300s", shown, path.data,
                            rs.status, tbuf_cstr(&rs.body));
        if (rc == TROVE_OK)
            rc = pub_search_parse(rs.body.data ? rs.body.data : "", rs.body.len, &hits, &n_hits);
        fetch_http_resp_free(&rs);
        tbuf_free(&path);
    }
    if (rc == TROVE_OK) {
        out->items = n_hits ? xcalloc(n_hits, sizeof *out->items) : NULL;
        for (size_t i = 0; i < n_hits && out->n < want; i++)
            add_result(a, &hits[i], &terms, out);
        out->fusion.method = hybrid ? SEARCH_FUSION_RRF : SEARCH_FUSION_NONE;
    }
    pub_hits_free(hits, n_hits);
    free(body);
    remote_where_free(&rw);
    terms_free(&terms);
    free(vec);
    pub_meta_free(&m);
    return rc;
}

trove_err api_search_remote(api *a, const api_search_opts *opts, const char *remote,
                            search_results *out)
{
    memset(out, 0, sizeof *out);
    /* Filters the published documents cannot answer are refused, never
     * dropped: a narrower search must not come back wider. */
    if (opts->search.heading_contains)
        return trove_fail(TROVE_EUNSUPPORTED, "--heading (a heading filter) has no remote "
                          "filter: the published index is searched by note");
    if (opts->search.path_prefix || opts->search.n_doc_refs)
        return trove_fail(TROVE_EUNSUPPORTED, "a filter by path prefix or by note list has no "
                          "remote filter: use a folder (--folder) or a collection (-c)");
    api_search_opts o = *opts;
    trove_err rc = api_search_opts_resolve(&o, &a->cfg);
    if (rc)
        return rc;
    remote_target t = {0};
    rc = split_remote(remote, &t);
    pub_conn *c = NULL;
    pub_send_opts so = {.retries = 2};
    if (rc == TROVE_OK)
        rc = pub_conn_open(t.base, &so, &c);
    if (rc == TROVE_OK) {
        char *shown = pub_url_display(t.base);
        rc = run_remote(a, &o, c, &t, shown, out);
        free(shown);
    }
    pub_conn_close(c);
    free(t.base);
    free(t.index);
    if (rc == TROVE_OK && o.with_body)
        api_read_bodies(out);   /* the notes this machine has (MCP excerpts, --full) */
    if (rc)
        search_results_free(out);
    return rc;
}
