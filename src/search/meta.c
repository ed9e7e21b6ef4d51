#include "search/meta.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "store/noterec.h"
#include "store/store_nrec.h"
#include "text/date.h"
#include "util/mem.h"

/* Where a condition's key is read: frontmatter fields, or the tags and
 * aliases the index keeps in tables of their own. */
enum { SRC_FIELDS = 1, SRC_TAGS, SRC_ALIASES };

static int source_id(const char *key)
{
    if (!strcmp(key, "tags") || !strcmp(key, "tag"))
        return SRC_TAGS;
    if (!strcmp(key, "aliases") || !strcmp(key, "alias"))
        return SRC_ALIASES;
    return SRC_FIELDS;
}

/* A row of fields (or a tag, an alias as a text row) of the note being
 * decided; key and txt are offsets into meta_memo.strs (SIZE_MAX: NULL). */
typedef struct meta_row {
    int src, type, has_num;
    int64_t ord;         /* fields rowid: the order the note lists its values in */
    double num;
    size_t key, txt;
} meta_row;

/* What a search knows of the notes it has decided: known and ok bitmaps by
 * note id, and the rows of the note being read. */
struct meta_memo {
    uint8_t *known, *ok;
    size_t n_bytes;
    int need_tags, need_aliases;
    meta_row *rows;
    size_t n_rows, cap_rows;
    tbuf strs;
    int has_mtime;             /* the loaded note's record gave its file time */
    int64_t mtime_ns;
    store_nrec_reader *reader; /* note_meta's records (store_nrec.h) */
    int want_set;              /* the note map was told the conditions' keys */
    uint8_t *field_cond;       /* per condition: 1 when its key is a field */
    uint8_t **tables;          /* per column (store_nmap_note_field's col_id):
                                  each code's result for the condition */
    size_t n_tables;
};

static int note_ok_sql(void *ctx, int64_t id);

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
    if (source_id(key) != SRC_FIELDS)
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
    size_t n = cfg && cfg->n_date_keys ? cfg->n_date_keys : STORE_NMAP_N_DATE_KEYS;
    mf->date_keys = xcalloc(n, sizeof *mf->date_keys);
    mf->date_sources = xcalloc(n, sizeof *mf->date_sources);
    for (size_t i = 0; i < n; i++) {
        const char *k = cfg && cfg->n_date_keys ? cfg->date_keys[i] : store_nmap_date_keys[i];
        mf->date_keys[i] = xstrdup(k);
        for (char *p = mf->date_keys[i]; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        tbuf b = {0};
        tbuf_printf(&b, "frontmatter:%s", mf->date_keys[i]);
        mf->date_sources[i] = tbuf_detach(&b);
    }
    mf->n_date_keys = n;
    mf->default_keys = n == STORE_NMAP_N_DATE_KEYS;
    for (size_t i = 0; i < n && mf->default_keys; i++)
        mf->default_keys = !strcmp(mf->date_keys[i], store_nmap_date_keys[i]);
}

trove_err meta_filter_prepare(store *st, const config *cfg, const char *const *where,
                              size_t n_where, const char *since, const char *until, double now,
                              meta_filter *mf)
{
    memset(mf, 0, sizeof *mf);
    mf->st = st;
    mf->memo = xcalloc(1, sizeof *mf->memo);
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
    for (size_t i = 0; rc == TROVE_OK && i < mf->n_conds; i++) {
        rc = check_key(st, where[i], mf->conds[i].key);
        int src = source_id(mf->conds[i].key);
        mf->memo->need_tags |= src == SRC_TAGS;
        mf->memo->need_aliases |= src == SRC_ALIASES;
    }
    if (rc)
        meta_filter_free(mf);
    else if (meta_filter_active(mf))   /* the filters' SQL asks trove_note_ok() */
        store_set_note_filter(st, note_ok_sql, mf);
    return rc;
}

void meta_filter_free(meta_filter *mf)
{
    if (mf->st && meta_filter_active(mf))
        store_set_note_filter(mf->st, NULL, NULL);
    for (size_t i = 0; i < mf->n_conds; i++)
        where_cond_free(&mf->conds[i]);
    free(mf->conds);
    for (size_t i = 0; i < mf->n_date_keys; i++) {
        free(mf->date_keys[i]);
        free(mf->date_sources[i]);
    }
    free(mf->date_keys);
    free(mf->date_sources);
    if (mf->memo) {
        free(mf->memo->known);
        free(mf->memo->ok);
        free(mf->memo->rows);
        store_nrec_reader_free(mf->memo->reader);
        tbuf_free(&mf->memo->strs);
        free(mf->memo->field_cond);
        for (size_t i = 0; i < mf->memo->n_tables; i++)
            free(mf->memo->tables[i]);
        free(mf->memo->tables);
        free(mf->memo);
    }
    memset(mf, 0, sizeof *mf);
}

