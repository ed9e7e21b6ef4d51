/* fingerprint — see fingerprint.h. */
#include "embed/fingerprint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/mem.h"

#define FP_EDGE (64u * 1024u)  /* bytes hashed at each end */
#define FP_WIN 4096u           /* bytes per sampled window */
#define FP_NWIN 64             /* windows spread over the file */
#define FP_WHOLE (1u << 20)    /* files below this are hashed whole */

struct efp {
    XXH3_state_t *st;
};

efp *efp_new(void)
{
    efp *f = xcalloc(1, sizeof *f);
    f->st = XXH3_createState();
    if (!f->st) {
        fputs("trove: out of memory\n", stderr);
        abort();
    }
    XXH3_128bits_reset(f->st);
    return f;
}

void efp_free(efp *f)
{
    if (!f)
        return;
    XXH3_freeState(f->st);
    free(f);
}

void efp_add_i64(efp *f, int64_t v)
{
    XXH3_128bits_update(f->st, &v, sizeof v);
}

void efp_add_str(efp *f, const char *s)
{
    /* length first, so ("ab", "c") and ("a", "bc") differ */
    efp_add_i64(f, s ? (int64_t)strlen(s) : -1);
    if (s)
        XXH3_128bits_update(f->st, s, strlen(s));
}

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

typedef struct mem_ctx {
    efp *f;
    const unsigned char *p;
} mem_ctx;

static int take_mem(void *ctx, uint64_t off, size_t len)
{
    mem_ctx *m = ctx;
    XXH3_128bits_update(m->f->st, m->p + off, len);
    return 0;
}

void efp_add_mem(efp *f, const void *data, size_t size)
{
    efp_add_i64(f, (int64_t)size);
    mem_ctx m = {f, data};
    sample(size, take_mem, &m);
}

typedef struct fd_ctx {
    efp *f;
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
    XXH3_128bits_update(c->f->st, c->buf, len);
    return 0;
}

trove_err efp_add_file(efp *f, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return trove_fail(TROVE_EIO, "%s: %s", path, strerror(e));
    }
    efp_add_i64(f, (int64_t)st.st_size);
    fd_ctx *c = xmalloc(sizeof *c);
    c->f = f;
    c->fd = fd;
    int bad = sample((uint64_t)st.st_size, take_fd, c);
    free(c);
    close(fd);
    if (bad)
        return trove_fail(TROVE_EIO, "%s: read failed while fingerprinting (file changed?)", path);
    return TROVE_OK;
}

char *efp_finish(efp *f, const char *kind, int64_t dim)
{
    XXH128_hash_t h = XXH3_128bits_digest(f->st);
    efp_free(f);
    char buf[128];
    snprintf(buf, sizeof buf, "%s:%lld:%016llx%016llx", kind, (long long)dim,
             (unsigned long long)h.high64, (unsigned long long)h.low64);
    return xstrdup(buf);
}
