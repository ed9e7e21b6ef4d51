#include "api/api.h"
#include "api/api_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cjk/seg.h"
#include "fs/walk.h"
#include "store/store_graph.h"
#include "store/store_lens.h"
#include "store/store_posts.h"
#include "store/store_nmap.h"
#include "store/store_rank.h"
#include "text/tokmemo.h"
#include "text/transl.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"
#include "util/testhold.h"
#include "xlate/xdict.h"
#include "xlate/xlate.h"


/* ---- handle ---- */

trove_err api_open_config(const char *index_path, config *cfg, api **out)
{
    api *a = xcalloc(1, sizeof *a);
    a->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    a->index_path = index_path ? xstrdup(index_path) : store_default_path();
    *out = a;
    return TROVE_OK;
}

trove_err api_open(const char *index_path, api **out)
{
    *out = NULL;
    config cfg;
    trove_err rc = config_load(&cfg);
    if (rc)
        return rc;
    return api_open_config(index_path, &cfg, out);
}

/* A handle's memo of the title channel's terms (text/tokmemo.h): a note's
 * opening is ~6 KiB there, so this keeps those of ~2,500 notes read by the
 * title channel (a search of the tldr pages reads ~16, and ~80 names). */
#define TOKMEMO_BYTES ((size_t)16 << 20)

void api_close(api *a)
{
    if (!a)
        return;
    store_close(a->rd);
    tokmemo_free(a->tok_memo);
    apim_release(a->models, &a->em_slot);
    apim_release(a->models, &a->rm_slot);
    apim_release(a->models, &a->gm_slot);
    embed_close(a->gm.m);
    free(a->gm.path);
    embed_close(a->em.m);
    free(a->em.path);
    embed_close(a->rm.m);
    free(a->rm.path);
    config_free(&a->cfg);
    free(a->index_path);
    free(a->hide_text);
    free(a);
}

const config *api_config(const api *a)
{
    return &a->cfg;
}

const char *api_index_path(const api *a)
{
    return a->index_path;
}

int api_index_exists(const api *a)
{
    struct stat sb;
    return stat(a->index_path, &sb) == 0;
}

store_retention api_retention(const config *cfg)
{
    if (!cfg->has_snapshots && cfg->snapshots == 0)
        return STORE_RETENTION_DEFAULT;   /* a config not loaded from a file */
    return (store_retention){cfg->snapshots > 0 ? cfg->snapshots : CONFIG_SNAPSHOTS,
                             cfg->snap_minutes, cfg->snap_hourly, cfg->snap_daily};
}

/* Which snapshots stay: the config's `snapshots:`. */
static void set_retention(const api *a, store *st)
{
    store_retention r = api_retention(&a->cfg);
    store_snapshot_retention(st, &r);
}

/* A read-write connection with the config's snapshot retention. */
static trove_err open_writer(api *a, const char *path, store **st)
{
    trove_err rc = store_open(path, 0, st);
    if (rc == TROVE_OK)
        set_retention(a, *st);
    return rc;
}

trove_err api_reader(api *a, store **st)
{
    *st = NULL;
    if (!a->rd) {
        trove_err rc = store_open(a->index_path, STORE_READONLY, &a->rd);
        if (rc == TROVE_ENOENT && a->cfg.n_collections > 0)
            /* With collections configured, the one step left is `update`. */
            return trove_fail(TROVE_ENOENT, "%s: no index yet; run `trove update` to index the %zu "
                              "collection%s in the config", a->index_path, a->cfg.n_collections,
                              a->cfg.n_collections == 1 ? "" : "s");
        if (rc)
            return rc;
        set_retention(a, a->rd);
    }
    *st = a->rd;
    return TROVE_OK;
}

/* The reader when an index exists; *st NULL (and TROVE_OK) when none does. */
static trove_err reader_if_any(api *a, store **st)
{
    *st = NULL;
    return api_index_exists(a) ? api_reader(a, st) : TROVE_OK;
}

/* ---- search ---- */

/* --lang codes checked and normalised ("PT_br" → "pt-BR") into codes[]. */
trove_err api_normalise_langs(search_opts *so, char codes[API_MAX_LANGS][16],
                              const char *ptrs[API_MAX_LANGS])
{
    if (so->n_langs > API_MAX_LANGS)
        return trove_fail(TROVE_EINVAL, "at most %d languages to filter on, not %zu",
                          API_MAX_LANGS, so->n_langs);
    for (size_t i = 0; i < so->n_langs; i++) {
        if (!transl_code_normalise(so->langs[i], codes[i], sizeof codes[i]))
            return trove_fail(TROVE_EINVAL, "'%s' is not a language code (ISO 639-1, e.g. en, "
                              "de, pt-BR)", so->langs[i]);
        ptrs[i] = codes[i];
    }
    if (so->n_langs)
        so->langs = ptrs;
    return TROVE_OK;
}

static trove_err any_vectors(store *st, int *any)
{
    store_vec_model *models;
    size_t n;
    trove_err rc = store_vec_models(st, &models, &n);
    *any = 0;
    for (size_t i = 0; rc == TROVE_OK && i < n; i++)
        *any |= models[i].vectors > 0;
    store_vec_models_free(models, n);
    return rc;
}

trove_err api_collections_known(const api *a, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!config_find_collection(&a->cfg, names[i]))
            return trove_fail(TROVE_ENOENT, "no collection named '%s' (see `trove collection "
                              "list`)", names[i]);
    return TROVE_OK;
}

