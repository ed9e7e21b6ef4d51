/* Fuzz glob_match and the .gitignore parser.
 *
 * Input: pattern, a NUL byte, then the path (no NUL: the whole input is the
 * pattern and also the path). Checks that nothing crashes or reads out of
 * bounds, that a pattern free of special characters matches exactly itself,
 * that the compare fast paths agree with the NFA, and that gitignore
 * parsing of the same bytes is safe. The matcher is
 * linear by construction, so long adversarial inputs must stay fast. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/gitignore.h"
#include "fs/glob.h"
#include "fs/walk.h"
#include "util/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_special(const char *s)
{
    return strpbrk(s, "*?[{\\") != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    char *pat = xstrndup((const char *)data, plen);
    char *path = nul ? xstrndup((const char *)nul + 1, size - plen - 1) : xstrdup(pat);

    int m = glob_match(pat, path);
    if (m != 0 && m != 1)
        abort();
    if (!has_special(pat) && m != (strcmp(pat, path) == 0))
        abort();
    if (!has_special(pat) && !glob_match(pat, pat))
        abort();

    /* The compare fast paths must agree with the NFA. */
    size_t pathlen = strlen(path);
    for (int flags = 0; flags <= GLOB_NOBRACE; flags++) {
        tglob *fast = tglob_compile((const char *)data, plen, flags);
        tglob *nfa = tglob_compile((const char *)data, plen, flags | GLOB_NOFAST);
        if (tglob_match(fast, path, pathlen) != tglob_match(nfa, path, pathlen))
            abort();
        tglob_free(fast);
        tglob_free(nfa);
    }

    gi_frame *f = gi_frame_new(NULL, 0, (const char *)data, size);
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t base = slash ? (size_t)(slash - path) + 1 : 0;
    (void)gi_ignored(f, path, len, base, 0);
    (void)gi_ignored(f, path, len, base, 1);
    gi_frame_unref(f);

    free(pat);
    free(path);
    return 0;
}
