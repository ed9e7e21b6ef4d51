/* tokjson_norm — the normalizers of tokenizer.json.
 *
 * Each works character by character on a tj_buf, so every output byte
 * keeps the span of the input character it came from. Unicode
 * normalisation (NFC & co., utf8proc) runs on each stretch of non-ASCII
 * characters with the ASCII character before it (which may compose with
 * it); ASCII characters never change nor compose with what precedes: a
 * stretch whose character count is kept maps one to one, else all of its
 * output spans the whole stretch. Precompiled (sentencepiece's charsmap)
 * goes grapheme by grapheme through etok's normaliser, as HF does. */
#include "embed/tokenizers/tokjson_int.h"
#include "embed/tokenizers/etok_int.h" /* etok_spm_normalize: the charsmap normaliser */

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "util/buf.h"
#include "util/mem.h"

#define SPACE_MARK "\xE2\x96\x81"

/* ---- parsing ---- */

static trove_err b64_decode(const char *s, size_t n, uint8_t **out, size_t *len) {
    uint8_t *o = xmalloc(n / 4 * 3 + 3);
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int v;
        if (c >= 'A' && c <= 'Z') v = c - 'A';
        else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
        else if (c >= '0' && c <= '9') v = c - '0' + 52;
        else if (c == '+') v = 62;
        else if (c == '/') v = 63;
        else if (c == '=') break;
        else {
            free(o);
            return trove_fail(TROVE_EPARSE, "tokenizer.json: Precompiled charsmap is not base64");
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (uint8_t)(acc >> bits);
        }
    }
    *out = o;
    *len = k;
    return TROVE_OK;
}

static void precompiled_ascii(tj_norm *n);

static trove_err parse_precompiled(json_t *j, tj_norm *n) {
    const char *s;
    size_t len;
    trove_err e = tj_json_str(j, "precompiled_charsmap", "Precompiled normalizer", false, &s, &len);
    if (e || !s || !len) return e; /* no charsmap: identity */
    uint8_t *blob = NULL;
    size_t blen = 0;
    if ((e = b64_decode(s, len, &blob, &blen))) return e;
    static const char *const unk_text[] = {"<unk>"};
    static const int32_t unk_type[] = {ETOK_T_UNKNOWN};
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    v.n = 1;
    v.text = unk_text;
    v.types = unk_type;
    v.add_space_prefix = false;
    v.remove_extra_ws = false;
    v.charsmap = blob;
    v.charsmap_len = blen;
    e = etok_new(&v, &n->spm);
    free(blob);
    if (e) return e;
    precompiled_ascii(n);
    return TROVE_OK;
}

static trove_err parse_seq(json_t *j, tj_norm *n) {
    json_t *arr = json_object_get(j, "normalizers");
    if (!json_is_array(arr))
        return trove_fail(TROVE_EPARSE, "tokenizer.json: normalizer Sequence has no \"normalizers\"");
    n->sub = xcalloc(json_array_size(arr) + 1, sizeof *n->sub);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        trove_err e = tj_norm_parse(json_array_get(arr, i), &n->sub[n->nsub]);
        n->nsub++;
        if (e) return e;
    }
    return TROVE_OK;
}

/* A regex that is one literal character repeated: "c+" or "c{n,}" (HF's
 * converters write " {2,}"); *min set, the character into pat. */
static bool repeat_regex(const char *s, size_t n, char **pat, size_t *len, size_t *min) {
    size_t k = tj_clen((uint8_t)s[0]);
    if (k > n || strchr("\\^$.|?*+()[]{}", s[0])) return false;
    const char *q = s + k;
    size_t rest = n - k, m = 0;
    if (rest == 1 && q[0] == '+') m = 1;
    else if (rest >= 4 && q[0] == '{' && q[rest - 2] == ',' && q[rest - 1] == '}') {
        for (size_t i = 1; i + 2 < rest; i++) {
            if (q[i] < '0' || q[i] > '9' || m > 1000) return false;
            m = m * 10 + (size_t)(q[i] - '0');
        }
        if (m == 0) return false;
    } else return false;
    *pat = xstrndup(s, k);
    *len = k;
    *min = m;
    return true;
}

/* Replace's pattern: {"String": s} or {"Regex": r} where r is a literal or
 * a repeated literal character. */
