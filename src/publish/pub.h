/* pub — trove's index as OpenSearch documents (docs/scaling.md).
 *
 * What `trove publish opensearch` sends, built here and nowhere else: the
 * index body (settings and mapping: one document per chunk with its note's
 * fields, the chunk text analysed by the vault's languages and as trove's
 * own terms, the vector as a knn_vector of the model's dimension in cosine
 * space, HNSW), the `_meta` that records what was published, the hybrid
 * search pipeline (RRF through the score-ranker processor), `_bulk` NDJSON
 * in bounded batches with stable ids ("DOCID-SEQ"), and the parser of a
 * `_bulk` response (errors flag and per-item statuses). No I/O and no SQL:
 * api/api_publish.c reads the index and sends the bodies.
 *
 * Every string returned is malloc'd and the caller's; a pub_batch owns its
 * body and offsets (pub_batch_free); a parsed response owns its items. */
#ifndef TROVE_PUB_H
#define TROVE_PUB_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_pub.h"
#include "util/buf.h"
#include "util/err.h"

/* The format of the published documents; a change that needs the index
 * re-created bumps it (a publish to an index of another format refuses). */
#define PUB_FORMAT 1

/* What the index was made for and what it holds, as recorded in its
 * mapping's _meta.trove and in our meta. */
typedef struct pub_index_info {
    int dim;                  /* vector width; 0: the index has no vectors */
    const char *model;        /* model name ("" none) */
    const char *fingerprint;  /* the vectors' model fingerprint ("" none) */
    const char *const *langs; /* language codes of the vault (for text_LANG fields) */
    size_t n_langs;
    const char *index_id;     /* meta.index_id of our index */
    int64_t snapshot;         /* the snapshot the index holds */
    int64_t missing_vectors;  /* chunks sent without their vector (not embedded yet) */
} pub_index_info;

/* The OpenSearch analyzer for a trove language code; NULL when it has no
 * built-in one (the chunk is then in `text` and `terms` only). */
const char *pub_lang_analyzer(const char *code);

/* PUT /INDEX body: settings and mappings (with _meta). */
char *pub_index_body(const pub_index_info *info);
/* PUT /INDEX/_mapping body that records info in _meta only. */
char *pub_meta_body(const pub_index_info *info);
/* PUT /_search/pipeline/NAME body: the hybrid query's lists fused by
 * reciprocal rank (k = rank_constant), keyword list weighted first. */
char *pub_pipeline_body(double keyword_weight, double vector_weight, int rank_constant);
/* The pipeline name of an index: "INDEX-hybrid". */
char *pub_pipeline_name(const char *index);
/* POST /INDEX/_delete_by_query body removing documents published before
 * `snapshot` (the stale ones after a full publish). */
char *pub_stale_body(int64_t snapshot);

/* A published chunk's _id: "DOCID-SEQ". */
void pub_chunk_id(const char *docid, int seq, char out[32]);

/* One note's chunks as documents. vecs: n_chunks rows of dim floats (row i
 * for chunk i, unit length), have[i] 0 when chunk i has no vector; both
 * NULL when dim is 0. */
typedef struct pub_doc_src {
    const store_pub_doc *doc;
    const char *date;          /* YYYY-MM-DD, NULL: none */
    const char *date_source;   /* "frontmatter:KEY", "filename", "mtime" */
    int64_t snapshot;
    int dim;
    const float *vecs;
    const unsigned char *have;
    const char *const *langs;  /* the index's text_LANG fields */
    size_t n_langs;
} pub_doc_src;

/* The _source of chunk i of s->doc (compact JSON). */
char *pub_chunk_source(const pub_doc_src *s, size_t i);

/* ---- _bulk bodies ---- */

/* One batch: NDJSON body of n actions; action i's lines are
 * body[off[i] .. off[i + 1]) and its id ids[i]. */
typedef struct pub_batch {
    tbuf body;
    size_t n, cap;
    size_t *off;               /* n + 1 entries once n > 0 */
    char **ids;
    unsigned char *is_delete;
} pub_batch;
void pub_batch_free(pub_batch *b);
/* The batch of the actions `which` (n of them) of b, in that order. */
void pub_batch_subset(const pub_batch *b, const size_t *which, size_t n, pub_batch *out);

typedef trove_err (*pub_flush_fn)(void *ctx, pub_batch *b);

/* Fills batches and hands each to flush when the next action would pass
 * max_bytes or max_actions (a single action larger than max_bytes goes
 * alone). flush may keep nothing of the batch after it returns. */
