/* fingerprint — see fingerprint.h. */
#include "embed/fingerprint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

#define FP_EDGE (64u * 1024u)  /* bytes hashed at each end */
#define FP_WIN 4096u           /* bytes per sampled window */
#define FP_NWIN 64             /* windows spread over the file */
#define FP_WHOLE (1u << 20)    /* files below this are hashed whole */

#define MEMO_MAGIC "TRVFPM1\n"
#define MEMO_MAX 4096          /* bytes of a memo file, at most */
#define MEMO_RACY 1.0          /* seconds: see memo_trusted() */

/* What went in, in order: the memo's key, and the recipe replayed on a
 * miss. Records: 'S' u64 length + bytes; 'I' i64; 'F' a file's identity
 * (its path is the next of paths[]); 'K' at the end: dim, then kind. */
struct efp {
    tbuf key;
    char **paths;
    size_t n_paths, cap_paths;
};

typedef struct file_ident {
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
} file_ident;

static file_ident ident_of(const struct stat *st)
{
    return (file_ident){(uint64_t)st->st_dev, (uint64_t)st->st_ino, (uint64_t)st->st_size,
                        (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
                        (int64_t)st->st_ctim.tv_sec, (int64_t)st->st_ctim.tv_nsec};
}

efp *efp_new(void)
{
    return xcalloc(1, sizeof(efp));
}

void efp_free(efp *f)
{
    if (!f)
        return;
    tbuf_free(&f->key);
    for (size_t i = 0; i < f->n_paths; i++)
        free(f->paths[i]);
    free(f->paths);
    free(f);
}

static void key_rec(efp *f, char tag, const void *p, size_t n)
{
    tbuf_putc(&f->key, tag);
    tbuf_append(&f->key, p, n);
}

void efp_add_i64(efp *f, int64_t v)
{
    key_rec(f, 'I', &v, sizeof v);
}

void efp_add_str(efp *f, const char *s)
{
    int64_t n = s ? (int64_t)strlen(s) : -1;
    key_rec(f, 'S', &n, sizeof n);
    if (s)
        tbuf_append(&f->key, s, (size_t)n);
}

trove_err efp_add_file(efp *f, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return trove_fail(TROVE_EIO, "%s: %s", path, strerror(errno));
    file_ident id = ident_of(&st);
    key_rec(f, 'F', &id, sizeof id);
    xgrow(&f->paths, &f->cap_paths, f->n_paths + 1, sizeof *f->paths);
    f->paths[f->n_paths++] = xstrdup(path);
    return TROVE_OK;
}

/* ---- the hash itself (a memo miss) ---- */

/* Offsets and lengths of the sampled ranges of a file of `size` bytes:
 * calls take(off, len) in increasing offset order. */
typedef int (*fp_take)(void *ctx, uint64_t off, size_t len);

static int sample(uint64_t size, fp_take take, void *ctx)
{
    if (size < FP_WHOLE) {
        for (uint64_t off = 0; off < size; off += FP_EDGE) {
            size_t n = size - off < FP_EDGE ? (size_t)(size - off) : FP_EDGE;
            if (take(ctx, off, n))
                return -1;
        }
        return 0;
    }
    if (take(ctx, 0, FP_EDGE))
        return -1;
    uint64_t span = size - 2 * (uint64_t)FP_EDGE - FP_WIN;
    for (uint64_t i = 0; i < FP_NWIN; i++)
        if (take(ctx, FP_EDGE + span * i / (FP_NWIN - 1), FP_WIN))
            return -1;
    return take(ctx, size - FP_EDGE, FP_EDGE);
}

typedef struct fd_ctx {
    XXH3_state_t *st;
    int fd;
    unsigned char buf[FP_EDGE];
} fd_ctx;

static int take_fd(void *ctx, uint64_t off, size_t len)
{
    fd_ctx *c = ctx;
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(c->fd, c->buf + got, len - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    XXH3_128bits_update(c->st, c->buf, len);
    return 0;
}

/* A file's size and sampled content into st. *same: the file still has
 * the identity efp_add_file saw. */
static trove_err hash_file(XXH3_state_t *st, const char *path, const file_ident *want, int *same)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return trove_fail(TROVE_EIO, "%s: %s", path, strerror(e));
    }
    file_ident got = ident_of(&sb);
    if (memcmp(&got, want, sizeof got) != 0)
        *same = 0;
    int64_t size = (int64_t)sb.st_size;
    XXH3_128bits_update(st, &size, sizeof size);
    fd_ctx *c = xmalloc(sizeof *c);
    c->st = st;
    c->fd = fd;
    int bad = sample((uint64_t)sb.st_size, take_fd, c);
    free(c);
    close(fd);
    if (bad)
        return trove_fail(TROVE_EIO, "%s: read failed while fingerprinting (file changed?)", path);
    return TROVE_OK;
}

/* Replay the key's records into one XXH3-128: strings as their length
 * then bytes (so ("ab", "c") and ("a", "bc") differ), files as their size
 * then sampled content. *same as in hash_file, for every file. */
