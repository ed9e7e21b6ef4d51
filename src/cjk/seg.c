/* seg — see seg.h. The arithmetic mirrors jieba 0.42 (jieba/__init__.py and
 * jieba/finalseg/__init__.py) step by step, in doubles and in the same order
 * of operations, so routes and Viterbi paths tie-break the same way. */
#include "cjk/seg.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "cjk/ja.h"
#include "cjk/seg_dict.h"
#include "text/tok_int.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/fsutil.h"
#include "util/mem.h"

/* Longest user word, in characters. */
#define USER_MAX_WORD 32

/* ---- user words: an open-addressing table of code point strings --------- */

typedef struct uword {
    uint64_t hash;
    uint32_t off, len, freq;
    int used;
} uword;

typedef struct uwords {
    uword *slots;
    size_t n_slots, n;       /* n_slots is a power of two */
    uint32_t *pool;
    size_t n_pool, cap_pool;
} uwords;

struct seg {
    seg_dict *d;
    char *path;          /* of d, for seg_verify's message */
    uint64_t total;
    double logtotal;
    uwords user;
    char version[64];
};

static uint64_t cps_hash(const uint32_t *c, size_t n)
{
    return XXH3_64bits(c, n * sizeof *c);
}

static uword *user_find(const uwords *u, const uint32_t *c, size_t n)
{
    if (!u->n)
        return NULL;
    uint64_t h = cps_hash(c, n);
    for (size_t i = h & (u->n_slots - 1);; i = (i + 1) & (u->n_slots - 1)) {
        uword *w = &u->slots[i];
        if (!w->used)
            return NULL;
        if (w->hash == h && w->len == n && memcmp(u->pool + w->off, c, n * sizeof *c) == 0)
            return w;
    }
}

static void user_grow(uwords *u)
{
    size_t ns = u->n_slots ? u->n_slots * 2 : 64;
    uword *old = u->slots;
    size_t on = u->n_slots;
    u->slots = xcalloc(ns, sizeof *u->slots);
    u->n_slots = ns;
    for (size_t k = 0; k < on; k++) {
        if (!old[k].used)
            continue;
        size_t i = old[k].hash & (ns - 1);
        while (u->slots[i].used)
            i = (i + 1) & (ns - 1);
        u->slots[i] = old[k];
    }
    free(old);
}

/* Set the frequency of c[0..n) (a prefix entry when freq is 0 and the
 * spelling is new; never lowers an existing word to a prefix). */
static void user_put(uwords *u, const uint32_t *c, size_t n, uint32_t freq, int prefix)
{
    uword *w = user_find(u, c, n);
    if (w) {
        if (!prefix)
            w->freq = freq;
        return;
    }
    if ((u->n + 1) * 2 > u->n_slots)
        user_grow(u);
    uint64_t h = cps_hash(c, n);
    size_t i = h & (u->n_slots - 1);
    while (u->slots[i].used)
        i = (i + 1) & (u->n_slots - 1);
    xgrow(&u->pool, &u->cap_pool, u->n_pool + n, sizeof *u->pool);
    memcpy(u->pool + u->n_pool, c, n * sizeof *c);
    u->slots[i] = (uword){h, (uint32_t)u->n_pool, (uint32_t)n, prefix ? 0 : freq, 1};
    u->n_pool += n;
    u->n++;
}

/* ---- dictionary view: base trie overlaid with the user words ------------- */

/* jieba's FREQ.get(word) (0 when absent or a mere prefix). */
static uint32_t word_freq(const seg *s, const uint32_t *c, size_t n)
{
    const uword *w = user_find(&s->user, c, n);
    if (w)
        return w->freq ? w->freq : seg_dict_freq(s->d, c, n);
    return seg_dict_freq(s->d, c, n);
}

/* ---- scratch --------------------------------------------------------------- */

typedef struct scratch {
    uint32_t *cp;        /* code points of the Han piece */
    uint32_t *ncp;       /* the same, traditional ones made simplified */
    size_t *off;         /* byte offset of each character, plus the end */
    double *prob;
    int32_t *next;
    unsigned char *bp;   /* Viterbi back-pointers, 4 per character */
    size_t cap;
} scratch;