typedef struct pub_bulk {
    size_t max_bytes, max_actions;
    pub_flush_fn flush;
    void *ctx;
    pub_batch cur;
    size_t batches, actions;   /* handed to flush so far */
} pub_bulk;
#define PUB_BULK_MAX_BYTES (5u << 20)
#define PUB_BULK_MAX_ACTIONS 500
void pub_bulk_init(pub_bulk *w, size_t max_bytes, size_t max_actions, pub_flush_fn flush,
                   void *ctx);
trove_err pub_bulk_index(pub_bulk *w, const char *id, const char *source);
trove_err pub_bulk_delete(pub_bulk *w, const char *id);
/* Flush what is left; frees the writer's batch either way. */
trove_err pub_bulk_finish(pub_bulk *w);

/* ---- _bulk responses ---- */

typedef struct pub_bulk_item {
    char op[8];        /* index, create, update, delete */
    int status;        /* HTTP status of the item */
    char *id;          /* "" when absent */
    char *error;       /* "TYPE: REASON", NULL when none */
} pub_bulk_item;

typedef struct pub_bulk_resp {
    int errors;        /* the response's "errors" */
    pub_bulk_item *items;
    size_t n;
} pub_bulk_resp;

/* Parse a _bulk response ({"took", "errors", "items": [{OP: {...}}]}).
 * TROVE_EPARSE (saying what is wrong) for anything else. */
trove_err pub_bulk_response_parse(const char *body, size_t len, pub_bulk_resp *out);
void pub_bulk_resp_free(pub_bulk_resp *r);
/* An item that needs nothing more: 2xx, or a delete of a missing id (404). */
int pub_item_done(const pub_bulk_item *it);
/* A status worth sending again (429 too many requests, 502/503/504). */
int pub_status_retryable(int status);

/* ---- what a published index says about itself ---- */

/* _meta.trove of a GET /INDEX/_mapping answer ({NAME: {"mappings": ...}}).
 * is_trove 0: an index trove did not make (no _meta.trove). */
typedef struct pub_meta {
    int is_trove;
    int format, dim;
    int64_t snapshot, missing_vectors;
    char *index_id, *fingerprint, *model;
} pub_meta;
trove_err pub_meta_parse(const char *body, size_t len, pub_meta *out);
void pub_meta_free(pub_meta *m);

/* ---- remote search ---- */

/* One frontmatter condition as a filter: the field name (lower case), the
 * operator and its values (as search/where.h parsed them). */
typedef struct pub_where {
    const char *key;
    int op;                    /* where_op */
    const char *const *values;
    size_t n_values;
} pub_where;

typedef struct pub_search_req {
    const char *query;         /* as typed, for the title */
    const char *terms;         /* trove's query terms, space-separated ("" none) */
    const float *vec;          /* dim floats, NULL: no vector list */
    int dim;
    int vector_only;
    size_t k;                  /* hits asked for */
    const char *const *collections;
    size_t n_collections;
    const char *folder;        /* path prefix ("a/b": a/b/...) */
    const char *const *tags;   /* all of them */
    size_t n_tags;
    const char *const *langs;  /* one of them */
    size_t n_langs;
    const char *since, *until; /* YYYY-MM-DD (until inclusive), NULL: none */
    const pub_where *where;
    size_t n_where;
} pub_search_req;

/* POST /INDEX/_search body: a hybrid query (the keyword list on `terms`
 * and `title`, the knn list on `embedding`, each with the filters) when
 * there is a vector, else the keyword list alone; TROVE_EUNSUPPORTED for a
 * condition that has no faithful filter there (order comparisons: the
 * fields are keywords). *hybrid says whether the pipeline must be named. */
trove_err pub_search_body(const pub_search_req *rq, char **body, int *hybrid);

/* One hit of a search answer: the chunk document's fields. */
typedef struct pub_hit {
    char *id;
    double score;
    char *docid, *collection, *path, *title, *lang, *text, *date, *date_source;
    char **heading;
    size_t n_heading;
    char **tags;
    size_t n_tags;
    int line_start, line_end, in_degree;
    int64_t start_byte, end_byte;
} pub_hit;

/* {"hits": {"hits": [{"_id", "_score", "_source": {...}}]}}; hits lacking
 * docid, collection or path are refused (TROVE_EPARSE). */
trove_err pub_search_parse(const char *body, size_t len, pub_hit **hits, size_t *n);
void pub_hits_free(pub_hit *hits, size_t n);

/* The retry wait in seconds before try `attempt` (1, 2, ...): base_s
 * doubling, at most max_s; a server's Retry-After (>= 0) wins, capped at
 * max_s too. */
double pub_backoff(int attempt, double base_s, double max_s, long retry_after);

#endif
