#include "text/date.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Days from civil and back: Howard Hinnant's algorithms (public domain),
 * exact for the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

void date_civil_from(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int month_days(int y, int m)
{
    static const int n[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : n[m - 1];
}

int date_civil(int y, int m, int d, int64_t *days)
{
    if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > month_days(y, m))
        return 0;
    *days = days_from_civil(y, m, d);
    return 1;
}

/* 1 Monday .. 7 Sunday; 1970-01-01 was a Thursday. */
static int weekday(int64_t days)
{
    return (int)(((days % 7) + 7 + 3) % 7) + 1;
}

/* The Monday of ISO week w of year y, when that week exists. */
static int iso_week(int y, int w, int64_t *days)
{
    int64_t jan4;
    if (w < 1 || w > 53 || !date_civil(y, 1, 4, &jan4))
        return 0;
    int64_t monday = jan4 - (weekday(jan4) - 1) + (int64_t)(w - 1) * 7;
    int ty, tm, td;   /* a week belongs to the year of its Thursday */
    date_civil_from(monday + 3, &ty, &tm, &td);
    if (ty != y)
        return 0;
    *days = monday;
    return 1;
}

static int digits(const char *s, size_t n, size_t at, size_t count, int *out)
{
    if (at + count > n)
        return 0;
    int v = 0;
    for (size_t i = at; i < at + count; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

int date_read_day(const char *s, size_t n, int64_t *days, size_t *used)
{
    int y, m, d, w;
    if (!digits(s, n, 0, 4, &y))
        return 0;
    if (n >= 8 && s[4] == '-' && (s[5] == 'W' || s[5] == 'w') && digits(s, n, 6, 2, &w) &&
        iso_week(y, w, days)) {
        *used = 8;
        return 1;
    }
    if (n >= 10 && s[4] == '-' && s[7] == '-' && digits(s, n, 5, 2, &m) && digits(s, n, 8, 2, &d) &&
        date_civil(y, m, d, days)) {
        *used = 10;
        return 1;
    }
    if (digits(s, n, 4, 2, &m) && digits(s, n, 6, 2, &d) && date_civil(y, m, d, days)) {
        *used = 8;
        return 1;
    }
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int date_from_name(const char *name, size_t len, int64_t *days)
{
    for (size_t i = 0; i + 8 <= len; i++) {
        if (!is_digit(name[i]) || (i > 0 && is_digit(name[i - 1])))
            continue;
        size_t used;
        if (date_read_day(name + i, len - i, days, &used) &&
            (i + used == len || !is_digit(name[i + used])))
            return 1;
    }
    return 0;
}

int date_parse_span(const char *s, double *days)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 2 || n > 16)
        return 0;
    char num[17];
    memcpy(num, s, n - 1);
    num[n - 1] = '\0';
    if (strspn(num, "0123456789.") != n - 1)
        return 0;
    char *end;
    double v = strtod(num, &end);
    if (*end || !(v > 0) || v > 1e6)
        return 0;
    static const struct { char unit; double days; } units[] = {
        {'d', 1}, {'w', 7}, {'m', 30.436875}, {'y', 365.2425},
    };
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (s[n - 1] == units[i].unit) {
            *days = v * units[i].days;
            return 1;
        }
    return 0;
}

double date_now(void)
{
    const char *fake = getenv("TROVE_NOW");
    if (fake && *fake) {
        char *end;
        long long v = strtoll(fake, &end, 10);
        if (*end == '\0' && v > 0)
            return (double)v / 86400.0;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((double)ts.tv_sec + ts.tv_nsec / 1e9) / 86400.0;
}

void date_format(double days, char out[11])
{
    int y, m, d;
    double f = floor(days);
    if (!(f > -719162.0 && f < 2932897.0))   /* outside years 1..9999 */
        f = 0;
    date_civil_from((int64_t)f, &y, &m, &d);
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%04d-%02d-%02d", y % 10000, m % 100, d % 100);
    memcpy(out, tmp, 10);
    out[10] = '\0';
}

/* Months added to a day, the day of month clamped (Mar 31 - 1m = Feb 29). */
static double add_months(double now, long months)
{
    int y, m, d;
    int64_t day = (int64_t)floor(now);
    date_civil_from(day, &y, &m, &d);
    long t = (long)y * 12 + (m - 1) + months;
    int ny = (int)(t / 12), nm = (int)(t % 12) + 1;
    if (ny < 1)
        ny = 1, nm = 1;
    if (d > month_days(ny, nm))
        d = month_days(ny, nm);
    return (double)days_from_civil(ny, nm, d) + (now - (double)day);
}

/* Named periods around today: [start, end). */
static int named_period(const char *s, double now, double *start, double *end)
{
    int64_t today = (int64_t)floor(now);
    int y, m, d;
    date_civil_from(today, &y, &m, &d);
    int64_t a, b;
    if (!strcmp(s, "today"))
        a = today, b = today + 1;
    else if (!strcmp(s, "yesterday"))
        a = today - 1, b = today;
    else if (!strcmp(s, "this-week"))
        a = today - (weekday(today) - 1), b = a + 7;
    else if (!strcmp(s, "last-week"))
        b = today - (weekday(today) - 1), a = b - 7;
    else if (!strcmp(s, "this-month"))
        a = days_from_civil(y, m, 1), b = a + month_days(y, m);
    else if (!strcmp(s, "last-month")) {
        b = days_from_civil(y, m, 1);
        a = m == 1 ? days_from_civil(y - 1, 12, 1) : days_from_civil(y, m - 1, 1);
    } else if (!strcmp(s, "this-year"))
        a = days_from_civil(y, 1, 1), b = days_from_civil(y + 1, 1, 1);
    else if (!strcmp(s, "last-year"))
        a = days_from_civil(y - 1, 1, 1), b = days_from_civil(y, 1, 1);
    else
        return 0;
    *start = (double)a;
    *end = (double)b;
    return 1;
}

/* Nd, Nw, Nm, Ny: the instant that long before now. */
static int age(const char *s, double now, double *out)
{
    size_t n = strlen(s);
    if (n < 2 || n > 7)
        return 0;
    long v = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!is_digit(s[i]))
            return 0;
        v = v * 10 + (s[i] - '0');
    }
    switch (s[n - 1]) {
    case 'd': *out = now - (double)v; return 1;
    case 'w': *out = now - 7.0 * (double)v; return 1;
    case 'm': *out = add_months(now, -v); return 1;
    case 'y': *out = add_months(now, -12 * v); return 1;
    default: return 0;
    }
}

/* A written date or period: day, ISO week, month, year. */
static int written_period(const char *s, double *start, double *end)
{
    size_t n = strlen(s), used;
    int64_t a;
    int y, m;
    if (date_read_day(s, n, &a, &used) && used == n) {
        int is_week = n == 8 && s[4] == '-';
        *start = (double)a;
        *end = (double)(a + (is_week ? 7 : 1));
        return 1;
    }
    if (n == 7 && s[4] == '-' && digits(s, n, 0, 4, &y) && digits(s, n, 5, 2, &m) &&
        date_civil(y, m, 1, &a)) {
        *start = (double)a;
        *end = (double)(a + month_days(y, m));
        return 1;
    }
    if (n == 4 && digits(s, n, 0, 4, &y) && date_civil(y, 1, 1, &a)) {
        *start = (double)a;
        *end = (double)days_from_civil(y + 1, 1, 1);
        return 1;
    }
    return 0;
}

trove_err date_parse_bound(const char *spec, double now, int until, double *out)
{
    const char *s = spec ? spec : "";
    double start, end;
    if (named_period(s, now, &start, &end) || written_period(s, &start, &end)) {
        *out = until ? end : start;
        return TROVE_OK;
    }
    if (age(s, now, out))
        return TROVE_OK;
    return trove_fail(TROVE_EUSAGE, "--%s %s: not a date; use YYYY-MM-DD, YYYYMMDD, YYYY-Www, "
                      "YYYY-MM, YYYY, an age (7d, 3w, 2m, 1y) or today, yesterday, "
                      "this-week, last-week, this-month, last-month, this-year, last-year",
                      until ? "until" : "since", s);
}
