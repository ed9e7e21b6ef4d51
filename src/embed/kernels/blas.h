/* blas — OpenBLAS, loaded on first use.
 *
 * Linking libopenblas costs every process about 2 ms at start-up (its
 * constructor detects the CPU and starts a thread pool whose threads then
 * spin), which a `trove search` that never computes an embedding must not
 * pay. So the engine calls BLAS through this module, which dlopen()s the
 * library the first time blas_load() runs. Declarations come from cblas.h;
 * nothing here owns memory. Thread-safe: loading happens once.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_BLAS_H
#define TROVE_BLAS_H

#include <cblas.h>

#include "util/err.h"

/* Load libopenblas. TROVE_EUNSUPPORTED with a message naming the library
 * (and how to install it) when it cannot be found. Idempotent. */
trove_err blas_load(void);

/* cblas_sgemm; blas_load() must have succeeded. */
void blas_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k,
                float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                float *c, int ldc);

/* openblas_set_num_threads; a no-op before blas_load(). */
void blas_set_threads(int n);

#endif
