/* api_graph: links, similar notes and duplicates (api.h, "the link graph").
 * SQL lives in store/store_graph.c and search/ (similar.c, mentions.c);
 * this file resolves the note, reads the lines links stand on through
 * fs_read_inside(), and fills the api structs. */
#include "api/api.h"
#include "api/api_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/mentions.h"
#include "search/similar.h"
#include "store/store_graph.h"
#include "util/fsutil.h"
#include "util/mem.h"

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void graph_note_set(api_graph_note *n, const char *docid, const char *collection,
                           const char *root, const char *path, const char *title)
{
    snprintf(n->docid, sizeof n->docid, "%s", docid ? docid : "");
    n->collection = dup_or_null(collection);
    n->root = dup_or_null(root);
    n->path = dup_or_null(path);
    n->title = dup_or_null(title);
}

static void graph_note_clear(api_graph_note *n)
{
    free(n->collection);
    free(n->root);
    free(n->path);
    free(n->title);
    memset(n, 0, sizeof *n);
}

static void links_free(api_link *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        graph_note_clear(&l[i].note);
        free(l[i].target);
        free(l[i].fragment);
        free(l[i].text);
    }
    free(l);
}

void api_link_set_free(api_link_set *s)
{
    graph_note_clear(&s->note);
    for (size_t i = 0; i < s->n_names; i++)
        free(s->names[i]);
    free(s->names);
    links_free(s->back, s->n_back);
    links_free(s->out, s->n_out);
    links_free(s->unresolved, s->n_unresolved);
    links_free(s->mentions, s->n_mentions);
    memset(s, 0, sizeof *s);
}

/* ---- the lines links stand on ---- */

/* The last file read, so that the links of one note read it once. */
typedef struct file_cache {
    char *root, *path;
    char *text;
    size_t len;
} file_cache;

static void file_cache_free(file_cache *c)
{
    free(c->root);
    free(c->path);
    free(c->text);
    memset(c, 0, sizeof *c);
}

/* Line `line` (1-based) of root/path, trimmed; "" when it cannot be read. */
static char *line_of(file_cache *c, const char *root, const char *path, int line)
{
    if (!c->root || strcmp(c->root, root) || strcmp(c->path, path)) {
        file_cache_free(c);
        c->root = xstrdup(root);
        c->path = xstrdup(path);
        if (fs_read_inside(root, path, 0, &c->text, &c->len) != TROVE_OK) {
            trove_errclear();
            c->text = NULL;
            c->len = 0;
        }
    }
    const char *p = c->text, *end = c->text ? c->text + c->len : NULL;
    for (int at = 1; p && p < end; at++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (at == line) {
            while (n && (*p == ' ' || *p == '\t'))
                p++, n--;
            while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
                n--;
            return xstrndup(p, n);
        }
        p += n + (nl != NULL);
    }
    return xstrdup("");
}

static void link_from_row(api_link *l, const store_link_row *r)
{
    memset(l, 0, sizeof *l);
    if (r->doc_id)
        graph_note_set(&l->note, r->docid, r->collection, r->root, r->path, r->title);
    l->target = xstrdup(r->target);
    l->fragment = dup_or_null(r->fragment);
    l->kind = r->kind;
    l->line = r->line;
}

/* ---- links ---- */

static trove_err fill_back(store *st, api_hide *h, const store_doc *doc, api_link_set *out,
                           int64_t **linkers, size_t *n_linkers)
{
    store_link_row *rows;
    size_t n;
    trove_err rc = store_links_to(st, doc->id, &rows, &n);
    if (rc)
        return rc;
    out->back = xcalloc(n ? n : 1, sizeof *out->back);
    *linkers = xcalloc(n + 1, sizeof **linkers);
    (*linkers)[(*n_linkers)++] = doc->id;
    file_cache fc = {0};
    for (size_t i = 0; i < n; i++) {
        if (api_hide_note(h, rows[i].doc_id, rows[i].collection, rows[i].path))
            continue;   /* a hidden note's link: its line is its text */
        api_link *l = &out->back[out->n_back++];
        link_from_row(l, &rows[i]);
        l->text = line_of(&fc, rows[i].root, rows[i].path, rows[i].line);
        if ((*linkers)[*n_linkers - 1] != rows[i].doc_id)
            (*linkers)[(*n_linkers)++] = rows[i].doc_id;
    }
    file_cache_free(&fc);
    store_link_rows_free(rows, n);
    return TROVE_OK;
}

static trove_err fill_out(store *st, api_hide *h, const store_doc *doc, api_link_set *out)
{
    store_link_row *rows;
    size_t n;
    trove_err rc = store_links_from(st, doc->id, &rows, &n);
    if (rc)
        return rc;
    out->out = xcalloc(n ? n : 1, sizeof *out->out);
    out->unresolved = xcalloc(n ? n : 1, sizeof *out->unresolved);
    file_cache fc = {0};
    for (size_t i = 0; i < n; i++) {
        /* a link to a hidden note leads to no note the reader may see */
        if (rows[i].doc_id && api_hide_note(h, rows[i].doc_id, rows[i].collection, rows[i].path))
            rows[i].doc_id = 0;
        api_link *l = rows[i].doc_id ? &out->out[out->n_out++]
                                     : &out->unresolved[out->n_unresolved++];
        link_from_row(l, &rows[i]);
        l->text = line_of(&fc, doc->root, doc->path, rows[i].line);
    }
    file_cache_free(&fc);
    store_link_rows_free(rows, n);
    return TROVE_OK;
}

