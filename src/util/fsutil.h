/* fsutil — small file-system helpers shared by modules. */
#ifndef TROVE_FSUTIL_H
#define TROVE_FSUTIL_H

/* Create `dir` and every missing parent (mode 0755). 0 or -1 with errno. */
int fs_mkdir_p(const char *dir);

/* Create every missing parent folder of the file `path`. */
int fs_mkdir_parents(const char *path);

#endif
