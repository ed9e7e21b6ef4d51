/* cpu: util/cpu's own cpuid reading agrees with gcc's __builtin_cpu_supports
 * (which trove itself no longer calls: its libgcc constructor ran cpuid at
 * every process start), feature by feature, and the answer is stable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/cpu.h"

static void test_agrees_with_gcc(void **state)
{
    (void)state;
    unsigned f = cpu_simd();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    assert_int_equal(!!(f & CPU_AVX2), !!__builtin_cpu_supports("avx2"));
    assert_int_equal(!!(f & CPU_FMA), !!__builtin_cpu_supports("fma"));
    assert_int_equal(!!(f & CPU_AVX512VL), !!__builtin_cpu_supports("avx512vl"));
    assert_int_equal(!!(f & CPU_AVX512VNNI), !!__builtin_cpu_supports("avx512vnni"));
    /* every AVX2 CPU made has F16C; an AVX2 answer without it is a misread */
    if (f & CPU_AVX2)
        assert_true(f & CPU_F16C);
#else
    assert_int_equal(f, 0);
#endif
    assert_int_equal(cpu_simd(), f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agrees_with_gcc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