static _Thread_local scratch tl_scr;
static pthread_key_t scr_key;
static pthread_once_t scr_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    scratch *s = p;
    free(s->cp);
    free(s->ncp);
    free(s->off);
    free(s->prob);
    free(s->next);
    free(s->bp);
    memset(s, 0, sizeof *s);
}

static void scr_key_init(void)
{
    pthread_key_create(&scr_key, scratch_free);
}

static scratch *scratch_get(size_t n)
{
    scratch *s = &tl_scr;
    if (n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap < n + 1)
            cap *= 2;
        s->cp = xrealloc(s->cp, cap * sizeof *s->cp);
        s->ncp = xrealloc(s->ncp, cap * sizeof *s->ncp);
        s->off = xrealloc(s->off, cap * sizeof *s->off);
        s->prob = xrealloc(s->prob, cap * sizeof *s->prob);
        s->next = xrealloc(s->next, cap * sizeof *s->next);
        s->bp = xrealloc(s->bp, cap * 4);
        if (!s->cap) {
            pthread_once(&scr_once, scr_key_init);
            pthread_setspecific(scr_key, s);
        }
        s->cap = cap;
    }
    return s;
}

/* ---- emitting ---------------------------------------------------------------- */

typedef struct cut {
    const seg *s;
    const char *run;     /* the whole run (offsets reported against it) */
    const uint32_t *cp;
    const uint32_t *ncp;
    int trad;            /* some ncp[k] != cp[k] in this piece */
    const size_t *off;   /* byte offsets into run */
    int query;
    void *ctx;
    tok_emit_fn emit;
} cut;

/* Frequency of the piece's characters [a, b): as written, or in simplified
 * form, whichever the dictionary knows better. */
static uint32_t piece_freq(const cut *c, size_t a, size_t b)
{
    uint32_t f = word_freq(c->s, c->cp + a, b - a);
    if (c->trad) {
        uint32_t g = word_freq(c->s, c->ncp + a, b - a);
        if (g > f)
            f = g;
    }
    return f;
}

/* Emit the characters [a, b) as one term: the text itself, or in a piece
 * with traditional characters their simplified spelling, so that 關島 and
 * 关岛 are the same term (cut to the tokenizer's longest term). */
static int emit_span(const cut *c, size_t a, size_t b, int flags)
{
    size_t s0 = c->off[a], e0 = c->off[b];
    if (!c->trad)
        return c->emit(c->ctx, c->run + s0, e0 - s0, s0, e0, flags);
    char term[TOK_MAX_TERM + 4];
    size_t n = 0;
    for (size_t k = a; k < b && n + 4 <= sizeof term; k++)
        n += esc_utf8_encode(c->ncp[k], term + n);
    return c->emit(c->ctx, term, n, s0, e0, flags);
}

/* One word [a, b) of the piece, then in document mode its inner dictionary
 * words of 2 and 3 characters at the same position. */
static int put_word(const cut *c, size_t a, size_t b)
{
    int rc = emit_span(c, a, b, 0);
    if (rc || c->query || b - a <= 2)
        return rc;
    for (size_t g = 2; g <= 3 && g < b - a; g++) {
        for (size_t i = a; i + g <= b; i++) {
            if (!piece_freq(c, i, i + g))
                continue;
            if ((rc = emit_span(c, i, i + g, TOK_COLOCATED)))
                return rc;
        }
    }
    return 0;
}

/* ---- HMM: jieba's finalseg ---------------------------------------------------- */

/* Predecessor states of each state, as finalseg's PrevStatus. */
static const int prev_state[4][2] = {
    [SEG_B] = {SEG_E, SEG_S}, [SEG_M] = {SEG_M, SEG_B},
    [SEG_E] = {SEG_B, SEG_M}, [SEG_S] = {SEG_S, SEG_E},
};
/* Python compares (prob, state) tuples: equal probabilities go to the
 * state whose letter sorts last (B < E < M < S). */
