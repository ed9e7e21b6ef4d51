/* similar — notes like a given note (`trove similar`).
 *
 * Two views of the note, fused by search_run() like any query:
 *   terms   its distinctive terms: every token of its chunks weighed by
 *           (1 + ln tf) * idf over the index's chunks (FTS5 counting the
 *           chunks that hold it, read up to 2 % of them: a term that common
 *           says little of a topic and is left out, as are stopwords,
 *           single characters, numbers and terms no other chunk holds); the
 *           best SIMILAR_TERMS, OR-ed, are the keyword channel's query (the
 *           title channel is off);
 *   vector  the mean of its chunk vectors (store_vec_doc_mean) as the query
 *           vector, when the index holds vectors of a model for it: the
 *           model asked for, else the one with the most vectors. No model
 *           is opened: the stored vectors are all it needs.
 * The note itself and its translations (same collection and docs.tkey) are
 * never results; o->filter narrows the rest as it narrows a search. The link prior and language preference are off: a hub is
 * not more like a note than any other.
 *
 * Results are a search_results (owned by the caller, search_results_free);
 * the similar_info strings are owned by the info (similar_info_free). */
#ifndef TROVE_SIMILAR_H
#define TROVE_SIMILAR_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "search/search.h"
#include "store/store.h"

#define SIMILAR_TERMS 20

typedef struct similar_opts {
    int64_t doc_id;                  /* the note */
    size_t limit;                    /* results (0: SIMILAR default 10) */
    /* Which notes may be results: the filter fields of a search_opts
     * (search_opts_filters: collections, folder, path_prefix, doc_refs,
     * heading_contains, where, since, until, tags, langs; langs normalised),
     * applied to the candidates as search_run applies them; the note and its
     * translations stay out whatever they say. Its other fields are not
     * read. NULL: every note. */
    const search_opts *filter;
    double bm25_weight, vector_weight;   /* < 0: the defaults (1 and 1) */
    /* The model whose vectors to use, by fingerprint; NULL: the index's model
     * with the most vectors. */
    const char *vec_fingerprint;
    struct vcache *vec_cache;        /* as search_opts.vec_cache */
    struct pool *pool;               /* as search_opts.pool */
    int vec_threads;
    int rrf_k;                       /* k of the fusion (the api's default) */
    const char *hide_globs, *hide_key;   /* the agent boundary, as search_opts' */
} similar_opts;

void similar_opts_init(similar_opts *o);

typedef struct similar_info {
    char **terms;           /* the distinctive terms, best first (as written) */
    double *term_weights;
    size_t n_terms;
    char **shared;          /* per result: the terms it holds, space-separated */
    size_t n_shared;
    char *vec_model;        /* the model whose vectors were compared, NULL: none */
    size_t vec_chunks;      /* the note's chunks with a vector of it */
} similar_info;

trove_err similar_run(store *st, const config *cfg, const similar_opts *o, search_results *out,
                      similar_info *info);
void similar_info_free(similar_info *info);

#endif
