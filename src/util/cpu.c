#include "util/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static unsigned detect(void)
{
    unsigned a, b, c, d, f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    /* Without OSXSAVE the OS may not save the wide registers: no AVX. */
    if (!(c & bit_OSXSAVE))
        return 0;
    unsigned long long xcr0 = xgetbv0();
    int ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
    if (ymm && (c & bit_FMA))
        f |= CPU_FMA;
    if (ymm && (c & bit_F16C))
        f |= CPU_F16C;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        if (ymm && (b & bit_AVX2))
            f |= CPU_AVX2;
        if (zmm && (b & bit_AVX512F))
            f |= CPU_AVX512F;
        if (zmm && (b & bit_AVX512VL))
            f |= CPU_AVX512VL;
        if (zmm && (c & bit_AVX512VNNI))
            f |= CPU_AVX512VNNI;
    }
    return f;
}
#else
static unsigned detect(void)
{
    return 0;
}
#endif

unsigned cpu_simd(void)
{
    /* Racing first callers compute the same value. */
    static _Atomic int cached = -1;
    int f = cached;
    if (f < 0)
        cached = f = (int)detect();
    return (unsigned)f;
}
