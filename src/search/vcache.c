/* vcache — see vcache.h. */
#include "search/vcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_vec.h"
#include "util/mem.h"

/* One loaded segment; immutable once made, freed when unlinked and no scan
 * holds it. */
typedef struct vc_entry {
    int64_t seg_id, model_id;
    int dim;
    size_t bytes;
    store_vec_seg seg;     /* seg.dead unused: the bitmap comes with each listing */
    int8_t *rows;          /* the vectors copied to huge pages (mem_huge_map), or NULL */
    size_t rows_len;
    const uint8_t *sk_map; /* the sidecar's sketches (store_vside.h), in its mapping
                              (their pages let go until a two-stage scan wants
                              them), or NULL: it has none */
    const uint8_t *sketch; /* sketches (vec_sketch_rows) for two-stage scans, from
                              their first: the sidecar's (copied to huge pages,
                              sk_huge, or read in the mapping), else made here
                              (sketch_made: malloc'd); set once, under the lock */
    uint8_t *sk_huge;
    size_t sk_len;
    int sketch_made;
    int refs;              /* scans holding it (under the cache's lock) */
    int linked;            /* in the cache's table */
    uint64_t used;         /* tick of the last use, for eviction */
} vc_entry;

struct vcache {
    pthread_mutex_t mu;
    char *index_id;        /* whose segments `items` holds */
    vc_entry **items;      /* sorted by seg_id */
    size_t n, cap;
    size_t bytes, max_bytes;
    uint64_t tick;
    long loaded, served, evicted, dropped;
};

