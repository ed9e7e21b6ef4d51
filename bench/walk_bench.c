/* walk_bench — time walk_tree over a collection (not part of the build).
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/walk_bench.c src/fs/glob.c \
 *      src/fs/gitignore.c src/fs/walk.c src/util/mem.c src/util/err.c \
 *      src/util/buf.c -o /tmp/walk_bench
 *   /tmp/walk_bench /tmp/tldr [runs]
 *
 * Prints the file count, the byte total (so the stat results are used),
 * and the best and median wall time over the runs (default 10). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fs/walk.h"

typedef struct tally {
    long files, warnings;
    long long bytes;
} tally;

static int on_file(void *ctx, const char *rel, const struct stat *st)
{
    (void)rel;
    tally *t = ctx;
    t->files++;
    t->bytes += st->st_size;
    return 0;
}

static void on_warning(void *ctx, const char *msg)
{
    tally *t = ctx;
    if (t->warnings++ < 5)
        fprintf(stderr, "warning: %s\n", msg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s ROOT [RUNS]\n", argv[0]);
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    if (runs < 1 || runs > 1000)
        runs = 10;
    double *times = calloc((size_t)runs, sizeof *times);
    tally t = {0};
    for (int i = 0; i < runs; i++) {
        t = (tally){0};
        walk_opts o = {.root = argv[1]};
        walk_callbacks cb = {.ctx = &t, .on_file = on_file, .on_warning = on_warning};
        double t0 = now_s();
        trove_err e = walk_tree(&o, &cb);
        times[i] = now_s() - t0;
        if (e != TROVE_OK) {
            fprintf(stderr, "walk_tree: %s: %s\n", trove_strerror(e), trove_errmsg());
            return 1;
        }
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    printf("%ld files, %lld bytes, %ld warnings; best %.1f ms, median %.1f ms over %d runs\n",
           t.files, t.bytes, t.warnings, times[0] * 1e3, times[runs / 2] * 1e3, runs);
    free(times);
    return 0;
}
