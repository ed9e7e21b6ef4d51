/* etok_spm — the SentencePiece kinds: normaliser, unigram ("t5") and BPE
 * ("llama") segmentation, byte fallback.
 *
 * The normaliser follows sentencepiece's: at each position a user-defined
 * piece is taken verbatim, else the longest match in the precompiled
 * charsmap (a darts-clone double array over UTF-8 bytes whose leaves index
 * NUL-terminated replacement strings), else one UTF-8 character (an invalid
 * byte becomes U+FFFD). Extra-whitespace removal drops leading spaces,
 * collapses runs and drops trailing ones; the dummy prefix adds "\u2581";
 * every space becomes "\u2581".
 *
 * Unigram is sentencepiece's optimised Viterbi: a forward pass over
 * character starts keeping, for every end position, the best-scoring path
 * (first found wins ties); a character no piece covers becomes the unknown
 * piece scored min_score - 10. BPE repeatedly merges the adjacent pair
 * whose concatenation is the highest-scoring piece (left-most on ties);
 * merges that produce UNUSED pieces are undone at the end. In both, an
 * unknown piece becomes its <0xNN> byte pieces when the model has them,
 * else runs of unknown pieces become one. Path scores are summed and
 * compared exactly as sentencepiece does (double sums, float storage), so
 * ties break the same way. */
#include "embed/tokenizers/etok_int.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define SPACE_MARK "\xE2\x96\x81"

/* sentencepiece's length of the character a byte starts */
static size_t one_char_len(uint8_t c) {
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

/* ---- charsmap ---- */

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

trove_err etok_charsmap_init(etok *t, const uint8_t *blob, size_t len) {
    if (len < 4) return trove_fail(TROVE_ECORRUPT, "precompiled charsmap is %zu bytes", len);
    uint32_t trie = rd32(blob);
    if (trie < 4 || trie % 4 != 0 || trie > len - 4)
        return trove_fail(TROVE_ECORRUPT, "precompiled charsmap: trie of %u bytes in a %zu-byte blob",
                          trie, len);
    t->n_xcda = trie / 4;
    t->xcda = xmalloc(trie);
    for (size_t i = 0; i < t->n_xcda; i++) t->xcda[i] = rd32(blob + 4 + 4 * i);
    t->repl_len = len - 4 - trie;
    t->repl = xmalloc(t->repl_len + 1);
    if (t->repl_len) memcpy(t->repl, blob + 4 + trie, t->repl_len);
    t->repl[t->repl_len] = 0;
    return TROVE_OK;
}

/* darts-clone unit fields */
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
static bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

/* Longest charsmap key that prefixes s; 0 if none (or the file's entry is
 * out of bounds, which we treat as no rule). */
static size_t charsmap_match(const etok *t, const uint8_t *s, size_t n, const char **rep,
                             size_t *rep_len) {
    if (!t->xcda) return 0;
    const uint32_t *a = t->xcda;
    size_t pos = unit_offset(a[0]), best = 0;
    uint32_t best_v = 0;
    for (size_t i = 0; i < n; i++) {
        pos ^= s[i];
        if (pos >= t->n_xcda) break;
        uint32_t u = a[pos];
        if (unit_label(u) != s[i]) break;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u)) {
            if (pos >= t->n_xcda) break;
            best = i + 1;
            best_v = unit_value(a[pos]);
        }
    }
    if (best == 0 || best_v >= t->repl_len) return 0;
    *rep = t->repl + best_v;
    *rep_len = strnlen(*rep, t->repl_len - best_v);
    return best;
}

/* Longest USER_DEFINED piece that prefixes s; 0 if none. */
static size_t user_match(const etok *t, const char *s, size_t n) {
    if (!t->max_user_len || n == 0) return 0;
    uint8_t c = (uint8_t)s[0];
    if (!(t->user_first[c >> 6] >> (c & 63) & 1)) return 0;
    size_t lim = n < t->max_user_len ? n : t->max_user_len, best = 0;
    uint32_t h = ETOK_HASH_INIT;
    for (size_t k = 0; k < lim; k++) {
        h = etok_hash_step(h, (uint8_t)s[k]);
        if (k < 64 && !(t->user_lens >> k & 1)) continue;
        int32_t id = etok_lookup_h(t, s, k + 1, h);
        if (id >= 0 && t->type[id] == ETOK_T_USER_DEFINED) best = k + 1;
    }
    return best;
}

/* One normalisation step at s: the output piece and the bytes consumed. */
static size_t norm_prefix(const etok *t, const char *s, size_t n, const char **p, size_t *plen) {
    size_t k = user_match(t, s, n);
    if (k) {
        *p = s;
        *plen = k;
        return k;
    }
    k = charsmap_match(t, (const uint8_t *)s, n, p, plen);
    if (k) return k;
    uint32_t cp;
    k = etok_utf8_decode((const uint8_t *)s, n, &cp);
    if (k == 0) {
        *p = "\xEF\xBF\xBD";
        *plen = 3;
        return 1;
    }
    *p = s;
    *plen = k;
    return k;
}

