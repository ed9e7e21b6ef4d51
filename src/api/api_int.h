/* api_int — the api handle's fields, shared by the api's own files
 * (api.c, api_query.c, api_models.c); front ends see only the opaque
 * `api`. */
#ifndef TROVE_API_INT_H
#define TROVE_API_INT_H

#include <pthread.h>

#include "api/api.h"
#include "embed/embed.h"

/* One model inside an api_models: opened once, used under `use`. */
typedef struct api_model_slot {
    int kind;                 /* APIM_EMBED, APIM_RERANK, APIM_GENERATE */
    char *path;               /* as first opened */
    char *key;                /* its real path (else the path itself) */
    int param;                /* rerank: max_tokens; embed: 0 */
    embed_model *model;
    int users;                /* handles holding it (under the models' lock) */
    int loading;              /* being opened, outside the lock: model is NULL */
    pthread_mutex_t use;      /* held while the model computes */
    struct api_model_slot *next;
} api_model_slot;

/* GENERATE: a decoder that writes text (query --expand-model's). */
enum { APIM_EMBED, APIM_RERANK, APIM_GENERATE };
extern const char *const apim_kind_names[];   /* "embed", "rerank", "generate" */

/* Opens a model (path, param) or fails with a trove_fail detail. */
typedef trove_err (*apim_open_fn)(const char *path, int param, embed_model **out);

/* The shared model (kind, path, key_param) for a handle that holds *held
 * (NULL: none): found or opened with open(path, open_param); *held then
 * names it (the old one released). On failure *held is NULL. */
trove_err apim_get(api_models *m, int kind, const char *path, int key_param, int open_param,
                   apim_open_fn open, api_model_slot **held, embed_model **out);
void apim_release(api_models *m, api_model_slot **held);
/* The vector segment cache every handle lent m shares. */
struct vcache *apim_vcache(api_models *m);
/* The workers every handle's searches share (util/pool.h). */
struct pool *apim_pool(api_models *m);

/* A model a handle opened for itself (no api_models lent): kept while the
 * same path and key are asked for. */
typedef struct api_own_model {
    embed_model *m;
    char *path;
    int key;
} api_own_model;

/* The model of `kind` for `path`/`key_param`: from the lent api_models when
 * there is one, else a's own slot (opened with open(path, open_param),
 * replacing what it held). */
trove_err api_model_get(api *a, int kind, const char *path, int key_param, int open_param,
                        apim_open_fn open, embed_model **out);

struct api {
    config cfg;
    char *index_path;
    store *rd;          /* read-only connection, opened by api_reader() */
    api_own_model em;   /* embedding model, opened by api_embedder() */
    api_own_model rm;   /* reranker model, opened by api_query(); key: its
                           max_tokens (the reranker window) */
    api_own_model gm;   /* expansion model (api_expand.c), opened by api_query() */
    api_models *models; /* lent by api_use_models(), NULL: em/rm/gm above */
    api_model_slot *em_slot, *rm_slot, *gm_slot;   /* held in `models` */
    /* The title channel's terms kept across searches (text/tokmemo.h),
     * made on the first search of a handle lent `models` (a resident
     * process); NULL otherwise. */
    struct tokmemo *tok_memo;
    int boundary;       /* the agent boundary is on (api_set_boundary) */
    char *hide_text;    /* config `mcp: exclude:` one a line (api_hide.c) */
};

/* ---- the agent boundary, per request (api_hide.c) ---- */
typedef struct api_hide {
    int on;                     /* 0: the boundary is off, nothing is hidden */
    store_hide_globs *globs;
    int64_t *priv;              /* notes flagged private, ascending ids */
    size_t n_priv;
} api_hide;

/* The rule read from the handle's config and st (NULL: globs only); with
 * the boundary off h hides nothing. Free with api_hide_end. */
trove_err api_hide_begin(api *a, store *st, api_hide *h);
void api_hide_end(api_hide *h);
/* 1 when the note (id 0: not indexed; then only the globs decide) is hidden. */
int api_hide_note(api_hide *h, int64_t id, const char *collection, const char *path);
/* Drop the hidden notes of docs[] (cleared); the count kept. */
size_t api_hide_docs(api_hide *h, store_doc *docs, size_t n);
/* The notes the boundary hides (none when it is off), with their
 * collection and path; free with store_docs_free(*docs, *n). */
trove_err api_hidden_docs(api *a, store *st, store_doc **docs, size_t *n);
/* search_opts.hide_globs/hide_key for this handle (NULL, NULL when off). */
void api_hide_search(api *a, const char **globs, const char **key);

/* Generative expansion (api_expand.c): the model at path (a's own, or
 * shared through its api_models, used under its lock) turns query into
 * lex:/vec:/hyde: lines, parsed into *out (freed by the caller with
 * qx_result_free). 1 when they are usable; 0 when not (out empty). Either
 * way info->expand_note says what happened (for --explain). */
struct qx_result;
int api_expand_model(api *a, const char *path, const char *query, api_query_info *info,
                     struct qx_result *out);

/* The indexed note REF names (as api_get takes it, without ":LINE"; a
 * relative on-disk path resolved against cwd, NULL: this process's), and
 * the reader it was found with. TROVE_ENOENT when there is no index, no
 * such note, or the file is not indexed. Release doc with store_doc_clear. */
trove_err api_locate_doc(api *a, const char *cwd, const char *ref, store **st, store_doc *doc);

/* TROVE_ENOENT naming the first of `names` the config has no collection
 * of (a typo must not look like "no results"). */
trove_err api_collections_known(const api *a, const char *const *names, size_t n);
/* so->langs checked (at most API_MAX_LANGS, each a language code: TROVE_EINVAL
 * otherwise) and normalised ("PT_br" -> "pt-BR") into codes, so->langs then
 * pointing at ptrs (search and similar alike). */
trove_err api_normalise_langs(search_opts *so, char codes[API_MAX_LANGS][16],
                              const char *ptrs[API_MAX_LANGS]);

/* The lock to hold while a's embedding model computes (NULL: its own). */
pthread_mutex_t *api_em_lock(api *a);
/* Each result's whole note into body/body_len when it is on this machine
 * (under its collection's folder; NULL otherwise): with_body of a local
 * and of a remote search alike. */
void api_read_bodies(search_results *out);
pthread_mutex_t *api_rm_lock(api *a);
pthread_mutex_t *api_gm_lock(api *a);

#endif
