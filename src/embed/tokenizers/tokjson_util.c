/* tokjson_util — working buffers, UTF-8 decoding, the Unicode classes the
 * HF tokenizers use (Rust's char methods and regex classes, answered with
 * utf8proc's general categories) and the token string table. */
#include "embed/tokenizers/tokjson_int.h"
#include "embed/tokenizers/etok_int.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "util/mem.h"

/* UTF-8 encoding and strict decoding are etok's (etok_int.h): one copy
 * for every tokenizer of the engine. */

/* ---- tj_buf / tj_seq ---- */

void tj_buf_reserve(tj_buf *t, size_t extra) {
    if (t->n + extra <= t->cap) return;
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->n + extra) cap *= 2;
    t->s = xrealloc(t->s, cap);
    t->a = xrealloc(t->a, cap * sizeof *t->a);
    t->b = xrealloc(t->b, cap * sizeof *t->b);
    t->cap = cap;
}

void tj_buf_put(tj_buf *t, const char *s, size_t n, uint32_t a, uint32_t b) {
    if (n == 0) return;
    tj_buf_reserve(t, n);
    memcpy(t->s + t->n, s, n);
    for (size_t i = 0; i < n; i++) {
        t->a[t->n + i] = a;
        t->b[t->n + i] = b;
    }
    t->n += n;
}

void tj_buf_put_cp(tj_buf *t, uint32_t cp, uint32_t a, uint32_t b) {
    char u[4];
    size_t k = etok_utf8_encode(cp, u);
    tj_buf_put(t, u, k, a, b);
}

void tj_buf_copy(tj_buf *t, const tj_buf *src, size_t i, size_t n) {
    if (n == 0) return;
    tj_buf_reserve(t, n);
    memcpy(t->s + t->n, src->s + i, n);
    memcpy(t->a + t->n, src->a + i, n * sizeof *t->a);
    memcpy(t->b + t->n, src->b + i, n * sizeof *t->b);
    t->n += n;
}

void tj_buf_free(tj_buf *t) {
    free(t->s);
    free(t->a);
    free(t->b);
    memset(t, 0, sizeof *t);
}

void tj_seq_reset(tj_seq *q) {
    q->buf.n = 0;
    q->nseg = 0;
}

void tj_seq_push(tj_seq *q, uint32_t start, uint32_t end, int32_t id) {
    if (q->nseg == q->segcap) xgrow(&q->seg, &q->segcap, q->nseg + 1, sizeof *q->seg);
    q->seg[q->nseg++] = (tj_seg){start, end, id};
}

void tj_seq_free(tj_seq *q) {
    tj_buf_free(&q->buf);
    free(q->seg);
    memset(q, 0, sizeof *q);
}

/* ---- UTF-8 ---- */

size_t tj_utf8_next(const uint8_t *s, size_t n, uint32_t *cp) {
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t k = etok_utf8_decode(s, n, cp);
    if (k) return k;
    /* maximal subpart of an ill-formed sequence: the longest prefix of a
     * well-formed one, at least one byte */
    *cp = 0xFFFD;
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 1;
    size_t i = 1;
    for (; i < need && i < n; i++) {
        uint8_t d = s[i];
        if (d < lo || d > hi) break;
        lo = 0x80;
        hi = 0xBF;
    }
    return i;
}

uint32_t tj_cp_at(const char *s, size_t *len) {
    const uint8_t *u = (const uint8_t *)s;
    uint8_t c = u[0];
    if (c < 0x80) {
        *len = 1;
        return c;
    }
    if (c < 0xE0) {
        *len = 2;
        return (uint32_t)(c & 0x1F) << 6 | (u[1] & 0x3F);
    }
    if (c < 0xF0) {
        *len = 3;
        return (uint32_t)(c & 0x0F) << 12 | (uint32_t)(u[1] & 0x3F) << 6 | (u[2] & 0x3F);
    }
    *len = 4;
    return (uint32_t)(c & 0x07) << 18 | (uint32_t)(u[1] & 0x3F) << 12 | (uint32_t)(u[2] & 0x3F) << 6 |
           (u[3] & 0x3F);
}

/* ---- Unicode classes ---- */

bool tj_is_whitespace(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 9 && c <= 13);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static inline int cat(uint32_t c) { return utf8proc_category((utf8proc_int32_t)c); }

bool tj_is_alpha(uint32_t c) {
    if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
    int k = cat(c);
    return k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO;
}

bool tj_is_numeric(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    int k = cat(c);
    return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}

bool tj_is_alnum(uint32_t c) { return tj_is_alpha(c) || tj_is_numeric(c); }

