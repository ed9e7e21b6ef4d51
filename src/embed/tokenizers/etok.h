/* etok — the tokenizers of GGUF embedding models, built from the file's
 * tokenizer.ggml.* metadata (llama.cpp's conventions):
 *
 *   "bert"   WordPiece. BERT's basic tokenizer (drop control chars, split on
 *            whitespace and punctuation, every CJK ideograph its own word,
 *            lower-casing and accent stripping unless the vocabulary is
 *            cased, i.e. over 5% of its lettered pieces have capitals),
 *            then greedy longest-match-first WordPiece,
 *            [UNK] for a word that cannot be covered or is over 100 chars.
 *            GGUF stores word-initial pieces as "\u2581"+piece and
 *            continuations ("##x" in HF) as bare "x"; control tokens as is.
 *   "t5"     SentencePiece unigram: normaliser (precompiled charsmap, dummy
 *            "\u2581" prefix, extra-whitespace removal, spaces as "\u2581"),
 *            then the best-scoring (Viterbi) segmentation. XLM-RoBERTa
 *            models (bge-m3, multilingual-e5, bge-reranker-v2-m3) use it.
 *   "llama"  SentencePiece BPE: same normaliser, then merges by piece score;
 *            characters with no piece become <0xNN> byte pieces when the
 *            vocabulary has them (Gemma, EmbeddingGemma), else unknown.
 *
 * The sentencepiece behaviours are those of the sentencepiece library
 * (unigram optimised Viterbi with its double-precision path scores, BPE
 * agenda with left-most tie break, byte fallback of unknown pieces, runs
 * of unknown pieces merged into one when there is no byte fallback);
 * tests/unit/test_etok.c with tests/tools/tok_parity.py checks trove's ids
 * against sentencepiece's on thousands of lines. Byte fallback is on when
 * the vocabulary has BYTE pieces (GGUF does not record the flag).
 *
 * Memory: an etok copies everything it needs (pieces, scores, charsmap), so
 * the gguf_file or etok_vocab it was built from may be freed right after.
 * It is immutable after creation: any number of threads may encode with
 * one etok at once. Encoding allocates its scratch per call (never per
 * token); callers own the id arrays.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_ETOK_H
#define TROVE_ETOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/formats/gguf.h"
#include "util/err.h"

typedef struct etok etok;

typedef enum etok_kind {
    ETOK_WPM = 1, /* "bert" */
    ETOK_UGM = 2, /* "t5" */
    ETOK_BPE = 3, /* "llama" */
} etok_kind;

/* Piece types, numbered as in sentencepiece and tokenizer.ggml.token_type.
 * Only NORMAL, USER_DEFINED and UNUSED pieces are ever matched in text;
 * USER_DEFINED pieces are matched before normalisation, whole. */
enum {
    ETOK_T_NORMAL = 1,
    ETOK_T_UNKNOWN = 2,
    ETOK_T_CONTROL = 3,
    ETOK_T_USER_DEFINED = 4,
    ETOK_T_UNUSED = 5,
    ETOK_T_BYTE = 6,
};

/* Special token ids; -1 when the model has none. */
typedef struct etok_special {
    int32_t bos, eos, unk, sep, pad, cls, mask;
} etok_special;

/* A vocabulary described in memory: what etok_from_gguf() reads from a
 * file, and what unit tests fill directly. Nothing here is kept. */
typedef struct etok_vocab {
    etok_kind kind;
    size_t n;                 /* number of pieces */
    const char *const *text;  /* n pieces, UTF-8 */
    const size_t *len;        /* n byte lengths; NULL: text[] NUL-terminated */
    const float *scores;      /* n scores, or NULL (all 0) */
    const int32_t *types;     /* n ETOK_T_* values, or NULL (all NORMAL) */
    etok_special special;     /* -1 for absent; see etok_vocab_init() */
    bool add_bos, add_eos;    /* framing of SentencePiece kinds */
    bool add_space_prefix;    /* sentencepiece add_dummy_prefix */
    bool remove_extra_ws;     /* sentencepiece remove_extra_whitespaces */
    const uint8_t *charsmap;  /* sentencepiece precompiled_charsmap, or NULL */
    size_t charsmap_len;
} etok_vocab;

