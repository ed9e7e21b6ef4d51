#include "util/clock.h"

#include <sys/resource.h>
#include <time.h>

double clock_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double clock_cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

clock_span clock_span_start(void)
{
    return (clock_span){clock_seconds(), clock_cpu_seconds()};
}

double clock_span_ms(const clock_span *s)
{
    return (clock_seconds() - s->wall) * 1e3;
}

double clock_span_cpu_ms(const clock_span *s)
{
    return (clock_cpu_seconds() - s->cpu) * 1e3;
}
