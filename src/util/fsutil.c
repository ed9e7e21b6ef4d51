#include "util/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/mem.h"

/* One component: made with `mode` exactly (the umask notwithstanding) when
 * this call creates it; an existing one is left as it is. */
static int mkdir_one(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0)
        return mode == 0755 ? 0 : chmod(path, mode);
    return errno == EEXIST ? 0 : -1;
}

static int mkdir_p_mode(const char *dir, mode_t mode)
{
    char *tmp = xstrdup(dir);
    int rc = 0;
    for (char *p = tmp + 1; *p && rc == 0; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        rc = mkdir_one(tmp, mode);
        *p = '/';
    }
    if (rc == 0)
        rc = mkdir_one(tmp, mode);
    free(tmp);
    return rc;
}

int fs_mkdir_p(const char *dir)
{
    return mkdir_p_mode(dir, 0755);
}

int fs_mkdir_private(const char *dir)
{
    return mkdir_p_mode(dir, 0700);
}

static int mkdir_parents_mode(const char *path, mode_t mode)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = mkdir_p_mode(dir, mode);
    }
    free(dir);
    return rc;
}

int fs_mkdir_parents(const char *path)
{
    return mkdir_parents_mode(path, 0755);
}

int fs_mkdir_parents_private(const char *path)
{
    return mkdir_parents_mode(path, 0700);
}

/* Read all of fd (closed here) into *out. */
static trove_err read_fd(int fd, const char *path, size_t size_hint, char **out, size_t *len)
{
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

trove_err fs_read_file(const char *path, size_t size_hint, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return trove_fail(errno == EACCES ? TROVE_EACCES : TROVE_EIO, "%s: %s", path, strerror(errno));
    return read_fd(fd, path, size_hint, out, len);
}

char *fs_xdg_path(const char *override_env, const char *xdg_env, const char *home_sub,
                  const char *leaf)
{
    const char *env = override_env ? getenv(override_env) : NULL;
    if (env && *env)
        return xstrdup(env);
    tbuf b = {0};
    const char *xdg = getenv(xdg_env);
    if (xdg && *xdg) {
        tbuf_printf(&b, "%s/%s", xdg, leaf);
    } else {
        const char *home = getenv("HOME");
        tbuf_printf(&b, "%s/%s/%s", home && *home ? home : ".", home_sub, leaf);
    }
    return tbuf_detach(&b);
}

const char *fs_path_below(const char *outer, const char *inner)
{
    size_t ol = strlen(outer);
    if (ol == 1 && outer[0] == '/')
        return inner[0] == '/' && inner[1] ? inner + 1 : NULL;
    if (strncmp(inner, outer, ol) == 0 && inner[ol] == '/' && inner[ol + 1])
        return inner + ol + 1;
    return NULL;
}

/* 1 when the real path `real` is `root` itself or below it. */
static int path_within(const char *real, const char *root)
{
    size_t rl = strlen(root);
    if (rl == 1 && root[0] == '/')
        return 1;
    return strncmp(real, root, rl) == 0 && (real[rl] == '/' || real[rl] == '\0');
}

static trove_err path_inside(const char *root, const char *root_real, const char *rel,
                             char **real_out)
{
    if (real_out)
        *real_out = NULL;
    tbuf full = {0};
    tbuf_printf(&full, "%s/%s", root, rel);
    char real[PATH_MAX], resolved_root[PATH_MAX];
    trove_err rc = TROVE_OK;
    if (!realpath(full.data, real)) {
        rc = trove_fail(TROVE_ENOENT, "%s: %s", full.data,
                        errno == ENOENT ? "no such file" : strerror(errno));
    } else {
        if (real_out)
            *real_out = xstrdup(real);
        if (!root_real)
            root_real = realpath(root, resolved_root);
        if (!root_real || !path_within(real, root_real))
            rc = trove_fail(TROVE_EACCES, "%s: refused, its real path %s lies outside the "
                            "collection folder %s", full.data, real, root);
    }
    tbuf_free(&full);
    return rc;
}

trove_err fs_path_inside(const char *root, const char *rel, char **real_out)
{
    return path_inside(root, NULL, rel, real_out);
}

trove_err fs_path_inside_real(const char *root, const char *root_real, const char *rel,
                              char **real_out)
{
    return path_inside(root, root_real, rel, real_out);
}

trove_err fs_resolve_inside(const char *root, const char *rel, char **real_out, struct stat *sb_out)
{
    char *real;
    trove_err rc = fs_path_inside(root, rel, &real);
    struct stat sb;
    if (rc == TROVE_OK && (stat(real, &sb) != 0 || !S_ISREG(sb.st_mode)))
        rc = trove_fail(TROVE_EINVAL, "%s/%s: not a file", root, rel);
    if (rc == TROVE_OK && sb_out)
        *sb_out = sb;
    if (rc == TROVE_OK && real_out)
        *real_out = real;
    else
        free(real);
    if (rc && real_out)
        *real_out = NULL;
    return rc;
}

trove_err fs_read_inside(const char *root, const char *rel, size_t max_bytes, char **out,
                         size_t *len)
{
    *out = NULL;
    *len = 0;
    char *real;
    struct stat sb;
    trove_err rc = fs_resolve_inside(root, rel, &real, &sb);
    if (rc)
        return rc;
    if (max_bytes && (size_t)sb.st_size > max_bytes) {
        rc = trove_fail(TROVE_ERANGE, "%s/%s: %lld bytes, over the %zu-byte limit", root, rel,
                        (long long)sb.st_size, max_bytes);
    } else {
        int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            rc = trove_fail(errno == EACCES ? TROVE_EACCES : TROVE_EIO, "%s/%s: %s", root, rel,
                            strerror(errno));
        } else {
            rc = read_fd(fd, real, (size_t)sb.st_size, out, len);
        }
    }
    free(real);
    return rc;
}