/* Zero *v and set the defaults llama.cpp uses when a key is missing:
 * specials -1, add_space_prefix true, remove_extra_ws false, add_bos true
 * for llama, add_eos true for t5. */
void etok_vocab_init(etok_vocab *v, etok_kind kind);

/* Build a tokenizer. Fails with TROVE_EINVAL/ECORRUPT (detail says why) on
 * an empty vocabulary, a bad charsmap, or a vocabulary without the unknown
 * token its kind needs. Specials left -1 are looked up by the usual piece
 * text ([CLS], [SEP], [PAD], [UNK], [MASK] for bert; type UNKNOWN for the
 * unknown piece of sentencepiece kinds). */
trove_err etok_new(const etok_vocab *v, etok **out);

/* Build from a GGUF file's tokenizer.ggml.{model,tokens,scores,token_type,
 * *_token_id,add_bos_token,add_eos_token,add_space_prefix,
 * remove_extra_whitespaces,precompiled_charsmap}. A model other than bert,
 * t5 or llama gives TROVE_EUNSUPPORTED naming it; malformed arrays give
 * TROVE_ECORRUPT naming the key. */
trove_err etok_from_gguf(const gguf_file *f, etok **out);

void etok_free(etok *t); /* NULL is fine */

/* ---- facts ---- */
etok_kind etok_kind_of(const etok *t);
const char *etok_kind_name(etok_kind k); /* "bert", "t5", "llama" */
size_t etok_n_vocab(const etok *t);
const etok_special *etok_specials(const etok *t);
/* Whether etok_encode(add_special=true) adds a leading / trailing token. */
bool etok_adds_bos(const etok *t);
bool etok_adds_eos(const etok *t);

/* The stored piece text of id (not NUL-terminated; *len set), or NULL for
 * an id out of range. */
const char *etok_piece(const etok *t, int32_t id, size_t *len);
/* Type (ETOK_T_*) and score of a piece; 0 for an id out of range. */
int etok_piece_type(const etok *t, int32_t id);
float etok_piece_score(const etok *t, int32_t id);

/* Text of one id as it reads in a decoded string: "\u2581" becomes a
 * space, a byte piece <0xNN> becomes that byte, control and unknown
 * pieces are empty. Writes at most cap bytes (no terminator) and returns
 * the full length, so a caller with a short buffer can retry. */
size_t etok_decode_piece(const etok *t, int32_t id, char *buf, size_t cap);

/* ---- encoding ---- */

/* Text beyond this many bytes is ignored (models read at most a few
 * thousand tokens; the limit keeps internal indexes small). */
#define ETOK_MAX_TEXT ((size_t)64 << 20)

/* Tokenise text[0..len) (UTF-8; invalid bytes are tolerated: sentencepiece
 * kinds see U+FFFD, bert drops them). With add_special the model's framing
 * is added: [CLS] text [SEP] for bert, bos/eos per etok_adds_bos/eos for
 * the others. At most max_ids ids are written to ids: when the text has
 * more tokens the text part is cut at the end and the framing is kept
 * (max_ids smaller than the framing alone gives the first max_ids framing
 * ids). Returns the number written. *n_full, when not NULL, receives the
 * length the untruncated encoding would have, framing included. */
size_t etok_encode(const etok *t, const char *text, size_t len, bool add_special,
                   int32_t *ids, size_t max_ids, size_t *n_full);

/* Encode a (query, document) pair for a cross-encoder, always framed:
 * bert: [CLS] a [SEP] b [SEP]; sentencepiece kinds: [bos] a [eos] [eos] b
 * [eos] (XLM-RoBERTa's "<s> a </s></s> b </s>"; tokens the model does not
 * add are left out). Truncation to max_ids removes tokens one at a time
 * from the end of the longer side (the second on ties), like HF's
 * "longest_first". segs, when not NULL, receives the BERT token type of
 * each id: 0 up to and including the first separator, 1 after. Returns the
 * number written. */
size_t etok_encode_pair(const etok *t, const char *a, size_t alen, const char *b,
                        size_t blen, int32_t *ids, uint8_t *segs, size_t max_ids);

#endif
