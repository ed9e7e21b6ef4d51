/* tokmemo — see tokmemo.h. */
#include "text/tokmemo.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/mem.h"
#include "util/str.h"

typedef struct entry {
    tokmemo_set set;          /* first: what tokmemo_get hands out */
    uint64_t hash;            /* of the text, the CJK switch and kind mixed in */
    int skip_cjk;
    int lazy;                 /* tokmemo_holds's: the terms of the first bytes in done */
    uint64_t done[4];         /* lazy: the first bytes whose terms set holds */
    size_t text_len;
    char *text;               /* the bytes it was made of, compared in full */
    char **term;
    uint32_t *len;
    size_t bytes;             /* what it holds, for the bound */
} entry;

struct tokmemo {
    entry **slot;             /* open addressing, linear probing; NULL: free */
    size_t cap, n;            /* cap a power of two, n <= cap / 2 */
    size_t bytes, max_bytes;
    uint64_t hits, misses;
};

tokmemo *tokmemo_new(size_t max_bytes)
{
    tokmemo *m = xcalloc(1, sizeof *m);
    m->max_bytes = max_bytes;
    return m;
}

static void entry_free(entry *e)
{
    for (size_t i = 0; i < e->set.n; i++)
        free(e->term[i]);
    free(e->term);
    free(e->len);
    free(e->text);
    free(e);
}

static void clear(tokmemo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i])
            entry_free(m->slot[i]);
    free(m->slot);
    m->slot = NULL;
    m->cap = m->n = m->bytes = 0;
}

void tokmemo_free(tokmemo *m)
{
    if (!m)
        return;
    clear(m);
    free(m);
}

int tokmemo_has(const tokmemo_set *s, const char *term, size_t len)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->len[i] == len && memcmp(s->term[i], term, len) == 0)
            return 1;
    return 0;
}

/* ---- making an entry ---- */

/* The terms as tok_run makes them, each once: a hash of their indexes
 * (a note's opening holds a few hundred distinct terms). */
typedef struct building {
    entry *e;
    const uint64_t *only;     /* NULL, or the first bytes of the terms kept */
    size_t cap;
    uint32_t *idx;            /* index + 1; 0: free */
    size_t idx_cap;           /* a power of two, >= 2 * terms */
} building;

static uint64_t term_hash(const char *t, size_t len)
{
    return str_hash(t, len);
}

static void index_put(uint32_t *idx, size_t cap, const building *b, uint32_t i)
{
    size_t k = (size_t)term_hash(b->e->term[i], b->e->len[i]) & (cap - 1);
    while (idx[k])
        k = (k + 1) & (cap - 1);
    idx[k] = i + 1;
}

static void index_grow(building *b)
{
    /* a lazy entry's second pass starts with the terms of its first
     * already in the set: room for all of them at half load */
    size_t cap = b->idx_cap ? b->idx_cap * 2 : 64;
    while (cap < 2 * (b->e->set.n + 1))
        cap *= 2;
    uint32_t *idx = xcalloc(cap, sizeof *idx);
    for (size_t i = 0; i < b->e->set.n; i++)
        index_put(idx, cap, b, (uint32_t)i);
    free(b->idx);
    b->idx = idx;
    b->idx_cap = cap;
}

static int collect(void *ctx, const char *t, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    building *b = ctx;
    entry *e = b->e;
    if (b->only && (!len || !((b->only[(unsigned char)t[0] >> 6] >> ((unsigned char)t[0] & 63)) & 1)))
        return 0;
    if (2 * (e->set.n + 1) > b->idx_cap)
        index_grow(b);
    size_t k = (size_t)term_hash(t, len) & (b->idx_cap - 1);
    for (; b->idx[k]; k = (k + 1) & (b->idx_cap - 1)) {
        uint32_t i = b->idx[k] - 1;
        if (e->len[i] == len && memcmp(e->term[i], t, len) == 0)
            return 0;   /* seen */
    }
    if (e->set.n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        e->term = xrealloc(e->term, b->cap * sizeof *e->term);
        e->len = xrealloc(e->len, b->cap * sizeof *e->len);
    }
    e->term[e->set.n] = xstrndup(t, len);
    e->len[e->set.n] = (uint32_t)len;
    e->bytes += len + 1 + sizeof *e->term + sizeof *e->len;
    b->idx[k] = (uint32_t)(++e->set.n);
    return 0;
}