/* api_search against this machine's index. */
static trove_err search_local(api *a, const api_search_opts *o, search_results *out)
{
    memset(out, 0, sizeof *out);
    trove_err krc = api_collections_known(a, o->search.collections, o->search.n_collections);
    if (krc)
        return krc;
    api_search_opts r = *o;
    trove_err orc = api_search_opts_resolve(&r, &a->cfg);
    if (orc)
        return orc;
    search_opts so = r.search;
    so.model = NULL;
    api_hide_search(a, &so.hide_globs, &so.hide_key);
    char codes[API_MAX_LANGS][16];
    const char *code_ptrs[API_MAX_LANGS];
    trove_err lrc = api_normalise_langs(&so, codes, code_ptrs);
    if (lrc)
        return lrc;
    int want_vec = so.vector_only || so.weights[SEARCH_CH_VECTOR] > 0;
    if (so.vector_only && !o->model)
        return trove_fail(TROVE_EINVAL, "vsearch needs an embedding model: pass --model PATH or "
                          "set TROVE_EMBED_MODEL (a GGUF file or a model2vec folder)");
    store *st;
    trove_err rc = api_reader(a, &st);
    int any = 0;
    if (rc == TROVE_OK && want_vec && o->model)
        rc = any_vectors(st, &any);
    if (rc)
        return rc;
    char *vec_error = NULL;
    /* No vector of any model: do not pay for loading one. */
    if (any) {
        embed_model *m;
        trove_err mrc = api_embedder(a, o->model, 0, &m);
        if (mrc && so.vector_only)
            return mrc;
        if (mrc) {
            tbuf b = {0};
            tbuf_printf(&b, "%s", trove_errmsg());
            vec_error = tbuf_detach(&b);
        } else {
            so.model = m;
        }
    }
    so.model_lock = api_em_lock(a);
    so.vec_cache = a->models ? apim_vcache(a->models) : NULL;
    so.pool = a->models ? apim_pool(a->models) : NULL;
    if (a->models && !a->tok_memo)
        a->tok_memo = tokmemo_new(TOKMEMO_BYTES);
    if (a->models) {   /* kept while the index is unchanged */
        store_nmap_keep(st);
        store_lens_keep(st);
        store_posts_keep(st);
        store_rank_keep(st);
    }
    so.tok_memo = a->tok_memo;
    if (so.vector_only && !so.model) {
        out->vec_state = SEARCH_VEC_NONE;   /* nothing to search */
        return TROVE_OK;
    }
    rc = search_run(st, &a->cfg, &so, out);
    if (rc == TROVE_OK && want_vec && o->model && !any)
        out->vec_state = SEARCH_VEC_NONE;
    if (rc == TROVE_OK)
        out->vec_error = vec_error;
    else
        free(vec_error);
    if (rc == TROVE_OK && o->with_body)
        api_read_bodies(out);
    return rc;
}

void api_read_bodies(search_results *out)
{
    for (size_t i = 0; i < out->n; i++) {
        search_result *r = &out->items[i];
        /* A note that went away, now leads outside its collection, or (a
         * remote result) is in no collection of this machine has no body;
         * the result itself still stands. */
        if (!*r->root || fs_read_inside(r->root, r->path, 0, &r->body, &r->body_len) != TROVE_OK) {
            r->body = NULL;
            r->body_len = 0;
        }
    }
}

/* With the agent boundary on, a remote result stands only for a note this
 * index has and does not hide (the published index knows no boundary):
 * fail closed, as boundary_check does for a located note. */
static trove_err remote_boundary(api *a, search_results *out)
{
    if (!a->boundary)
        return TROVE_OK;
    store *st;
    api_hide h;
    trove_err rc = api_reader(a, &st);
    if (rc == TROVE_OK)
        rc = api_hide_begin(a, st, &h);
    if (rc) {
        search_results_free(out);
        return rc;
    }
    size_t kept = 0;
    for (size_t i = 0; i < out->n; i++) {
        search_result *r = &out->items[i];
        store_doc d;
        memset(&d, 0, sizeof d);
        int found = store_doc_find(st, r->collection, r->path, &d) == TROVE_OK;
        int hidden = !found || api_hide_note(&h, d.id, r->collection, r->path);
        store_doc_clear(&d);
        if (hidden)
            search_result_clear(r);
        else
            out->items[kept++] = *r;
    }
    trove_errclear();   /* a note not found here is no error */
    out->n = kept;
    api_hide_end(&h);
    return TROVE_OK;
}

trove_err api_search(api *a, const api_search_opts *o, search_results *out)
{
    /* The one place the `remote:` setting is decided; libcurl stays
     * unloaded unless it is set (api_remote.c). */
    if (!a->cfg.remote || o->local)
        return search_local(a, o, out);
    trove_err rc = api_search_remote(a, o, a->cfg.remote, out);
    return rc ? rc : remote_boundary(a, out);
}

/* ---- embeddings ---- */

static trove_err open_embedder(const char *path, int threads, embed_model **out)
{
    embed_opts eo = {.threads = threads};
    trove_err err = TROVE_OK;
    test_hold("model-load");   /* tests only: a slow load */
    *out = embed_open(path, &eo, &err);
    if (*out)
        return TROVE_OK;
    const char *detail = trove_errmsg();
    tbuf b = {0};
    tbuf_printf(&b, "%s", detail && *detail ? detail : trove_strerror(err));
    trove_err rc = trove_fail(err ? err : TROVE_EIO, "cannot use embedding model %s: %s", path,
                              b.data);
    tbuf_free(&b);
    return rc;
}

pthread_mutex_t *api_em_lock(api *a)
{
    return a->em_slot ? &a->em_slot->use : NULL;
}

pthread_mutex_t *api_rm_lock(api *a)
{
    return a->rm_slot ? &a->rm_slot->use : NULL;
}

pthread_mutex_t *api_gm_lock(api *a)
{
    return a->gm_slot ? &a->gm_slot->use : NULL;
}

trove_err api_model_get(api *a, int kind, const char *path, int key_param, int open_param,
                        apim_open_fn open, embed_model **out)
{
    *out = NULL;
    api_model_slot **slot = kind == APIM_RERANK ? &a->rm_slot
                            : kind == APIM_GENERATE ? &a->gm_slot : &a->em_slot;
    if (a->models)
        return apim_get(a->models, kind, path, key_param, open_param, open, slot, out);
    api_own_model *own = kind == APIM_RERANK ? &a->rm : kind == APIM_GENERATE ? &a->gm : &a->em;
    if (own->m && strcmp(own->path, path) == 0 && own->key == key_param) {
        *out = own->m;
        return TROVE_OK;
    }
    embed_close(own->m);
    free(own->path);
    memset(own, 0, sizeof *own);
    embed_model *m;
    trove_err rc = open(path, open_param, &m);
    if (rc)
        return rc;
    *own = (api_own_model){m, xstrdup(path), key_param};
    *out = m;
    return TROVE_OK;
}

