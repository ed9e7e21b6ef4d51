/* store_vside — see store_vside.h; the file format is in docs/schema.md. */
#include "store/store_vside.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_int.h"
#include "store/store_vec.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/fsutil.h"
#include "util/str.h"

/* ---- header --------------------------------------------------------------
 * Little-endian, 128 bytes:
 *   0 "TVSC"  4 u32 version(2)  8 i64 seg_id  16 char index_id[32]
 *  48 u32 dim  52 u32 n  56 u32 elem(1: int8)
 *  60 u32 sketch: VEC_SKETCH_VERSION when vec_sketch_size(n, dim) bytes of
 *     sketches follow the payload, 0 when none do (always 0 in version 1)
 *  64 u64 payload_len  72 u64 payload_hash  80 u64 str_hash(bytes 0..79)
 *  88 zero to 128 */

#define VSIDE_MAGIC "TVSC"
#define VSIDE_VERSION 2
#define VSIDE_SUM_AT 80

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void vside_header_build(const vside_header *h, uint8_t out[VSIDE_HEADER])
{
    memset(out, 0, VSIDE_HEADER);
    memcpy(out, VSIDE_MAGIC, 4);
    put32(out + 4, h->version ? h->version : VSIDE_VERSION);
    put64(out + 8, (uint64_t)h->seg_id);
    memcpy(out + 16, h->index_id, strnlen(h->index_id, 32));
    put32(out + 48, h->dim);
    put32(out + 52, h->n);
    put32(out + 56, h->elem);
    put32(out + 60, h->sketch);
    put64(out + 64, h->payload_len);
    put64(out + 72, h->payload_hash);
    put64(out + VSIDE_SUM_AT, str_hash(out, VSIDE_SUM_AT));
}

int vside_header_parse(const uint8_t *p, size_t len, vside_header *h)
{
    memset(h, 0, sizeof *h);
    if (len < VSIDE_HEADER || memcmp(p, VSIDE_MAGIC, 4) != 0 || get32(p + 4) < 1 ||
        get32(p + 4) > VSIDE_VERSION)
        return 0;
    if (get64(p + VSIDE_SUM_AT) != str_hash(p, VSIDE_SUM_AT))
        return 0;
    for (size_t i = VSIDE_SUM_AT + 8; i < VSIDE_HEADER; i++)
        if (p[i])
            return 0;
    h->seg_id = (int64_t)get64(p + 8);
    memcpy(h->index_id, p + 16, 32);
    h->index_id[32] = 0;
    /* the identity is text: printable, NUL padded at the end only */
    size_t id_len = strlen(h->index_id);
    for (size_t i = 0; i < 32; i++)
        if (i < id_len ? (p[16 + i] < 0x21 || p[16 + i] > 0x7e) : p[16 + i] != 0)
            return 0;
    h->dim = get32(p + 48);
    h->n = get32(p + 52);
    h->elem = get32(p + 56);
    h->payload_len = get64(p + 64);
    h->payload_hash = get64(p + 72);
    h->version = get32(p + 4);
    h->sketch = get32(p + 60);
    int sketch_ok = h->sketch == 0 || (h->version >= 2 && h->sketch == VEC_SKETCH_VERSION);
    if (h->seg_id <= 0 || id_len == 0 || !sketch_ok || h->elem != VSIDE_ELEM_INT8 ||
        h->dim == 0 || h->dim > VEC_MAX_DIM || h->n > STORE_VEC_SEG_MAX)
        return 0;
    return h->payload_len == store_vec_seg_size(h->n, (int)h->dim);
}

size_t vside_sketch_len(const vside_header *h)
{
    return h->sketch ? vec_sketch_size(h->n, (int)h->dim) : 0;
}

/* ---- names ---------------------------------------------------------------- */

char *store_vside_dir(const char *index_path)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s-vec", index_path);
    return tbuf_detach(&b);
}

/* A sidecar ("123.seg") or a temporary one (".123.PID.tmp"): the only
 * names trove writes in the folder. */
static int ours(const char *name)
{
    size_t len = strlen(name);
    return (len > 4 && strcmp(name + len - 4, ".seg") == 0) ||
           (name[0] == '.' && len > 5 && strcmp(name + len - 4, ".tmp") == 0);
}