/* The terms of e's text into e: every one (only NULL), else those that
 * start with a byte of only (a pass that stems only those words). */
static void entry_fill(entry *e, const tok_first *only)
{
    building b = {.e = e, .only = only ? only->bits : NULL, .cap = e->set.n};
    tok_opts opts = {.stem = 1, .query = 1, .skip_cjk = e->skip_cjk, .stem_only = only};
    /* words that start with a non-ASCII character make no term asked for */
    opts.ascii_first = only && tok_first_ascii(only);
    tok_run(&opts, e->text, e->text_len, &b, collect);
    free(b.idx);
    e->set.term = (const char *const *)e->term;
    e->set.len = e->len;
}

static entry *entry_new(uint64_t hash, int skip_cjk, int lazy, const char *text, size_t len)
{
    entry *e = xcalloc(1, sizeof *e);
    e->hash = hash;
    e->skip_cjk = skip_cjk;
    e->lazy = lazy;
    e->text_len = len;
    e->text = xmalloc(len ? len : 1);
    memcpy(e->text, text, len);
    e->bytes = sizeof *e + len;
    return e;
}

/* ---- the table ---- */

static void table_put(entry **slot, size_t cap, entry *e)
{
    size_t k = (size_t)e->hash & (cap - 1);
    while (slot[k])
        k = (k + 1) & (cap - 1);
    slot[k] = e;
}

static void table_grow(tokmemo *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    entry **slot = xcalloc(cap, sizeof *slot);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i])
            table_put(slot, cap, m->slot[i]);
    free(m->slot);
    m->slot = slot;
    m->cap = cap;
}

/* The entry of (text, skip_cjk, lazy): found, else made (a full one
 * filled) and kept. */
static entry *lookup(tokmemo *m, int skip_cjk, int lazy, const char *text, size_t len)
{
    skip_cjk = skip_cjk != 0;
    uint64_t h = str_hash(text, len) ^ (skip_cjk ? 0x9e3779b97f4a7c15ull : 0) ^
                 (lazy ? 0xc2b2ae3d27d4eb4full : 0);
    for (size_t k = m->cap ? (size_t)h & (m->cap - 1) : 0; m->cap && m->slot[k];
         k = (k + 1) & (m->cap - 1)) {
        entry *e = m->slot[k];
        if (e->hash == h && e->skip_cjk == skip_cjk && e->lazy == lazy && e->text_len == len &&
            memcmp(e->text, text, len) == 0) {
            m->hits++;
            return e;
        }
    }
    m->misses++;
    entry *e = entry_new(h, skip_cjk, lazy, text, len);
    if (!lazy)
        entry_fill(e, NULL);
    if (m->bytes + e->bytes > m->max_bytes)
        clear(m);   /* start again: what the next searches need comes back */
    if (2 * (m->n + 1) > m->cap)
        table_grow(m);
    table_put(m->slot, m->cap, e);
    m->n++;
    m->bytes += e->bytes;
    return e;
}

const tokmemo_set *tokmemo_get(tokmemo *m, int skip_cjk, const char *text, size_t len)
{
    return &lookup(m, skip_cjk, 0, text, len)->set;
}

int tokmemo_holds(tokmemo *m, int skip_cjk, const char *text, size_t len,
                  const char *const *terms, const size_t *lens, size_t n)
{
    entry *e = lookup(m, skip_cjk, 1, text, len);
    tok_first missing = {{0}};
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = lens[i] ? (unsigned char)terms[i][0] : 0;
        if (lens[i] && ((e->done[c >> 6] >> (c & 63)) & 1))
            continue;
        tok_first_add(&missing, lens[i] ? terms[i] : "");
        any = 1;
    }
    if (any) {
        size_t before = e->bytes;
        entry_fill(e, &missing);
        for (int w = 0; w < 4; w++)
            e->done[w] |= missing.bits[w];
        m->bytes += e->bytes - before;
    }
    for (size_t i = 0; i < n; i++)
        if (tokmemo_has(&e->set, terms[i], lens[i]))
            return 1;
    return 0;
}

void tokmemo_stats_get(const tokmemo *m, tokmemo_stats *out)
{
    out->hits = m->hits;
    out->misses = m->misses;
    out->entries = m->n;
    out->bytes = m->bytes;
}
