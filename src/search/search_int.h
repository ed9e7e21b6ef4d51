/* search_int — what search.c and its channels (search/ch_*.c) share: the
 * candidate set every channel adds to, the user's filters as SQL, the
 * statement helpers, and the channel interface. Internal to search/.
 *
 * A channel (search_channel) is one file, ch_NAME.c, exporting one const
 * search_channel; search.c lists it, in run order, in its `channels[]`
 * table. search_run() opens one read transaction, then for each row whose
 * wanted() says yes calls run(), which adds the notes it finds to the
 * candidate set (search_cand_get) with its rank and score in cand.ch[]
 * (a list of its own for fusion: a SEARCH_CH_* index, search.h) or
 * changes what is there (the bigram re-scoring of bm25, the link prior).
 * A before() hook runs first, outside the read transaction: work that may
 * wait on a lock (embedding the query under the model's lock) must not pin
 * the WAL meanwhile. Channels read the store through prepare()/step_row()
 * (statements from the store's cache; a failed step is an error, never
 * "no more rows") and take the filters' SQL (search_filter) as a suffix of
 * their own or as a bitmap (search_filter_allowed).
 *
 * Adding a channel (docs/architecture.md, "Search channels"):
 *   1. src/search/ch_NAME.c with `const search_channel search_ch_NAME`;
 *   2. its declaration below and its row in search.c's channels[];
 *   3. a list of its own for fusion: a SEARCH_CH_NAME before
 *      SEARCH_N_CHANNELS and its name in search_channel_names (search.h,
 *      search.c), and a default weight row in api_search_opt_table
 *      (api/api_opts.c) that wanted() reads from ctx->o->weights.
 *
 * Ownership: the candidate set owns its items; every context pointer is
 * borrowed from search_run for the length of the search. */
#ifndef TROVE_SEARCH_INT_H
#define TROVE_SEARCH_INT_H

#include <math.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "search/meta.h"
#include "search/search.h"
#include "store/store.h"
#include "store/store_nmap.h"
#include "store/store_rank.h"
#include "text/query.h"
#include "util/buf.h"

/* Chunks of a note read as its text (bigram re-scoring, the title
 * channel's look for the rest of the query). */
#define SEARCH_NOTE_CHUNKS 8
/* BM25 column weights of chunks_fts(heading, body): the bm25 channel's,
 * and the ranking of a note's passages (--passages). */
#define BM25_HEADING_WEIGHT 2.0
#define BM25_BODY_WEIGHT 1.0
#define TROVE_STR_(x) #x
#define TROVE_STR(x) TROVE_STR_(x)

/* ---- the candidate set ------------------------------------------------ */

/* A note found by at least one channel. */
typedef struct cand {
    int64_t doc_id;
    int64_t chunk_id;      /* anchoring chunk, 0 = none yet */
    int64_t vec_chunk_id;  /* the note's best chunk by the vector channel */
    int in_degree;
    int lang;              /* LANG_* of the note */
    double prior;          /* link-graph factor on the bm25 score */
    int has_bm25;          /* found by bm25, ranked once priors are known */
    int has_xlate;         /* found by the translated query (ch_xlate.c) */
    search_channel_hit ch[SEARCH_N_CHANNELS];
    double fused;
    double recency;        /* the recency factor on fused (1: off; search/meta.h) */
    search_alt *alts;      /* its translations (search/group.h), moved into the result */
    size_t n_alts;
} cand;

typedef struct cand_set {
    cand *items;
    size_t n, cap;
    size_t *slots;         /* index+1, open addressing on doc_id */
    size_t n_slots;
} cand_set;

/* The note's candidate; create: added (zeroed) when missing, else NULL.
 * Pointers into the set move when it grows. */
cand *search_cand_get(cand_set *cs, int64_t doc_id, int create);

/* front's candidates put before those of cs, in their order, front
 * emptied: cs ends as had front's channel added them first. A note in
 * both keeps what cs found and takes front's channel lists (ch[] entries
 * front ranked) and vector chunk; front's channels must set no other field. */
void search_cand_front(cand_set *cs, cand_set *front);

