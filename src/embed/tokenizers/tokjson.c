/* tokjson — loading a tokenizer.json (components, added tokens,
 * post-processor) and the encode pipeline:
 *
 *   text -> (raw added tokens split out) -> normalizer per piece ->
 *   (normalised added tokens split out) -> pre-tokenizer -> model -> specials
 *
 * Added tokens are matched left-most-longest, like HF's Aho-Corasick
 * search: tokens with normalized=false on the raw text, the others (by
 * their normalised content) on the normalised text. */
#include "embed/tokenizers/tokjson_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

/* ---- added tokens ---- */

static trove_err parse_added(json_t *root, tokjson *t) {
    json_t *arr = json_object_get(root, "added_tokens");
    if (!arr || json_is_null(arr)) arr = NULL;
    else if (!json_is_array(arr)) return trove_fail(TROVE_EPARSE, "tokenizer.json: added_tokens is not an array");
    size_t n = arr ? json_array_size(arr) : 0;
    t->added = xcalloc(n + 1, sizeof *t->added);
    t->n_added = n;
    const char **text = xmalloc((n + 1) * sizeof *text);
    size_t *len = xmalloc((n + 1) * sizeof *len);
    uint32_t *idx = xmalloc((n + 1) * sizeof *idx);
    size_t cnt[2] = {0, 0};
    const char **mt[2] = {xmalloc((n + 1) * sizeof(char *)), xmalloc((n + 1) * sizeof(char *))};
    size_t *ml[2] = {xmalloc((n + 1) * sizeof(size_t)), xmalloc((n + 1) * sizeof(size_t))};
    uint32_t *mi[2] = {xmalloc((n + 1) * sizeof(uint32_t)), xmalloc((n + 1) * sizeof(uint32_t))};
    tj_buf norm = {0}, in = {0}, tmp[2] = {{0}, {0}};
    char **owned = xcalloc(n + 1, sizeof *owned);
    trove_err e = TROVE_OK;
    for (size_t i = 0; i < n && !e; i++) {
        json_t *o = json_array_get(arr, i), *id = json_object_get(o, "id");
        const char *s;
        size_t sl;
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (1 << 24)) {
            e = trove_fail(TROVE_EPARSE, "tokenizer.json: added token %zu has no valid id", i);
            break;
        }
        if ((e = tj_json_str(o, "content", "added token", true, &s, &sl))) break;
        tj_added *a = &t->added[i];
        a->id = (int32_t)json_integer_value(id);
        a->special = tj_json_bool(o, "special", false);
        a->single_word = tj_json_bool(o, "single_word", false);
        a->lstrip = tj_json_bool(o, "lstrip", false);
        a->rstrip = tj_json_bool(o, "rstrip", false);
        a->normalized = tj_json_bool(o, "normalized", !a->special);
        text[i] = s, len[i] = sl, idx[i] = (uint32_t)i;
        if (t->n_ids < (size_t)a->id + 1) t->n_ids = (size_t)a->id + 1;
        int w = a->normalized && t->norm;
        if (w) { /* match by the normalised content */
            in.n = norm.n = 0;
            for (size_t x = 0; x < sl; x++) tj_buf_put(&in, s + x, 1, 0, 0);
            tj_norm_apply(t->norm, &in, 0, in.n, &norm, tmp);
            owned[i] = xstrndup(norm.s ? norm.s : "", norm.n);
            s = owned[i], sl = norm.n;
        }
        if (sl == 0) continue;
        mt[w][cnt[w]] = s, ml[w][cnt[w]] = sl, mi[w][cnt[w]] = (uint32_t)i;
        cnt[w]++;
        t->match_first[w][(uint8_t)s[0] >> 6] |= 1ull << ((uint8_t)s[0] & 63);
    }
    if (!e) e = tj_strtab_build(&t->added_tab, text, len, idx, n);
    for (int w = 0; w < 2 && !e; w++) {
        e = tj_strtab_build(&t->match[w], mt[w], ml[w], mi[w], cnt[w]);
        if (e == TROVE_ECORRUPT) e = TROVE_OK; /* unreachable: indexes are unique */
    }
    for (size_t i = 0; i < n; i++) free(owned[i]);
    free(owned);
    for (int w = 0; w < 2; w++) free(mt[w]), free(ml[w]), free(mi[w]);
    free(text), free(len), free(idx);
    tj_buf_free(&norm), tj_buf_free(&in), tj_buf_free(&tmp[0]), tj_buf_free(&tmp[1]);
    return e;
}