trove_err api_embedder(api *a, const char *path, int threads, embed_model **out)
{
    return api_model_get(a, APIM_EMBED, path, 0, threads, open_embedder, out);
}

static trove_err prune_models(store *st, const char *fingerprint, size_t *pruned)
{
    store_vec_model *models;
    size_t n;
    trove_err rc = store_vec_models(st, &models, &n);
    if (rc == TROVE_OK)
        rc = store_begin(st);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        if (strcmp(models[i].fingerprint, fingerprint) == 0)
            continue;
        rc = store_vec_model_drop(st, models[i].id);
        (*pruned)++;
    }
    if (rc == TROVE_OK)
        rc = store_commit(st);
    else
        store_rollback(st);
    store_vec_models_free(models, n);
    return rc;
}

trove_err api_embed(api *a, const api_embed_opts *o, api_embed_result *out)
{
    memset(out, 0, sizeof *out);
    if (!o->model)
        return trove_fail(TROVE_EINVAL, "no embedding model: pass --model PATH or set "
                          "TROVE_EMBED_MODEL (a GGUF file or a model2vec folder)");
    embed_model *m;
    trove_err rc = api_embedder(a, o->model, o->threads, &m);
    if (rc)
        return rc;
    out->dim = embed_dim(m);
    store *st;
    if ((rc = store_open(a->index_path, 0, &st)) != TROVE_OK)
        return rc;
    if (o->prune) {
        char *fp = vembed_fingerprint(m);
        rc = prune_models(st, fp, &out->pruned);
        free(fp);
    }
    vembed_opts eo = o->embed;
    if (!eo.name)
        eo.name = str_basename(o->model);
    /* A shared model computes for one caller at a time: the pass takes it
     * per batch, so a search's query embedding waits for one batch, not
     * for a whole re-embedding. */
    eo.model_lock = api_em_lock(a);
    if (rc == TROVE_OK)
        rc = vembed_run(st, m, &eo, &out->stats);
    store_close(st);
    return rc;
}

trove_err api_vec_status_get(api *a, const char *model, api_vec_status *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    trove_err rc = reader_if_any(a, &st);
    if (rc || !st)
        return rc;
    if ((rc = store_vec_models(st, &out->models, &out->n_models)))
        return rc;
    if (!model)
        return TROVE_OK;
    out->model = xstrdup(model);
    embed_model *m;
    if (api_embedder(a, model, 1, &m) != TROVE_OK) {
        out->model_error = xstrdup(trove_errmsg());
        return TROVE_OK;
    }
    embed_info info;
    embed_get_info(m, &info);
    out->model_arch = xstrdup(info.arch ? info.arch : "");
    out->model_dim = info.dim;
    char *fp = vembed_fingerprint(m);
    for (size_t i = 0; i < out->n_models; i++)
        if (strcmp(out->models[i].fingerprint, fp) == 0)
            out->active_id = out->models[i].id;
    free(fp);
    rc = store_vec_counts(st, out->active_id, &out->counts, &out->n_counts);
    if (rc)
        api_vec_status_free(out);
    return rc;
}

void api_vec_status_free(api_vec_status *s)
{
    free(s->model);
    free(s->model_error);
    free(s->model_arch);
    store_vec_models_free(s->models, s->n_models);
    store_vec_counts_free(s->counts, s->n_counts);
    memset(s, 0, sizeof *s);
}

/* ---- get ---- */

void api_note_free(api_note *n)
{
    free(n->collection);
    free(n->root);
    free(n->path);
    free(n->title);
    free(n->text);
    memset(n, 0, sizeof *n);
}

static void note_from_doc(api_note *n, const store_doc *d)
{
    memcpy(n->docid, d->docid, sizeof n->docid);
    n->collection = xstrdup(d->collection);
    n->root = xstrdup(d->root);
    n->path = xstrdup(d->path);
    n->title = xstrdup(d->title);
}

/* docs[] less the notes the agent boundary hides (all of them when it is
 * off); *rc an error reading the rule. */
static size_t hide_docs(api *a, store *st, store_doc *docs, size_t n, trove_err *rc)
{
    api_hide h;
    *rc = api_hide_begin(a, st, &h);
    if (*rc == TROVE_OK)
        n = api_hide_docs(&h, docs, n);
    api_hide_end(&h);
    return n;
}

/* Each collection's note count less its hidden notes (boundary on). */
static trove_err hide_counts(api *a, store *st, store_collection_row *cols, size_t n_cols)
{
    if (!a->boundary)
        return TROVE_OK;
    store_doc *docs;
    size_t n;
    trove_err rc = api_hidden_docs(a, st, &docs, &n);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++)
        for (size_t k = 0; k < n_cols; k++)
            if (strcmp(cols[k].name, docs[i].collection) == 0)
                cols[k].n_docs--;
    if (rc == TROVE_OK)
        store_docs_free(docs, n);
    return rc;
}

/* With the agent boundary on, a located note must be indexed and not
 * hidden; else it is "not found", worded as for a note that is not there. */
static trove_err boundary_check(api *a, store *st, const char *ref, api_note *out)
{
    if (!a->boundary)
        return TROVE_OK;
    api_hide h;
    store_doc d;
    memset(&d, 0, sizeof d);
    trove_err rc = api_hide_begin(a, st, &h);
    int found = rc == TROVE_OK && st && store_doc_find(st, out->collection, out->path, &d) == TROVE_OK;
    int hidden = !found || api_hide_note(&h, d.id, out->collection, out->path);
    store_doc_clear(&d);
    api_hide_end(&h);
    if (rc)
        return rc;
    trove_errclear();
    if (!hidden)
        return TROVE_OK;
    api_note_free(out);
    if (ref[0] == '#')
        return trove_fail(TROVE_ENOENT, "no note with docid #%s (ids are shown by `trove search`)",
                          ref + 1);
    return trove_fail(TROVE_ENOENT, "%s: not found in any collection (use COLLECTION/PATH, "
                      "a path inside a collection folder, or #DOCID)", ref);
}

