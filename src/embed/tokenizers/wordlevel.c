/* wordlevel — see wordlevel.h. */
#include "embed/tokenizers/wordlevel.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "embed/tokenizers/tokcache.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

enum { NORM_LOWER = 1, NORM_NFC = 2, NORM_NFD = 4, NORM_NFKC = 8, NORM_NFKD = 16, NORM_STRIP = 32 };
enum { PRE_NONE, PRE_WHITESPACE, PRE_WSSPLIT };

struct wl_tok {
    char *arena;      /* words back to back */
    uint32_t *off, *len; /* word of id i (len 0 + off UINT32_MAX: no word) */
    int64_t n;        /* ids 0..n-1 */
    uint64_t *slots;  /* hash << 32 | (id + 1), 0 empty */
    uint32_t mask;
    int32_t unk;
    unsigned norm;
    int pre;
    size_t arena_len;
    tokcache *cache;  /* when set, the arrays point into its mapping */
};

/* Bump when the compiled layout (to_blob / from_blob) changes. */
#define WL_CACHE_VERSION 1

void wl_free(wl_tok *t)
{
    if (!t)
        return;
    if (t->cache) {
        tokcache_release(t->cache);
        free(t);
        return;
    }
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->slots);
    free(t);
}

int64_t wl_n_vocab(const wl_tok *t)
{
    return t->n;
}

int32_t wl_unk_id(const wl_tok *t)
{
    return t->unk;
}

const char *wl_model_name(const wl_tok *t)
{
    (void)t;
    return "WordLevel";
}

static uint32_t hash32(const char *s, size_t n)
{
    return (uint32_t)XXH3_64bits(s, n);
}

static int32_t lookup(const wl_tok *t, const char *s, size_t n)
{
    uint32_t h = hash32(s, n);
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t v = t->slots[i];
        if (!v)
            return -1;
        if ((uint32_t)(v >> 32) != h)
            continue;
        int32_t id = (int32_t)(uint32_t)v - 1;
        if (t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0)
            return id;
    }
}

static trove_err parse_norm(json_t *n, const char *name, unsigned *out, int depth)
{
    if (!n || json_is_null(n))
        return TROVE_OK;
    const char *ty = json_string_value(json_object_get(n, "type"));
    if (!ty)
        return trove_fail(TROVE_ECORRUPT, "%s: normalizer without a type", name);
    if (strcmp(ty, "Sequence") == 0 && depth < 4) {
        json_t *a = json_object_get(n, "normalizers"), *x;
        size_t i;
        json_array_foreach(a, i, x) {
            trove_err e = parse_norm(x, name, out, depth + 1);
            if (e)
                return e;
        }
        return TROVE_OK;
    }
    static const struct {
        const char *ty;
        unsigned bit;
    } K[] = {{"Lowercase", NORM_LOWER}, {"NFC", NORM_NFC},   {"NFD", NORM_NFD},
             {"NFKC", NORM_NFKC},       {"NFKD", NORM_NFKD}, {"StripAccents", NORM_STRIP}};
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        if (strcmp(ty, K[i].ty) == 0) {
            *out |= K[i].bit;
            return TROVE_OK;
        }
    return trove_fail(TROVE_EUNSUPPORTED, "%s: normalizer %s is not supported yet", name, ty);
}

static trove_err parse_pre(json_t *p, const char *name, int *out, int depth)
{
    if (!p || json_is_null(p))
        return TROVE_OK;
    const char *ty = json_string_value(json_object_get(p, "type"));
    if (!ty)
        return trove_fail(TROVE_ECORRUPT, "%s: pre_tokenizer without a type", name);
    if (strcmp(ty, "Sequence") == 0 && depth < 4) {
        json_t *a = json_object_get(p, "pretokenizers"), *x;
        size_t i;
        json_array_foreach(a, i, x) {
            trove_err e = parse_pre(x, name, out, depth + 1);
            if (e)
                return e;
        }
        return TROVE_OK;
    }
    if (strcmp(ty, "Whitespace") == 0) {
        *out = PRE_WHITESPACE;
        return TROVE_OK;
    }
    if (strcmp(ty, "WhitespaceSplit") == 0) {
        if (*out == PRE_NONE)
            *out = PRE_WSSPLIT;
        return TROVE_OK;
    }
    return trove_fail(TROVE_EUNSUPPORTED, "%s: pre_tokenizer %s is not supported yet", name, ty);
}

