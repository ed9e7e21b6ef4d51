/* tokjson_int — what the tokjson*.c files share: the loaded tokenizer's
 * parts, the working buffers of an encoding, UTF-8 and Unicode helpers.
 * Not a public interface. */
#ifndef TROVE_TOKJSON_INT_H
#define TROVE_TOKJSON_INT_H

#include <jansson.h>
#include <stdatomic.h>

#include "embed/tokenizers/etok.h"
#include "embed/tokenizers/tokjson.h"
#include "util/arena.h"
#include "util/buf.h"

/* ---- text with provenance ----
 * Every byte of a working string carries the byte span [a, b) of the
 * original text it came from, so offsets survive normalisation. */
typedef struct tj_buf {
    char *s;
    uint32_t *a, *b;
    size_t n, cap;
} tj_buf;

void tj_buf_reserve(tj_buf *t, size_t extra);
void tj_buf_put(tj_buf *t, const char *s, size_t n, uint32_t a, uint32_t b);
void tj_buf_put_cp(tj_buf *t, uint32_t cp, uint32_t a, uint32_t b);
/* One byte: the hot path of the per-character normalizers. */
static inline void tj_buf_put1(tj_buf *t, char c, uint32_t a, uint32_t b) {
    if (t->n == t->cap) tj_buf_reserve(t, 1);
    t->s[t->n] = c;
    t->a[t->n] = a;
    t->b[t->n] = b;
    t->n++;
}
/* Copy n bytes of src from i, keeping their spans. */
void tj_buf_copy(tj_buf *t, const tj_buf *src, size_t i, size_t n);
void tj_buf_free(tj_buf *t);

/* A string cut into segments; a segment with id >= 0 is an added token
 * already resolved (later stages pass it through). */
typedef struct tj_seg {
    uint32_t start, end;
    int32_t id;
} tj_seg;

typedef struct tj_seq {
    tj_buf buf;
    tj_seg *seg;
    size_t nseg, segcap;
} tj_seq;

void tj_seq_reset(tj_seq *q);
void tj_seq_push(tj_seq *q, uint32_t start, uint32_t end, int32_t id);
void tj_seq_free(tj_seq *q);

/* ---- UTF-8 ---- */
/* Decode at s[0..n) (n > 0): returns bytes consumed (>= 1) and sets *cp;
 * an invalid maximal subpart reads as U+FFFD. */
