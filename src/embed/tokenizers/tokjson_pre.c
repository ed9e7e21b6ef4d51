/* tokjson_pre — the pre-tokenizers of tokenizer.json.
 *
 * A pre-tokenizer cuts each segment into words. Most find "matches" (a
 * character class, a literal, or one of the GPT-2 / Qwen2 / Llama-3
 * regexes, hand-written below) and then apply HF's split behaviour
 * (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous) to
 * the matches and the gaps between them; empty words are dropped. The
 * regexes are evaluated as a backtracking engine would (leftmost-first
 * alternation, greedy repeats, the `\s+(?!\S)` look-ahead). */
#include "embed/tokenizers/tokjson_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* ---- parsing ---- */

const char tj_re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char tj_re_qwen2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char tj_re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static trove_err parse_behavior(json_t *j, const char *what, int dflt, int *out) {
    const char *s;
    size_t n;
    trove_err e = tj_json_str(j, "behavior", what, false, &s, &n);
    if (e) return e;
    *out = dflt;
    if (!s) return TROVE_OK;
    static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                         "Contiguous"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = TJ_REMOVED + i;
            return TROVE_OK;
        }
    return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: %s behavior \"%s\" is not supported", what, s);
}

static trove_err parse_split(json_t *j, tj_pre *p) {
    json_t *pat = json_object_get(j, "pattern");
    const char *s = NULL;
    size_t n = 0;
    if (json_is_object(pat) && json_is_string(json_object_get(pat, "String"))) {
        tj_json_str(pat, "String", "Split", true, &s, &n);
        p->pattern = TJ_PAT_STRING;
    } else if (json_is_object(pat) && json_is_string(json_object_get(pat, "Regex"))) {
        tj_json_str(pat, "Regex", "Split", true, &s, &n);
        if (strcmp(s, tj_re_gpt2) == 0) p->pattern = TJ_PAT_GPT2;
        else if (strcmp(s, tj_re_qwen2) == 0) p->pattern = TJ_PAT_QWEN2;
        else if (strcmp(s, tj_re_llama3) == 0) p->pattern = TJ_PAT_LLAMA3;
        else {
            for (size_t i = 0; i < n; i++)
                if (strchr("\\^$.|?*+()[]{}", s[i]))
                    return trove_fail(TROVE_EUNSUPPORTED,
                                      "tokenizer.json: Split pre-tokenizer regex \"%.120s\" is not "
                                      "supported (GPT-2, Qwen2 and Llama-3 patterns and literals are)",
                                      s);
            p->pattern = TJ_PAT_STRING;
        }
    } else {
        return trove_fail(TROVE_EPARSE, "tokenizer.json: Split pre-tokenizer has no pattern");
    }
    if (p->pattern == TJ_PAT_STRING) {
        p->pat = xstrndup(s, n);
        p->pat_len = n;
    }
    p->invert = tj_json_bool(j, "invert", false);
    return parse_behavior(j, "Split pre-tokenizer", TJ_ISOLATED, &p->behavior);
}

static trove_err parse_metaspace(json_t *j, tj_pre *p) {
    const char *s;
    size_t n;
    trove_err e = tj_json_str(j, "replacement", "Metaspace", false, &s, &n);
    if (e) return e;
    if (!s) s = "\xE2\x96\x81", n = 3;
    uint32_t cp;
    if (n == 0 || n > 4 || tj_utf8_next((const uint8_t *)s, n, &cp) != n)
        return trove_fail(TROVE_EPARSE, "tokenizer.json: Metaspace replacement is not one character");
    memcpy(p->repl, s, n);
    p->repl_len = n;
    p->repl_cp = cp;
    p->split = tj_json_bool(j, "split", true);
    p->prepend = tj_json_bool(j, "add_prefix_space", true) ? TJ_PREPEND_ALWAYS : TJ_PREPEND_NEVER;
    if ((e = tj_json_str(j, "prepend_scheme", "Metaspace", false, &s, &n))) return e;
    if (s) {
        if (strcmp(s, "always") == 0) p->prepend = TJ_PREPEND_ALWAYS;
        else if (strcmp(s, "first") == 0) p->prepend = TJ_PREPEND_FIRST;
        else if (strcmp(s, "never") == 0) p->prepend = TJ_PREPEND_NEVER;
        else return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: Metaspace prepend_scheme \"%s\"", s);
    }
    return TROVE_OK;
}

