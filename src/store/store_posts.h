/* store_posts — a keyword phrase's rows, as store_rank_rows walks them,
 * kept by a resident process's read-only store across read transactions.
 *
 * The keyword channel (store_rank_rows: bm25 over chunks_fts, the title
 * channel's over titles_fts) walks, for every search, each phrase's rows
 * through FTS5 (xQueryPhrase): the row ids, each row's weighted frequency
 * and the floor its instances' offsets set to its length, read from the
 * phrase's position lists (~4 M of a daemon's ~8 M instructions for a
 * keyword search of the tldr pages, the same phrases search after
 * search). A store asked to keep them (store_posts_keep: a daemon's,
 * MCP's, serve's searches) keeps each phrase's walk, by the phrase's text
 * in the expression, its table and column weights, while its connection's
 * data_version stays the one they were read at (store_kept_version: a
 * read-only connection's data_version changes exactly when another
 * connection commits). A phrase's rows are a function of its text and the
 * index, so a kept walk is the walk FTS5 would give, row for row, in its
 * order: store_rank replays it through the same steps, with the same
 * bits. Not a cache of answers: the phrases' statistics, every row's
 * score, pruning and the top rows are computed as before.
 *
 * Bounded: a phrase of more than STORE_POSTS_MAX_ROWS rows is not kept,
 * and past STORE_POSTS_MAX_BYTES the store starts again empty. The rows
 * belong to the store (freed by store_posts_free at its close); a list
 * store_posts_find gives is valid until the next store_posts_put or
 * store_posts_current. One thread at a time, as the store. */
#ifndef TROVE_STORE_POSTS_H
#define TROVE_STORE_POSTS_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_POSTS_MAX_ROWS ((size_t)1 << 18)
#define STORE_POSTS_MAX_BYTES ((size_t)16 << 20)

/* One row of a phrase's walk. */
typedef struct store_post {
    int64_t id;
    double freq;   /* weighted frequency (store_rank.c phrase_freq) */
    double lo;     /* floor of the row's length its instances set */
    double len;    /* the row's length when the walk read it, else < 0 */
} store_post;

typedef struct store_posts store_posts;

/* Keep walks on st from now on (nothing on a store that can write). */
void store_posts_keep(store *st);
/* st's kept walks, emptied first when another connection committed since
 * they were read; NULL when st keeps none (or data_version cannot be
 * read). Call inside the read transaction they are used in. */
store_posts *store_posts_current(store *st);
/* The walk kept for the phrase (text[0..len) as it stands in the
 * expression) of table with weights w: 1 with *rows, *n; else 0. */
int store_posts_find(store_posts *k, int table, const double w[2], const char *text,
                     size_t len, const store_post **rows, size_t *n);
/* rows[0..n) (malloc'd; taken, freed here when not kept) kept for the
 * phrase. */
void store_posts_put(store_posts *k, int table, const double w[2], const char *text,
                     size_t len, store_post *rows, size_t n);
/* The table's FTS5 totals (xRowCount, xColumnTotalSize of every column)
 * at the kept walks' data_version: 1 with them once set, else 0. */
int store_posts_totals(store_posts *k, int table, int64_t *n_row, int64_t *n_token);
void store_posts_set_totals(store_posts *k, int table, int64_t n_row, int64_t n_token);
void store_posts_free(store *st);

#endif
