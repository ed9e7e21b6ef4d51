/* mathlib — libm loaded when first needed, not by every process start
 * (mathlib.c; linked into the trove binary only, not into trovecli). No
 * memory is owned. */
#ifndef TROVE_MATHLIB_H
#define TROVE_MATHLIB_H

/* Load libm now, for a command about to open the index (whose searches
 * call log() and friends). Measured: a dlopen() late in a process (after
 * SQLite mapped the index) cost ~0.7 ms more system time than one before
 * it, the same work otherwise; early it costs what linking libm did.
 * Aborts when libm cannot be loaded. Idempotent and thread-safe. */
void mathlib_load(void);

#endif
