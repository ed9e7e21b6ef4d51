/* tokjson_model — the four models of tokenizer.json, applied to one
 * pre-tokenised word at a time.
 *
 * WordLevel   the word's id, else unk.
 * WordPiece   greedy longest match from the left, continuations spelled
 *             with the prefix ("##"); a word that cannot be covered or has
 *             more than max_input_chars_per_word characters is one unk.
 * BPE         characters (with continuing_subword_prefix on all but the
 *             first, end_of_word_suffix on the last) -> ids, unknown ones
 *             as <0xNN> byte pieces (byte_fallback) or unk (runs fused with
 *             fuse_unk); then the lowest-ranked adjacent merge is applied
 *             again and again (left-most on ties), as HF's Word::merge_all.
 *             ignore_merges: a word in the vocabulary is taken whole.
 * Unigram     Viterbi over all pieces (f64 scores, first path wins ties);
 *             a character no piece starts with is unk scored min - 10;
 *             runs of unk are fused, then become <0xNN> pieces
 *             (byte_fallback) or the unk id. */
#include "embed/tokenizers/tokjson_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

/* ---- parsing ---- */

static trove_err vocab_object(json_t *v, tj_strtab *tab) {
    if (!json_is_object(v)) return trove_fail(TROVE_EPARSE, "tokenizer.json: model vocab is not an object");
    size_t n = json_object_size(v), i = 0;
    const char **text = xmalloc((n + 1) * sizeof *text);
    size_t *len = xmalloc((n + 1) * sizeof *len);
    uint32_t *ids = xmalloc((n + 1) * sizeof *ids);
    const char *key;
    size_t klen;
    json_t *val;
    trove_err e = TROVE_OK;
    json_object_keylen_foreach(v, key, klen, val) {
        json_int_t id = json_is_integer(val) ? json_integer_value(val) : -1;
        if (id < 0 || id >= (1 << 24)) {
            e = trove_fail(TROVE_EPARSE, "tokenizer.json: vocab entry \"%.40s\" has no valid id", key);
            break;
        }
        text[i] = key;
        len[i] = klen;
        ids[i++] = (uint32_t)id;
    }
    if (!e) e = tj_strtab_build(tab, text, len, ids, i);
    free(text);
    free(len);
    free(ids);
    return e;
}

static trove_err vocab_unigram(json_t *v, tj_model *m) {
    if (!json_is_array(v)) return trove_fail(TROVE_EPARSE, "tokenizer.json: Unigram vocab is not an array");
    size_t n = json_array_size(v);
    if (n >= (1 << 24)) return trove_fail(TROVE_EPARSE, "tokenizer.json: Unigram vocab too large");
    const char **text = xmalloc((n + 1) * sizeof *text);
    size_t *len = xmalloc((n + 1) * sizeof *len);
    uint32_t *ids = xmalloc((n + 1) * sizeof *ids);
    m->score = xmalloc((n + 1) * sizeof *m->score);
    trove_err e = TROVE_OK;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(v, i), *p = json_array_get(it, 0), *s = json_array_get(it, 1);
        if (!json_is_string(p) || !json_is_number(s)) {
            e = trove_fail(TROVE_EPARSE, "tokenizer.json: Unigram vocab entry %zu is not [piece, score]", i);
            break;
        }
        text[i] = json_string_value(p);
        len[i] = json_string_length(p);
        ids[i] = (uint32_t)i;
        m->score[i] = json_number_value(s);
    }
    if (!e) e = tj_strtab_build(&m->vocab, text, len, ids, n);
    free(text);
    free(len);
    free(ids);
    return e;
}

static void merge_put(tj_model *m, int32_t a, int32_t b, uint32_t rank, int32_t nid) {
    uint64_t key = (uint64_t)(uint32_t)(a + 1) << 32 | (uint32_t)(b + 1);
    uint32_t s = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mmask;
    while (m->mkey[s] && m->mkey[s] != key) s = (s + 1) & m->mmask;
    m->mkey[s] = key; /* a later duplicate wins, as in HF's map */
    m->mrank[s] = rank;
    m->mnew[s] = nid;
}

