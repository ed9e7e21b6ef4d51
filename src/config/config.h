/* config — collections and contexts, kept in a YAML file the user may edit.
 *
 * Location: $TROVE_CONFIG_DIR/config.yaml, else $XDG_CONFIG_HOME/trove/,
 * else ~/.config/trove/. A missing file is an empty configuration. The
 * config owns every string in it; config_free() releases all. Writes go to a
 * temporary file renamed over the old one, so a crash never leaves half a
 * file. */
#ifndef TROVE_CONFIG_H
#define TROVE_CONFIG_H

#include <stddef.h>

#include "util/err.h"

typedef struct config_collection {
    char *name;
    char *path;        /* absolute, no trailing '/' (a relative `path:` in the
                          file is relative to the folder of config.yaml) */
    char **masks;      /* empty: the default mask, all .md files */
    size_t n_masks;
    char **excludes;
    size_t n_excludes;
} config_collection;

typedef struct config_context {
    char *target;      /* "collection" or "collection/path/prefix" */
    char *text;
} config_context;

/* `mcp:` — the MCP server's HTTP transport (src/mcp/) and the agent
 * boundary (api.h, api_set_boundary): notes no agent may see. */
typedef struct config_mcp {
    char *token;       /* bearer token HTTP clients must send; NULL: none */
    char **origins;    /* Origin values allowed besides loopback ones */
    size_t n_origins;
    char **exclude;    /* globs over COLLECTION/PATH, PATH and their folders */
    size_t n_exclude;
    char *private_key; /* `private_key:` the frontmatter flag (lower case);
                          NULL: CONFIG_PRIVATE_KEY */
} config_mcp;

#define CONFIG_PRIVATE_KEY "private"

/* Search channel weights from `weights:` (bm25, title, graph, vector);
 * a channel not listed keeps its default. */
enum { CONFIG_W_BM25, CONFIG_W_TITLE, CONFIG_W_GRAPH, CONFIG_W_VECTOR, CONFIG_N_WEIGHTS };
extern const char *const config_weight_names[CONFIG_N_WEIGHTS];

typedef struct config {
    char *file;        /* path of config.yaml */
    config_mcp mcp;
    double weights[CONFIG_N_WEIGHTS];
    int has_weight[CONFIG_N_WEIGHTS];
    config_collection *collections;
    size_t n_collections;
    config_context *contexts;
    size_t n_contexts;
    char *embed_model; /* `embed_model:` (catalogue name or path), NULL if unset;
                          read it through models_resolve() (models/models.h) */
    /* daemon: auto|off (docs/daemon.md); has_* = the key was in the file
     * (and is written back by config_save). */
    int daemon_off, has_daemon;
    double daemon_idle;          /* seconds; CONFIG_DAEMON_IDLE when unset */
    int has_daemon_idle;
    /* `chinese:` section (NULL when unset; relative paths are resolved
     * against the folder of config.yaml): the compiled dictionary to use
     * instead of the one shipped with trove, and a user word list
     * ("word [freq [tag]]" per line) for the segmenter (cjk/seg.h). */
    char *zh_dict;
    char *zh_user_dict;
    /* `rerank_model:` the reranker `trove query` uses (a cross-encoder GGUF:
     * a path, made absolute against the folder of config.yaml, or a name in
     * the models folder; read it through models_resolve_reranker()), NULL:
     * the lexical re-scorer. */
    char *rerank_model;
    /* `expand_model:` the generative expansion model `trove query` uses
     * (qmd's query-expansion GGUF; a name or a path, resolved like
     * rerank_model), NULL: deterministic expansion only. */
    char *expand_model;
    /* `snapshots:` which index snapshots stay for `trove snapshot
     * rollback` (store.h, store_retention): the newest `snapshots` always,
     * every one of the last snap_minutes minutes, the newest of each of the
     * last snap_hourly hours and snap_daily days. Set as a mapping
     * `{last: N, minutes: M, hourly: H, daily: D}` (keys left out keep their
     * defaults), or as the older whole number N: the newest N only
     * (minutes, hourly, daily 0). */
    int snapshots;
    int snap_minutes, snap_hourly, snap_daily;
    int has_snapshots;           /* 0: unset; 1: a number (old form); 2: a mapping */
    /* `languages:` the reader's languages, first preferred (normalised
     * codes, text/transl.h): search shows the copy of a translated note in
     * the first of them the query's language leaves open. */
    char **languages;
    size_t n_languages;
    /* `translate: false`: search without the Chinese-English dictionary
     * channel (search.h); has_translate: the key was written. */
    int no_translate, has_translate;
    /* `vector_scan: exact|two-stage|auto`: how a resident process (the
     * daemon) scans the vectors (search.h, SEARCH_VEC_SCAN_*); has_: the
     * key was written. */
    int vector_scan, has_vector_scan;   /* an index into config_vec_scan_names */
    /* `dates: {keys: [date, created]}`: the frontmatter keys that give a
     * note its date, first found wins (none: date, created; search/meta.h). */
    char **date_keys;
    size_t n_date_keys;
    /* `recency: {half_life: 90d}`: searches favour newer notes by default,
     * a note half_life old scoring 3/4 of a new one (search/meta.h);
     * recency_days 0: unset (`--recent` turns it on with 90 days). */
    double recency_days;
    char *recency_text;          /* as written, for config_save */
    /* `remote: http://host:9200/INDEX`: search and vsearch, from every
     * front end, ask the index `trove publish opensearch` made there
     * instead of this one (api_search; docs/scaling.md); NULL: unset. */
    char *remote;
} config;

