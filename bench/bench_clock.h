/* bench_clock — the two clocks the bench programs (vec_bench.c,
 * llama_cpp_embed.c) time with: wall (monotonic) and this process's CPU
 * (user + system), both in milliseconds. Header only, no state. */
#ifndef TROVE_BENCH_CLOCK_H
#define TROVE_BENCH_CLOCK_H

#include <sys/resource.h>
#include <time.h>

static inline double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

#endif
