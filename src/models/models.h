/* models — where embedding models live, which one is active, and how to get
 * them: the curated catalogue behind `trove model list`, the resolver every
 * command that embeds goes through, and the plan `trove model pull` executes.
 *
 * Storage: $XDG_DATA_HOME/trove/models (else ~/.local/share/trove/models).
 * A GGUF model is one file there; a model2vec model is a folder holding
 * model.safetensors, tokenizer.json and config.json.
 *
 * A model "spec" (config.yaml `embed_model:`/`rerank_model:`, $TROVE_EMBED_MODEL,
 * $TROVE_RERANK_MODEL, --model, --reranker) is one of: a path to a GGUF file
 * or a model2vec folder (anything with a '/': "./x", "~/m/x.gguf", "/abs";
 * also ".", ".." and "~"); a catalogue name ("potion-multilingual-128M",
 * case-insensitive), found only in the models folder; or the name of a file
 * or folder inside the models folder (what `trove model pull hf:...` or URL
 * put there). A bare name is never looked up in the current folder. A
 * relative path in config.yaml is relative to the folder of config.yaml;
 * one from a flag or the environment, to the current folder.
 *
 * The catalogue is static data (never freed). Every char* a function returns
 * through an out-parameter is malloc'd and owned by the caller; structs with
 * owned strings have a matching *_free(). */
#ifndef TROVE_MODELS_H
#define TROVE_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/err.h"

typedef enum models_kind { MODELS_EMBED = 0, MODELS_RERANK = 1 } models_kind;
typedef enum models_format { MODELS_GGUF = 0, MODELS_MODEL2VEC = 1 } models_format;

typedef struct models_file {
    const char *name;     /* file name in the hub repository */
    int64_t size;         /* bytes; -1 when not known */
    const char *sha256;   /* lowercase hex; NULL when not known */
} models_file;

typedef struct models_entry {
    const char *name;       /* short name: `trove model pull NAME` */
    models_kind kind;
    models_format format;
    const char *repo;       /* "ORG/REPO" on the Hugging Face hub */
    const char *revision;   /* pinned commit (or "main") */
    int dim;                /* output dimensions */
    const char *languages;
    const char *license;
    const char *note;       /* one line: what it is for */
    size_t n_files;
    models_file files[3];   /* GGUF: one file; model2vec: config, tokenizer, weights */
} models_entry;

/* The catalogue, in display order; *n receives its length. */
const models_entry *models_catalog(size_t *n);
/* The default embedding model (`trove model pull` with no NAME). */
const models_entry *models_default(void);
/* Catalogue entry by name (case-insensitive), or NULL. */
const models_entry *models_find(const char *name);
/* Sum of the entry's file sizes; -1 if any is unknown. */
int64_t models_entry_size(const models_entry *e);

/* Folder models are stored in (not created). Caller frees. */
char *models_dir(void);
/* Where an entry is installed: the GGUF file or the model2vec folder inside
 * models_dir() (whether or not it exists). Caller frees. */
char *models_entry_path(const models_entry *e);
/* Is every file of the entry present? */
int models_entry_installed(const models_entry *e);

/* Where the active model came from. */
typedef enum models_source {
    MODELS_SRC_NONE = 0,  /* nothing configured */
    MODELS_SRC_FLAG,      /* --model */
    MODELS_SRC_ENV,       /* $TROVE_EMBED_MODEL */
    MODELS_SRC_CONFIG,    /* embed_model: in config.yaml */
} models_source;

typedef struct models_choice {
    char *spec;                  /* as written by the user; NULL if none */
    char *path;                  /* absolute GGUF file or model2vec folder */
    char *name;                  /* catalogue name, else the path's last segment */
    const models_entry *entry;   /* catalogue entry, or NULL */
    models_source source;
} models_choice;

