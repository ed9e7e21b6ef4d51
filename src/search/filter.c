/* filter — the user's filters (collections, folder, languages, path
 * prefix, notes, heading, tags) and the agent boundary's as SQL conditions on docs `d` that every
 * channel appends to its own query, or as a bitmap of allowed notes for
 * the vector scan (search_int.h). */
#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "util/mem.h"
#include "util/str.h"

static void add_bind(search_filter *f, const char *value)
{
    xgrow(&f->binds, &f->cap_binds, f->n_binds + 1, sizeof *f->binds);
    f->binds[f->n_binds++] = value;
}

static const char *filter_own(search_filter *f, char *value)
{
    f->owned = xrealloc(f->owned, (f->n_owned + 1) * sizeof *f->owned);
    f->owned[f->n_owned++] = value;
    return value;
}

/* --folder F: notes under F inside their collection, or, as results print
 * their paths COLLECTION/PATH, under the rest of F in the collection F
 * starts with ("help/en": folder en of collection help; "help": all of it). */
static void folder_filter(search_filter *f, const char *start, size_t len)
{
    tbuf prefix = {0};
    tbuf_append(&prefix, start, len);
    tbuf_putc(&prefix, '/');
    /* substr() of a BLOB counts bytes (of TEXT, characters). */
    tbuf_printf(&f->sql, " AND (substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                prefix.len);
    add_bind(f, filter_own(f, tbuf_detach(&prefix)));
    const char *slash = memchr(start, '/', len);
    size_t coll_len = slash ? (size_t)(slash - start) : len;
    tbuf_puts(&f->sql, " OR (d.collection_id IN (SELECT id FROM collections WHERE name = ?)");
    add_bind(f, filter_own(f, xstrndup(start, coll_len)));
    if (slash) {
        tbuf rest = {0};
        tbuf_append(&rest, slash + 1, len - coll_len - 1);
        tbuf_putc(&rest, '/');
        tbuf_printf(&f->sql, " AND substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                    rest.len);
        add_bind(f, filter_own(f, tbuf_detach(&rest)));
    }
    tbuf_puts(&f->sql, "))");
}

void search_filter_build(search_filter *f, const search_opts *o, const meta_filter *mf)
{
    if (mf)
        meta_filter_sql(mf, "d.id", &f->sql);
    size_t meta_len = f->sql.len;
    /* the agent boundary: every list, bitmap and translation reads it */
    if (o->hide_globs && *o->hide_globs) {
        tbuf_puts(&f->hide, " AND NOT " STORE_HIDE_PATH_SQL("(SELECT name FROM collections WHERE"
                            " id = d.collection_id)", "d.path"));
        f->hide_binds[f->n_hide_binds++] = o->hide_globs;
    }
    if (o->hide_key && *o->hide_key) {
        tbuf_puts(&f->hide, " AND NOT " STORE_PRIVATE_SQL("d.id"));
        f->hide_binds[f->n_hide_binds++] = o->hide_key;
    }
    tbuf_puts(&f->sql, tbuf_cstr(&f->hide));
    for (size_t i = 0; i < f->n_hide_binds; i++)
        add_bind(f, f->hide_binds[i]);
    if (o->n_collections) {
        tbuf_puts(&f->sql, " AND d.collection_id IN (SELECT id FROM collections WHERE name IN (");
        for (size_t i = 0; i < o->n_collections; i++) {
            tbuf_puts(&f->sql, i ? ",?" : "?");
            add_bind(f, o->collections[i]);
        }
        tbuf_puts(&f->sql, "))");
    }
    if (o->folder && *o->folder) {
        size_t len = strlen(o->folder);
        while (len > 0 && o->folder[len - 1] == '/')
            len--;
        const char *start = o->folder;
        while (*start == '/' && len > 0)
            start++, len--;
        if (len > 0) {
            folder_filter(f, start, len);
        }
    }
    if (o->n_langs) {
        tbuf codes = {0};
        for (size_t i = 0; i < o->n_langs; i++)
            tbuf_printf(&codes, "%s%s", i ? " " : "", o->langs[i]);
        tbuf_puts(&f->sql, " AND trove_lang_in(d.lang, d.path, ?)");
        add_bind(f, filter_own(f, tbuf_detach(&codes)));
    }
    if (o->path_prefix && *o->path_prefix) {
        tbuf_printf(&f->sql, " AND substr(CAST(d.path AS BLOB), 1, %zu) = CAST(? AS BLOB)",
                    strlen(o->path_prefix));
        add_bind(f, o->path_prefix);
    }
    if (o->n_doc_refs) {
        /* "COLLECTION/PATH": a collection name never holds '/', so the
         * first one splits it. */
        tbuf_puts(&f->sql, " AND d.id IN (SELECT rd.id FROM docs rd JOIN collections rc"
                           " ON rc.id = rd.collection_id WHERE 0");
        for (size_t i = 0; i < o->n_doc_refs; i++) {
            const char *ref = o->doc_refs[i], *slash = strchr(ref, '/');
            if (!slash)
                continue;
            tbuf_puts(&f->sql, " OR (rc.name = ? AND rd.path = ?)");
            add_bind(f, filter_own(f, xstrndup(ref, (size_t)(slash - ref))));
            add_bind(f, slash + 1);
        }
        tbuf_puts(&f->sql, ")");
    }
    if (o->heading_contains && *o->heading_contains) {
        tbuf_puts(&f->sql, " AND EXISTS (SELECT 1 FROM chunks hc WHERE hc.doc_id = d.id AND"
                           " instr(lower(hc.heading), lower(?)) > 0)");
        add_bind(f, o->heading_contains);
        f->heading = o->heading_contains;
    }
    for (size_t i = 0; i < o->n_tags; i++) {
        const char *t = o->tags[i];
        while (*t == '#')
            t++;
        char *tag = str_fold(t);
        filter_own(f, tag);
        tbuf tagprefix = {0};
        tbuf_printf(&tagprefix, "%s/", tag);
        tbuf_printf(&f->sql, " AND EXISTS (SELECT 1 FROM tags t WHERE t.doc_id = d.id AND"
                             " (t.tag = ? OR substr(t.tag, 1, %zu) = ?))", tagprefix.len);
        add_bind(f, tag);
        add_bind(f, filter_own(f, tbuf_detach(&tagprefix)));
    }
    /* Only --where/--since/--until: the per-row checks ask meta_note_ok()
     * in C on the note id, with no docs row and no SQL per row
     * (docs/performance.md, --where). */
    if (mf && meta_len && f->sql.len == meta_len && !f->heading)
        f->meta_only = mf;
}

void search_filter_free(search_filter *f)
{
    tbuf_free(&f->sql);
    tbuf_free(&f->hide);
    free(f->binds);
    for (size_t i = 0; i < f->n_owned; i++)
        free(f->owned[i]);
    free(f->owned);
}

void search_filter_bind(sqlite3_stmt *s, int first, const search_filter *f)
{
    for (size_t i = 0; i < f->n_binds; i++)
        sqlite3_bind_text(s, first + (int)i, f->binds[i], -1, SQLITE_STATIC);
}

trove_err search_filter_chunks(store *st, const search_filter *f, uint8_t **bits, int64_t *n_bits)
{
    *bits = NULL;
    *n_bits = 0;
    if (!f->heading)
        return TROVE_OK;
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT coalesce(max(id), 0) FROM chunks", &s);
    if (rc)
        return rc;
    int64_t max = step_row(st, s, "filtering passages", &rc) > 0 ? sqlite3_column_int64(s, 0) : 0;
    store_stmt_put(st, s);
    if (rc || (rc = prepare(st, "SELECT id FROM chunks c WHERE 1" SEARCH_HEADING_COND, &s)))
        return rc;
    *n_bits = max + 1;
    *bits = xcalloc((size_t)(*n_bits + 7) / 8, 1);
    sqlite3_bind_text(s, 1, f->heading, -1, SQLITE_STATIC);
    while (step_row(st, s, "filtering passages", &rc) > 0) {
        int64_t id = sqlite3_column_int64(s, 0);
        if (id >= 0 && id < *n_bits)
            (*bits)[id >> 3] |= (uint8_t)(1u << (id & 7));
    }
    store_stmt_put(st, s);
    return rc;
}

/* Bitmap of the note ids the filters allow (NULL when there are none). */
trove_err search_filter_allowed(store *st, const search_filter *f, uint8_t **bits,
                                int64_t *n_bits)
{
    *bits = NULL;
    *n_bits = 0;
    if (f->sql.len == 0)
        return TROVE_OK;
    sqlite3_stmt *s;
    trove_err rc = prepare(st, "SELECT coalesce(max(id), 0) FROM docs", &s);
    if (rc)
        return rc;
    int64_t max = step_row(st, s, "filtering notes", &rc) > 0 ? sqlite3_column_int64(s, 0) : 0;
    store_stmt_put(st, s);
    if (rc)
        return rc;
    *n_bits = max + 1;
    *bits = xcalloc((size_t)(*n_bits + 7) / 8, 1);
    tbuf sql = {0};
    tbuf_printf(&sql, "SELECT d.id FROM docs d WHERE 1%s", tbuf_cstr(&f->sql));
    rc = prepare(st, sql.data, &s);
    tbuf_free(&sql);
    if (rc)
        return rc;
    search_filter_bind(s, 1, f);
    while (step_row(st, s, "filtering notes", &rc) > 0) {
        int64_t id = sqlite3_column_int64(s, 0);
        if (id >= 0 && id < *n_bits)
            (*bits)[id >> 3] |= (uint8_t)(1u << (id & 7));
    }
    store_stmt_put(st, s);
    return rc;
}