trove_err tj_pre_parse(json_t *j, tj_pre *p) {
    memset(p, 0, sizeof *p);
    if (!json_is_object(j)) return trove_fail(TROVE_EPARSE, "tokenizer.json: pre_tokenizer is not an object");
    const char *type;
    size_t tl;
    trove_err e = tj_json_str(j, "type", "pre_tokenizer", true, &type, &tl);
    if (e) return e;
    static const struct {
        const char *name;
        int kind;
    } kinds[] = {{"Sequence", TJP_SEQ}, {"Whitespace", TJP_WHITESPACE},
                 {"WhitespaceSplit", TJP_WSSPLIT}, {"BertPreTokenizer", TJP_BERT},
                 {"Punctuation", TJP_PUNCT}, {"Metaspace", TJP_METASPACE},
                 {"ByteLevel", TJP_BYTELEVEL}, {"Digits", TJP_DIGITS}, {"Split", TJP_SPLIT}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(type, kinds[i].name) == 0) p->kind = kinds[i].kind;
    switch (p->kind) {
    case TJP_SEQ: {
        json_t *arr = json_object_get(j, "pretokenizers");
        if (!json_is_array(arr))
            return trove_fail(TROVE_EPARSE, "tokenizer.json: pre_tokenizer Sequence has no \"pretokenizers\"");
        p->sub = xcalloc(json_array_size(arr) + 1, sizeof *p->sub);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            e = tj_pre_parse(json_array_get(arr, i), &p->sub[p->nsub]);
            p->nsub++;
            if (e) return e;
        }
        return TROVE_OK;
    }
    case TJP_PUNCT: return parse_behavior(j, "Punctuation pre-tokenizer", TJ_ISOLATED, &p->behavior);
    case TJP_METASPACE: return parse_metaspace(j, p);
    case TJP_BYTELEVEL:
        p->add_prefix_space = tj_json_bool(j, "add_prefix_space", true);
        p->use_regex = tj_json_bool(j, "use_regex", true);
        return TROVE_OK;
    case TJP_DIGITS: p->individual = tj_json_bool(j, "individual_digits", false); return TROVE_OK;
    case TJP_SPLIT: return parse_split(j, p);
    case 0:
        return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: pre-tokenizer \"%s\" is not supported", type);
    default: return TROVE_OK;
    }
}

void tj_pre_free(tj_pre *p) {
    if (!p) return;
    for (size_t i = 0; i < p->nsub; i++) tj_pre_free(&p->sub[i]);
    free(p->sub);
    free(p->pat);
}

/* ---- matches and split behaviours ---- */

typedef struct piece {
    uint32_t s, e;
    bool m;
} piece;

typedef struct pieces {
    piece *v;
    size_t n, cap;
} pieces;

static void add_piece(pieces *ps, size_t s, size_t e, bool m) {
    if (ps->n == ps->cap) xgrow(&ps->v, &ps->cap, ps->n + 1, sizeof *ps->v);
    ps->v[ps->n++] = (piece){(uint32_t)s, (uint32_t)e, m};
}

/* A match [s, e) after the previous one ended at *last: the gap first. */
static void add_match(pieces *ps, size_t *last, size_t s, size_t e) {
    if (s > *last) add_piece(ps, *last, s, false);
    add_piece(ps, s, e, true);
    *last = e;
}

static void out_word(const tj_buf *src, size_t s, size_t e, tj_seq *out) {
    if (e <= s) return;
    uint32_t at = (uint32_t)out->buf.n;
    tj_buf_copy(&out->buf, src, s, e - s);
    tj_seq_push(out, at, (uint32_t)out->buf.n, -1);
}

