/* mathlib — the C math library (libm) loaded on first use, not at every
 * process start.
 *
 * Linked as a dependency, libm costs every process a library to find, map
 * and relocate (9 page faults, 0.2-0.5 ms of CPU on the virtual machines
 * trove is measured on), although `trove --version`, a search answered by
 * the daemon and most commands never call a math function: only SQLite's
 * SQL math functions (whose table merely takes their addresses), scoring
 * and the embedding engine do. Its static archive cannot be linked into a
 * dynamic glibc program (libm.a's ifunc resolvers need ld.so's private
 * _dl_x86_cpu_features).
 *
 * So the trove binary defines each libm function it uses (the list below:
 * every one the linker asks for) as a jump to the real one, looked up with
 * dlsym in libm.so.6, dlopen()ed on the first call. The results are the
 * same bits: the same library, the same ifunc choice for this CPU. Only the
 * trove executable links this file (CMakeLists.txt, with --as-needed so
 * libm drops out of its DT_NEEDED); unit tests and fuzz targets link libm.
 * A new math call that is not listed here links against libm again and
 * puts it back into trove's DT_NEEDED, which tests/e2e/test_cli_search.py
 * (readelf -d) catches: add it to the list. The commands that open the
 * index load libm early (mathlib_load, mathlib.h).
 *
 * Thread-safe: a pointer is published with release/acquire atomics; two
 * threads resolving at once store the same value (dlopen of a loaded
 * library only counts a reference). No memory is owned; the handle is
 * never closed. */
#include "cli/mathlib.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*mathlib_fn)(void);

static void *mathlib_handle(void)
{
    static void *handle;
    void *h = __atomic_load_n(&handle, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    h = dlopen(LIBM_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        /* No way to go on: a caller of sqrt() has no error path. */
        const char *e = dlerror();
        fprintf(stderr, "trove: cannot load %s: %s\n", LIBM_SO, e ? e : "unknown error");
        abort();
    }
    __atomic_store_n(&handle, h, __ATOMIC_RELEASE);
    return h;
}

void mathlib_load(void)
{
    (void)mathlib_handle();
}

static mathlib_fn mathlib_resolve(mathlib_fn *slot, const char *name)
{
    mathlib_fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (f)
        return f;
    void *sym = dlsym(mathlib_handle(), name);
    if (!sym) {
        const char *e = dlerror();
        fprintf(stderr, "trove: %s has no %s: %s\n", LIBM_SO, name, e ? e : "unknown error");
        abort();
    }
    /* POSIX: dlsym's answer for a function is that function's address. */
    *(void **)&f = sym;
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

/* RET NAME(ARGS) { return the real NAME(CALL); } */
#define MATHLIB_FN(ret, name, params, call)                                               \
    static mathlib_fn mathlib_##name;                                                     \
    ret name params                                                                       \
    {                                                                                     \
        return ((ret(*) params)mathlib_resolve(&mathlib_##name, #name)) call;             \
    }
#define MATHLIB_D1(name) MATHLIB_FN(double, name, (double x), (x))
#define MATHLIB_D2(name) MATHLIB_FN(double, name, (double x, double y), (x, y))
#define MATHLIB_F1(name) MATHLIB_FN(float, name, (float x), (x))
#define MATHLIB_F2(name) MATHLIB_FN(float, name, (float x, float y), (x, y))

MATHLIB_D1(acos)
MATHLIB_D1(acosh)
MATHLIB_D1(asin)
MATHLIB_D1(asinh)
MATHLIB_D1(atan)
MATHLIB_D2(atan2)
MATHLIB_D1(atanh)
MATHLIB_D1(cos)
MATHLIB_D1(cosh)
MATHLIB_D1(exp)
MATHLIB_D1(exp2)
MATHLIB_D1(floor)
MATHLIB_FN(float, fmaf, (float x, float y, float z), (x, y, z))
MATHLIB_D2(fmax)
MATHLIB_F2(fmaxf)
MATHLIB_D2(fmin)
MATHLIB_F2(fminf)
MATHLIB_D2(fmod)
MATHLIB_D1(log)
MATHLIB_D1(log10)
MATHLIB_D1(log2)
MATHLIB_FN(long, lrintf, (float x), (x))
MATHLIB_F1(nearbyintf)
MATHLIB_F2(nextafterf)
MATHLIB_D2(pow)
MATHLIB_D1(sin)
static mathlib_fn mathlib_sincos;
void sincos(double x, double *s, double *c)
{
    ((void (*)(double, double *, double *))mathlib_resolve(&mathlib_sincos, "sincos"))(x, s, c);
}
MATHLIB_D1(sinh)
MATHLIB_D1(sqrt)
MATHLIB_F1(sqrtf)
MATHLIB_D1(tan)
MATHLIB_D1(tanh)
MATHLIB_D1(trunc)
