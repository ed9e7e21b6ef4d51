/* search — run a query through the channels and fuse them.
 *
 * Channels (each yields a ranked list of notes):
 *   bm25   FTS5 BM25 over chunks (heading column weighted above body); a note
 *          ranks by its best chunk, which also anchors the result. Its score
 *          is multiplied by the link-graph prior 1 + g * log10(1 + in-degree)
 *          before ranking, so links only reorder notes whose keyword
 *          evidence is within a few percent;
 *   title  title / alias / file-name match, ranked by how much of the query
 *          the name covers, exact matches first.
 * Equal channel scores share a rank: the best rank of their tie group
 * (1, 1, 3), so row order never decides between them.
 * Fusion (search/fusion.h): weighted reciprocal rank fusion of the keyword
 * channels, normalised so that a note ranked first by every channel scores
 * 1.0; when the vector channel ran, a score fusion of the channels' scores
 * standardised per query, with a per-query vector confidence. A
 * note known to be in another language than the query's is divided by
 * (1 + lang_bonus): a tie-breaker between languages, not a filter.
 * Translations of one note (search/group.h) are then one result: the copy
 * in the query's language, ranked where the group's best copy was, with
 * the others in also_in.
 *   vector exact int8 top-k over the chunk embeddings of the active model
 *          (vec/vec.h): a note ranks by its best chunk (cosine similarity);
 *          runs when opts.model is set and the index holds its vectors.
 *          Only notes above the model's noise floor in this index are
 *          offered (a nonsense query finds none), and a query whose vector
 *          is zero (no word of it known to the model) has no vector channel
 *          at all (SEARCH_VEC_BLANK); with no note above the floor the
 *          keyword channels are fused alone, as without a model.
 *   translation  the query translated with the Chinese-English dictionary
 *          (xlate/xlate.h: Chinese words -> English terms, English words
 *          and two-word phrases -> Chinese words) run as a BM25 list of its
 *          own. Its weight w (5) falls as the original query's best chunk
 *          in the query's own script covers more of the query's words
 *          (strong same-language evidence): w * (1 - coverage)^2, below
 *          bm25's from a coverage of 0.55 on, 0 at 1. A note that only this
 *          channel found (no bm25, no title rank) is marked via_translation.
 *          Off with opts.no_translate, when the dictionary is missing or
 *          damaged (one warning), or when no note is in the language the
 *          query would become (xlate_state); search/ch_xlate.c.
 * With vector_only (vsearch) the score is the cosine similarity.
 *
 * Each channel is a file of its own (search/ch_*.c) behind one interface,
 * search_channel in search/search_int.h, which also says how to add one:
 * a new file and a row in search.c's channels[] table.
 *
 * The caller owns the search_results and frees it with search_results_free();
 * every string in it is owned by it, the context lines included (copies of
 * the config's, so results outlive the config they came from: a daemon
 * reloads its config while answers are out). */
#ifndef TROVE_SEARCH_H
#define TROVE_SEARCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "embed/embed.h"
#include "store/store.h"

enum { SEARCH_CH_BM25, SEARCH_CH_TITLE, SEARCH_CH_VECTOR, SEARCH_CH_XLATE, SEARCH_N_CHANNELS };

extern const char *const search_channel_names[SEARCH_N_CHANNELS];

/* Why a SEARCH_VEC_BLANK query had no vector channel, for the front ends. */
extern const char search_vec_blank_why[];

enum { SEARCH_VEC_SCAN_EXACT, SEARCH_VEC_SCAN_TWO_STAGE, SEARCH_VEC_SCAN_AUTO };
/* (named as config `vector_scan:` and --vector-scan take them: config.h) */
#define SEARCH_VEC_SCAN_AUTO_ROWS 250000

