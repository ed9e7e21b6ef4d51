/* etok — vocabulary construction, GGUF loading, framing and truncation.
 * The per-kind algorithms live in etok_wpm.c and etok_spm.c. */
#include "embed/tokenizers/etok_int.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* ---- small shared helpers ---- */

void etok_ids_push(etok_ids *a, int32_t id) {
    if (a->n == a->cap) xgrow(&a->v, &a->cap, a->n + 1, sizeof *a->v);
    a->v[a->n++] = id;
}

size_t etok_utf8_lead_len(uint8_t c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

size_t etok_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t k = etok_utf8_lead_len(c);
    if (k == 1 || k > n) return 0;
    uint32_t v = c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_cp[k] || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return 0;
    *cp = v;
    return k;
}

size_t etok_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ---- piece table ---- */

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = ETOK_HASH_INIT;
    for (size_t i = 0; i < n; i++) h = etok_hash_step(h, (uint8_t)s[i]);
    return h;
}

int32_t etok_lookup_h(const etok *t, const char *s, size_t n, uint32_t h) {
    if (n > t->max_len) return -1;
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t slot = t->slots[i];
        if (slot == 0) return -1;
        uint32_t id = (uint32_t)slot - 1;
        if ((uint32_t)(slot >> 32) == h && t->plen[id] == n &&
            memcmp(t->pieces + t->off[id], s, n) == 0)
            return (int32_t)id;
    }
}

int32_t etok_lookup(const etok *t, const char *s, size_t n) {
    return etok_lookup_h(t, s, n, hash_bytes(s, n));
}

static bool matchable(uint8_t type) {
    return type == ETOK_T_NORMAL || type == ETOK_T_USER_DEFINED || type == ETOK_T_UNUSED;
}

/* The first of duplicate pieces wins, as a model can only mean one. */
static void table_insert(etok *t, uint32_t id, uint32_t h) {
    const char *s = t->pieces + t->off[id];
    uint32_t n = t->plen[id];
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint64_t slot = t->slots[i];
        if (slot == 0) {
            t->slots[i] = (uint64_t)h << 32 | (id + 1);
            return;
        }
        uint32_t other = (uint32_t)slot - 1;
        if ((uint32_t)(slot >> 32) == h && t->plen[other] == n &&
            memcmp(t->pieces + t->off[other], s, n) == 0)
            return;
    }
}

/* Insert every matchable piece. Hashes are computed first and the slot of
 * a piece some way ahead is prefetched: a 250k-piece vocabulary otherwise
 * spends most of its load time waiting on cache misses. */
static void table_build(etok *t) {
    uint32_t *h = xmalloc((size_t)t->n * sizeof *h);
    for (uint32_t i = 0; i < t->n; i++) h[i] = hash_bytes(t->pieces + t->off[i], t->plen[i]);
    enum { AHEAD = 16 };
    for (uint32_t i = 0; i < t->n; i++) {
        if (i + AHEAD < t->n) __builtin_prefetch(&t->slots[h[i + AHEAD] & t->mask], 1);
        if (matchable(t->type[i]) && t->plen[i] > 0) table_insert(t, i, h[i]);
    }
    free(h);
}

/* Any piece (control ones included) by exact text, for finding specials
 * by name; linear, used only at load time. */
static int32_t find_piece(const etok *t, const char *s) {
    size_t n = strlen(s);
    for (uint32_t i = 0; i < t->n; i++)
        if (t->plen[i] == n && memcmp(t->pieces + t->off[i], s, n) == 0) return (int32_t)i;
    return -1;
}

static int32_t first_of_type(const etok *t, uint8_t type) {
    for (uint32_t i = 0; i < t->n; i++)
        if (t->type[i] == type) return (int32_t)i;
    return -1;
}

static bool parse_byte_piece(const char *s, size_t n, unsigned *byte) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
    const char *hi = memchr(hex, s[3], 16), *lo = memchr(hex, s[4], 16);
    if (!hi || !lo || s[3] == 0 || s[4] == 0) return false;
    *byte = (unsigned)((hi - hex) * 16 + (lo - hex));
    return true;
}

