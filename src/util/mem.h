/* mem — allocation that cannot return NULL.
 *
 * trove is a command-line tool and a daemon; on allocation failure there is
 * nothing sensible to do but report and exit, so every module allocates
 * through these wrappers (as git and Redis do) and never checks for NULL. */
#ifndef TROVE_MEM_H
#define TROVE_MEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Grow *items (element size `size`) so that it holds at least `need`
 * elements; *cap is updated. Amortised doubling. */
void xgrow(void *items_ptr, size_t *cap, size_t need, size_t size);

/* xgrow for tables indexed by position: the new elements are zeroed, so a
 * slot never written reads as empty. */
void xgrow_zero(void *items_ptr, size_t *cap, size_t need, size_t size);

/* Large arrays in anonymous memory advised to huge pages (2 MB): fewer
 * page faults to fill them and fewer TLB misses to scan them. NULL when n
 * is under 2 MB or the mapping fails (then use xmalloc); freed by
 * mem_huge_unmap(p, n). */
void *mem_huge_map(size_t n);
void mem_huge_unmap(void *p, size_t n);

/* Hand the allocator's free memory back to the system now (glibc:
 * malloc_trim), after a one-off peak such as parsing a large tokenizer:
 * a daemon's arenas otherwise keep it (daemon/server.c raises the trim
 * threshold). Does nothing elsewhere. */
void mem_give_back(void);

#endif
