/* zen_pipes_bench -- do float FMAs run beside the integer multiplies on
 * this CPU? A loop of NI independent vpmaddubsw chains and NF independent
 * FMA chains per iteration (every chain longer than its latency hides), as
 * ns per iteration. On Zen 1 vpmaddubsw (and vpmaddwd) run on one pipe,
 * FP0, as two 128-bit halves; FMA on FP0 and FP1. If the FMAs cost nothing
 * beside the integer multiplies, a product kernel could give part of its
 * output columns to float weights (dequantised) on FP1 while the int8
 * kernel keeps FP0 busy (docs/performance.md, session 36, w-ce3).
 *   gcc -O2 bench/zen_pipes_bench.c -o /tmp/zp && /tmp/zp */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define ITERS 20000000L

/* a[i] = maddubs(a[i], x): dependent per chain (latency 4), independent
 * across chains, so the loop is bound by the pipes, not by latency. */
#define KERNEL(NAME, NI, NF)                                                                  \
    __attribute__((target("avx2,fma"), noinline)) static double NAME(void)                    \
    {                                                                                         \
        __m256i a[8], x = _mm256_set1_epi8(5);                                                \
        __m256 f[8], fw = _mm256_set1_ps(1.0001f), fx = _mm256_set1_ps(0.9999f);             \
        for (int i = 0; i < 8; i++) {                                                         \
            a[i] = _mm256_set1_epi8((char)(i + 1));                                           \
            f[i] = _mm256_set1_ps((float)i);                                                  \
        }                                                                                     \
        double t0 = now_s();                                                                  \
        for (long it = 0; it < ITERS; it++) {                                                 \
            _Pragma("GCC unroll 8") for (int i = 0; i < (NI); i++)                            \
                a[i] = _mm256_maddubs_epi16(a[i], x);                                         \
            _Pragma("GCC unroll 8") for (int i = 0; i < (NF); i++)                            \
                f[i] = _mm256_fmadd_ps(f[i], fw, fx);                                         \
            __asm__ volatile("" : "+x"(x));                                                   \
        }                                                                                     \
        double t = now_s() - t0;                                                              \
        __m256i s = a[0];                                                                     \
        __m256 g = f[0];                                                                      \
        for (int i = 1; i < 8; i++) {                                                         \
            s = _mm256_add_epi16(s, a[i]);                                                    \
            g = _mm256_add_ps(g, f[i]);                                                       \
        }                                                                                     \
        volatile int sink = _mm256_extract_epi16(s, 0) + (int)_mm256_cvtss_f32(g);            \
        (void)sink;                                                                           \
        return t * 1e9 / (double)ITERS;                                                       \
    }
KERNEL(k8_0, 8, 0)
KERNEL(k0_8, 0, 8)
KERNEL(k8_2, 8, 2)
KERNEL(k8_4, 8, 4)
KERNEL(k4_0, 4, 0)
KERNEL(k0_4, 0, 4)
KERNEL(k4_4, 4, 4)
KERNEL(k4_8, 4, 8)

int main(void)
{
    for (int r = 0; r < 2; r++) {
        printf("8 vpmaddubsw:          %.2f ns/iteration\n", k8_0());
        printf("8 fma:                 %.2f\n", k0_8());
        printf("8 vpmaddubsw + 2 fma:  %.2f\n", k8_2());
        printf("8 vpmaddubsw + 4 fma:  %.2f\n", k8_4());
        printf("4 vpmaddubsw:          %.2f\n", k4_0());
        printf("4 fma:                 %.2f\n", k0_4());
        printf("4 vpmaddubsw + 4 fma:  %.2f\n", k4_4());
        printf("4 vpmaddubsw + 8 fma:  %.2f\n", k4_8());
    }
    return 0;
}