static trove_err build(wl_tok *t, json_t *vocab, const char *name)
{
    size_t nv = json_object_size(vocab);
    int64_t maxid = -1;
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) {
        json_int_t id = json_integer_value(v);
        if (!json_is_integer(v) || id < 0 || id > INT32_MAX - 1)
            return trove_fail(TROVE_ECORRUPT, "%s: vocab entry '%s' has no valid id", name, k);
        if (id > maxid)
            maxid = id;
    }
    if (maxid >= (int64_t)nv * 4 + 1024)
        return trove_fail(TROVE_ECORRUPT, "%s: vocab ids reach %lld for %zu words", name,
                          (long long)maxid, nv);
    t->n = maxid + 1;
    t->off = xmalloc((size_t)t->n * sizeof *t->off);
    t->len = xcalloc((size_t)t->n, sizeof *t->len);
    for (int64_t i = 0; i < t->n; i++)
        t->off[i] = UINT32_MAX;
    uint32_t cap = 16;
    while (cap < nv * 2)
        cap <<= 1;
    t->mask = cap - 1;
    t->slots = xcalloc(cap, sizeof *t->slots);
    tbuf arena = {0};
    json_object_foreach(vocab, k, v) {
        size_t n = strlen(k);
        int32_t id = (int32_t)json_integer_value(v);
        if (t->off[id] != UINT32_MAX) {
            tbuf_free(&arena);
            return trove_fail(TROVE_ECORRUPT, "%s: id %d is given to two words", name, id);
        }
        if (arena.len + n > UINT32_MAX - 1) {
            tbuf_free(&arena);
            return trove_fail(TROVE_ECORRUPT, "%s: vocabulary over 4 GB", name);
        }
        t->off[id] = (uint32_t)arena.len;
        t->len[id] = (uint32_t)n;
        tbuf_append(&arena, k, n);
        uint32_t h = hash32(k, n), i = h & t->mask;
        while (t->slots[i])
            i = (i + 1) & t->mask;
        t->slots[i] = (uint64_t)h << 32 | (uint32_t)(id + 1);
    }
    t->arena_len = arena.len;
    t->arena = arena.data ? arena.data : xstrdup("");
    return TROVE_OK;
}

trove_err wl_open_json(const char *json, size_t len, const char *name, wl_tok **out)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root)
        return trove_fail(TROVE_ECORRUPT, "%s: line %d: %s", name, jerr.line, jerr.text);
    trove_err e = TROVE_OK;
    wl_tok *t = xcalloc(1, sizeof *t);
    t->unk = -1;
    json_t *model = json_object_get(root, "model");
    const char *ty = json_string_value(json_object_get(model, "type"));
    json_t *vocab = json_object_get(model, "vocab");
    if (!json_is_object(root) || !ty)
        e = trove_fail(TROVE_ECORRUPT, "%s: no model.type (not a tokenizer.json?)", name);
    else if (strcmp(ty, "WordLevel") != 0)
        e = trove_fail(TROVE_EUNSUPPORTED,
                       "%s: tokenizer model %s is not supported yet (WordLevel only)", name, ty);
    else if (!json_is_object(vocab))
        e = trove_fail(TROVE_ECORRUPT, "%s: model.vocab is not an object", name);
    if (!e)
        e = parse_norm(json_object_get(root, "normalizer"), name, &t->norm, 0);
    if (!e)
        e = parse_pre(json_object_get(root, "pre_tokenizer"), name, &t->pre, 0);
    if (!e)
        e = build(t, vocab, name);
    if (!e) {
        const char *unk = json_string_value(json_object_get(model, "unk_token"));
        if (unk)
            t->unk = lookup(t, unk, strlen(unk));
    }
    json_decref(root);
    if (e) {
        wl_free(t);
        return e;
    }
    *out = t;
    return TROVE_OK;
}