static trove_err locate_docid(api *a, const char *prefix, api_note *out)
{
    size_t len = strlen(prefix);
    int hex = len >= 4 && len <= 8;
    for (size_t i = 0; hex && i < len; i++)
        hex = isxdigit((unsigned char)prefix[i]) != 0;
    if (!hex)
        return trove_fail(TROVE_EINVAL, "'#%s': a docid is 4 to 8 hex digits (ids are shown by "
                          "`trove search`)", prefix);
    char low[9];
    for (size_t i = 0; i <= len; i++)
        low[i] = (char)tolower((unsigned char)prefix[i]);
    store *st;
    trove_err rc = api_reader(a, &st);
    store_doc *docs;
    size_t n;
    if (rc == TROVE_OK)
        rc = store_docs_by_docid(st, low, 5, &docs, &n);
    if (rc)
        return rc;
    n = hide_docs(a, st, docs, n, &rc);
    if (rc) {
        store_docs_free(docs, n);
        return rc;
    }
    if (n == 1) {
        note_from_doc(out, &docs[0]);
    } else if (n == 0) {
        rc = trove_fail(TROVE_ENOENT, "no note with docid #%s (ids are shown by `trove search`)",
                        low);
    } else {
        tbuf b = {0};
        for (size_t i = 0; i < n; i++)
            tbuf_printf(&b, "%s%s/%s", i ? ", " : "", docs[i].collection, docs[i].path);
        rc = trove_fail(TROVE_EINVAL, "docid #%s is ambiguous: %s%s; give more digits", low, b.data,
                        n == 5 ? ", ..." : "");
        tbuf_free(&b);
    }
    store_docs_free(docs, n);
    return rc;
}

static void set_location(api_note *out, const char *collection, const char *root, const char *rel)
{
    out->collection = xstrdup(collection);
    out->root = xstrdup(root);
    out->path = xstrdup(rel);
}

/* "COLLECTION/REL" for a configured collection. */
static int locate_named(const config *cfg, const char *ref, api_note *out)
{
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        size_t nl = strlen(col->name);
        if (strncmp(ref, col->name, nl) == 0 && ref[nl] == '/') {
            set_location(out, col->name, col->path, ref + nl + 1);
            return 1;
        }
    }
    return 0;
}

/* A path on disk inside a collection folder. */
static int locate_on_disk(const config *cfg, const char *cwd, const char *ref, api_note *out)
{
    char abs[PATH_MAX];
    tbuf joined = {0};
    if (cwd && ref[0] != '/') {
        tbuf_printf(&joined, "%s/%s", cwd, ref);
        ref = joined.data;
    }
    int found = realpath(ref, abs) != NULL;
    tbuf_free(&joined);
    if (!found)
        return 0;
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        size_t rl = strlen(col->path);
        if (strncmp(abs, col->path, rl) == 0 && abs[rl] == '/') {
            set_location(out, col->name, col->path, abs + rl + 1);
            return 1;
        }
    }
    return 0;
}

/* Fill docid and title when the located note is indexed. */
static trove_err add_index_facts(store *st, api_note *out)
{
    store_doc *docs;
    size_t n;
    trove_err rc = store_docs_by_path(st, out->path, 0, &docs, &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(docs[i].collection, out->collection) == 0) {
            memcpy(out->docid, docs[i].docid, sizeof out->docid);
            out->title = xstrdup(docs[i].title);
        }
    }
    store_docs_free(docs, n);
    return TROVE_OK;
}

static trove_err locate(api *a, const char *cwd, const char *ref, api_note *out)
{
    store *st;
    trove_err rc = reader_if_any(a, &st);
    if (rc)
        return rc;
    if (ref[0] == '#') {
        rc = locate_docid(a, ref + 1, out);
        return rc ? rc : boundary_check(a, st, ref, out);
    }
    if (!locate_named(&a->cfg, ref, out)) {
        store_doc *docs = NULL;
        size_t n = 0;
        if (st && (rc = store_docs_by_path(st, ref, 2, &docs, &n)) != TROVE_OK)
            return rc;
        n = hide_docs(a, st, docs, n, &rc);
        if (rc) {
            store_docs_free(docs, n);
            return rc;
        }
        if (n == 1)
            set_location(out, docs[0].collection, docs[0].root, docs[0].path);
        store_docs_free(docs, n);
        if (n != 1 && !locate_on_disk(&a->cfg, cwd, ref, out))
            return trove_fail(TROVE_ENOENT, "%s: not found in any collection (use COLLECTION/PATH, "
                              "a path inside a collection folder, or #DOCID)", ref);
    }
    rc = boundary_check(a, st, ref, out);
    return rc == TROVE_OK && st ? add_index_facts(st, out) : rc;
}

trove_err api_locate_doc(api *a, const char *cwd, const char *ref, store **st, store_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    trove_err rc = api_reader(a, st);
    if (rc)
        return rc;
    if (!ref || !*ref)
        return trove_fail(TROVE_EINVAL, "needs a note: COLLECTION/PATH, a path inside a "
                          "collection folder, or #DOCID");
    api_note where;
    memset(&where, 0, sizeof where);
    rc = locate(a, cwd, ref, &where);
    if (rc == TROVE_OK)
        rc = store_doc_find(*st, where.collection, where.path, doc);
    api_note_free(&where);
    return rc;
}

/* Split "REF:LINE" (LINE all digits) into a copy of REF and LINE (0: none). */
static char *split_line(const char *ref, long *line)
{
    char *copy = xstrdup(ref);
    *line = 0;
    char *colon = strrchr(copy, ':');
    long v;
    if (colon && str_to_long(colon + 1, 0, LONG_MAX, &v) && isdigit((unsigned char)colon[1])) {
        *colon = '\0';
        *line = v;
    }
    return copy;
}