void store_vside_drop(const char *index_path)
{
    char *dir = store_vside_dir(index_path);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        tbuf p = {0};
        while ((e = readdir(d))) {
            if (!ours(e->d_name))
                continue;
            tbuf_reset(&p);
            tbuf_printf(&p, "%s/%s", dir, e->d_name);
            unlink(p.data);
        }
        tbuf_free(&p);
        closedir(d);
        rmdir(dir);   /* fails, harmlessly, when someone put other files there */
    }
    free(dir);
}

void store_vside_move(const char *from, const char *to)
{
    char *a = store_vside_dir(from), *b = store_vside_dir(to);
    store_vside_drop(to);
    rename(a, b);   /* none to move: the index had no vectors */
    free(a);
    free(b);
}

static char *seg_path(const char *dir, int64_t seg_id)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%" PRId64 ".seg", dir, seg_id);
    return tbuf_detach(&b);
}

/* The index's identity, read once per handle; NULL when it has none. */
static const char *index_id(store *st)
{
    if (!st->vside_id_read) {
        st->vside_id_read = 1;
        char *id = NULL;
        if (store_index_id(st, &id) == TROVE_OK && id && strlen(id) <= 32)
            st->vside_id = id;
        else
            free(id);
    }
    return st->vside_id;
}

/* ---- reading -------------------------------------------------------------- */

/* Is header h the one of segment seg_id of this index, whose blob starts
 * with blob_head and is payload_len long? */
static int header_fits(const vside_header *h, const char *id, int64_t seg_id,
                       const uint8_t *blob_head, size_t payload_len)
{
    return h->seg_id == seg_id && strcmp(h->index_id, id) == 0 && h->payload_len == payload_len &&
           h->dim == get32(blob_head + 8) && h->n == get32(blob_head + 12);
}

/* Open the sidecar and check its header (into *h) and length (header,
 * payload, sketches); the fd (>= 0) when it fits, else -1. */
static int open_checked(const char *path, const char *id, int64_t seg_id, const uint8_t *blob_head,
                        size_t payload_len, vside_header *h)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint8_t raw[VSIDE_HEADER];
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        pread(fd, raw, sizeof raw, 0) != (ssize_t)sizeof raw || !vside_header_parse(raw, sizeof raw, h) ||
        !header_fits(h, id, seg_id, blob_head, payload_len) ||
        (uint64_t)sb.st_size != (uint64_t)VSIDE_HEADER + payload_len + vside_sketch_len(h)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The blob's own first 32 bytes must be the sidecar's: they hold the
 * segment's content hash, so a sidecar left by another copy of the index
 * (same identity, same segment id, other vectors) is not taken. */
static int head_matches(const uint8_t *mapped, const uint8_t *blob_head)
{
    return memcmp(mapped, blob_head, 32) == 0;
}

int store_vside_open(store *st, int64_t seg_id, const uint8_t *blob_head, size_t payload_len,
                     int how, vside_map *m)
{
    memset(m, 0, sizeof *m);
    const char *id = index_id(st);
    if (!id)
        return 0;
    char *dir = store_vside_dir(st->path);
    char *path = seg_path(dir, seg_id);
    vside_header h;
    int fd = open_checked(path, id, seg_id, blob_head, payload_len, &h);
    free(path);
    free(dir);
    if (fd < 0)
        return 0;
    size_t len = VSIDE_HEADER + payload_len + vside_sketch_len(&h);
    int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
    if (how != VSIDE_STREAM)
        flags |= MAP_POPULATE;   /* the scan reads every page: fault them in at once */
#endif
    void *addr = mmap(NULL, len, PROT_READ, flags, fd, 0);
    if (addr == MAP_FAILED || !head_matches((const uint8_t *)addr + VSIDE_HEADER, blob_head)) {
        if (addr != MAP_FAILED)
            munmap(addr, len);
        close(fd);
        return 0;
    }
    const uint8_t *base = (const uint8_t *)addr + VSIDE_HEADER;
    *m = (vside_map){addr, len, base, h.sketch ? base + payload_len : NULL, -1, 0};
    if (how == VSIDE_STREAM) {
        m->fd = fd;
        m->has_fd = 1;
    } else {
        close(fd);
    }
    return 1;
}