static bool merge_get(const tj_model *m, int32_t a, int32_t b, uint32_t *rank, int32_t *nid) {
    if (!m->mkey) return false;
    uint64_t key = (uint64_t)(uint32_t)(a + 1) << 32 | (uint32_t)(b + 1);
    uint32_t s = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mmask;
    for (uint32_t probes = 0; probes <= m->mmask; probes++, s = (s + 1) & m->mmask) {
        if (!m->mkey[s]) return false;
        if (m->mkey[s] == key) {
            *rank = m->mrank[s];
            *nid = m->mnew[s];
            /* checked here, not at load: the table may be a mapped cache entry */
            return *nid >= 0 && (uint32_t)*nid < m->vocab.n;
        }
    }
    return false;
}

void tj_model_alloc_merges(tj_model *m, size_t n) {
    uint32_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    m->mkey = xcalloc(cap, sizeof *m->mkey);
    m->mrank = xmalloc(cap * sizeof *m->mrank);
    m->mnew = xmalloc(cap * sizeof *m->mnew);
    m->mmask = cap - 1;
    m->nmerges = (uint32_t)n;
}

trove_err tj_model_add_merge(tj_model *m, size_t rank, const char *a, size_t al, const char *b,
                             size_t bl, tbuf *cat) {
    int32_t ia = tj_strtab_find(&m->vocab, a, al), ib = tj_strtab_find(&m->vocab, b, bl);
    size_t skip = m->prefix_len && bl >= m->prefix_len && memcmp(b, m->prefix, m->prefix_len) == 0
                      ? m->prefix_len : 0;
    tbuf_reset(cat);
    tbuf_append(cat, a, al);
    tbuf_append(cat, b + skip, bl - skip);
    int32_t in = tj_strtab_find(&m->vocab, cat->data, cat->len);
    if (ia < 0 || ib < 0 || in < 0)
        return trove_fail(TROVE_ECORRUPT, "merge %zu (\"%.*s\" + \"%.*s\") is not in the vocab", rank,
                          (int)(al > 40 ? 40 : al), a, (int)(bl > 40 ? 40 : bl), b);
    merge_put(m, ia, ib, (uint32_t)rank, in);
    return TROVE_OK;
}

static trove_err merges(json_t *arr, tj_model *m) {
    if (!arr || json_is_null(arr)) return TROVE_OK;
    if (!json_is_array(arr)) return trove_fail(TROVE_EPARSE, "tokenizer.json: BPE merges is not an array");
    size_t n = json_array_size(arr);
    tj_model_alloc_merges(m, n);
    tbuf cat = {0};
    trove_err e = TROVE_OK;
    for (size_t i = 0; i < n && !e; i++) {
        json_t *it = json_array_get(arr, i);
        const char *a, *b;
        size_t al, bl;
        if (json_is_string(it)) {
            a = json_string_value(it);
            const char *sp = memchr(a, ' ', json_string_length(it));
            if (!sp) {
                e = trove_fail(TROVE_EPARSE, "tokenizer.json: merge %zu \"%.40s\" is not \"a b\"", i, a);
                break;
            }
            al = (size_t)(sp - a);
            b = sp + 1;
            bl = json_string_length(it) - al - 1;
        } else if (json_is_array(it) && json_array_size(it) == 2 &&
                   json_is_string(json_array_get(it, 0)) && json_is_string(json_array_get(it, 1))) {
            a = json_string_value(json_array_get(it, 0));
            al = json_string_length(json_array_get(it, 0));
            b = json_string_value(json_array_get(it, 1));
            bl = json_string_length(json_array_get(it, 1));
        } else {
            e = trove_fail(TROVE_EPARSE, "tokenizer.json: merge %zu is not \"a b\" or [a, b]", i);
            break;
        }
        if ((e = tj_model_add_merge(m, i, a, al, b, bl, &cat))) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", trove_errmsg());
            e = trove_fail(e, "tokenizer.json: %s", msg);
        }
    }
    tbuf_free(&cat);
    return e;
}

