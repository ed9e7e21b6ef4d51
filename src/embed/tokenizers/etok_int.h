/* etok_int — what the etok_*.c files share: the tokenizer struct, the
 * piece hash table, UTF-8 decoding and the per-kind encoders. Not a public
 * interface.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_ETOK_INT_H
#define TROVE_ETOK_INT_H

#include "embed/tokenizers/etok.h"
#include "util/arena.h"
#include "util/buf.h"

struct etok {
    etok_kind kind;
    uint32_t n;
    char *pieces;    /* every piece, NUL-terminated, back to back */
    arena mem;       /* owns pieces */
    uint32_t *off;   /* piece i is pieces + off[i], plen[i] bytes */
    uint32_t *plen;
    float *score;
    uint8_t *type;
    /* Open-addressing table of the matchable pieces (NORMAL, USER_DEFINED,
     * UNUSED): a slot holds hash << 32 | (id + 1), 0 is empty; keeping the
     * hash in the slot spares most probes a look at the piece text. */
    uint64_t *slots;
    uint32_t mask;
    uint32_t max_len;      /* longest matchable piece, bytes */
    uint32_t max_user_len; /* longest USER_DEFINED piece, 0 if none */
    /* Quick rejection for user-defined matching, which runs at every
     * position: the first bytes USER_DEFINED pieces start with, and their
     * lengths (bit k-1 for length k <= 64; longer ones always probed). */
    uint64_t user_first[4];
    uint64_t user_lens;
    float min_score, max_score; /* over NORMAL pieces (unigram) */
    int32_t byte_id[256];  /* <0xNN> BYTE pieces, -1 when absent */
    etok_special sp;
    bool add_bos, add_eos, add_space_prefix, remove_extra_ws;
    bool lowercase;        /* bert: vocabulary is uncased */
    /* precompiled charsmap: darts-clone units and replacement strings */
    uint32_t *xcda;
    size_t n_xcda;
    char *repl;
    size_t repl_len;
};

/* A growable id array. */
typedef struct etok_ids {
    int32_t *v;
    size_t n, cap;
} etok_ids;

void etok_ids_push(etok_ids *a, int32_t id);

/* FNV-1a, fed one byte at a time so prefix lookups extend a running hash. */
#define ETOK_HASH_INIT 2166136261u
static inline uint32_t etok_hash_step(uint32_t h, uint8_t c) {
    return (h ^ c) * 16777619u;
}

/* Id of the matchable piece s[0..n) whose FNV-1a hash is h, or -1. */
int32_t etok_lookup_h(const etok *t, const char *s, size_t n, uint32_t h);
int32_t etok_lookup(const etok *t, const char *s, size_t n);

/* Decode one strictly valid UTF-8 sequence at s (n bytes available):
 * returns its length 1..4 and sets *cp, or 0 when the bytes there are not
 * a valid sequence (overlong, surrogate, > U+10FFFF, truncated). */
size_t etok_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);
/* Bytes of the UTF-8 sequence a lead byte announces (1 for invalid). */
size_t etok_utf8_lead_len(uint8_t c);
/* Encode cp (<= 0x10FFFF) into out[4]; returns the length. */
size_t etok_utf8_encode(uint32_t cp, char *out);

/* Parse a sentencepiece precompiled charsmap into t (copied). */
trove_err etok_charsmap_init(etok *t, const uint8_t *blob, size_t len);

/* Append the ids of text (no framing) to out. */
void etok_wpm_encode(const etok *t, const char *text, size_t len, etok_ids *out);
void etok_spm_encode(const etok *t, const char *text, size_t len, etok_ids *out);

/* sentencepiece normalisation of text into out (for tests and encoders). */
void etok_spm_normalize(const etok *t, const char *text, size_t len, tbuf *out);

#endif
