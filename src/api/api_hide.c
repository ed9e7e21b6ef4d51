/* api_hide — the agent boundary (api.h, api_set_boundary): with it on,
 * every answer of the handle leaves out the notes the rule of
 * store/store.h (store_hide_*) keeps from agents, as if they were not
 * indexed. Search and similar carry the rule into their SQL (search_opts
 * hide_globs, hide_key); everything else filters the notes it lists here. */
#include "api/api.h"
#include "api/api_int.h"

#include <stdlib.h>
#include <string.h>

#include "store/store_graph.h"
#include "util/buf.h"
#include "util/mem.h"

void api_set_boundary(api *a, int on)
{
    a->boundary = on != 0;
}

int api_boundary(const api *a)
{
    return a->boundary;
}

static const char *private_key(const api *a)
{
    return a->cfg.mcp.private_key ? a->cfg.mcp.private_key : CONFIG_PRIVATE_KEY;
}

/* config `mcp: exclude:` one a line, built once (the handle's config is
 * fixed); NULL when there is none. */
static const char *globs_text(api *a)
{
    if (!a->cfg.mcp.n_exclude)
        return NULL;
    if (!a->hide_text) {
        tbuf b = {0};
        for (size_t i = 0; i < a->cfg.mcp.n_exclude; i++)
            tbuf_printf(&b, "%s%s", i ? "\n" : "", a->cfg.mcp.exclude[i]);
        a->hide_text = tbuf_detach(&b);
    }
    return a->hide_text;
}

void api_hide_search(api *a, const char **globs, const char **key)
{
    *globs = a->boundary ? globs_text(a) : NULL;
    *key = a->boundary ? private_key(a) : NULL;
}

trove_err api_hide_begin(api *a, store *st, api_hide *h)
{
    memset(h, 0, sizeof *h);
    if (!a->boundary)
        return TROVE_OK;
    h->on = 1;
    h->globs = store_hide_globs_new((const char *const *)a->cfg.mcp.exclude, a->cfg.mcp.n_exclude);
    trove_err rc = st ? store_private_ids(st, private_key(a), &h->priv, &h->n_priv) : TROVE_OK;
    if (rc)
        api_hide_end(h);
    return rc;
}

static int cmp_id(const void *k, const void *e)
{
    int64_t x = *(const int64_t *)k, y = *(const int64_t *)e;
    return (x > y) - (x < y);
}

int api_hide_note(api_hide *h, int64_t id, const char *collection, const char *path)
{
    if (!h->on)
        return 0;
    if (store_hide_globs_match(h->globs, collection, path))
        return 1;
    return id > 0 && h->n_priv && bsearch(&id, h->priv, h->n_priv, sizeof *h->priv, cmp_id);
}

void api_hide_end(api_hide *h)
{
    store_hide_globs_free(h->globs);
    free(h->priv);
    memset(h, 0, sizeof *h);
}

size_t api_hide_docs(api_hide *h, store_doc *docs, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (api_hide_note(h, docs[i].id, docs[i].collection, docs[i].path)) {
            store_doc_clear(&docs[i]);
            continue;
        }
        docs[kept++] = docs[i];
    }
    return kept;
}

trove_err api_hidden_docs(api *a, store *st, store_doc **docs, size_t *n)
{
    *docs = NULL;
    *n = 0;
    api_hide h;
    trove_err rc = api_hide_begin(a, st, &h);
    store_doc *all = NULL;
    size_t n_all = 0;
    if (rc == TROVE_OK && h.on)
        rc = store_docs_list(st, NULL, NULL, &all, &n_all);
    size_t kept = 0;
    for (size_t i = 0; rc == TROVE_OK && i < n_all; i++) {
        if (api_hide_note(&h, all[i].id, all[i].collection, all[i].path))
            all[kept++] = all[i];
        else
            store_doc_clear(&all[i]);
    }
    api_hide_end(&h);
    if (rc) {
        store_docs_free(all, n_all);
        return rc;
    }
    *docs = all;
    *n = kept;
    return TROVE_OK;
}