static void apply_behavior(const tj_buf *src, pieces *ps, size_t end, size_t last, int behavior,
                           bool invert, tj_seq *out) {
    if (end > last) add_piece(ps, last, end, false);
    piece *v = ps->v;
    size_t n = ps->n;
    if (invert)
        for (size_t i = 0; i < n; i++) v[i].m = !v[i].m;
    switch (behavior) {
    case TJ_REMOVED:
        for (size_t i = 0; i < n; i++)
            if (!v[i].m) out_word(src, v[i].s, v[i].e, out);
        break;
    case TJ_ISOLATED:
        for (size_t i = 0; i < n; i++) out_word(src, v[i].s, v[i].e, out);
        break;
    case TJ_CONTIGUOUS:
        for (size_t i = 0; i < n;) {
            size_t k = i + 1;
            if (v[i].m)
                while (k < n && v[k].m) k++;
            out_word(src, v[i].s, v[k - 1].e, out);
            i = k;
        }
        break;
    case TJ_MERGED_PREV:
        for (size_t i = 0; i < n;) {
            size_t k = i + 1; /* a match right after a non-match joins it */
            if (!v[i].m)
                while (k < n && v[k].m && !v[k - 1].m) k++;
            out_word(src, v[i].s, v[k - 1].e, out);
            i = k;
        }
        break;
    case TJ_MERGED_NEXT:
        for (size_t i = 0; i < n;) {
            size_t s = v[i].s; /* a match right before a non-match joins it */
            while (i + 1 < n && v[i].m && !v[i + 1].m) i++;
            out_word(src, s, v[i].e, out);
            i++;
        }
        break;
    }
    ps->n = 0;
}

/* ---- the regexes ---- */

static uint32_t cp_at(const char *s, size_t n, size_t p, size_t *k) {
    if (p >= n) {
        *k = 0;
        return 0;
    }
    return tj_cp_at(s + p, k);
}

static bool is_other(uint32_t c) { return !tj_is_whitespace(c) && !tj_is_alpha(c) && !tj_is_numeric(c); }

static size_t run(const char *s, size_t n, size_t p, bool (*cls)(uint32_t)) {
    size_t k;
    while (p < n && cls(tj_cp_at(s + p, &k))) p += k;
    return p;
}

static bool is_nl(uint32_t c) { return c == '\r' || c == '\n'; }

