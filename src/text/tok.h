/* tok — the text tokenizer shared by indexing, querying and FTS5.
 *
 * Splits UTF-8 text into terms: runs of letters/digits (Unicode-aware, via
 * utf8proc), case-folded (full Unicode case folding), diacritics stripped
 * (NFKD then drop combining marks: "Café" -> "cafe"), and Latin-script words
 * stemmed with the Snowball English stemmer when opts.stem is set. Runs of
 * CJK ideographs, kana and hangul are handed to the CJK segmenter; the
 * default one emits overlapping character bigrams (a single character run
 * emits the character). A later module installs a dictionary segmenter with
 * tok_set_cjk_segmenter(). Invalid UTF-8 bytes are separators, never errors.
 *
 * Tokens reach the caller through a callback with their byte offsets in the
 * input; the token bytes are only valid during the callback. */
#ifndef TROVE_TOK_H
#define TROVE_TOK_H

#include <stddef.h>

#include "util/err.h"

typedef struct tok_opts {
    int stem;       /* apply the English stemmer to Latin-script words */
} tok_opts;

/* Return non-zero from the callback to stop tokenizing (that value is
 * returned by tok_run). */
typedef int (*tok_cb)(void *ctx, const char *token, size_t len,
                      size_t start, size_t end);

int tok_run(const tok_opts *opts, const char *text, size_t len,
            void *ctx, tok_cb cb);

/* CJK segmentation hook. `segment` receives one maximal run of CJK text
 * (already case-folded/normalised bytes are NOT guaranteed: the raw run) and
 * must report each term via emit(emit_ctx, term, len, start, end) with
 * offsets relative to the run. */
typedef int (*tok_emit_fn)(void *emit_ctx, const char *term, size_t len,
                           size_t start, size_t end);
typedef struct tok_segmenter {
    void *ud;
    int (*segment)(void *ud, const char *run, size_t len,
                   void *emit_ctx, tok_emit_fn emit);
} tok_segmenter;

/* Install a segmenter for all threads (NULL restores the bigram default).
 * Call before any tokenizing starts. */
void tok_set_cjk_segmenter(const tok_segmenter *seg);

/* 1 if the code point is in a CJK script (Han, Hiragana, Katakana, Hangul,
 * CJK punctuation excluded). */
int tok_is_cjk(int cp);

/* Register the FTS5 tokenizer named "trove" on `db` (argument "stem" or
 * "nostem" selects opts.stem; default stem). */
struct sqlite3;
trove_err tok_register_fts5(struct sqlite3 *db);

#endif
