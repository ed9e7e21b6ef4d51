/* meta — what search asks of a note's metadata: whether a note passes the
 * --where conditions and the --since/--until bounds, a note's date and
 * where it came from, and the recency prior. Reads a note's packed record
 * (note_meta; without one, its `fields`, `tags` and `names` rows) and, for
 * --since/--until under the default date keys, its date in the note map
 * (store_nmap.h, set mf->nmap), and decides in C, once per note and search
 * (remembered by note id); the filters' SQL asks the same decision through
 * trove_note_ok(id) (store_set_note_filter). Used by search/ and
 * api_publish.c.
 *
 * A note's date: the first of the date keys (config `dates: {keys: …}`,
 * default date, created) its frontmatter holds as a date, else the date in
 * its file name (fields key ''), else its file time.
 *
 * meta_filter owns its parsed conditions and its memo. */
#ifndef TROVE_SEARCH_META_H
#define TROVE_SEARCH_META_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "search/where.h"
#include "store/store.h"
#include "store/store_nmap.h"
#include "util/buf.h"
#include "util/err.h"

struct meta_memo;

typedef struct meta_filter {
    where_cond *conds;
    size_t n_conds;
    int has_since, has_until;
    double since, until;             /* days; until exclusive */
    char **date_keys;                /* lower-cased, the config's or the defaults */
    char **date_sources;             /* "frontmatter:KEY" for each */
    size_t n_date_keys;
    int default_keys;                /* they are store_nmap_date_keys */
    store_nmap_reader *nmap;         /* the dates of the note map, or NULL (the
                                        caller's, set after meta_filter_prepare) */
    store *st;
    struct meta_memo *memo;          /* the notes decided so far (meta.c) */
} meta_filter;

/* Parse the conditions and bounds (TROVE_EUSAGE naming the bad one) and
 * check that some note has each field a condition names (TROVE_ENOENT
 * listing the fields the index has: a typo must not look like "nothing
 * matches"). `now` in days (date_now()). */
trove_err meta_filter_prepare(store *st, const config *cfg, const char *const *where,
                              size_t n_where, const char *since, const char *until, double now,
                              meta_filter *mf);
void meta_filter_free(meta_filter *mf);
/* Close its handle on the index (a blob handle), before the read
 * transaction ends; the next read opens another. */
void meta_filter_close(const meta_filter *mf);
/* 1 when it restricts anything. */
int meta_filter_active(const meta_filter *mf);

/* Whether note id passes the conditions and bounds: 1, 0, or -1 with *rc
 * set when reading it failed. Decided once per note (mf's memo). */
int meta_note_ok(store *st, const meta_filter *mf, int64_t id, trove_err *rc);
/* Append " AND trove_note_ok(ID)" when mf restricts anything: the same
 * decision in SQL on the note whose id is the expression `id` ("d.id").
 * The SQL function answers for mf from meta_filter_prepare() until
 * meta_filter_free(). */
void meta_filter_sql(const meta_filter *mf, const char *id, tbuf *sql);

/* The date of note doc_id (days) and where it came from:
 * "frontmatter:KEY", "filename" or "mtime"; *source static or owned by mf. */
trove_err meta_note_date(store *st, const meta_filter *mf, int64_t doc_id, double *days,
                         const char **source);

/* The recency prior: (1 + 2^(-age / half_life)) / 2, 1 for a note of today
 * down to 1/2 for a very old one (age in days, negative counts as 0). */
double meta_recency(double age, double half_life);

#endif
