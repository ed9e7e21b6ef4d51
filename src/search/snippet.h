/* snippet — pick the passage of a chunk that best shows why it matched.
 *
 * The text is tokenized with the index tokenizer; tokens equal to a query
 * term (or starting with a prefix term) are matches. The window of at most
 * max_bytes holding the most distinct terms wins; matches inside it are
 * wrapped in \x02..\x03, whitespace is collapsed, and cuts are marked with
 * an ellipsis. Overlapping matches (CJK bigrams) are merged. Returns a
 * malloc'd string owned by the caller. */
#ifndef TROVE_SNIPPET_H
#define TROVE_SNIPPET_H

#include <stddef.h>

typedef struct snippet_term {
    const char *token;   /* folded/stemmed, as the tokenizer emits it */
    int prefix;          /* match tokens that start with it */
} snippet_term;

char *snippet_make(const char *text, size_t len, const snippet_term *terms, size_t n_terms,
                   size_t max_bytes);

#endif