vcache *vcache_new(size_t max_bytes)
{
    vcache *c = xcalloc(1, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    return c;
}

static void entry_free(vc_entry *e)
{
    mem_huge_unmap(e->rows, e->rows_len);
    mem_huge_unmap(e->sk_huge, e->sk_len);
    if (e->sketch_made)
        free((void *)e->sketch);
    store_vec_segment_free(&e->seg);
    free(e);
}

void vcache_free(vcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        entry_free(c->items[i]);
    free(c->items);
    free(c->index_id);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Remove items[i] from the table (the caller holds mu); freed now unless a
 * scan still holds it (then by its last release). */
static void unlink_at(vcache *c, size_t i)
{
    vc_entry *e = c->items[i];
    memmove(c->items + i, c->items + i + 1, (c->n - i - 1) * sizeof *c->items);
    c->n--;
    c->bytes -= e->bytes;
    e->linked = 0;
    if (e->refs == 0)
        entry_free(e);
}

/* Index of the first item with seg_id >= id. */
static size_t lower_bound(const vcache *c, int64_t id)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->items[mid]->seg_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Under mu: forget another index's segments; take the listed ones held
 * (got[i], referenced); let go of the model's segments no longer listed. */
static void take_held(vcache *c, const char *index_id, int64_t model_id, int dim,
                      const store_vec_seg_info *l, size_t n, vc_entry **got)
{
    if (!c->index_id || strcmp(c->index_id, index_id) != 0) {
        while (c->n)
            unlink_at(c, c->n - 1);
        free(c->index_id);
        c->index_id = xstrdup(index_id);
    }
    size_t j = 0;
    for (size_t i = 0; i < c->n;) {
        vc_entry *e = c->items[i];
        while (j < n && l[j].id < e->seg_id)
            j++;
        int listed = j < n && l[j].id == e->seg_id;
        if (listed && e->model_id == model_id && e->dim == dim && e->seg.blk.n == l[j].n) {
            e->refs++;
            e->used = ++c->tick;
            got[j] = e;
            c->served++;
            i++;
        } else if (listed || e->model_id == model_id) {
            /* not listed any more, or listed as something else: a reader of
             * an older snapshot may load it again, which costs but is right */
            c->dropped++;
            unlink_at(c, i);
        } else {
            i++;   /* another model's */
        }
    }
}

/* Under mu: make room for `need` bytes by letting go of the least recently
 * used unreferenced entries; 0 when it cannot be made. */
static int make_room(vcache *c, size_t need)
{
    if (need > c->max_bytes)
        return 0;
    while (c->bytes + need > c->max_bytes) {
        size_t victim = c->n;
        for (size_t i = 0; i < c->n; i++)
            if (c->items[i]->refs == 0 && (victim == c->n || c->items[i]->used < c->items[victim]->used))
                victim = i;
        if (victim == c->n)
            return 0;
        c->evicted++;
        unlink_at(c, victim);
    }
    return 1;
}

/* Under mu: e (loaded by this scan, referenced once) goes into the table
 * when it fits. Another scan may have put the same segment in meanwhile:
 * then that one is used and e freed. Returns the entry to scan. */
static vc_entry *insert(vcache *c, vc_entry *e)
{
    c->loaded++;
    size_t at = lower_bound(c, e->seg_id);
    if (at < c->n && c->items[at]->seg_id == e->seg_id) {
        vc_entry *o = c->items[at];
        if (o->model_id == e->model_id && o->dim == e->dim && o->seg.blk.n == e->seg.blk.n) {
            o->refs++;
            o->used = ++c->tick;
            entry_free(e);
            return o;
        }
        unlink_at(c, at);
    }
    if (!make_room(c, e->bytes))
        return e;   /* private to this scan */
    at = lower_bound(c, e->seg_id);
    xgrow(&c->items, &c->cap, c->n + 1, sizeof *c->items);
    memmove(c->items + at + 1, c->items + at, (c->n - at) * sizeof *c->items);
    c->items[at] = e;
    c->n++;
    c->bytes += e->bytes;
    e->linked = 1;
    e->used = ++c->tick;
    return e;
}

static void release(vcache *c, vc_entry *e)
{
    pthread_mutex_lock(&c->mu);
    if (--e->refs == 0 && !e->linked)
        entry_free(e);
    pthread_mutex_unlock(&c->mu);
}

/* Every search scans all the resident vectors, and a segment's (16 MB at
 * most) in 4 KB pages of the mapped sidecar miss the TLB page after page:
 * in 2 MB pages a pass over 10 MB took ~30% less CPU on a Zen 1 (a
 * microbench; docs/performance.md, session 32). A segment under 2 MB stays
 * mapped. The sidecar's pages of the vectors are let go (the other arrays
 * are still read from the mapping), so the daemon holds them once. */
static void to_huge_pages(vc_entry *e, int dim)
{
    vec_block *b = &e->seg.blk;
    size_t len = b->n * (size_t)dim;
    int8_t *rows = b->data && e->seg.map ? mem_huge_map(len) : NULL;
    if (!rows)
        return;
    memcpy(rows, b->data, len);
    store_vec_segment_drop_rows(&e->seg, dim);
    b->data = rows;
    e->rows = rows;
    e->rows_len = len;
}

static trove_err load(store *st, int64_t model_id, int dim, const store_vec_seg_info *info,
                      vc_entry **out)
{
    *out = NULL;
    vc_entry *e = xcalloc(1, sizeof *e);
    trove_err rc = store_vec_segment_data(st, info->id, dim, &e->seg);
    if (rc == TROVE_OK && e->seg.blk.n != info->n)
        rc = trove_fail(TROVE_ECORRUPT, "vector segment %lld is damaged (holds %zu entries, its "
                        "row says %zu); run `trove embed -f` to rebuild the vectors",
                        (long long)info->id, e->seg.blk.n, info->n);
    if (rc) {
        entry_free(e);
        return rc;
    }
    to_huge_pages(e, dim);
    /* the sidecar's sketches are taken up by the first two-stage scan
     * (sketch_of): an exact daemon never holds them */
    e->sk_map = e->seg.blk.sketch;
    if (e->rows)
        store_vec_segment_drop_sketch(&e->seg, dim);
    e->seg.blk.sketch = NULL;
    e->seg_id = info->id;
    e->model_id = model_id;
    e->dim = dim;
    e->refs = 1;
    /* what the block's arrays take: vectors, scale, chunk, doc, hash */
    e->bytes = info->n * ((size_t)dim + sizeof(float) + 3 * sizeof(int64_t)) + sizeof *e;
    *out = e;
    return TROVE_OK;
}

static void scan_one(vec_topk *t, const vc_entry *e, const store_vec_seg_info *info)
{
    vec_block b = e->seg.blk;
    b.dead = info->dead;
    b.sketch = NULL;   /* one segment at a time: exactly */
    vec_topk_scan(t, &b);
}

/* An index without an identity: load, scan and free one segment at a time. */
static trove_err scan_uncached(store *st, int64_t model_id, int dim, const store_vec_seg_info *l,
                               size_t n, vec_topk *t)
{
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        vc_entry *e;
        if ((rc = load(st, model_id, dim, &l[i], &e)) == TROVE_OK) {
            scan_one(t, e, &l[i]);
            entry_free(e);
        }
    }
    return rc;
}

/* A held entry's sketches (make 0: only stored ones), taken up on a two-stage scan's first use
 * (outside the lock; a scan that did so at the same time as another lets
 * its own go): its sidecar's (store_vside.h: made by the writer), copied
 * to huge pages as the vectors are (stage one reads them end to end;
 * ~70 MB at 1M), or read in the mapping where that fails; else, for an
 * index whose sidecars predate them or that has none, made here (a
 * 65,536-row segment takes ~0.1 s). They count towards the cache's
 * bytes. */
static const uint8_t *sketch_of(vcache *c, vc_entry *e, int make)
{
    pthread_mutex_lock(&c->mu);
    const uint8_t *have = e->sketch;
    pthread_mutex_unlock(&c->mu);
    if (have || (!e->seg.blk.data && !e->sk_map) || (!e->sk_map && !make))
        return have;
    size_t len = vec_sketch_size(e->seg.blk.n, e->dim);
    uint8_t *huge = e->sk_map && len ? mem_huge_map(len) : NULL, *made = NULL;
    const uint8_t *sk = huge;
    if (huge)
        memcpy(huge, e->sk_map, len);
    else if (e->sk_map)
        sk = e->sk_map;
    else {
        sk = made = xmalloc(len ? len : 1);
        vec_sketch_rows(e->seg.blk.data, e->seg.blk.scale, e->seg.blk.n, e->dim, made);
    }
    pthread_mutex_lock(&c->mu);
    if (!e->sketch) {
        e->sketch = sk;
        e->sk_huge = huge;
        e->sk_len = huge ? len : 0;
        e->sketch_made = made != NULL;
        huge = made = NULL;
        if (e->linked) {
            c->bytes += len;
            e->bytes += len;
        }
    }
    have = e->sketch;
    pthread_mutex_unlock(&c->mu);
    mem_huge_unmap(huge, len);
    free(made);
    return have;
}

struct vcache_taken {
    vc_entry **got;           /* n entries held (NULL: none) */
    vec_block *blk;
    const vec_block **held;   /* the n_held blocks to scan */
    size_t n, n_held;
    store_vec_seg_info *l;    /* the segment list (its dead bitmaps, in blk) */
    char *index_id;
};

trove_err vcache_take(vcache *c, store *st, int64_t model_id, int dim, vec_topk *t, int make,
                      vcache_taken **out)
{
    vcache_taken *h = xcalloc(1, sizeof *h);
    *out = h;
    trove_err rc = store_index_id(st, &h->index_id);
    if (rc == TROVE_OK)
        rc = store_vec_seg_list(st, model_id, &h->l, &h->n);
    if (rc == TROVE_OK && !h->index_id)
        rc = scan_uncached(st, model_id, dim, h->l, h->n, t);
    if (rc || !h->index_id)
        return rc;   /* nothing held: vcache_give frees the list */
    size_t n = h->n;
    const store_vec_seg_info *l = h->l;
    size_t rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += l[i].n;
    int sketches = rows >= vec_topk_two_stage_rows(t);   /* made only where used */
    vc_entry **got = h->got = xcalloc(n ? n : 1, sizeof *got);
    pthread_mutex_lock(&c->mu);
    take_held(c, h->index_id, model_id, dim, l, n, got);
    pthread_mutex_unlock(&c->mu);
    /* The held segments are scanned together (the threads start once per
     * search); one that did not fit in the cache is scanned and freed at
     * once, so that no more than one such is held. */
    vec_block *blk = h->blk = xcalloc(n ? n : 1, sizeof *blk);
    h->held = xcalloc(n ? n : 1, sizeof *h->held);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        int priv = 0;
        if (!got[i]) {
            vc_entry *e;
            rc = load(st, model_id, dim, &l[i], &e);   /* no lock held: other scans go on */
            if (rc == TROVE_OK) {
                pthread_mutex_lock(&c->mu);
                got[i] = insert(c, e);
                priv = !got[i]->linked;
                pthread_mutex_unlock(&c->mu);
            }
        }
        if (rc != TROVE_OK)
            break;
        blk[i] = got[i]->seg.blk;
        blk[i].dead = l[i].dead;
        blk[i].sketch = NULL;
        if (!priv && sketches)
            blk[i].sketch = sketch_of(c, got[i], make);
        if (!priv) {
            h->held[h->n_held++] = &blk[i];
        } else {
            vec_topk_scan(t, &blk[i]);
            release(c, got[i]);   /* private to this scan */
            got[i] = NULL;
        }
    }
    if (rc)
        h->n_held = 0;
    return rc;
}

const vec_block *const *vcache_taken_blocks(const vcache_taken *h, size_t *n)
{
    *n = h->n_held;
    return h->held;
}

void vcache_give(vcache *c, vcache_taken *h)
{
    if (!h)
        return;
    for (size_t i = 0; h->got && i < h->n; i++)
        if (h->got[i])
            release(c, h->got[i]);
    free(h->held);
    free(h->blk);
    free(h->got);
    store_vec_seg_list_free(h->l, h->n);
    free(h->index_id);
    free(h);
}

trove_err vcache_scan(vcache *c, store *st, int64_t model_id, int dim, vec_topk *t)
{
    vcache_taken *h;
    trove_err rc = vcache_take(c, st, model_id, dim, t, 1, &h);
    if (rc == TROVE_OK) {
        size_t n;
        const vec_block *const *b = vcache_taken_blocks(h, &n);
        vec_topk_scan_all(t, b, n);
    }
    vcache_give(c, h);
    return rc;
}

void vcache_stats_get(vcache *c, vcache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = (vcache_stats){c->loaded, c->served, c->evicted, c->dropped, c->n, c->bytes,
                          c->max_bytes};
    pthread_mutex_unlock(&c->mu);
}
