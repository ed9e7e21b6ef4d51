/* store_vec — see store_vec.h; the layout is in docs/schema.md. */
#include "store/store_vec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"
#include "store/store_vside.h"
#include "util/mem.h"
#include "util/str.h"

/* ---- segment layout ------------------------------------------------------
 * Little-endian, 32-byte header then arrays at 8-byte aligned offsets:
 *   "TVEC" u32 version(1) u32 dim u32 n u64 content hash, 8 bytes zero
 *   int8 q[n * dim] | f32 scale[n] | i64 chunk_id[n] | i64 doc_id[n] | u64 text_hash[n]
 * The content hash (str_hash of the bytes after the header) tells one
 * segment's sidecar (store_vside.h) from another's; segments written before
 * it existed have 0 there. */

#define SEG_MAGIC "TVEC"
#define SEG_VERSION 1
#define SEG_HEADER STORE_SEG_HEADER

typedef struct seg_layout {
    size_t data, scale, chunk, doc, hash, total;
} seg_layout;

static size_t align8(size_t x)
{
    return (x + 7) & ~(size_t)7;
}

static void layout(size_t n, int dim, seg_layout *l)
{
    l->data = SEG_HEADER;
    l->scale = align8(l->data + n * (size_t)dim);
    l->chunk = align8(l->scale + n * sizeof(float));
    l->doc = l->chunk + n * sizeof(int64_t);
    l->hash = l->doc + n * sizeof(int64_t);
    l->total = l->hash + n * sizeof(uint64_t);
}

size_t store_vec_seg_size(size_t n, int dim)
{
    seg_layout l;
    layout(n, dim, &l);
    return l.total;
}

void store_vec_seg_sketch(const uint8_t *blob, size_t n, int dim, uint8_t *out)
{
    seg_layout l;
    layout(n, dim, &l);
    vec_sketch_rows((const int8_t *)(blob + l.data), (const float *)(const void *)(blob + l.scale),
                    n, dim, out);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One entry on its way into a segment. */
typedef struct seg_item {
    int64_t chunk_id, doc_id;
    uint64_t hash;
    float scale;
    const int8_t *q;
} seg_item;

static uint8_t *seg_build(const seg_item *items, size_t n, int dim, size_t *size)
{
    seg_layout l;
    layout(n, dim, &l);
    uint8_t *buf = xcalloc(1, l.total);
    memcpy(buf, SEG_MAGIC, 4);
    put_u32(buf + 4, SEG_VERSION);
    put_u32(buf + 8, (uint32_t)dim);
    put_u32(buf + 12, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        memcpy(buf + l.data + i * (size_t)dim, items[i].q, (size_t)dim);
        memcpy(buf + l.scale + i * sizeof(float), &items[i].scale, sizeof(float));
        memcpy(buf + l.chunk + i * 8, &items[i].chunk_id, 8);
        memcpy(buf + l.doc + i * 8, &items[i].doc_id, 8);
        memcpy(buf + l.hash + i * 8, &items[i].hash, 8);
    }
    uint64_t h = str_hash(buf + SEG_HEADER, l.total - SEG_HEADER);
    put_u32(buf + 16, (uint32_t)h);
    put_u32(buf + 20, (uint32_t)(h >> 32));
    *size = l.total;
    return buf;
}

/* ---- small SQL helpers -------------------------------------------------- */

/* A statement from the cache (store_stmt_get): hand it back with
 * store_stmt_put(). */
static trove_err prep(store *st, const char *sql, sqlite3_stmt **s)
{
    if (!(*s = store_stmt_get(st, sql)))
        return store_fail(st, sql);
    return TROVE_OK;
}

/* A growable array that store_each's row functions append to. */
typedef struct row_list {
    void *items;      /* points at the caller's array pointer */
    size_t *n, cap;
    int64_t id;       /* the one ?1 of the query */
} row_list;

static void bind_id(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int64(s, 1, ((const row_list *)ctx)->id);
}

static void *row_next(row_list *l, size_t size)
{
    void **items = l->items;
    xgrow(items, &l->cap, *l->n + 1, size);
    return (char *)*items + (*l->n)++ * size;
}

static trove_err exec_i64(store *st, const char *sql, int64_t a)
{
    sqlite3_stmt *s;
    trove_err rc = prep(st, sql, &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, a);
    int r = sqlite3_step(s);
    store_stmt_put(st, s);
    return r == SQLITE_DONE || r == SQLITE_ROW ? TROVE_OK : store_fail(st, sql);
}

static void dead_push(store *st, int64_t seg_id, uint32_t slot)
{
    xgrow(&st->dead, &st->cap_dead, st->n_dead + 1, sizeof *st->dead);
    st->dead[st->n_dead++] = (store_dead_slot){seg_id, slot};
}

/* ---- models ------------------------------------------------------------- */

trove_err store_vec_model_find(store *st, const char *fingerprint, int64_t *id, int *dim)
{
    *id = 0;
    if (dim)
        *dim = 0;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT id, dim FROM vec_models WHERE fingerprint = ?", &s);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, fingerprint, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW) {
        *id = sqlite3_column_int64(s, 0);
        if (dim)
            *dim = sqlite3_column_int(s, 1);
    }
    store_stmt_put(st, s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? TROVE_OK : store_fail(st, "looking up model");
}

trove_err store_vec_model_ensure(store *st, const char *fingerprint, int dim, const char *name,
                                 int64_t *id)
{
    int have_dim;
    trove_err rc = store_vec_model_find(st, fingerprint, id, &have_dim);
    if (rc)
        return rc;
    if (*id) {
        if (have_dim != dim)
            return trove_fail(TROVE_ECORRUPT, "%s: model %s was stored with %d dimensions, "
                              "it now has %d", st->path, fingerprint, have_dim, dim);
        return TROVE_OK;
    }
    if (dim <= 0 || dim > VEC_MAX_DIM)
        return trove_fail(TROVE_ERANGE, "vector width %d out of range (1..%d)", dim, VEC_MAX_DIM);
    sqlite3_stmt *s;
    if ((rc = prep(st, "INSERT INTO vec_models(fingerprint, dim, name, created_at)"
                       " VALUES (?,?,?,?)", &s)))
        return rc;
    sqlite3_bind_text(s, 1, fingerprint, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, dim);
    sqlite3_bind_text(s, 3, name ? name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (int64_t)time(NULL));
    int r = sqlite3_step(s);
    store_stmt_put(st, s);
    if (r != SQLITE_DONE)
        return store_fail(st, "registering model");
    *id = sqlite3_last_insert_rowid(st->db);
    return TROVE_OK;
}

static const char *col_text(sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);
    return t ? t : "";
}