void etok_spm_normalize(const etok *t, const char *text, size_t len, tbuf *out) {
    size_t i = 0;
    const char *p;
    size_t plen;
    if (t->remove_extra_ws) {
        while (i < len) {
            size_t k = norm_prefix(t, text + i, len - i, &p, &plen);
            if (!(plen == 1 && p[0] == ' ')) break;
            i += k;
        }
    }
    if (i >= len) return;
    size_t start = out->len;
    if (t->add_space_prefix) tbuf_append(out, SPACE_MARK, 3);
    bool prev_space = t->remove_extra_ws;
    while (i < len) {
        size_t k = norm_prefix(t, text + i, len - i, &p, &plen);
        if (prev_space)
            while (plen && p[0] == ' ') p++, plen--;
        if (plen) {
            for (size_t j = 0; j < plen; j++) {
                if (p[j] == ' ') tbuf_append(out, SPACE_MARK, 3);
                else tbuf_putc(out, p[j]);
            }
            prev_space = p[plen - 1] == ' ';
        }
        i += k;
        if (!t->remove_extra_ws) prev_space = false;
    }
    if (t->remove_extra_ws)
        while (out->len >= start + 3 && memcmp(out->data + out->len - 3, SPACE_MARK, 3) == 0)
            out->len -= 3;
    if (out->data) out->data[out->len] = 0;
}

/* ---- output with byte fallback ---- */

static bool has_byte_pieces(const etok *t) {
    for (int i = 0; i < 256; i++)
        if (t->byte_id[i] >= 0) return true;
    return false;
}

/* Where pieces go: an unknown piece becomes its byte pieces when the model
 * has them; otherwise a run of unknown pieces is one <unk>, as
 * sentencepiece merges them. */
typedef struct emitter {
    const etok *t;
    etok_ids *out;
    bool bytes;
    bool prev_unk;
} emitter;

static void emit(emitter *em, const char *s, size_t n, int32_t id) {
    const etok *t = em->t;
    bool unk = id == t->sp.unk;
    if (unk && em->bytes) {
        for (size_t i = 0; i < n; i++) {
            int32_t b = t->byte_id[(uint8_t)s[i]];
            etok_ids_push(em->out, b >= 0 ? b : t->sp.unk);
        }
    } else if (!(unk && em->prev_unk)) {
        etok_ids_push(em->out, id);
    }
    em->prev_unk = unk;
}

/* ---- unigram ---- */

typedef struct ugm_best {
    float score;
    int32_t id;
    int64_t start; /* -1: no path ends here yet */
} ugm_best;

static void ugm_encode(const etok *t, const char *s, size_t n, etok_ids *out) {
    ugm_best *bp = xmalloc((n + 1) * sizeof *bp);
    for (size_t i = 0; i <= n; i++) bp[i] = (ugm_best){0.0f, -1, -1};
    const float unk_score = t->min_score - 10.0f;

    for (size_t at = 0; at < n;) {
        const float here = bp[at].score;
        size_t mblen = one_char_len((uint8_t)s[at]);
        if (mblen > n - at) mblen = n - at;
        bool single = false;
        size_t lim = n - at < t->max_len ? n - at : t->max_len;
        uint32_t h = ETOK_HASH_INIT;
        for (size_t k = 1; k <= lim; k++) {
            h = etok_hash_step(h, (uint8_t)s[at + k - 1]);
            int32_t id = etok_lookup_h(t, s + at, k, h);
            if (id < 0 || t->type[id] == ETOK_T_UNUSED) continue;
            /* sentencepiece adds and compares in double (its user-defined
             * bonus is a double expression, which makes the piece score
             * double), then stores the path score as float */
            double sc = t->type[id] == ETOK_T_USER_DEFINED
                            ? (double)((float)k * t->max_score) - 0.1
                            : (double)t->score[id];
            double cand = sc + (double)here;
            ugm_best *tg = &bp[at + k];
            if (tg->start < 0 || cand > (double)tg->score) *tg = (ugm_best){(float)cand, id, (int64_t)at};
            if (k == mblen) single = true;
        }
        if (!single) {
            ugm_best *tg = &bp[at + mblen];
            float cand = unk_score + here;
            if (tg->start < 0 || cand > tg->score) *tg = (ugm_best){cand, t->sp.unk, (int64_t)at};
        }
        at += mblen;
    }

    /* backtrack, then emit in order */
    size_t count = 0;
    for (size_t end = n; end > 0 && bp[end].start >= 0; end = (size_t)bp[end].start) count++;
    size_t *ends = xmalloc((count + 1) * sizeof *ends);
    size_t k = count;
    for (size_t end = n; end > 0 && bp[end].start >= 0; end = (size_t)bp[end].start) ends[--k] = end;
    emitter em = {t, out, has_byte_pieces(t), false};
    for (size_t i = 0; i < count; i++) {
        size_t e = ends[i], b = (size_t)bp[e].start;
        emit(&em, s + b, e - b, bp[e].id);
    }
    free(ends);
    free(bp);
}

/* ---- BPE ---- */

typedef struct bpe_sym {
    uint32_t off, len;
    int32_t prev, next;
    int32_t node; /* segmentation tree node, for undoing UNUSED merges */
    bool freeze;
} bpe_sym;