/* Cased BERT vocabularies are full of capitalised pieces ("The", "##Q");
 * uncased ones were built from lower-cased text, so at most a stray few.
 * Bracketed specials ([CLS], [unused0]) and control pieces don't count,
 * which also covers files that type every piece NORMAL. */
static bool vocab_is_uncased(const etok *t) {
    size_t alpha = 0, upper = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const char *s = t->pieces + t->off[i];
        uint32_t n = t->plen[i];
        if (t->type[i] == ETOK_T_CONTROL || (n >= 2 && s[0] == '[' && s[n - 1] == ']')) continue;
        bool a = false, u = false;
        for (uint32_t j = 0; j < n; j++) {
            if (s[j] >= 'A' && s[j] <= 'Z') a = u = true;
            else if (s[j] >= 'a' && s[j] <= 'z') a = true;
        }
        alpha += a;
        upper += u;
    }
    return upper * 20 <= alpha;
}

void etok_vocab_init(etok_vocab *v, etok_kind kind) {
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->special = (etok_special){-1, -1, -1, -1, -1, -1, -1};
    v->add_space_prefix = true;
    v->remove_extra_ws = false;
    v->add_bos = kind != ETOK_UGM;
    v->add_eos = kind == ETOK_UGM;
}

static int32_t valid_id(const etok *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n ? id : -1;
}

static int32_t or_named(const etok *t, int32_t id, const char *name) {
    return id >= 0 ? id : find_piece(t, name);
}

static trove_err resolve_specials(etok *t, const etok_special *in) {
    etok_special s = {valid_id(t, in->bos), valid_id(t, in->eos), valid_id(t, in->unk),
                      valid_id(t, in->sep), valid_id(t, in->pad), valid_id(t, in->cls),
                      valid_id(t, in->mask)};
    if (t->kind == ETOK_WPM) {
        s.unk = or_named(t, s.unk, "[UNK]");
        s.cls = or_named(t, s.cls >= 0 ? s.cls : s.bos, "[CLS]");
        s.sep = or_named(t, s.sep >= 0 ? s.sep : s.eos, "[SEP]");
        s.pad = or_named(t, s.pad, "[PAD]");
        s.mask = or_named(t, s.mask, "[MASK]");
        if (s.unk < 0 || s.cls < 0 || s.sep < 0)
            return trove_fail(TROVE_EINVAL, "bert vocabulary lacks [UNK], [CLS] or [SEP]");
    } else {
        if (s.unk < 0) s.unk = first_of_type(t, ETOK_T_UNKNOWN);
        if (s.unk < 0)
            return trove_fail(TROVE_EINVAL, "%s vocabulary has no unknown piece",
                              etok_kind_name(t->kind));
        if (s.sep < 0) s.sep = s.eos;
        if (s.cls < 0) s.cls = s.bos;
    }
    t->sp = s;
    return TROVE_OK;
}

/* SentencePiece pieces for runs of spaces (Gemma's "\u2581\u2581" ...) are
 * written by llama.cpp's converter with plain spaces, but the encoders
 * match pieces against text whose spaces are already "\u2581": such pieces
 * are stored back in escaped form, or they could never match (issue 7:
 * "  leading" split differently from the reference, 31 spaces as 30
 * pieces). A literal space can never occur in escaped text, so nothing
 * else changes. */
static bool spaces_only(const etok_vocab *v, const char *s, size_t n) {
    if (v->kind == ETOK_WPM || n == 0) return false;
    for (size_t k = 0; k < n; k++)
        if (s[k] != ' ') return false;
    return true;
}

