/* tok — see tok.h.
 *
 * One pass over the bytes groups code points into runs: a word run (letters,
 * digits and marks outside CJK), a CJK run, or separators. Pure-ASCII words
 * (the common case in notes) are folded with a few comparisons into a stack
 * buffer; anything else is folded by utf8proc into a thread-local code point
 * buffer, so no token costs a malloc. */
#include "text/tok.h"

#if TROVE_STEM_DIRECT
#include "text/stem_direct.h"
#else
#include <libstemmer.h>
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tok_int.h"
#include "util/mem.h"

/* Bytes of one word handed to utf8proc; the folded form is cut to
 * TOK_MAX_TERM anyway, and a cap keeps the fold buffer bounded. */
#define TOK_MAX_FOLD_IN 192
/* Code points in the fold buffer. One input code point decomposes into at
 * most 18, and folding retries on a shorter prefix if it ever overflows. */
#define TOK_FOLD_CAP 1024

#define WORD_OPTS (UTF8PROC_CASEFOLD | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT | \
                   UTF8PROC_STRIPMARK | UTF8PROC_STABLE)
/* CJK terms get NFKC without mark stripping: stripping would turn が into
 * か, and recomposition keeps Hangul syllables whole. */
#define CJK_OPTS (UTF8PROC_CASEFOLD | UTF8PROC_COMPOSE | UTF8PROC_COMPAT | \
                  UTF8PROC_STABLE)

/* ---- UTF-8 and classification ------------------------------------------ */

int tok_utf8_next(const char *text, size_t len, size_t *i)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t p = *i;
    unsigned c = s[p];
    if (c < 0x80) {
        *i = p + 1;
        return (int)c;
    }
    size_t n;
    unsigned cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, cp = c & 0x07, min = 0x10000;
    } else {
        *i = p + 1;
        return -1;
    }
    if (len - p < n) {
        *i = p + 1;
        return -1;
    }
    for (size_t k = 1; k < n; k++) {
        unsigned cc = s[p + k];
        if ((cc & 0xC0) != 0x80) {
            *i = p + 1;
            return -1;
        }
        cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *i = p + 1;
        return -1;
    }
    *i = p + n;
    return (int)cp;
}

int tok_is_cjk(int cp)
{
    if (cp < 0x1100)
        return 0;
    if (cp <= 0x11FF)                       /* Hangul Jamo */
        return 1;
    if (cp < 0x3005)
        return 0;
    if (cp <= 0x3007)                       /* 々 〆 〇 */
        return 1;
    if (cp >= 0x3021 && cp <= 0x3029)       /* Hangzhou numerals */
        return 1;
    if (cp >= 0x3038 && cp <= 0x303B)
        return 1;
    if (cp >= 0x3041 && cp <= 0x309F)       /* Hiragana */
        return cp != 0x309B && cp != 0x309C;
    if (cp >= 0x30A1 && cp <= 0x30FF)       /* Katakana, less ・ */
        return cp != 0x30FB;
    if (cp >= 0x3131 && cp <= 0x318E)       /* Hangul compatibility jamo */
        return 1;
    if (cp >= 0x31F0 && cp <= 0x31FF)       /* Katakana phonetic ext. */
        return 1;
    if (cp >= 0x3400 && cp <= 0x4DBF)       /* CJK ext. A */
        return 1;
    if (cp >= 0x4E00 && cp <= 0x9FFF)       /* CJK unified */
        return 1;
    if (cp >= 0xA960 && cp <= 0xA97F)       /* Hangul jamo ext. A */
        return 1;
    if (cp >= 0xAC00 && cp <= 0xD7FF)       /* Hangul syllables, jamo ext. B */
        return 1;
    if (cp >= 0xF900 && cp <= 0xFAFF)       /* CJK compatibility ideographs */
        return 1;
    if (cp >= 0xFF66 && cp <= 0xFF9F)       /* halfwidth katakana */
        return 1;
    if (cp >= 0xFFA0 && cp <= 0xFFDC)       /* halfwidth hangul */
        return 1;
    if (cp >= 0x1B000 && cp <= 0x1B16F)     /* kana supplement/extended */
        return 1;
    if (cp >= 0x20000 && cp <= 0x323AF)     /* CJK ext. B-H, compat suppl. */
        return 1;
    return 0;
}

