/* tokmemo — the distinct terms of a text, kept by a resident process for
 * the next time it meets the same bytes.
 *
 * The title channel tokenizes, for every search, the names of its ~100
 * best title matches and the first chunks of the notes whose name holds
 * part of the query (ch_title.c): ~1.3 M instructions of a daemon's ~8 M
 * per search of the tldr pages, the same names and note openings search
 * after search. A memo maps a text's bytes to the set of terms tok_run
 * makes of it (opts {stem, query}, CJK runs cut or skipped), so a daemon
 * tokenizes each once.
 *
 * Exact by construction: an entry is found only by the whole text (its
 * bytes compared, not only its hash) and the CJK switch, and the terms are
 * a function of those (the CJK segmenter is installed before any
 * tokenizing starts, tok.h). Nothing to invalidate: a changed note is other
 * bytes, another entry. Bounded: past max_bytes the memo starts again
 * empty.
 *
 * Ownership: the memo owns its entries; a set it returns is valid until the
 * next tokmemo_get on the memo, or its tokmemo_free. Not thread-safe: one
 * memo per api handle (used by one thread at a time, api.h). */
#ifndef TROVE_TOKMEMO_H
#define TROVE_TOKMEMO_H

#include <stddef.h>
#include <stdint.h>

typedef struct tokmemo tokmemo;

/* The distinct terms of a text, in the order tok_run first made them. */
typedef struct tokmemo_set {
    const char *const *term;   /* NUL-terminated */
    const uint32_t *len;
    size_t n;
} tokmemo_set;

tokmemo *tokmemo_new(size_t max_bytes);
void tokmemo_free(tokmemo *m);

/* The terms tok_run({.stem = 1, .query = 1, .skip_cjk = skip_cjk}) makes
 * of text[0..len), each once. */
const tokmemo_set *tokmemo_get(tokmemo *m, int skip_cjk, const char *text, size_t len);

/* Whether term (len bytes) is one of s's. */
int tokmemo_has(const tokmemo_set *s, const char *term, size_t len);

/* Whether one of terms[0..n) (len[i] bytes each) is among the terms
 * tok_run({.stem = 1, .query = 1, .skip_cjk = skip_cjk}) makes of
 * text[0..len). Kept apart from tokmemo_get's sets: such an entry holds
 * only the terms that start with the first bytes asked so far, made by a
 * pass that stems only those words (tok_opts.stem_only: the stemmer keeps
 * a word's first letter, so a term starting with byte c comes from a word
 * starting with c, and every such word is stemmed), so a text met once
 * costs what tokenizing it for those terms costs (a note's opening holds
 * a few hundred words, each stemmed at ~1,000 instructions). */
int tokmemo_holds(tokmemo *m, int skip_cjk, const char *text, size_t len,
                  const char *const *terms, const size_t *lens, size_t n);

typedef struct tokmemo_stats {
    uint64_t hits, misses;
    size_t entries, bytes;
} tokmemo_stats;
void tokmemo_stats_get(const tokmemo *m, tokmemo_stats *out);

#endif
