/* tokjson — the HuggingFace `tokenizers` tokenizer, read from a
 * tokenizer.json file (the model2vec layout and most HF model folders ship
 * one). It reproduces the library's encode(text) ids:
 *
 *   added tokens (matched on the raw text, then on the normalised text)
 *   -> normalizer -> pre-tokenizer -> model -> post-processor (specials)
 *
 * Supported components (anything else fails to load with TROVE_EUNSUPPORTED
 * naming it):
 *   models         WordPiece, WordLevel, BPE (string or pair merges,
 *                  byte-level vocabularies, continuing_subword_prefix,
 *                  end_of_word_suffix, ignore_merges, byte_fallback,
 *                  fuse_unk; dropout ignored), Unigram (Viterbi,
 *                  byte_fallback)
 *   normalizers    Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 *                  StripAccents, Replace (string patterns, literal
 *                  regexes), Prepend, BertNormalizer, Precompiled (the
 *                  sentencepiece charsmap, applied by etok's normaliser),
 *                  Nmt
 *   pre-tokenizers Sequence, Whitespace, WhitespaceSplit, BertPreTokenizer,
 *                  Punctuation, Metaspace, ByteLevel, Digits, Split (string
 *                  patterns, and the GPT-2, Qwen2 and Llama-3 regexes,
 *                  implemented by hand)
 *   post           TemplateProcessing (single), BertProcessing,
 *                  RobertaProcessing, ByteLevel (no ids), Sequence
 *
 * Text is UTF-8; an invalid sequence reads as U+FFFD (one per maximal
 * invalid subpart, as Python's and the WHATWG decoders do).
 *
 * Loading a large tokenizer.json costs a JSON parse of megabytes;
 * tokjson_save() writes a compact binary form that tokjson_open() and
 * tokjson_from_buffer() recognise by its magic and load with no parse.
 *
 * Memory: a tokjson owns copies of everything (the buffer it was read from
 * may be freed), except after tokjson_borrow(), which keeps the buffer. It is immutable after loading: any number of threads may
 * encode with one tokjson at once, each with its own tokjson_enc, which
 * holds the ids and the reusable scratch of its caller.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it). */
#ifndef TROVE_TOKJSON_H
#define TROVE_TOKJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/formats/gguf.h"
#include "util/err.h"

typedef struct tokjson tokjson;

/* Read path: a tokenizer.json, or a file tokjson_save() wrote. */
trove_err tokjson_open(const char *path, tokjson **out);
/* The same from bytes in memory (not kept). */
trove_err tokjson_from_buffer(const void *buf, size_t len, tokjson **out);
/* The same, keeping buf: the binary form's tables (vocabulary, hash slots,
 * merges, scores) are used in place, not copied, so a mapped cache entry
 * of a 500k-piece vocabulary loads without reading it. buf must stay
 * mapped and unchanged while the tokjson lives; tokjson_free() then calls
 * release(owner) (release may be NULL). On failure the caller keeps buf. */
trove_err tokjson_borrow(const void *buf, size_t len, void (*release)(void *), void *owner,
                         tokjson **out);
/* Build from a GGUF file's GPT-2-style byte-level BPE tokenizer
 * (tokenizer.ggml.model "gpt2", pre "qwen2": Qwen2/Qwen3 models as
 * llama.cpp's converter writes them): the tokenizer.json they came from,
 * rebuilt (tokjson_gguf.c says how). TROVE_EUNSUPPORTED for another model
 * or pre-tokenizer, TROVE_ECORRUPT naming the key for malformed arrays. */
trove_err tokjson_from_gguf(const gguf_file *f, tokjson **out);
/* Write the compact binary form of t to path (replaced atomically). */
trove_err tokjson_save(const tokjson *t, const char *path);
/* The same binary form in memory (xmalloc'd, caller frees; *len set). */
void *tokjson_serialize(const tokjson *t, size_t *len);
/* Layout version of the binary form: part of any cache key built on it
 * (a loader also rejects other layouts by their magic). */
#define TOKJSON_BIN_VERSION 2u
void tokjson_free(tokjson *t); /* NULL is fine */

/* "WordPiece", "WordLevel", "BPE" or "Unigram". */
const char *tokjson_model_type(const tokjson *t);
/* One more than the highest id of the model vocabulary and added tokens. */
size_t tokjson_vocab_size(const tokjson *t);
/* Text of a token (not NUL-terminated; *len set), or NULL for an id that
 * names no token. Byte-level BPE tokens are returned as stored (GPT-2
 * byte-to-unicode spelling). */
const char *tokjson_id_to_token(const tokjson *t, int32_t id, size_t *len);
/* Append the bytes token id stands for in decoded text to out (a tbuf):
 * a byte-level BPE token's GPT-2 byte-to-unicode spelling mapped back to
 * bytes; a token spelled outside that alphabet (an added token such as
 * "<|im_end|>" is inside it: ASCII maps to itself) as stored. Returns the
 * bytes appended; 0 for an id that names no token. For generation with
 * byte-level models (Qwen3); the bytes of one token may be part of a UTF-8
 * sequence that the next tokens finish. */
struct tbuf;
size_t tokjson_decode_token(const tokjson *t, int32_t id, struct tbuf *out);
/* Id of a token's text (model vocabulary or added token), or -1. */
int32_t tokjson_token_to_id(const tokjson *t, const char *s, size_t len);
/* The model's unknown token id (WordPiece/WordLevel/BPE "unk_token",
 * Unigram "unk_id") when it names a token, else -1. */
int32_t tokjson_unk_id(const tokjson *t);
/* Median length in code points of the vocabulary's token texts (model
 * vocabulary and added tokens, each distinct text once), rounded down:
 * what model2vec computes for its character pre-truncation. 0 when the
 * vocabulary is empty. One pass over the vocabulary. */
size_t tokjson_median_token_chars(const tokjson *t);

/* Ids TOKJSON_ADD_SPECIAL puts before (tail false) or after (tail true)
 * the text's ids; *n set. Owned by t. */
const int32_t *tokjson_framing(const tokjson *t, bool tail, size_t *n);

/* An encoding: ids with the byte span [start, end) of the input text each
 * came from (specials added by the post-processor have 0, 0). Reused
 * across calls: tokjson_encode() overwrites it, keeping its memory. */
typedef struct tokjson_scratch tokjson_scratch;
typedef struct tokjson_enc {
    int32_t *ids;
    uint32_t *start, *end;
    size_t n, cap;
    tokjson_scratch *scratch; /* private */
} tokjson_enc;

void tokjson_enc_free(tokjson_enc *e); /* frees the arrays; e is reusable */

/* Flags of tokjson_encode(). */
enum {
    TOKJSON_ADD_SPECIAL = 1, /* apply the post-processor's special tokens */
};

/* Text longer than this is rejected (offsets are 32-bit). */
#define TOKJSON_MAX_TEXT ((size_t)1 << 30)

/* Tokenise text[0..len) into e. Fails only with TROVE_ERANGE for text over
 * TOKJSON_MAX_TEXT. */
trove_err tokjson_encode(const tokjson *t, const char *text, size_t len, unsigned flags,
                         tokjson_enc *e);

#endif