enum { C_SEP, C_WORD, C_DIGIT, C_CJK, C_MARK };

static int classify(int cp)
{
    if (cp < 0)
        return C_SEP;
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return tok_is_cjk(cp) ? C_CJK : C_WORD;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return tok_is_cjk(cp) ? C_CJK : C_DIGIT;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
        return C_MARK;
    default:
        return C_SEP;
    }
}

int tok_cjk_char(int cp)
{
    if (!tok_is_cjk(cp))
        return 0;
    int c = classify(cp);
    return c == C_CJK || c == C_MARK;
}

int tok_has_cjk(const char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        if ((unsigned char)text[i] < 0x80) {
            i++;
            continue;
        }
        if (tok_cjk_char(tok_utf8_next(text, len, &i)))
            return 1;
    }
    return 0;
}

/* ---- folding ------------------------------------------------------------ */

static _Thread_local utf8proc_int32_t fold_buf[TOK_FOLD_CAP];

/* Largest length <= n that ends on a character boundary of s. */
static size_t utf8_floor(const char *s, size_t n)
{
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* Fold s[0..len) with utf8proc; *out points into the thread-local buffer.
 * Returns the folded length in bytes, cut to TOK_MAX_TERM. */
static size_t fold_unicode(const char *s, size_t len, utf8proc_option_t opts,
                           const char **out)
{
    if (len > TOK_MAX_FOLD_IN)
        len = utf8_floor(s, TOK_MAX_FOLD_IN);
    utf8proc_ssize_t n;
    for (;;) {
        n = utf8proc_decompose((const utf8proc_uint8_t *)s,
                               (utf8proc_ssize_t)len, fold_buf,
                               TOK_FOLD_CAP - 1, opts);
        if (n < 0)
            return 0;
        if (n < TOK_FOLD_CAP)
            break;
        len = utf8_floor(s, len / 2);
        if (len == 0)
            return 0;
    }
    n = utf8proc_reencode(fold_buf, n, opts);
    if (n <= 0)
        return 0;
    const char *r = (const char *)fold_buf;
    size_t rl = (size_t)n;
    if (rl > TOK_MAX_TERM)
        rl = utf8_floor(r, TOK_MAX_TERM);
    *out = r;
    return rl;
}

/* ---- stemming ----------------------------------------------------------- */

/* The English Snowball stemmer: its own functions where libstemmer's
 * archive is linked (text/stem_direct.h says why), else the public API. */
#if TROVE_STEM_DIRECT
typedef struct SN_env stemmer;

static stemmer *stemmer_new(void)
{
    return english_UTF_8_create_env();
}

static void stemmer_free(stemmer *z)
{
    english_UTF_8_close_env(z);
}

/* sb_stemmer_stem, for one stemmer: the stem and its length, or NULL. */
static const char *stemmer_run(stemmer *z, const char *w, int len, int *out_len)
{
    if (SN_set_current(z, len, (const unsigned char *)w) != 0 || english_UTF_8_stem(z) < 0)
        return NULL;
    *out_len = z->l;
    return (const char *)z->p;
}
#else
typedef struct sb_stemmer stemmer;

static stemmer *stemmer_new(void)
{
    return sb_stemmer_new("english", NULL);
}

static void stemmer_free(stemmer *sb)
{
    sb_stemmer_delete(sb);
}

static const char *stemmer_run(stemmer *sb, const char *w, int len, int *out_len)
{
    const sb_symbol *r = sb_stemmer_stem(sb, (const sb_symbol *)w, len);
    *out_len = r ? sb_stemmer_length(sb) : 0;
    return (const char *)r;
}
#endif

/* A stemmer keeps state per instance, so each thread gets its own, with a
 * small direct-mapped cache of recent stems in front of it: word frequencies
 * are Zipfian, so most lookups hit, at a fraction of a Snowball run. The key
 * destructor frees both when the thread exits.
 * The cache starts small and grows to its full size once the stemmer has run
 * STEM_CACHE_GROW times per slot: a cold search stems a few dozen words,
 * and each page of a full-size cache it touched (100 KB, slots hashed all
 * over it) was a page fault, tens of µs on a VM, where a Snowball run costs
 * about one. Indexing reaches 2,048 slots within its first note or two,
 * and 16,384 (800 KB) after 4,096 runs: indexing the tldr pages (many
 * languages) ran Snowball (~2,000 instructions a run) 225,117 times with
 * 2,048 slots, 96,149 times with 16,384. */
#define STEM_CACHE_SLOTS 2048        /* power of two */
#define STEM_CACHE_MAX 16384         /* power of two */
#define STEM_CACHE_FIRST 128         /* power of two: 6 KB */
#define STEM_CACHE_GROW 2
#define STEM_CACHE_WORD 24           /* longer words bypass the cache */

typedef struct stem_slot {
    unsigned char wlen, slen;
    char word[STEM_CACHE_WORD];
    char stem[STEM_CACHE_WORD];
} stem_slot;

typedef struct stem_state {
    stemmer *sb;
    size_t n_slots;     /* STEM_CACHE_FIRST, STEM_CACHE_SLOTS, then STEM_CACHE_MAX */
    size_t runs;        /* stemmer runs while the cache is small */
    stem_slot *slots;
} stem_state;

static _Thread_local stem_state *tl_stem;
static _Thread_local int tl_stem_failed;
static pthread_key_t stem_key;
static pthread_once_t stem_once = PTHREAD_ONCE_INIT;

static void stem_state_free(void *p)
{
    stem_state *s = p;
    stemmer_free(s->sb);
    free(s->slots);
    free(s);
}

static void stem_key_init(void)
{
    pthread_key_create(&stem_key, stem_state_free);
}

static stem_state *stem_get(void)
{
    if (tl_stem || tl_stem_failed)
        return tl_stem;
    stemmer *sb = stemmer_new();
    if (!sb) {
        tl_stem_failed = 1;
        return NULL;
    }
    pthread_once(&stem_once, stem_key_init);
    tl_stem = xcalloc(1, sizeof *tl_stem);
    tl_stem->sb = sb;
    tl_stem->n_slots = STEM_CACHE_FIRST;
    tl_stem->slots = xcalloc(STEM_CACHE_FIRST, sizeof *tl_stem->slots);
    pthread_setspecific(stem_key, tl_stem);
    return tl_stem;
}

/* One more stemmer run; a cache that has seen enough of them for its
 * size is replaced by the next larger one (empty: the next lookups fill
 * it). */
static void stem_count_run(stem_state *st)
{
    if (st->n_slots == STEM_CACHE_MAX || ++st->runs < STEM_CACHE_GROW * st->n_slots)
        return;
    free(st->slots);
    st->n_slots = st->n_slots == STEM_CACHE_FIRST ? STEM_CACHE_SLOTS : STEM_CACHE_MAX;
    st->slots = xcalloc(st->n_slots, sizeof *st->slots);
}

static uint32_t hash_word(const char *w, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    return h;
}

/* The English stemmer only makes sense for Latin letters. */
static int latin_word(const char *w, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)w[i];
        if (c < 0x80) {
            if (c < 'a' || c > 'z')
                return 0;
            i++;
            continue;
        }
        int cp = tok_utf8_next(w, len, &i);
        if (!((cp >= 0xC0 && cp <= 0x24F) || (cp >= 0x1E00 && cp <= 0x1EFF) ||
              (cp >= 0x2C60 && cp <= 0x2C7F) || (cp >= 0xA720 && cp <= 0xA7FF)))
            return 0;
    }
    return 1;
}

