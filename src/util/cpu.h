/* cpu — which SIMD instruction sets this CPU and OS can run, asked on first
 * use. Instead of gcc's __builtin_cpu_supports(), whose libgcc constructor
 * (__cpu_indicator_init) runs a dozen cpuid instructions at the start of
 * every process — each one a trap to the hypervisor on a virtual machine —
 * although only the embedding and vector kernels ever ask. No memory is
 * owned; the answers are computed once and cached (thread-safe). */
#ifndef TROVE_CPU_H
#define TROVE_CPU_H

enum {
    CPU_AVX2 = 1 << 0,       /* AVX2 with the OS saving YMM state */
    CPU_FMA = 1 << 1,
    CPU_F16C = 1 << 2,
    CPU_AVX512VL = 1 << 3,   /* with the OS saving ZMM/opmask state */
    CPU_AVX512VNNI = 1 << 4,
    CPU_AVX512F = 1 << 5,    /* with the OS saving ZMM/opmask state */
};

/* The CPU_* bits this machine has (0 on other architectures). */
unsigned cpu_simd(void);

#endif