static trove_err opt_str(json_t *j, const char *key, const char *dflt, char **out, size_t *len) {
    const char *s;
    size_t n;
    trove_err e = tj_json_str(j, key, "model", false, &s, &n);
    if (e) return e;
    if (!s && dflt) s = dflt, n = strlen(dflt);
    if (s) {
        *out = xstrndup(s, n);
        *len = n;
    }
    return TROVE_OK;
}

trove_err tj_model_parse(json_t *j, tj_model *m, bool with_vocab) {
    memset(m, 0, sizeof *m);
    m->unk = -1;
    if (!json_is_object(j)) return trove_fail(TROVE_EPARSE, "tokenizer.json: no model object");
    const char *type;
    size_t tl;
    trove_err e = tj_json_str(j, "type", "model", false, &type, &tl);
    if (e) return e;
    if (!type) { /* old files omit it: guess from the fields */
        type = json_object_get(j, "merges") ? "BPE"
               : json_is_array(json_object_get(j, "vocab")) ? "Unigram"
               : json_object_get(j, "continuing_subword_prefix") ? "WordPiece" : "WordLevel";
    }
    if (strcmp(type, "WordPiece") == 0) {
        m->kind = TJM_WORDPIECE;
        json_t *mx = json_object_get(j, "max_input_chars_per_word");
        m->max_chars = json_is_integer(mx) && json_integer_value(mx) > 0 ? (uint32_t)json_integer_value(mx) : 100;
        if (!e) e = opt_str(j, "continuing_subword_prefix", "##", &m->prefix, &m->prefix_len);
        if (!e) e = opt_str(j, "unk_token", "[UNK]", &m->unk_text, &m->unk_len);
        if (!e && with_vocab) e = vocab_object(json_object_get(j, "vocab"), &m->vocab);
    } else if (strcmp(type, "WordLevel") == 0) {
        m->kind = TJM_WORDLEVEL;
        if (!e) e = opt_str(j, "unk_token", "<unk>", &m->unk_text, &m->unk_len);
        if (!e && with_vocab) e = vocab_object(json_object_get(j, "vocab"), &m->vocab);
    } else if (strcmp(type, "BPE") == 0) {
        m->kind = TJM_BPE;
        m->byte_fallback = tj_json_bool(j, "byte_fallback", false);
        m->fuse_unk = tj_json_bool(j, "fuse_unk", false);
        m->ignore_merges = tj_json_bool(j, "ignore_merges", false);
        if (!e) e = opt_str(j, "continuing_subword_prefix", NULL, &m->prefix, &m->prefix_len);
        if (!e) e = opt_str(j, "end_of_word_suffix", NULL, &m->suffix, &m->suffix_len);
        if (!e) e = opt_str(j, "unk_token", NULL, &m->unk_text, &m->unk_len);
        if (!e && with_vocab) e = vocab_object(json_object_get(j, "vocab"), &m->vocab);
        if (!e && with_vocab) e = merges(json_object_get(j, "merges"), m);
    } else if (strcmp(type, "Unigram") == 0) {
        m->kind = TJM_UNIGRAM;
        m->byte_fallback = tj_json_bool(j, "byte_fallback", false);
        if (with_vocab) e = vocab_unigram(json_object_get(j, "vocab"), m);
        json_t *u = json_object_get(j, "unk_id");
        if (!e && json_is_integer(u)) {
            json_int_t v = json_integer_value(u);
            if (v < 0 || v >= (1 << 24))
                e = trove_fail(TROVE_ECORRUPT, "tokenizer.json: Unigram unk_id %lld is out of range", (long long)v);
            else m->unk = (int32_t)v;
        }
    } else {
        return trove_fail(TROVE_EUNSUPPORTED, "tokenizer.json: model \"%s\" is not supported", type);
    }
    if (!e && with_vocab) tj_model_finish(m);
    return e;
}