char *fs_exe_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return xstrdup(buf);
}

char *fs_data_file(const char *env, const char *name)
{
    const char *set = getenv(env);
    if (set && *set)
        return xstrdup(set);
    char *dir = fs_exe_dir();
    if (!dir)
        return xstrdup(name);
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", dir, name);
    if (access(tbuf_cstr(&b), F_OK) != 0) {
        tbuf alt = {0};
        tbuf_printf(&alt, "%s/../share/trove/%s", dir, name);
        if (access(tbuf_cstr(&alt), F_OK) == 0) {
            tbuf_free(&b);
            b = alt;
        } else {
            tbuf_free(&alt);
        }
    }
    free(dir);
    return tbuf_detach(&b);
}

int fs_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int write_parts(const char *tmp, const fs_part *parts, size_t n, mode_t mode,
                       unsigned flags)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -1;
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = fs_write_all(fd, parts[i].data, parts[i].len) == 0;
    if (ok && (flags & FS_REPLACE_SYNC))
        ok = fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (!ok && saved)
        errno = saved;
    return ok ? 0 : -1;
}

trove_err fs_replace_file(const char *path, const char *tmp, const fs_part *parts, size_t n,
                          mode_t mode, unsigned flags)
{
    if ((flags & FS_REPLACE_MKDIR) && fs_mkdir_parents(path) != 0)
        return trove_fail(TROVE_EIO, "cannot create the folder of %s: %s", path, strerror(errno));
    tbuf own = {0};
    if (!tmp) {
        tbuf_printf(&own, "%s.%ld.tmp", path, (long)getpid());
        tmp = tbuf_cstr(&own);
    }
    trove_err rc = TROVE_OK;
    errno = 0;
    if (write_parts(tmp, parts, n, mode, flags) != 0)
        rc = trove_fail(TROVE_EIO, "cannot write %s: %s", tmp, strerror(errno ? errno : EIO));
    else if (rename(tmp, path) != 0)
        rc = trove_fail(TROVE_EIO, "cannot replace %s: %s", path, strerror(errno));
    if (rc)
        unlink(tmp);
    tbuf_free(&own);
    return rc;
}

void fs_stamp_append(tbuf *b, const char *path)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) {
        tbuf_puts(b, "-;");
        return;
    }
    tbuf_printf(b, "%s=%llu:%llu:%lld:%lld.%09ld;", path, (unsigned long long)sb.st_dev,
                (unsigned long long)sb.st_ino, (long long)sb.st_size,
                (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
}