static trove_err parse_pattern(json_t *j, const char *what, tj_norm *nm) {
    json_t *p = json_object_get(j, "pattern");
    const char *s;
    size_t n;
    if (json_is_object(p) && json_is_string(json_object_get(p, "String"))) {
        if (tj_json_str(p, "String", what, true, &s, &n)) return TROVE_EPARSE;
    } else if (json_is_object(p) && json_is_string(json_object_get(p, "Regex"))) {
        if (tj_json_str(p, "Regex", what, true, &s, &n)) return TROVE_EPARSE;
        if (n && repeat_regex(s, n, &nm->pat, &nm->pat_len, &nm->rx_min)) return TROVE_OK;
        if (n == 3 && memcmp(s, "\\s+", 3) == 0) { /* model2vec's whitespace squeeze */
            nm->rx_ws = true;
            return TROVE_OK;
        }
        for (size_t i = 0; i < n; i++)
            if (strchr("\\^$.|?*+()[]{}", s[i]))
                return trove_fail(TROVE_EUNSUPPORTED,
                                  "tokenizer.json: %s with regex pattern \"%.80s\" is not supported",
                                  what, s);
    } else return trove_fail(TROVE_EPARSE, "tokenizer.json: %s has no string or regex pattern", what);
    nm->pat = xstrndup(s, n);
    nm->pat_len = n;
    return TROVE_OK;
}

trove_err tj_norm_parse(json_t *j, tj_norm *n) {
    memset(n, 0, sizeof *n);
    const char *type;
    size_t tl;
    if (!json_is_object(j)) return trove_fail(TROVE_EPARSE, "tokenizer.json: normalizer is not an object");
    trove_err e = tj_json_str(j, "type", "normalizer", true, &type, &tl);
    if (e) return e;
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"Sequence", TJN_SEQ}, {"NFC", TJN_NFC}, {"NFD", TJN_NFD}, {"NFKC", TJN_NFKC},
                 {"NFKD", TJN_NFKD}, {"Lowercase", TJN_LOWER}, {"Strip", TJN_STRIP},
                 {"StripAccents", TJN_STRIP_ACCENTS}, {"Replace", TJN_REPLACE},
                 {"Prepend", TJN_PREPEND}, {"BertNormalizer", TJN_BERT},
                 {"Precompiled", TJN_PRECOMPILED}, {"Nmt", TJN_NMT}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(type, kinds[i].name) == 0) n->kind = kinds[i].kind;
    const char *s;
    size_t len;
    switch (n->kind) {
    case TJN_SEQ: return parse_seq(j, n);
    case TJN_STRIP:
        n->left = tj_json_bool(j, "strip_left", true);
        n->right = tj_json_bool(j, "strip_right", true);
        return TROVE_OK;
    case TJN_REPLACE:
        if ((e = parse_pattern(j, "Replace normalizer", n))) return e;
        if ((e = tj_json_str(j, "content", "Replace normalizer", true, &s, &len))) return e;
        n->rep = xstrndup(s, len);
        n->rep_len = len;
        return TROVE_OK;
    case TJN_PREPEND:
        if ((e = tj_json_str(j, "prepend", "Prepend normalizer", true, &s, &len))) return e;
        n->rep = xstrndup(s, len);
        n->rep_len = len;
        return TROVE_OK;
    case TJN_BERT:
        n->clean = tj_json_bool(j, "clean_text", true);
        n->chinese = tj_json_bool(j, "handle_chinese_chars", true);
        n->lower = tj_json_bool(j, "lowercase", true);
        n->accents = tj_json_bool(j, "strip_accents", n->lower);
        return TROVE_OK;
    case TJN_PRECOMPILED: return parse_precompiled(j, n);
    case 0:
        return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: normalizer \"%s\" is not supported", type);
    default: return TROVE_OK;
    }
}

void tj_norm_free(tj_norm *n) {
    if (!n) return;
    for (size_t i = 0; i < n->nsub; i++) tj_norm_free(&n->sub[i]);
    free(n->sub);
    free(n->pat);
    free(n->rep);
    etok_free(n->spm);
}

/* ---- per-character normalizers ---- */

/* Rust's char::to_lowercase: utf8proc's simple mapping, plus the one
 * unconditional multi-character lowercase (U+0130). */
