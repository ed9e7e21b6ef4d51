#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/mem.h"

int fs_mkdir_p(const char *dir)
{
    char *tmp = xstrdup(dir);
    int rc = 0;
    for (char *p = tmp + 1; *p && rc == 0; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            rc = -1;
        *p = '/';
    }
    if (rc == 0 && mkdir(tmp, 0755) != 0 && errno != EEXIST)
        rc = -1;
    free(tmp);
    return rc;
}

int fs_mkdir_parents(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = fs_mkdir_p(dir);
    }
    free(dir);
    return rc;
}

trove_err fs_read_file(const char *path, size_t size_hint, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return trove_fail(errno == EACCES ? TROVE_EACCES : TROVE_EIO, "%s: %s", path, strerror(errno));
    size_t cap = size_hint ? size_hint + 1 : 4096, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            free(buf);
            return trove_fail(e == EISDIR ? TROVE_EINVAL : TROVE_EIO, "%s: %s", path, strerror(e));
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return TROVE_OK;
}