/* Two channel scores are equal when they differ by rounding only. */
static inline int same_score(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* The 1-based rank of item i of a list sorted best first, given the rank of
 * item i-1 and whether their scores are equal: equal scores share the best
 * rank of their group (1, 1, 3), so row order never decides between
 * equally good notes; the other channels' evidence does. */
static inline int shared_rank(size_t i, int prev_rank, int equal_to_prev)
{
    return i > 0 && equal_to_prev ? prev_rank : (int)i + 1;
}

/* What bm25 ranks by: its score times the link prior (ch_graph.c). */
static inline double bm25_key(const cand *c)
{
    return c->ch[SEARCH_CH_BM25].score * c->prior;
}

/* A merge sort of candidate pointers, a[0] first, by before(x, y) (a
 * strict total order: the callers break ties by note id, so any sort gives
 * the one order qsort gave): name(a, n) sorts, with name##_with(a, tmp, n)
 * the recursion over tmp, n / 2 + 1 pointers of scratch. The comparison is
 * inlined where qsort called a function per comparison and moved whole
 * candidates: ~0.4 M instructions of a daemon's search of ~600 candidates
 * (docs/performance.md, session 34). */
#define SEARCH_CAND_SORT(name, before)                                              \
    static void name##_with(const cand **a, const cand **tmp, size_t n)             \
    {                                                                               \
        if (n <= 16) {                                                              \
            for (size_t i = 1; i < n; i++) {                                        \
                const cand *x = a[i];                                               \
                size_t j = i;                                                       \
                for (; j > 0 && before(x, a[j - 1]); j--)                           \
                    a[j] = a[j - 1];                                                \
                a[j] = x;                                                           \
            }                                                                       \
            return;                                                                 \
        }                                                                           \
        size_t half = n / 2;                                                        \
        name##_with(a, tmp, half);                                                  \
        name##_with(a + half, tmp, n - half);                                       \
        memcpy(tmp, a, half * sizeof *a);                                           \
        size_t i = 0, j = half, o = 0;                                              \
        while (i < half && j < n)                                                   \
            a[o++] = before(a[j], tmp[i]) ? a[j++] : tmp[i++];                      \
        while (i < half)                                                            \
            a[o++] = tmp[i++];                                                      \
    }                                                                               \
    static void name(const cand **a, size_t n)                                      \
    {                                                                               \
        if (n < 2)                                                                  \
            return;                                                                 \
        const cand **tmp = xmalloc((n / 2 + 1) * sizeof *tmp);                      \
        name##_with(a, tmp, n);                                                     \
        free(tmp);                                                                  \
    }

/* ---- statements ------------------------------------------------------- */

/* The stored text of the FTS5 tables, read by row id without FTS5: its
 * content tables (FTS5's on-disk format: id, then c0, c1, ... in the
 * table's column order), a b-tree seek where `WHERE rowid = ?` on the
 * FTS5 table runs its cursor machinery (~8,000 instructions a row, the
 * title channel's names and the results' snippets: docs/performance.md,
 * session 31). chunks_fts(heading, body), titles_fts(title, aliases,
 * filename): store.c's schema. */
#define SEARCH_CHUNKS_CONTENT "chunks_fts_content"
#define SEARCH_TITLES_CONTENT "titles_fts_content"

/* Statements come from the store's cache (compiled once per connection)
 * and go back with store_stmt_put(), never sqlite3_finalize(). */
static inline trove_err prepare(store *st, const char *sql, sqlite3_stmt **s)
{
    if (!(*s = store_stmt_get(st, sql)))
        return store_fail(st, "preparing search");
    return TROVE_OK;
}

/* Every step goes through here (store_step): 1 a row, 0 no more rows, -1
 * an error, recorded in *rc. A failed step is never "no more rows": a busy
 * or damaged index is an error, not fewer results. */
static inline int step_row(store *st, sqlite3_stmt *s, const char *what, trove_err *rc)
{
    return store_step(st, s, what, rc);
}

/* ---- filters (filter.c) ----------------------------------------------- */

/* SQL conditions on `d` (docs) for the user's filters, with their values in
 * bind order. */
typedef struct search_filter {
    tbuf sql;              /* " AND ..." per filter; empty: no filter */
    const char *heading;   /* --heading: passages (chunk `c`) under a heading containing it */
    const char **binds;
    size_t n_binds, cap_binds;
    char **owned;
    size_t n_owned;
    /* The agent boundary's part of sql alone (search_opts hide_globs,
     * hide_key), with its values: a note's other-language copies are
     * listed whatever the user's filters, but never past the boundary. */
    tbuf hide;
    const char *hide_binds[2];
    size_t n_hide_binds;
    /* When every filter is a --where/--since/--until one (else NULL): the
     * same decision in C by note id (meta_note_ok), no SQL per row. */
    const meta_filter *meta_only;
    /* The index's chunk -> note and note -> date arrays, read as this
     * search needs them (store_nmap.h); owned by search_run. */
    store_nmap_reader *nmap;
} search_filter;

/* With the --where/--since/--until conditions of mf (search/meta.h). */
void search_filter_build(search_filter *f, const search_opts *o, const meta_filter *mf);
void search_filter_free(search_filter *f);
/* The filter's values bound from parameter `first` on. */
void search_filter_bind(sqlite3_stmt *s, int first, const search_filter *f);
/* Bitmap of the note ids the filters allow (NULL when there are none). */
trove_err search_filter_allowed(store *st, const search_filter *f, uint8_t **bits,
                                int64_t *n_bits);
/* The --heading condition on chunk `c`, one '?' for f->heading. */
#define SEARCH_HEADING_COND " AND instr(lower(c.heading), lower(?)) > 0"
/* Bitmap of the chunks under f->heading (NULL when there is none). */
trove_err search_filter_chunks(store *st, const search_filter *f, uint8_t **bits,
                               int64_t *n_bits);

/* ---- best rows of an FTS5 match (cand.c) ------------------------------ */

typedef struct scored {
    int64_t chunk_id;   /* or doc id, for the title channel */
    double score;
} scored;

/* Keep the best `cap` rows in a min-heap (cap 0: keep all). Once kept,
 * h[0 .. sorted) are the best rows in order; rows past them are read
 * through search_topk_get, which sorts only as far as it is asked. */
typedef struct topk {
    scored *h;
    size_t n, cap, alloc;
    size_t sorted;
} topk;

void search_topk_push(topk *t, int64_t chunk_id, double score);
/* Rows (ids[i], scores[i]) in any order into the empty t, the best t->cap
 * kept (cap 0: all): the rows and the order a keep-best run over them
 * gives (rows are in a total order, search_topk_get). */
void search_topk_adopt(topk *t, const int64_t *ids, const double *scores, size_t n);
/* The best rows of fts in `table` into top, when fts is phrases OR-ed
 * (query_fts_phrases, no negative one, at most SEARCH_OR_MAX), scored by
 * store_rank_rows with `rank` (its statistics kept there; with top->cap,
 * the rows that cannot reach the top are left unscored): the rows and
 * scores `SELECT rowid, trove_rank(..)` or the bm25() it equals gives,
 * without running the expression row by row. 1 when it answered
 * (*matches: the rows in all, or SIZE_MAX for "more than kept"; *rc), 0
 * for another shape: the caller runs its statement. No filters: the
 * caller's to check. */
#define SEARCH_OR_MAX 128
int search_keep_best_or(store *st, store_rank *rank, store_rank_table table, const char *fts,
                        topk *top, size_t *matches, trove_err *rc);
/* Row i of t, best first (1), or 0 past the last: a walk that stops after
 * a few hundred of thousands of kept rows orders only those
 * (docs/performance.md, --where). */
int search_topk_get(topk *t, size_t i, scored *out);
/* Run a "SELECT id, score ... WHERE fts MATCH ?1" and keep the best rows
 * (h[0 .. n) all of them, best first through search_topk_get). Without filters `plain` runs alone. With filters and
 * a cap, `plain` keeps KEEP_BEST_MARGIN times as many rows, and `check`
 * ("SELECT 1 FROM ... d ... WHERE <id> = ?1", completed by the filters)
 * keeps the best that pass; only when too few pass of a match with more
 * rows than it kept does `joined` (the match joined with docs as d,
 * completed by the filters) run, as it does with no cap. heading: the
 * --heading filter on chunk `c` too (`check` and `joined` join chunks as
 * c), or NULL. */
#define KEEP_BEST_MARGIN 8
/* check NULL: straight to `joined` with filters. */
trove_err search_keep_best(store *st, const char *plain, const char *joined, const char *check,
                           const char *fts, const search_filter *f, const char *heading,
                           topk *top);
/* `plain` alone, unfiltered, its rows ordered as read (search_topk_get);
 * *matches: the rows it gave (more than top->cap: some were dropped). */
trove_err search_keep_best_plain(store *st, const char *plain, const char *fts, topk *top,
                                 size_t *matches);

/* ---- BM25 lists (ch_bm25.c) ------------------------------------------- */

/* The notes of an FTS5 expression's best chunks (at most depth; 0: all)
 * into cs as list `ch`: SEARCH_CH_BM25 (the query: has_bm25, the anchoring
 * chunk) or SEARCH_CH_XLATE (its translation: has_xlate, an anchor only
 * for a note without one). skip_zh: 1 leaves out Chinese notes, 0 keeps
 * only them, -1 keeps all. Scores only; ranks come later. */
trove_err search_bm25_list(store *st, const char *fts, const search_filter *f, size_t depth,
                           cand_set *cs, int ch, int skip_zh);
/* Inverse document frequency of a query word over the chunks, as FTS5's
 * bm25() computes it (df_stmt: "SELECT count(*) ... MATCH ?"). */
double search_word_idf(store *st, sqlite3_stmt *df_stmt, double n_chunks, const char *w,
                       trove_err *rc);

/* ---- channels --------------------------------------------------------- */

/* One search as the channels see it. */
typedef struct search_ctx {
    store *st;
    const search_opts *o;
    const query_parsed *q;      /* the parsed query (q->fts NULL: no keyword) */
    query_parsed *xq;           /* its translation as ch_xlate ran it (xq->fts NULL:
                                   none), for the snippets; freed by search_run */
    const search_filter *f;
    size_t depth;               /* notes a channel offers; 0: every one */
    float *qvec;                /* the query's vector (ch_vec's before()), or NULL; freed
                                   by search_run */
    search_results *out;        /* what a channel reports (vec_state, floor, missing) */
    const meta_filter *mf;      /* --where, dates (search/meta.h) */
    double now;                 /* days (text/date.h), for dates and recency */
    double xlate_share;         /* share of the query's content words that the
                                   translation carries (ch_xlate.c) */
    struct search_vec_scan *vec_scan;   /* the vector scan under way (ch_vec.c), or NULL */
} search_ctx;

typedef struct search_vec_scan search_vec_scan;

typedef struct search_channel {
    const char *name;
    /* Whether it runs for this query (weights, vector_only, a keyword). */
    int (*wanted)(const search_ctx *c);
    /* Outside the read transaction, before any run(); NULL: nothing. */
    trove_err (*before)(search_ctx *c);
    /* Inside the read transaction: add to, or re-score, the candidates. */
    trove_err (*run)(search_ctx *c, cand_set *cs);
    /* Optional (NULL: none), for a channel whose work can go on while the
     * channels after it run (the vector scan, on a pool's worker): start()
     * reads what it needs inside the read transaction and starts the work;
     * its run() then comes after theirs, into a set of its own, which is
     * put in front of theirs (search_cand_front): the candidates in the
     * order, and with the fields, as had it run first. Only channels that
     * add candidates and read none of them may run meanwhile: a channel
     * with `joins` (the graph, over every candidate) waits for run().
     * end() frees what start() left, on every path. */
    trove_err (*start)(search_ctx *c);
    void (*end)(search_ctx *c);
    int joins;
} search_channel;

extern const search_channel search_ch_vector;   /* ch_vec.c */
extern const search_channel search_ch_bm25;     /* ch_bm25.c (with its bigram view) */
extern const search_channel search_ch_title;    /* ch_title.c */
extern const search_channel search_ch_xlate;    /* ch_xlate.c: the translated query */
extern const search_channel search_ch_graph;    /* ch_graph.c: link prior, bm25 ranks */

/* The translation list's weight for this query (ch_xlate.c), once bm25 is
 * ranked: 0 when it found nothing, else its share left when the original
 * query's best same-language chunk covers its words (out->xlate_coverage
 * is set). In the read transaction, before fusion. */
trove_err search_xlate_weight(const search_ctx *c, const cand_set *cs, double *factor);

/* Whether note c is written in the query's script (ch_xlate.c; cjk_query:
 * the query holds Han characters): for a query in Han characters any CJK note (a Japanese note holds 開発者 as a
 * Chinese one would), else a note in no CJK language; a note of unknown
 * language is neither. Same-language evidence for the translation's weight. */
int search_same_script(int cjk_query, const cand *c);

#endif