static const int letter_rank[4] = {[SEG_B] = 0, [SEG_E] = 1, [SEG_M] = 2, [SEG_S] = 3};

static double emit_p(const double *e, int state)
{
    return e ? e[state] : SEG_MIN_LOGP;
}

/* Emission row of character k: as written, else its simplified form. */
static const double *emit_row(const cut *c, size_t k)
{
    const double *e = seg_dict_emit(c->s->d, c->cp[k]);
    if (!e && c->trad && c->ncp[k] != c->cp[k])
        e = seg_dict_emit(c->s->d, c->ncp[k]);
    return e;
}

static int hmm_cut(const cut *c, scratch *scr, size_t a, size_t b)
{
    const seg_dict_hdr *h = c->s->d->hdr;
    size_t n = b - a;
    unsigned char *bp = scr->bp;
    double v[4], nv[4];
    const double *e = emit_row(c, a);
    for (int y = 0; y < 4; y++)
        v[y] = h->start[y] + emit_p(e, y);
    for (size_t t = 1; t < n; t++) {
        e = emit_row(c, a + t);
        for (int y = 0; y < 4; y++) {
            double em = emit_p(e, y);
            int best = -1;
            double bestp = 0;
            for (int k = 0; k < 2; k++) {
                int y0 = prev_state[y][k];
                double p = v[y0] + h->trans[y0][y] + em;
                if (best < 0 || p > bestp ||
                    (p == bestp && letter_rank[y0] > letter_rank[best])) {
                    best = y0;
                    bestp = p;
                }
            }
            nv[y] = bestp;
            bp[t * 4 + (size_t)y] = (unsigned char)best;
        }
        memcpy(v, nv, sizeof v);
    }
    int state = v[SEG_S] >= v[SEG_E] ? SEG_S : SEG_E;
    /* Walk the back-pointers, leaving each position's state in bp[t*4]. */
    for (size_t t = n; t-- > 0;) {
        int prev = t ? bp[t * 4 + (size_t)state] : 0;
        bp[t * 4] = (unsigned char)state;
        state = prev;
    }
    size_t begin = 0, nexti = 0;
    int rc;
    for (size_t t = 0; t < n; t++) {
        int st = bp[t * 4];
        if (st == SEG_B) {
            begin = t;
        } else if (st == SEG_E) {
            if ((rc = put_word(c, a + begin, a + t + 1)))
                return rc;
            nexti = t + 1;
        } else if (st == SEG_S) {
            if ((rc = put_word(c, a + t, a + t + 1)))
                return rc;
            nexti = t + 1;
        }
    }
    return nexti < n ? put_word(c, a + nexti, b) : 0;
}

/* ---- DAG and route: jieba's get_DAG / calc / __cut_DAG ------------------------ */

/* One prefix walk from a start character: the base trie and the user
 * words, advanced one character at a time. */
typedef struct walk {
    const uint32_t *cp;
    uint32_t node;
    int base, user;
} walk;

/* Advance to character j (the walk started at idx); returns the frequency
 * of cp[idx..j] (0: a prefix only) or -1 when no word continues. */
static long walk_step(const seg *s, walk *w, size_t idx, size_t j)
{
    if (w->base && !(w->node = seg_dict_child(s->d, w->node, w->cp[j])))
        w->base = 0;
    uint32_t f = w->base ? s->d->nodes[w->node].freq : 0;
    if (w->user) {
        const uword *u = user_find(&s->user, w->cp + idx, j - idx + 1);
        if (!u)
            w->user = 0;
        else if (u->freq)
            f = u->freq;
    }
    return w->base || w->user ? (long)f : -1;
}

