#include "embed/kernels/blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*sgemm_fn)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint,
                         float, const float *, blasint, const float *, blasint, float, float *,
                         blasint);
typedef void (*threads_fn)(int);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static sgemm_fn sgemm;
static threads_fn set_threads;

static void load(void)
{
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !sgemm; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
        set_threads = (threads_fn)dlsym(h, "openblas_set_num_threads");
        if (!sgemm)
            dlclose(h);
    }
}

trove_err blas_load(void)
{
    pthread_once(&once, load);
    if (!sgemm)
        return trove_fail(TROVE_EUNSUPPORTED, "cannot load libopenblas.so.0 (install the Debian "
                          "package libopenblas0, or run scripts/install-deps.sh)");
    return TROVE_OK;
}

void blas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
                float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                float *c, int ldc)
{
    if (!sgemm && blas_load() != TROVE_OK) {
        /* Callers load BLAS when a model opens; reaching here without it is
         * a bug, and computing garbage silently would be worse. */
        fprintf(stderr, "trove: %s\n", trove_errmsg());
        abort();
    }
    sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_set_threads(int n)
{
    if (set_threads)
        set_threads(n);
}
