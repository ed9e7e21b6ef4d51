/* tok — the text tokenizer shared by indexing, querying and FTS5.
 *
 * Splits UTF-8 text into terms: runs of letters/digits (Unicode-aware, via
 * utf8proc), case-folded (full Unicode case folding), diacritics stripped
 * (NFKD then drop combining marks: "Café" -> "cafe"), and Latin-script words
 * stemmed with the Snowball English stemmer when opts.stem is set. Runs of
 * CJK ideographs, kana and hangul are handed to the CJK segmenter; the
 * default one emits overlapping character bigrams (a single character run
 * emits the character). The CLI installs the Chinese word segmenter of
 * cjk/seg with tok_set_cjk_segmenter(). Invalid UTF-8 bytes are separators,
 * never errors.
 *
 * Tokens reach the caller through a callback with their byte offsets in the
 * input; the token bytes are only valid during the callback. In document
 * mode a segmenter may add tokens flagged TOK_COLOCATED: words inside the
 * previous token (人民 inside 中华人民共和国) that take its FTS5 position;
 * query mode (opts.query) never produces them. */
#ifndef TROVE_TOK_H
#define TROVE_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* First bytes of the terms a caller compares tokens with (tok_first_add):
 * see tok_opts.stem_only. */
typedef struct tok_first {
    uint64_t bits[4];
} tok_first;

typedef struct tok_opts {
    int stem;       /* apply the English stemmer to Latin-script words */
    int query;      /* query mode: no TOK_COLOCATED sub-words */
    int skip_cjk;   /* CJK runs make no tokens (and load no segmenter) */
    /* With stem, NULL or a set: a word whose (folded) first byte is not in
     * it is passed on unstemmed. The English stemmer keeps a word's first
     * letter, so such a word's stem could not equal, nor start with, a
     * term whose first byte is in the set: a caller that only compares
     * tokens with those terms loses nothing and skips most stemmer runs
     * (a cold search's snippets stemmed ~300 words, 0.7 M instructions). */
    const tok_first *stem_only;
    /* Only tokens that start with an ASCII byte are wanted: a word whose
     * first character folds (alone) to a non-ASCII one makes no token and
     * is not folded. Its token would start with that character's fold
     * (composition keeps a non-ASCII first character non-ASCII), so a
     * caller comparing tokens with terms that start with ASCII bytes loses
     * nothing (the title channel reading a Russian note for "archive"). */
    int ascii_first;
} tok_opts;

/* Add term's first byte to f (an empty term: every byte). */
void tok_first_add(tok_first *f, const char *term);

/* Whether every term added to f starts with an ASCII byte (none added: 1),
 * the condition for tok_opts.ascii_first. */
int tok_first_ascii(const tok_first *f);

#define TOK_COLOCATED 1   /* same position as the previous token */

/* Return non-zero from the callback to stop tokenizing (that value is
 * returned by tok_run). tok_run reports colocated tokens like any other;
 * tok_run_flags passes the TOK_* flags too. */
typedef int (*tok_cb)(void *ctx, const char *token, size_t len,
                      size_t start, size_t end);
typedef int (*tok_fcb)(void *ctx, const char *token, size_t len,
                       size_t start, size_t end, int flags);

int tok_run(const tok_opts *opts, const char *text, size_t len,
            void *ctx, tok_cb cb);
int tok_run_flags(const tok_opts *opts, const char *text, size_t len,
                  void *ctx, tok_fcb cb);

/* CJK segmentation hook. `segment` receives one maximal run of CJK text
 * (already case-folded/normalised bytes are NOT guaranteed: the raw run) and
 * must report each term via emit(emit_ctx, term, len, start, end, flags)
 * with offsets relative to the run. `version` (may be NULL) names the
 * segmentation it produces, or NULL when it currently falls back to
 * bigrams; it is recorded in the index (see tok_version). */
typedef int (*tok_emit_fn)(void *emit_ctx, const char *term, size_t len,
                           size_t start, size_t end, int flags);
/* Flags of a run handed to a segmenter. */
#define TOK_SEG_QUERY 1        /* query mode: no colocated sub-words */
#define TOK_SEG_ASCII_BEFORE 2 /* an ASCII letter, digit or one of +#&._%- */
#define TOK_SEG_ASCII_AFTER 4  /*   touches the run (jieba keeps those in
                                    the same block as the Han text) */