void tj_model_finish(tj_model *m) {
    char name[8];
    size_t len;
    if (m->unk_text) m->unk = tj_strtab_find(&m->vocab, m->unk_text, m->unk_len);
    if (m->unk >= 0 && !tj_strtab_get(&m->vocab, m->unk, &len)) m->unk = -1;
    for (int b = 0; b < 256; b++) {
        snprintf(name, sizeof name, "<0x%02X>", b);
        m->byte_id[b] = tj_strtab_find(&m->vocab, name, 6);
    }
    m->min_score = INFINITY;
    if (m->score)
        for (uint32_t i = 0; i < m->vocab.n; i++)
            if (m->score[i] < m->min_score) m->min_score = m->score[i];
}

void tj_model_free(tj_model *m) {
    free(atomic_load(&m->pfx));
    tj_strtab_free(&m->vocab);
    free(m->prefix);
    free(m->suffix);
    free(m->unk_text);
    if (!m->borrowed) {
        free(m->mkey);
        free(m->mrank);
        free(m->mnew);
        free(m->score);
    }
    memset(m, 0, sizeof *m);
}

/* ---- helpers ---- */

void tj_enc_push(tokjson_enc *e, int32_t id, uint32_t a, uint32_t b) {
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 256;
        e->ids = xrealloc(e->ids, cap * sizeof *e->ids);
        e->start = xrealloc(e->start, cap * sizeof *e->start);
        e->end = xrealloc(e->end, cap * sizeof *e->end);
        e->cap = cap;
    }
    e->ids[e->n] = id;
    e->start[e->n] = a;
    e->end[e->n] = b;
    e->n++;
}

void *tj_scratch(tokjson_scratch *sc, size_t n) {
    if (n > sc->memcap) {
        free(sc->mem);
        sc->memcap = n < 4096 ? 4096 : n * 2;
        sc->mem = xmalloc(sc->memcap);
    }
    return sc->mem;
}

/* byte pieces of s[0..n) with the span [a, b); false if one is missing */
static bool push_bytes(const tj_model *m, const char *s, size_t n, uint32_t a, uint32_t b,
                       tokjson_enc *e) {
    for (size_t i = 0; i < n; i++)
        if (m->byte_id[(uint8_t)s[i]] < 0) return false;
    for (size_t i = 0; i < n; i++) tj_enc_push(e, m->byte_id[(uint8_t)s[i]], a, b);
    return true;
}

/* ---- WordLevel, WordPiece ---- */

static void wordlevel(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e) {
    int32_t id = tj_strtab_find(&m->vocab, w->s + i, j - i);
    if (id < 0) id = m->unk;
    if (id >= 0) tj_enc_push(e, id, w->a[i], w->b[j - 1]);
}

static void wordpiece(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e,
                      tokjson_scratch *sc) {
    size_t nch = 0;
    for (size_t x = i; x < j; x += tj_clen((uint8_t)w->s[x])) nch++;
    size_t n0 = e->n, maxl = m->vocab.max_len;
    if (nch <= m->max_chars) {
        /* cand holds prefix + the rest of the word; h[k] is the hash of
         * its first k bytes, so each candidate costs one probe */
        size_t cap = (m->prefix_len + (j - i) + 4) & ~(size_t)3;
        char *cand = tj_scratch(sc, cap + cap * sizeof(uint32_t));
        uint32_t *h = (uint32_t *)(cand + cap);
        for (size_t st = i; st < j;) {
            size_t pl = st > i ? m->prefix_len : 0, len = pl + (j - st);
            if (pl) memcpy(cand, m->prefix, pl);
            memcpy(cand + pl, w->s + st, j - st);
            if (len > maxl) len = maxl;
            uint32_t hh = TJ_HASH_INIT;
            for (size_t k = 0; k < len; k++) h[k] = hh = tj_hash_step(hh, (uint8_t)cand[k]);
            int32_t id = -1;
            size_t k = len;
            for (; k > pl; k--) {
                if (k < pl + (j - st) && ((uint8_t)cand[k] & 0xC0) == 0x80) continue; /* mid-character */
                id = tj_strtab_find_h(&m->vocab, cand, k, h[k - 1]);
                if (id >= 0) break;
            }
            if (id < 0) goto bad;
            size_t end = st + (k - pl);
            tj_enc_push(e, id, w->a[st], w->b[end - 1]);
            st = end;
        }
        return;
    }
bad:
    e->n = n0;
    if (m->unk >= 0) tj_enc_push(e, m->unk, w->a[i], w->b[j - 1]);
}