void meta_filter_close(const meta_filter *mf)
{
    if (mf->memo) {
        store_nrec_reader_free(mf->memo->reader);
        mf->memo->reader = NULL;
    }
}

int meta_filter_active(const meta_filter *mf)
{
    return mf->n_conds || mf->has_since || mf->has_until;
}

/* ---- one note's metadata, read once per note and search ------------------ */

static size_t memo_str(struct meta_memo *m, sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    if (!t)
        return SIZE_MAX;
    size_t at = m->strs.len;
    tbuf_append(&m->strs, (const char *)t, (size_t)sqlite3_column_bytes(s, col));
    tbuf_putc(&m->strs, '\0');
    return at;
}

static const char *row_str(const struct meta_memo *m, size_t at)
{
    return at == SIZE_MAX ? NULL : m->strs.data + at;
}

static int cmp_ord(const void *a, const void *b)
{
    const meta_row *x = a, *y = b;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* The rows of `sql` (columns ord, key, type, num, txt, by note ?1) as src. */
static trove_err load_rows(store *st, struct meta_memo *m, const char *sql, int src, int64_t id)
{
    sqlite3_stmt *s = store_stmt_get(st, sql);
    if (!s)
        return store_fail(st, "reading a note's metadata");
    sqlite3_bind_int64(s, 1, id);
    trove_err rc = TROVE_OK;
    while (step(st, s, "reading a note's metadata", &rc) > 0) {
        xgrow(&m->rows, &m->cap_rows, m->n_rows + 1, sizeof *m->rows);
        meta_row *r = &m->rows[m->n_rows++];
        r->src = src;
        r->ord = sqlite3_column_int64(s, 0);
        r->key = memo_str(m, s, 1);
        r->type = sqlite3_column_int(s, 2);
        r->has_num = sqlite3_column_type(s, 3) != SQLITE_NULL;
        r->num = sqlite3_column_double(s, 3);
        r->txt = memo_str(m, s, 4);
    }
    store_stmt_put(st, s);
    return rc;
}

static size_t memo_bytes(struct meta_memo *m, const char *p, size_t len)
{
    if (!p)
        return SIZE_MAX;
    size_t at = m->strs.len;
    tbuf_append(&m->strs, p, len);
    tbuf_putc(&m->strs, '\0');
    return at;
}

/* Whether a field named key[0..len) is one a condition of mf reads. */
static int cond_key(const meta_filter *mf, const char *key, size_t len)
{
    for (size_t i = 0; i < mf->n_conds; i++)
        if (strlen(mf->conds[i].key) == len && !memcmp(mf->conds[i].key, key, len))
            return 1;
    return 0;
}

/* The rows of the note's record (noterec.h): 1, 0 when it has none, -1
 * with *rc on an error or a malformed record. With `only`, the fields that
 * its conditions read and no other (the date is not wanted): fewer copies
 * into the memo, the same decisions. */
static int load_record(store *st, struct meta_memo *m, int64_t id, const meta_filter *only,
                       trove_err *rc)
{
    if (!m->reader)
        m->reader = store_nrec_reader_new(st);
    const uint8_t *data;
    size_t len;
    int got = store_nrec_read(m->reader, id, &data, &len, rc);
    if (got <= 0)
        return got;
    noterec_iter it;
    noterec_entry e;
    int more = noterec_open(data, len, &m->mtime_ns, &it);
    while (more == 0 && (more = noterec_next(&it, &e)) == 1) {
        more = 0;
        if ((e.src == NOTEREC_TAG && !m->need_tags) || (e.src == NOTEREC_ALIAS && !m->need_aliases))
            continue;
        if (only && e.src == NOTEREC_FIELD && !cond_key(only, e.key, e.key_len))
            continue;
        xgrow(&m->rows, &m->cap_rows, m->n_rows + 1, sizeof *m->rows);
        size_t key = memo_bytes(m, e.key, e.key_len), txt = memo_bytes(m, e.txt, e.txt_len);
        m->rows[m->n_rows] = (meta_row){e.src, e.type, e.has_num, (int64_t)m->n_rows, e.num,
                                        key, txt};
        m->n_rows++;
    }
    if (more < 0) {
        *rc = store_damaged(store_path(st), "note %lld has a malformed metadata record"
                            " (note_meta); `trove check` lists them", (long long)id);
        return -1;
    }
    m->has_mtime = 1;
    return 1;
}

/* The rows of note id: its fields in the order it lists them, then its
 * tags and aliases when a condition reads them; from its record, else
 * (an index without one for it) from the tables; `only` as for
 * load_record. */
static trove_err load_note(store *st, struct meta_memo *m, int64_t id, const meta_filter *only)
{
    m->n_rows = 0;
    m->strs.len = 0;
    m->has_mtime = 0;
    trove_err rc = TROVE_OK;
    int got = load_record(st, m, id, only, &rc);
    if (got != 0)
        return rc;
    rc = load_rows(st, m, "SELECT rowid, key, type, num, txt FROM fields"
                          " WHERE doc_id = ?1", SRC_FIELDS, id);
    if (m->n_rows > 1)
        qsort(m->rows, m->n_rows, sizeof *m->rows, cmp_ord);
    if (rc == TROVE_OK && m->need_tags)
        rc = load_rows(st, m, "SELECT 0, NULL, 1, NULL, tag FROM tags WHERE doc_id = ?1",
                       SRC_TAGS, id);
    if (rc == TROVE_OK && m->need_aliases)
        rc = load_rows(st, m, "SELECT 0, NULL, 1, NULL, name FROM names WHERE doc_id = ?1",
                       SRC_ALIASES, id);
    return rc;
}

/* One value of a note's key: a row of its record, or a dictionary entry
 * of the note map's column (the same decision either way). */
typedef struct meta_val {
    const char *txt;     /* NULL: SQL NULL */
    int type, has_num;
    double num;
} meta_val;

/* "value v matches" (as the index types values, docs/schema.md): the same
 * text in any ASCII case (SQLite's NOCASE), or the same number, day or
 * boolean. */
static int val_equal(const meta_val *r, const where_value *v)
{
    if (r->txt && sqlite3_stricmp(r->txt, v->text) == 0)
        return 1;
    if (!r->has_num)
        return 0;
    if (v->is_number && r->type == STORE_FIELD_NUMBER && r->num == v->number)
        return 1;
    if (v->is_date && r->type == STORE_FIELD_DATE && r->num >= v->date && r->num < v->date_end)
        return 1;
    return v->is_bool && r->type == STORE_FIELD_BOOL && r->num == v->boolean;
}

/* <, <=, >, >=: numbers against numbers, dates against whole days. */
static int val_order(const meta_val *r, where_op op, const where_value *v)
{
    if (!r->has_num)
        return 0;
    if (v->is_number) {
        if (r->type != STORE_FIELD_NUMBER)
            return 0;
        switch (op) {
        case WHERE_LT: return r->num < v->number;
        case WHERE_LE: return r->num <= v->number;
        case WHERE_GT: return r->num > v->number;
        default: return r->num >= v->number;
        }
    }
    if (r->type != STORE_FIELD_DATE)
        return 0;
    /* a date is its day: <= D is before D's end, > D from its end on */
    double edge = op == WHERE_LE || op == WHERE_GT ? v->date_end : v->date;
    return op == WHERE_GT || op == WHERE_GE ? r->num >= edge : r->num < edge;
}

/* ASCII lower case, as SQLite's lower(), into a NUL-terminated copy. */
static void ascii_lower(tbuf *out, const char *s)
{
    out->len = 0;
    for (; *s; s++)
        tbuf_putc(out, *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s);
    tbuf_putc(out, '\0');
}

static int val_glob(const meta_val *r, const char *pattern)
{
    if (!r->txt)
        return 0;
    tbuf a = {0}, b = {0};
    ascii_lower(&a, pattern);
    ascii_lower(&b, r->txt);
    int match = sqlite3_strglob(a.data, b.data) == 0;
    tbuf_free(&a);
    tbuf_free(&b);
    return match;
}

/* Whether one value of the condition's key matches it (before negation:
 * !=, not in and !exists hold when no value does). */
static int val_matches(const meta_val *r, const where_cond *w)
{
    switch (w->op) {
    case WHERE_EXISTS:
    case WHERE_MISSING:
        return 1;
    case WHERE_GLOB:
        return val_glob(r, w->values[0].text);
    case WHERE_LT: case WHERE_LE: case WHERE_GT: case WHERE_GE:
        return val_order(r, w->op, &w->values[0]);
    default:   /* =, !=, in, not in */
        for (size_t k = 0; k < w->n_values; k++)
            if (val_equal(r, &w->values[k]))
                return 1;
        return 0;
    }
}

static int cond_negated(const where_cond *w)
{
    return w->op == WHERE_NE || w->op == WHERE_NOT_IN || w->op == WHERE_MISSING;
}

/* Condition w on the loaded note: some row of its key matches (none, for
 * !=, not in, !exists); a list matches when any element does. */
static int cond_holds(const struct meta_memo *m, const where_cond *w)
{
    int src = source_id(w->key), any = 0;
    for (size_t i = 0; i < m->n_rows && !any; i++) {
        const meta_row *r = &m->rows[i];
        if (r->src != src || (src == SRC_FIELDS && strcmp(row_str(m, r->key), w->key)))
            continue;
        meta_val v = {row_str(m, r->txt), r->type, r->has_num, r->num};
        any = val_matches(&v, w);
    }
    return cond_negated(w) ? !any : any;
}

/* Condition i's result for each code of a note map column (nmapcol.h):
 * decided once per distinct value, a set (a list) holding when any of its
 * values does. */
static uint8_t *column_table(const where_cond *w, const nmapcol_col *c)
{
    int neg = cond_negated(w);
    uint8_t *t = xmalloc(1 + (size_t)c->n_values + c->n_sets);
    t[0] = (uint8_t)neg;
    for (uint32_t v = 0; v < c->n_values; v++) {
        const nmapcol_value *x = &c->values[v];
        meta_val val = {x->txt, x->type, x->has_num, x->num};
        t[1 + v] = (uint8_t)val_matches(&val, w);
    }
    for (uint32_t s = 0; s < c->n_sets; s++) {
        int any = 0;
        for (uint32_t k = c->set_start[s]; k < c->set_start[s + 1] && !any; k++)
            any = t[1 + c->set_codes[k]];
        t[1 + c->n_values + s] = (uint8_t)(neg ? !any : any);
    }
    for (uint32_t v = 0; v < c->n_values; v++)
        t[1 + v] = (uint8_t)(neg ? !t[1 + v] : t[1 + v]);
    return t;
}

/* Condition i on note id from the note map's columns: 1 holds, 0 does
 * not, 2 the map cannot say (the record decides), -1 with *rc. */
static int cond_from_map(const meta_filter *mf, size_t i, int64_t id, trove_err *rc)
{
    const where_cond *w = &mf->conds[i];
    struct meta_memo *m = mf->memo;
    if (!m->field_cond[i])
        return 2;   /* tags, aliases: their own tables, the record */
    const nmapcol_col *col;
    size_t col_id;
    uint32_t code;
    int got = store_nmap_note_field(mf->nmap, id, i, &col, &col_id, &code, rc);
    if (got <= 0)
        return got < 0 ? -1 : 2;
    if (code == 0)
        return cond_negated(w);
    xgrow_zero(&m->tables, &m->n_tables, col_id + 1, sizeof *m->tables);
    if (!m->tables[col_id])
        m->tables[col_id] = column_table(w, col);
    return m->tables[col_id][code];
}

/* The loaded note's date (meta.h): the first date key it has as a date, in
 * the order of the keys, the first value of a list; else the file name's;
 * else its file time (read here). */
static trove_err loaded_date(store *st, const meta_filter *mf, int64_t id, double *days,
                             const char **source)
{
    const struct meta_memo *m = mf->memo;
    for (size_t k = 0; k < mf->n_date_keys; k++)
        for (size_t i = 0; i < m->n_rows; i++) {
            const meta_row *r = &m->rows[i];
            if (r->src == SRC_FIELDS && r->type == STORE_FIELD_DATE && r->has_num &&
                !strcmp(row_str(m, r->key), mf->date_keys[k])) {
                *days = r->num;
                *source = mf->date_sources[k];
                return TROVE_OK;
            }
        }
    for (size_t i = 0; i < m->n_rows; i++) {
        const meta_row *r = &m->rows[i];
        if (r->src == SRC_FIELDS && !*row_str(m, r->key)) {
            *days = r->num;
            *source = "filename";
            return TROVE_OK;
        }
    }
    *source = "mtime";
    if (m->has_mtime) {
        *days = (double)m->mtime_ns / 86400e9;
        return TROVE_OK;
    }
    sqlite3_stmt *s = store_stmt_get(st, "SELECT mtime_ns FROM docs WHERE id = ?1");
    if (!s)
        return store_fail(st, "reading a note's date");
    sqlite3_bind_int64(s, 1, id);
    trove_err rc = TROVE_OK;
    *days = step(st, s, "reading a note's date", &rc) > 0
                ? (double)sqlite3_column_int64(s, 0) / 86400e9 : 0;
    store_stmt_put(st, s);
    return rc;
}

static void memo_grow(struct meta_memo *m, int64_t id)
{
    size_t need = (size_t)(id >> 3) + 1;
    if (need <= m->n_bytes)
        return;
    size_t n = m->n_bytes ? m->n_bytes : 1024;
    while (n < need)
        n *= 2;
    m->known = xrealloc(m->known, n);
    m->ok = xrealloc(m->ok, n);
    memset(m->known + m->n_bytes, 0, n - m->n_bytes);
    memset(m->ok + m->n_bytes, 0, n - m->n_bytes);
    m->n_bytes = n;
}

int meta_note_ok(store *st, const meta_filter *mf, int64_t id, trove_err *rc)
{
    struct meta_memo *m = mf->memo;
    if (!m || id < 0)
        return 1;
    memo_grow(m, id);
    uint8_t bit = (uint8_t)(1u << (id & 7));
    if (m->known[id >> 3] & bit)
        return (m->ok[id >> 3] & bit) != 0;
    trove_err lrc = TROVE_OK;
    int ok = 1, dated = 0;
    if ((mf->has_since || mf->has_until) && mf->nmap && mf->default_keys) {
        /* the date from the note map, an array index: a note out of range
         * needs no record read (docs/performance.md, session 29) */
        double days;
        dated = store_nmap_note_day(mf->nmap, id, &days, &lrc);
        if (dated > 0)
            ok = (!mf->has_since || days >= mf->since) && (!mf->has_until || days < mf->until);
    }
    /* the conditions from the note map's columns, a table index each; a
     * condition the map cannot answer reads the record (session 30) */
    int need_rec = mf->n_conds && !mf->nmap;
    if (mf->nmap && mf->n_conds && !m->want_set) {
        const char **keys = xcalloc(mf->n_conds, sizeof *keys);
        m->field_cond = xcalloc(mf->n_conds, 1);
        for (size_t i = 0; i < mf->n_conds; i++) {
            keys[i] = mf->conds[i].key;
            m->field_cond[i] = source_id(keys[i]) == SRC_FIELDS;
        }
        store_nmap_reader_want(mf->nmap, keys, mf->n_conds);
        free(keys);
        m->want_set = 1;
    }
    for (size_t i = 0; lrc == TROVE_OK && ok && mf->nmap && i < mf->n_conds; i++) {
        int r = cond_from_map(mf, i, id, &lrc);
        if (r == 2)
            need_rec = 1;
        else if (r >= 0)
            ok = r;
    }
    int want_date = (mf->has_since || mf->has_until) && dated <= 0;
    if (lrc == TROVE_OK && ok && (need_rec || want_date))
        lrc = load_note(st, m, id, want_date ? NULL : mf);
    for (size_t i = 0; lrc == TROVE_OK && ok && need_rec && i < mf->n_conds; i++)
        ok = cond_holds(m, &mf->conds[i]);
    if (lrc == TROVE_OK && ok && !dated && (mf->has_since || mf->has_until)) {
        double days;
        const char *source;
        lrc = loaded_date(st, mf, id, &days, &source);
        ok = (!mf->has_since || days >= mf->since) && (!mf->has_until || days < mf->until);
    }
    if (lrc) {
        *rc = lrc;
        return -1;
    }
    m->known[id >> 3] |= bit;
    if (ok)
        m->ok[id >> 3] |= bit;
    return ok;
}

/* store_set_note_filter's fn: the SQL trove_note_ok(id). */
static int note_ok_sql(void *ctx, int64_t id)
{
    const meta_filter *mf = ctx;
    trove_err rc = TROVE_OK;
    return meta_note_ok(mf->st, mf, id, &rc);
}

void meta_filter_sql(const meta_filter *mf, const char *id, tbuf *sql)
{
    if (meta_filter_active(mf))
        tbuf_printf(sql, " AND trove_note_ok(%s)", id);
}

trove_err meta_note_date(store *st, const meta_filter *mf, int64_t doc_id, double *days,
                         const char **source)
{
    trove_err rc = load_note(st, mf->memo, doc_id, NULL);
    return rc ? rc : loaded_date(st, mf, doc_id, days, source);
}

double meta_recency(double age, double half_life)
{
    if (!(half_life > 0))
        return 1.0;
    if (!(age > 0))
        age = 0;
    return (1.0 + exp2(-age / half_life)) / 2.0;
}
