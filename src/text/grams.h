/* grams — character bigrams over word-segmented CJK text.
 *
 * Chinese retrieval works best on two views of the text at once (Nie et
 * al. 2000, Luk & Kwok 2002): words are precise, but a word cut one way in
 * the query and another way in a note, or a name the dictionary lacks,
 * never matches; overlapping character bigrams are robust to segmentation,
 * and the bigrams that span two words reward notes holding the query's
 * words in the query's order. The index keeps words only (bigrams too would
 * nearly double a Chinese index); search adds the bigram view by re-scoring
 * its best candidates, and this module makes the bigrams of both sides the
 * same way.
 *
 * grams_run() tokenizes `text` in query mode (no words inside words) and,
 * for each sequence of CJK word tokens that follow each other with no gap,
 * reports the tokens (numbered from 0 in order) and every pair of adjacent
 * characters of their folded spelling (the segmenter's: traditional made
 * simplified), with the numbers of the words holding the two characters.
 * Runs that the segmenter cut into overlapping bigrams itself (Japanese or
 * Korean without a word segmenter, Chinese without the dictionary) are
 * skipped: their tokens are bigrams already.
 *
 * Strings passed to the callbacks are valid during the call only; nothing
 * allocated outlives grams_run(). */
#ifndef TROVE_GRAMS_H
#define TROVE_GRAMS_H

#include <stddef.h>

typedef struct grams_cb {
    void *ctx;
    /* A CJK word of a word-segmented run (may be NULL). */
    void (*word)(void *ctx, size_t idx, const char *w, size_t len);
    /* Two adjacent characters; the first is in word wa, the second in word
     * wb (wa == wb inside a word, wb == wa + 1 across a word boundary). */
    void (*gram)(void *ctx, const char *g, size_t len, size_t wa, size_t wb);
} grams_cb;

/* Returns the number of words reported. */
size_t grams_run(const char *text, size_t len, const grams_cb *cb);

#endif
