/* store_posts — see store_posts.h. */
#include "store/store_posts.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "util/err.h"
#include "util/mem.h"
#include "util/str.h"

typedef struct post_entry {
    uint64_t hash;
    int table;
    double w[2];
    char *text;
    size_t len;
    store_post *rows;
    size_t n;
} post_entry;

struct store_posts {
    post_entry *slot;    /* open addressing, cap a power of two (text NULL: free) */
    size_t cap, used;
    size_t bytes;        /* rows and texts held */
    int64_t version;     /* data_version they were read at (-1: none yet) */
    struct {
        int have;
        int64_t n_row, n_token;
    } totals[2];         /* by table (store_rank_table) */
};

void store_posts_keep(store *st)
{
    if (!st->posts && sqlite3_db_readonly(st->db, "main") == 1) {
        st->posts = xcalloc(1, sizeof *st->posts);
        st->posts->version = -1;
    }
}

static void posts_empty(store_posts *k)
{
    for (size_t i = 0; i < k->cap; i++) {
        free(k->slot[i].text);
        free(k->slot[i].rows);
    }
    free(k->slot);
    k->slot = NULL;
    k->cap = k->used = k->bytes = 0;
}

store_posts *store_posts_current(store *st)
{
    store_posts *k = st->posts;
    int stale = k ? store_kept_stale(st, &k->version) : -1;
    if (stale < 0)
        return NULL;   /* FTS5's walks, as without a keeper */
    if (stale) {
        posts_empty(k);
        memset(k->totals, 0, sizeof k->totals);
    }
    return k;
}

static uint64_t key_hash(int table, const double w[2], const char *text, size_t len)
{
    uint64_t h = str_hash(text, len), b[2];
    memcpy(b, w, sizeof b);
    h ^= (uint64_t)table * 0x9e3779b97f4a7c15ull;
    h ^= (b[0] + 0x632be59bd9b4e019ull) * 0xff51afd7ed558ccdull;
    h ^= (b[1] + 0x8cb92ba72f3d8dd7ull) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* The slot of the key: its entry, or the free slot it would go to. */
static post_entry *slot_of(store_posts *k, uint64_t h, int table, const double w[2],
                           const char *text, size_t len)
{
    for (size_t i = (size_t)h & (k->cap - 1);; i = (i + 1) & (k->cap - 1)) {
        post_entry *e = &k->slot[i];
        if (!e->text)
            return e;
        if (e->hash == h && e->table == table && e->len == len &&
            memcmp(e->w, w, sizeof e->w) == 0 && memcmp(e->text, text, len) == 0)
            return e;
    }
}

int store_posts_find(store_posts *k, int table, const double w[2], const char *text,
                     size_t len, const store_post **rows, size_t *n)
{
    if (!k->cap)
        return 0;
    post_entry *e = slot_of(k, key_hash(table, w, text, len), table, w, text, len);
    if (!e->text)
        return 0;
    *rows = e->rows;
    *n = e->n;
    return 1;
}

static void grow(store_posts *k)
{
    post_entry *old = k->slot;
    size_t old_cap = k->cap;
    k->cap = old_cap ? 2 * old_cap : 64;
    k->slot = xcalloc(k->cap, sizeof *k->slot);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].text)
            *slot_of(k, old[i].hash, old[i].table, old[i].w, old[i].text, old[i].len) = old[i];
    free(old);
}

void store_posts_put(store_posts *k, int table, const double w[2], const char *text,
                     size_t len, store_post *rows, size_t n)
{
    size_t bytes = n * sizeof *rows + len + sizeof(post_entry);
    if (n > STORE_POSTS_MAX_ROWS || bytes > STORE_POSTS_MAX_BYTES) {
        free(rows);
        return;
    }
    if (k->bytes + bytes > STORE_POSTS_MAX_BYTES)
        posts_empty(k);   /* full: start again (the version stays) */
    if (2 * (k->used + 1) > k->cap)
        grow(k);
    uint64_t h = key_hash(table, w, text, len);
    post_entry *e = slot_of(k, h, table, w, text, len);
    if (e->text) {   /* kept already (not looked up first): keep the first */
        free(rows);
        return;
    }
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    *e = (post_entry){h, table, {w[0], w[1]}, copy, len, rows, n};
    k->used++;
    k->bytes += bytes;
}

int store_posts_totals(store_posts *k, int table, int64_t *n_row, int64_t *n_token)
{
    if (table < 0 || table > 1 || !k->totals[table].have)
        return 0;
    *n_row = k->totals[table].n_row;
    *n_token = k->totals[table].n_token;
    return 1;
}

void store_posts_set_totals(store_posts *k, int table, int64_t n_row, int64_t n_token)
{
    if (table >= 0 && table <= 1) {
        k->totals[table].have = 1;
        k->totals[table].n_row = n_row;
        k->totals[table].n_token = n_token;
    }
}

void store_posts_free(store *st)
{
    if (st->posts) {
        posts_empty(st->posts);
        free(st->posts);
        st->posts = NULL;
    }
}