trove_err etok_new(const etok_vocab *v, etok **out) {
    *out = NULL;
    if (v->kind != ETOK_WPM && v->kind != ETOK_UGM && v->kind != ETOK_BPE)
        return trove_fail(TROVE_EINVAL, "unknown tokenizer kind %d", (int)v->kind);
    if (v->n == 0 || v->n >= (1u << 30) || !v->text)
        return trove_fail(TROVE_EINVAL, "tokenizer vocabulary is empty or too large (%zu pieces)", v->n);

    size_t total = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (!v->text[i]) return trove_fail(TROVE_EINVAL, "tokenizer piece %zu is missing", i);
        size_t n = v->len ? v->len[i] : strlen(v->text[i]);
        if (n > (1u << 20)) return trove_fail(TROVE_EINVAL, "tokenizer piece %zu is %zu bytes", i, n);
        total += (spaces_only(v, v->text[i], n) ? 3 * n : n) + 1;
        if (total > UINT32_MAX) return trove_fail(TROVE_EINVAL, "tokenizer pieces exceed 4 GiB");
    }

    etok *t = xcalloc(1, sizeof *t);
    t->kind = v->kind;
    t->n = (uint32_t)v->n;
    t->pieces = arena_alloc(&t->mem, total);
    t->off = xmalloc(v->n * sizeof *t->off);
    t->plen = xmalloc(v->n * sizeof *t->plen);
    t->score = xmalloc(v->n * sizeof *t->score);
    t->type = xmalloc(v->n);
    size_t pos = 0;
    for (size_t i = 0; i < v->n; i++) {
        size_t n = v->len ? v->len[i] : strlen(v->text[i]);
        if (spaces_only(v, v->text[i], n)) {
            for (size_t k = 0; k < n; k++) memcpy(t->pieces + pos + 3 * k, "\xE2\x96\x81", 3);
            n *= 3;
        } else {
            memcpy(t->pieces + pos, v->text[i], n);
        }
        t->pieces[pos + n] = 0;
        t->off[i] = (uint32_t)pos;
        t->plen[i] = (uint32_t)n;
        pos += n + 1;
        t->score[i] = v->scores ? v->scores[i] : 0.0f;
        int32_t ty = v->types ? v->types[i] : ETOK_T_NORMAL;
        /* llama.cpp writes 0 ("undefined") for some vocabularies */
        t->type[i] = (uint8_t)(ty >= ETOK_T_NORMAL && ty <= ETOK_T_BYTE ? ty : ETOK_T_NORMAL);
    }

    uint32_t cap = 16;
    while (cap < 2 * v->n) cap <<= 1;
    t->slots = xcalloc(cap, sizeof *t->slots);
    t->mask = cap - 1;
    /* sentencepiece's starting values: with only negative scores the
     * user-defined bonus (length * max_score - 0.1) is about -0.1 */
    t->min_score = FLT_MAX;
    t->max_score = FLT_MIN;
    for (int i = 0; i < 256; i++) t->byte_id[i] = -1;
    for (uint32_t i = 0; i < t->n; i++) {
        unsigned byte;
        if (t->type[i] == ETOK_T_BYTE &&
            parse_byte_piece(t->pieces + t->off[i], t->plen[i], &byte) && t->byte_id[byte] < 0)
            t->byte_id[byte] = (int32_t)i;
        if (!matchable(t->type[i]) || t->plen[i] == 0) continue;
        if (t->plen[i] > t->max_len) t->max_len = t->plen[i];
        if (t->type[i] == ETOK_T_USER_DEFINED) {
            uint32_t n = t->plen[i];
            uint8_t c = (uint8_t)t->pieces[t->off[i]];
            if (n > t->max_user_len) t->max_user_len = n;
            t->user_first[c >> 6] |= 1ull << (c & 63);
            if (n <= 64) t->user_lens |= 1ull << (n - 1);
        }
        if (t->type[i] == ETOK_T_NORMAL) {
            if (t->score[i] < t->min_score) t->min_score = t->score[i];
            if (t->score[i] > t->max_score) t->max_score = t->score[i];
        }
    }

    table_build(t);
    t->add_bos = v->add_bos;
    t->add_eos = v->add_eos;
    t->add_space_prefix = v->add_space_prefix;
    t->remove_extra_ws = v->remove_extra_ws;
    trove_err e = resolve_specials(t, &v->special);
    if (e == TROVE_OK && v->charsmap && v->charsmap_len && v->kind != ETOK_WPM)
        e = etok_charsmap_init(t, v->charsmap, v->charsmap_len);
    if (e != TROVE_OK) {
        etok_free(t);
        return e;
    }
    if (t->kind == ETOK_WPM) t->lowercase = vocab_is_uncased(t);
    *out = t;
    return TROVE_OK;
}