static trove_err row_model(void *ctx, sqlite3_stmt *s)
{
    store_vec_model *m = row_next(ctx, sizeof *m);
    m->id = sqlite3_column_int64(s, 0);
    m->fingerprint = xstrdup(col_text(s, 1));
    m->name = xstrdup(col_text(s, 2));
    m->dim = sqlite3_column_int(s, 3);
    m->vectors = sqlite3_column_int64(s, 4);
    return TROVE_OK;
}

trove_err store_vec_models(store *st, store_vec_model **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    row_list l = {out, n, 0, 0};
    trove_err rc = store_each(st, "SELECT m.id, m.fingerprint, m.name, m.dim,"
                              " (SELECT coalesce(sum(n - n_dead), 0) FROM vec_segs WHERE model_id = m.id)"
                              " FROM vec_models m ORDER BY m.id", "listing models", NULL, row_model, &l);
    if (rc) {
        store_vec_models_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_vec_models_free(store_vec_model *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].fingerprint);
        free(m[i].name);
    }
    free(m);
}

trove_err store_vec_model_drop(store *st, int64_t model_id)
{
    /* Dead slots remembered for this model's segments have nowhere to go. */
    trove_err rc;
    if ((rc = store_vec_fold(st)) ||
        (rc = exec_i64(st, "DELETE FROM vec_map WHERE model_id = ?", model_id)) ||
        /* and its vectors saved by snapshots: a model registered later may
         * get the same id, and must not inherit them at a rollback */
        (rc = exec_i64(st, "DELETE FROM undo_vecs WHERE model_id = ?", model_id)) ||
        (rc = exec_i64(st, "DELETE FROM vec_segs WHERE model_id = ?", model_id)) ||
        (rc = exec_i64(st, "DELETE FROM meta WHERE key = 'vec_floor:' || ?", model_id)))
        return rc;
    return exec_i64(st, "DELETE FROM vec_models WHERE id = ?", model_id);
}

/* ---- noise floor -------------------------------------------------------- */

trove_err store_vec_floor_get(store *st, int64_t model_id, double *floor, int64_t *vectors,
                              int *have)
{
    *floor = -1;
    *vectors = 0;
    *have = 0;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT value FROM meta WHERE key = 'vec_floor:' || ?", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, model_id);
    int r = store_step(st, s, "reading noise floor", &rc);
    if (r > 0) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        double f;
        long long n;
        /* A value trove did not write is no floor (`trove check` names it). */
        if (v && sscanf(v, "%lf %lld", &f, &n) == 2 && f >= -1 && f <= 1 && n >= 0) {
            *floor = f;
            *vectors = n;
            *have = 1;
        }
    }
    store_stmt_put(st, s);
    return rc;
}

trove_err store_vec_floor_set(store *st, int64_t model_id, double floor, int64_t vectors)
{
    if (!(floor >= -1 && floor <= 1))
        return trove_fail(TROVE_ERANGE, "noise floor %g out of range (-1..1)", floor);
    char value[64];
    snprintf(value, sizeof value, "%.6f %lld", floor, (long long)vectors);
    sqlite3_stmt *s;
    trove_err rc = prep(st, "INSERT OR REPLACE INTO meta(key, value) VALUES ('vec_floor:' || ?, ?)",
                        &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, model_id);
    sqlite3_bind_text(s, 2, value, -1, SQLITE_TRANSIENT);
    store_step(st, s, "storing noise floor", &rc);
    store_stmt_put(st, s);
    return rc;
}

/* ---- reading segments --------------------------------------------------- */

typedef struct seg_row {
    int64_t id, n, n_dead;
} seg_row;

static trove_err row_seg(void *ctx, sqlite3_stmt *s)
{
    seg_row *r = row_next(ctx, sizeof *r);
    *r = (seg_row){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2)};
    return TROVE_OK;
}

