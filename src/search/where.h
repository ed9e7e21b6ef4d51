/* where — the --where conditions on frontmatter fields.
 *
 * One condition is KEY OP VALUE: `status=done`, `status!=draft`,
 * `priority>=2`, `tags~=proj/<star>` (a glob, case-insensitive; <star> is `*`), `due<2026-01-01`,
 * `author in (ana, li)`, `author not in (x)`, or `exists(KEY)` /
 * `!exists(KEY)`. An unquoted value is typed as YAML would: a number, true /
 * false, a date (YYYY-MM-DD, YYYYMMDD, YYYY-Www), else text; a quoted one
 * ('…' or "…") is text. `<`, `<=`, `>`, `>=` compare numbers with numbers
 * and dates with dates, so their value must be one of those. Keys are
 * matched case-insensitively. The index side (the `fields` table and the SQL
 * each condition becomes) is search.c's.
 *
 * where_parse() checks every byte and fails with TROVE_EUSAGE and a
 * sentence naming the condition; the where_cond owns its strings
 * (where_cond_free). */
#ifndef TROVE_WHERE_H
#define TROVE_WHERE_H

#include <stddef.h>

#include "util/err.h"

typedef enum where_op {
    WHERE_EQ, WHERE_NE, WHERE_LT, WHERE_LE, WHERE_GT, WHERE_GE,
    WHERE_GLOB, WHERE_IN, WHERE_NOT_IN, WHERE_EXISTS, WHERE_MISSING
} where_op;

typedef struct where_value {
    char *text;        /* as written, quotes removed */
    int quoted;
    int is_number;
    double number;
    int is_bool;
    int boolean;
    int is_date;
    double date;       /* days (text/date.h), the start of the day or week */
    double date_end;   /* the end of it (exclusive) */
} where_value;

typedef struct where_cond {
    char *key;           /* lower-cased */
    where_op op;
    where_value *values; /* one, several for in / not in, none for exists */
    size_t n_values;
} where_cond;

#define WHERE_MAX_LEN 1024
#define WHERE_MAX_VALUES 64

trove_err where_parse(const char *expr, where_cond *out);
void where_cond_free(where_cond *w);
/* The operator as written ("=", "in", ...), for messages. */
const char *where_op_name(where_op op);

#endif