/* ---- compiled form (tokcache) ----
 * u32 norm, u32 pre, i32 unk, u32 mask, u64 n, u64 arena_len,
 * u64 slots[mask + 1], u32 off[n], u32 len[n], pad to 8, arena bytes. */

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static void to_blob(const wl_tok *t, tbuf *b)
{
    uint32_t h[4] = {t->norm, (uint32_t)t->pre, (uint32_t)t->unk, t->mask};
    uint64_t h2[2] = {(uint64_t)t->n, t->arena_len};
    tbuf_append(b, h, sizeof h);
    tbuf_append(b, h2, sizeof h2);
    tbuf_append(b, t->slots, ((size_t)t->mask + 1) * sizeof *t->slots);
    tbuf_append(b, t->off, (size_t)t->n * 4);
    tbuf_append(b, t->len, (size_t)t->n * 4);
    static const char zeros[8] = {0};
    tbuf_append(b, zeros, pad8(b->len) - b->len);
    tbuf_append(b, t->arena, t->arena_len);
}

/* Point t into a cached payload after checking every count and offset. */
static bool from_blob(wl_tok *t, const unsigned char *p, size_t len)
{
    uint32_t h[4];
    uint64_t h2[2];
    if (len < 32)
        return false;
    memcpy(h, p, 16);
    memcpy(h2, p + 16, 16);
    uint64_t nslots = (uint64_t)h[3] + 1, n = h2[0], alen = h2[1];
    if ((nslots & (nslots - 1)) || nslots > (1u << 30) || n > INT32_MAX || alen > UINT32_MAX ||
        h[1] > PRE_WSSPLIT)
        return false;
    size_t o_slots = 32, o_off = o_slots + (size_t)nslots * 8, o_len = o_off + (size_t)n * 4;
    size_t o_arena = pad8(o_len + (size_t)n * 4);
    if (o_arena + alen != len)
        return false;
    t->norm = h[0];
    t->pre = (int)h[1];
    t->unk = (int32_t)h[2];
    t->mask = h[3];
    t->n = (int64_t)n;
    t->arena_len = (size_t)alen;
    t->slots = (uint64_t *)(uintptr_t)(p + o_slots);
    t->off = (uint32_t *)(uintptr_t)(p + o_off);
    t->len = (uint32_t *)(uintptr_t)(p + o_len);
    t->arena = (char *)(uintptr_t)(p + o_arena);
    if (t->unk < -1 || t->unk >= (int64_t)n)
        return false;
    for (uint64_t i = 0; i < n; i++)
        if (t->off[i] == UINT32_MAX ? t->len[i] != 0 : (uint64_t)t->off[i] + t->len[i] > alen)
            return false;
    for (uint64_t i = 0; i < nslots; i++) {
        uint32_t id1 = (uint32_t)t->slots[i];
        if ((t->slots[i] && id1 == 0) || id1 > n || (id1 && t->off[id1 - 1] == UINT32_MAX))
            return false;
    }
    return true;
}

trove_err wl_open(const char *path, wl_tok **out)
{
    const void *blob;
    size_t blen;
    tokcache *c = tokcache_load(path, "wordlevel", WL_CACHE_VERSION, &blob, &blen);
    if (c) {
        wl_tok *t = xcalloc(1, sizeof *t);
        if (from_blob(t, blob, blen)) {
            t->cache = c;
            *out = t;
            return TROVE_OK;
        }
        free(t);
        tokcache_release(c);
    }
    char *data;
    size_t len;
    trove_err e = fs_read_file(path, 0, &data, &len);
    if (e)
        return e;
    e = wl_open_json(data, len, path, out);
    free(data);
    if (!e) {
        tbuf b = {0};
        to_blob(*out, &b);
        tokcache_store(path, "wordlevel", WL_CACHE_VERSION, b.data, b.len);
        tbuf_free(&b);
    }
    return e;
}

/* ---- encoding ---- */