/* Longest added token of table w at s[0..n); its index or -1, *len set. */
static int32_t added_at(const tokjson *t, int w, const char *s, size_t n, size_t *len) {
    uint8_t c = (uint8_t)s[0];
    if (!(t->match_first[w][c >> 6] >> (c & 63) & 1)) return -1;
    const tj_strtab *tab = &t->match[w];
    size_t lim = n < tab->max_len ? n : tab->max_len;
    uint32_t h = TJ_HASH_INIT;
    int32_t best = -1;
    for (size_t k = 0; k < lim; k++) {
        h = tj_hash_step(h, (uint8_t)s[k]);
        int32_t i = tj_strtab_find_h(tab, s, k + 1, h);
        if (i >= 0) best = i, *len = k + 1;
    }
    return best;
}

static bool word_before(const char *s, size_t i, size_t lo) {
    if (i <= lo) return false;
    size_t p = i - 1, k;
    while (p > lo && ((uint8_t)s[p] & 0xC0) == 0x80) p--;
    uint32_t c = tj_cp_at(s + p, &k);
    return tj_is_alnum(c) || c == '_';
}

static bool word_after(const char *s, size_t i, size_t hi) {
    if (i >= hi) return false;
    size_t k;
    uint32_t c = tj_cp_at(s + i, &k);
    return tj_is_alnum(c) || c == '_';
}

static void push_part(tj_seq *out, const tj_buf *src, size_t s, size_t e, int32_t id) {
    if (e <= s) return;
    uint32_t at = (uint32_t)out->buf.n;
    tj_buf_copy(&out->buf, src, s, e - s);
    tj_seq_push(out, at, (uint32_t)out->buf.n, id);
}

static void split_added(const tokjson *t, int w, const tj_seq *in, tj_seq *out) {
    tj_seq_reset(out);
    const tj_buf *b = &in->buf;
    for (size_t g = 0; g < in->nseg; g++) {
        size_t lo = in->seg[g].start, hi = in->seg[g].end, done = lo, p = lo, len = 0;
        if (in->seg[g].id >= 0) {
            push_part(out, b, lo, hi, in->seg[g].id);
            continue;
        }
        while (p < hi) {
            int32_t x = added_at(t, w, b->s + p, hi - p, &len);
            if (x < 0) {
                p++;
                continue;
            }
            const tj_added *a = &t->added[x];
            size_t s = p, e = p + len, k;
            p = e; /* a discarded match is not searched again, as in HF */
            if (a->single_word && (word_before(b->s, s, lo) || word_after(b->s, e, hi))) continue;
            if (a->lstrip)
                while (s > done) {
                    size_t q = s - 1;
                    while (q > done && ((uint8_t)b->s[q] & 0xC0) == 0x80) q--;
                    if (!tj_is_whitespace(tj_cp_at(b->s + q, &k))) break;
                    s = q;
                }
            if (a->rstrip)
                while (e < hi && tj_is_whitespace(tj_cp_at(b->s + e, &k))) e += k;
            push_part(out, b, done, s, -1);
            push_part(out, b, s, e, a->id);
            done = p = e;
        }
        push_part(out, b, done, hi, -1);
    }
}

/* ---- post-processor ---- */

static void ids_add(int32_t **v, size_t *n, int32_t id) {
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[(*n)++] = id;
}

static trove_err special_pair(json_t *j, const char *key, const char *what, int32_t *id) {
    json_t *p = json_object_get(j, key), *v = json_array_get(p, 1);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (1 << 24))
        return trove_fail(TROVE_EPARSE, "tokenizer.json: %s \"%s\" is not [token, id]", what, key);
    *id = (int32_t)json_integer_value(v);
    return TROVE_OK;
}

static trove_err parse_template(json_t *j, int32_t **pre, size_t *npre, int32_t **post, size_t *npost) {
    json_t *single = json_object_get(j, "single"), *sp = json_object_get(j, "special_tokens");
    if (!json_is_array(single))
        return trove_fail(TROVE_EPARSE, "tokenizer.json: TemplateProcessing has no \"single\" template");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(single); i++) {
        json_t *it = json_array_get(single, i), *st = json_object_get(it, "SpecialToken");
        if (json_object_get(it, "Sequence")) {
            seen = true;
            continue;
        }
        json_t *name = json_object_get(st, "id");
        json_t *ids = json_object_get(json_object_get(sp, json_string_value(name) ? json_string_value(name) : ""), "ids");
        if (!json_is_string(name) || !json_is_array(ids))
            return trove_fail(TROVE_EPARSE, "tokenizer.json: TemplateProcessing item %zu names no special token", i);
        for (size_t k = 0; k < json_array_size(ids); k++) {
            json_t *v = json_array_get(ids, k);
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (1 << 24))
                return trove_fail(TROVE_EPARSE, "tokenizer.json: special token \"%s\" has a bad id",
                                  json_string_value(name));
            if (seen) ids_add(post, npost, (int32_t)json_integer_value(v));
            else ids_add(pre, npre, (int32_t)json_integer_value(v));
        }
    }
    return TROVE_OK;
}

