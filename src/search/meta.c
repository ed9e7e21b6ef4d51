#include "search/meta.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "text/date.h"
#include "util/mem.h"

static const char *const default_date_keys[] = {"date", "created"};

/* Where a condition's key is read: frontmatter fields, or the tags and
 * aliases the index keeps in tables of their own. T, N, X: the columns of
 * type, number and text. */
typedef struct field_source {
    const char *from;    /* "FROM … WHERE fw.doc_id = d.id", then " AND fw.key = ?" when keyed */
    int keyed;
    const char *t, *n, *x;
} field_source;

static const field_source src_fields = {"fields fw", 1, "fw.type", "fw.num", "fw.txt"};
static const field_source src_tags = {"tags fw", 0, "1", "NULL", "fw.tag"};
static const field_source src_aliases = {"names fw", 0, "1", "NULL", "fw.name"};

static const field_source *source_of(const char *key)
{
    if (!strcmp(key, "tags") || !strcmp(key, "tag"))
        return &src_tags;
    if (!strcmp(key, "aliases") || !strcmp(key, "alias"))
        return &src_aliases;
    return &src_fields;
}

static int step(store *st, sqlite3_stmt *s, const char *what, trove_err *rc)
{
    return store_step(st, s, what, rc);
}

/* Fields some note has, most used first, for the message about a key none has. */
static char *known_fields(store *st)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT key FROM fields WHERE key != '' GROUP BY key"
                                         " ORDER BY count(*) DESC, key LIMIT 12");
    tbuf b = {0};
    trove_err rc = TROVE_OK;
    while (s && step(st, s, "listing fields", &rc) > 0)
        tbuf_printf(&b, "%s%s", b.len ? ", " : "", (const char *)sqlite3_column_text(s, 0));
    if (s)
        store_stmt_put(st, s);
    return tbuf_detach(&b);
}

static trove_err check_key(store *st, const char *expr, const char *key)
{
    if (source_of(key) != &src_fields)
        return TROVE_OK;
    sqlite3_stmt *s = store_stmt_get(st, "SELECT 1 FROM fields WHERE key = ? LIMIT 1");
    if (!s)
        return store_fail(st, "reading fields");
    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    trove_err rc = TROVE_OK;
    int found = step(st, s, "reading fields", &rc) > 0;
    store_stmt_put(st, s);
    if (rc || found)
        return rc;
    char *known = known_fields(st);
    rc = trove_fail(TROVE_ENOENT, "--where %s: no note has a field `%s`%s%s", expr, key,
                    *known ? "; fields in the index: " : " (no note has frontmatter fields)", known);
    free(known);
    return rc;
}

