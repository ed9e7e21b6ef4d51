/* err — the one error enum of trove, and a per-thread detail message.
 *
 * Functions that can fail return trove_err (TROVE_OK == 0). When they fail
 * they may record a human-readable detail naming the path, line or value at
 * fault with trove_fail(); the caller reads it back with trove_errmsg(). The
 * detail buffer is thread-local and owned by this module; it stays valid
 * until the next trove_fail() on the same thread. */
#ifndef TROVE_ERR_H
#define TROVE_ERR_H

typedef enum trove_err {
    TROVE_OK = 0,
    TROVE_ENOMEM,       /* out of memory */
    TROVE_EIO,          /* read/write/stat failed */
    TROVE_ENOENT,       /* file, collection or document not found */
    TROVE_EEXIST,       /* already exists */
    TROVE_EPARSE,       /* malformed input (file, query, config) */
    TROVE_EUSAGE,       /* bad command-line usage */
    TROVE_ESQL,         /* SQLite error */
    TROVE_EBUSY,        /* index locked by another process */
    TROVE_ECORRUPT,     /* index or model file is corrupt */
    TROVE_EUNSUPPORTED, /* unsupported format, version, type */
    TROVE_ERANGE,       /* value or size out of range */
    TROVE_EINVAL,       /* invalid argument */
    TROVE_EACCES,       /* permission denied or path escapes a collection */
    TROVE_EINTR,        /* interrupted by the user (Ctrl-C) */
    TROVE_ERR_COUNT
} trove_err;

/* Static description of a code, like strerror(). Never NULL. */
const char *trove_strerror(trove_err code);

/* Record a printf-style detail for the current thread and return `code`, so
 * call sites read: return trove_fail(TROVE_EIO, "%s: %s", path, strerror(e)); */
trove_err trove_fail(trove_err code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Detail of the last trove_fail() on this thread, or "" if none. */
const char *trove_errmsg(void);

/* Forget the detail (start of a new operation). */
void trove_errclear(void);

#endif
