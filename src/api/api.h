/* api — the one read/update API under every front end (CLI, daemon, MCP).
 *
 * An api handle holds the loaded config and, opened on first use, a
 * read-only connection to the index. Each function answers one request
 * (search, get, multi-get, ls, status, update, check) with a plain result
 * struct: no printing, no FILE*, no exit codes. Front ends parse their input,
 * call these, and render the result; errors come back as trove_err with a
 * trove_fail() detail that is already the sentence to show the user.
 *
 * Ownership: every result struct is filled by its function and released
 * with the matching *_free(); all strings in it are owned by it. Pointers to
 * the config (api_config) stay valid until api_close(). One handle is used
 * by one thread at a time.
 *
 * Models: a handle opens its embedding model and reranker itself and keeps
 * them (one copy per handle). Handles used by several threads at once (the
 * daemon's) can share one copy instead: the owner creates an api_models,
 * lends it to every handle with api_use_models(), and frees it after the
 * last of them is closed. Shared models are loaded once, and each use of
 * one (a query's embedding, a reranking, an embedding pass) holds that
 * model's lock; everything else (the vector scan included) runs in parallel.
 * An api_models also holds the vector segments its handles' searches read
 * (search/vcache.h), so a resident process reads each segment from the
 * index once, not on every search; bounded by TROVE_VEC_CACHE_MB (default
 * 1024; 0 keeps none).
 *
 * Reading files: every note text handed out (get, multi-get, search bodies)
 * is read through fs_read_inside(), so a path whose real location lies
 * outside its collection's folder is never read. */
#ifndef TROVE_API_H
#define TROVE_API_H

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "index/indexer.h"
#include "index/vembed.h"
#include "search/query_pipe.h"
#include "search/search.h"
#include "search/dupes.h"
#include "search/evalset.h"
#include "search/similar.h"
#include "search/vcache.h"
#include "store/store.h"
#include "store/store_vec.h"
#include "util/err.h"

typedef struct api api;

/* Load the config (from config_dir()) and remember the index path (NULL:
 * store_default_path()). The index is not opened yet. */
trove_err api_open(const char *index_path, api **out);
/* The same with a config the handle takes over (tests, daemons that load
 * their own); *cfg is zeroed. */
trove_err api_open_config(const char *index_path, config *cfg, api **out);
void api_close(api *a);

/* ---- the agent boundary: notes kept from agents ----
 *
 * Some notes must never reach a model: config.yaml `mcp: {exclude: [GLOB],
 * private_key: KEY}` names them (store/store.h says the rule: a glob over
 * COLLECTION/PATH, PATH or a folder of either, or frontmatter KEY, default
 * `private`, set to anything but false/no/off/0). With the boundary on,
 * every call of the handle answers as if those notes were not indexed:
 * search, vsearch, query and similar never rank them (nor show them as
 * another language's copy); get, multi-get, links, similar and ls do not
 * find them by path, glob or #docid (the same "not found" as for a note
 * that does not exist, and unindexed files are not read at all); backlinks,
 * outlinks and unlinked mentions leave them out; counts (ls, status) count
 * only the others; dupes and eval refuse. The boundary follows the index:
 * a note made private is hidden from the update that sees it (the daemon's
 * watcher: within a second).
 * Who turns it on: every front end that answers someone other than the
 * owner at this machine — the MCP server (all transports, cold and through
 * the daemon, whose request then says so: daemon/client.h
 * dcl_set_boundary), and `trove serve --allow-remote`. The CLI never does. */
void api_set_boundary(api *a, int on);
int api_boundary(const api *a);

/* ---- models shared between handles ---- */

typedef struct api_models api_models;

api_models *api_models_new(void);
/* Closes every model; the handles it was lent to must be closed first. */
void api_models_free(api_models *m);
/* From now on a's embedding model and reranker come from m (loaded there
 * once, keyed by the file's real path) instead of the handle's own. m is
 * borrowed and must outlive a; call before the handle's first search. */
void api_use_models(api *a, api_models *m);

typedef struct api_models_model {
    char *path;         /* the path it was opened with */
    const char *kind;   /* "embed" or "rerank" (static) */
    int users;          /* handles holding it now */
} api_models_model;