/* ---- BPE ---- */

typedef struct bsym {
    int32_t id, prev, next;
    uint32_t s, e; /* bytes of the word */
} bsym;

typedef struct bmerge {
    uint32_t rank, pos;
    int32_t nid;
} bmerge;

static bool bm_before(const bmerge *x, const bmerge *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static void bm_push(bmerge *h, size_t *n, bmerge v) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!bm_before(&v, &h[up])) break;
        h[i] = h[up];
        i = up;
    }
    h[i] = v;
}

static bmerge bm_pop(bmerge *h, size_t *n) {
    bmerge top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && bm_before(&h[c + 1], &h[c])) c++;
        if (!bm_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* Initial symbols of the word; returns their count. */
static size_t bpe_symbols(const tj_model *m, const tj_buf *w, size_t i, size_t j, bsym *sym,
                          char *tmp) {
    size_t ns = 0;
    int32_t unk_at = -1; /* the open unk symbol, for fuse_unk */
    for (size_t x = i; x < j;) {
        size_t k = tj_clen((uint8_t)w->s[x]);
        if (k > j - x) k = j - x;
        size_t tl = 0;
        if (x > i && m->prefix_len) memcpy(tmp, m->prefix, m->prefix_len), tl = m->prefix_len;
        memcpy(tmp + tl, w->s + x, k);
        tl += k;
        if (x + k == j && m->suffix_len) memcpy(tmp + tl, m->suffix, m->suffix_len), tl += m->suffix_len;
        int32_t id = tj_strtab_find(&m->vocab, tmp, tl);
        if (id >= 0) {
            sym[ns++] = (bsym){id, 0, 0, (uint32_t)x, (uint32_t)(x + k)};
            unk_at = -1;
        } else {
            bool bytes = m->byte_fallback;
            for (size_t b = 0; bytes && b < k; b++) bytes = m->byte_id[(uint8_t)w->s[x + b]] >= 0;
            if (bytes) {
                for (size_t b = 0; b < k; b++)
                    sym[ns++] = (bsym){m->byte_id[(uint8_t)w->s[x + b]], 0, 0, (uint32_t)x, (uint32_t)(x + k)};
                unk_at = -1;
            } else if (m->unk >= 0) {
                if (m->fuse_unk && unk_at >= 0) sym[unk_at].e = (uint32_t)(x + k);
                else {
                    unk_at = (int32_t)ns;
                    sym[ns++] = (bsym){m->unk, 0, 0, (uint32_t)x, (uint32_t)(x + k)};
                }
            }
        }
        x += k;
    }
    for (size_t s = 0; s < ns; s++) {
        sym[s].prev = (int32_t)s - 1;
        sym[s].next = s + 1 < ns ? (int32_t)s + 1 : -1;
    }
    return ns;
}

static void bpe_try(const tj_model *m, bsym *sym, int32_t l, bmerge *h, size_t *nh) {
    if (l < 0 || sym[l].next < 0) return;
    uint32_t rank;
    int32_t nid;
    if (merge_get(m, sym[l].id, sym[sym[l].next].id, &rank, &nid))
        bm_push(h, nh, (bmerge){rank, (uint32_t)l, nid});
}

static void bpe(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e,
                tokjson_scratch *sc) {
    if (m->ignore_merges) {
        int32_t id = tj_strtab_find(&m->vocab, w->s + i, j - i);
        if (id >= 0) {
            tj_enc_push(e, id, w->a[i], w->b[j - 1]);
            return;
        }
    }
    size_t n = j - i; /* at most n symbols (bytes), n merges live at once */
    size_t need = n * sizeof(bsym) + 2 * n * sizeof(bmerge) + m->prefix_len + m->suffix_len + 8;
    char *mem = tj_scratch(sc, need + 16);
    bsym *sym = (bsym *)mem;
    bmerge *h = (bmerge *)(mem + n * sizeof(bsym));
    char *tmp = (char *)(h + 2 * n);
    size_t ns = bpe_symbols(m, w, i, j, sym, tmp), nh = 0;
    if (ns == 0) return;
    for (size_t s = 0; s + 1 < ns; s++) bpe_try(m, sym, (int32_t)s, h, &nh);
    while (nh) {
        bmerge top = bm_pop(h, &nh);
        bsym *l = &sym[top.pos];
        if (l->id < 0 || l->next < 0) continue;
        bsym *r = &sym[l->next];
        uint32_t rank;
        int32_t nid;
        if (!merge_get(m, l->id, r->id, &rank, &nid) || nid != top.nid) continue;
        l->id = nid;
        l->e = r->e;
        r->id = -1;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = (int32_t)top.pos;
        /* every live pair is in the heap at most once per (pos, rank);
         * stale entries are skipped above, so the heap holds <= 2n */
        if (nh + 2 > 2 * n) continue;
        bpe_try(m, sym, l->prev, h, &nh);
        bpe_try(m, sym, (int32_t)top.pos, h, &nh);
    }
    for (int32_t s = 0; s >= 0; s = sym[s].next)
        tj_enc_push(e, sym[s].id, w->a[sym[s].s], w->b[sym[s].e - 1]);
}

/* ---- Unigram ---- */

typedef struct ubest {
    double score;
    int32_t id;
    int32_t start; /* -1: unreached */
} ubest;

static void unigram_emit(const tj_model *m, const tj_buf *w, size_t s, size_t t, tokjson_enc *e) {
    uint32_t a = w->a[s], b = w->b[t - 1];
    int32_t known = tj_strtab_find(&m->vocab, w->s + s, t - s); /* "<unk>" itself */
    if (known >= 0) tj_enc_push(e, known, a, b);
    else if (m->byte_fallback && push_bytes(m, w->s + s, t - s, a, b, e)) return;
    else if (m->unk >= 0) tj_enc_push(e, m->unk, a, b);
}

/* The prefix filter of a Unigram model's pieces. A word is matched
 * against the pieces at every byte, every length up to the longest piece
 * (48 bytes in the default model, whose pre-tokenizer hands over a whole
 * chunk as one word): 30k hash probes into a 500k-piece table for a
 * 600-byte chunk, 80% of `embed` (issue 20). No piece has a prefix the
 * filter lacks, so the lengths beyond it are skipped with the same result.
 * Built once per model, at the first word longer than PFX_MIN_WORD (a
 * query's words never pay the ~20 ms), by whichever thread gets there
 * first; a thread that loses the race frees its copy. */
#define PFX_MIN_WORD 64

static inline uint32_t pfx_bit(uint32_t h, uint32_t shift) {
    return (uint32_t)(((uint64_t)h * 0x9E3779B97F4A7C15ull) >> shift);
}

static const uint64_t *prefix_filter(const tj_model *mc) {
    tj_model *m = (tj_model *)mc; /* the filter only: a cache, set once */
    uint64_t *bits = atomic_load_explicit(&m->pfx, memory_order_acquire);
    if (bits) return bits;
    size_t total = 0, len;
    for (uint32_t id = 0; id < m->vocab.n; id++)
        if (tj_strtab_get(&m->vocab, (int32_t)id, &len)) total += len;
    /* about 8 bits per prefix: a lookup the filter lets through in vain
     * one time in ~10 */
    uint32_t lg = 12;
    while (lg < 32 && ((size_t)1 << lg) < 8 * total) lg++;
    bits = xcalloc(((size_t)1 << lg) / 64, sizeof *bits);
    uint32_t shift = 64 - lg;
    for (uint32_t id = 0; id < m->vocab.n; id++) {
        const char *p = tj_strtab_get(&m->vocab, (int32_t)id, &len);
        uint32_t h = TJ_HASH_INIT;
        for (size_t k = 0; p && k < len; k++) {
            h = tj_hash_step(h, (uint8_t)p[k]);
            uint32_t b = pfx_bit(h, shift);
            bits[b >> 6] |= (uint64_t)1 << (b & 63);
        }
    }
    atomic_store_explicit(&m->pfx_shift, shift, memory_order_relaxed);
    uint64_t *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&m->pfx, &none, bits, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(bits);
        return none;
    }
    return bits;
}