size_t tj_utf8_next(const uint8_t *s, size_t n, uint32_t *cp);
/* Length of the (valid) UTF-8 character s starts with. */
static inline size_t tj_clen(uint8_t c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
/* Code point of the valid UTF-8 character at s, *len set. Working strings
 * are valid UTF-8 after the input is decoded once. */
uint32_t tj_cp_at(const char *s, size_t *len);

/* ---- Unicode classes (Rust's char methods, which HF uses) ---- */
bool tj_is_whitespace(uint32_t cp); /* White_Space property */
bool tj_is_alpha(uint32_t cp);      /* \p{L} */
bool tj_is_numeric(uint32_t cp);    /* \p{N} */
bool tj_is_alnum(uint32_t cp);
bool tj_is_punct(uint32_t cp);      /* ASCII punctuation or \p{P} */
bool tj_is_word(uint32_t cp);       /* regex \w */

/* ---- string table: token text <-> id ---- */
typedef struct tj_strtab {
    char *pieces;      /* every piece back to back (piece id at off[id]) */
    size_t pieces_len;
    arena mem;         /* owns pieces */
    uint32_t *off, *len; /* by id; len UINT32_MAX: no token */
    uint32_t n;          /* ids 0..n-1 */
    uint64_t *slots;     /* hash << 32 | (id + 1); 0 empty */
    uint32_t mask;
    uint32_t max_len;
    bool borrowed;       /* pieces/off/len/slots point into a mapped cache entry:
                            not freed, and trusted only through the bounds checks
                            of every lookup (tj_strtab_find_h, tj_strtab_get) */
} tj_strtab;

#define TJ_HASH_INIT 2166136261u
static inline uint32_t tj_hash_step(uint32_t h, uint8_t c) { return (h ^ c) * 16777619u; }
uint32_t tj_hash(const char *s, size_t n);

/* Build from (text, id) pairs; ids may have holes. Fails on a duplicate
 * id, which the caller names. */
trove_err tj_strtab_build(tj_strtab *t, const char *const *text, const size_t *len,
                          const uint32_t *ids, size_t count);
int32_t tj_strtab_find_h(const tj_strtab *t, const char *s, size_t n, uint32_t h);
static inline int32_t tj_strtab_find(const tj_strtab *t, const char *s, size_t n) {
    return tj_strtab_find_h(t, s, n, tj_hash(s, n));
}
const char *tj_strtab_get(const tj_strtab *t, int32_t id, size_t *len);
void tj_strtab_free(tj_strtab *t);

/* ---- normalizers ---- */
enum {
    TJN_SEQ = 1, TJN_NFC, TJN_NFD, TJN_NFKC, TJN_NFKD, TJN_LOWER, TJN_STRIP,
    TJN_STRIP_ACCENTS, TJN_REPLACE, TJN_PREPEND, TJN_BERT, TJN_PRECOMPILED, TJN_NMT,
};

typedef struct tj_norm {
    int kind;
    struct tj_norm *sub;
    size_t nsub;
    bool clean, chinese, accents, lower; /* BertNormalizer */
    bool left, right;                    /* Strip */
    char *pat, *rep;                     /* Replace, Prepend (rep) */
    size_t pat_len, rep_len;
    size_t rx_min;                       /* Replace regex "c+" / "c{n,}": run of pat, n >= rx_min */
    bool rx_ws;                          /* Replace regex "\\s+": any run of White_Space */
    etok *spm;                           /* Precompiled: etok's normaliser */
    char amap[128][8];                   /* Precompiled: ASCII characters */
    uint8_t alen[128];
} tj_norm;

trove_err tj_norm_parse(json_t *j, tj_norm *n);
void tj_norm_free(tj_norm *n);
/* Normalise in[i..j) into out (appended). */
void tj_norm_apply(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *out,
                   tj_buf tmp[2]);

/* ---- pre-tokenizers ---- */
enum {
    TJP_SEQ = 1, TJP_WHITESPACE, TJP_WSSPLIT, TJP_BERT, TJP_PUNCT, TJP_METASPACE,
    TJP_BYTELEVEL, TJP_DIGITS, TJP_SPLIT,
};
enum { TJ_REMOVED = 1, TJ_ISOLATED, TJ_MERGED_PREV, TJ_MERGED_NEXT, TJ_CONTIGUOUS };
enum { TJ_PAT_STRING = 1, TJ_PAT_GPT2, TJ_PAT_QWEN2, TJ_PAT_LLAMA3 };
enum { TJ_PREPEND_ALWAYS = 1, TJ_PREPEND_FIRST, TJ_PREPEND_NEVER };

typedef struct tj_pre {
    int kind;
    struct tj_pre *sub;
    size_t nsub;
    int behavior;
    bool invert;
    int pattern;
    char *pat;
    size_t pat_len;
    bool add_prefix_space, use_regex, individual, split;
    char repl[4];
    size_t repl_len;
    uint32_t repl_cp;
    int prepend;
} tj_pre;

trove_err tj_pre_parse(json_t *j, tj_pre *p);
void tj_pre_free(tj_pre *p);
/* Pre-tokenise the segments of in into out (in is left as it was). */
void tj_pre_apply(const tj_pre *p, const tj_seq *in, tj_seq *out, tj_seq *tmp);
/* The Split regexes tokjson implements by hand (exact tokenizer.json text). */
extern const char tj_re_gpt2[], tj_re_qwen2[], tj_re_llama3[];
/* GPT-2 byte-to-unicode: the code point byte b is spelled as. */
uint32_t tj_byte_char(uint8_t b);

/* ---- models ---- */
enum { TJM_WORDPIECE = 1, TJM_WORDLEVEL, TJM_BPE, TJM_UNIGRAM };

typedef struct tj_model {
    int kind;
    tj_strtab vocab;
    int32_t unk; /* -1: none */
    char *unk_text; /* resolved to unk by tj_model_finish() */
    size_t unk_len;
    /* WordPiece: prefix "##"; BPE: continuing_subword_prefix */
    char *prefix, *suffix;
    size_t prefix_len, suffix_len;
    uint32_t max_chars;
    bool byte_fallback, fuse_unk, ignore_merges;
    int32_t byte_id[256]; /* <0xNN> pieces, -1 absent */
    /* BPE merges: open addressing on (left << 32 | right) */
    uint64_t *mkey;       /* 0: empty (ids are stored + 1) */
    uint32_t *mrank;
    int32_t *mnew;
    uint32_t mmask, nmerges;
    /* Unigram */
    double *score;
    double min_score;
    /* Unigram: a filter of every piece's prefixes (one bit per hash of a
     * prefix; a collision only costs a lookup), built at the first long
     * word (tokjson_model.c, prefix_filter) and owned here. */
    _Atomic(uint64_t *) pfx;
    _Atomic uint32_t pfx_shift;
    bool borrowed; /* mkey/mrank/mnew/score point into a mapped cache entry */
} tj_model;

/* Fill the model from its JSON object; with_vocab: vocab and merges
 * too (else the caller fills them, then calls tj_model_finish()). */
trove_err tj_model_parse(json_t *j, tj_model *m, bool with_vocab);
/* Finish a model whose vocab (and merges, scores) are in place (the
 * binary form stores what this computes: tokjson_bin.c's bin_stats). */
void tj_model_finish(tj_model *m);
/* BPE merges filled one by one (tokenizer.json or GGUF): room for n, then
 * merge `rank` of pieces a + b (both and their concatenation must be in the
 * vocab, else TROVE_ECORRUPT naming the merge). cat: scratch. */
void tj_model_alloc_merges(tj_model *m, size_t n);
trove_err tj_model_add_merge(tj_model *m, size_t rank, const char *a, size_t al, const char *b,
                             size_t bl, tbuf *cat);
void tj_model_free(tj_model *m);
/* Tokenise one pre-tokenised word w[i..j) (spans in w), appending ids. */
void tj_model_encode(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e,
                     tokjson_scratch *sc);

/* ---- the tokenizer ---- */
typedef struct tj_added {
    int32_t id;
    bool special, single_word, lstrip, rstrip, normalized;
} tj_added;

struct tokjson {
    json_t *config;   /* the JSON, less model vocab/merges: kept for tokjson_save */
    tj_norm *norm;    /* NULL: none */
    tj_pre *pre;      /* NULL: none */
    tj_model model;
    tj_added *added;     /* by index in added_tab */
    size_t n_added;
    tj_strtab added_tab; /* content -> index into added[] */
    /* matching: [0] raw contents of normalized=false tokens, [1] the
     * normalised contents of normalized=true ones; "ids" are indexes */
    tj_strtab match[2];
    uint64_t match_first[2][4]; /* first bytes, a quick rejection */
    int32_t *post_pre, *post_post; /* ids around the sequence */
    size_t n_post_pre, n_post_post;
    size_t n_ids;
    void (*release)(void *); /* a borrowed load: frees what the tables point into */
    void *owner;
};

/* Scratch of one encoder (in tokjson_enc). */
struct tokjson_scratch {
    tj_seq q[3];
    tj_buf t[2];
    void *mem;     /* model scratch */
    size_t memcap;
    int32_t *ids;  /* model scratch ids */
    size_t idcap;
};

void tj_enc_push(tokjson_enc *e, int32_t id, uint32_t a, uint32_t b);
/* Scratch memory of at least n bytes (contents not kept). */
void *tj_scratch(tokjson_scratch *sc, size_t n);

/* JSON helpers: member as string/bool/int with defaults and type checks;
 * errors name the component. */
trove_err tj_json_str(json_t *o, const char *key, const char *what, bool required,
                      const char **s, size_t *len);
bool tj_json_bool(json_t *o, const char *key, bool dflt);

/* Build the tokenizer from a parsed tokenizer.json (model vocab/merges
 * included, taken out of the JSON afterwards). */
trove_err tj_from_json(json_t *root, tokjson **out);
trove_err tj_finish_config(tokjson *t);
/* Binary form. */
bool tj_bin_is(const void *buf, size_t len);
/* borrow: the vocabulary, merge and score tables point into buf (8-byte
 * aligned, kept unchanged while the tokjson lives) instead of copies, and
 * are checked on each lookup rather than all at load. */
trove_err tj_bin_load(const void *buf, size_t len, bool borrow, tokjson **out);

#endif
