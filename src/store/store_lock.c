#include "store/store_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

struct store_lock {
    int fd;
};

char *store_lock_path(const char *index_path)
{
    /* One file per index however it is named (a symlink, a relative path) */
    char real[PATH_MAX];
    tbuf b = {0};
    tbuf_printf(&b, "%s-lock", realpath(index_path, real) ? real : index_path);
    return tbuf_detach(&b);
}

static int set_lock(int fd, short type, int cmd, struct flock *fl)
{
    memset(fl, 0, sizeof *fl);
    fl->l_type = type;
    fl->l_whence = SEEK_SET;   /* l_start = l_len = 0: the whole file */
    return fcntl(fd, cmd, fl);
}

/* "pid N\nsocket PATH\n" as the holder wrote it (bounded: a file of
 * someone else's may hold anything). */
static void read_owner(int fd, long *pid, char **socket)
{
    char buf[4200];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    *pid = 0;
    *socket = NULL;
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *line = buf, *nl;
    for (; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl)
            break;   /* a line not finished yet: not trusted */
        *nl = '\0';
        if (strncmp(line, "pid ", 4) == 0) {
            char *end;
            long v = strtol(line + 4, &end, 10);
            if (*end == '\0' && v > 0)
                *pid = v;
        } else if (strncmp(line, "socket /", 8) == 0 && !*socket) {
            *socket = xstrdup(line + 7);
        }
    }
}

int store_lock_holder(const char *index_path, long *pid, char **socket)
{
    *pid = 0;
    *socket = NULL;
    char *path = store_lock_path(index_path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    free(path);
    if (fd < 0)
        return 0;
    struct flock fl;
    int held = set_lock(fd, F_WRLCK, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    if (held)
        read_owner(fd, pid, socket);
    close(fd);
    return held;
}

trove_err store_lock_take(const char *index_path, const char *socket, store_lock **out)
{
    *out = NULL;
    char *path = store_lock_path(index_path);
    fs_mkdir_parents_private(path);   /* a daemon may start before the first update */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        trove_err rc = trove_fail(TROVE_EIO, "cannot open the index lock %s: %s", path,
                                  strerror(errno));
        free(path);
        return rc;
    }
    struct flock fl;
    if (set_lock(fd, F_WRLCK, F_OFD_SETLK, &fl) != 0) {
        int e = errno;
        long pid;
        char *sock;
        read_owner(fd, &pid, &sock);
        close(fd);
        trove_err rc;
        if (e == EAGAIN || e == EACCES) {
            char who[32] = "another process";
            if (pid > 0)
                snprintf(who, sizeof who, "process %ld", pid);
            rc = trove_fail(TROVE_EEXIST, "a daemon (%s) already serves %s%s%s (lock %s)", who,
                            index_path, sock ? " on " : "", sock ? sock : "", path);
        } else {
            rc = trove_fail(TROVE_EIO, "cannot lock %s: %s", path, strerror(e));
        }
        free(sock);
        free(path);
        return rc;
    }
    free(path);
    fchmod(fd, 0600);   /* a file left by an older trove, whatever the umask was */
    tbuf b = {0};
    tbuf_printf(&b, "pid %ld\n", (long)getpid());
    if (socket)
        tbuf_printf(&b, "socket %s\n", socket);
    /* Best effort: the lock itself is what counts; the text only names the
     * holder. */
    if (ftruncate(fd, 0) != 0 || pwrite(fd, b.data, b.len, 0) != (ssize_t)b.len)
        (void)0;
    tbuf_free(&b);
    store_lock *l = xmalloc(sizeof *l);
    l->fd = fd;
    *out = l;
    return TROVE_OK;
}

void store_lock_release(store_lock *l)
{
    if (!l)
        return;
    /* Emptied first, so a reader never names a process that has gone; the
     * file stays (removing it could race a new holder's open). */
    if (ftruncate(l->fd, 0) != 0)
        (void)0;
    close(l->fd);
    free(l);
}