static void calc_route(const seg *s, scratch *scr, size_t n, int trad)
{
    int has_user = s->user.n > 0;
    scr->prob[n] = 0;
    scr->next[n] = 0;
    for (size_t idx = n; idx-- > 0;) {
        double best = 0;
        int32_t bx = -1;
        walk wa = {scr->cp, 0, 1, has_user}, wb = {scr->ncp, 0, trad, trad && has_user};
        for (size_t j = idx; j < n; j++) {
            long fa = wa.base || wa.user ? walk_step(s, &wa, idx, j) : -1;
            long fb = wb.base || wb.user ? walk_step(s, &wb, idx, j) : -1;
            if (fa < 0 && fb < 0)
                break;
            uint32_t f = (uint32_t)(fa > fb ? fa : fb);
            if (f) {
                double p = (log((double)f) - s->logtotal) + scr->prob[j + 1];
                /* Later (longer) candidates win ties, as in Python's max. */
                if (bx < 0 || p >= best) {
                    best = p;
                    bx = (int32_t)j;
                }
            }
        }
        if (bx < 0) {            /* no word: the character alone, freq 1 */
            best = (0.0 - s->logtotal) + scr->prob[idx + 1];
            bx = (int32_t)idx;
        }
        scr->prob[idx] = best;
        scr->next[idx] = bx;
    }
}

/* A run of single-character steps: one character, a known word (cut into
 * characters, as jieba does), or the HMM's guess. At an edge touching ASCII
 * (`force`) jieba's buffer holds the ASCII too, is never a word, and so
 * always goes through the HMM. */
static int flush_buf(const cut *c, scratch *scr, size_t a, size_t b, int force)
{
    if (b - a == 0)
        return 0;
    if (b - a == 1)
        return put_word(c, a, b);
    if (force || !piece_freq(c, a, b))
        return hmm_cut(c, scr, a, b);
    for (size_t k = a; k < b; k++) {
        int rc = put_word(c, k, k + 1);
        if (rc)
            return rc;
    }
    return 0;
}

static int cut_han(const cut *c, scratch *scr, size_t n, int ascii_before, int ascii_after)
{
    calc_route(c->s, scr, n, c->trad);
    size_t x = 0, buf = 0;
    int rc;
    while (x < n) {
        size_t y = (size_t)scr->next[x] + 1;
        if (y - x > 1) {
            if ((rc = flush_buf(c, scr, buf, x, buf == 0 && ascii_before)) ||
                (rc = put_word(c, x, y)))
                return rc;
            buf = y;
        }
        x = y;
    }
    return flush_buf(c, scr, buf, n, ascii_after || (buf == 0 && ascii_before));
}

/* ---- classifying a run ----------------------------------------------------------- */

enum { K_HAN, K_KANA, K_OTHER };

/* jieba's Han range, after NFKC for compatibility ideographs. */
static uint32_t han_cp(int cp)
{
    if (cp >= 0x4E00 && cp <= 0x9FD5)
        return (uint32_t)cp;
    if ((cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F)) {
        utf8proc_int32_t out[4];
        int opts = UTF8PROC_COMPAT | UTF8PROC_COMPOSE | UTF8PROC_STABLE;
        utf8proc_ssize_t k = utf8proc_decompose_char(cp, out, 4, opts, NULL);
        if (k == 1 && out[0] >= 0x4E00 && out[0] <= 0x9FD5)
            return (uint32_t)out[0];
    }
    return 0;
}

static int is_kana(int cp)
{
    return (cp >= 0x3041 && cp <= 0x30FF) || (cp >= 0x31F0 && cp <= 0x31FF) ||
           (cp >= 0xFF66 && cp <= 0xFF9F) || (cp >= 0x1B000 && cp <= 0x1B16F);
}

typedef struct shift_ctx {
    void *ctx;
    tok_emit_fn emit;
    size_t base;
} shift_ctx;

static int shift_emit(void *vctx, const char *t, size_t len, size_t s, size_t e, int flags)
{
    shift_ctx *x = vctx;
    return x->emit(x->ctx, t, len, x->base + s, x->base + e, flags);
}

static int bigrams(const char *run, size_t a, size_t b, void *ctx, tok_emit_fn emit)
{
    shift_ctx x = {ctx, emit, a};
    return tok_cjk_bigrams(run + a, b - a, &x, shift_emit);
}

