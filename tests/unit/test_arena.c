/* arena: aligned bump allocation, large requests contiguous, pointers
 * stable across block changes, free and reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "util/arena.h"

#include "testutil.h"

static void test_small_aligned_and_stable(void **state)
{
    (void)state;
    arena a = {0};
    tu_rng r = {42};
    char *first = arena_strndup(&a, "first", 5);
    /* enough small requests to fill several blocks */
    unsigned char *p[4000];
    size_t n[4000];
    for (int i = 0; i < 4000; i++) {
        n[i] = tu_rng_u32(&r) % 97;
        p[i] = arena_alloc(&a, n[i]);
        assert_int_equal((uintptr_t)p[i] % 16, 0);
        memset(p[i], i & 0xFF, n[i]);
    }
    assert_true(a.bytes > 2 * ARENA_BLOCK);
    for (int i = 0; i < 4000; i++)
        for (size_t k = 0; k < n[i]; k++)
            assert_int_equal(p[i][k], i & 0xFF);
    assert_string_equal(first, "first");
    arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.bytes, 0);
}

static void test_large_is_contiguous(void **state)
{
    (void)state;
    arena a = {0};
    char *small = arena_alloc(&a, 10);
    size_t big_n = 3 * ARENA_BLOCK + 5;
    unsigned char *big = arena_alloc(&a, big_n);
    memset(big, 0xAB, big_n);
    /* the small block keeps filling after a large request */
    char *small2 = arena_alloc(&a, 10);
    assert_ptr_equal(small2, small + 16);
    for (size_t i = 0; i < big_n; i++)
        assert_int_equal(big[i], 0xAB);
    arena_free(&a);
    /* reusable after free */
    char *s = arena_strndup(&a, "a\0b", 3);
    assert_memory_equal(s, "a\0b", 4);
    assert_non_null(arena_alloc(&a, 0));
    arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_aligned_and_stable),
        cmocka_unit_test(test_large_is_contiguous),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
