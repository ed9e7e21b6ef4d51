/* date — calendar dates of notes and of the --since/--until bounds.
 *
 * A date is a number of days since 1970-01-01 00:00 UTC (a double: the
 * fraction is the time of day; whole days for dates written without a
 * time). The proleptic Gregorian calendar, years 1..9999; every parser here
 * checks its bytes and rejects an impossible day (2024-02-30) rather than
 * rolling it over. Nothing here allocates. */
#ifndef TROVE_DATE_H
#define TROVE_DATE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Days of Y-M-D; 0 when it is no real day (1 when valid). */
int date_civil(int y, int m, int d, int64_t *days);
void date_civil_from(int64_t days, int *y, int *m, int *d);

/* A whole day written at s[0..n): YYYY-MM-DD, YYYYMMDD or an ISO week
 * YYYY-Www (its Monday). *used: the bytes it took. 1 when one was read. */
int date_read_day(const char *s, size_t n, int64_t *days, size_t *used);

/* The date a file name carries: the first day (date_read_day) in it that
 * is not part of a longer run of digits ("2024-05-01 Meeting.md",
 * "20240501.md", "2026-W14.md", "Notes 2024-05-01.md"). 1 when found. */
int date_from_name(const char *name, size_t len, int64_t *days);

/* A --since/--until bound: YYYY-MM-DD, YYYYMMDD, YYYY-Www, YYYY-MM, YYYY;
 * today, yesterday, this-week, last-week, this-month, last-month,
 * this-year, last-year; or an age Nd, Nw, Nm, Ny (N days, weeks, calendar
 * months, years before now). A period is [start, end): `until` 0 gives its
 * start (the --since bound), 1 its end (exclusive: --until 2024-05-01
 * includes that day); an age is one instant, the same for both.
 * `now` in days. TROVE_EUSAGE with the sentence to show when the text is
 * none of these. */
trove_err date_parse_bound(const char *spec, double now, int until, double *out);

/* A span of time: N followed by d, w, m (30.44 days) or y (365.25), N a
 * positive number ("90d", "1.5y"); 1 with *days set when it is one. */
int date_parse_span(const char *s, double *days);

/* Days now: $TROVE_NOW (Unix seconds, tests) else the system clock. */
double date_now(void);

/* "YYYY-MM-DD" of the day holding `days`. */
void date_format(double days, char out[11]);

#endif