/* Stem w in place when it is worth it; the result may point at the
 * stemmer's own buffer (valid until the next stem on this thread). */
static void stem_word(const char **w, size_t *len)
{
    /* Snowball English leaves words of up to two letters alone. */
    if (*len <= 2 || !latin_word(*w, *len))
        return;
    stem_state *st = stem_get();
    if (!st)
        return;
    stem_slot *slot = NULL;
    if (*len <= STEM_CACHE_WORD) {
        slot = &st->slots[hash_word(*w, *len) & (st->n_slots - 1)];
        if (slot->wlen == *len && memcmp(slot->word, *w, *len) == 0) {
            *w = slot->stem;
            *len = slot->slen;
            return;
        }
    }
    int rl = 0;
    const char *r = stemmer_run(st->sb, *w, (int)*len, &rl);
    if (!r || rl <= 0)
        return;
    size_t n_before = st->n_slots;
    stem_count_run(st);
    if (slot && st->n_slots == n_before && rl <= STEM_CACHE_WORD) {
        slot->wlen = (unsigned char)*len;
        memcpy(slot->word, *w, *len);
        slot->slen = (unsigned char)rl;
        memcpy(slot->stem, r, (size_t)rl);
    }
    *w = (const char *)r;
    *len = (size_t)rl;
}

