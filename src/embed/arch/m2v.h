/* m2v — static embedding models in the model2vec layout: a folder with
 *
 *   model.safetensors  "embeddings" [rows, dim] (F32/F16/BF16/F64/I8; also
 *                      named "embedding.weight" or "0" by other writers),
 *                      optional "weights" [vocab] (per-token scale, indexed
 *                      by token id) and "mapping" [vocab] (token id -> row,
 *                      for vocabulary-quantised models)
 *   tokenizer.json     Hugging Face tokenizers format, any model tokjson
 *                      reads (WordPiece, WordLevel, BPE, Unigram)
 *   config.json        model2vec's config ("normalize", ...; informational)
 *
 * Tokenising follows model2vec's StaticModel.tokenize(text, max_length):
 * the text is cut to max_length x (median token length) characters, encoded
 * without special tokens, the model's unk_token id is dropped (WordPiece,
 * WordLevel, BPE; a Unigram unk is kept, as in model2vec), then the ids are
 * cut to max_length. A text's vector is the mean over its ids of
 * weights[id] * embeddings[mapping[id]], a zero vector for a text without
 * ids. Normalisation is the caller's (embed.c).
 *
 * Cold start: the safetensors file is mapped, never read whole: a query
 * touches only the rows of its tokens; the tokenizer comes from tokcache
 * (tokjson's binary form keyed by tokenizer.json's identity), so only the
 * first open of a model parses its JSON.
 *
 * Memory: an m2v owns the mapping and the tokenizer; callers own id and
 * vector arrays. The tables are immutable after open, but m2v_tokenize()
 * reuses one encoding scratch: one caller at a time (as embed_model).
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it). */
#ifndef TROVE_M2V_H
#define TROVE_M2V_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct m2v m2v;

/* Whether path looks like a model2vec folder (or its model.safetensors). */
bool m2v_is_model(const char *path);

/* Open a folder (or the path of its model.safetensors). Errors name the
 * file and the fault: a missing file (TROVE_ENOENT), a bad tensor shape or
 * type (TROVE_ECORRUPT / TROVE_EUNSUPPORTED), a tokenizer that does not
 * fit the embeddings. */
trove_err m2v_open(const char *path, m2v **out);
/* Same from images in memory (fuzzing); the buffers must outlive the m2v.
 * config may be NULL. */
trove_err m2v_open_memory(const void *safetensors, size_t st_len, const char *tokenizer_json,
                          size_t tok_len, const char *config_json, size_t cfg_len, m2v **out);
void m2v_close(m2v *m); /* NULL is fine */

int64_t m2v_dim(const m2v *m);
int64_t m2v_n_vocab(const m2v *m);   /* token ids the model accepts */
int64_t m2v_n_rows(const m2v *m);    /* embedding rows */
const char *m2v_tokenizer_name(const m2v *m);
const char *m2v_dtype(const m2v *m); /* of the embeddings: "F16", ... */
uint64_t m2v_emb_bytes(const m2v *m);
bool m2v_weighted(const m2v *m);     /* has per-token weights */
bool m2v_mapped(const m2v *m);       /* has a token -> row mapping */
bool m2v_config_normalize(const m2v *m);
uint64_t m2v_file_size(const m2v *m); /* model.safetensors */
/* Files that define the model (for the fingerprint): NULL-terminated. */
const char *const *m2v_files(const m2v *m);

/* Token ids of text as model2vec's tokenize(text, max_length = cap): the
 * text cut to cap x median characters, unknown ids dropped, at most cap
 * ids kept. Not reentrant (shared scratch). */
size_t m2v_tokenize(const m2v *m, const char *text, size_t len, int32_t *ids, size_t cap);
/* out[dim] = weighted mean of the rows of ids[0..n). TROVE_EINVAL for an
 * id outside the vocabulary, TROVE_ECORRUPT for a mapping entry outside
 * the embeddings (checked as it is used: no full scan at open). */
trove_err m2v_pool(const m2v *m, const int32_t *ids, size_t n, float *out);

#endif
