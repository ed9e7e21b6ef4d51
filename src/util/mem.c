#include "util/mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

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

#define HUGE_PAGE ((size_t)2 << 20)

void *mem_huge_map(size_t n)
{
#ifdef MADV_HUGEPAGE
    if (n < HUGE_PAGE)
        return NULL;
    /* 2 MB more, the ends trimmed: the pages start on a 2 MB boundary
     * (else the first and last 2 MB of the range stay in small pages) */
    size_t len = (n + 4095) & ~(size_t)4095, over = len + HUGE_PAGE;
    char *m = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *a = (char *)(((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (a > m)
        munmap(m, (size_t)(a - m));
    if (m + over > a + len)
        munmap(a + len, (size_t)(m + over - (a + len)));
    (void)madvise(a, len, MADV_HUGEPAGE); /* advice only: fine if refused */
    return a;
#else
    (void)n;
    return NULL;
#endif
}

void mem_huge_unmap(void *p, size_t n)
{
    if (p)
        munmap(p, n);
}

void mem_give_back(void)
{
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}