typedef struct api_models_stats {
    long loads;                 /* models opened so far (successfully) */
    api_models_model *models;   /* open now */
    size_t n;
    vcache_stats vec_cache;     /* the shared vector segment cache */
} api_models_stats;

void api_models_stats_get(api_models *m, api_models_stats *out);
void api_models_stats_free(api_models_stats *s);

const config *api_config(const api *a);
const char *api_index_path(const api *a);
/* 1 when the index file exists (whether or not it is healthy). */
int api_index_exists(const api *a);
/* The read-only store, opened on first call: TROVE_ENOENT (with the "run
 * `trove update`" hint) when there is no index, TROVE_ECORRUPT when it is
 * damaged. Borrowed; valid until api_close(). */
trove_err api_reader(api *a, store **st);

/* ---- search ---- */

/* ---- search options: one struct, defaults, config merge, bounds ----
 *
 * api_search_opts is the one search request every front end fills: the CLI
 * from its flags, the daemon from the wire (api/wire.c), MCP from a tool
 * call. A front end only maps its syntax onto the fields, and sets only
 * what the user said; everything else stays unset, so that config.yaml
 * can decide it. A request is then resolved in this order, every step
 * touching only fields still unset:
 *
 *   api_search_opts_init()          every option unset, no filter, no query
 *   (the front end)                 what the user said
 *   api_search_opts_merge_config()  what config.yaml says (`weights:`, `languages:`)
 *   api_search_opts_defaults()      the defaults (api_search_opt_table)
 *   api_search_opts_check()         bounds: TROVE_EINVAL naming the option
 *
 * api_search() and api_query() resolve with the handle's config (a
 * daemon's own: an unset option travels the wire unset), so a front end
 * calls nothing past init, except api_search_opts_check() to refuse a
 * value out of bounds as a usage error before anything runs.
 *
 * "Unset" is NAN for a double, API_UNSET_INT for an int, API_UNSET_SIZE
 * for a size_t. Filters (collections, folder, tags, langs...) and flags
 * whose default is 0 need no "unset": empty is their default.
 *
 * Adding a search option:
 *   1. a field in search_opts (search/search.h) or here, saying what it does;
 *   2. a tunable with a default or bounds: a row in api_search_opt_table
 *      (api/api_opts.c): name, kind, offset, default, min, max, and the
 *      config.yaml `weights:` key it merges from (-1: none); the unit test
 *      test_api_opts checks every default lies in its bounds;
 *   3. a config key of its own (config/config.h): one line in
 *      api_search_opts_merge_config(), which fills the field when unset;
 *   4. each front end maps its syntax onto the field: the CLI flag
 *      (cli/cmd_search.c, docs/cli.md, docs/trove.1.md, completions), the
 *      wire key (api/wire.c), the MCP argument (mcp/mcp_tools.c). */

#define API_UNSET_INT INT_MIN
#define API_UNSET_SIZE SIZE_MAX
/* --passages at most */
#define API_MAX_PASSAGES 50

typedef struct api_search_opts {
    search_opts search;   /* the query, its filters and its tunables */
    int with_body;        /* read each result's whole note into body/body_len */
    /* The vector channel: the embedding model (GGUF file or model2vec
     * folder; NULL: none, keyword channels only). search.vector_only is
     * vsearch. search.model is filled in by api_search. */
    const char *model;
    /* This machine's index even when config.yaml names a `remote:` one
     * (`--local`; trove query and eval search locally always). */
    int local;
} api_search_opts;

/* One tunable of search_opts: its default and bounds. */
typedef enum api_opt_kind { API_OPT_REAL, API_OPT_INT, API_OPT_SIZE } api_opt_kind;

typedef struct api_opt {
    const char *name;     /* in error messages ("title_weight must be ...") */
    api_opt_kind kind;    /* the field's type: double, int, size_t */
    size_t offset;        /* of the field in search_opts */
    double def;           /* its default */
    double min, max;      /* inclusive bounds (INFINITY: none) */
    int config_weight;    /* the CONFIG_W_* key of config.yaml `weights:`; -1 none */
} api_opt;