typedef struct bpe_node {
    uint32_t off, len;
    int32_t l, r; /* children, -1 for an initial symbol */
} bpe_node;

typedef struct bpe_pair {
    float score;
    int32_t left, right, id;
    uint32_t size;
} bpe_pair;

typedef struct bpe {
    const etok *t;
    const char *s;
    bpe_sym *sym;
    bpe_node *nodes;
    size_t n_nodes, cap_nodes;
    bpe_pair *heap;
    size_t n_heap, cap_heap;
} bpe;

/* Heap order: higher score first, then the left-most pair. */
static bool pair_before(const bpe_pair *a, const bpe_pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static void heap_push(bpe *b, bpe_pair p) {
    if (b->n_heap == b->cap_heap) xgrow(&b->heap, &b->cap_heap, b->n_heap + 1, sizeof *b->heap);
    size_t i = b->n_heap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_before(&p, &b->heap[up])) break;
        b->heap[i] = b->heap[up];
        i = up;
    }
    b->heap[i] = p;
}

static bpe_pair heap_pop(bpe *b) {
    bpe_pair top = b->heap[0], last = b->heap[--b->n_heap];
    size_t i = 0, n = b->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pair_before(&b->heap[c + 1], &b->heap[c])) c++;
        if (!pair_before(&b->heap[c], &last)) break;
        b->heap[i] = b->heap[c];
        i = c;
    }
    if (n) b->heap[i] = last;
    return top;
}

static int32_t new_node(bpe *b, uint32_t off, uint32_t len, int32_t l, int32_t r) {
    if (b->n_nodes == b->cap_nodes) xgrow(&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof *b->nodes);
    b->nodes[b->n_nodes] = (bpe_node){off, len, l, r};
    return (int32_t)b->n_nodes++;
}

static void maybe_add_pair(bpe *b, int32_t left, int32_t right) {
    if (left < 0 || right < 0 || b->sym[left].freeze || b->sym[right].freeze) return;
    uint32_t size = b->sym[left].len + b->sym[right].len;
    int32_t id = etok_lookup(b->t, b->s + b->sym[left].off, size);
    if (id < 0) return;
    heap_push(b, (bpe_pair){b->t->score[id], left, right, id, size});
}

/* Emit a tree node: its piece, or for an UNUSED piece its two halves. */
static void bpe_emit(bpe *b, emitter *em, int32_t node) {
    etok_ids stack = {0};
    etok_ids_push(&stack, node);
    while (stack.n) {
        const bpe_node *nd = &b->nodes[stack.v[--stack.n]];
        const char *p = b->s + nd->off;
        int32_t id = etok_lookup(b->t, p, nd->len);
        if (id >= 0 && b->t->type[id] == ETOK_T_UNUSED && nd->l >= 0) {
            etok_ids_push(&stack, nd->r);
            etok_ids_push(&stack, nd->l);
            continue;
        }
        emit(em, p, nd->len, id >= 0 ? id : b->t->sp.unk);
    }
    free(stack.v);
}

static void bpe_encode(const etok *t, const char *s, size_t n, etok_ids *out) {
    if (n == 0) return;
    bpe b = {.t = t, .s = s};
    b.sym = xmalloc(n * sizeof *b.sym);
    int32_t ns = 0;
    for (size_t i = 0; i < n; ns++) {
        size_t k = user_match(t, s + i, n - i);
        bool freeze = k > 0;
        if (!freeze) {
            k = one_char_len((uint8_t)s[i]);
            if (k > n - i) k = n - i;
        }
        b.sym[ns] = (bpe_sym){(uint32_t)i, (uint32_t)k, ns - 1, i + k < n ? ns + 1 : -1, -1, freeze};
        b.sym[ns].node = new_node(&b, (uint32_t)i, (uint32_t)k, -1, -1);
        i += k;
    }
    for (int32_t i = 1; i < ns; i++) maybe_add_pair(&b, i - 1, i);

    while (b.n_heap) {
        bpe_pair p = heap_pop(&b);
        bpe_sym *l = &b.sym[p.left], *r = &b.sym[p.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != p.size) continue; /* stale */
        l->node = new_node(&b, l->off, p.size, l->node, r->node);
        l->len = p.size;
        l->next = r->next;
        if (r->next >= 0) b.sym[r->next].prev = p.left;
        r->len = 0;
        maybe_add_pair(&b, l->prev, p.left);
        maybe_add_pair(&b, p.left, l->next);
    }

    emitter em = {t, out, has_byte_pieces(t), false};
    for (int32_t i = 0; i >= 0; i = b.sym[i].next) bpe_emit(&b, &em, b.sym[i].node);
    free(b.sym);
    free(b.nodes);
    free(b.heap);
}

void etok_spm_encode(const etok *t, const char *text, size_t len, etok_ids *out) {
    tbuf norm = {0};
    etok_spm_normalize(t, text, len, &norm);
    if (t->kind == ETOK_UGM) ugm_encode(t, norm.data, norm.len, out);
    else bpe_encode(t, norm.data, norm.len, out);
    tbuf_free(&norm);
}
