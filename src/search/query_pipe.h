/* query_pipe — the pure stages of `trove query` (the best-answer path):
 * deterministic query expansion, weighted reciprocal rank fusion of many
 * ranked lists (which lists: qp_plan_lists) with a top-rank bonus, the
 * lexical re-scorer used when no reranker model is configured (and the
 * passage window handed to one that is), the reranker's per-query trust,
 * the position-aware, title-gated blend of retrieval and reranker, and the
 * search floor.
 *
 * The orchestration (running the channels for every variant, reading note
 * texts, calling the reranker) lives in api/api_query.c; everything here is
 * deterministic arithmetic over caller-owned arrays, unit-tested on small
 * inputs (tests/unit/test_query_pipe.c).
 *
 * Ownership: functions returning char * hand a malloc'd string to the
 * caller; qp_terms_free() releases a qp_terms. */
#ifndef TROVE_QUERY_PIPE_H
#define TROVE_QUERY_PIPE_H

#include <stddef.h>
#include <stdint.h>

/* RRF constant and the bonus of a first / second-or-third place in any list. */
#define QP_RRF_K 60
#define QP_BONUS_FIRST 0.05
#define QP_BONUS_TOP3 0.02
/* Fused candidates kept; reranked by default; words in a reranker window. */
#define QP_KEEP 30
#define QP_RERANK_DEFAULT 20
/* Words of the best keyword hits added by pseudo-relevance feedback. */
#define QP_PRF_TERMS 8
#define QP_WINDOW_TOKENS 256
/* Weight of the original query's lists against an expansion's. */
#define QP_ORIGINAL_WEIGHT 2.0
/* At most one variant of each kind: the deterministic three, and the
 * generative model's first lex:, vec: and hyde: lines (search/qexpand.h). */
#define QP_MAX_VARIANTS 6
#define QP_MAX_LISTS 12

typedef enum qp_variant_kind {
    QP_VAR_ORIGINAL, QP_VAR_KEYWORDS, QP_VAR_PRF, QP_VAR_LEX, QP_VAR_VEC, QP_VAR_HYDE,
} qp_variant_kind;

/* "original", "keywords", "prf", "lex", "vec", "hyde" */
extern const char *const qp_variant_names[QP_MAX_VARIANTS];

typedef struct qp_variant {
    qp_variant_kind kind;
    char *text;          /* owned */
    double weight;
} qp_variant;

/* One ranked list fed to the fusion: a channel (SEARCH_CH_*) run for one
 * variant, or QP_LIST_HYBRID: that variant's search's own fused order. */
typedef struct qp_list {
    int variant;         /* index into the variants */
    int channel;
    double weight;
} qp_list;

/* The list "channel" of a variant's hybrid search as a whole (== the
 * number of search channels: one past the last SEARCH_CH_*). */
#define QP_LIST_HYBRID 4

/* "bm25", "title", "vector", "translation" or "hybrid"; "?" for anything else. */
const char *qp_list_channel_name(int channel);

/* What one variant's search offers the fusion. */
typedef struct qp_source {
    int keywords;        /* its keyword channel ran (an FTS expression) */
    int same_keywords;   /* ... with the original's expression: a copy of its list */
    int vector;          /* its vector channel ran */
    double xlate;        /* its translation list's weight against its bm25's
                            (search's, for this query); 0: no list */
} qp_source;

/* The lists fused for the variants v[0..n) (v[0] the original; src[i] what
 * variant i's search offers), into out (room for QP_MAX_LISTS); returns
 * how many. Keyword channels only: each variant's bm25 list (a copy of the
 * original's counted once) and the original's title list, at the
 * variant's weight times bm25_scale / title_scale (the user's weights
 * against the defaults; 0 drops the list). When a variant's vector channel
 * ran, its hybrid order (QP_LIST_HYBRID) stands for its bm25 and vector
 * lists: search already weighed the vector there by its per-query
 * confidence, and a raw vector list voting like a keyword list is what
 * made `query` worse than `search` with a weak model (docs/performance.md).
 * No list is ever a bare vector list. */
size_t qp_plan_lists(const qp_variant *v, size_t n, const qp_source *src, double bm25_scale,
                     double title_scale, qp_list *out);

/* A candidate note across the lists; filled in by the caller (rank, quality),
 * then by qp_rrf() and qp_blend(). */
typedef struct qp_cand {
    int64_t doc_id;
    int rank[QP_MAX_LISTS];      /* 1-based rank in list i, 0 = absent */
    double quality[QP_MAX_LISTS];/* vote scale in list i (title match quality; 1 else) */
    double rrf;                  /* fused score, bonus included */
    double bonus;
    int rrf_rank;                /* 1-based position after fusion */
    int reranked;                /* 1: rerank_raw is set */
    double rerank_raw;           /* reranker output (logit, P(yes) or lexical score) */
    double rerank_norm;          /* min-max over the reranked candidates */
    double retrieval_norm;       /* min-max of rrf over the reranked candidates */
    double w_retrieval;          /* the blend's retrieval share */
    int title_protected;         /* the title channel's best match */
    double final;                /* blended score, the result's score */
    int search_rank;             /* position in `search`'s own list, 0 = not in it */
    size_t src;                  /* caller's bookkeeping (where the result came from) */
} qp_cand;

/* ---- expansion ---- */