static void put_lower(tj_buf *o, uint32_t c, uint32_t a, uint32_t b) {
    if (c < 0x80) {
        tj_buf_put1(o, (char)(c >= 'A' && c <= 'Z' ? c + 32 : c), a, b);
    } else if (c == 0x130) {
        tj_buf_put(o, "i\xCC\x87", 3, a, b);
    } else {
        tj_buf_put_cp(o, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c), a, b);
    }
}

static bool is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool is_control(uint32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    int k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CN ||
           k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS;
}

/* NFD of one character, then the non-spacing marks dropped. */
static void put_stripped(tj_buf *o, uint32_t c, bool lower, uint32_t a, uint32_t b) {
    utf8proc_int32_t d[16];
    int last = 0;
    utf8proc_ssize_t k =
        c < 0x80 ? (d[0] = (utf8proc_int32_t)c, 1)
                 : utf8proc_decompose_char((utf8proc_int32_t)c, d, 16, UTF8PROC_DECOMPOSE, &last);
    if (k < 0 || k > 16) k = 1, d[0] = (utf8proc_int32_t)c;
    for (utf8proc_ssize_t i = 0; i < k; i++) {
        if (utf8proc_category(d[i]) == UTF8PROC_CATEGORY_MN) continue;
        if (lower) put_lower(o, (uint32_t)d[i], a, b);
        else tj_buf_put_cp(o, (uint32_t)d[i], a, b);
    }
}

static void bert_char(const tj_norm *n, tj_buf *o, uint32_t c, uint32_t a, uint32_t b) {
    if (c < 0x80 && c >= 0x20 && c != 0x7F) { /* printable ASCII: the common case */
        tj_buf_put1(o, (char)(n->lower && c >= 'A' && c <= 'Z' ? c + 32 : c), a, b);
        return;
    }
    if (n->clean) {
        if (c == 0 || c == 0xFFFD || is_control(c)) return;
        if (tj_is_whitespace(c)) c = ' ';
    }
    bool pad = n->chinese && is_chinese(c);
    if (pad) tj_buf_put(o, " ", 1, a, b);
    if (n->accents && c >= 0x80) put_stripped(o, c, n->lower, a, b);
    else if (n->lower) put_lower(o, c, a, b);
    else tj_buf_put_cp(o, c, a, b);
    if (pad) tj_buf_put(o, " ", 1, a, b);
}

static void nmt_char(tj_buf *o, uint32_t c, uint32_t a, uint32_t b) {
    if ((c >= 1 && c <= 8) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F ||
        c == 0x9F)
        return;
    if (c == 9 || c == 10 || c == 12 || c == 13 || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
        c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD)
        c = ' ';
    tj_buf_put_cp(o, c, a, b);
}

static void per_char(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    tj_buf_reserve(o, j - i);
    for (size_t p = i; p < j;) {
        size_t k;
        uint32_t c = tj_cp_at(in->s + p, &k);
        uint32_t a = in->a[p], b = in->b[p + k - 1];
        switch (n->kind) {
        case TJN_LOWER: put_lower(o, c, a, b); break;
        case TJN_STRIP_ACCENTS: {
            int cat = utf8proc_category((utf8proc_int32_t)c);
            if (cat < UTF8PROC_CATEGORY_MN || cat > UTF8PROC_CATEGORY_ME) tj_buf_copy(o, in, p, k);
            break;
        }
        case TJN_BERT: bert_char(n, o, c, a, b); break;
        case TJN_NMT: nmt_char(o, c, a, b); break;
        default: tj_buf_copy(o, in, p, k);
        }
        p += k;
    }
}

/* ---- Unicode normal forms ---- */

static void put_run(const tj_buf *in, size_t p, size_t q, int opts, tj_buf *o) {
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)in->s + p, (utf8proc_ssize_t)(q - p),
                                      &res, (utf8proc_option_t)opts);
    if (r < 0) { /* cannot happen on valid UTF-8; keep the text */
        free(res);
        tj_buf_copy(o, in, p, q - p);
        return;
    }
    size_t nin = 0, nout = 0, k;
    for (size_t x = p; x < q; x += tj_clen((uint8_t)in->s[x])) nin++;
    for (size_t x = 0; x < (size_t)r; x += tj_clen(res[x])) nout++;
    if (nin == nout) {
        size_t x = p, y = 0;
        while (y < (size_t)r) {
            k = tj_clen((uint8_t)in->s[x]);
            size_t ko = tj_clen(res[y]);
            tj_buf_put(o, (const char *)res + y, ko, in->a[x], in->b[x + k - 1]);
            x += k;
            y += ko;
        }
    } else {
        tj_buf_put(o, (const char *)res, (size_t)r, in->a[p], in->b[q - 1]);
    }
    free(res);
}

