/* store_lock — one daemon per index, whatever socket folder it was started
 * with: the daemon holds a lock on "<index>-lock" (beside the index, mode
 * 0600) for its whole life, with its pid and socket written in the file, so
 * a second daemon is refused naming the first, and a client whose own
 * socket folder differs ($XDG_RUNTIME_DIR) still finds the daemon that
 * serves the index. The lock is an open-file-description lock (Linux
 * F_OFD_SETLK): it goes when the holder exits, however it exits, and
 * looking at it (store_lock_holder) never takes or disturbs it.
 *
 * Ownership: a store_lock is created by store_lock_take and freed (the lock
 * released) by store_lock_release; strings returned are the caller's. */
#ifndef TROVE_STORE_LOCK_H
#define TROVE_STORE_LOCK_H

#include "util/err.h"

typedef struct store_lock store_lock;

/* The lock file of the index at index_path: beside the file the path
 * resolves to, whatever names it (caller frees). */
char *store_lock_path(const char *index_path);

/* Take the lock of the index and record this process's pid and `socket`
 * (may be NULL) in it. TROVE_EEXIST when another process holds it (the
 * message names its pid and socket); TROVE_EIO when the file cannot be
 * made. */
trove_err store_lock_take(const char *index_path, const char *socket, store_lock **out);
void store_lock_release(store_lock *l);

/* Does another process hold the lock? 1 with *pid (0 when not known yet)
 * and *socket (caller frees; NULL when not recorded), else 0. */
int store_lock_holder(const char *index_path, long *pid, char **socket);

#endif
