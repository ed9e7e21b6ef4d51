/* arena — see arena.h. */
#include "util/arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *arena_alloc(arena *a, size_t n)
{
    if (n > SIZE_MAX / 2) {
        fprintf(stderr, "trove: out of memory allocating %zu bytes\n", n);
        abort();
    }
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        arena_blk *b = xmalloc(sizeof *b + cap);
        b->used = 0;
        b->cap = cap;
        /* a block made for one large request goes behind the current one,
         * so the small requests after it keep filling the current block */
        if (cap > ARENA_BLOCK && a->head) {
            b->next = a->head->next;
            a->head->next = b;
            b->used = n;
            a->bytes += n;
            return b->data;
        }
        b->next = a->head;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->bytes += n;
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void arena_free(arena *a)
{
    arena_blk *b = a->head;
    while (b) {
        arena_blk *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->bytes = 0;
}