#define CONFIG_RECENCY_DAYS 90.0

#define CONFIG_DAEMON_IDLE 1800.0
#define CONFIG_SNAPSHOTS 5
#define CONFIG_SNAPSHOTS_MAX 1000
#define CONFIG_SNAP_MINUTES 60
#define CONFIG_SNAP_HOURLY 24
#define CONFIG_SNAP_DAILY 30

/* The values of `vector_scan:` (and of --vector-scan), in the order of
 * search.h's SEARCH_VEC_SCAN_*. */
#define CONFIG_N_VEC_SCANS 3
extern const char *const config_vec_scan_names[CONFIG_N_VEC_SCANS];
/* name's index in config_vec_scan_names, -1 when it is none of them. */
int config_vec_scan_parse(const char *name);

/* Directory holding config.yaml (caller frees). */
char *config_dir(void);

/* On failure *cfg is left empty (nothing to free). */
trove_err config_load(config *cfg);          /* from config_dir() */
trove_err config_load_file(config *cfg, const char *file);
trove_err config_save(const config *cfg);
void config_free(config *cfg);

config_collection *config_find_collection(const config *cfg, const char *name);
/* Takes ownership of nothing: copies every string. */
config_collection *config_add_collection(config *cfg, const char *name, const char *path,
                                         const char *const *masks, size_t n_masks,
                                         const char *const *excludes, size_t n_excludes);
int config_remove_collection(config *cfg, const char *name);  /* 1 if removed */
/* `path` with symlinks and "."/".." resolved (as written when it does not
 * exist). Caller frees. */
char *config_real_path(const char *path);
/* The first of the collections [0, before) whose folder is the folder
 * `path` names, however spelt (a symlink, a trailing "/."); NULL if none.
 * Pass (size_t)-1 to search them all. */
const config_collection *config_same_folder(const config *cfg, const char *path, size_t before);

/* Set (copied) or clear (NULL or "") the active embedding model. */
void config_set_embed_model(config *cfg, const char *spec);

void config_add_context(config *cfg, const char *target, const char *text);
int config_remove_context(config *cfg, const char *target);   /* count removed */

/* The settings of collection `name` as one text (JSON: masks, excludes and
 * its contexts, targets relative to the collection), for a snapshot to
 * keep when the collection is removed; NULL when there is no such
 * collection. Caller frees. */
char *config_collection_settings(const config *cfg, const char *name);
/* Add collection `name` at `path` back with such settings (NULL or text
 * that is not such JSON: the default mask, no excludes, no contexts). */
config_collection *config_collection_restore(config *cfg, const char *name, const char *path,
                                             const char *settings);

/* Contexts that apply to a document, most general first: those whose target
 * is the collection itself or a folder/file prefix of `path`. Returns a
 * malloc'd array of borrowed strings (free the array only). */
const char **config_contexts_for(const config *cfg, const char *collection,
                                 const char *path, size_t *n_out);

#endif