int seg_cut(const seg *s, const char *run, size_t len, int flags, void *emit_ctx,
            tok_emit_fn emit)
{
    /* Japanese: any kana makes the whole run bigrams (kanji included), so
     * 東京都に住む is matched the same way by 東京 and by 京都. */
    for (size_t i = 0; i < len;)
        if (is_kana(tok_utf8_next(run, len, &i)))
            return tok_cjk_bigrams(run, len, emit_ctx, emit);
    scratch *scr = scratch_get(len);
    cut c = {s, run, scr->cp, scr->ncp, 0, scr->off, flags & TOK_SEG_QUERY, emit_ctx, emit};
    size_t i = 0, other = 0;
    int rc = 0;
    while (i < len && !rc) {
        size_t at = i;
        uint32_t h = han_cp(tok_utf8_next(run, len, &i));
        if (!h)
            continue;
        /* A Han piece: characters with their trailing marks. */
        if (at > other && (rc = bigrams(run, other, at, emit_ctx, emit)))
            break;
        size_t n = 0, j = at;
        scr->off[0] = at;
        scr->cp[n] = h;
        scr->ncp[n] = seg_dict_t2s(s->d, h);
        c.trad = scr->ncp[n] != h;
        n++;
        for (;;) {
            size_t k = j = i;
            if (k >= len)
                break;
            int cp = tok_utf8_next(run, len, &k);
            if (tok_is_mark(cp)) {
                i = k;
                continue;
            }
            uint32_t hh = han_cp(cp);
            if (!hh)
                break;
            scr->off[n] = j;
            scr->cp[n] = hh;
            scr->ncp[n] = seg_dict_t2s(s->d, hh);
            c.trad |= scr->ncp[n] != hh;
            n++;
            i = k;
        }
        scr->off[n] = i;
        rc = cut_han(&c, scr, n, at == 0 && (flags & TOK_SEG_ASCII_BEFORE),
                     i == len && (flags & TOK_SEG_ASCII_AFTER));
        other = i;
    }
    if (!rc && other < len)
        rc = bigrams(run, other, len, emit_ctx, emit);
    return rc;
}

/* ---- opening ------------------------------------------------------------------ */

static size_t decode_word(const char *w, size_t len, uint32_t *cps, size_t max, int *ok)
{
    size_t n = 0;
    *ok = 1;
    for (size_t i = 0; i < len;) {
        uint32_t h = han_cp(tok_utf8_next(w, len, &i));
        if (!h || n == max) {
            *ok = 0;
            return 0;
        }
        cps[n++] = h;
    }
    return n;
}

/* jieba's suggest_freq(word): just enough for the word to beat its own
 * dictionary cut (without HMM). */