/* Apply processor j around what is already in pre/post. */
static trove_err parse_post(json_t *j, tokjson *t) {
    const char *type;
    size_t tl;
    trove_err e = tj_json_str(j, "type", "post_processor", true, &type, &tl);
    if (e) return e;
    int32_t *pre = NULL, *post = NULL;
    size_t npre = 0, npost = 0;
    if (strcmp(type, "Sequence") == 0) {
        json_t *arr = json_object_get(j, "processors");
        for (size_t i = 0; i < json_array_size(arr) && !e; i++) e = parse_post(json_array_get(arr, i), t);
        return e;
    } else if (strcmp(type, "TemplateProcessing") == 0) {
        e = parse_template(j, &pre, &npre, &post, &npost);
    } else if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
        int32_t cls = 0, sep = 0;
        if (!(e = special_pair(j, "cls", type, &cls)) && !(e = special_pair(j, "sep", type, &sep))) {
            ids_add(&pre, &npre, cls);
            ids_add(&post, &npost, sep);
        }
    } else if (strcmp(type, "ByteLevel") != 0) {
        return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: post-processor \"%s\" is not supported", type);
    }
    /* new specials wrap the old: pre = new + old, post = old + new */
    for (size_t i = 0; i < t->n_post_pre; i++) ids_add(&pre, &npre, t->post_pre[i]);
    free(t->post_pre);
    t->post_pre = pre, t->n_post_pre = npre;
    for (size_t i = 0; i < npost; i++) ids_add(&t->post_post, &t->n_post_post, post[i]);
    free(post);
    return e;
}

/* ---- loading ---- */

trove_err tj_finish_config(tokjson *t) {
    json_t *root = t->config, *j;
    trove_err e = TROVE_OK;
    if ((j = json_object_get(root, "normalizer")) && !json_is_null(j)) {
        t->norm = xcalloc(1, sizeof *t->norm);
        if ((e = tj_norm_parse(j, t->norm))) return e;
    }
    if ((j = json_object_get(root, "pre_tokenizer")) && !json_is_null(j)) {
        t->pre = xcalloc(1, sizeof *t->pre);
        if ((e = tj_pre_parse(j, t->pre))) return e;
    }
    if ((j = json_object_get(root, "post_processor")) && !json_is_null(j))
        if ((e = parse_post(j, t))) return e;
    if (t->n_ids < t->model.vocab.n) t->n_ids = t->model.vocab.n;
    if ((e = parse_added(root, t))) return e;
    for (size_t i = 0; i < t->n_post_pre; i++)
        if ((size_t)t->post_pre[i] >= t->n_ids) t->n_ids = (size_t)t->post_pre[i] + 1;
    for (size_t i = 0; i < t->n_post_post; i++)
        if ((size_t)t->post_post[i] >= t->n_ids) t->n_ids = (size_t)t->post_post[i] + 1;
    return TROVE_OK;
}

trove_err tj_from_json(json_t *root, tokjson **out) {
    *out = NULL;
    if (!json_is_object(root)) return trove_fail(TROVE_EPARSE, "tokenizer.json: not a JSON object");
    tokjson *t = xcalloc(1, sizeof *t);
    json_t *m = json_object_get(root, "model");
    trove_err e = tj_model_parse(m, &t->model, true);
    if (!e) {
        json_object_del(m, "vocab"); /* held by the model now; save rewrites it */
        json_object_del(m, "merges");
        t->config = json_incref(root);
        e = tj_finish_config(t);
    }
    if (e) {
        tokjson_free(t);
        return e;
    }
    *out = t;
    return TROVE_OK;
}

trove_err tokjson_from_buffer(const void *buf, size_t len, tokjson **out) {
    *out = NULL;
    if (tj_bin_is(buf, len)) return tj_bin_load(buf, len, false, out);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    if (!root)
        return trove_fail(TROVE_EPARSE, "tokenizer.json: line %d column %d: %s", je.line, je.column, je.text);
    trove_err e = tj_from_json(root, out);
    json_decref(root);
    return e;
}

