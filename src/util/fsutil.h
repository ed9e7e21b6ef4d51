/* fsutil — small file-system helpers shared by modules. */
#ifndef TROVE_FSUTIL_H
#define TROVE_FSUTIL_H

#include <stddef.h>

#include "util/err.h"

/* Create `dir` and every missing parent (mode 0755). 0 or -1 with errno. */
int fs_mkdir_p(const char *dir);

/* Create every missing parent folder of the file `path`. */
int fs_mkdir_parents(const char *path);

/* Read a whole file into a malloc'd, NUL-terminated buffer (caller frees).
 * `size_hint` (e.g. from stat) sizes the first allocation; 0 is fine.
 * Errors name the path: TROVE_EACCES or TROVE_EIO. */
trove_err fs_read_file(const char *path, size_t size_hint, char **out, size_t *len);

#endif