void etok_free(etok *t) {
    if (!t) return;
    arena_free(&t->mem);
    free(t->off);
    free(t->plen);
    free(t->score);
    free(t->type);
    free(t->slots);
    free(t->xcda);
    free(t->repl);
    free(t);
}

/* ---- GGUF ---- */

#define TK "tokenizer.ggml."

static int32_t special_key(const gguf_file *f, const char *key) {
    int64_t v = gguf_i64_or(f, key, -1);
    return v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
}

static trove_err numeric_array(const gguf_file *f, const char *key, size_t n, int *idx_out) {
    int idx = gguf_find_key(f, key);
    *idx_out = idx;
    if (idx < 0) return TROVE_OK;
    int ty = gguf_arr_type(f, idx);
    if (ty < 0 || ty == GGUF_TYPE_STRING || ty == GGUF_TYPE_ARRAY)
        return trove_fail(TROVE_ECORRUPT, "%s: %s is not a numeric array", gguf_path(f), key);
    if (gguf_arr_len(f, idx) != n)
        return trove_fail(TROVE_ECORRUPT, "%s: %s has %llu entries for %zu tokens", gguf_path(f),
                          key, (unsigned long long)gguf_arr_len(f, idx), n);
    return TROVE_OK;
}

static trove_err vocab_from_gguf(const gguf_file *f, etok_vocab *v, const char **text, size_t *len,
                                 float *scores, int32_t *types, int si, int ti) {
    int idx = gguf_find_key(f, TK "tokens");
    for (size_t i = 0; i < v->n; i++) {
        text[i] = gguf_arr_str(f, idx, i, &len[i]);
        if (!text[i]) return trove_fail(TROVE_ECORRUPT, "%s: bad token %zu", gguf_path(f), i);
    }
    for (size_t i = 0; si >= 0 && i < v->n; i++) {
        double d;
        if (!gguf_arr_f64(f, si, i, &d))
            return trove_fail(TROVE_ECORRUPT, "%s: bad score %zu", gguf_path(f), i);
        scores[i] = (float)d;
    }
    for (size_t i = 0; ti >= 0 && i < v->n; i++) {
        int64_t x;
        if (!gguf_arr_i64(f, ti, i, &x))
            return trove_fail(TROVE_ECORRUPT, "%s: bad token type %zu", gguf_path(f), i);
        types[i] = x >= 0 && x <= 255 ? (int32_t)x : 0;
    }
    v->text = text;
    v->len = len;
    v->scores = si >= 0 ? scores : NULL;
    v->types = ti >= 0 ? types : NULL;
    return TROVE_OK;
}