/* The active embedding model. Precedence: `override` (the --model flag; NULL
 * or "" when absent), then $TROVE_EMBED_MODEL, then cfg->embed_model (cfg may
 * be NULL). With none of them set, returns TROVE_OK and *out has path NULL
 * and source MODELS_SRC_NONE: semantic search is simply off. Errors:
 * TROVE_ENOENT when the spec names nothing that exists (a catalogue model
 * not pulled yet says which `trove model pull` to run), TROVE_EINVAL for a
 * folder that is not a model2vec model. Free *out with models_choice_free()
 * (also after an error). */
trove_err models_resolve_choice(const config *cfg, const char *override, models_choice *out);
void models_choice_free(models_choice *c);

/* The same, for callers that only need the path: *path_out is the absolute
 * path (caller frees) or NULL when no model is configured. This is what
 * `trove embed`, `vsearch` and `search` call. */
trove_err models_resolve(const config *cfg, const char *override, char **path_out);

/* Resolve one spec (no precedence, no environment; a relative path is
 * relative to the current folder). */
trove_err models_resolve_spec(const char *spec, models_choice *out);
/* Does the spec name a path (rather than a catalogue or models-folder
 * name)? */
int models_spec_is_path(const char *spec);

/* The reranker `trove query` uses, like models_resolve_choice():
 * `override` (--reranker), then $TROVE_RERANK_MODEL, then
 * cfg->rerank_model. Nothing set: TROVE_OK with path NULL. */
trove_err models_resolve_reranker(const config *cfg, const char *override, models_choice *out);

/* Name of a source for messages: "--model", "TROVE_EMBED_MODEL", ... */
const char *models_source_name(models_source s);

/* ---- pulling ---------------------------------------------------------- */

typedef struct models_item {
    char *url;
    char *dest;      /* absolute path of the file to write */
    int64_t size;    /* -1: unknown */
    char *sha256;    /* NULL: unknown */
} models_item;

typedef struct models_plan {
    char *name;                 /* what `embed_model:` may say to use it */
    char *path;                 /* the GGUF file or model2vec folder */
    const models_entry *entry;  /* catalogue entry, or NULL */
    int folder;                 /* path is a model2vec folder */
    models_item *items;
    size_t n_items;
} models_plan;

/* Turn `trove model pull SPEC` into files to fetch. SPEC is a catalogue name,
 * "hf:ORG/REPO/FILE" (one file), "hf:ORG/REPO" (a model2vec folder: its
 * model.safetensors, tokenizer.json and config.json), or an http(s) URL.
 * hf: resolves against $TROVE_HF_ENDPOINT (default https://huggingface.co)
 * as ENDPOINT/ORG/REPO/resolve/main/FILE; catalogue entries use their pinned
 * revision. sha256 (may be NULL) is the digest the user expects for a
 * single-file spec. TROVE_EUSAGE for a malformed spec. Free with
 * models_plan_free() (also after an error). */
trove_err models_plan_pull(const char *spec, const char *sha256, models_plan *out);
void models_plan_free(models_plan *p);

/* Fetch every item of the plan that is not there yet (all of them with
 * force), creating the models folder as needed; base carries the progress
 * settings (size and sha256 are taken from each item). Then models_check()
 * the result: files fetched by this call that make no model are removed.
 * A failure names every file still missing (with where to save it when
 * fetched by hand) and leaves no folder this call made empty behind;
 * TROVE_EINTR (base->stop) keeps the partial download for the next run.
 * *n_fetched (may be NULL) receives how many files were downloaded. */
struct fetch_opts;
trove_err models_pull(const models_plan *p, const struct fetch_opts *base, int force,
                      size_t *n_fetched);

/* Is `path` a model trove can load, judged by what its format needs: a file
 * must be GGUF (its "GGUF" magic and a version); a folder a model2vec model
 * (model.safetensors with a safetensors header, tokenizer.json and
 * config.json holding JSON objects). TROVE_OK, or TROVE_EINVAL (TROVE_ENOENT
 * for a missing file) with the reason and what to do instead. Reads at most
 * a few bytes of each file. `model pull` refuses what fails it, `model use`
 * too. */
trove_err models_check(const char *path);

/* Base URL of the hub, without a trailing '/'. Caller frees. */
char *models_hf_endpoint(void);

#endif
