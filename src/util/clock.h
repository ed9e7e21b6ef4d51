/* clock — the one monotonic clock of trove, for durations shown to users
 * (update timings, benchmarks, --timing), and the process's CPU time beside
 * it. Never for wall-clock dates. */
#ifndef TROVE_CLOCK_H
#define TROVE_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double clock_seconds(void);

/* CPU seconds (user + system) this process has used so far, all threads. */
double clock_cpu_seconds(void);

/* A span of both: start it, then read the milliseconds since. */
typedef struct {
    double wall, cpu;
} clock_span;

clock_span clock_span_start(void);
double clock_span_ms(const clock_span *s);
double clock_span_cpu_ms(const clock_span *s);

#endif