/* ---- runs ----------------------------------------------------------------- */

typedef struct tok_state {
    int stem, query, skip_cjk, ascii_first;
    const tok_first *stem_only;
    void *ctx;
    tok_fcb cb;
} tok_state;

void tok_first_add(tok_first *f, const char *term)
{
    if (!*term) {
        memset(f->bits, 0xff, sizeof f->bits);
        return;
    }
    unsigned char c = (unsigned char)term[0];
    f->bits[c >> 6] |= (uint64_t)1 << (c & 63);
}

int tok_first_ascii(const tok_first *f)
{
    return f->bits[2] == 0 && f->bits[3] == 0;
}

static int first_in(const tok_first *f, const char *w)
{
    unsigned char c = (unsigned char)w[0];
    return (int)((f->bits[c >> 6] >> (c & 63)) & 1);
}

/* Whether the character at s[0 .. len) folds, alone, to text that starts
 * with a non-ASCII byte (tok_opts.ascii_first); per thread, the answers
 * for the last characters asked, by code point. */
static _Thread_local struct {
    int32_t cp;
    int8_t known, non_ascii;
} first_fold[256];

static int first_folds_non_ascii(const char *s, size_t len)
{
    size_t i = 0;
    int cp = tok_utf8_next(s, len, &i);
    if (cp < 0x80)
        return 0;
    unsigned slot = (unsigned)cp & 255;
    if (first_fold[slot].known && first_fold[slot].cp == cp)
        return first_fold[slot].non_ascii;
    const char *w;
    size_t wl = fold_unicode(s, i, WORD_OPTS, &w);
    int v = wl > 0 && (unsigned char)w[0] >= 0x80;
    first_fold[slot].cp = cp;
    first_fold[slot].known = 1;
    first_fold[slot].non_ascii = (int8_t)v;
    return v;
}

static int emit_word(const tok_state *st, const char *text, size_t start,
                     size_t end, int ascii, int digit)
{
    char small[TOK_MAX_TERM];
    const char *w;
    size_t wl;
    int truncated;
    if (ascii) {
        wl = end - start;
        truncated = wl > TOK_MAX_TERM;
        if (truncated)
            wl = TOK_MAX_TERM;
        for (size_t k = 0; k < wl; k++) {
            char c = text[start + k];
            small[k] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
        }
        w = small;
    } else {
        if (st->ascii_first && first_folds_non_ascii(text + start, end - start))
            return 0;
        wl = fold_unicode(text + start, end - start, WORD_OPTS, &w);
        if (wl == 0)        /* only marks, or nothing survived folding */
            return 0;
        truncated = wl == TOK_MAX_TERM || end - start > TOK_MAX_FOLD_IN;
    }
    if (st->stem && !digit && !truncated && (!st->stem_only || first_in(st->stem_only, w)))
        stem_word(&w, &wl);
    return st->cb(st->ctx, w, wl, start, end, 0);
}

