#include "store/store_nrec.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/noterec.h"
#include "store/store_nmap.h"
#include "store/store_int.h"
#include "util/mem.h"

/* The rows a record holds, in its order (noterec.h); columns src, type,
 * num, key, txt. */
static const char nrec_rows_sql[] =
    "SELECT * FROM (SELECT 1, type, num, key, txt FROM fields WHERE doc_id = ?1 ORDER BY rowid)"
    " UNION ALL SELECT * FROM (SELECT 2, 1, NULL, '', tag FROM tags WHERE doc_id = ?1"
    " ORDER BY tag)"
    " UNION ALL SELECT * FROM (SELECT 3, 1, NULL, '', name FROM names WHERE doc_id = ?1"
    " ORDER BY rowid)";

trove_err store_nrec_build(store *st, int64_t doc_id, tbuf *out)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT mtime_ns FROM docs WHERE id = ?1");
    if (!s)
        return store_fail(st, "reading a note's metadata");
    sqlite3_bind_int64(s, 1, doc_id);
    trove_err rc = TROVE_OK;
    int64_t mtime = store_step(st, s, "reading a note's metadata", &rc) > 0
                        ? sqlite3_column_int64(s, 0) : 0;
    store_stmt_put(st, s);
    if (rc)
        return rc;
    noterec_begin(out, mtime);
    if (!(s = store_stmt_get(st, nrec_rows_sql)))
        return store_fail(st, "reading a note's metadata");
    sqlite3_bind_int64(s, 1, doc_id);
    while (store_step(st, s, "reading a note's metadata", &rc) > 0) {
        noterec_entry e = {
            .src = sqlite3_column_int(s, 0),
            .type = sqlite3_column_int(s, 1),
            .has_num = sqlite3_column_type(s, 2) != SQLITE_NULL,
            .num = sqlite3_column_double(s, 2),
            .key = (const char *)sqlite3_column_text(s, 3),
            .key_len = (size_t)sqlite3_column_bytes(s, 3),
            .txt = (const char *)sqlite3_column_text(s, 4),
            .txt_len = (size_t)sqlite3_column_bytes(s, 4),
        };
        if (!e.key)
            e.key = "";
        noterec_add(out, &e);
    }
    store_stmt_put(st, s);
    return rc;
}

static trove_err nrec_put(store *st, int64_t doc_id, const tbuf *rec)
{
    sqlite3_stmt *s = store_stmt_get(st, "INSERT OR REPLACE INTO note_meta(doc_id, rec)"
                                         " VALUES (?1, ?2)");
    if (!s)
        return store_fail(st, "writing a note's metadata");
    trove_err rc = TROVE_OK;
    sqlite3_bind_int64(s, 1, doc_id);
    sqlite3_bind_blob(s, 2, rec->data, (int)rec->len, SQLITE_STATIC);
    store_step(st, s, "writing a note's metadata", &rc);
    store_stmt_put(st, s);
    return rc;
}

trove_err store_nrec_write(store *st, int64_t doc_id)
{
    tbuf rec = {0};
    store_nmap_mark_note(st, doc_id);   /* the note's date comes from its record */
    trove_err rc = store_nrec_build(st, doc_id, &rec);
    if (rc == TROVE_OK)
        rc = nrec_put(st, doc_id, &rec);
    tbuf_free(&rec);
    return rc;
}

static int cmp_tag(const void *a, const void *b)
{
    /* the tags table's BINARY order (memcmp, then length): strcmp for
     * strings without NUL bytes */
    return strcmp(*(char *const *)a, *(char *const *)b);
}

trove_err store_nrec_write_plain(store *st, int64_t doc_id, int64_t mtime_ns,
                                 const double *name_date, char *const *tags, size_t n_tags,
                                 char *const *aliases, size_t n_aliases)
{
    store_nmap_mark_note(st, doc_id);
    tbuf rec = {0};
    noterec_begin(&rec, mtime_ns);
    if (name_date) {   /* STORE_FIELDS_OF's file-name row: key '', type 4, txt NULL */
        noterec_entry e = {.src = NOTEREC_FIELD, .type = 4, .has_num = 1, .num = *name_date,
                           .key = ""};
        noterec_add(&rec, &e);
    }
    char **sorted = n_tags ? xmalloc(n_tags * sizeof *sorted) : NULL;
    if (n_tags)
        memcpy(sorted, tags, n_tags * sizeof *sorted);
    if (n_tags > 1)
        qsort(sorted, n_tags, sizeof *sorted, cmp_tag);
    for (size_t i = 0; i < n_tags; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
            continue;
        noterec_entry e = {.src = NOTEREC_TAG, .type = 1, .key = "", .txt = sorted[i],
                           .txt_len = strlen(sorted[i])};
        noterec_add(&rec, &e);
    }
    free(sorted);
    for (size_t i = 0; i < n_aliases; i++) {
        noterec_entry e = {.src = NOTEREC_ALIAS, .type = 1, .key = "", .txt = aliases[i],
                           .txt_len = strlen(aliases[i])};
        noterec_add(&rec, &e);
    }
    trove_err rc = nrec_put(st, doc_id, &rec);
    tbuf_free(&rec);
    return rc;
}