static void date_keys_init(meta_filter *mf, const config *cfg)
{
    size_t n = cfg && cfg->n_date_keys ? cfg->n_date_keys : 2;
    mf->date_keys = xcalloc(n, sizeof *mf->date_keys);
    mf->date_sources = xcalloc(n, sizeof *mf->date_sources);
    for (size_t i = 0; i < n; i++) {
        const char *k = cfg && cfg->n_date_keys ? cfg->date_keys[i] : default_date_keys[i];
        mf->date_keys[i] = xstrdup(k);
        for (char *p = mf->date_keys[i]; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        tbuf b = {0};
        tbuf_printf(&b, "frontmatter:%s", mf->date_keys[i]);
        mf->date_sources[i] = tbuf_detach(&b);
    }
    mf->n_date_keys = n;
}

trove_err meta_filter_prepare(store *st, const config *cfg, const char *const *where,
                              size_t n_where, const char *since, const char *until, double now,
                              meta_filter *mf)
{
    memset(mf, 0, sizeof *mf);
    date_keys_init(mf, cfg);
    trove_err rc = TROVE_OK;
    if (since && *since) {
        rc = date_parse_bound(since, now, 0, &mf->since);
        mf->has_since = rc == TROVE_OK;
    }
    if (rc == TROVE_OK && until && *until) {
        rc = date_parse_bound(until, now, 1, &mf->until);
        mf->has_until = rc == TROVE_OK;
    }
    if (rc == TROVE_OK && n_where)
        mf->conds = xcalloc(n_where, sizeof *mf->conds);
    for (size_t i = 0; rc == TROVE_OK && i < n_where; i++) {
        rc = where_parse(where[i], &mf->conds[i]);
        if (rc == TROVE_OK)
            mf->n_conds++;
    }
    for (size_t i = 0; rc == TROVE_OK && i < mf->n_conds; i++)
        rc = check_key(st, where[i], mf->conds[i].key);
    if (rc)
        meta_filter_free(mf);
    return rc;
}

void meta_filter_free(meta_filter *mf)
{
    for (size_t i = 0; i < mf->n_conds; i++)
        where_cond_free(&mf->conds[i]);
    free(mf->conds);
    for (size_t i = 0; i < mf->n_date_keys; i++) {
        free(mf->date_keys[i]);
        free(mf->date_sources[i]);
    }
    free(mf->date_keys);
    free(mf->date_sources);
    memset(mf, 0, sizeof *mf);
}

int meta_filter_active(const meta_filter *mf)
{
    return mf->n_conds || mf->has_since || mf->has_until;
}

/* Numbers go into the SQL as literals: they are doubles this process made,
 * never the user's bytes. */
static void num(tbuf *sql, double v)
{
    tbuf_printf(sql, "%.17g", v);
}

/* "value v matches": the same text (any case), or the same number, day or
 * boolean. */
static void match_equal(const field_source *fs, const where_value *v, tbuf *sql, meta_bind_fn bind,
                        void *ctx)
{
    tbuf_printf(sql, "(%s = ? COLLATE NOCASE", fs->x);
    bind(ctx, v->text);
    if (v->is_number) {
        tbuf_printf(sql, " OR (%s = 2 AND %s = ", fs->t, fs->n);
        num(sql, v->number);
        tbuf_puts(sql, ")");
    }
    if (v->is_date) {
        tbuf_printf(sql, " OR (%s = 4 AND %s >= ", fs->t, fs->n);
        num(sql, v->date);
        tbuf_printf(sql, " AND %s < ", fs->n);
        num(sql, v->date_end);
        tbuf_puts(sql, ")");
    }
    if (v->is_bool)
        tbuf_printf(sql, " OR (%s = 3 AND %s = %d)", fs->t, fs->n, v->boolean);
    tbuf_puts(sql, ")");
}

/* <, <=, >, >=: numbers against numbers, dates against whole days. */
static void match_order(const field_source *fs, where_op op, const where_value *v, tbuf *sql)
{
    static const char *const cmp[] = {[WHERE_LT] = "<", [WHERE_LE] = "<=", [WHERE_GT] = ">",
                                      [WHERE_GE] = ">="};
    if (v->is_number) {
        tbuf_printf(sql, "(%s = 2 AND %s %s ", fs->t, fs->n, cmp[op]);
        num(sql, v->number);
    } else {
        /* a date is its day: <= D is before D's end, > D from its end on */
        int after = op == WHERE_GT || op == WHERE_GE;
        double edge = op == WHERE_LE || op == WHERE_GT ? v->date_end : v->date;
        tbuf_printf(sql, "(%s = 4 AND %s %s ", fs->t, fs->n, after ? ">=" : "<");
        num(sql, edge);
    }
    tbuf_puts(sql, ")");
}

static void cond_sql(const where_cond *w, const char *id, tbuf *sql, meta_bind_fn bind, void *ctx)
{
    const field_source *fs = source_of(w->key);
    int negated = w->op == WHERE_NE || w->op == WHERE_NOT_IN || w->op == WHERE_MISSING;
    /* Correlated: a lookup in fields_doc (covering) per candidate note.
     * `d.id IN (SELECT doc_id ...)` materialised every note with the field
     * first and cost twice as much on the tldr pages (docs/performance.md). */
    tbuf_printf(sql, " AND %sEXISTS (SELECT 1 FROM %s WHERE fw.doc_id = %s",
                negated ? "NOT " : "", fs->from, id);
    if (fs->keyed) {
        tbuf_puts(sql, " AND fw.key = ?");
        bind(ctx, w->key);
    }
    switch (w->op) {
    case WHERE_EXISTS:
    case WHERE_MISSING:
        break;
    case WHERE_GLOB:
        tbuf_printf(sql, " AND lower(%s) GLOB lower(?)", fs->x);
        bind(ctx, w->values[0].text);
        break;
    case WHERE_LT: case WHERE_LE: case WHERE_GT: case WHERE_GE:
        tbuf_puts(sql, " AND ");
        match_order(fs, w->op, &w->values[0], sql);
        break;
    default:   /* =, !=, in, not in */
        tbuf_puts(sql, " AND (0");
        for (size_t i = 0; i < w->n_values; i++) {
            tbuf_puts(sql, " OR ");
            match_equal(fs, &w->values[i], sql, bind, ctx);
        }
        tbuf_puts(sql, ")");
        break;
    }
    tbuf_puts(sql, ")");
}

/* The note's date as an SQL expression on note `id` (meta.h says which);
 * mtime: its docs.mtime_ns, NULL: read by id, only when no field dates it. */
static void date_expr(const meta_filter *mf, const char *id, const char *mtime, tbuf *sql,
                      meta_bind_fn bind, void *ctx)
{
    tbuf_puts(sql, "coalesce(");
    for (size_t i = 0; i < mf->n_date_keys; i++) {
        tbuf_printf(sql, "(SELECT num FROM fields WHERE doc_id = %s AND key = ? AND type = 4"
                         " LIMIT 1), ", id);
        bind(ctx, mf->date_keys[i]);
    }
    tbuf_printf(sql, "(SELECT num FROM fields WHERE doc_id = %s AND key = '' LIMIT 1), ", id);
    if (mtime)
        tbuf_printf(sql, "%s / 86400e9)", mtime);
    else
        tbuf_printf(sql, "(SELECT mtime_ns FROM docs WHERE id = %s) / 86400e9)", id);
}

void meta_filter_sql(const meta_filter *mf, const char *id, const char *mtime, tbuf *sql,
                     meta_bind_fn bind, void *ctx)
{
    for (size_t i = 0; i < mf->n_conds; i++)
        cond_sql(&mf->conds[i], id, sql, bind, ctx);
    if (!mf->has_since && !mf->has_until)
        return;
    tbuf_puts(sql, " AND ");
    date_expr(mf, id, mtime, sql, bind, ctx);
    if (mf->has_since && mf->has_until) {
        /* BETWEEN computes the date once; until is exclusive: the double
         * just below it is the last one in */
        tbuf_puts(sql, " BETWEEN ");
        num(sql, mf->since);
        tbuf_puts(sql, " AND ");
        num(sql, nextafter(mf->until, -INFINITY));
    } else {
        tbuf_puts(sql, mf->has_since ? " >= " : " < ");
        num(sql, mf->has_since ? mf->since : mf->until);
    }
}

trove_err meta_note_date(store *st, const meta_filter *mf, int64_t doc_id, double *days,
                         const char **source)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT key, num FROM fields WHERE doc_id = ?1"
                                         " AND (type = 4 OR key = '') ORDER BY rowid");
    if (!s)
        return store_fail(st, "reading a note's date");
    sqlite3_bind_int64(s, 1, doc_id);
    size_t best = (size_t)-1;   /* index into date_keys; n_date_keys: the file name */
    double best_days = 0;
    trove_err rc = TROVE_OK;
    while (step(st, s, "reading a note's date", &rc) > 0) {
        const char *key = (const char *)sqlite3_column_text(s, 0);
        size_t rank = mf->n_date_keys + 1;
        if (key && !*key)
            rank = mf->n_date_keys;
        for (size_t i = 0; key && i < mf->n_date_keys; i++)
            if (!strcmp(key, mf->date_keys[i]))
                rank = i;
        if (rank <= mf->n_date_keys && (best == (size_t)-1 || rank < best)) {
            best = rank;
            best_days = sqlite3_column_double(s, 1);
        }
    }
    store_stmt_put(st, s);
    if (rc)
        return rc;
    if (best != (size_t)-1) {
        *days = best_days;
        *source = best < mf->n_date_keys ? mf->date_sources[best] : "filename";
        return TROVE_OK;
    }
    s = store_stmt_get(st, "SELECT mtime_ns FROM docs WHERE id = ?1");
    if (!s)
        return store_fail(st, "reading a note's date");
    sqlite3_bind_int64(s, 1, doc_id);
    *days = step(st, s, "reading a note's date", &rc) > 0
                ? (double)sqlite3_column_int64(s, 0) / 86400e9 : 0;
    store_stmt_put(st, s);
    *source = "mtime";
    return rc;
}

double meta_recency(double age, double half_life)
{
    if (!(half_life > 0))
        return 1.0;
    if (!(age > 0))
        age = 0;
    return (1.0 + exp2(-age / half_life)) / 2.0;
}