extern const api_opt api_search_opt_table[];
extern const size_t api_search_n_opts;
/* The row named `name`, NULL if none (front ends: a default to show). */
const api_opt *api_search_opt(const char *name);

/* Every option unset, every filter empty. */
void api_search_opts_init(api_search_opts *o);
/* Unset options that config.yaml sets take its values. */
void api_search_opts_merge_config(api_search_opts *o, const config *cfg);
/* Unset options take their defaults. */
void api_search_opts_defaults(api_search_opts *o);
/* Every set option within its bounds, else TROVE_EINVAL saying which and
 * why (unset ones pass: their defaults are in bounds). */
trove_err api_search_opts_check(const api_search_opts *o);
/* merge_config, defaults, check: what api_search does before it runs. */
trove_err api_search_opts_resolve(api_search_opts *o, const config *cfg);

/* search.langs: at most this many, each a language code (TROVE_EINVAL
 * otherwise); search.prefer_langs: the config's `languages:` when unset. */
#define API_MAX_LANGS 32
/* Every collection named in o->search.collections must be configured
 * (TROVE_ENOENT otherwise: a typo must not look like "no results").
 * Vectors: with no vector of any model in the index the model is not even
 * opened (out->vec_state SEARCH_VEC_NONE); a model that cannot be opened
 * fails a vsearch and leaves a search to the other channels with
 * out->vec_error saying why. vsearch without a model is TROVE_EINVAL.
 * With `remote:` in config.yaml (and not o->local) the published index
 * answers instead (api_search_remote): every front end goes through here,
 * so the daemon, MCP and the web page follow the setting alike. */
trove_err api_search(api *a, const api_search_opts *o, search_results *out);

/* ---- query: expansion, fusion, reranking, blend (search/query_pipe.h) ---- */

typedef struct api_query_opts {
    api_search_opts base;     /* query, filters, limit, min_score, model, weights,
                                 with_body: as for api_search */
    int no_expand;            /* the original query only */
    int no_rerank;            /* fused order, no re-scoring */
    size_t candidates;        /* reranked candidates; 0: QP_RERANK_DEFAULT */
    size_t window_tokens;     /* reranker window; 0: the model's default (256 cross-encoder, 128 decoder) */
    /* Cross-encoder GGUF (a model with a rank head); NULL: the lexical
     * re-scorer. One that cannot rerank falls back to the lexical
     * re-scorer with info->rerank_warning saying why. */
    const char *reranker;
    /* A generative expansion model (qmd's query-expansion GGUF, a Qwen3
     * decoder; a resolved path): its lex:/vec:/hyde: lines add up to three
     * variants to the deterministic ones. Its failures (no file, garbage,
     * empty output, token budget) leave the deterministic expansion alone
     * and are said in info->expand_note. NULL: deterministic only.
     * Ignored with no_expand. */
    const char *expand_model;
} api_query_opts;

void api_query_opts_init(api_query_opts *o);

/* What the pipeline did, for --explain; items[i] belongs to out->items[i]. */
typedef struct api_query_info {
    qp_variant variants[QP_MAX_VARIANTS];
    size_t n_variants;
    qp_list lists[QP_MAX_LISTS];
    size_t n_lists;
    char *reranker;           /* "lexical", "none", or the model path; NULL: the
                                 pipeline did not get that far. Owned by the info,
                                 like every string in it (api_query_info_free) */
    char *rerank_warning;     /* the model could not rerank: why, else NULL */
    char *expand_note;        /* expand_model set: which variants it gave, or why
                                 the deterministic expansion stands alone; else NULL */
    size_t n_fused;           /* candidates after fusion (kept) */
    size_t n_reranked;
    double rerank_trust;      /* the reranker model's earned share for this
                                 query (qp_rerank_trust); 1 for the lexical one */
    qp_cand *items;
    size_t n;
} api_query_info;

