/* clock — the one monotonic clock of trove, for durations shown to users
 * (update timings, benchmarks). Never for wall-clock dates. */
#ifndef TROVE_CLOCK_H
#define TROVE_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double clock_seconds(void);

#endif