static trove_err fill_mentions(store *st, api_hide *h, const int64_t *skip, size_t n_skip,
                               api_link_set *out)
{
    mention_row *rows;
    size_t n;
    trove_err rc = mentions_find(st, (const char *const *)out->names, out->n_names, skip, n_skip,
                                 &rows, &n);
    if (rc)
        return rc;
    out->mentions = xcalloc(n ? n : 1, sizeof *out->mentions);
    for (size_t i = 0; i < n; i++) {
        if (api_hide_note(h, rows[i].doc_id, rows[i].collection, rows[i].path))
            continue;
        api_link *l = &out->mentions[out->n_mentions++];
        graph_note_set(&l->note, rows[i].docid, rows[i].collection, rows[i].root, rows[i].path,
                       rows[i].title);
        l->target = xstrdup(rows[i].name);
        l->kind = API_LINK_MENTION;
        l->line = rows[i].line;
        l->text = xstrdup(rows[i].text);
    }
    mention_rows_free(rows, n);
    return TROVE_OK;
}

trove_err api_links(api *a, const char *cwd, const char *ref, api_link_set *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    store_doc doc;
    trove_err rc = api_locate_doc(a, cwd, ref, &st, &doc);
    if (rc)
        return rc;
    graph_note_set(&out->note, doc.docid, doc.collection, doc.root, doc.path, doc.title);
    int64_t *linkers = NULL;
    size_t n_linkers = 0;
    api_hide h;
    rc = api_hide_begin(a, st, &h);
    if (rc == TROVE_OK)
        rc = store_doc_names(st, doc.id, &out->names, &out->n_names);
    if (rc == TROVE_OK)
        rc = fill_back(st, &h, &doc, out, &linkers, &n_linkers);
    if (rc == TROVE_OK)
        rc = fill_out(st, &h, &doc, out);
    if (rc == TROVE_OK)
        rc = fill_mentions(st, &h, linkers, n_linkers, out);
    api_hide_end(&h);
    free(linkers);
    store_doc_clear(&doc);
    if (rc)
        api_link_set_free(out);
    return rc;
}

/* ---- similar ---- */

void api_similar_opts_init(api_similar_opts *o)
{
    memset(o, 0, sizeof *o);
    o->bm25_weight = -1;
    o->vector_weight = -1;
}

void api_similar_info_free(api_similar_info *info)
{
    graph_note_clear(&info->note);
    similar_info_free(&info->why);
}

trove_err api_similar(api *a, const api_similar_opts *o, search_results *out,
                      api_similar_info *info)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    trove_err krc = api_collections_known(a, o->filter.collections, o->filter.n_collections);
    if (krc)
        return krc;
    search_opts filter = o->filter;
    char codes[API_MAX_LANGS][16];
    const char *code_ptrs[API_MAX_LANGS];
    krc = api_normalise_langs(&filter, codes, code_ptrs);
    if (krc)
        return krc;
    store *st;
    store_doc doc;
    trove_err rc = api_locate_doc(a, o->cwd, o->ref, &st, &doc);
    if (rc)
        return rc;
    similar_opts so;
    similar_opts_init(&so);
    so.doc_id = doc.id;
    so.rrf_k = (int)api_search_opt("rrf_k")->def;
    if (o->limit)
        so.limit = o->limit;
    so.filter = &filter;
    so.bm25_weight = o->bm25_weight;
    so.vector_weight = o->vector_weight;
    so.vec_cache = a->models ? apim_vcache(a->models) : NULL;
    so.pool = a->models ? apim_pool(a->models) : NULL;
    api_hide_search(a, &so.hide_globs, &so.hide_key);
    char *fingerprint = NULL;
    if (o->model) {
        embed_model *m;
        rc = api_embedder(a, o->model, 0, &m);
        if (rc == TROVE_OK)
            so.vec_fingerprint = fingerprint = vembed_fingerprint(m);
    }
    if (rc == TROVE_OK)
        rc = similar_run(st, &a->cfg, &so, out, &info->why);
    free(fingerprint);
    if (rc == TROVE_OK)
        graph_note_set(&info->note, doc.docid, doc.collection, doc.root, doc.path, doc.title);
    store_doc_clear(&doc);
    for (size_t i = 0; rc == TROVE_OK && o->with_body && i < out->n; i++) {
        search_result *r = &out->items[i];
        if (fs_read_inside(r->root, r->path, 0, &r->body, &r->body_len) != TROVE_OK) {
            trove_errclear();
            r->body = NULL;
            r->body_len = 0;
        }
    }
    return rc;
}

/* ---- dupes ---- */

trove_err api_dupes(api *a, const api_dupes_opts *o, dupes_result *out)
{
    memset(out, 0, sizeof *out);
    if (!(o->threshold >= 0 && o->threshold <= 1))
        return trove_fail(TROVE_EINVAL, "the threshold is an estimated Jaccard similarity in "
                          "(0, 1], not %g", o->threshold);
    if (a->boundary)
        return trove_fail(TROVE_EACCES, "duplicates are not offered past the agent boundary");
    trove_err krc = api_collections_known(a, o->collections, o->n_collections);
    if (krc)
        return krc;
    store *st;
    trove_err rc = api_reader(a, &st);
    if (rc)
        return rc;
    dupes_opts d = {o->threshold, o->passages, o->collections, o->n_collections};
    return dupes_run(st, &d, out);
}
