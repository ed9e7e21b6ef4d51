#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char errbuf[1024];

static const char *const messages[TROVE_ERR_COUNT] = {
    [TROVE_OK] = "success",
    [TROVE_ENOMEM] = "out of memory",
    [TROVE_EIO] = "input/output error",
    [TROVE_ENOENT] = "not found",
    [TROVE_EEXIST] = "already exists",
    [TROVE_EPARSE] = "parse error",
    [TROVE_EUSAGE] = "usage error",
    [TROVE_ESQL] = "database error",
    [TROVE_EBUSY] = "index is locked by another process",
    [TROVE_ECORRUPT] = "corrupt file",
    [TROVE_EUNSUPPORTED] = "unsupported",
    [TROVE_ERANGE] = "out of range",
    [TROVE_EINVAL] = "invalid argument",
    [TROVE_EACCES] = "permission denied",
    [TROVE_EINTR] = "interrupted",
};

const char *trove_strerror(trove_err code)
{
    if ((unsigned)code >= TROVE_ERR_COUNT || !messages[code])
        return "unknown error";
    return messages[code];
}

trove_err trove_fail(trove_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return code;
}

const char *trove_errmsg(void)
{
    return errbuf;
}

void trove_errclear(void)
{
    errbuf[0] = '\0';
}
