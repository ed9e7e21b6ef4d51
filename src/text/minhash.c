/* minhash: shingles, signatures, LSH banding, union-find (text/minhash.h). */
#include "text/minhash.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/mem.h"
#include "util/str.h"

/* splitmix64: a fast mix with full avalanche, so that hash function i is
 * mix(x ^ seed_i) for independent-looking seeds. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t seed(int i)
{
    return mix((uint64_t)i * 0x632be59bd9b4e019ull + 1);
}

struct minhash_builder {
    minhash_sig *sig;
    uint64_t window[MINHASH_SHINGLE];   /* the last tokens' hashes */
    size_t n_tokens;
    uint64_t seeds[MINHASH_K];
};

static void add_shingle(minhash_builder *b, uint64_t sh)
{
    for (int i = 0; i < MINHASH_K; i++) {
        uint64_t h = mix(sh ^ b->seeds[i]);
        if (h < b->sig->h[i])
            b->sig->h[i] = h;
    }
    b->sig->shingles++;
}

/* The shingle ending at the newest token: its tokens' hashes chained
 * through mix() in order (so "a b" and "b a" differ). */
static uint64_t shingle_of(const minhash_builder *b, size_t len)
{
    uint64_t sh = 0;
    for (size_t k = 0; k < len; k++)
        sh = mix(sh ^ b->window[(b->n_tokens - len + k) % MINHASH_SHINGLE]);
    return sh;
}

static int on_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    (void)start, (void)end;
    minhash_builder *b = ctx;
    b->window[b->n_tokens % MINHASH_SHINGLE] = str_hash(tok, len);
    b->n_tokens++;
    if (b->n_tokens >= MINHASH_SHINGLE)
        add_shingle(b, shingle_of(b, MINHASH_SHINGLE));
    return 0;
}

minhash_builder *minhash_begin(minhash_sig *out)
{
    minhash_builder *b = xcalloc(1, sizeof *b);
    b->sig = out;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < MINHASH_K; i++) {
        out->h[i] = UINT64_MAX;
        b->seeds[i] = seed(i);
    }
    return b;
}

void minhash_add(minhash_builder *b, const char *text, size_t len)
{
    static const tok_opts opts = {.stem = 1, .query = 1};
    tok_run(&opts, text, len, b, on_token);
}

void minhash_end(minhash_builder *b)
{
    /* A text of fewer tokens than a shingle is one shingle of them all. */
    if (b->n_tokens > 0 && b->n_tokens < MINHASH_SHINGLE)
        add_shingle(b, shingle_of(b, b->n_tokens));
    free(b);
}

void minhash_text(const char *text, size_t len, minhash_sig *out)
{
    minhash_builder *b = minhash_begin(out);
    minhash_add(b, text, len);
    minhash_end(b);
}

double minhash_similarity(const minhash_sig *a, const minhash_sig *b)
{
    if (!a->shingles || !b->shingles)
        return 0;
    int same = 0;
    for (int i = 0; i < MINHASH_K; i++)
        same += a->h[i] == b->h[i];
    return (double)same / MINHASH_K;
}

/* ---- LSH ---- */

#define ROWS (MINHASH_K / MINHASH_BANDS)

typedef struct band_key {
    uint64_t key;
    size_t who;
} band_key;

static int cmp_band(const void *x, const void *y)
{
    const band_key *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->who < b->who ? -1 : a->who > b->who;
}

static int cmp_pair(const void *x, const void *y)
{
    const minhash_pair *a = x, *b = y;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* A run of signatures that share a band bigger than this is a flood of one
 * boilerplate text: its members are compared with the run's first few only
 * (they are all alike, so the groups come out the same). */
#define BAND_RUN_MAX 64

void minhash_pairs(const minhash_sig *sigs, size_t n, double threshold, minhash_pair **out,
                   size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t cap = 0;
    band_key *keys = xmalloc((n ? n : 1) * sizeof *keys);
    for (int band = 0; band < MINHASH_BANDS; band++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            if (!sigs[i].shingles)
                continue;
            uint64_t k = (uint64_t)band * 0x9e3779b97f4a7c15ull;
            for (int r = 0; r < ROWS; r++)
                k = mix(k ^ sigs[i].h[band * ROWS + r]);
            keys[m++] = (band_key){k, i};
        }
        qsort(keys, m, sizeof *keys, cmp_band);
        for (size_t s = 0; s < m;) {
            size_t e = s + 1;
            while (e < m && keys[e].key == keys[s].key)
                e++;
            for (size_t i = s; i < e && i < s + BAND_RUN_MAX; i++) {
                for (size_t j = i + 1; j < e; j++) {
                    if (i > s && j >= s + BAND_RUN_MAX)
                        break;
                    size_t a = keys[i].who, b = keys[j].who;
                    double sim = minhash_similarity(&sigs[a], &sigs[b]);
                    if (sim < threshold)
                        continue;
                    xgrow(out, &cap, *n_out + 1, sizeof **out);
                    (*out)[(*n_out)++] = (minhash_pair){a < b ? a : b, a < b ? b : a, sim};
                }
            }
            s = e;
        }
    }
    free(keys);
    /* A pair found in several bands is one pair. */
    if (*n_out > 1) {
        qsort(*out, *n_out, sizeof **out, cmp_pair);
        size_t k = 1;
        for (size_t i = 1; i < *n_out; i++)
            if ((*out)[i].a != (*out)[k - 1].a || (*out)[i].b != (*out)[k - 1].b)
                (*out)[k++] = (*out)[i];
        *n_out = k;
    }
}

void minhash_pairs_free(minhash_pair *p)
{
    free(p);
}

static size_t find(size_t *parent, size_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

size_t minhash_group(size_t n, const minhash_pair *pairs, size_t n_pairs,
                     const unsigned char *keep, long *group)
{
    size_t *parent = xmalloc((n ? n : 1) * sizeof *parent);
    unsigned char *linked = xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++)
        parent[i] = i;
    for (size_t i = 0; i < n_pairs; i++) {
        if (keep && !keep[i])
            continue;
        size_t a = find(parent, pairs[i].a), b = find(parent, pairs[i].b);
        linked[pairs[i].a] = linked[pairs[i].b] = 1;
        if (a != b)
            parent[a < b ? b : a] = a < b ? a : b;   /* the smaller index leads */
    }
    long *id_of_root = xmalloc((n ? n : 1) * sizeof *id_of_root);
    for (size_t i = 0; i < n; i++)
        id_of_root[i] = -1;
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) {
        if (!linked[i]) {
            group[i] = -1;
            continue;
        }
        size_t r = find(parent, i);
        if (id_of_root[r] < 0)
            id_of_root[r] = (long)groups++;
        group[i] = id_of_root[r];
    }
    free(id_of_root);
    free(linked);
    free(parent);
    return groups;
}
