/* wordlevel — a tokenizer.json reader for the WordLevel model only, with
 * the normalizers (Lowercase, NFC/NFD/NFKC/NFKD, StripAccents, Sequence)
 * and pre-tokenizers (Whitespace, WhitespaceSplit, Sequence) that word-
 * vector models use. It is the stop-gap behind the static (model2vec)
 * backend until the full tokenizer.json module (tokjson: WordPiece,
 * Unigram, BPE, WordLevel) lands; static.c reaches it only through the
 * few calls below, which are the ones it needs from any tokenizer.
 *
 * Memory: a wl_tok owns its vocabulary (one string arena + a hash table);
 * callers own id arrays. Immutable after open, so threads may share one.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it). */
#ifndef TROVE_WORDLEVEL_H
#define TROVE_WORDLEVEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct wl_tok wl_tok;

/* Parse a tokenizer.json image (json, len bytes); name is for messages.
 * TROVE_EUNSUPPORTED names a model/normalizer/pre-tokenizer type this
 * reader does not know; TROVE_ECORRUPT a malformed file. */
trove_err wl_open_json(const char *json, size_t len, const char *name, wl_tok **out);
trove_err wl_open(const char *path, wl_tok **out);
void wl_free(wl_tok *t); /* NULL is fine */

int64_t wl_n_vocab(const wl_tok *t); /* highest id + 1 */
int32_t wl_unk_id(const wl_tok *t);  /* -1 when there is no unk token */
const char *wl_model_name(const wl_tok *t); /* "WordLevel" */

/* Ids of text (len bytes of UTF-8; invalid bytes are dropped), unknown
 * words as wl_unk_id() (skipped when there is none). Writes at most cap
 * ids, returns how many it wrote. */
size_t wl_encode(const wl_tok *t, const char *text, size_t len, int32_t *ids, size_t cap);

#endif