static void unigram(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e,
                    tokjson_scratch *sc) {
    size_t n = j - i;
    if (n == 0) return;
    const char *s = w->s + i;
    ubest *bp = tj_scratch(sc, (n + 1) * sizeof *bp + (n + 1) * sizeof(uint32_t));
    uint32_t *ends = (uint32_t *)(bp + n + 1);
    for (size_t x = 0; x <= n; x++) bp[x] = (ubest){0, -1, -1};
    bp[0].start = 0;
    double unk_score = m->min_score - 10.0;
    const uint64_t *pfx = n > PFX_MIN_WORD ? prefix_filter(m) : NULL;
    uint32_t shift = atomic_load_explicit(&m->pfx_shift, memory_order_relaxed);
    for (size_t at = 0; at < n;) {
        double here = bp[at].score;
        size_t mb = tj_clen((uint8_t)s[at]);
        if (mb > n - at) mb = n - at;
        bool single = false;
        size_t lim = n - at < m->vocab.max_len ? n - at : m->vocab.max_len;
        uint32_t h = TJ_HASH_INIT;
        for (size_t k = 1; k <= lim; k++) {
            h = tj_hash_step(h, (uint8_t)s[at + k - 1]);
            if (pfx) {
                uint32_t b = pfx_bit(h, shift);
                if (!(pfx[b >> 6] >> (b & 63) & 1)) break; /* no piece goes on so */
            }
            int32_t id = tj_strtab_find_h(&m->vocab, s + at, k, h);
            if (id < 0) continue;
            double cand = m->score[id] + here;
            ubest *tg = &bp[at + k];
            if (tg->start < 0 || cand > tg->score) *tg = (ubest){cand, id, (int32_t)at};
            if (k == mb) single = true;
        }
        if (!single) {
            ubest *tg = &bp[at + mb];
            double cand = unk_score + here;
            if (tg->start < 0 || cand > tg->score) *tg = (ubest){cand, m->unk, (int32_t)at};
        }
        at += mb;
    }
    size_t cnt = 0;
    for (size_t x = n; x > 0; x = (size_t)bp[x].start) ends[cnt++] = (uint32_t)x;
    /* forward, fusing runs of unk */
    size_t run_s = 0;
    bool in_unk = false;
    for (size_t k = cnt; k-- > 0;) {
        size_t t = ends[k], st = (size_t)bp[t].start;
        bool unk = bp[t].id == m->unk; /* -1 when the model has none */
        if (unk) {
            if (!in_unk) run_s = st;
            in_unk = true;
            continue;
        }
        if (in_unk) unigram_emit(m, w, i + run_s, i + st, e);
        in_unk = false;
        tj_enc_push(e, bp[t].id, w->a[i + st], w->b[i + t - 1]);
    }
    if (in_unk) unigram_emit(m, w, i + run_s, j, e);
}

void tj_model_encode(const tj_model *m, const tj_buf *w, size_t i, size_t j, tokjson_enc *e,
                     tokjson_scratch *sc) {
    if (j <= i) return;
    switch (m->kind) {
    case TJM_WORDLEVEL: wordlevel(m, w, i, j, e); break;
    case TJM_WORDPIECE: wordpiece(m, w, i, j, e, sc); break;
    case TJM_BPE: bpe(m, w, i, j, e, sc); break;
    case TJM_UNIGRAM: unigram(m, w, i, j, e, sc); break;
    }
}
