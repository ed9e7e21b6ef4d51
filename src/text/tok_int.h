/* tok_int — helpers shared by the tokenizer, the query parser and the CJK
 * segmenter (cjk/seg) only.
 * Not part of the public tok interface. */
#ifndef TROVE_TOK_INT_H
#define TROVE_TOK_INT_H

#include <stddef.h>

/* Longest folded term kept, in bytes; longer words are truncated at a
 * character boundary (and not stemmed) so that a base64 blob or a URL cannot
 * bloat the index. Index and query truncate identically. */
#define TOK_MAX_TERM 64

/* Decode the code point at s[*i] (s has `len` bytes) and advance *i past it.
 * Returns the code point, or -1 for an invalid byte (overlong, surrogate,
 * truncated, > U+10FFFF), in which case *i advances by exactly one byte. */
int tok_utf8_next(const char *s, size_t len, size_t *i);

/* 1 if cp starts or continues a CJK run (tok_is_cjk and a letter, number or
 * mark), the same test tok_run uses. */
int tok_cjk_char(int cp);

/* 1 if cp is a combining mark (Mn, Mc, Me). */
int tok_is_mark(int cp);

#endif