void store_vside_close(vside_map *m)
{
    if (m->addr)
        munmap(m->addr, m->len);
    if (m->has_fd)
        close(m->fd);
    memset(m, 0, sizeof *m);
}

/* ---- writing -------------------------------------------------------------- */


/* Write segment seg_id's sidecar from its blob bytes, with the sketches
 * made from them: a temporary file, fsync'd, renamed over the name (readers
 * see the old file or the new one, never half of one). */
static void write_sidecar(const char *dir, const char *id, int64_t seg_id, const uint8_t *payload,
                          size_t len)
{
    vside_header h = {.seg_id = seg_id, .dim = get32(payload + 8), .n = get32(payload + 12),
                      .elem = VSIDE_ELEM_INT8, .payload_len = len,
                      .payload_hash = str_hash(payload, len), .sketch = VEC_SKETCH_VERSION};
    size_t sk_len = vside_sketch_len(&h);
    uint8_t *sk = xmalloc(sk_len ? sk_len : 1);
    store_vec_seg_sketch(payload, h.n, (int)h.dim, sk);
    snprintf(h.index_id, sizeof h.index_id, "%s", id);
    uint8_t raw[VSIDE_HEADER];
    vside_header_build(&h, raw);
    char *path = seg_path(dir, seg_id);
    tbuf tmp = {0};
    tbuf_printf(&tmp, "%s/.%" PRId64 ".%ld.tmp", dir, seg_id, (long)getpid());
    int fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int ok = fd >= 0 && fs_write_all(fd, raw, sizeof raw) == 0 && fs_write_all(fd, payload, len) == 0 &&
             fs_write_all(fd, sk, sk_len) == 0 && fsync(fd) == 0;
    if (fd >= 0)
        ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp.data, path) != 0)
        unlink(tmp.data);
    tbuf_free(&tmp);
    free(path);
    free(sk);
}

/* The index's segments: id and width, in id order. */
typedef struct seg_ref {
    int64_t id;
    int dim;
} seg_ref;