/* Expansion (unless no_expand), retrieval for every variant (bm25 and
 * vector; title and the link prior for the original only), weighted RRF with
 * the top-rank bonus over qp_plan_lists()'s lists, re-scoring of the top
 * candidates, the blend and the search floor. The
 * result's score is the blend, in [0, 1]; min_score and limit apply to it.
 * out->vec_* and fts describe the original query's search. */
trove_err api_query(api *a, const api_query_opts *o, search_results *out, api_query_info *info);
void api_query_info_free(api_query_info *info);

/* ---- embeddings ---- */

/* The embedding model at `path`, opened on first use and kept open while
 * the handle lives (threads <= 0: every CPU; ignored when already open).
 * Borrowed; another path replaces it. With shared models (api_use_models)
 * the model may be in use by another thread: read its info only, and run
 * it through the api's own calls (which take its lock). */
trove_err api_embedder(api *a, const char *path, int threads, embed_model **out);

typedef struct api_embed_opts {
    const char *model;    /* required */
    int threads;
    int prune;            /* first drop the vectors of every other model */
    vembed_opts embed;    /* force, batch, commit_secs, progress, interrupted */
} api_embed_opts;

typedef struct api_embed_result {
    vembed_stats stats;
    size_t pruned;        /* other models dropped */
    int64_t dim;
} api_embed_result;

/* Embed what needs it (see index/vembed.h) on a read-write connection of
 * its own. TROVE_EINTR when interrupted (progress up to then is kept). */
trove_err api_embed(api *a, const api_embed_opts *o, api_embed_result *out);

typedef struct api_vec_status {
    char *model;              /* the active model's path, NULL when none */
    char *model_error;        /* why it could not be opened, else NULL */
    char *model_arch;
    int64_t model_dim;
    store_vec_model *models;  /* every model with vectors in the index */
    size_t n_models;
    int64_t active_id;        /* its id among them, 0 when it has none */
    store_vec_count *counts;  /* per indexed collection, for the active model */
    size_t n_counts;
} api_vec_status;

/* Embedding state for `status`. No index: nothing filled, TROVE_OK. */
trove_err api_vec_status_get(api *a, const char *model, api_vec_status *out);
void api_vec_status_free(api_vec_status *s);

/* ---- notes: get, multi-get ---- */

typedef struct api_note {
    char docid[9];        /* "" when the note is not in the index */
    char *collection;
    char *root;           /* collection folder */
    char *path;           /* relative to root */
    char *title;          /* NULL when the note is not in the index */
    char *text;           /* the bytes asked for; NULL when skipped */
    size_t len;
    long line_start;      /* get: first line in text (1-based) */
    long line_end;        /* get: last line in text; line_start - 1 when none */
    long n_lines;         /* get: lines in the whole file */
    const char *skipped;  /* multi-get: why text is NULL (static string), else NULL */
} api_note;

void api_note_free(api_note *n);

/* REF is "COLLECTION/PATH", an indexed relative PATH, a path on disk inside a
 * collection, or "#DOCID" (at least 4 hex digits), each optionally followed
 * by ":LINE". Lines [LINE, LINE + count) are returned (count 0: to the end);
 * `line` > 0 overrides a ":LINE" in REF. Errors: TROVE_ENOENT (no such note
 * or file), TROVE_EINVAL (ambiguous or short docid, a folder),
 * TROVE_EACCES (the real path lies outside the collection). */
trove_err api_get(api *a, const char *ref, long line, long count, api_note *out);
/* The same with a relative on-disk REF resolved against `cwd` (NULL: the
 * process's working directory): a daemon answers for a client elsewhere. */
trove_err api_get_in(api *a, const char *cwd, const char *ref, long line, long count,
                     api_note *out);

typedef struct api_notes {
    api_note *items;
    size_t n;
} api_notes;

void api_notes_free(api_notes *n);

/* Every indexed note whose "COLLECTION/PATH" or PATH matches GLOB, in
 * collection and path order, whole text included when the file holds at
 * most max_bytes (else `skipped` says why). No match is not an error. */
trove_err api_multi_get(api *a, const char *glob, size_t max_bytes, api_notes *out);

/* ---- ls ---- */