static uint32_t suggest_freq(seg *s, const uint32_t *cps, size_t n)
{
    scratch *scr = scratch_get(n);
    memcpy(scr->cp, cps, n * sizeof *cps);
    calc_route(s, scr, n, 0);
    double ftotal = (double)s->total, freq = 1;
    for (size_t x = 0; x < n;) {
        size_t y = (size_t)scr->next[x] + 1;
        uint32_t f = word_freq(s, cps + x, y - x);
        freq *= (f ? (double)f : 1.0) / ftotal;
        x = y;
    }
    double v = floor(freq * (double)s->total) + 1;
    uint32_t have = word_freq(s, cps, n);
    if (have > v)
        v = have;
    return v > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static trove_err load_user(seg *s, const char *path)
{
    char *text;
    size_t len;
    trove_err rc = fs_read_file(path, 0, &text, &len);
    if (rc)
        return trove_fail(rc, "user dictionary %s: %s", path, trove_errmsg());
    size_t lineno = 0;
    for (size_t i = 0; i < len;) {
        char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len, b = i;
        i = e + 1;
        lineno++;
        if (lineno == 1 && e - b >= 3 && memcmp(text + b, "\xEF\xBB\xBF", 3) == 0)
            b += 3;                                   /* BOM */
        while (e > b && (text[e - 1] == '\r' || text[e - 1] == ' ' || text[e - 1] == '\t'))
            e--;
        while (b < e && (text[b] == ' ' || text[b] == '\t'))
            b++;
        if (b == e || text[b] == '#')
            continue;
        /* "word [freq] [tag]": the word ends at the first space. */
        const char *sp = memchr(text + b, ' ', e - b);
        size_t wl = sp ? (size_t)(sp - (text + b)) : e - b;
        long long freq = -1;
        if (sp) {
            char *end;
            const char *f = sp + 1;
            if (f < text + e && *f >= '0' && *f <= '9') {
                freq = strtoll(f, &end, 10);
                if (freq > UINT32_MAX)
                    freq = UINT32_MAX;
            }
        }
        uint32_t cps[USER_MAX_WORD];
        int ok;
        size_t n = decode_word(text + b, wl, cps, USER_MAX_WORD, &ok);
        if (!ok || n == 0) {
            rc = trove_fail(TROVE_EPARSE, "user dictionary %s:%zu: '%.*s' is not a word of at "
                            "most %d Chinese characters", path, lineno, (int)(wl > 60 ? 60 : wl),
                            text + b, USER_MAX_WORD);
            break;
        }
        uint32_t f = freq >= 0 ? (uint32_t)freq : suggest_freq(s, cps, n);
        user_put(&s->user, cps, n, f, 0);
        for (size_t k = 1; k < n; k++)
            user_put(&s->user, cps, k, 0, 1);
        s->total += f;
        s->logtotal = log((double)s->total);
    }
    free(text);
    return rc;
}

static trove_err open_seg(const char *dict_path, const char *user_dict, int verify, seg **out)
{
    *out = NULL;
    seg_dict *d;
    trove_err rc = verify ? seg_dict_open(dict_path, &d) : seg_dict_map(dict_path, &d);
    if (rc)
        return rc;
    seg *s = xcalloc(1, sizeof *s);
    s->d = d;
    s->path = xstrdup(dict_path);
    s->total = d->hdr->total ? d->hdr->total : 1;
    s->logtotal = log((double)s->total);
    uint64_t uh = 0;
    if (user_dict && *user_dict) {
        if ((rc = load_user(s, user_dict)) != TROVE_OK) {
            seg_free(s);
            return rc;
        }
        uh = XXH3_64bits(s->user.pool, s->user.n_pool * sizeof *s->user.pool) ^ s->total;
    }
    snprintf(s->version, sizeof s->version, "jieba-1:%016llx:%016llx",
             (unsigned long long)d->hdr->payload_hash, (unsigned long long)uh);
    *out = s;
    return TROVE_OK;
}

trove_err seg_open(const char *dict_path, const char *user_dict, seg **out)
{
    return open_seg(dict_path, user_dict, 1, out);
}

trove_err seg_verify(const seg *s)
{
    return seg_dict_verify(s->d, s->path);
}

void seg_free(seg *s)
{
    if (!s)
        return;
    seg_dict_close(s->d);
    free(s->path);
    free(s->user.slots);
    free(s->user.pool);
    free(s);
}

const char *seg_version(const seg *s)
{
    return s->version;
}

/* ---- process-wide lazy segmenter ---------------------------------------------- */

static struct {
    seg_paths_fn paths;
    void *ud;
    seg_warn_fn warn;
    pthread_once_t once, verified, found;
    char *dict, *user;    /* the paths, found once (lazy_paths); kept */
    seg *s;
    atomic_int damaged;   /* seg_verify failed: bigrams from then on */
} g = {.once = PTHREAD_ONCE_INIT, .verified = PTHREAD_ONCE_INIT, .found = PTHREAD_ONCE_INIT};

char *seg_default_dict_path(void)
{
    return fs_data_file("TROVE_ZH_DICT", SEG_DICT_FILE);
}

static void warn_bigrams(void)
{
    if (!g.warn)
        return;
    tbuf m = {0};
    tbuf_printf(&m, "%s; Chinese text is indexed and searched as character bigrams "
                "(set TROVE_ZH_DICT or rebuild trove)", trove_errmsg());
    g.warn(tbuf_cstr(&m));
    tbuf_free(&m);
}

/* Mapped without the payload's checksum (seg_dict_map): a cold search
 * reads the pages of the words it looks up, not 8 MB. */
static void lazy_paths(void)
{
    if (g.paths)
        g.paths(g.ud, &g.dict, &g.user);
    if (!g.dict)
        g.dict = seg_default_dict_path();
}

static void lazy_load(void)
{
    pthread_once(&g.found, lazy_paths);
    if (open_seg(g.dict, g.user, 0, &g.s))
        warn_bigrams();
}

/* Before the tokenizer's version is recorded with stored terms (the
 * indexer asks for it first), the whole dictionary is checked: a damaged
 * one is told once and bigrams are used from then on, for the index and
 * for queries alike. */
static void lazy_verify(void)
{
    if (g.s && seg_verify(g.s) != TROVE_OK) {
        atomic_store(&g.damaged, 1);
        warn_bigrams();
    }
}

static const seg *lazy_seg(void)
{
    pthread_once(&g.once, lazy_load);
    return g.s && !atomic_load(&g.damaged) ? g.s : NULL;
}

static int has_kana(const char *run, size_t len)
{
    for (size_t i = 0; i < len;)
        if (is_kana(tok_utf8_next(run, len, &i)))
            return 1;
    return 0;
}

/* A run holding kana is Japanese: MeCab's words when the system has MeCab
 * (cjk/ja), else bigrams; the Chinese dictionary is not even opened for
 * it. Anything else goes to the Chinese segmenter. */
static int lazy_segment(void *ud, const char *run, size_t len, int flags, void *emit_ctx,
                        tok_emit_fn emit)
{
    (void)ud;
    if (has_kana(run, len)) {
        int rc;
        if (ja_cut(run, len, emit_ctx, emit, &rc))
            return rc;
        return tok_cjk_bigrams(run, len, emit_ctx, emit);
    }
    const seg *sg = lazy_seg();
    if (!sg)
        return tok_cjk_bigrams(run, len, emit_ctx, emit);
    return seg_cut(sg, run, len, flags, emit_ctx, emit);
}

/* Both segmentations in force, Chinese and Japanese: an index built with
 * bigrams for Japanese is re-tokenized once MeCab is there, and back. */
static const char *lazy_version(void *ud)
{
    (void)ud;
    static _Thread_local char v[160];
    pthread_once(&g.once, lazy_load);
    pthread_once(&g.verified, lazy_verify);
    const seg *sg = lazy_seg();
    const char *ja = ja_version();
    snprintf(v, sizeof v, "%s+ja:%s", sg ? seg_version(sg) : "zh:bigram-1",
             ja ? ja : "bigram-1");
    return v;
}

/* What lazy_version depends on, hashed, with no dictionary opened: the
 * dictionary's and user words' files (path, inode, size, time) and
 * MeCab's (ja_stamp). A dictionary rewritten in place keeps no time and
 * size by chance: a changed file reads as a changed version. */
static const char *lazy_stamp(void *ud)
{
    (void)ud;
    static _Thread_local char v[64];
    pthread_once(&g.found, lazy_paths);
    tbuf b = {0};
    fs_stamp_append(&b, g.dict);
    tbuf_puts(&b, "user:");
    if (g.user && *g.user)
        fs_stamp_append(&b, g.user);
    tbuf_puts(&b, "ja:");
    ja_stamp(&b);
    snprintf(v, sizeof v, "stamp-1:%016llx",
             (unsigned long long)XXH3_64bits(b.data ? b.data : "", b.len));
    tbuf_free(&b);
    return v;
}

void seg_install(seg_paths_fn paths, void *ud, seg_warn_fn warn)
{
    g.paths = paths;
    g.ud = ud;
    g.warn = warn;
    tok_segmenter ts = {NULL, lazy_segment, lazy_version, lazy_stamp};
    tok_set_cjk_segmenter(&ts);
}