/* Keep lines [from, from + count) of note->text (count 0: all). */
static void select_lines(api_note *n, long from, long count)
{
    const char *p = n->text, *end = n->text + n->len;
    long line = 1, total = 0;
    const char *start = NULL, *stop = NULL;
    for (const char *q = p; q < end;) {
        const char *nl = memchr(q, '\n', (size_t)(end - q));
        const char *next = nl ? nl + 1 : end;
        total++;
        if (line == from)
            start = q;
        if (start && !stop && count && line == from + count - 1)
            stop = next;
        line++;
        q = next;
    }
    n->n_lines = total;
    n->line_start = from;
    if (!start) {
        n->len = 0;
        n->text[0] = '\0';
        n->line_end = from - 1;
        return;
    }
    if (!stop)
        stop = end;
    n->line_end = count && from + count - 1 < total ? from + count - 1 : total;
    n->len = (size_t)(stop - start);
    memmove(n->text, start, n->len);
    n->text[n->len] = '\0';
}

trove_err api_get(api *a, const char *ref, long line, long count, api_note *out)
{
    return api_get_in(a, NULL, ref, line, count, out);
}

trove_err api_get_in(api *a, const char *cwd, const char *ref, long line, long count, api_note *out)
{
    memset(out, 0, sizeof *out);
    long ref_line;
    char *target = split_line(ref, &ref_line);
    if (line < 1)
        line = ref_line > 0 ? ref_line : 1;
    trove_err rc = locate(a, cwd, target, out);
    if (rc == TROVE_OK) {
        rc = fs_read_inside(out->root, out->path, 0, &out->text, &out->len);
        if (rc == TROVE_EINVAL)
            rc = trove_fail(TROVE_EINVAL, "%s/%s: not a file (use `trove ls %s` for a folder)",
                            out->root, out->path, target);
    }
    if (rc == TROVE_OK) {
        select_lines(out, line, count < 0 ? 0 : count);
        /* Nothing to show is an error, as for a missing note (an empty
         * file read from line 1 shows its nothing). */
        if (line > 1 && line > out->n_lines)
            rc = trove_fail(TROVE_ENOENT, "%s/%s has %ld line%s; line %ld is past the end",
                            out->collection ? out->collection : out->root, out->path, out->n_lines,
                            out->n_lines == 1 ? "" : "s", line);
    }
    if (rc)
        api_note_free(out);
    free(target);
    return rc;
}

/* ---- multi-get ---- */

void api_notes_free(api_notes *n)
{
    for (size_t i = 0; i < n->n; i++)
        api_note_free(&n->items[i]);
    free(n->items);
    memset(n, 0, sizeof *n);
}

trove_err api_multi_get(api *a, const char *glob, size_t max_bytes, api_notes *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    store_doc *docs;
    size_t n;
    trove_err rc = api_reader(a, &st);
    if (rc == TROVE_OK)
        rc = store_docs_list(st, NULL, NULL, &docs, &n);
    if (rc)
        return rc;
    n = hide_docs(a, st, docs, n, &rc);
    if (rc) {
        store_docs_free(docs, n);
        return rc;
    }
    size_t cap = 0;
    tbuf name = {0};
    for (size_t i = 0; i < n; i++) {
        const store_doc *d = &docs[i];
        tbuf_reset(&name);
        tbuf_printf(&name, "%s/%s", d->collection, d->path);
        if (!glob_match(glob, name.data) && !glob_match(glob, d->path))
            continue;
        xgrow(&out->items, &cap, out->n + 1, sizeof *out->items);
        api_note *note = &out->items[out->n++];
        memset(note, 0, sizeof *note);
        note_from_doc(note, d);
        trove_err e = fs_read_inside(d->root, d->path, max_bytes, &note->text, &note->len);
        if (e == TROVE_ERANGE)
            note->skipped = "over --max-bytes";
        else if (e == TROVE_EACCES)
            note->skipped = "outside the collection";
        else if (e)
            note->skipped = "unreadable";
    }
    tbuf_free(&name);
    store_docs_free(docs, n);
    return TROVE_OK;
}

/* ---- ls ---- */

void api_listing_free(api_listing *l)
{
    store_collections_free(l->collections, l->n_collections);
    store_docs_free(l->docs, l->n_docs);
    memset(l, 0, sizeof *l);
}

/* Drop notes whose file now leads outside its collection (a symlink swapped
 * in since the last update): a listing names only what get may read. */
static void keep_inside(api_listing *l)
{
    size_t kept = 0;
    /* docs come by collection: each root resolved once, not once a note */
    char *root = NULL;   /* a copy: a dropped note's strings are freed below */
    char root_real[PATH_MAX];
    int root_ok = 0;
    for (size_t i = 0; i < l->n_docs; i++) {
        store_doc *d = &l->docs[i];
        if (!root || strcmp(root, d->root) != 0) {
            free(root);
            root = xstrdup(d->root);
            root_ok = realpath(root, root_real) != NULL;
        }
        if ((root_ok ? fs_path_inside_real(d->root, root_real, d->path, NULL)
                     : fs_path_inside(d->root, d->path, NULL)) == TROVE_EACCES) {
            free(d->collection);
            free(d->root);
            free(d->path);
            free(d->title);
            continue;
        }
        l->docs[kept++] = *d;
    }
    free(root);
    l->n_docs = kept;
}

trove_err api_ls(api *a, const char *target, api_listing *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    trove_err rc = api_reader(a, &st);
    if (rc)
        return rc;
    if (!target) {
        rc = store_collections(st, &out->collections, &out->n_collections);
        return rc ? rc : hide_counts(a, st, out->collections, out->n_collections);
    }
    char *coll = xstrdup(target);
    char *slash = strchr(coll, '/');
    tbuf prefix = {0};
    if (slash) {
        *slash = '\0';
        tbuf_puts(&prefix, slash + 1);
        while (prefix.len && prefix.data[prefix.len - 1] == '/')
            prefix.data[--prefix.len] = '\0';
        if (prefix.len)
            tbuf_putc(&prefix, '/');   /* a folder: match at a segment boundary */
    }
    int64_t id;
    rc = store_collection_id(st, coll, &id);
    if (rc == TROVE_ENOENT)
        rc = trove_fail(TROVE_ENOENT, "no collection named '%s' in the index (see `trove ls`)", coll);
    if (rc == TROVE_OK)
        rc = store_docs_list(st, coll, tbuf_cstr(&prefix), &out->docs, &out->n_docs);
    if (rc == TROVE_OK)
        out->n_docs = hide_docs(a, st, out->docs, out->n_docs, &rc);
    if (rc == TROVE_OK)
        keep_inside(out);
    /* A folder with no note is nothing to list: say so, as for a missing
     * collection (a typo must not look like an empty folder). */
    if (rc == TROVE_OK && prefix.len && out->n_docs == 0) {
        prefix.data[--prefix.len] = '\0';
        rc = trove_fail(TROVE_ENOENT, "no notes under '%s' in collection '%s' (see `trove ls "
                        "%s`)", tbuf_cstr(&prefix), coll, coll);
        api_listing_free(out);
    }
    tbuf_free(&prefix);
    free(coll);
    return rc;
}