typedef struct api_listing {
    /* target NULL: every collection with its note count */
    store_collection_row *collections;
    size_t n_collections;
    /* target "COLLECTION[/PREFIX]": its notes under PREFIX (a folder) */
    store_doc *docs;
    size_t n_docs;
} api_listing;

/* TROVE_ENOENT when the index has no such collection. */
trove_err api_ls(api *a, const char *target, api_listing *out);
void api_listing_free(api_listing *l);

/* One page of every indexed note, in (collection, path) order, after the key
 * (after_collection NULL: from the first note): at most `limit` rows read
 * from the index, less the notes whose file now leads outside its
 * collection (as api_ls). last_collection/last_path: the key of the last row
 * read (owned; NULL when none was), where the next page starts; more: 0 when
 * the index holds nothing after it. TROVE_ENOENT without an index. */
typedef struct api_page {
    store_doc *docs;
    size_t n_docs;
    char *last_collection, *last_path;
    int more;
} api_page;

trove_err api_ls_page(api *a, const char *after_collection, const char *after_path,
                      size_t limit, api_page *out);
void api_page_free(api_page *p);

/* ---- status ---- */

typedef struct api_status_collection {
    char *name;
    char *path;
    int64_t notes;            /* indexed notes */
    int fresh_known;          /* freshness was checked (index exists, folder there) */
    index_freshness fresh;    /* by (size, mtime) since the last update */
    char *problem;            /* why freshness is unknown (folder missing), else NULL */
} api_status_collection;

typedef struct api_status {
    char *config_file;
    char *index_path;
    int index_exists;
    int64_t index_bytes;      /* index file + its WAL */
    int64_t last_update;      /* Unix seconds, 0 when never */
    store_counts counts;
    store_snapshot snapshot;  /* the current snapshot (id 0: none, or no index) */
    api_status_collection *collections;   /* in config order */
    size_t n_collections;
    store_lang_count *langs;  /* the notes' languages, most notes first */
    size_t n_langs;
} api_status;

trove_err api_status_get(api *a, api_status *out);
void api_status_free(api_status *s);

/* ---- update ---- */

typedef struct api_update_opts {
    const char *const *collections;   /* names to update; n_collections 0: all */
    size_t n_collections;
    index_opts index;                 /* index_opts_init() defaults + callbacks */
    int rebuild;      /* index everything into a fresh file that then replaces
                         the old one (damaged or not) in one rename; all
                         collections, and the old file is kept on failure */
    int unwalked;     /* asked of a daemon: answer without a walk when its
                         watcher vouches, else refuse (the caller walks);
                         api_update() itself refuses it (TROVE_EINVAL) */
} api_update_opts;

void api_update_opts_init(api_update_opts *o);
/* index_update() on a read-write connection of its own (the reader, if
 * open, sees the result on its next read). TROVE_ENOENT when the config has
 * no collections or a named one is not configured. */
trove_err api_update(api *a, const api_update_opts *o, index_update_result *out);

/* An update without a walk (the daemon's, docs/architecture.md "An update
 * without a walk"). `vouch` says whether the files of collection `name`
 * are as the last update left them (1, and the files it walked) or not (0,
 * and why). api_update_unwalked() then gives the answer an update would
 * give — nothing changed — for the collections `o` selects, and records
 * its time as a no-op update does, when every one is vouched for and
 * nothing else an update does would change the index: the index records
 * the running tokenizer, holds no collection the config dropped, and no
 * two collections share a folder. Else why[cap] says why not (out is
 * empty) and the caller walks. Errors as api_update's. */
typedef int (*api_vouch_fn)(void *ctx, const char *name, size_t *files, char *why, size_t cap);
trove_err api_update_unwalked(api *a, const api_update_opts *o, api_vouch_fn vouch, void *ctx,
                              index_update_result *out, char *why, size_t cap);
/* The index's data_version on this handle's reader (store_data_version):
 * another value later means someone committed to the index meanwhile. */
trove_err api_data_version(api *a, int64_t *v);

/* ---- publish (api_publish.c; docs/scaling.md) ----
 * The index as OpenSearch documents, sent to one endpoint (or written to a
 * folder): the first publish sends every chunk, the next ones what the
 * snapshots since the recorded one changed (from the undo log), recorded
 * in our meta ("publish:URL/INDEX") and in the index's mapping _meta. */