typedef struct search_opts {
    const char *query;
    const char *const *collections;  /* restrict to these names (OR) */
    size_t n_collections;
    const char *folder;              /* path prefix inside a collection */
    const char *path_prefix;         /* raw string prefix of the path (not a folder) */
    const char *const *doc_refs;     /* only these notes, each "COLLECTION/PATH" (OR) */
    size_t n_doc_refs;
    /* The agent boundary (store/store.h, api.h api_set_boundary): notes
     * these hide are left out of every channel, translation and passage.
     * hide_globs: config `mcp: exclude:` one a line; hide_key: the private
     * flag (lower case); NULL: none. */
    const char *hide_globs, *hide_key;
    const char *heading_contains;    /* passages whose heading path contains this (ASCII
                                        case-insensitive): notes with such a section,
                                        each anchored (and its passages chosen) there */
    const char *const *where;        /* frontmatter conditions (search/where.h), all hold */
    size_t n_where;
    const char *since, *until;       /* bounds on the note's date (text/date.h
                                        date_parse_bound, search/meta.h); NULL: none */
    double recency_days;             /* > 0: the recency prior with this half-life */
    int recent;                      /* front ends: 1 --recent, 0 --no-recent (api_opts
                                        turns it into recency_days) */
    size_t passages;                 /* > 1: up to this many passages per result */
    const char *const *tags;         /* notes must carry all of them */
    size_t n_tags;
    const char *const *langs;        /* notes in one of these languages (OR; normalised
                                        codes, text/transl.h: detected or by folder) */
    size_t n_langs;
    const char *const *prefer_langs; /* the reader's languages, first preferred (config
                                        `languages:`): decide ambiguous queries, and
                                        which copy of a translated note is shown */
    size_t n_prefer_langs;
    int each_translation;            /* every copy of a translated note a result of its own */
    double min_score;
    size_t limit;                    /* 0 = no limit (--all) */
    double weights[SEARCH_N_CHANNELS];
    double graph_weight;             /* g of the in-degree prior (0 = off) */
    double lang_bonus;               /* query-language preference (0 = off) */
    int rrf_k;
    int with_snippet;
    embed_model *model;              /* query embedder for the vector channel; NULL: off */
    /* Held around the query's embedding when `model` is shared with other
     * threads (the daemon's api_models); NULL: the caller's alone. */
    pthread_mutex_t *model_lock;
    /* A query vector given instead of embedding `query` (trove similar: a
     * note's own vectors, search/similar.h): vec_dim floats in the space of
     * the index's model vec_model_id; the vector channel runs without
     * `model`. NULL: none. */
    const float *query_vec;
    int64_t vec_model_id;
    int vec_dim;
    int vector_only;                 /* vsearch: the vector channel alone, score = cosine */
    int no_translate;                /* no translation channel (--no-translate, config
                                        `translate: false`) */
    int vec_threads;                 /* scan threads; <= 0: every CPU */
    /* How the vector channel scans: SEARCH_VEC_SCAN_EXACT every vector;
     * _TWO_STAGE 2-bit sketches first, then vec_candidates x the channel's
     * depth nearest of them exactly (vec.h, vec_topk_two_stage: an
     * approximation), on the segments that have sketches (a resident
     * process's all: search/vcache.h; a cold search's those whose sidecar
     * carries them, store_vside.h); _AUTO two-stage from
     * SEARCH_VEC_SCAN_AUTO_ROWS vectors of the model up. */
    int vec_scan;
    int vec_candidates;
    /* Segments kept across searches by a resident process (search/vcache.h,
     * lent by api_models); NULL: each search reads them (the CLI). */
    struct vcache *vec_cache;
    /* Workers lent by a resident process (util/pool.h, api_models): the
     * vector scan runs on them while the keyword channels read the index;
     * NULL: one after the other, the scan's threads started per search. */
    struct pool *pool;
    /* The terms of the texts the title channel reads (names, notes'
     * openings), kept by a resident process (text/tokmemo.h, one per api
     * handle); NULL: tokenized per search (the CLI). */
    struct tokmemo *tok_memo;
} search_opts;

/* The filter fields of src (collections, folder, path_prefix, doc_refs,
 * heading_contains, where, since, until, tags, langs) into dst, borrowed;
 * dst's other fields are left alone (trove similar filters its candidates
 * as a search does). */
void search_opts_filters(search_opts *dst, const search_opts *src);

/* search_run takes every field as given: defaults, the config's values and
 * bounds are the api's (api_search_opt_table in api/api_opts.c). */

/* What the translation channel did, for --explain. */
typedef enum search_xlate_state {
    SEARCH_XLATE_OFF = 0,  /* switched off (--no-translate, translate: false), or vsearch */
    SEARCH_XLATE_NODICT,   /* the dictionary is missing or damaged (warned once) */
    SEARCH_XLATE_NONE,     /* no word of the query is in the dictionary */
    SEARCH_XLATE_USED,     /* ran: xlate holds the translated words */
    SEARCH_XLATE_OTHER,    /* the query is in another language than Chinese or English */
    SEARCH_XLATE_TRANSLATED, /* the vault holds translations of its notes (group.h) */
    SEARCH_XLATE_NO_TARGET, /* no note is in the language the query would become */
} search_xlate_state;

extern const char *const search_xlate_state_names[];

/* What the vector channel did, for the front end to tell the user. */
typedef enum search_vec_state {
    SEARCH_VEC_OFF = 0,   /* no model, or its weight is 0 */
    SEARCH_VEC_USED,      /* ran */
    SEARCH_VEC_NONE,      /* a model, but the index has no vector of it */
    SEARCH_VEC_BLANK,     /* the query's vector is zero (no word of it is in the
                             model's vocabulary): nothing to compare, no channel */
} search_vec_state;