trove_err tokjson_borrow(const void *buf, size_t len, void (*release)(void *), void *owner,
                         tokjson **out) {
    *out = NULL;
    trove_err e = tj_bin_is(buf, len) ? tj_bin_load(buf, len, true, out)
                                      : tokjson_from_buffer(buf, len, out);
    if (!e) {
        (*out)->release = release;
        (*out)->owner = owner;
    }
    return e;
}

trove_err tokjson_open(const char *path, tokjson **out) {
    *out = NULL;
    char *data;
    size_t len;
    trove_err e = fs_read_file(path, 0, &data, &len);
    if (e) return e;
    e = tokjson_from_buffer(data, len, out);
    free(data);
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", trove_errmsg());
        return trove_fail(e, "%s: %s", path, msg);
    }
    return TROVE_OK;
}

void tokjson_free(tokjson *t) {
    if (!t) return;
    if (t->release) t->release(t->owner);
    json_decref(t->config);
    tj_norm_free(t->norm);
    free(t->norm);
    tj_pre_free(t->pre);
    free(t->pre);
    tj_model_free(&t->model);
    free(t->added);
    tj_strtab_free(&t->added_tab);
    tj_strtab_free(&t->match[0]);
    tj_strtab_free(&t->match[1]);
    free(t->post_pre);
    free(t->post_post);
    free(t);
}

/* ---- facts ---- */

const char *tokjson_model_type(const tokjson *t) {
    static const char *const names[] = {"", "WordPiece", "WordLevel", "BPE", "Unigram"};
    return names[t->model.kind];
}

size_t tokjson_vocab_size(const tokjson *t) { return t->n_ids; }

const char *tokjson_id_to_token(const tokjson *t, int32_t id, size_t *len) {
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].id == id) return tj_strtab_get(&t->added_tab, (int32_t)i, len);
    return tj_strtab_get(&t->model.vocab, id, len);
}

int32_t tokjson_token_to_id(const tokjson *t, const char *s, size_t len) {
    int32_t i = tj_strtab_find(&t->added_tab, s, len);
    if (i >= 0) return t->added[i].id;
    return tj_strtab_find(&t->model.vocab, s, len);
}

int32_t tokjson_unk_id(const tokjson *t) { return t->model.unk; }

static size_t utf8_chars(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((uint8_t)s[i] & 0xC0) != 0x80;
    return c;
}

/* Lengths are counted into a histogram (no sort); a length past the last
 * bucket counts as that bucket, which cannot move a median below it. */
size_t tokjson_median_token_chars(const tokjson *t) {
    enum { NB = 256 };
    size_t hist[NB] = {0}, total = 0, len;
    const tj_strtab *v = &t->model.vocab;
    for (uint32_t id = 0; id < v->n; id++) {
        const char *s = tj_strtab_get(v, (int32_t)id, &len);
        if (!s) continue;
        size_t c = utf8_chars(s, len);
        hist[c < NB ? c : NB - 1]++;
        total++;
    }
    for (size_t i = 0; i < t->n_added; i++) {
        const char *s = tj_strtab_get(&t->added_tab, (int32_t)i, &len);
        if (!s || tj_strtab_find(v, s, len) >= 0) continue; /* same text: one entry */
        size_t c = utf8_chars(s, len);
        hist[c < NB ? c : NB - 1]++;
        total++;
    }
    if (!total) return 0;
    /* numpy's median: the middle value, or the mean of the two middle ones */
    size_t lo_rank = (total - 1) / 2, hi_rank = total / 2, lo = 0, hi = 0, seen = 0;
    bool have_lo = false;
    for (size_t c = 0; c < NB; c++) {
        seen += hist[c];
        if (!have_lo && seen > lo_rank) lo = c, have_lo = true;
        if (seen > hi_rank) {
            hi = c;
            break;
        }
    }
    return (lo + hi) / 2;
}

/* ---- encoding ---- */

static void decode_input(const char *text, size_t len, tj_seq *q) {
    tj_seq_reset(q);
    tj_buf *b = &q->buf;
    tj_buf_reserve(b, len + 16);
    for (size_t x = 0; x < len;) {
        uint32_t cp;
        size_t k = tj_utf8_next((const uint8_t *)text + x, len - x, &cp);
        if (cp == 0xFFFD && !(k == 3 && memcmp(text + x, "\xEF\xBF\xBD", 3) == 0))
            tj_buf_put(b, "\xEF\xBF\xBD", 3, (uint32_t)x, (uint32_t)(x + k));
        else
            tj_buf_put(b, text + x, k, (uint32_t)x, (uint32_t)(x + k));
        x += k;
    }
    tj_seq_push(q, 0, (uint32_t)b->n, -1);
}