/* ---- CJK segmentation ------------------------------------------------- */

static tok_segmenter g_seg;
static int g_seg_set;

void tok_set_cjk_segmenter(const tok_segmenter *seg)
{
    if (seg && seg->segment) {
        g_seg = *seg;
        g_seg_set = 1;
    } else {
        g_seg_set = 0;
    }
}

typedef struct cjk_emit_ctx {
    const tok_state *st;
    size_t base;     /* offset of the run in the text */
    size_t run_len;
    int stop;        /* non-zero once the callback asked to stop */
} cjk_emit_ctx;

/* Code points NFKC and case folding leave unchanged: unified ideographs,
 * plain kana and Hangul syllables cover nearly all real CJK text. */
static int cjk_stable(const char *t, size_t len)
{
    size_t i = 0;
    while (i < len) {
        int cp = tok_utf8_next(t, len, &i);
        if (!((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
              (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30A1 && cp <= 0x30FA) ||
              (cp >= 0xAC00 && cp <= 0xD7A3)))
            return 0;
    }
    return 1;
}

static int cjk_emit(void *vctx, const char *term, size_t len, size_t start,
                    size_t end, int flags)
{
    cjk_emit_ctx *e = vctx;
    if (e->stop)
        return e->stop;
    /* A segmenter is other people's code: never trust its offsets. */
    if (start > end || end > e->run_len || len == 0)
        return 0;
    const char *w = term;
    size_t wl = len;
    if (!cjk_stable(term, len)) {
        wl = fold_unicode(term, len, CJK_OPTS, &w);
        if (wl == 0)
            return 0;
    } else if (wl > TOK_MAX_TERM) {
        wl = utf8_floor(term, TOK_MAX_TERM);
    }
    if (e->st->query)
        flags &= ~TOK_COLOCATED;
    e->stop = e->st->cb(e->st->ctx, w, wl, e->base + start, e->base + end,
                        flags & TOK_COLOCATED);
    return e->stop;
}

int tok_is_mark(int cp)
{
    if (cp < 0x300)
        return 0;
    utf8proc_category_t c = utf8proc_category(cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC ||
           c == UTF8PROC_CATEGORY_ME;
}

int tok_cjk_bigrams(const char *run, size_t len, void *emit_ctx, tok_emit_fn emit)
{
    size_t prev = (size_t)-1, cur = 0, i = 0;
    int n_chars = 0, rc;
    while (i < len) {
        size_t at = i;
        int cp = tok_utf8_next(run, len, &i);
        if (n_chars > 0 && tok_is_mark(cp))
            continue;
        if (n_chars >= 2 && (rc = emit(emit_ctx, run + prev, at - prev, prev, at, 0)))
            return rc;
        prev = cur;
        cur = at;
        n_chars++;
    }
    if (n_chars == 1)
        return emit(emit_ctx, run, len, 0, len, 0);
    if (n_chars >= 2)
        return emit(emit_ctx, run + prev, len - prev, prev, len, 0);
    return 0;
}

static int jieba_block_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("+#&._%-", c) != NULL);
}

static int emit_cjk(const tok_state *st, const char *text, size_t len, size_t start,
                    size_t end)
{
    cjk_emit_ctx e = {st, start, end - start, 0};
    int rc;
    int flags = (st->query ? TOK_SEG_QUERY : 0) |
                (start > 0 && jieba_block_char((unsigned char)text[start - 1])
                     ? TOK_SEG_ASCII_BEFORE : 0) |
                (end < len && jieba_block_char((unsigned char)text[end])
                     ? TOK_SEG_ASCII_AFTER : 0);
    if (g_seg_set)
        rc = g_seg.segment(g_seg.ud, text + start, end - start, flags, &e, cjk_emit);
    else
        rc = tok_cjk_bigrams(text + start, end - start, &e, cjk_emit);
    return e.stop ? e.stop : rc;
}

