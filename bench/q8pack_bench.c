/* q8pack_bench -- the packed int8 kernels alone: one product of a weight
 * matrix of TYPE (n_in x n_out) with T activation rows, best of ROUNDS x
 * CALLS, as GFLOP/s, plus a checksum of the output (to compare kernels
 * bit for bit). Built against trovecore:
 *   gcc -O2 -Isrc bench/q8pack_bench.c build/libtrovecore.a -lm -lpthread -o /tmp/q8b
 *   /tmp/q8b TYPE N_IN N_OUT T [ROUNDS] [CALLS]   (TYPE: q8_0 q4_k q6_k q5_k q5_0 q5_1) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed/kernels/q8pack.h"
#include "embed/kernels/quant.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return fprintf(stderr, "usage: q8pack_bench TYPE N_IN N_OUT T [ROUNDS] [CALLS]\n"), 2;
    const char *names[] = {"q8_0", "q4_k", "q6_k", "q5_k", "q5_0", "q5_1"};
    int types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q6_K, GGML_TYPE_Q5_K,
                   GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};
    int type = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(argv[1], names[i]))
            type = types[i];
    int64_t n_in = atoll(argv[2]), n_out = atoll(argv[3]), T = atoll(argv[4]);
    int rounds = argc > 5 ? atoi(argv[5]) : 5, calls = argc > 6 ? atoi(argv[6]) : 10;
    if (type < 0)
        return fprintf(stderr, "q8pack_bench: unknown type %s\n", argv[1]), 2;
    srand(7);
    float *w = malloc(sizeof(float) * n_in * n_out), *x = malloc(sizeof(float) * n_in * T);
    float *y = calloc((size_t)(n_out * T), sizeof(float));
    for (int64_t i = 0; i < n_in * n_out; i++)
        w[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < n_in * T; i++)
        x[i] = (float)rand() / RAND_MAX - 0.5f;
    size_t rs = quant_row_size(type, n_in);
    uint8_t *wq = malloc(rs * n_out);
    for (int64_t o = 0; o < n_out; o++)
        quant_quantize_row((ggml_type)type, w + o * n_in, wq + o * rs, n_in);
    q8pack *p = q8pack_new(type, wq, n_in, n_out);
    if (!p)
        return fprintf(stderr, "q8pack_bench: cannot pack\n"), 1;
    void *act = malloc(q8pack_act_size(n_in, T));
    q8pack_quantize_act(x, n_in, 0, T, n_in, act);
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ms();
        for (int c = 0; c < calls; c++)
            q8pack_matmul(p, 0, n_out, act, T, NULL, y, n_out);
        double ms = (now_ms() - t0) / calls;
        if (ms < best)
            best = ms;
    }
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n_out * T; i++) {
        uint32_t b;
        memcpy(&b, &y[i], 4);
        h = (h ^ b) * 1099511628211ull;
    }
    printf("%s %lld -> %lld, %lld rows: %.3f ms, %.1f GFLOP/s, checksum %016llx\n", argv[1],
           (long long)n_in, (long long)n_out, (long long)T, best,
           2.0 * n_in * n_out * T / best / 1e6, (unsigned long long)h);
    return 0;
}