typedef struct api_publish_opts {
    const char *url;          /* http(s)://host:port; NULL with dry_run */
    const char *index;        /* NULL: "trove" */
    const char *dry_run;      /* folder: write the bodies there, send and record nothing */
    int full;                 /* send everything, then delete what this did not send */
    size_t batch_bytes, batch_actions;   /* 0: PUB_BULK_MAX_* */
    int retries;              /* < 0: default */
    long timeout_s;           /* <= 0: default */
    int progress, tty;
    const volatile sig_atomic_t *stop;
} api_publish_opts;

typedef struct api_publish_result {
    int full;                 /* everything was sent */
    const char *why_full;     /* static: why (first publish, --full, ...) */
    int64_t from, to;         /* snapshots: recorded before (0: none), published now */
    int created;              /* the index was created */
    int dim;                  /* vector width published (0: none) */
    char *model;              /* its name, NULL: none */
    size_t notes, upserts, deletes, batches, retried, failed;
    size_t no_vector;         /* chunks sent without a vector (not embedded yet) */
    char *first_error;        /* the first refused item, NULL: none */
    char *url;                /* the endpoint without credentials, or the folder */
    char *index;
} api_publish_result;

/* TROVE_EIO when items were refused for good (nothing recorded then). */
trove_err api_publish(api *a, const api_publish_opts *o, api_publish_result *out);
void api_publish_result_free(api_publish_result *r);
/* An OpenSearch index name trove accepts: lower case, none of the
 * characters \ / * ? " < > | , # : or a space, not starting with - _ +,
 * not . or ..; TROVE_EUSAGE otherwise. */
trove_err api_publish_index_check(const char *name);

/* The search `o` asks for, against the index `trove publish opensearch`
 * made at REMOTE ("http://host:9200/INDEX", no INDEX: "trove";
 * api_remote.c): the query's terms from trove's tokenizer, its vector from
 * o->model when the index has vectors of that model (checked by
 * fingerprint: another model is TROVE_EUNSUPPORTED), a hybrid query
 * through the index's RRF pipeline with the filters mapped, one result per
 * note. with_body is refused (the notes may not be on this machine). */
trove_err api_search_remote(api *a, const api_search_opts *o, const char *remote,
                            search_results *out);

/* ---- snapshots ---- */

/* The index's snapshots (see store.h): which stay is the config's
 * `snapshots:` (store_retention; default STORE_RETENTION_DEFAULT). */
typedef struct api_snapshots {
    store_snapshot *items;   /* kept snapshots, newest first */
    size_t n;
    int64_t current;         /* the current snapshot's id, 0 when none */
    store_retention keep;    /* which snapshots stay */
    int keep_count_form;     /* config.yaml has the older `snapshots: N` */
} api_snapshots;

/* At most `limit` (0: every kept one). TROVE_ENOENT without an index. */
trove_err api_snapshot_list(api *a, size_t limit, api_snapshots *out);
void api_snapshots_free(api_snapshots *s);

typedef struct api_rollback {
    int64_t from;            /* the snapshot that was current */
    store_snapshot made;     /* the new current snapshot (kind "rollback");
                                the current one when noop */
    int noop;                /* `id` was current already: nothing changed */
    /* Collections the rolled-back index holds that config.yaml did not
     * list (removed since): put back into config.yaml, with the settings
     * recorded at their removal; names, and for each whether its settings
     * were recorded (0: path only, the default mask). */
    char **restored;
    int *restored_settings;
    size_t n_restored;
} api_rollback;

/* Make snapshot `id` current again, atomically, on a read-write connection
 * of its own; the result is a new snapshot. TROVE_ENOENT (naming the kept
 * ids) when `id` is not a kept snapshot. Collections of the restored index
 * that config.yaml no longer lists are added back to it (the next update
 * would drop them again otherwise). */
trove_err api_snapshot_rollback(api *a, int64_t id, api_rollback *out);
void api_rollback_free(api_rollback *r);

