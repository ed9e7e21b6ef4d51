/* query — turn whatever the user typed into a safe FTS5 MATCH expression.
 *
 * Parsing never fails. Syntax understood: "quoted phrases", -exclusion (of a
 * word or a "phrase"), prefix* (word ending in '*'), [[wikilink]] brackets
 * (stripped). Everything else is plain words; punctuation inside words is
 * left to the tokenizer ("node.js" becomes the phrase "node js", "C++" the
 * word c). Words that yield no token (lone "*", "AND"/"OR"/"NOT" used as
 * operators are treated as ordinary words; "+++") are dropped. "--flag" is a
 * word, not an exclusion, and a query made only of exclusions ("-rf") is
 * read as plain words, since it has nothing to exclude from. Positive terms
 * are OR-ed, so a note ranks by how many and how rare the matched terms are;
 * English stopwords are dropped when at least one other positive term
 * remains. Exclusions become NOT. Every term is emitted double-quoted with
 * internal quotes doubled, so no user input can produce an FTS5 syntax error.
 *
 * The caller owns a query_parsed and frees it with query_free(). */
#ifndef TROVE_QUERY_H
#define TROVE_QUERY_H

#include <stddef.h>

typedef enum query_term_kind {
    QUERY_WORD,
    QUERY_PHRASE,  /* from "..." in the input */
    QUERY_PREFIX,  /* word* */
} query_term_kind;

typedef struct query_term {
    query_term_kind kind;
    int negated;
    int stopword;   /* dropped from the FTS expression as a stopword */
    char *text;     /* raw text of the term (without quotes / '-' / '*') */
} query_term;

typedef struct query_parsed {
    query_term *terms;
    size_t n_terms;
    char *fts;        /* FTS5 MATCH expression, or NULL when no positive
                         term remains (then the keyword channel is empty) */
    char *plain;      /* the positive terms joined by spaces, for the title
                         channel and display ("" when none) */
} query_parsed;

void query_parse(const char *input, query_parsed *out);

/* 1 if the (folded, segmented) CJK token is a Chinese function word or
 * question word (的, 什么, 哪一年, 何时...): such words carry no topic and
 * are left out of the OR-ed terms, the title channel's coverage and the
 * bigram view whenever the query has other words. */
int query_zh_function_word(const char *token, size_t len);
void query_free(query_parsed *q);

/* 1 when a folded, unstemmed token is an English stopword of the list the
 * FTS expression drops (also used by query expansion, search/query_pipe). */
int query_is_stopword(const char *token, size_t len);

/* The phrases of an expression of the shape query_parse builds: "P OR P
 * ..." or "(P OR P ...) NOT (P OR P ...)", P a double-quoted string ('""'
 * inside) with an optional " *". Each phrase's byte offset and length into
 * pos[] (the positive ones, at most max) and the number of negative ones
 * into *n_neg; returns the positive ones, or 0 when fts has another shape
 * or more than max. Each P is one FTS5 phrase, numbered in this order. */
typedef struct query_span {
    size_t off, len;
} query_span;
size_t query_fts_phrases(const char *fts, query_span *pos, size_t max, size_t *n_neg);

#endif