typedef struct tok_segmenter {
    void *ud;
    int (*segment)(void *ud, const char *run, size_t len, int flags,
                   void *emit_ctx, tok_emit_fn emit);
    const char *(*version)(void *ud);
    /* (may be NULL) A cheap fingerprint of everything `version` depends on
     * (the files' paths, sizes and times, the settings), computed without
     * opening any dictionary or library: equal stamps mean an equal
     * version (see tok_stamp). NULL or NULL result: no stamp. */
    const char *(*stamp)(void *ud);
} tok_segmenter;

/* Install a segmenter for all threads (NULL restores the bigram default).
 * Call before any tokenizing starts. */
void tok_set_cjk_segmenter(const tok_segmenter *seg);

/* The default segmentation: overlapping character bigrams of a CJK run (a
 * character being a code point and its trailing marks); a run of one
 * character emits itself. Segmenters use it for what they do not cut. */
int tok_cjk_bigrams(const char *run, size_t len, void *emit_ctx, tok_emit_fn emit);

/* Identifies everything that decides which terms the tokenizer makes
 * (the tokenizer's own rules and the CJK segmentation in force): stored in
 * the index, which is re-tokenized when it changes. */
const char *tok_version(void);

/* A fingerprint of what decides tok_version(), found without opening a
 * dictionary or MeCab (a few stat() calls): recorded in the index beside
 * the version, so an `update` whose stamp is unchanged knows the version
 * is too and loads no segmenter unless it tokenizes something. NULL when
 * the segmenter in force gives none (then only tok_version() can tell). */
const char *tok_stamp(void);

/* 1 if the code point is in a CJK script (Han, Hiragana, Katakana, Hangul,
 * CJK punctuation excluded). */
int tok_is_cjk(int cp);

/* 1 if the UTF-8 text holds a character that starts a CJK run. */
int tok_has_cjk(const char *text, size_t len);

/* Register the FTS5 tokenizer named "trove" on `db` (argument "stem" or
 * "nostem" selects opts.stem; default stem). */
struct sqlite3;
trove_err tok_register_fts5(struct sqlite3 *db);
/* The connection's fts5_api (struct fts5_api *), or NULL without FTS5. */
void *tok_fts5_api(struct sqlite3 *db);

/* ---- tokens made ahead of an FTS5 insert (tok_fts5.c) ----
 *
 * The indexer tokenizes a note's full-text columns on a worker thread and
 * the writer hands FTS5 the ready tokens: while a tape is offered on a
 * thread, the "trove" tokenizer (document mode, stemming) answers a text
 * that equals one of the tape's texts byte for byte by replaying that
 * text's recorded tokens instead of tokenizing it again. Any other text is
 * tokenized as ever, so a tape can only save work, never change a term.
 * A tape owns its tokens, not its texts (the caller keeps those alive
 * while the tape is offered). */
typedef struct tok_tape_tok {
    uint32_t off, len;          /* the term: bytes[off .. off+len) */
    uint32_t start, end;        /* byte offsets in the text */
    int flags;                  /* TOK_COLOCATED */
} tok_tape_tok;

typedef struct tok_tape_text {
    const char *text;
    size_t len;
    size_t first, n;            /* its tokens: toks[first .. first+n) */
} tok_tape_text;

typedef struct tok_tape {
    tok_tape_text *texts;
    size_t n_texts, cap_texts;
    tok_tape_tok *toks;
    size_t n_toks, cap_toks;
    char *bytes;
    size_t n_bytes, cap_bytes;
} tok_tape;

/* Record the document-mode, stemmed tokens of text[0..len) (the FTS5
 * tokenizer's, whatever thread calls it). */
void tok_tape_record(tok_tape *t, const char *text, size_t len);
void tok_tape_free(tok_tape *t);
/* Empty t for the next text, keeping its arrays when they hold at most
 * keep_bytes in all (a tape made per note then grows once, not at every
 * note); larger ones are freed. */
void tok_tape_recycle(tok_tape *t, size_t keep_bytes);
/* Offer t to the FTS5 tokenizer on the calling thread until the next call
 * (NULL: none). */
void tok_tape_offer(const tok_tape *t);

#endif
