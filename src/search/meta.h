/* meta — what search asks of a note's metadata: the --where conditions and
 * the --since/--until bounds as SQL on `d` (docs), a note's date and where
 * it came from, and the recency prior. Reads the `fields` table
 * (docs/schema.md); used by search.c only.
 *
 * A note's date: the first of the date keys (config `dates: {keys: …}`,
 * default date, created) its frontmatter holds as a date, else the date in
 * its file name (fields key ''), else its file time.
 *
 * meta_filter owns its parsed conditions; strings handed to the bind
 * callback point into it and into the config, valid until
 * meta_filter_free(). */
#ifndef TROVE_SEARCH_META_H
#define TROVE_SEARCH_META_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "search/where.h"
#include "store/store.h"
#include "util/buf.h"
#include "util/err.h"

typedef struct meta_filter {
    where_cond *conds;
    size_t n_conds;
    int has_since, has_until;
    double since, until;             /* days; until exclusive */
    char **date_keys;                /* lower-cased, the config's or the defaults */
    char **date_sources;             /* "frontmatter:KEY" for each */
    size_t n_date_keys;
} meta_filter;

/* Parse the conditions and bounds (TROVE_EUSAGE naming the bad one) and
 * check that some note has each field a condition names (TROVE_ENOENT
 * listing the fields the index has: a typo must not look like "nothing
 * matches"). `now` in days (date_now()). */
trove_err meta_filter_prepare(store *st, const config *cfg, const char *const *where,
                              size_t n_where, const char *since, const char *until, double now,
                              meta_filter *mf);
void meta_filter_free(meta_filter *mf);
/* 1 when it restricts anything. */
int meta_filter_active(const meta_filter *mf);

typedef void (*meta_bind_fn)(void *ctx, const char *text);
/* Append " AND …" conditions on the note whose id is the SQL expression
 * `id` (e.g. "d.id") for every condition and bound; each '?' in them is
 * one call of bind, in order. mtime: the expression of its docs.mtime_ns
 * ("d.mtime_ns"), NULL: read from docs by id, only for a note no field
 * dates (so a caller without the docs row need not join it). */
void meta_filter_sql(const meta_filter *mf, const char *id, const char *mtime, tbuf *sql,
                     meta_bind_fn bind, void *ctx);

/* The date of note doc_id (days) and where it came from:
 * "frontmatter:KEY", "filename" or "mtime"; *source static or owned by mf. */
trove_err meta_note_date(store *st, const meta_filter *mf, int64_t doc_id, double *days,
                         const char **source);

/* The recency prior: (1 + 2^(-age / half_life)) / 2, 1 for a note of today
 * down to 1/2 for a very old one (age in days, negative counts as 0). */
double meta_recency(double age, double half_life);

#endif