static trove_err seg_rows(store *st, int64_t model_id, seg_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    row_list l = {out, n, 0, model_id};
    trove_err rc = store_each(st, "SELECT id, n, n_dead FROM vec_segs WHERE model_id = ? ORDER BY id",
                              "listing vector segments", bind_id, row_seg, &l);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

trove_err store_vec_segments(store *st, int64_t model_id, int64_t **ids, size_t *n)
{
    seg_row *rows;
    trove_err rc = seg_rows(st, model_id, &rows, n);
    if (rc)
        return rc;
    *ids = xmalloc((*n ? *n : 1) * sizeof **ids);
    for (size_t i = 0; i < *n; i++)
        (*ids)[i] = rows[i].id;
    free(rows);
    return TROVE_OK;
}

static trove_err seg_corrupt(store *st, int64_t seg_id, const char *why)
{
    return trove_fail(TROVE_ECORRUPT, "%s: vector segment %lld is damaged (%s); run `trove embed "
                      "-f` to rebuild the vectors", st->path, (long long)seg_id, why);
}

/* Open a segment's blob and check its header against dim; *n gets its
 * entry count, head (when not NULL) the header's SEG_HEADER bytes. */
static trove_err blob_open_head(store *st, int64_t seg_id, int dim, sqlite3_blob **b, size_t *n,
                                seg_layout *l, uint8_t *head)
{
    *n = 0;
    memset(l, 0, sizeof *l);
    if (sqlite3_blob_open(st->db, "main", "vec_segs", "data", seg_id, 0, b) != SQLITE_OK) {
        *b = NULL;
        return store_fail(st, "opening vector segment");
    }
    uint8_t hb[SEG_HEADER], *h = head ? head : hb;
    int len = sqlite3_blob_bytes(*b);
    if (len < SEG_HEADER || sqlite3_blob_read(*b, h, SEG_HEADER, 0) != SQLITE_OK)
        return seg_corrupt(st, seg_id, "short header");
    if (memcmp(h, SEG_MAGIC, 4) != 0 || get_u32(h + 4) != SEG_VERSION)
        return seg_corrupt(st, seg_id, "bad magic or version");
    if ((int)get_u32(h + 8) != dim)
        return seg_corrupt(st, seg_id, "width differs from its model");
    *n = get_u32(h + 12);
    if (*n > STORE_VEC_SEG_MAX)
        return seg_corrupt(st, seg_id, "too many entries");
    layout(*n, dim, l);
    if ((size_t)len != l->total)
        return seg_corrupt(st, seg_id, "size does not match its header");
    return TROVE_OK;
}

static trove_err blob_open(store *st, int64_t seg_id, int dim, sqlite3_blob **b, size_t *n,
                           seg_layout *l)
{
    return blob_open_head(st, seg_id, dim, b, n, l, NULL);
}

trove_err store_vec_blob_open(store *st, int64_t seg_id, int dim, sqlite3_blob **b,
                              uint8_t *head, size_t *total)
{
    size_t n;
    seg_layout l;
    trove_err rc = blob_open_head(st, seg_id, dim, b, &n, &l, head);
    *total = rc == TROVE_OK ? l.total : 0;
    return rc;
}

static trove_err seg_dead(store *st, int64_t seg_id, size_t n, uint8_t **dead)
{
    *dead = NULL;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT dead FROM vec_segs WHERE id = ?", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, seg_id);
    /* a failed read is not "nothing dead": dead vectors would come back */
    if (store_step(st, s, "reading dead vectors", &rc) > 0 &&
        sqlite3_column_type(s, 0) != SQLITE_NULL) {
        size_t len = (size_t)sqlite3_column_bytes(s, 0);
        if (len != (n + 7) / 8) {
            store_stmt_put(st, s);
            return seg_corrupt(st, seg_id, "dead bitmap of the wrong size");
        }
        *dead = xmalloc(len ? len : 1);
        memcpy(*dead, sqlite3_column_blob(s, 0), len);
    }
    store_stmt_put(st, s);
    return rc;
}

typedef struct seg_list_ctx {
    row_list l;
    store *st;
} seg_list_ctx;

static trove_err row_seg_info(void *ctx, sqlite3_stmt *s)
{
    seg_list_ctx *c = ctx;
    int64_t id = sqlite3_column_int64(s, 0), cnt = sqlite3_column_int64(s, 1);
    if (cnt < 0 || cnt > STORE_VEC_SEG_MAX)
        return seg_corrupt(c->st, id, "entry count out of range");
    size_t len = (size_t)sqlite3_column_bytes(s, 2);
    int has_dead = sqlite3_column_type(s, 2) != SQLITE_NULL;
    if (has_dead && len != ((size_t)cnt + 7) / 8)
        return seg_corrupt(c->st, id, "dead bitmap of the wrong size");
    store_vec_seg_info *e = row_next(&c->l, sizeof *e);
    *e = (store_vec_seg_info){id, (size_t)cnt, NULL};
    if (has_dead) {
        e->dead = xmalloc(len ? len : 1);
        memcpy(e->dead, sqlite3_column_blob(s, 2), len);
    }
    return TROVE_OK;
}

trove_err store_vec_seg_list(store *st, int64_t model_id, store_vec_seg_info **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    seg_list_ctx c = {{out, n, 0, model_id}, st};
    trove_err rc = store_each(st, "SELECT id, n, dead FROM vec_segs WHERE model_id = ? ORDER BY id",
                              "listing vector segments", bind_id, row_seg_info, &c);
    if (rc) {
        store_vec_seg_list_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_vec_seg_list_free(store_vec_seg_info *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++)
        free(l[i].dead);
    free(l);
}

trove_err store_index_id(store *st, char **id)
{
    *id = NULL;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT value FROM meta WHERE key = 'index_id'", &s);
    if (rc)
        return rc;
    int r = sqlite3_step(s);
    if (r == SQLITE_ROW && sqlite3_column_text(s, 0))
        *id = xstrdup((const char *)sqlite3_column_text(s, 0));
    store_stmt_put(st, s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? TROVE_OK : store_fail(st, "reading the index id");
}

static trove_err segment_data(store *st, int64_t seg_id, int dim, int how, store_vec_seg *out);

static trove_err segment_load(store *st, int64_t seg_id, int dim, int how, store_vec_seg *out)
{
    trove_err rc = segment_data(st, seg_id, dim, how, out);
    if (rc == TROVE_OK)
        rc = seg_dead(st, seg_id, out->blk.n, &out->dead);
    if (rc) {
        store_vec_segment_free(out);
        return rc;
    }
    out->blk.dead = out->dead;
    return TROVE_OK;
}

trove_err store_vec_segment_load(store *st, int64_t seg_id, int dim, store_vec_seg *out)
{
    return segment_load(st, seg_id, dim, VSIDE_WHOLE, out);
}

trove_err store_vec_segment_stream(store *st, int64_t seg_id, int dim, store_vec_seg *out)
{
    return segment_load(st, seg_id, dim, VSIDE_STREAM, out);
}

trove_err store_vec_segment_data(store *st, int64_t seg_id, int dim, store_vec_seg *out)
{
    return segment_data(st, seg_id, dim, VSIDE_WHOLE, out);
}

/* A sidecar whose vectors are read by pread: its file and where they start. */
typedef struct seg_stream {
    int fd;
    off_t data;
    size_t dim, n;
} seg_stream;

static int stream_read(void *ctx, size_t from, size_t n, int8_t *dst)
{
    const seg_stream *s = ctx;
    if (from > s->n || n > s->n - from)
        return -1;
    size_t len = n * s->dim, got = 0;
    off_t at = s->data + (off_t)(from * s->dim);
    while (got < len) {
        ssize_t r = pread(s->fd, dst + got, len - got, at + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static trove_err segment_data(store *st, int64_t seg_id, int dim, int how, store_vec_seg *out)
{
    memset(out, 0, sizeof *out);
    sqlite3_blob *b;
    size_t n;
    seg_layout l;
    uint8_t head[SEG_HEADER];
    vside_map map = {0};
    const uint8_t *m = NULL;
    trove_err rc = blob_open_head(st, seg_id, dim, &b, &n, &l, head);
    /* The sidecar, read in place when it is this segment's; else one copy
     * out of the blob. */
    if (rc == TROVE_OK && store_vside_open(st, seg_id, head, l.total, how, &map)) {
        out->map = map.addr;
        out->map_len = map.len;
        m = map.base;
        if (map.has_fd) {
            seg_stream *ss = xmalloc(sizeof *ss);
            *ss = (seg_stream){map.fd, (off_t)(VSIDE_HEADER + l.data), (size_t)dim, n};
            out->stream = ss;
        }
    } else if (rc == TROVE_OK) {
        out->mem = xmalloc(l.total);
        if (sqlite3_blob_read(b, out->mem, (int)l.total, 0) != SQLITE_OK)
            rc = store_fail(st, "reading vector segment");
        m = out->mem;
    }
    sqlite3_blob_close(b);
    if (rc) {
        store_vec_segment_free(out);
        return rc;
    }
    out->blk = (vec_block){
        .data = (const int8_t *)(m + l.data),
        .scale = (const float *)(const void *)(m + l.scale),
        .chunk_id = (const int64_t *)(const void *)(m + l.chunk),
        .doc_id = (const int64_t *)(const void *)(m + l.doc),
        .dead = NULL,
        .n = n,
        .sketch = map.sketch,   /* the sidecar's, when it has them */
    };
    if (out->stream) {
        out->blk.data = NULL;
        out->blk.read = stream_read;
        out->blk.read_ctx = out->stream;
    }
    return TROVE_OK;
}

/* Let go of the pages wholly inside [p, p + len) of a private file
 * mapping (advice: they come back from the file on use). */
static void drop_pages(const void *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t ps = pg > 0 ? (uintptr_t)pg : 4096;
    uintptr_t from = ((uintptr_t)p + ps - 1) & ~(ps - 1);
    uintptr_t to = ((uintptr_t)p + len) & ~(ps - 1);
    if (to > from)
        (void)madvise((void *)from, to - from, MADV_DONTNEED);
}

void store_vec_segment_drop_rows(store_vec_seg *s, int dim)
{
    if (!s->map || !s->blk.data)
        return;
    drop_pages(s->blk.data, s->blk.n * (size_t)dim);
    s->blk.data = NULL;
}

void store_vec_segment_drop_sketch(store_vec_seg *s, int dim)
{
    if (!s->map || !s->blk.sketch)
        return;
    drop_pages(s->blk.sketch, vec_sketch_size(s->blk.n, dim));
    s->blk.sketch = NULL;
}

void store_vec_segment_free(store_vec_seg *s)
{
    seg_stream *ss = s->stream;
    vside_map m = {s->map, s->map_len, NULL, NULL, ss ? ss->fd : -1, ss != NULL};
    store_vside_close(&m);
    free(ss);
    free(s->mem);
    free(s->dead);
    memset(s, 0, sizeof *s);
}

static int model_dim(store *st, int64_t model_id)
{
    sqlite3_stmt *s;
    int dim = 0;
    if (prep(st, "SELECT dim FROM vec_models WHERE id = ?", &s) == TROVE_OK) {
        sqlite3_bind_int64(s, 1, model_id);
        if (sqlite3_step(s) == SQLITE_ROW)
            dim = sqlite3_column_int(s, 0);
        store_stmt_put(st, s);
    }
    return dim;
}

static int cmp_loc(const void *a, const void *b)
{
    const store_vec_loc *x = a, *y = b;
    if (x->text_hash != y->text_hash)
        return x->text_hash < y->text_hash ? -1 : 1;
    if (x->seg_id != y->seg_id)
        return x->seg_id < y->seg_id ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

trove_err store_vec_locations(store *st, int64_t model_id, store_vec_loc **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int dim = model_dim(st, model_id);
    seg_row *rows;
    size_t n_rows, cap = 0;
    trove_err rc = seg_rows(st, model_id, &rows, &n_rows);
    uint64_t *hashes = NULL;
    size_t hcap = 0;
    for (size_t i = 0; rc == TROVE_OK && i < n_rows; i++) {
        sqlite3_blob *b;
        size_t cnt;
        seg_layout l;
        rc = blob_open(st, rows[i].id, dim, &b, &cnt, &l);
        if (rc == TROVE_OK && cnt) {
            xgrow(&hashes, &hcap, cnt, sizeof *hashes);
            if (sqlite3_blob_read(b, hashes, (int)(cnt * 8), (int)l.hash) != SQLITE_OK)
                rc = store_fail(st, "reading vector hashes");
            xgrow(out, &cap, *n + cnt, sizeof **out);
            for (size_t j = 0; rc == TROVE_OK && j < cnt; j++)
                (*out)[(*n)++] = (store_vec_loc){hashes[j], rows[i].id, (uint32_t)j};
        }
        sqlite3_blob_close(b);
    }
    free(hashes);
    free(rows);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, cmp_loc);
    return TROVE_OK;
}

trove_err store_vec_read(store *st, int64_t seg_id, uint32_t slot, int dim, int8_t *q,
                         float *scale, uint64_t *text_hash)
{
    sqlite3_blob *b;
    size_t n;
    seg_layout l;
    trove_err rc = blob_open(st, seg_id, dim, &b, &n, &l);
    if (rc == TROVE_OK && slot >= n)
        rc = seg_corrupt(st, seg_id, "slot out of range");
    if (rc == TROVE_OK &&
        (sqlite3_blob_read(b, q, dim, (int)(l.data + (size_t)slot * (size_t)dim)) != SQLITE_OK ||
         sqlite3_blob_read(b, scale, 4, (int)(l.scale + (size_t)slot * 4)) != SQLITE_OK ||
         sqlite3_blob_read(b, text_hash, 8, (int)(l.hash + (size_t)slot * 8)) != SQLITE_OK))
        rc = store_fail(st, "reading a vector");
    sqlite3_blob_close(b);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

static trove_err seg_insert(store *st, int64_t model_id, const seg_item *items, size_t n, int dim,
                            int64_t *seg_id)
{
    size_t size;
    uint8_t *blob = seg_build(items, n, dim, &size);
    sqlite3_stmt *s;
    trove_err rc = prep(st, "INSERT INTO vec_segs(model_id, n, n_dead, data) VALUES (?,?,0,?)", &s);
    if (rc == TROVE_OK) {
        sqlite3_bind_int64(s, 1, model_id);
        sqlite3_bind_int64(s, 2, (int64_t)n);
        sqlite3_bind_blob64(s, 3, blob, size, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = store_fail(st, "writing vector segment");
        else
            *seg_id = sqlite3_last_insert_rowid(st->db);
        store_stmt_put(st, s);
    }
    free(blob);
    return rc;
}

/* Point vec_map at the entries of a freshly written segment. */
static trove_err map_entries(store *st, int64_t model_id, int64_t seg_id, const seg_item *items,
                             size_t n)
{
    sqlite3_stmt *s;
    trove_err rc = prep(st, "INSERT OR REPLACE INTO vec_map(chunk_id, model_id, seg_id, slot)"
                            " VALUES (?,?,?,?)", &s);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, items[i].chunk_id);
        sqlite3_bind_int64(s, 2, model_id);
        sqlite3_bind_int64(s, 3, seg_id);
        sqlite3_bind_int64(s, 4, (int64_t)i);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = store_fail(st, "recording vector");
    }
    store_stmt_put(st, s);
    return rc;
}

/* Write items as segments of at most STORE_VEC_SEG_MAX entries. */
static trove_err write_items(store *st, int64_t model_id, const seg_item *items, size_t n, int dim)
{
    trove_err rc = TROVE_OK;
    for (size_t off = 0; rc == TROVE_OK && off < n; off += STORE_VEC_SEG_MAX) {
        size_t cnt = n - off < STORE_VEC_SEG_MAX ? n - off : STORE_VEC_SEG_MAX;
        int64_t seg_id = 0;
        rc = seg_insert(st, model_id, items + off, cnt, dim, &seg_id);
        if (rc == TROVE_OK)
            rc = map_entries(st, model_id, seg_id, items + off, cnt);
    }
    return rc;
}

/* Merge segments: their live entries (not dead, and still the chunk's
 * vector of record in vec_map) go to new segments; the old ones go. */
static trove_err merge(store *st, int64_t model_id, int dim, const int64_t *ids, size_t n_ids)
{
    store_vec_seg *segs = xcalloc(n_ids, sizeof *segs);
    seg_item *items = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s = NULL;
    trove_err rc = prep(st, "SELECT 1 FROM vec_map WHERE chunk_id = ? AND model_id = ?"
                            " AND seg_id = ? AND slot = ?", &s);
    for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++) {
        rc = store_vec_segment_load(st, ids[i], dim, &segs[i]);
        const vec_block *b = &segs[i].blk;
        /* the segment's bytes, copied or mapped: its vectors follow the header */
        const uint8_t *m = rc == TROVE_OK ? (const uint8_t *)b->data - SEG_HEADER : NULL;
        seg_layout l;
        layout(b->n, dim, &l);
        for (size_t j = 0; rc == TROVE_OK && j < b->n; j++) {
            if (b->dead && (b->dead[j >> 3] >> (j & 7) & 1))
                continue;
            sqlite3_reset(s);
            sqlite3_bind_int64(s, 1, b->chunk_id[j]);
            sqlite3_bind_int64(s, 2, model_id);
            sqlite3_bind_int64(s, 3, ids[i]);
            sqlite3_bind_int64(s, 4, (int64_t)j);
            /* no row: the slot was replaced; an error must not drop it */
            if (store_step(st, s, "merging vector segments", &rc) <= 0)
                continue;
            xgrow(&items, &cap, n + 1, sizeof *items);
            uint64_t h;
            memcpy(&h, m + l.hash + j * 8, 8);
            items[n++] = (seg_item){b->chunk_id[j], b->doc_id[j], h, b->scale[j],
                                    b->data + j * (size_t)dim};
        }
    }
    store_stmt_put(st, s);
    for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++)
        rc = exec_i64(st, "DELETE FROM vec_segs WHERE id = ?", ids[i]);
    if (rc == TROVE_OK)
        rc = write_items(st, model_id, items, n, dim);
    for (size_t i = 0; i < n_ids; i++)
        store_vec_segment_free(&segs[i]);
    free(segs);
    free(items);
    return rc;
}

/* Size tier of a segment: 0 below 1024 live entries, then one tier per
 * factor of 4. */
static int tier_of(int64_t live)
{
    int t = 0;
    for (int64_t x = live / 1024; x > 0; x /= 4)
        t++;
    return t;
}

#define MERGE_FANIN 4

/* Keep a model's segments few and mostly alive: rewrite the segments more
 * than half dead, and merge MERGE_FANIN segments of one size tier into one
 * of the next. Each entry is rewritten O(log n) times over its life. */
static trove_err maintain(store *st, int64_t model_id)
{
    int dim = model_dim(st, model_id);
    seg_row *rows;
    size_t n;
    trove_err rc = seg_rows(st, model_id, &rows, &n);
    if (rc || n == 0) {
        free(rows);
        return rc;
    }
    int64_t *pick = xmalloc(n * sizeof *pick);
    size_t n_pick = 0;
    int *used = xcalloc(n, sizeof *used);
    for (size_t i = 0; i < n; i++)
        if (rows[i].n_dead * 2 > rows[i].n)
            pick[n_pick++] = rows[i].id, used[i] = 1;
    for (int tier = 0; tier < 16; tier++) {
        size_t cnt = 0;
        int64_t live = 0;
        for (size_t i = 0; i < n; i++)
            if (!used[i] && tier_of(rows[i].n - rows[i].n_dead) == tier)
                cnt++, live += rows[i].n - rows[i].n_dead;
        if (cnt < MERGE_FANIN || live > STORE_VEC_SEG_MAX)
            continue;
        for (size_t i = 0; i < n; i++)
            if (!used[i] && tier_of(rows[i].n - rows[i].n_dead) == tier)
                pick[n_pick++] = rows[i].id, used[i] = 1;
    }
    if (n_pick)
        rc = merge(st, model_id, dim, pick, n_pick);
    free(used);
    free(pick);
    free(rows);
    return rc;
}

trove_err store_vec_add(store *st, int64_t model_id, int dim, const store_vec_entry *e, size_t n,
                        size_t *added)
{
    *added = 0;
    int have = model_dim(st, model_id);
    if (have != dim)
        return trove_fail(TROVE_EINVAL, "vectors of width %d for a model stored with %d", dim, have);
    seg_item *items = xmalloc((n ? n : 1) * sizeof *items);
    size_t k = 0;
    sqlite3_stmt *doc = NULL, *old = NULL;
    trove_err rc = prep(st, "SELECT doc_id FROM chunks WHERE id = ?", &doc);
    if (rc == TROVE_OK)
        rc = prep(st, "SELECT seg_id, slot FROM vec_map WHERE chunk_id = ? AND model_id = ?", &old);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        sqlite3_reset(doc);
        sqlite3_bind_int64(doc, 1, e[i].chunk_id);
        int r = sqlite3_step(doc);
        if (r == SQLITE_DONE)
            continue;   /* the chunk went while it was being embedded */
        if (r != SQLITE_ROW) {
            rc = store_fail(st, "looking up chunk");
            break;
        }
        int dup = 0;
        for (size_t j = 0; j < k && !dup; j++)
            dup = items[j].chunk_id == e[i].chunk_id;
        if (dup)
            continue;
        items[k++] = (seg_item){e[i].chunk_id, sqlite3_column_int64(doc, 0), e[i].text_hash,
                                e[i].scale, e[i].q};
        sqlite3_reset(old);
        sqlite3_bind_int64(old, 1, e[i].chunk_id);
        sqlite3_bind_int64(old, 2, model_id);
        if (store_step(st, old, "looking up a replaced vector", &rc) > 0)
            dead_push(st, sqlite3_column_int64(old, 0), (uint32_t)sqlite3_column_int64(old, 1));
    }
    store_stmt_put(st, doc);
    store_stmt_put(st, old);
    if (rc == TROVE_OK && k)
        rc = write_items(st, model_id, items, k, dim);
    free(items);
    if (rc == TROVE_OK)
        rc = store_vec_fold(st);   /* before merging: dead slots must not be copied */
    if (rc == TROVE_OK)
        rc = maintain(st, model_id);
    if (rc == TROVE_OK)
        *added = k;
    return rc;
}

/* ---- deletion ----------------------------------------------------------- */

typedef struct dead_ctx {
    store *st;
    row_list l;   /* only its id: the note */
} dead_ctx;

static void bind_id_of_dead(void *ctx, sqlite3_stmt *s)
{
    bind_id(&((dead_ctx *)ctx)->l, s);
}

static trove_err row_dead(void *ctx, sqlite3_stmt *s)
{
    dead_push(((dead_ctx *)ctx)->st, sqlite3_column_int64(s, 0), (uint32_t)sqlite3_column_int64(s, 1));
    return TROVE_OK;
}

trove_err store_vec_doc_deleted(store *st, int64_t doc_id)
{
    static const char list_sql[] = "SELECT m.seg_id, m.slot FROM chunks c JOIN vec_map m"
                                   " ON m.chunk_id = c.id WHERE c.doc_id = ?";
    static const char del_sql[] = "DELETE FROM vec_map WHERE chunk_id IN"
                                  " (SELECT id FROM chunks WHERE doc_id = ?)";
    dead_ctx c = {st, {NULL, NULL, 0, doc_id}};
    trove_err rc = store_each(st, list_sql, "listing vectors of a deleted note", bind_id_of_dead,
                              row_dead, &c);
    if (rc == TROVE_OK)
        rc = store_each(st, del_sql, "forgetting vectors of a deleted note", bind_id_of_dead, NULL, &c);
    return rc;
}

static int cmp_dead(const void *a, const void *b)
{
    const store_dead_slot *x = a, *y = b;
    if (x->seg_id != y->seg_id)
        return x->seg_id < y->seg_id ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Set the dead bits of one segment's slots [from, to) of st->dead. *model
 * gets the segment's model (0 when the segment is gone already). */
static trove_err fold_segment(store *st, size_t from, size_t to, int64_t *model)
{
    int64_t seg_id = st->dead[from].seg_id;
    *model = 0;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT model_id, n, n_dead, dead FROM vec_segs WHERE id = ?", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, seg_id);
    if (sqlite3_step(s) != SQLITE_ROW) {
        store_stmt_put(st, s);
        return TROVE_OK;
    }
    *model = sqlite3_column_int64(s, 0);
    int64_t n = sqlite3_column_int64(s, 1), n_dead = sqlite3_column_int64(s, 2);
    size_t bytes = (size_t)(n + 7) / 8;
    uint8_t *bits = xcalloc(bytes ? bytes : 1, 1);
    if (sqlite3_column_type(s, 3) != SQLITE_NULL) {
        if ((size_t)sqlite3_column_bytes(s, 3) != bytes)
            rc = seg_corrupt(st, seg_id, "dead bitmap of the wrong size");
        else
            memcpy(bits, sqlite3_column_blob(s, 3), bytes);
    }
    store_stmt_put(st, s);
    for (size_t i = from; rc == TROVE_OK && i < to; i++) {
        uint32_t slot = st->dead[i].slot;
        if (slot >= (uint64_t)n || (bits[slot >> 3] >> (slot & 7) & 1))
            continue;
        bits[slot >> 3] |= (uint8_t)(1u << (slot & 7));
        n_dead++;
    }
    if (rc == TROVE_OK && n_dead >= n) {
        rc = exec_i64(st, "DELETE FROM vec_segs WHERE id = ?", seg_id);
    } else if (rc == TROVE_OK && (rc = prep(st, "UPDATE vec_segs SET dead = ?, n_dead = ?"
                                                " WHERE id = ?", &s)) == TROVE_OK) {
        sqlite3_bind_blob(s, 1, bits, (int)bytes, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, n_dead);
        sqlite3_bind_int64(s, 3, seg_id);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = store_fail(st, "marking deleted vectors");
        store_stmt_put(st, s);
    }
    free(bits);
    return rc;
}

trove_err store_vec_fold(store *st)
{
    if (st->n_dead == 0)
        return TROVE_OK;
    qsort(st->dead, st->n_dead, sizeof *st->dead, cmp_dead);
    int64_t *models = NULL;
    size_t n_models = 0, cap = 0;
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < st->n_dead;) {
        size_t j = i;
        while (j < st->n_dead && st->dead[j].seg_id == st->dead[i].seg_id)
            j++;
        int64_t model;
        rc = fold_segment(st, i, j, &model);
        int seen = 0;
        for (size_t k = 0; k < n_models; k++)
            seen |= models[k] == model;
        if (model && !seen) {
            xgrow(&models, &cap, n_models + 1, sizeof *models);
            models[n_models++] = model;
        }
        i = j;
    }
    st->n_dead = 0;
    for (size_t k = 0; rc == TROVE_OK && k < n_models; k++)
        rc = maintain(st, models[k]);
    free(models);
    return rc;
}

void store_vec_discard(store *st)
{
    st->n_dead = 0;
}

/* ---- what needs embedding ----------------------------------------------- */

typedef struct pending_ctx {
    row_list l;
    int64_t model_id, after, limit;
} pending_ctx;

static void bind_pending(void *ctx, sqlite3_stmt *s)
{
    const pending_ctx *c = ctx;
    sqlite3_bind_int64(s, 1, c->model_id);
    sqlite3_bind_int64(s, 2, c->after);
    sqlite3_bind_int64(s, 3, c->limit);
}

static trove_err row_pending(void *ctx, sqlite3_stmt *s)
{
    store_vec_todo *t = row_next(&((pending_ctx *)ctx)->l, sizeof *t);
    t->chunk_id = sqlite3_column_int64(s, 0);
    t->heading = xstrdup(col_text(s, 1));
    t->body = xstrdup(col_text(s, 2));
    return TROVE_OK;
}

trove_err store_vec_pending(store *st, int64_t model_id, int64_t after, size_t limit,
                            store_vec_todo **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pending_ctx c = {{out, n, 0, 0}, model_id, after, (int64_t)limit};
    /* CROSS JOIN keeps chunks the outer loop: the planner otherwise may
     * walk all of chunks_fts for every call. */
    trove_err rc = store_each(st, "SELECT c.id, f.heading, f.body FROM chunks c"
                              " CROSS JOIN chunks_fts f ON f.rowid = c.id WHERE c.id > ?2 AND NOT EXISTS"
                              " (SELECT 1 FROM vec_map m WHERE m.chunk_id = c.id AND m.model_id = ?1)"
                              " ORDER BY c.id LIMIT ?3", "listing chunks to embed", bind_pending,
                              row_pending, &c);
    if (rc) {
        store_vec_todo_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_vec_todo_free(store_vec_todo *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].heading);
        free(t[i].body);
    }
    free(t);
}

/* Every chunk less those with a vector of the model: (chunk_id, model_id)
 * is vec_map's key, so each chunk is counted once, and a vector of a chunk
 * that is gone not at all. One pass over vec_map with a rowid seek into
 * chunks: 27M instructions on the tldr pages; the NOT EXISTS probe per
 * chunk it replaces cost 86M (a third of a no-op `update`'s CPU with a
 * model configured), a merge of two ordered scans stepped from C 44M. */
trove_err store_vec_pending_count(store *st, int64_t model_id, int64_t *n)
{
    *n = 0;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM vec_map m"
                            " JOIN chunks c ON c.id = m.chunk_id WHERE m.model_id = ?)", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, model_id);
    if (sqlite3_step(s) == SQLITE_ROW)
        *n = sqlite3_column_int64(s, 0);
    else
        rc = store_fail(st, "counting chunks to embed");
    store_stmt_put(st, s);
    return rc;
}

trove_err store_vec_collection_has(store *st, int64_t model_id, const char *collection, int *has)
{
    *has = 0;
    sqlite3_stmt *s;
    trove_err rc = prep(st, "SELECT 1 FROM collections col JOIN docs d ON d.collection_id = col.id"
                            " JOIN chunks c ON c.doc_id = d.id JOIN vec_map m ON m.chunk_id = c.id"
                            " AND m.model_id = ?1 WHERE col.name = ?2 LIMIT 1", &s);
    if (rc)
        return rc;
    sqlite3_bind_int64(s, 1, model_id);
    sqlite3_bind_text(s, 2, collection, -1, SQLITE_STATIC);
    int r = sqlite3_step(s);
    *has = r == SQLITE_ROW;
    store_stmt_put(st, s);
    return r == SQLITE_ROW || r == SQLITE_DONE ? TROVE_OK : store_fail(st, "checking embeddings");
}

static trove_err row_count(void *ctx, sqlite3_stmt *s)
{
    store_vec_count *c = row_next(ctx, sizeof *c);
    c->collection = xstrdup(col_text(s, 0));
    c->chunks = sqlite3_column_int64(s, 1);
    c->embedded = sqlite3_column_int64(s, 2);
    c->stale = sqlite3_column_int64(s, 3);
    return TROVE_OK;
}

trove_err store_vec_counts(store *st, int64_t model_id, store_vec_count **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    row_list l = {out, n, 0, model_id};
    trove_err rc = store_each(st,
        "SELECT col.name, count(c.id),"
        "  coalesce(sum(EXISTS (SELECT 1 FROM vec_map m WHERE m.chunk_id = c.id AND m.model_id = ?1)), 0),"
        "  coalesce(sum(NOT EXISTS (SELECT 1 FROM vec_map m WHERE m.chunk_id = c.id AND m.model_id = ?1)"
        "      AND EXISTS (SELECT 1 FROM vec_map m WHERE m.chunk_id = c.id AND m.model_id != ?1)), 0)"
        " FROM collections col LEFT JOIN docs d ON d.collection_id = col.id"
        " LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY col.id ORDER BY col.name",
        "counting vectors", bind_id, row_count, &l);
    if (rc) {
        store_vec_counts_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void store_vec_counts_free(store_vec_count *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].collection);
    free(c);
}

/* ---- a note's own vectors (trove similar) ------------------------------- */

typedef struct mean_ctx {
    store *st;
    int64_t doc_id, model_id;
    int dim;
    int8_t *q;
    float *sum;
    size_t n;
} mean_ctx;

static void bind_mean(void *ctx, sqlite3_stmt *s)
{
    const mean_ctx *m = ctx;
    sqlite3_bind_int64(s, 1, m->doc_id);
    sqlite3_bind_int64(s, 2, m->model_id);
}

static trove_err row_mean(void *ctx, sqlite3_stmt *s)
{
    mean_ctx *m = ctx;
    float scale;
    uint64_t hash;
    trove_err rc = store_vec_read(m->st, sqlite3_column_int64(s, 0),
                                  (uint32_t)sqlite3_column_int64(s, 1), m->dim, m->q, &scale,
                                  &hash);
    if (rc)
        return rc;
    /* Each chunk counts alike, whatever its vector's length. */
    double norm = 0;
    for (int i = 0; i < m->dim; i++)
        norm += (double)m->q[i] * m->q[i];
    if (norm <= 0)
        return TROVE_OK;
    float w = (float)(1.0 / sqrt(norm));
    for (int i = 0; i < m->dim; i++)
        m->sum[i] += w * (float)m->q[i];
    m->n++;
    return TROVE_OK;
}

static trove_err vec_mean(store *st, const char *sql, int64_t id, int64_t model_id, int dim,
                          float *out, size_t *n)
{
    *n = 0;
    memset(out, 0, (size_t)dim * sizeof *out);
    if (dim <= 0 || dim > VEC_MAX_DIM)
        return trove_fail(TROVE_EINVAL, "vector dimension %d out of range", dim);
    mean_ctx m = {st, id, model_id, dim, xmalloc((size_t)dim), out, 0};
    trove_err rc = store_each(st, sql, "reading stored vectors", bind_mean, row_mean, &m);
    free(m.q);
    *n = rc ? 0 : m.n;
    return rc;
}

trove_err store_vec_doc_mean(store *st, int64_t doc_id, int64_t model_id, int dim, float *out,
                             size_t *n)
{
    return vec_mean(st, "SELECT m.seg_id, m.slot FROM chunks c JOIN vec_map m"
                    " ON m.chunk_id = c.id AND m.model_id = ?2 WHERE c.doc_id = ?1"
                    " ORDER BY c.seq", doc_id, model_id, dim, out, n);
}

trove_err store_vec_chunk_get(store *st, int64_t chunk_id, int64_t model_id, int dim, float *out,
                              size_t *n)
{
    return vec_mean(st, "SELECT seg_id, slot FROM vec_map WHERE chunk_id = ?1 AND model_id = ?2",
                    chunk_id, model_id, dim, out, n);
}

trove_err store_vec_model_pick(store *st, const char *fingerprint, int64_t *id, int *dim,
                               char **name)
{
    *id = 0;
    *dim = 0;
    *name = NULL;
    store_vec_model *m;
    size_t n;
    trove_err rc = store_vec_models(st, &m, &n);
    if (rc)
        return rc;
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        if (fingerprint ? strcmp(m[i].fingerprint, fingerprint) == 0
                        : (best == n || m[i].vectors > m[best].vectors))
            best = i;
    }
    if (best < n && m[best].vectors > 0) {
        *id = m[best].id;
        *dim = m[best].dim;
        *name = xstrdup(m[best].name);
    }
    store_vec_models_free(m, n);
    return TROVE_OK;
}
