/* fmap — see fmap.h. */
#include "util/fmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static trove_err fail(trove_err code, const char *what, const char *path, const char *why)
{
    if (what)
        return trove_fail(code, "%s %s: %s", what, path, why);
    return trove_fail(code, "%s: %s", path, why);
}

trove_err fmap_open(const char *path, const char *what, fmap *out)
{
    out->data = NULL;
    out->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return fail(err == ENOENT ? TROVE_ENOENT : err == EACCES ? TROVE_EACCES : TROVE_EIO,
                    what, path, strerror(err));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return fail(TROVE_EIO, what, path, strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return fail(TROVE_EIO, what, path, "not a regular file");
    }
    size_t len = (size_t)sb.st_size;
    void *m = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    int err = errno;
    close(fd);
    if (m == MAP_FAILED) {
        char why[128];
        snprintf(why, sizeof why, "mmap: %s", strerror(err));
        return fail(TROVE_EIO, what, path, why);
    }
    out->data = m;
    out->len = len;
    return TROVE_OK;
}

void fmap_close(fmap *m)
{
    if (m->data)
        munmap((void *)m->data, m->len);
    m->data = NULL;
    m->len = 0;
}
