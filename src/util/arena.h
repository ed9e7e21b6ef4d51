/* arena — a bump allocator for many small objects that die together
 * (parsed metadata, directory listings, tokenizer pieces).
 *
 * arena_alloc() hands out 16-byte aligned memory from blocks of
 * ARENA_BLOCK bytes; a request larger than a block gets a block of its
 * own, so one allocation is always contiguous. Pointers stay valid until
 * arena_free(), which releases every block at once; there is no per-object
 * free. An arena starts zeroed (`arena a = {0};`), owns all its blocks, and
 * is not thread-safe (one owner at a time). Out of memory aborts, like
 * util/mem.h. */
#ifndef TROVE_ARENA_H
#define TROVE_ARENA_H

#include <stddef.h>

#define ARENA_BLOCK 65536

typedef struct arena_blk arena_blk;

typedef struct arena {
    arena_blk *head; /* newest block first */
    size_t bytes;    /* total handed out (rounded up to 16 each) */
} arena;

/* n bytes (n may be 0), uninitialised. */
void *arena_alloc(arena *a, size_t n);

/* A NUL-terminated copy of s[0..n) (s may hold NULs; n bytes are copied). */
char *arena_strndup(arena *a, const char *s, size_t n);

/* Release every block; the arena is empty and reusable afterwards. */
void arena_free(arena *a);

#endif
