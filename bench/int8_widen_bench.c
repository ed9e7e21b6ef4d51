/* int8_widen_bench — what one step of an AVX2 int8 product costs on this
 * CPU with each way of widening vpmaddubsw's int16 pair sums to int32
 * (docs/performance.md, "Integer products on Zen 1 against llama.cpp",
 * session 33). A step: broadcast 4 activation bytes, vpsignb, vpmaddubsw
 * (32 byte products), then
 *   A: vpmaddwd by ones + vpaddd (q8pack.c's Q8_0 kernel), or
 *   B: vpxor 0x8000 + vpsrad 16 + two vpaddd (the multiply-free widening:
 *      low halves biased to unsigned, lanes and high halves summed apart,
 *      fixed up once per block; the same integers),
 * four independent rows as in the kernel, 8 steps per loop iteration.
 * Prints ns per step, best of 5; compare A, B and their mixes.
 *
 *   gcc -O2 -mavx2 bench/int8_widen_bench.c -o /tmp/int8_widen_bench && /tmp/int8_widen_bench
 */
#include <stdio.h>
#include <time.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define N 10000000L
static int act[64] __attribute__((aligned(64)));
#define CLOBBER "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
                "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
/* ymm15 = w (signed), ymm14 = |w|, ymm13 = ones16, ymm12 = 0x8000 per int32;
 * sums in ymm0-3, high-half sums in ymm4-7 */
#define A(K) "vpbroadcastd " #K "*4(%0),%%ymm8\n vpsignb %%ymm15,%%ymm8,%%ymm8\n" \
             " vpmaddubsw %%ymm8,%%ymm14,%%ymm8\n vpmaddwd %%ymm13,%%ymm8,%%ymm8\n"  \
             " vpaddd %%ymm8,%%ymm" #K ",%%ymm" #K "\n"
#define B(K, H) "vpbroadcastd " #K "*4(%0),%%ymm9\n vpsignb %%ymm15,%%ymm9,%%ymm9\n"     \
                " vpmaddubsw %%ymm9,%%ymm14,%%ymm9\n vpxor %%ymm12,%%ymm9,%%ymm9\n"       \
                " vpsrad $16,%%ymm9,%%ymm10\n vpaddd %%ymm9,%%ymm" #K ",%%ymm" #K "\n" \
                " vpaddd %%ymm10,%%ymm" #H ",%%ymm" #H "\n"
#define A4 A(0) A(1) A(2) A(3)
#define B4 B(0, 4) B(1, 5) B(2, 6) B(3, 7)
#define STEPS(NAME, NS, ASM)                                                 \
    static double NAME(void)                                               \
    {                                                                      \
        double best = 1e30;                                                \
        for (int r = 0; r < 5; r++) {                                      \
            double t0 = cpu_s();                                           \
            for (long i = 0; i < N; i++)                                   \
                __asm__ volatile(ASM ::"r"(act) : CLOBBER);                \
            double t = cpu_s() - t0;                                       \
            best = t < best ? t : best;                                    \
        }                                                                  \
        return best / (double)N * 1e9 / (NS);                              \
    }
STEPS(steps_a, 8, A4 A4)
STEPS(steps_b, 8, B4 B4)
STEPS(steps_ab, 8, A4 B4)
STEPS(steps_aaab, 32, A4 A4 A4 B4 A4 A4 A4 B4)

int main(void)
{
    for (int i = 0; i < 3; i++)
        printf("ns per step: A (vpmaddwd) %.3f  B (shift) %.3f  half and half %.3f  1 in 4 B %.3f\n",
               steps_a(), steps_b(), steps_ab(), steps_aaab());
    return 0;
}
