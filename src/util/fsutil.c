#include "util/fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