static void unicode_nf(int kind, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    int opts = UTF8PROC_STABLE;
    if (kind == TJN_NFC || kind == TJN_NFKC) opts |= UTF8PROC_COMPOSE;
    else opts |= UTF8PROC_DECOMPOSE;
    if (kind == TJN_NFKC || kind == TJN_NFKD) opts |= UTF8PROC_COMPAT;
    tj_buf_reserve(o, j - i);
    size_t p = i;
    while (p < j) {
        size_t q = p;
        while (q < j && (uint8_t)in->s[q] < 0x80) q++;
        if (q == j) {
            tj_buf_copy(o, in, p, j - p);
            break;
        }
        /* the ASCII character before a non-ASCII stretch may compose with
         * it (e + U+0301), so it goes with the stretch */
        size_t start = q > p ? q - 1 : p;
        tj_buf_copy(o, in, p, start - p);
        size_t r = q;
        while (r < j && (uint8_t)in->s[r] >= 0x80) r++;
        put_run(in, start, r, opts, o);
        p = r;
    }
}

/* ---- Strip, Replace, Prepend ---- */

static void strip(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    size_t k;
    if (n->left)
        while (i < j && tj_is_whitespace(tj_cp_at(in->s + i, &k))) i += k;
    if (n->right)
        while (j > i) {
            size_t p = j - 1;
            while (p > i && ((uint8_t)in->s[p] & 0xC0) == 0x80) p--;
            if (!tj_is_whitespace(tj_cp_at(in->s + p, &k))) break;
            j = p;
        }
    tj_buf_copy(o, in, i, j - i);
}

/* Replace(Regex("\\s+")): each maximal run of White_Space characters. */
static void replace_ws(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    size_t p = i, k;
    while (p < j) {
        size_t h = p;
        while (h < j && !tj_is_whitespace(tj_cp_at(in->s + h, &k))) h += k;
        tj_buf_copy(o, in, p, h - p);
        if (h == j) break;
        size_t e = h;
        while (e < j && tj_is_whitespace(tj_cp_at(in->s + e, &k))) e += k;
        tj_buf_put(o, n->rep, n->rep_len, in->a[h], in->b[e - 1]);
        p = e;
    }
}

static void replace(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    if (n->rx_ws) {
        replace_ws(n, in, i, j, o);
        return;
    }
    size_t m = n->pat_len;
    if (!m) {
        tj_buf_copy(o, in, i, j - i);
        return;
    }
    size_t p = i;
    while (p < j) {
        const char *hit = j - p >= m ? memmem(in->s + p, j - p, n->pat, m) : NULL;
        size_t h = hit ? (size_t)(hit - in->s) : j, e = h + m;
        if (hit && n->rx_min) { /* the whole run of the character */
            size_t reps = 1;
            while (j - e >= m && memcmp(in->s + e, n->pat, m) == 0) e += m, reps++;
            if (reps < n->rx_min) {
                tj_buf_copy(o, in, p, e - p);
                p = e;
                continue;
            }
        }
        tj_buf_copy(o, in, p, h - p);
        if (!hit) break;
        tj_buf_put(o, n->rep, n->rep_len, in->a[h], in->b[e - 1]);
        p = e;
    }
}

/* ---- Precompiled ---- */

/* etok writes spaces as U+2581; the charsmap's own output has spaces. */
static void put_unmarked(tj_buf *o, const char *s, size_t n, uint32_t a, uint32_t b) {
    for (size_t x = 0; x < n;) {
        if (n - x >= 3 && memcmp(s + x, SPACE_MARK, 3) == 0) {
            tj_buf_put(o, " ", 1, a, b);
            x += 3;
        } else {
            tj_buf_put(o, s + x, 1, a, b);
            x++;
        }
    }
}

/* Whether etok's output for the grapheme g is g itself. */
static bool same_as(const char *g, size_t gn, const char *r, size_t rn) {
    size_t x = 0, y = 0;
    while (x < gn && y < rn) {
        if (g[x] == ' ' && rn - y >= 3 && memcmp(r + y, SPACE_MARK, 3) == 0) x++, y += 3;
        else if (g[x] == r[y]) x++, y++;
        else return false;
    }
    return x == gn && y == rn;
}