static void normalize_seq(const tokjson *t, const tj_seq *in, tj_seq *out, tj_buf tmp[2]) {
    tj_seq_reset(out);
    for (size_t g = 0; g < in->nseg; g++) {
        const tj_seg *sg = &in->seg[g];
        uint32_t at = (uint32_t)out->buf.n;
        if (sg->id >= 0) tj_buf_copy(&out->buf, &in->buf, sg->start, sg->end - sg->start);
        else tj_norm_apply(t->norm, &in->buf, sg->start, sg->end, &out->buf, tmp);
        if (out->buf.n > at || sg->id >= 0) tj_seq_push(out, at, (uint32_t)out->buf.n, sg->id);
    }
}

void tokjson_enc_free(tokjson_enc *e) {
    free(e->ids);
    free(e->start);
    free(e->end);
    tokjson_scratch *sc = e->scratch;
    if (sc) {
        for (int i = 0; i < 3; i++) tj_seq_free(&sc->q[i]);
        tj_buf_free(&sc->t[0]);
        tj_buf_free(&sc->t[1]);
        free(sc->mem);
        free(sc->ids);
        free(sc);
    }
    memset(e, 0, sizeof *e);
}

trove_err tokjson_encode(const tokjson *t, const char *text, size_t len, unsigned flags,
                         tokjson_enc *e) {
    e->n = 0;
    if (len > TOKJSON_MAX_TEXT)
        return trove_fail(TROVE_ERANGE, "text of %zu bytes is too long to tokenise", len);
    if (!e->scratch) e->scratch = xcalloc(1, sizeof *e->scratch);
    tokjson_scratch *sc = e->scratch;
    bool special = flags & TOKJSON_ADD_SPECIAL;
    if (special)
        for (size_t i = 0; i < t->n_post_pre; i++) tj_enc_push(e, t->post_pre[i], 0, 0);
    tj_seq *cur = &sc->q[0], *nxt = &sc->q[1], *spare = &sc->q[2], *sw;
    decode_input(text, len, cur);
    if (t->match[0].slots && t->match[0].n) {
        split_added(t, 0, cur, nxt);
        sw = cur, cur = nxt, nxt = sw;
    }
    if (t->norm) {
        normalize_seq(t, cur, nxt, sc->t);
        sw = cur, cur = nxt, nxt = sw;
    }
    if (t->match[1].slots && t->match[1].n) {
        split_added(t, 1, cur, nxt);
        sw = cur, cur = nxt, nxt = sw;
    }
    if (t->pre) {
        tj_seq_reset(nxt);
        tj_pre_apply(t->pre, cur, nxt, spare);
        sw = cur, cur = nxt, nxt = sw;
    }
    for (size_t g = 0; g < cur->nseg; g++) {
        const tj_seg *sg = &cur->seg[g];
        if (sg->id >= 0) {
            uint32_t a = sg->end > sg->start ? cur->buf.a[sg->start] : 0;
            uint32_t b = sg->end > sg->start ? cur->buf.b[sg->end - 1] : 0;
            tj_enc_push(e, sg->id, a, b);
        } else {
            tj_model_encode(&t->model, &cur->buf, sg->start, sg->end, e, sc);
        }
    }
    if (special)
        for (size_t i = 0; i < t->n_post_post; i++) tj_enc_push(e, t->post_post[i], 0, 0);
    return TROVE_OK;
}

/* ---- decoding (generation) ---- */

/* The byte whose GPT-2 byte-to-unicode character is cp (tj_byte_char's
 * inverse), or -1. */
static int byte_of_char(uint32_t cp) {
    if (cp >= 256 + 68) return -1;
    for (int b = 0; b < 256; b++) /* a few tokens per generated step: no table */
        if (tj_byte_char((uint8_t)b) == cp) return b;
    return -1;
}

size_t tokjson_decode_token(const tokjson *t, int32_t id, tbuf *out) {
    size_t len;
    const char *s = tokjson_id_to_token(t, id, &len);
    if (!s) return 0;
    size_t at = out->len;
    for (size_t x = 0; x < len;) {
        uint32_t cp;
        size_t k = tj_utf8_next((const uint8_t *)s + x, len - x, &cp);
        int b = k ? byte_of_char(cp) : -1;
        if (b < 0) { /* not byte-level spelling: the token as stored */
            out->len = at;
            if (at < out->cap) out->data[at] = '\0';
            tbuf_append(out, s, len);
            return len;
        }
        tbuf_putc(out, (char)b);
        x += k;
    }
    return out->len - at;
}