trove_err api_ls_page(api *a, const char *after_collection, const char *after_path,
                      size_t limit, api_page *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    trove_err rc = api_reader(a, &st);
    if (rc)
        return rc;
    api_listing l = {0};
    rc = store_docs_after(st, after_collection, after_path, limit, &l.docs, &l.n_docs);
    if (rc)
        return rc;
    if (l.n_docs) {
        /* the key before keep_inside drops rows: a dropped last row still
         * moves the next page on */
        out->last_collection = xstrdup(l.docs[l.n_docs - 1].collection);
        out->last_path = xstrdup(l.docs[l.n_docs - 1].path);
    }
    out->more = limit > 0 && l.n_docs == limit;
    l.n_docs = hide_docs(a, st, l.docs, l.n_docs, &rc);
    keep_inside(&l);
    out->docs = l.docs;
    out->n_docs = l.n_docs;
    if (rc)
        api_page_free(out);
    return rc;
}

void api_page_free(api_page *p)
{
    store_docs_free(p->docs, p->n_docs);
    free(p->last_collection);
    free(p->last_path);
    memset(p, 0, sizeof *p);
}

/* ---- status ---- */

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

void api_status_free(api_status *s)
{
    free(s->config_file);
    free(s->index_path);
    for (size_t i = 0; i < s->n_collections; i++) {
        free(s->collections[i].name);
        free(s->collections[i].path);
        free(s->collections[i].problem);
    }
    free(s->collections);
    free(s->langs);
    store_snapshot_clear(&s->snapshot);
    memset(s, 0, sizeof *s);
}

static trove_err status_collection(api *a, store *st, const config_collection *col,
                                   api_status_collection *sc)
{
    const config *cfg = &a->cfg;
    sc->name = xstrdup(col->name);
    sc->path = xstrdup(col->path);
    if (!st)
        return TROVE_OK;
    store_doc *docs;
    size_t n;
    trove_err rc = store_docs_list(st, col->name, NULL, &docs, &n);
    if (rc)
        return rc;
    n = hide_docs(a, st, docs, n, &rc);
    if (rc) {
        store_docs_free(docs, n);
        return rc;
    }
    sc->notes = (int64_t)n;
    store_docs_free(docs, n);
    /* a second name for another collection's folder: indexed there */
    const config_collection *first =
        config_same_folder(cfg, col->path, (size_t)(col - cfg->collections));
    if (first) {
        tbuf b = {0};
        tbuf_printf(&b, "folder %s is already collection '%s'; its notes are indexed there, "
                    "once", col->path, first->name);
        sc->problem = tbuf_detach(&b);
        return TROVE_OK;
    }
    rc = index_check_freshness(st, cfg, col, &sc->fresh);
    if (rc == TROVE_ENOENT) {
        sc->problem = xstrdup(trove_errmsg());
        return TROVE_OK;
    }
    sc->fresh_known = rc == TROVE_OK;
    return rc;
}

/* The totals less the hidden notes' own (boundary on); the snapshot's
 * totals are then the same, and what it changed (which may be hidden
 * notes) is not told (-1) while any note is hidden: with none hidden the
 * counts are the whole index's and hide nothing. */
static trove_err hide_status_counts(api *a, store *st, api_status *out)
{
    store_doc *docs;
    size_t n;
    trove_err rc = api_hidden_docs(a, st, &docs, &n);
    if (rc)
        return rc;
    store_counts *c = &out->counts;
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        store_counts one;
        rc = store_counts_of_doc(st, docs[i].id, &one);
        c->docs -= one.docs;
        c->chunks -= one.chunks;
        c->links -= one.links;
        c->dangling -= one.dangling;
        c->to_files -= one.to_files;
    }
    store_docs_free(docs, n);
    if (n == 0)
        return rc;
    store_snapshot *sn = &out->snapshot;
    sn->docs = c->docs;
    sn->chunks = c->chunks;
    sn->links = c->links;
    sn->added = sn->removed = sn->modified = -1;
    return rc;
}

trove_err api_status_get(api *a, api_status *out)
{
    memset(out, 0, sizeof *out);
    out->config_file = xstrdup(a->cfg.file ? a->cfg.file : "");
    out->index_path = xstrdup(a->index_path);
    out->index_exists = api_index_exists(a);
    store *st = NULL;
    trove_err rc = reader_if_any(a, &st);
    if (rc == TROVE_OK && st) {
        tbuf wal = {0};
        tbuf_printf(&wal, "%s-wal", a->index_path);
        out->index_bytes = file_size(a->index_path) + file_size(wal.data);
        tbuf_free(&wal);
        rc = store_read_begin(st);
        if (rc == TROVE_OK)
            rc = store_last_update(st, &out->last_update);
        if (rc == TROVE_OK)
            rc = store_counts_get(st, &out->counts);
        if (rc == TROVE_OK)
            rc = store_snapshot_current(st, &out->snapshot);
        if (rc == TROVE_OK && a->boundary)
            rc = hide_status_counts(a, st, out);
        const char *hg, *hk;
        api_hide_search(a, &hg, &hk);
        if (rc == TROVE_OK)
            rc = store_lang_counts(st, hg, hk, &out->langs, &out->n_langs);
    }
    out->collections = xcalloc(a->cfg.n_collections ? a->cfg.n_collections : 1,
                               sizeof *out->collections);
    for (size_t i = 0; rc == TROVE_OK && i < a->cfg.n_collections; i++) {
        rc = status_collection(a, st, &a->cfg.collections[i], &out->collections[i]);
        out->n_collections++;
    }
    if (st)
        store_read_end(st);
    if (rc)
        api_status_free(out);
    return rc;
}