/* The retention of a config (store_retention from `snapshots:`). */
store_retention api_retention(const config *cfg);

/* ---- the link graph: links, similar notes, duplicates (api_graph.c) ---- */

/* A note as the graph functions name it. */
typedef struct api_graph_note {
    char docid[9];        /* "" when none (an unresolved link) */
    char *collection, *path, *title;   /* NULL when none */
    char *root;           /* its collection's folder; NULL when none */
} api_graph_note;

#define API_LINK_MENTION (-1)   /* api_link.kind of an unlinked mention */

typedef struct api_link {
    api_graph_note note;  /* the other end: the linking note (backlinks,
                             mentions) or the linked one (outlinks; none for
                             unresolved links) */
    char *target;         /* the link target as written; a mention: the name found */
    char *fragment;       /* "heading" or "^block" after '#', NULL when none */
    int kind;             /* md_link_kind (wiki, embed, markdown) or API_LINK_MENTION */
    int line;             /* 1-based line where it is written: in the other note
                             for backlinks and mentions, in this one for outlinks */
    char *text;           /* that line, trimmed; "" when the file is unreadable */
} api_link;

typedef struct api_link_set {
    api_graph_note note;  /* the note asked about */
    char **names;         /* the names mentions were looked for by: title,
                             aliases, file name */
    size_t n_names;
    api_link *back;       /* other notes linking here, by collection, path, line */
    size_t n_back;
    api_link *out;        /* links out that resolve to a note, in line order */
    size_t n_out;
    api_link *unresolved; /* links out to no indexed note (or to a file) */
    size_t n_unresolved;
    api_link *mentions;   /* notes naming this one without linking it */
    size_t n_mentions;
} api_link_set;

/* Backlinks (with the line that links), outlinks, unresolved links and
 * unlinked mentions of the note REF names (as api_get takes it; a relative
 * on-disk path resolves against cwd, NULL: this process's). Errors:
 * TROVE_ENOENT (no index, no such note, not indexed), TROVE_EINVAL
 * (ambiguous or malformed docid). A note with no links is not an error. */
trove_err api_links(api *a, const char *cwd, const char *ref, api_link_set *out);
void api_link_set_free(api_link_set *s);

typedef struct api_similar_opts {
    const char *ref;      /* the note, as api_get takes it */
    const char *cwd;      /* as for api_links */
    size_t limit;         /* 0: 10 */
    /* Results only from notes these filters let through, as a search's:
     * its filter fields (search_opts_filters: collections, folder, tags,
     * langs, where, since, until, heading_contains, path_prefix, doc_refs);
     * the other fields are not read. Zeroed by init: no filter. */
    search_opts filter;
    double bm25_weight, vector_weight;   /* < 0: defaults (1, 1) */
    /* The embedding model whose stored vectors to compare (opened only for
     * its fingerprint); NULL: the index's model with the most vectors, and
     * no model is opened at all. */
    const char *model;
    int with_body;        /* read each result's whole note, as api_search */
} api_similar_opts;

void api_similar_opts_init(api_similar_opts *o);

/* Why the results came (for --explain); owned by the info. */
typedef struct api_similar_info {
    api_graph_note note;  /* the note asked about */
    similar_info why;     /* its terms, each result's shared terms, the model */
} api_similar_info;

/* Notes like the one o->ref names (search/similar.h): its distinctive
 * terms (always) and the mean of its chunk vectors (when the index holds
 * vectors for it), fused as a search is; never the note itself or its
 * translations. Results are search_results (search_results_free), each
 * channel's rank and score in channel[]. Errors as api_links. */
trove_err api_similar(api *a, const api_similar_opts *o, search_results *out,
                      api_similar_info *info);
void api_similar_info_free(api_similar_info *info);

typedef struct api_dupes_opts {
    double threshold;     /* estimated Jaccard similarity in (0, 1]; 0: 0.8 */
    int passages;         /* compare chunks instead of whole notes */
    const char *const *collections;   /* only these (OR); none: all */
    size_t n_collections;
} api_dupes_opts;