typedef struct search_channel_hit {
    int rank;        /* 1-based, 0 = not found by this channel */
    double score;    /* the channel's own score (bm25: positive, larger better) */
    double z;        /* hybrid fusion: the score standardised in its list (0: RRF) */
    double vote;     /* what the channel added to the note's score (normalised) */
} search_channel_hit;

/* What the fusion did for this query (search/fusion.h), for --explain. */
/* NONE: vsearch (the score is the cosine); RRF: keyword channels; Z: hybrid */
typedef enum search_fusion_method {
    SEARCH_FUSION_NONE = 0, SEARCH_FUSION_RRF, SEARCH_FUSION_Z
} search_fusion_method;

typedef struct search_fusion {
    search_fusion_method method;
    double weight[SEARCH_N_CHANNELS];   /* weight applied for this query */
    double mean[SEARCH_N_CHANNELS];     /* FUSION_Z: mean and sd of the channel's */
    double sd[SEARCH_N_CHANNELS];       /* top scores, over n of them */
    int n[SEARCH_N_CHANNELS];
    double certainty;                   /* FUSION_Z: bm25's largest softmax(z) */
    double agreement;                   /* vector support of bm25's sure notes, [0, 1] */
    double vector_confidence;           /* 1 - certainty * (1 - agreement) */
    double xlate_certainty;             /* FUSION_Z: bm25's largest softmax(z) on a note in the query's script */
    double xlate_confidence;            /* translated list without spread: 1 - xlate_certainty, else 1 */
} search_fusion;

/* Another copy of a result in another language (search/group.h). */
typedef struct search_alt {
    char lang[16];       /* its language: the folder's code, else the detected one, or "" */
    char docid[9];
    char *path;          /* relative to the result's collection */
} search_alt;

/* One passage of a result (--passages): a chunk of the note. */
typedef struct search_passage {
    char **heading_path;
    size_t n_heading_path;
    int line_start, line_end;
    int64_t start_byte, end_byte;
    double score;        /* its BM25 score in the note (0: no query word in it) */
    char *snippet;
} search_passage;

typedef struct search_result {
    int64_t doc_id;
    char docid[9];
    char *collection;
    char *root;          /* collection folder */
    char *path;          /* relative to root */
    char *title;
    char **heading_path; /* of the anchoring chunk */
    size_t n_heading_path;
    int line_start, line_end;
    int64_t start_byte, end_byte;
    double score;
    char *snippet;       /* one passage with matches marked by \x02..\x03 */
    char **context;      /* the config's context lines for the note (copies) */
    size_t n_context;
    char **tags;
    size_t n_tags;
    int in_degree;
    double prior;        /* link-graph factor applied to the bm25 score (>= 1) */
    char lang[8];        /* the note's language (ISO 639-1), "" undetermined */
    int via_translation; /* found only through the translated query */
    search_channel_hit channel[SEARCH_N_CHANNELS];
    search_alt *also_in; /* its translations, one result with it, by language */
    size_t n_also_in;
    double date;         /* the note's date: days since 1970-01-01 UTC (search/meta.h) */
    char *date_source;   /* "frontmatter:KEY", "filename" or "mtime" */
    double recency;      /* the recency factor the score was multiplied by (1: off) */
    search_passage *passages;   /* opts.passages > 1: best first, [0] the anchor above */
    size_t n_passages;
    char *body;          /* whole note from disk when the caller asked (api_search
                            with_body), else NULL; freed with the results */
    size_t body_len;
} search_result;

typedef struct search_results {
    search_result *items;
    size_t n;
    char *fts;           /* the FTS5 expression used (for --explain) */
    search_vec_state vec_state;
    char **vec_missing;  /* collections searched that have no vector of the model */
    size_t n_vec_missing;
    char *vec_error;     /* why the vector channel could not run (model unusable), or NULL */
    /* The model's noise floor in this index (store_vec_floor_get): the vector
     * channel offered only notes more similar to the query than this.
     * vec_floor_known 0: none stored (embedded before floors; `trove embed`
     * estimates it), and then only the query's own vector decides. */
    int vec_floor_known;
    double vec_floor;
    /* Hybrid: how far the channel's best note stood above the floor, in
     * [0, 1] (search.c); the vector weight was multiplied by it. */
    double vec_strength;
    char lang[8];        /* the query's language as decided, "" undetermined */
    search_xlate_state xlate_state;
    char *xlate;         /* the translated words ("SOURCE=TRANSLATION ..."), or NULL */
    double xlate_coverage; /* same-language evidence: the share of the query's words in its best same-script chunk, or a same-script title's match if higher */
    search_fusion fusion;
} search_results;

trove_err search_run(store *st, const config *cfg, const search_opts *opts, search_results *out);
void search_results_free(search_results *r);
/* One result's strings (the results array itself is not touched). */
void search_result_clear(search_result *r);
void search_alts_free(search_alt *a, size_t n);
void search_passages_free(search_passage *p, size_t n);

#endif