/* Normalise text into out (NUL-terminated): Unicode forms through
 * utf8proc, then per-code-point lower-casing. Invalid UTF-8 is dropped. */
static void normalize(const wl_tok *t, const char *text, size_t len, tbuf *out)
{
    int opts = UTF8PROC_IGNORE; /* keep default ignorables out of words */
    if (t->norm & (NORM_NFKC | NORM_NFKD))
        opts |= UTF8PROC_COMPAT;
    if (t->norm & (NORM_NFD | NORM_NFKD | NORM_STRIP))
        opts |= UTF8PROC_DECOMPOSE;
    else if (t->norm & (NORM_NFC | NORM_NFKC))
        opts |= UTF8PROC_COMPOSE;
    if (t->norm & NORM_STRIP)
        opts |= UTF8PROC_STRIPMARK;
    const unsigned char *p = (const unsigned char *)text;
    size_t i = 0;
    tbuf valid = {0};
    const tbuf *src;
    /* keep the valid sequences only, so utf8proc never rejects the text */
    while (i < len) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0) {
            i++;
            continue;
        }
        tbuf_append(&valid, (const char *)p + i, (size_t)n);
        i += (size_t)n;
    }
    tbuf_putc(&valid, 0);
    valid.len--;
    src = &valid;
    utf8proc_uint8_t *mapped = NULL;
    if (t->norm & ~(unsigned)NORM_LOWER) {
        if (utf8proc_map((const utf8proc_uint8_t *)src->data, (utf8proc_ssize_t)src->len,
                         &mapped, (utf8proc_option_t)opts) < 0)
            mapped = NULL;
    }
    const unsigned char *q = mapped ? mapped : (const unsigned char *)src->data;
    size_t qn = mapped ? strlen((const char *)mapped) : src->len;
    tbuf_reset(out);
    for (size_t j = 0; j < qn;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(q + j, (utf8proc_ssize_t)(qn - j), &cp);
        if (n <= 0) {
            j++;
            continue;
        }
        if (t->norm & NORM_LOWER)
            cp = utf8proc_tolower(cp);
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t m = utf8proc_encode_char(cp, enc);
        tbuf_append(out, (const char *)enc, (size_t)m);
        j += (size_t)n;
    }
    tbuf_putc(out, 0);
    out->len--;
    free(mapped);
    tbuf_free(&valid);
}

static bool is_space(utf8proc_int32_t cp)
{
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
        (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
        cp == 0x205f || cp == 0x3000)
        return true;
    return false;
}

/* \w of the Whitespace pre-tokenizer's \w+|[^\w\s]+ : letters, marks,
 * numbers and connector punctuation (underscore). */
static bool is_word(utf8proc_int32_t cp)
{
    switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

/* 0 space, 1 word, 2 other */
static int cls(const wl_tok *t, utf8proc_int32_t cp)
{
    if (is_space(cp))
        return 0;
    if (t->pre == PRE_WHITESPACE)
        return is_word(cp) ? 1 : 2;
    return 1;
}

size_t wl_encode(const wl_tok *t, const char *text, size_t len, int32_t *ids, size_t cap)
{
    tbuf s = {0};
    normalize(t, text, len, &s);
    const unsigned char *p = (const unsigned char *)s.data;
    size_t n = 0, i = 0;
    while (i < s.len && n < cap) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(s.len - i), &cp);
        int c = cls(t, cp);
        if (c == 0) {
            i += (size_t)k;
            continue;
        }
        size_t start = i;
        i += (size_t)k;
        while (i < s.len) {
            k = utf8proc_iterate(p + i, (utf8proc_ssize_t)(s.len - i), &cp);
            if (cls(t, cp) != c)
                break;
            i += (size_t)k;
        }
        if (t->pre == PRE_NONE) /* the whole text is one word */
            while (i < s.len)
                i++;
        int32_t id = lookup(t, (const char *)p + start, i - start);
        if (id < 0)
            id = t->unk;
        if (id >= 0)
            ids[n++] = id;
    }
    tbuf_free(&s);
    return n;
}
