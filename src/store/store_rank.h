/* store_rank — trove_rank(), the keyword channel's FTS5 rank function.
 *
 * It gives the score of FTS5's bm25() (negated: larger is better): the same
 * constants (k1 1.2, b 0.75), IDF (xQueryPhrase's row count per phrase),
 * average length (xRowCount, xColumnTotalSize) and column weights, and the
 * same double arithmetic in the same order, so the same bits. What it does
 * not do is bm25()'s per-row work that costs: a row's length in tokens is
 * read from the note map (kind 7, store_nmap.h) instead of a
 * chunks_fts_docsize seek, and a phrase's weighted frequency is counted
 * from its own position list (xPhraseFirst) instead of xInst's list of
 * every phrase's instances merged (docs/performance.md, session 30).
 *
 *   SELECT rowid, trove_rank(chunks_fts) FROM chunks_fts
 *     WHERE chunks_fts MATCH ?1
 *
 * run between store_rank_use(st, r) and store_rank_use(st, NULL): the
 * store's connection has one rank state at a time (a statement's own
 * parameters stay the caller's: the filters bind from ?2 on). With
 * r->n_query set, only the expression's last n_query phrases are scored: a
 * caller may put a restriction in front of the query ("(a) AND (a OR b)")
 * and score the query's own phrases only. The statistics are computed at
 * the first row and kept while the phrases scored are as many (the caller
 * runs one query, restricted or not, per store_rank), so a caller can read
 * the phrases' IDFs after one row (store_rank_bound). The caller owns the
 * store_rank and the reader. */
#ifndef TROVE_STORE_RANK_H
#define TROVE_STORE_RANK_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "store/store_nmap.h"

#define STORE_RANK_K1 1.2   /* FTS5's bm25() constants */
#define STORE_RANK_B 0.75

typedef struct store_rank {
    store_nmap_reader *nmap;   /* lengths of chunks, or NULL: FTS5's */
    struct store_lens *lens;   /* titles: lengths kept across searches (store_lens.h), or
                                  NULL: FTS5's */
    double weight[2];          /* heading, body */
    int n_query;               /* the last phrases scored (0: all) */
    size_t top;                /* store_rank_rows: the best `top` rows are
                                  what matters (0: every row) */
    int prune_small;           /* ... and rows are left out even of a small
                                  table (tests) */
    int table;                 /* store_rank_rows's (store_rank_table) */
    /* Statistics, filled at the first row scored (have). */
    int have;
    int n_phrase;              /* phrases scored */
    double avgdl;
    double *idf;
    int64_t *hits;             /* rows per phrase */
    int64_t *known;            /* store_rank_rows: rows per phrase counted
                                  before (-1: not), n_known of them */
    size_t n_known;
    trove_err rc;              /* a note-map error met inside a row */
    /* store_rank_rows: every matching row and its score, by id (with
     * top: rows enough, cut set where some were left out) */
    int64_t *row_id;
    double *row_score;
    size_t n_rows;
    int cut;
} store_rank;

/* trove_rank() on the store's connection, once (before the first prepare
 * of a statement that calls it). */
trove_err store_rank_ready(store *st);
/* The state trove_rank() scores with until the next call (NULL: none; a
 * statement calling it then fails). */
void store_rank_use(store *st, store_rank *r);
void store_rank_free(store_rank *r);
/* Every row of fts, an expression of phrases OR-ed ("P OR P ...", the
 * shape query_fts_phrases counts with no negative phrase), with its
 * trove_rank() score, into r->row_id/row_score (n_rows), and r's
 * statistics (have), all from one walk of each phrase's rows: the
 * statistics' own walk, which also reads each row's frequency and length,
 * so the expression itself is never run row by row (2-3x fewer
 * instructions than SELECT ... trove_rank(), docs/performance.md,
 * session 32). The same rows and the same bits as that SELECT; for
 * another shape the rows would not be the expression's. With r->top,
 * only the rows that can be among the best r->top (by score, then id,
 * ties included) are certain to be there, with the same bits: the
 * phrases are counted first, then walked rarest first, and a row that
 * cannot reach the top is neither scored nor kept (MaxScore: a common
 * word's rows are stepped over; store_rank.c); r->cut then says whether
 * any was left out. The table:
 * chunks_fts, or titles_fts (with r->nmap NULL and weights {3, 2}: the
 * bits of -bm25(titles_fts, 3.0, 2.0, 1.0), its third column weighing 1). */
typedef enum { STORE_RANK_CHUNKS, STORE_RANK_TITLES } store_rank_table;
trove_err store_rank_rows(store *st, store_rank_table table, const char *fts, store_rank *r);
/* The rows of the table (chunks or notes, one FTS5 row each: store_check
 * holds them to it) as FTS5 counts them, read from its totals: the
 * count(*) of chunks without a walk of a million-row table. */
trove_err store_rank_row_count(store *st, store_rank_table table, double *n);
/* The chunks holding `word` (a word of a query, as `"word"` would
 * match: the one token FTS5 makes of it; or with word NULL, the token
 * `tok` itself), when a store_rank_rows of this read transaction counted
 * a phrase of that one token: 1 with *hits, else 0 (count them). */
int store_rank_hits(store *st, const char *word, const char *tok, int64_t *hits);
/* Keep the rows per phrase that store_rank_rows counts (its count walk, a
 * walk of every phrase's rows before the scoring one: ~20% of a keyword
 * search's instructions through the daemon at 1M, docs/performance.md
 * session 36) across read transactions, while the connection's
 * data_version stays the one they were counted at (a read-only store's:
 * it changes exactly when another connection commits, and a phrase's
 * rows are a function of the index). A phrase counted before is then
 * not walked to be counted; nothing on a store that can write. */
void store_rank_keep(store *st);
/* The most phrase i (0: the first scored) can add to a row's score: IDF x (k1 + 1),
 * as a row's frequency-and-length factor is below k1 + 1 whatever they
 * are. Needs r->have. */
double store_rank_bound(const store_rank *r, int i);

#endif