/* ---- update ---- */

/* Index every collection into a fresh file beside the index, then swap it
 * in: a damaged index is never read, and an interrupted rebuild leaves the
 * old file as it was. */
static trove_err rebuild(api *a, const api_update_opts *o, index_update_result *out)
{
    if (o->n_collections)
        return trove_fail(TROVE_EUSAGE, "--rebuild indexes every collection; name none");
    char *tmp;
    trove_err rc = store_rebuild_begin(a->index_path, &tmp);
    if (rc)
        return rc;
    store *st;
    rc = open_writer(a, tmp, &st);
    if (rc == TROVE_OK) {
        rc = index_update(st, &a->cfg, NULL, 0, &o->index, out);
        store_close(st);
    }
    if (rc == TROVE_OK) {
        store_close(a->rd);   /* the reader would keep the old file */
        a->rd = NULL;
        rc = store_rebuild_finish(tmp, a->index_path);
        if (rc)
            index_update_result_free(out);
    } else {
        store_rebuild_abort(tmp);
    }
    free(tmp);
    return rc;
}

void api_update_opts_init(api_update_opts *o)
{
    memset(o, 0, sizeof *o);
    index_opts_init(&o->index);
}

trove_err api_update(api *a, const api_update_opts *o, index_update_result *out)
{
    memset(out, 0, sizeof *out);
    test_hold("update");   /* tests only: a slow update */
    if (a->cfg.n_collections == 0)
        return trove_fail(TROVE_ENOENT, "no collections to index; add one with `trove collection "
                          "add PATH`");
    if (o->unwalked)
        return trove_fail(TROVE_EINVAL, "only a daemon's watcher can vouch for an update "
                          "without a walk");
    trove_err krc = api_collections_known(a, o->collections, o->n_collections);
    if (krc)
        return krc;
    if (o->rebuild)
        return rebuild(a, o, out);
    store *st;
    trove_err rc = open_writer(a, a->index_path, &st);
    if (rc)
        return rc;
    rc = index_update(st, &a->cfg, o->collections, o->n_collections, &o->index, out);
    store_close(st);
    return rc;
}

/* Why the index would change in an update beyond what the walks find
 * (why[0] stays 0 when it would not): collections the config dropped, two
 * collections on one folder, another tokenizer. */
static trove_err unwalked_blockers(api *a, store *st, const api_update_opts *o, char *why,
                                   size_t cap)
{
    if (o->n_collections == 0) {
        store_collection_row *rows;
        size_t n;
        trove_err rc = store_collections_uncounted(st, &rows, &n);
        if (rc)
            return rc;
        for (size_t i = 0; i < n && !why[0]; i++)
            if (!config_find_collection(&a->cfg, rows[i].name))
                snprintf(why, cap, "the index holds collection '%s', which the config no longer "
                         "lists", rows[i].name);
        store_collections_free(rows, n);
    }
    for (size_t i = 0; i < a->cfg.n_collections && !why[0]; i++)
        if (config_same_folder(&a->cfg, a->cfg.collections[i].path, i))
            snprintf(why, cap, "collection '%s' shares its folder with another",
                     a->cfg.collections[i].name);
    int same = 1;
    trove_err rc = why[0] ? TROVE_OK : store_tokenizer_current(st, &same);
    if (rc == TROVE_OK && !same)
        snprintf(why, cap, "the tokenizer's files changed since the index was written");
    return rc;
}

trove_err api_update_unwalked(api *a, const api_update_opts *o, api_vouch_fn vouch, void *ctx,
                              index_update_result *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    why[0] = '\0';
    if (a->cfg.n_collections == 0 || o->rebuild) {
        snprintf(why, cap, "%s", o->rebuild ? "a rebuild indexes everything" : "no collections");
        return TROVE_OK;   /* the walk says what to say */
    }
    trove_err rc = api_collections_known(a, o->collections, o->n_collections);
    store *st = NULL;
    if (rc == TROVE_OK)
        rc = api_reader(a, &st);
    if (rc == TROVE_OK)
        rc = unwalked_blockers(a, st, o, why, cap);
    if (rc || why[0])
        return rc;
    out->collections = xcalloc(a->cfg.n_collections, sizeof *out->collections);
    for (size_t i = 0; i < a->cfg.n_collections && !why[0]; i++) {
        const char *name = a->cfg.collections[i].name;
        int picked = o->n_collections == 0;
        for (size_t k = 0; k < o->n_collections && !picked; k++)
            picked = strcmp(o->collections[k], name) == 0;
        size_t files;
        if (!picked || !vouch(ctx, name, &files, why, cap))
            continue;
        index_update_collection *uc = &out->collections[out->n_collections++];
        uc->name = xstrdup(name);
        uc->stats.files = uc->stats.unchanged = files;
    }
    if (why[0]) {
        index_update_result_free(out);
        return TROVE_OK;
    }
    return store_note_noop_update(st);
}

trove_err api_data_version(api *a, int64_t *v)
{
    store *st;
    trove_err rc = api_reader(a, &st);
    return rc ? rc : store_data_version(st, v);
}

/* ---- snapshots ---- */

void api_snapshots_free(api_snapshots *s)
{
    store_snapshots_free(s->items, s->n);
    memset(s, 0, sizeof *s);
}

trove_err api_snapshot_list(api *a, size_t limit, api_snapshots *out)
{
    memset(out, 0, sizeof *out);
    out->keep = api_retention(&a->cfg);
    out->keep_count_form = a->cfg.has_snapshots == 1;
    store *st;
    trove_err rc = api_reader(a, &st);
    if (rc)
        return rc;
    store_snapshot cur;
    if ((rc = store_read_begin(st)) != TROVE_OK)
        return rc;
    rc = store_snapshot_current(st, &cur);
    if (rc == TROVE_OK) {
        out->current = cur.id;
        store_snapshot_clear(&cur);
        rc = store_snapshots(st, limit, &out->items, &out->n);
    }
    store_read_end(st);
    return rc;
}