trove_err etok_from_gguf(const gguf_file *f, etok **out) {
    *out = NULL;
    const char *model = gguf_str_or(f, TK "model", NULL);
    if (!model) return trove_fail(TROVE_EUNSUPPORTED, "%s: no tokenizer.ggml.model", gguf_path(f));
    etok_kind kind;
    if (strcmp(model, "bert") == 0) kind = ETOK_WPM;
    else if (strcmp(model, "t5") == 0) kind = ETOK_UGM;
    else if (strcmp(model, "llama") == 0) kind = ETOK_BPE;
    else
        return trove_fail(TROVE_EUNSUPPORTED,
                          "%s: tokenizer model \"%s\" is not supported (bert, t5, llama are)",
                          gguf_path(f), model);

    int idx = gguf_find_key(f, TK "tokens");
    if (idx < 0 || gguf_arr_type(f, idx) != GGUF_TYPE_STRING || gguf_arr_len(f, idx) == 0)
        return trove_fail(TROVE_ECORRUPT, "%s: tokenizer.ggml.tokens is missing or not a string array",
                          gguf_path(f));
    uint64_t n64 = gguf_arr_len(f, idx);
    if (n64 >= (1u << 30))
        return trove_fail(TROVE_ECORRUPT, "%s: %llu tokens", gguf_path(f), (unsigned long long)n64);

    etok_vocab v;
    etok_vocab_init(&v, kind);
    v.n = (size_t)n64;
    int si, ti;
    trove_err e = numeric_array(f, TK "scores", v.n, &si);
    if (e == TROVE_OK) e = numeric_array(f, TK "token_type", v.n, &ti);
    if (e != TROVE_OK) return e;

    v.special.bos = special_key(f, TK "bos_token_id");
    v.special.eos = special_key(f, TK "eos_token_id");
    v.special.unk = special_key(f, TK "unknown_token_id");
    v.special.sep = special_key(f, TK "seperator_token_id");
    v.special.pad = special_key(f, TK "padding_token_id");
    v.special.cls = special_key(f, TK "cls_token_id");
    v.special.mask = special_key(f, TK "mask_token_id");
    v.add_bos = gguf_bool_or(f, TK "add_bos_token", v.add_bos);
    v.add_eos = gguf_bool_or(f, TK "add_eos_token", v.add_eos);
    v.add_space_prefix = gguf_bool_or(f, TK "add_space_prefix", v.add_space_prefix);
    v.remove_extra_ws = gguf_bool_or(f, TK "remove_extra_whitespaces", v.remove_extra_ws);

    int ci = gguf_find_key(f, TK "precompiled_charsmap");
    if (ci >= 0) {
        int ty = gguf_arr_type(f, ci);
        if (ty != GGUF_TYPE_UINT8 && ty != GGUF_TYPE_INT8)
            return trove_fail(TROVE_ECORRUPT, "%s: precompiled_charsmap is not a byte array",
                              gguf_path(f));
        v.charsmap = gguf_arr_data(f, ci);
        v.charsmap_len = (size_t)gguf_arr_len(f, ci);
    }

    const char **text = xmalloc(v.n * sizeof *text);
    size_t *len = xmalloc(v.n * sizeof *len);
    float *scores = si >= 0 ? xmalloc(v.n * sizeof *scores) : NULL;
    int32_t *types = ti >= 0 ? xmalloc(v.n * sizeof *types) : NULL;
    e = vocab_from_gguf(f, &v, text, len, scores, types, si, ti);
    if (e == TROVE_OK) {
        e = etok_new(&v, out);
        if (e != TROVE_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", trove_errmsg());
            e = trove_fail(e, "%s: %s", gguf_path(f), msg);
        }
    }
    free(text);
    free(len);
    free(scores);
    free(types);
    return e;
}

/* ---- facts ---- */

etok_kind etok_kind_of(const etok *t) { return t->kind; }

const char *etok_kind_name(etok_kind k) {
    switch (k) {
    case ETOK_WPM: return "bert";
    case ETOK_UGM: return "t5";
    case ETOK_BPE: return "llama";
    }
    return "unknown";
}

size_t etok_n_vocab(const etok *t) { return t->n; }
const etok_special *etok_specials(const etok *t) { return &t->sp; }

bool etok_adds_bos(const etok *t) {
    return t->kind == ETOK_WPM ? true : t->add_bos && t->sp.bos >= 0;
}

bool etok_adds_eos(const etok *t) {
    return t->kind == ETOK_WPM ? true : t->add_eos && t->sp.eos >= 0;
}

const char *etok_piece(const etok *t, int32_t id, size_t *len) {
    if (id < 0 || (uint32_t)id >= t->n) return NULL;
    *len = t->plen[id];
    return t->pieces + t->off[id];
}

int etok_piece_type(const etok *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n ? t->type[id] : 0;
}

float etok_piece_score(const etok *t, int32_t id) {
    return id >= 0 && (uint32_t)id < t->n ? t->score[id] : 0.0f;
}

size_t etok_decode_piece(const etok *t, int32_t id, char *buf, size_t cap) {
    if (id < 0 || (uint32_t)id >= t->n) return 0;
    uint8_t ty = t->type[id];
    if (ty == ETOK_T_CONTROL || ty == ETOK_T_UNKNOWN) return 0;
    const char *s = t->pieces + t->off[id];
    size_t n = t->plen[id], w = 0;
    unsigned byte;
    if (ty == ETOK_T_BYTE && parse_byte_piece(s, n, &byte)) {
        if (cap > 0) buf[0] = (char)byte;
        return 1;
    }
    for (size_t i = 0; i < n;) {
        if (n - i >= 3 && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
            if (w < cap) buf[w] = ' ';
            w++;
            i += 3;
        } else {
            if (w < cap) buf[w] = s[i];
            w++;
            i++;
        }
    }
    return w;
}