static int list_segments(store *st, seg_ref **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    sqlite3_stmt *s = store_stmt_get(st, "SELECT s.id, m.dim FROM vec_segs s JOIN vec_models m"
                                         " ON m.id = s.model_id ORDER BY s.id");
    if (!s)
        return -1;
    int r;
    while ((r = sqlite3_step(s)) == SQLITE_ROW) {
        xgrow(out, &cap, *n + 1, sizeof **out);
        (*out)[(*n)++] = (seg_ref){sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1)};
    }
    store_stmt_put(st, s);
    if (r != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

static int listed(const seg_ref *l, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l[mid].id == id)
            return 1;
        if (l[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Segment id of a sidecar's name ("123.seg"), 0 when it is not one. */
static int64_t name_seg(const char *name)
{
    char *end;
    if (name[0] < '1' || name[0] > '9')
        return 0;
    long long v = strtoll(name, &end, 10);
    return strcmp(end, ".seg") == 0 && v > 0 ? (int64_t)v : 0;
}

/* A temporary file ".SEG.PID.tmp" of a process that is gone. */
static int stale_tmp(const char *name)
{
    size_t len = strlen(name);
    if (name[0] != '.' || len < 5 || strcmp(name + len - 4, ".tmp") != 0)
        return 0;
    const char *dot = strchr(name + 1, '.');
    long pid = dot ? strtol(dot + 1, NULL, 10) : 0;
    return pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH);
}

/* Remove what is in dir but not a sidecar of a listed segment. */
static void remove_orphans(const char *dir, const seg_ref *l, size_t n)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    tbuf p = {0};
    while ((e = readdir(d))) {
        int64_t id = name_seg(e->d_name);
        if ((id && !listed(l, n, id)) || stale_tmp(e->d_name)) {
            tbuf_reset(&p);
            tbuf_printf(&p, "%s/%s", dir, e->d_name);
            unlink(p.data);
        }
    }
    tbuf_free(&p);
    closedir(d);
}

/* Read a whole segment blob whose header was read (total bytes). */
static uint8_t *blob_all(sqlite3_blob *b, size_t total)
{
    uint8_t *buf = xmalloc(total);
    if (sqlite3_blob_read(b, buf, (int)total, 0) != SQLITE_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

void store_vside_sync(store *st)
{
    const char *id = index_id(st);
    seg_ref *l;
    size_t n;
    if (!id || store_read_begin(st) != TROVE_OK)
        return;
    if (list_segments(st, &l, &n) != 0) {
        store_read_end(st);
        return;
    }
    char *dir = store_vside_dir(st->path);
    struct stat sb;
    int have_dir = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!have_dir && n && fs_mkdir_private(dir) == 0)
        have_dir = 1;
    for (size_t i = 0; have_dir && i < n; i++) {
        sqlite3_blob *b;
        uint8_t head[STORE_SEG_HEADER];
        size_t total;
        if (store_vec_blob_open(st, l[i].id, l[i].dim, &b, head, &total) == TROVE_OK) {
            char *path = seg_path(dir, l[i].id);
            vside_header h;
            int fd = open_checked(path, id, l[i].id, head, total, &h);
            uint8_t got[STORE_SEG_HEADER];
            /* one without sketches (version 1) is written again with them */
            int fits = fd >= 0 && h.sketch && pread(fd, got, sizeof got, VSIDE_HEADER) == (ssize_t)sizeof got &&
                       head_matches(got, head);
            if (fd >= 0)
                close(fd);
            uint8_t *all = fits ? NULL : blob_all(b, total);
            if (all)
                write_sidecar(dir, id, l[i].id, all, total);
            free(all);
            free(path);
        }
        sqlite3_blob_close(b);
    }
    store_read_end(st);
    trove_errclear();   /* a segment that went meanwhile is no error of the commit */
    if (have_dir)
        remove_orphans(dir, l, n);
    free(dir);
    free(l);
}

/* ---- checking ------------------------------------------------------------- */

/* Are a sidecar's sketches (none: yes) those its segment's blob makes? */
static int sketches_match(const vside_header *h, const uint8_t *blob, const uint8_t *sketch)
{
    size_t len = vside_sketch_len(h);
    if (!len || !sketch)
        return 1;
    uint8_t *want = xmalloc(len);
    store_vec_seg_sketch(blob, h->n, (int)h->dim, want);
    int same = memcmp(want, sketch, len) == 0;
    free(want);
    return same;
}

void store_vside_check(store *st, void (*report)(void *ctx, const char *line), void *ctx)
{
    const char *id = index_id(st);
    seg_ref *l;
    size_t n;
    if (!id || list_segments(st, &l, &n) != 0)
        return;
    char *dir = store_vside_dir(st->path);
    char line[256];
    for (size_t i = 0; i < n; i++) {
        sqlite3_blob *b;
        uint8_t head[STORE_SEG_HEADER];
        size_t total;
        if (store_vec_blob_open(st, l[i].id, l[i].dim, &b, head, &total) != TROVE_OK) {
            sqlite3_blob_close(b);
            continue;   /* a damaged blob: the invariants name it */
        }
        vside_map m;
        uint8_t *all = NULL;
        if (store_vside_open(st, l[i].id, head, total, VSIDE_WHOLE, &m)) {
            all = blob_all(b, total);
            vside_header h;
            vside_header_parse(m.addr, VSIDE_HEADER, &h);
            if (all && (memcmp(all, m.base, total) != 0 || h.payload_hash != str_hash(all, total) ||
                        !sketches_match(&h, all, m.sketch))) {
                char *path = seg_path(dir, l[i].id);
                snprintf(line, sizeof line, "vector sidecar %s differs from its segment; removed "
                         "(searches read the index meanwhile, the next update writes it again)",
                         path);
                report(ctx, line);
                unlink(path);
                free(path);
            }
            store_vside_close(&m);
        }
        free(all);
        sqlite3_blob_close(b);
    }
    trove_errclear();
    free(dir);
    free(l);
}