void api_rollback_free(api_rollback *r)
{
    store_snapshot_clear(&r->made);
    for (size_t i = 0; i < r->n_restored; i++)
        free(r->restored[i]);
    free(r->restored);
    free(r->restored_settings);
    memset(r, 0, sizeof *r);
}

/* Put the collections of the rolled-back index that config.yaml lacks back
 * into it: a collection removed since (or renamed: then the entry of the
 * same folder gets its old name back). Without this the next update would
 * drop their notes again. */
static trove_err restore_config(api *a, const store_restored_coll *c, size_t n, api_rollback *out)
{
    /* The file as it is now (another command may have changed it since
     * this handle read it), edited and written back. */
    config now;
    trove_err rc = config_load_file(&now, a->cfg.file);
    if (rc)
        return rc;
    config *cfg = &now;
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        if (config_find_collection(cfg, c[i].name))
            continue;
        config_collection *same = NULL;
        for (size_t k = 0; k < cfg->n_collections && !same; k++)
            if (strcmp(cfg->collections[k].path, c[i].root) == 0)
                same = &cfg->collections[k];
        int in_index = 0;
        for (size_t k = 0; same && k < n && !in_index; k++)
            in_index = strcmp(c[k].name, same->name) == 0;
        if (same && in_index)
            continue;   /* two names for one folder: leave config.yaml to the user */
        if (same) {
            /* renamed since: the entry takes its old name back, contexts too */
            size_t fl = strlen(same->name);
            for (size_t k = 0; k < cfg->n_contexts; k++) {
                char *t = cfg->contexts[k].target;
                if (strncmp(t, same->name, fl) == 0 && (t[fl] == '\0' || t[fl] == '/')) {
                    size_t len = strlen(c[i].name) + strlen(t + fl) + 1;
                    char *nt = xmalloc(len);
                    snprintf(nt, len, "%s%s", c[i].name, t + fl);
                    free(t);
                    cfg->contexts[k].target = nt;
                }
            }
            free(same->name);
            same->name = xstrdup(c[i].name);
        } else {
            config_collection_restore(cfg, c[i].name, c[i].root, c[i].conf);
        }
        out->restored = xrealloc(out->restored, (out->n_restored + 1) * sizeof *out->restored);
        out->restored_settings = xrealloc(out->restored_settings,
                                          (out->n_restored + 1) * sizeof *out->restored_settings);
        out->restored[out->n_restored] = xstrdup(c[i].name);
        out->restored_settings[out->n_restored++] = same || c[i].conf != NULL;
        changed = 1;
    }
    rc = changed ? config_save(cfg) : TROVE_OK;
    config_free(&now);
    return rc;
}

trove_err api_snapshot_rollback(api *a, int64_t id, api_rollback *out)
{
    memset(out, 0, sizeof *out);
    if (!api_index_exists(a)) {
        store *none;
        return api_reader(a, &none);   /* the "no index yet" message */
    }
    store *st;
    trove_err rc = open_writer(a, a->index_path, &st);
    if (rc)
        return rc;
    store_restored_coll *colls = NULL;
    size_t n_colls = 0;
    rc = store_snapshot_rollback(st, id, &out->made, &out->noop, &colls, &n_colls);
    /* The rollback commits as the snapshot after the one it replaced. */
    out->from = out->noop ? out->made.id : out->made.id - 1;
    store_close(st);
    if (rc == TROVE_OK && !out->noop)
        rc = restore_config(a, colls, n_colls, out);
    store_restored_colls_free(colls, n_colls);
    return rc;
}

void api_check_result_free(api_check_result *r)
{
    store_problems_free(r->problems, r->n);
    memset(r, 0, sizeof *r);
}

static void dict_state(api_dict_check *d, trove_err rc)
{
    d->state = rc == TROVE_OK ? API_DICT_OK : rc == TROVE_ENOENT ? API_DICT_MISSING
                                                                  : API_DICT_DAMAGED;
    d->detail = rc == TROVE_OK ? NULL : xstrdup(trove_errmsg());
}

void api_check_dicts(api *a, api_dict_check out[API_N_DICTS])
{
    memset(out, 0, API_N_DICTS * sizeof *out);
    /* the path the segmenter loads (cjk/seg.c, lazy_load) */
    out[0].what = "Chinese segmenter";
    out[0].without = "Chinese text is indexed and searched as character bigrams";
    out[0].path = a->cfg.zh_dict ? xstrdup(a->cfg.zh_dict) : seg_default_dict_path();
    seg *sg = NULL;
    trove_err rc = seg_open(out[0].path, a->cfg.zh_user_dict, &sg);   /* checks it whole */
    seg_free(sg);
    dict_state(&out[0], rc);
    out[1].what = "Chinese-English translation";
    out[1].without = "search does not translate between Chinese and English";
    out[1].path = xlate_default_dict_path();
    xdict *xd = NULL;
    rc = xdict_open(out[1].path, &xd);
    if (rc == TROVE_OK)
        rc = xdict_verify(xd);
    xdict_close(xd);
    dict_state(&out[1], rc);
}

void api_dict_checks_free(api_dict_check d[API_N_DICTS])
{
    for (size_t i = 0; i < API_N_DICTS; i++) {
        free(d[i].path);
        free(d[i].detail);
    }
    memset(d, 0, API_N_DICTS * sizeof *d);
}

trove_err api_check(api *a, api_check_result *out)
{
    memset(out, 0, sizeof *out);
    store *st;
    trove_err rc = store_open(a->index_path, STORE_READONLY | STORE_NOVERIFY, &st);
    if (rc)
        return rc;
    rc = store_check(st, &out->problems, &out->n);
    if (rc == TROVE_OK && store_counts_get(st, &out->counts) != TROVE_OK)
        memset(&out->counts, 0, sizeof out->counts);
    store_close(st);
    return rc;
}