/* ---- the scanner ---------------------------------------------------------- */

static inline int ascii_alnum(unsigned char c)
{
    return (unsigned)((c | 0x20) - 'a') < 26 || (unsigned)(c - '0') < 10;
}

/* Bump when the rules above change what terms a text makes. */
#define TOK_RULES_VERSION "tok-1"

const char *tok_version(void)
{
    static _Thread_local char v[128];
    const char *sv = g_seg_set && g_seg.version ? g_seg.version(g_seg.ud) : NULL;
    snprintf(v, sizeof v, "%s+%s", TOK_RULES_VERSION, sv ? sv : "bigram-1");
    return v;
}

const char *tok_stamp(void)
{
    static _Thread_local char v[512];
    if (!g_seg_set)
        return tok_version();   /* bigrams: the version is the stamp */
    const char *ss = g_seg.stamp ? g_seg.stamp(g_seg.ud) : NULL;
    if (!ss)
        return NULL;
    snprintf(v, sizeof v, "%s+%s", TOK_RULES_VERSION, ss);
    return v;
}

typedef struct plain_ctx {
    void *ctx;
    tok_cb cb;
} plain_ctx;

static int plain_cb(void *vctx, const char *t, size_t len, size_t s, size_t e, int flags)
{
    (void)flags;
    plain_ctx *p = vctx;
    return p->cb(p->ctx, t, len, s, e);
}

int tok_run(const tok_opts *opts, const char *text, size_t len, void *ctx, tok_cb cb)
{
    plain_ctx p = {ctx, cb};
    return tok_run_flags(opts, text, len, &p, plain_cb);
}

int tok_run_flags(const tok_opts *opts, const char *text, size_t len, void *ctx,
                  tok_fcb cb)
{
    tok_state st = {opts ? opts->stem : 0, opts ? opts->query : 0, opts ? opts->skip_cjk : 0,
                    opts ? opts->ascii_first : 0, opts ? opts->stem_only : NULL, ctx, cb};
    size_t i = 0;
    int rc;
    if (!text)
        return 0;
    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x80 && !ascii_alnum(c)) {
            i++;
            continue;
        }
        size_t start = i, end;
        int kind;
        if (c < 0x80) {
            kind = (c >= '0' && c <= '9') ? C_DIGIT : C_WORD;
            i++;
        } else {
            kind = classify(tok_utf8_next(text, len, &i));
            /* A mark with no letter before it (a variation selector after
             * an emoji, say) belongs to no word. */
            if (kind == C_SEP || kind == C_MARK)
                continue;
        }
        if (kind == C_CJK) {
            for (end = i; i < len; end = i) {
                if ((unsigned char)text[i] < 0x80)
                    break;
                int k = classify(tok_utf8_next(text, len, &i));
                if (k != C_CJK && k != C_MARK)
                    break;
            }
            i = end;
            if (!st.skip_cjk && (rc = emit_cjk(&st, text, len, start, end)))
                return rc;
            continue;
        }
        int ascii = c < 0x80, digit = kind == C_DIGIT;
        /* ASCII inner loop first: most words never leave it. */
        for (end = i; i < len; end = i) {
            c = (unsigned char)text[i];
            if (c < 0x80) {
                if (!ascii_alnum(c))
                    break;
                digit |= c <= '9';
                i++;
                continue;
            }
            int k = classify(tok_utf8_next(text, len, &i));
            if (k == C_SEP || k == C_CJK)
                break;
            ascii = 0;
            digit |= k == C_DIGIT;
        }
        i = end;
        if ((rc = emit_word(&st, text, start, end, ascii, digit)))
            return rc;
    }
    return 0;
}