/* Groups of near-duplicate notes or passages (search/dupes.h: MinHash over
 * the chunk text, pairs confirmed by their vectors where the index holds
 * them), largest groups first. TROVE_EINVAL for a threshold outside
 * (0, 1], TROVE_ENOENT for an unknown collection or no index. Free the
 * result with dupes_result_free. */
trove_err api_dupes(api *a, const api_dupes_opts *o, dupes_result *out);

/* ---- eval: how well search works on this vault (api_eval.c) ---- */

/* QUERY: the query pipeline (api_query: expansion, fusion, the lexical
 * re-scorer, no reranker model) under the current settings. */
enum { API_EVAL_HYBRID, API_EVAL_BM25, API_EVAL_TITLE, API_EVAL_VECTOR, API_EVAL_QUERY,
       API_EVAL_N_MIXES };
extern const char *const api_eval_mix_names[API_EVAL_N_MIXES + 1];   /* NULL-terminated */

typedef struct api_eval_opts {
    size_t per_kind;                 /* queries per kind at most; 0: 100 */
    const char *const *collections;  /* notes of these only (OR); none: all */
    size_t n_collections;
    const char *model;               /* embedding model: the vector channel and
                                        the vector mix; NULL: keywords only */
    /* Two settings to compare ("NAME=VALUE,..." over api_search_opt_table
     * names, e.g. "vector_weight=0.3", and "model=PATH"); both NULL: the
     * current settings, every channel mix. */
    const char *compare[2];
} api_eval_opts;

typedef struct api_eval_row {
    const char *kind;     /* evalset_kind_names[], or "all" (static) */
    const char *mix;      /* api_eval_mix_names[] (static) */
    char *setting;        /* compare: the setting as given; else NULL */
    size_t n;             /* queries */
    double ndcg10, recall10, mrr;   /* means; MRR over the top 10 */
} api_eval_row;

typedef struct api_eval_result {
    api_eval_row *rows;
    size_t n;
    size_t queries[EVAL_N_KINDS];    /* kept per kind */
    size_t found[EVAL_N_KINDS];      /* candidates per kind */
} api_eval_result;

/* Build the test set from the index (search/evalset.h), run each query
 * through api_search (limit 10) under each channel mix (the vector mix only
 * with a model and vectors) and through api_query, or under each compared
 * setting, and average nDCG@10,
 * Recall@10 and MRR per kind and over all. Reads only: never writes the
 * index. TROVE_EINVAL for a setting that does not parse or is out of
 * bounds, TROVE_ENOENT for an unknown collection or no index. */
trove_err api_eval(api *a, const api_eval_opts *o, api_eval_result *out);
void api_eval_result_free(api_eval_result *r);

/* ---- check ---- */

typedef struct api_check_result {
    char **problems;     /* one line each; n == 0: healthy */
    size_t n;
    store_counts counts; /* when they could be read */
} api_check_result;

/* store_check() on a connection of its own that skips the open-time check,
 * so the problems are listed rather than refused. TROVE_ENOENT without an
 * index; TROVE_ECORRUPT when the file cannot be read as an index at all. */
trove_err api_check(api *a, api_check_result *out);
void api_check_result_free(api_check_result *r);

/* The dictionaries trove reads beside the index (files of the install, not
 * of the index): the Chinese segmenter's trove-zh.dict (the config's
 * chinese.dictionary, else the default path) and the translation
 * channel's trove-xl.dict, each read whole against its checksums. A
 * missing one is no damage (what it gives is off); a damaged one is. */
typedef enum { API_DICT_OK, API_DICT_MISSING, API_DICT_DAMAGED } api_dict_state;
#define API_N_DICTS 2
typedef struct api_dict_check {
    const char *what;     /* "Chinese segmenter", static */
    const char *without;  /* what runs without it, static */
    char *path;
    api_dict_state state;
    char *detail;         /* why, for MISSING and DAMAGED (NULL when OK) */
} api_dict_check;

/* Fills out[API_N_DICTS]; never fails. Free with api_dict_checks_free. */
void api_check_dicts(api *a, api_dict_check out[API_N_DICTS]);
void api_dict_checks_free(api_dict_check d[API_N_DICTS]);

#endif
