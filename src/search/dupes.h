/* dupes — groups of near-duplicate notes or passages (`trove dupes`).
 *
 * Every note (or, with passages, every chunk) of the collections asked for
 * gets a MinHash signature of its chunk text (text/minhash.h: 4-word
 * shingles, 64 hashes, LSH in 16 bands); pairs whose estimated Jaccard
 * similarity reaches the threshold are candidates. Where the index holds
 * vectors for both sides (the model with the most vectors), a pair is kept
 * only when the cosine of their vectors (a note: the mean of its chunk
 * vectors) reaches DUPES_VEC_MIN: near-identical wording with different
 * meaning (a template filled in twice) is left out. Kept pairs are joined
 * into groups (union-find); groups are ordered largest first, then by
 * similarity, then by their first member's collection and path; members
 * by collection and path.
 *
 * The caller owns the result (dupes_result_free). */
#ifndef TROVE_DUPES_H
#define TROVE_DUPES_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define DUPES_THRESHOLD 0.8   /* default estimated Jaccard similarity */
#define DUPES_VEC_MIN 0.8     /* cosine a pair with vectors must reach */

typedef struct dupes_opts {
    double threshold;                /* (0, 1]; 0: DUPES_THRESHOLD */
    int passages;                    /* chunks instead of whole notes */
    const char *const *collections;  /* only these (OR); none: all */
    size_t n_collections;
} dupes_opts;

typedef struct dupe_item {
    char docid[9];
    char *collection, *root, *path, *title;
    char *heading;          /* passages: the chunk's heading path (" > "), else NULL */
    int line_start, line_end;
} dupe_item;

typedef struct dupe_group {
    dupe_item *items;
    size_t n;
    double similarity;      /* the least estimate of the pairs that joined it */
    double cosine;          /* the least vector cosine of those pairs; NAN when
                               none of them had vectors on both sides */
} dupe_group;

typedef struct dupes_result {
    dupe_group *groups;
    size_t n;
    size_t units;           /* notes (or passages) compared */
    size_t candidates;      /* pairs at or above the threshold */
    size_t rejected;        /* of them, left out by their vectors */
    char *vec_model;        /* the model whose vectors confirmed pairs, NULL: none */
} dupes_result;

trove_err dupes_run(store *st, const dupes_opts *o, dupes_result *out);
void dupes_result_free(dupes_result *r);

#endif