bool tj_is_punct(uint32_t c) {
    if (c < 0x80)
        return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
               (c >= 123 && c <= 126);
    int k = cat(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool tj_is_word(uint32_t c) {
    if (c < 0x80) return tj_is_alpha(c) || (c >= '0' && c <= '9') || c == '_';
    int k = cat(c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_NL) || k == UTF8PROC_CATEGORY_PC ||
           c == 0x200C || c == 0x200D;
}

/* ---- string table ---- */

uint32_t tj_hash(const char *s, size_t n) {
    uint32_t h = TJ_HASH_INIT;
    for (size_t i = 0; i < n; i++) h = tj_hash_step(h, (uint8_t)s[i]);
    return h;
}

trove_err tj_strtab_build(tj_strtab *t, const char *const *text, const size_t *len,
                          const uint32_t *ids, size_t count) {
    memset(t, 0, sizeof *t);
    size_t total = 0;
    uint32_t n = 0;
    for (size_t i = 0; i < count; i++) {
        total += len[i];
        if (ids[i] + 1 > n) n = ids[i] + 1;
    }
    t->n = n;
    t->pieces = arena_alloc(&t->mem, total + 1);
    t->off = xmalloc((n ? n : 1) * sizeof *t->off);
    t->len = xmalloc((n ? n : 1) * sizeof *t->len);
    for (uint32_t i = 0; i < n; i++) t->off[i] = 0, t->len[i] = UINT32_MAX;
    uint32_t cap = 16;
    while (cap < 2 * count) cap *= 2;
    t->slots = xcalloc(cap, sizeof *t->slots);
    t->mask = cap - 1;
    for (size_t i = 0; i < count; i++) {
        uint32_t id = ids[i];
        if (t->len[id] != UINT32_MAX)
            return trove_fail(TROVE_ECORRUPT, "token id %u is given twice", id);
        memcpy(t->pieces + t->pieces_len, text[i], len[i]);
        t->off[id] = (uint32_t)t->pieces_len;
        t->len[id] = (uint32_t)len[i];
        t->pieces_len += len[i];
        if (len[i] > t->max_len) t->max_len = (uint32_t)len[i];
        uint32_t h = tj_hash(text[i], len[i]);
        if (tj_strtab_find_h(t, text[i], len[i], h) >= 0) continue; /* first id wins */
        uint32_t s = h & t->mask;
        while (t->slots[s]) s = (s + 1) & t->mask;
        t->slots[s] = (uint64_t)h << 32 | (id + 1);
    }
    return TROVE_OK;
}

/* Where token id's text lies, checked against the table (a borrowed
 * table is trusted no further than this); false for no token. */
static inline bool piece_at(const tj_strtab *t, uint32_t id, const char **s, size_t *n) {
    if (id >= t->n || t->len[id] == UINT32_MAX || t->off[id] > t->pieces_len ||
        t->len[id] > t->pieces_len - t->off[id])
        return false;
    *s = t->pieces + t->off[id];
    *n = t->len[id];
    return true;
}

int32_t tj_strtab_find_h(const tj_strtab *t, const char *s, size_t n, uint32_t h) {
    if (n > t->max_len || !t->slots) return -1;
    uint32_t i = h & t->mask;
    for (uint32_t probes = 0; probes <= t->mask; probes++, i = (i + 1) & t->mask) {
        uint64_t v = t->slots[i];
        if (!v) return -1;
        if ((uint32_t)(v >> 32) != h) continue;
        const char *p;
        size_t pn;
        uint32_t id = (uint32_t)v - 1;
        if (piece_at(t, id, &p, &pn) && pn == n && memcmp(p, s, n) == 0) return (int32_t)id;
    }
    return -1; /* a full table (only a damaged cache entry has one) */
}

const char *tj_strtab_get(const tj_strtab *t, int32_t id, size_t *len) {
    const char *p;
    if (id < 0 || !piece_at(t, (uint32_t)id, &p, len)) return NULL;
    return p;
}

void tj_strtab_free(tj_strtab *t) {
    arena_free(&t->mem);
    if (!t->borrowed) {
        free(t->off);
        free(t->len);
        free(t->slots);
    }
    memset(t, 0, sizeof *t);
}

/* ---- JSON helpers ---- */

trove_err tj_json_str(json_t *o, const char *key, const char *what, bool required,
                      const char **s, size_t *len) {
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (required) return trove_fail(TROVE_EPARSE, "tokenizer.json: %s has no \"%s\"", what, key);
        *s = NULL;
        *len = 0;
        return TROVE_OK;
    }
    if (!json_is_string(v))
        return trove_fail(TROVE_EPARSE, "tokenizer.json: %s \"%s\" is not a string", what, key);
    *s = json_string_value(v);
    *len = json_string_length(v);
    return TROVE_OK;
}

bool tj_json_bool(json_t *o, const char *key, bool dflt) {
    json_t *v = json_object_get(o, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}