/* The query without stopwords and question words ("how do I extract a tar
 * archive" -> "extract tar archive"); NULL when that leaves nothing or
 * drops nothing. Quoted phrases, prefixes and exclusions are kept as typed.
 * (Its keyword list often equals the original's, whose FTS expression drops
 * stopwords too: the caller then counts that list once; the variant still
 * differs for the vector channel.) */
char *qp_keyword_form(const char *query);

/* Query terms as the index tokenizer stems them (stopwords dropped when
 * others remain), deduplicated, in query order. */
typedef struct qp_terms {
    char **items;
    size_t n;
} qp_terms;
void qp_terms_build(const char *query, qp_terms *out);
void qp_terms_free(qp_terms *t);

/* Pseudo-relevance feedback (RM3-style): the query plus up to max_terms
 * words of the feedback notes docs[0..n_fb) (best first, fb_weight[i] their
 * retrieval weight), each scored sum_d w_d * tf(t,d) / |d| times
 * log(1 + N / df(t)) over the n_pool notes docs[0..n_pool) (n_pool >= n_fb),
 * so words every candidate holds count little. A word needs to occur in two
 * feedback notes when there are three or more. NULL when no word qualifies. */
char *qp_prf_query(const char *query, const char *const *docs, const size_t *lens,
                   const double *fb_weight, size_t n_fb, size_t n_pool, size_t max_terms);

/* ---- fusion ---- */

/* Weighted RRF: rrf = sum_i w_i * q_i / (k + rank_i) + bonus (+QP_BONUS_FIRST
 * for a #1 in any list, else +QP_BONUS_TOP3 for a #2-3). Sorts c by rrf
 * (ties: doc_id) and sets rrf_rank. */
void qp_rrf(qp_cand *c, size_t n, const qp_list *lists, size_t n_lists, int k);

/* ---- lexical re-scorer and reranker windows ---- */

typedef struct qp_passage {
    double coverage;     /* weighted share of query terms in the best passage */
    double proximity;    /* distinct terms / token span of their matches there */
    double score;        /* 0.7 coverage + 0.3 coverage * proximity, in [0, 1] */
    size_t start, end;   /* bytes of the window around the best passage */
    uint64_t present;    /* bit i: term i (< 64) occurs anywhere in the text */
} qp_passage;

/* Score text against the terms (weights: per term, NULL = 1 each): the best
 * passage is the run of QP_PASSAGE_TOKENS tokens holding the most term
 * weight; start..end is a window of about window_tokens words centred on it
 * (the whole text when it is shorter). */
#define QP_PASSAGE_TOKENS 48
void qp_passage_score(const qp_terms *t, const double *weights, const char *text, size_t len,
                      size_t window_tokens, qp_passage *out);

/* Term weights from the candidates' own texts: w_i = log(1 + n / df_i),
 * df_i the passages whose `present` has bit i (df 0 counts as 1). */
void qp_term_weights(const qp_passage *ps, size_t n, size_t n_terms, double *weights);

/* ---- blend ---- */

/* Retrieval share of the blend by fused position: ranks 1-3 0.75, 4-10 0.6,
 * 11+ 0.4. */
double qp_retrieval_share(int rrf_rank);

/* The lexical re-scorer is weaker evidence than a cross-encoder: its share
 * of the blend is this fraction of the table's (docs/performance.md). */
#define QP_LEXICAL_SHARE 0.5

/* c sorted by rrf (qp_rrf). The reranked candidates (reranked = 1) get
 * final = w * retrieval_norm + (1 - w) * rerank_norm, retrieval_norm =
 * rrf / the best rrf, rerank_norm min-max over the reranked set; w = 1 -
 * (1 - qp_retrieval_share(rrf_rank)) * rerank_share (a reranker model's
 * qp_rerank_trust(), QP_LEXICAL_SHARE for the lexical re-scorer); the candidate at
 * index `protect` (the title channel's best match; -1 none) is blended
 * with at least the top rank's retrieval share. The others keep their
 * fused order below every reranked one. Sorts c by final (ties: rrf_rank). */
void qp_blend(qp_cand *c, size_t n, long protect, double rerank_share);

/* How far the reranker's scores of the reranked candidates c[0..n) earn
 * their share of the blend for this query, in [0, 1]: the mean of their
 * rank correlations (Spearman) with the fused retrieval score and with the
 * lexical passage scores lexical[0..n) of the same windows the reranker
 * read (left out when those are all equal: no evidence), less the
 * correlation chance gives (one standard error, 1 / sqrt(n - 1)), scaled
 * so that full agreement is 1 and clipped to [0, 1]. A reranker that reads
 * the query agrees with at least one of the two on most queries; one that
 * knows nothing (a random-weight model, a model of another language)
 * correlates with neither beyond chance and then barely moves the order.
 * 0 for fewer than three candidates (no evidence either way: the fused
 * order stands). */
double qp_rerank_trust(const qp_cand *c, size_t n, const double *lexical);

/* The search floor: after qp_blend, the first `floor` positions hold every
 * candidate with 1 <= search_rank <= floor (what `trove search` shows in its
 * top `floor`), in blend order, and the best of the others fill the rest;
 * below, blend order. Scores are clamped so they never rise down the list.
 * So with it, a note `search` ranks in its top `floor` is never pushed
 * out of query's: expansion and re-scoring reorder that top and decide what
 * fills it only where search has fewer. */
#define QP_SEARCH_FLOOR 10
void qp_floor(qp_cand *c, size_t n, int floor);

#endif
