/* fsutil — small file-system helpers shared by modules. */
#ifndef TROVE_FSUTIL_H
#define TROVE_FSUTIL_H

#include <stddef.h>
#include <sys/stat.h>

#include "util/err.h"

/* Create `dir` and every missing parent (mode 0755). 0 or -1 with errno. */
int fs_mkdir_p(const char *dir);

/* Create every missing parent folder of the file `path`. */
int fs_mkdir_parents(const char *path);

/* The same with folders private to the user: each folder these create is
 * mode 0700 whatever the umask (existing ones are left as they are). */
int fs_mkdir_private(const char *dir);
int fs_mkdir_parents_private(const char *path);

/* Read a whole file into a malloc'd, NUL-terminated buffer (caller frees).
 * `size_hint` (e.g. from stat) sizes the first allocation; 0 is fine.
 * Errors name the path: TROVE_EACCES or TROVE_EIO. */
trove_err fs_read_file(const char *path, size_t size_hint, char **out, size_t *len);

/* When absolute path INNER lies strictly below absolute folder OUTER (both
 * without a trailing '/'; OUTER may be "/"): the relative rest of INNER;
 * else NULL. Pure string work, no file-system access. */
const char *fs_path_below(const char *outer, const char *inner);

/* Where ROOT/REL really is: its real path (every symlink followed) must lie
 * inside the real path of ROOT (or be ROOT). *real_out (caller frees; may be
 * NULL) is set whenever the path resolves, also on TROVE_EACCES, so callers
 * can name the target. Errors: TROVE_ENOENT (does not resolve), TROVE_EACCES
 * (outside ROOT), with a detail naming ROOT/REL. */
trove_err fs_path_inside(const char *root, const char *rel, char **real_out);
/* The same with ROOT's real path already known (root_real, from realpath()):
 * for a caller checking many paths of one root, one realpath() each. */
trove_err fs_path_inside_real(const char *root, const char *root_real, const char *rel,
                              char **real_out);

/* The one rule for every reader of a collection's files: ROOT/REL resolved
 * to its real path (every symlink followed) must be a regular file that lies
 * inside the real path of ROOT. On success *real_out (caller frees; may be
 * NULL) and *sb_out (may be NULL) describe the file. Errors, with a detail
 * naming ROOT/REL: TROVE_ENOENT (no such file), TROVE_EINVAL (not a regular
 * file), TROVE_EACCES (the real path leads outside ROOT). */
trove_err fs_resolve_inside(const char *root, const char *rel, char **real_out, struct stat *sb_out);

/* fs_resolve_inside(), then read the file (opened without following a
 * symlink swapped in since). max_bytes > 0: a larger file is TROVE_ERANGE. */
trove_err fs_read_inside(const char *root, const char *rel, size_t max_bytes, char **out,
                         size_t *len);

/* A per-user path: $OVERRIDE_ENV if set and non-empty, else
 * $XDG_ENV/LEAF, else $HOME/HOME_SUB/LEAF (HOME unset: "./HOME_SUB/LEAF").
 * E.g. ("TROVE_INDEX", "XDG_CACHE_HOME", ".cache", "trove/index.db").
 * override_env may be NULL. Caller frees. */
char *fs_xdg_path(const char *override_env, const char *xdg_env, const char *home_sub,
                  const char *leaf);

/* The folder of this process's executable (where data files installed
 * beside the binary are looked for), or NULL when it cannot be read.
 * Caller frees. */
char *fs_exe_dir(void);

/* Where a data file trove ships (a dictionary) is: $ENV when set and not
 * empty; else NAME beside the executable, or in ../share/trove/ from it when
 * only that one exists (an installed trove); else NAME beside the
 * executable, which the caller's open then reports missing. Caller frees. */
char *fs_data_file(const char *env, const char *name);

/* Write all LEN bytes of BUF to FD, again after EINTR and short writes;
 * 0 on success, -1 (errno set) otherwise. */
int fs_write_all(int fd, const void *buf, size_t len);

/* One piece of a file fs_replace_file() writes. */
typedef struct fs_part {
    const void *data;
    size_t len;
} fs_part;

#define FS_REPLACE_SYNC 1u    /* fsync the new file before it takes PATH's place */
#define FS_REPLACE_MKDIR 2u   /* create PATH's missing parent folders first */

/* Replace PATH in one step, so a reader sees the old file or the whole new
 * one: the N parts, in order, go to a temporary file TMP (NULL: "PATH.PID.tmp"
 * beside it; a folder's owner that sweeps its own leftovers names them),
 * created with MODE (the umask applies), which is then renamed over PATH.
 * On failure the temporary is removed, PATH is as it was, and the error
 * (TROVE_EIO) names the file and the reason. */
trove_err fs_replace_file(const char *path, const char *tmp, const fs_part *parts, size_t n,
                          mode_t mode, unsigned flags);

/* Append "PATH=DEV:INO:SIZE:MTIME_NS;" (or "-;" when stat() fails) to b: a
 * file's identity for fingerprints of what a result depends on (the
 * tokenizer's stamp, text/tok.h), one stat() and no read. A missing file is
 * named by its place in the fingerprint, not its path: an absent
 * $HOME/.mecabrc is the same nothing under every HOME. */
struct tbuf;
void fs_stamp_append(struct tbuf *b, const char *path);

#endif
