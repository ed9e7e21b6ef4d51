#include "util/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die_oom(size_t n)
{
    fprintf(stderr, "trove: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die_oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        die_oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die_oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void xgrow(void *items_ptr, size_t *cap, size_t need, size_t size)
{
    void **items = items_ptr;
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) {
        if (ncap > ((size_t)-1) / 2 / size)
            die_oom(need * size);
        ncap *= 2;
    }
    *items = xrealloc(*items, ncap * size);
    *cap = ncap;
}

void xgrow_zero(void *items_ptr, size_t *cap, size_t need, size_t size)
{
    size_t old = *cap;
    xgrow(items_ptr, cap, need, size);
    if (*cap > old)
        memset(*(char **)items_ptr + old * size, 0, (*cap - old) * size);
}
