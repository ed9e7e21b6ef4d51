/* minhash — near-duplicate detection: word shingles, MinHash signatures,
 * LSH banding and grouping (`trove dupes`).
 *
 * A text's shingles are its runs of MINHASH_SHINGLE consecutive tokens
 * (tok_run, folded and stemmed: "Running" and "runs" agree as in search); a
 * text shorter than that is one shingle of all its tokens. Its signature
 * keeps, for each of MINHASH_K hash functions, the least hash of any
 * shingle, so that the share of equal slots of two signatures estimates the
 * Jaccard similarity of their shingle sets (standard error about
 * sqrt(J(1-J)/K), 0.05 at J = 0.5).
 *
 * Candidate pairs come from LSH: signatures are cut into MINHASH_BANDS
 * bands of MINHASH_K / MINHASH_BANDS slots, and two texts sharing any whole
 * band are compared (a pair at J = 0.8 is a candidate with probability
 * 1 - (1 - 0.8^4)^16 > 0.999; at 0.5, 0.65; at 0.3, 0.12). Pairs whose
 * estimate reaches the threshold are joined with union-find into groups.
 *
 * No SQL, no I/O; the caller owns every array (minhash_pairs_free). */
#ifndef TROVE_MINHASH_H
#define TROVE_MINHASH_H

#include <stddef.h>
#include <stdint.h>

#define MINHASH_K 64
#define MINHASH_BANDS 16
#define MINHASH_SHINGLE 4

typedef struct minhash_sig {
    uint64_t h[MINHASH_K];
    uint32_t shingles;   /* shingles seen (0: an empty text, never a duplicate) */
} minhash_sig;

/* The signature of `len` bytes of text. A text's signature may also be
 * built piece by piece (a note's chunks): begin, add each piece, end. */
void minhash_text(const char *text, size_t len, minhash_sig *out);

typedef struct minhash_builder minhash_builder;
minhash_builder *minhash_begin(minhash_sig *out);
void minhash_add(minhash_builder *b, const char *text, size_t len);
void minhash_end(minhash_builder *b);

/* Estimated Jaccard similarity: equal slots / MINHASH_K (0 when either
 * text is empty). */
double minhash_similarity(const minhash_sig *a, const minhash_sig *b);

typedef struct minhash_pair {
    size_t a, b;         /* indices into the signatures, a < b */
    double similarity;
} minhash_pair;

/* Every pair of the n signatures that shares an LSH band and whose
 * estimate is >= threshold, by (a, b). */
void minhash_pairs(const minhash_sig *sigs, size_t n, double threshold, minhash_pair **out,
                   size_t *n_out);
void minhash_pairs_free(minhash_pair *p);

/* Groups of the pairs (connected components; keep[i] 0 drops pair i):
 * group[i] is the group of signature i, numbered from 0 in order of each
 * group's first member; -1 for a signature in no kept pair. Returns the
 * number of groups. */
size_t minhash_group(size_t n, const minhash_pair *pairs, size_t n_pairs,
                     const unsigned char *keep, long *group);

#endif