trove_err store_nrec_delete(store *st, int64_t doc_id)
{
    store_nmap_mark_note(st, doc_id);
    sqlite3_stmt *s = store_stmt_get(st, "DELETE FROM note_meta WHERE doc_id = ?1");
    if (!s)
        return store_fail(st, "deleting a note's metadata");
    sqlite3_bind_int64(s, 1, doc_id);
    trove_err rc = TROVE_OK;
    store_step(st, s, "deleting a note's metadata", &rc);
    store_stmt_put(st, s);
    return rc;
}

/* The ids `sql` selects, read in full first: writing while its cursor is
 * open would let it see the rows it writes. */
static trove_err select_ids(store *st, const char *sql, int64_t arg, int64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    size_t cap = 0;
    sqlite3_stmt *s = store_stmt_get(st, sql);
    if (!s)
        return store_fail(st, "listing notes");
    if (sqlite3_bind_parameter_count(s) > 0)
        sqlite3_bind_int64(s, 1, arg);
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "listing notes", &rc) > 0) {
        xgrow(ids, &cap, *n + 1, sizeof **ids);
        (*ids)[(*n)++] = sqlite3_column_int64(s, 0);
    }
    store_stmt_put(st, s);
    return rc;
}

trove_err store_nrec_write_each(store *st, const char *sql, int64_t arg)
{
    int64_t *ids;
    size_t n;
    trove_err rc = select_ids(st, sql, arg, &ids, &n);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++)
        rc = store_nrec_write(st, ids[i]);
    free(ids);
    return rc;
}

trove_err store_nrec_check(store *st, void (*add)(void *ctx, const char *line), void *ctx)
{
    int64_t *ids;
    size_t n, bad = 0;
    int64_t first = 0;
    trove_err rc = select_ids(st, "SELECT id FROM docs ORDER BY id", 0, &ids, &n);
    tbuf want = {0};
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        rc = store_nrec_build(st, ids[i], &want);
        if (rc == TROVE_OK &&
            !store_blob_equals(st, "SELECT rec FROM note_meta WHERE doc_id = ?1", ids[i], &want,
                               "reading a note's metadata", &rc) &&
            rc == TROVE_OK && bad++ == 0)
            first = ids[i];
    }
    tbuf_free(&want);
    free(ids);
    char line[200];
    if (rc == TROVE_OK && bad) {
        snprintf(line, sizeof line, "%zu notes have a metadata record (note_meta) missing or not"
                 " matching their fields, tags, aliases and file time (note id %lld first)",
                 bad, (long long)first);
        add(ctx, line);
    }
    if (rc == TROVE_OK &&
        (rc = select_ids(st, "SELECT doc_id FROM note_meta WHERE doc_id NOT IN"
                         " (SELECT id FROM docs)", 0, &ids, &n)) == TROVE_OK) {
        if (n) {
            snprintf(line, sizeof line, "%zu metadata records (note_meta) belong to no note", n);
            add(ctx, line);
        }
        free(ids);
    }
    return rc;
}

struct store_nrec_reader {
    store *st;
    sqlite3_blob *blob;
    uint8_t *buf;
    size_t cap;
};

store_nrec_reader *store_nrec_reader_new(store *st)
{
    store_nrec_reader *r = xcalloc(1, sizeof *r);
    r->st = st;
    return r;
}

void store_nrec_reader_free(store_nrec_reader *r)
{
    if (!r)
        return;
    if (r->blob)
        sqlite3_blob_close(r->blob);
    free(r->buf);
    free(r);
}

int store_nrec_read(store_nrec_reader *r, int64_t doc_id, const uint8_t **data, size_t *len,
                    trove_err *rc)
{
    /* no such row: a note without a record (the caller reads its rows) */
    int at = store_blob_at(r->st, &r->blob, "note_meta", "rec", doc_id,
                           "reading a note's metadata", rc);
    if (at <= 0)
        return at;
    int n = sqlite3_blob_bytes(r->blob);
    if ((size_t)n > r->cap) {
        r->cap = (size_t)n;
        r->buf = xrealloc(r->buf, r->cap);
    }
    if (n > 0 && sqlite3_blob_read(r->blob, r->buf, n, 0) != SQLITE_OK) {
        *rc = store_fail(r->st, "reading a note's metadata");
        return -1;
    }
    *data = r->buf;
    *len = (size_t)n;
    return 1;
}