static void precompiled_ascii(tj_norm *n) {
    tbuf r = {0};
    for (int c = 0; c < 128; c++) {
        char ch = (char)c;
        tbuf_reset(&r);
        etok_spm_normalize(n->spm, &ch, 1, &r);
        tj_buf tmp = {0};
        put_unmarked(&tmp, r.data ? r.data : "", r.len, 0, 0);
        if (tmp.n <= sizeof n->amap[c]) {
            if (tmp.n) memcpy(n->amap[c], tmp.s, tmp.n);
            n->alen[c] = (uint8_t)tmp.n;
        } else {
            n->alen[c] = 255; /* long: take the slow path */
        }
        tj_buf_free(&tmp);
    }
    tbuf_free(&r);
}

static void precompiled(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o) {
    if (!n->spm) {
        tj_buf_copy(o, in, i, j - i);
        return;
    }
    tbuf r = {0};
    size_t p = i;
    while (p < j) {
        uint8_t c0 = (uint8_t)in->s[p];
        /* ASCII followed by ASCII is a grapheme of its own (CR LF aside) */
        if (c0 < 0x80 && c0 != '\r' && (p + 1 == j || (uint8_t)in->s[p + 1] < 0x80) &&
            n->alen[c0] != 255) {
            tj_buf_put(o, n->amap[c0], n->alen[c0], in->a[p], in->b[p]);
            p++;
            continue;
        }
        /* one extended grapheme cluster */
        size_t k, q = p;
        utf8proc_int32_t state = 0;
        uint32_t prev = tj_cp_at(in->s + q, &k);
        q += k;
        while (q < j) {
            uint32_t c = tj_cp_at(in->s + q, &k);
            if (utf8proc_grapheme_break_stateful((utf8proc_int32_t)prev, (utf8proc_int32_t)c, &state))
                break;
            prev = c;
            q += k;
        }
        tbuf_reset(&r);
        etok_spm_normalize(n->spm, in->s + p, q - p, &r);
        const char *rs = r.data ? r.data : "";
        if (same_as(in->s + p, q - p, rs, r.len)) tj_buf_copy(o, in, p, q - p);
        else put_unmarked(o, rs, r.len, in->a[p], in->b[q - 1]);
        p = q;
    }
    tbuf_free(&r);
}

/* ---- dispatch ---- */

static void apply_one(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *o,
                      tj_buf tmp[2]) {
    switch (n->kind) {
    case TJN_NFC: case TJN_NFD: case TJN_NFKC: case TJN_NFKD: unicode_nf(n->kind, in, i, j, o); break;
    case TJN_STRIP: strip(n, in, i, j, o); break;
    case TJN_REPLACE: replace(n, in, i, j, o); break;
    case TJN_PREPEND:
        if (j > i) tj_buf_put(o, n->rep, n->rep_len, in->a[i], in->b[i]);
        tj_buf_copy(o, in, i, j - i);
        break;
    case TJN_PRECOMPILED: precompiled(n, in, i, j, o); break;
    case TJN_SEQ: {
        /* a nested Sequence gets fresh buffers (rare) */
        tj_buf t2[2] = {{0}, {0}};
        tj_norm_apply(n, in, i, j, o, t2);
        tj_buf_free(&t2[0]);
        tj_buf_free(&t2[1]);
        (void)tmp;
        break;
    }
    default: per_char(n, in, i, j, o);
    }
}

void tj_norm_apply(const tj_norm *n, const tj_buf *in, size_t i, size_t j, tj_buf *out,
                   tj_buf tmp[2]) {
    if (n->kind != TJN_SEQ) {
        apply_one(n, in, i, j, out, tmp);
        return;
    }
    if (n->nsub == 0) {
        tj_buf_copy(out, in, i, j - i);
        return;
    }
    const tj_buf *src = in;
    size_t si = i, sj = j;
    for (size_t k = 0; k < n->nsub; k++) {
        tj_buf *dst = k + 1 == n->nsub ? out : &tmp[k & 1];
        if (dst != out) dst->n = 0;
        apply_one(&n->sub[k], src, si, sj, dst, tmp);
        src = dst;
        si = 0;
        sj = dst->n;
    }
}