/* 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive; 0 if none */
static size_t contraction(const char *s, size_t n, size_t p, bool icase) {
    if (s[p] != '\'' || p + 1 >= n) return 0;
    size_t k;
    uint32_t c1 = tj_cp_at(s + p + 1, &k);
    if (icase) {
        if (c1 == 0x17F) return 1 + k; /* long s folds to s */
        if (c1 < 0x80) c1 |= 32;
    }
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    if (p + 2 >= n) return 0;
    uint32_t c2 = (uint8_t)s[p + 2];
    if (icase) c2 |= 32;
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ at p (a whitespace character) */
static size_t ws_tail(const char *s, size_t n, size_t p) {
    size_t e = run(s, n, p, tj_is_whitespace);
    if (e == n) return e;
    size_t last = e - 1;
    while (((uint8_t)s[last] & 0xC0) == 0x80) last--;
    return last > p ? last : e;
}

static size_t re_gpt2(const char *s, size_t n, size_t p) {
    size_t k = contraction(s, n, p, false);
    if (k) return p + k;
    uint32_t c = cp_at(s, n, p, &k);
    size_t q = p;
    if (c == ' ' && p + 1 < n) {
        size_t k1;
        uint32_t c1 = cp_at(s, n, p + 1, &k1);
        if (!tj_is_whitespace(c1)) c = c1, q = p + 1, k = k1;
    }
    if (tj_is_alpha(c)) return run(s, n, q + k, tj_is_alpha);
    if (tj_is_numeric(c)) return run(s, n, q + k, tj_is_numeric);
    if (!tj_is_whitespace(c)) return run(s, n, q + k, is_other);
    return ws_tail(s, n, p);
}

static size_t re_qwen(const char *s, size_t n, size_t p, size_t max_digits) {
    size_t k = contraction(s, n, p, true);
    if (k) return p + k;
    uint32_t c = cp_at(s, n, p, &k);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (tj_is_alpha(c)) return run(s, n, p + k, tj_is_alpha);
    size_t k1;
    uint32_t c1 = cp_at(s, n, p + k, &k1);
    if (!is_nl(c) && !tj_is_numeric(c) && k1 && tj_is_alpha(c1)) return run(s, n, p + k, tj_is_alpha);
    /* \p{N}{1,max} */
    if (tj_is_numeric(c)) {
        size_t e = p + k;
        for (size_t d = 1; d < max_digits && e < n && tj_is_numeric(cp_at(s, n, e, &k1)); d++) e += k1;
        return e;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    size_t q = c == ' ' && k1 && is_other(c1) ? p + 1 : p;
    uint32_t cq = q == p ? c : c1;
    if (is_other(cq)) {
        size_t e = run(s, n, q, is_other);
        while (e < n && is_nl((uint8_t)s[e])) e++;
        return e;
    }
    /* \s*[\r\n]+ */
    size_t e = run(s, n, p, tj_is_whitespace);
    for (size_t x = e; x > p; x--)
        if (is_nl((uint8_t)s[x - 1])) return x;
    return ws_tail(s, n, p);
}

static void regex_split(const tj_pre *p, const tj_buf *b, size_t i, size_t j, pieces *ps,
                        tj_seq *out) {
    const char *s = b->s + i;
    size_t n = j - i, pos = 0, last = i;
    while (pos < n) {
        size_t e = p->pattern == TJ_PAT_GPT2     ? re_gpt2(s, n, pos)
                   : p->pattern == TJ_PAT_QWEN2  ? re_qwen(s, n, pos, 1)
                                                 : re_qwen(s, n, pos, 3);
        if (e <= pos) e = pos + tj_clen((uint8_t)s[pos]); /* cannot happen; stay safe */
        if (e > n) e = n;
        add_match(ps, &last, i + pos, i + e);
        pos = e;
    }
    apply_behavior(b, ps, j, last, p->behavior, p->invert, out);
}

/* ---- character-class splits ---- */

typedef bool (*cls_fn)(const tj_pre *p, uint32_t c);
static bool cls_ws(const tj_pre *p, uint32_t c) { (void)p; return tj_is_whitespace(c); }
static bool cls_punct(const tj_pre *p, uint32_t c) { (void)p; return tj_is_punct(c); }
static bool cls_digit(const tj_pre *p, uint32_t c) { (void)p; return tj_is_numeric(c); }
static bool cls_repl(const tj_pre *p, uint32_t c) { return c == p->repl_cp; }

static void class_split(const tj_pre *p, cls_fn cls, int behavior, const tj_buf *b, size_t i,
                        size_t j, pieces *ps, tj_seq *out) {
    size_t last = i, k;
    for (size_t x = i; x < j; x += k) {
        uint32_t c = tj_cp_at(b->s + x, &k);
        if (cls(p, c)) add_match(ps, &last, x, x + k);
    }
    apply_behavior(b, ps, j, last, behavior, false, out);
}

static void string_split(const tj_pre *p, const tj_buf *b, size_t i, size_t j, pieces *ps,
                         tj_seq *out) {
    size_t last = i, x = i;
    while (p->pat_len && x < j) {
        const char *hit = memmem(b->s + x, j - x, p->pat, p->pat_len);
        if (!hit) break;
        size_t h = (size_t)(hit - b->s);
        add_match(ps, &last, h, h + p->pat_len);
        x = h + p->pat_len;
    }
    apply_behavior(b, ps, j, last, p->behavior, p->invert, out);
}

/* Whitespace: \w+|[^\w\s]+ kept, the rest dropped */
static void whitespace(const tj_buf *b, size_t i, size_t j, tj_seq *out) {
    size_t x = i, k;
    while (x < j) {
        uint32_t c = tj_cp_at(b->s + x, &k);
        if (tj_is_whitespace(c)) {
            x += k;
            continue;
        }
        bool w = tj_is_word(c);
        size_t e = x + k;
        while (e < j) {
            uint32_t d = tj_cp_at(b->s + e, &k);
            if (tj_is_whitespace(d) || tj_is_word(d) != w) break;
            e += k;
        }
        out_word(b, x, e, out);
        x = e;
    }
}

/* ---- byte level and metaspace ---- */

uint32_t tj_byte_char(uint8_t b) {
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) return b;
    /* the others, in order, become U+0100.. */
    uint32_t k = b <= 32 ? b : b <= 160 ? 33u + (b - 127u) : 67u;
    return 256 + k;
}

static void byte_map(tj_seq *q, size_t from_seg) {
    /* rewrite segments from_seg.. of q in place: each byte -> its char */
    tj_buf nb = {0};
    size_t first = from_seg < q->nseg ? q->seg[from_seg].start : q->buf.n;
    tj_buf_reserve(&nb, 2 * (q->buf.n - first));
    for (size_t g = from_seg; g < q->nseg; g++) {
        tj_seg *sg = &q->seg[g];
        uint32_t at = (uint32_t)(first + nb.n);
        for (uint32_t x = sg->start; x < sg->end; x++)
            tj_buf_put_cp(&nb, tj_byte_char((uint8_t)q->buf.s[x]), q->buf.a[x], q->buf.b[x]);
        sg->start = at;
        sg->end = (uint32_t)(first + nb.n);
    }
    q->buf.n = first;
    tj_buf_copy(&q->buf, &nb, 0, nb.n);
    tj_buf_free(&nb);
}

static void bytelevel(const tj_pre *p, const tj_buf *b, size_t i, size_t j, pieces *ps, tj_seq *out,
                      tj_buf *tmp) {
    size_t from = out->nseg;
    const tj_buf *src = b;
    if (p->add_prefix_space && j > i && b->s[i] != ' ') {
        tmp->n = 0;
        tj_buf_put(tmp, " ", 1, b->a[i], b->b[i]);
        tj_buf_copy(tmp, b, i, j - i);
        src = tmp, i = 0, j = tmp->n;
    }
    if (p->use_regex) {
        tj_pre gp = {.pattern = TJ_PAT_GPT2, .behavior = TJ_ISOLATED};
        regex_split(&gp, src, i, j, ps, out);
    } else {
        out_word(src, i, j, out);
    }
    byte_map(out, from);
}

static void metaspace(const tj_pre *p, const tj_buf *b, size_t i, size_t j, pieces *ps, tj_seq *out,
                      tj_buf *tmp) {
    tmp->n = 0;
    bool starts = j - i >= p->repl_len && memcmp(b->s + i, p->repl, p->repl_len) == 0;
    bool starts_space = j > i && b->s[i] == ' ';
    bool pre = j > i && !starts && !starts_space &&
               (p->prepend == TJ_PREPEND_ALWAYS || (p->prepend == TJ_PREPEND_FIRST && b->a[i] == 0));
    if (pre) tj_buf_put(tmp, p->repl, p->repl_len, b->a[i], b->b[i]);
    for (size_t x = i; x < j; x++) {
        if (b->s[x] == ' ') tj_buf_put(tmp, p->repl, p->repl_len, b->a[x], b->b[x]);
        else tj_buf_copy(tmp, b, x, 1);
    }
    if (p->split) class_split(p, cls_repl, TJ_MERGED_NEXT, tmp, 0, tmp->n, ps, out);
    else out_word(tmp, 0, tmp->n, out);
}

/* ---- dispatch ---- */

static void pre_one(const tj_pre *p, const tj_buf *b, size_t i, size_t j, pieces *ps, tj_seq *out,
                    tj_buf *tmp) {
    switch (p->kind) {
    case TJP_WHITESPACE: whitespace(b, i, j, out); break;
    case TJP_WSSPLIT: class_split(p, cls_ws, TJ_REMOVED, b, i, j, ps, out); break;
    case TJP_BERT: {
        tj_seq mid = {0};
        class_split(p, cls_ws, TJ_REMOVED, b, i, j, ps, &mid);
        for (size_t g = 0; g < mid.nseg; g++)
            class_split(p, cls_punct, TJ_ISOLATED, &mid.buf, mid.seg[g].start, mid.seg[g].end, ps, out);
        tj_seq_free(&mid);
        break;
    }
    case TJP_PUNCT: class_split(p, cls_punct, p->behavior, b, i, j, ps, out); break;
    case TJP_DIGITS:
        class_split(p, cls_digit, p->individual ? TJ_ISOLATED : TJ_CONTIGUOUS, b, i, j, ps, out);
        break;
    case TJP_METASPACE: metaspace(p, b, i, j, ps, out, tmp); break;
    case TJP_BYTELEVEL: bytelevel(p, b, i, j, ps, out, tmp); break;
    case TJP_SPLIT:
        if (p->pattern == TJ_PAT_STRING) string_split(p, b, i, j, ps, out);
        else regex_split(p, b, i, j, ps, out);
        break;
    }
}

static void apply_flat(const tj_pre *p, const tj_seq *in, tj_seq *out, pieces *ps, tj_buf *tmp) {
    for (size_t g = 0; g < in->nseg; g++) {
        const tj_seg *sg = &in->seg[g];
        if (sg->id >= 0) {
            uint32_t at = (uint32_t)out->buf.n;
            tj_buf_copy(&out->buf, &in->buf, sg->start, sg->end - sg->start);
            tj_seq_push(out, at, (uint32_t)out->buf.n, sg->id);
            continue;
        }
        if (p->kind == TJP_SEQ) { /* nested Sequence: rare, fresh buffers */
            tj_seq one = {0}, res = {0}, t2 = {0};
            tj_buf_copy(&one.buf, &in->buf, sg->start, sg->end - sg->start);
            tj_seq_push(&one, 0, (uint32_t)one.buf.n, -1);
            tj_pre_apply(p, &one, &res, &t2);
            for (size_t r = 0; r < res.nseg; r++) out_word(&res.buf, res.seg[r].start, res.seg[r].end, out);
            tj_seq_free(&one);
            tj_seq_free(&res);
            tj_seq_free(&t2);
            continue;
        }
        pre_one(p, &in->buf, sg->start, sg->end, ps, out, tmp);
    }
}

void tj_pre_apply(const tj_pre *p, const tj_seq *in, tj_seq *out, tj_seq *tmp) {
    pieces ps = {0};
    tj_buf tb = {0};
    if (p->kind != TJP_SEQ || p->nsub == 0) {
        if (p->kind == TJP_SEQ) {
            for (size_t g = 0; g < in->nseg; g++) {
                uint32_t at = (uint32_t)out->buf.n;
                tj_buf_copy(&out->buf, &in->buf, in->seg[g].start, in->seg[g].end - in->seg[g].start);
                tj_seq_push(out, at, (uint32_t)out->buf.n, in->seg[g].id);
            }
        } else {
            apply_flat(p, in, out, &ps, &tb);
        }
    } else {
        const tj_seq *src = in;
        for (size_t k = 0; k < p->nsub; k++) {
            tj_seq *dst = (p->nsub - 1 - k) % 2 == 0 ? out : tmp;
            tj_seq_reset(dst);
            apply_flat(&p->sub[k], src, dst, &ps, &tb);
            src = dst;
        }
    }
    free(ps.v);
    tj_buf_free(&tb);
}