static trove_err compute(const efp *f, XXH128_hash_t *out, int *same)
{
    XXH3_state_t *st = XXH3_createState();
    if (!st) {
        fputs("trove: out of memory\n", stderr);
        abort();
    }
    XXH3_128bits_reset(st);
    *same = 1;
    size_t file = 0;
    trove_err e = TROVE_OK;
    for (size_t i = 0; !e && i < f->key.len && f->key.data[i] != 'K';) {
        char tag = f->key.data[i++];
        if (tag == 'F') {
            file_ident id;
            memcpy(&id, f->key.data + i, sizeof id);
            i += sizeof id;
            e = hash_file(st, f->paths[file++], &id, same);
        } else {
            int64_t v;
            memcpy(&v, f->key.data + i, sizeof v);
            i += sizeof v;
            XXH3_128bits_update(st, &v, sizeof v);
            if (tag == 'S' && v > 0) {
                XXH3_128bits_update(st, f->key.data + i, (size_t)v);
                i += (size_t)v;
            }
        }
    }
    *out = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return e;
}

/* ---- the memo ----
 *
 * Hashing samples of every file costs ~130 reads per model open (1.4 ms of
 * a cold `trove model embed` on a loaded box), and a model's files rarely
 * change: the finished string is kept in a small file named by a hash of
 * the key, under $XDG_CACHE_HOME/trove/fingerprints/. A memo holds the
 * whole key and is used only when it matches byte for byte: the same
 * files (device, inode, size, mtime and ctime: any write to a file moves
 * its ctime, which no user call can set back) and the same parameters. So
 * the value is always the one the files' content gives; a copied model is
 * a miss that computes the same string.
 *
 * A file written in the same clock tick as the memo's reads could keep its
 * ctime (the kernel's file clock is coarse): like git's "racy" entries, a
 * memo is trusted only for files whose ctime is more than MEMO_RACY
 * seconds older than the moment its hashing began. A fresh model is
 * hashed again until then. */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *memo_path(const efp *f)
{
    char *dir = fs_xdg_path(NULL, "XDG_CACHE_HOME", ".cache", "trove/fingerprints");
    tbuf b = {0};
    tbuf_printf(&b, "%s/%016llx.fp", dir,
                (unsigned long long)XXH3_64bits(f->key.data, f->key.len));
    free(dir);
    return tbuf_detach(&b);
}

/* Every file's ctime lies more than MEMO_RACY before `began`. */
static int memo_trusted(const efp *f, double began)
{
    for (size_t i = 0; i < f->key.len && f->key.data[i] != 'K';) {
        char tag = f->key.data[i++];
        if (tag == 'F') {
            file_ident id;
            memcpy(&id, f->key.data + i, sizeof id);
            i += sizeof id;
            if ((double)id.ctime_s + (double)id.ctime_ns * 1e-9 + MEMO_RACY >= began)
                return 0;
        } else {
            int64_t v;
            memcpy(&v, f->key.data + i, sizeof v);
            i += sizeof v + (tag == 'S' && v > 0 ? (size_t)v : 0);
        }
    }
    return 1;
}

/* Layout: MEMO_MAGIC, double began, u64 key length, key, fingerprint. */
static char *memo_load(const efp *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *buf = xmalloc(MEMO_MAX + 1);
    ssize_t n = read(fd, buf, MEMO_MAX + 1);
    close(fd);
    size_t head = 8 + sizeof(double) + 8;
    uint64_t klen = 0;
    double began = 0;
    if (n > (ssize_t)head && n <= MEMO_MAX) {
        memcpy(&began, buf + 8, sizeof began);
        memcpy(&klen, buf + 8 + sizeof began, 8);
    }
    char *fp = NULL;
    if (n > (ssize_t)head && n <= MEMO_MAX && memcmp(buf, MEMO_MAGIC, 8) == 0 &&
        klen == f->key.len && klen < (uint64_t)n - head &&
        memcmp(buf + head, f->key.data, f->key.len) == 0 && memo_trusted(f, began)) {
        const char *s = buf + head + klen;
        size_t len = (size_t)n - head - (size_t)klen;
        int printable = len < 128;
        for (size_t i = 0; printable && i < len; i++)
            printable = s[i] > ' ' && s[i] < 127;
        if (printable)
            fp = xstrndup(s, len);
    }
    free(buf);
    return fp;
}

/* Best effort: an unwritable cache only costs the reads. */
static void memo_store(const efp *f, const char *path, double began, const char *fp)
{
    tbuf b = {0};
    uint64_t klen = f->key.len;
    tbuf_append(&b, MEMO_MAGIC, 8);
    tbuf_append(&b, &began, sizeof began);
    tbuf_append(&b, &klen, sizeof klen);
    tbuf_append(&b, f->key.data, f->key.len);
    tbuf_puts(&b, fp);
    if (b.len <= MEMO_MAX)
        (void)fs_replace_file(path, NULL, &(fs_part){b.data, b.len}, 1, 0644, FS_REPLACE_MKDIR);
    tbuf_free(&b);
}

trove_err efp_finish(efp *f, const char *kind, int64_t dim, char **out)
{
    *out = NULL;
    key_rec(f, 'K', &dim, sizeof dim);   /* last: compute() stops here */
    tbuf_puts(&f->key, kind);
    char *path = memo_path(f);
    char *fp = memo_load(f, path);
    trove_err e = TROVE_OK;
    if (!fp) {
        double began = now_seconds();
        XXH128_hash_t h;
        int same;
        e = compute(f, &h, &same);
        if (!e) {
            char buf[128];
            snprintf(buf, sizeof buf, "%s:%lld:%016llx%016llx", kind, (long long)dim,
                     (unsigned long long)h.high64, (unsigned long long)h.low64);
            fp = xstrdup(buf);
            if (same)
                memo_store(f, path, began, fp);
        }
    }
    free(path);
    efp_free(f);
    *out = fp;
    return e;
}