/* ---- encoding with framing ---- */

static void encode_text(const etok *t, const char *text, size_t len, etok_ids *out) {
    if (!text) return;
    if (len > ETOK_MAX_TEXT) len = ETOK_MAX_TEXT; /* keeps every index in int32 range */
    if (t->kind == ETOK_WPM) etok_wpm_encode(t, text, len, out);
    else etok_spm_encode(t, text, len, out);
}

static int32_t lead_id(const etok *t) { return t->kind == ETOK_WPM ? t->sp.cls : t->sp.bos; }
static int32_t tail_id(const etok *t) { return t->kind == ETOK_WPM ? t->sp.sep : t->sp.eos; }

size_t etok_encode(const etok *t, const char *text, size_t len, bool add_special,
                   int32_t *ids, size_t max_ids, size_t *n_full) {
    etok_ids body = {0};
    encode_text(t, text, len, &body);
    int32_t frame[2];
    size_t nf = 0;
    bool lead = add_special && etok_adds_bos(t), tail = add_special && etok_adds_eos(t);
    if (lead) frame[nf++] = lead_id(t);
    if (tail) frame[nf++] = tail_id(t);
    if (n_full) *n_full = body.n + nf;

    size_t w = 0;
    if (max_ids <= nf) {
        for (; w < max_ids; w++) ids[w] = frame[w];
        free(body.v);
        return w;
    }
    size_t keep = body.n < max_ids - nf ? body.n : max_ids - nf;
    if (lead) ids[w++] = frame[0];
    if (keep) memcpy(ids + w, body.v, keep * sizeof *ids);
    w += keep;
    if (tail) ids[w++] = frame[nf - 1];
    free(body.v);
    return w;
}

size_t etok_encode_pair(const etok *t, const char *a, size_t alen, const char *b, size_t blen,
                        int32_t *ids, uint8_t *segs, size_t max_ids) {
    etok_ids ea = {0}, eb = {0};
    encode_text(t, a, alen, &ea);
    encode_text(t, b, blen, &eb);

    /* framing: lead a mid... b tail */
    int32_t pre[1] = {-1}, mid[2] = {-1, -1}, post[1] = {-1};
    size_t npre = 0, nmid = 0, npost = 0;
    if (t->kind == ETOK_WPM) {
        pre[npre++] = t->sp.cls;
        mid[nmid++] = t->sp.sep;
        post[npost++] = t->sp.sep;
    } else {
        if (etok_adds_bos(t)) pre[npre++] = t->sp.bos;
        if (etok_adds_eos(t)) {
            mid[nmid++] = t->sp.eos;
            if (npre) mid[nmid++] = t->sp.eos;
            post[npost++] = t->sp.eos;
        }
    }
    size_t frame = npre + nmid + npost;
    size_t room = max_ids > frame ? max_ids - frame : 0;
    size_t na = ea.n, nb = eb.n;
    while (na + nb > room) {
        if (na > nb) na--;
        else nb--;
    }

    /* assemble into a scratch array, then copy what fits */
    etok_ids all = {0};
    for (size_t i = 0; i < npre; i++) etok_ids_push(&all, pre[i]);
    for (size_t i = 0; i < na; i++) etok_ids_push(&all, ea.v[i]);
    size_t first_sep = all.n; /* segment 0 runs through the first separator */
    for (size_t i = 0; i < nmid; i++) etok_ids_push(&all, mid[i]);
    if (nmid) first_sep++;
    for (size_t i = 0; i < nb; i++) etok_ids_push(&all, eb.v[i]);
    for (size_t i = 0; i < npost; i++) etok_ids_push(&all, post[i]);

    size_t w = all.n < max_ids ? all.n : max_ids;
    if (w) memcpy(ids, all.v, w * sizeof *ids);
    for (size_t i = 0; segs && i < w; i++) segs[i] = i < first_sep ? 0 : 1;
    free(ea.v);
    free(eb.v);
    free(all.v);
    return w;
}
