#include "store/store_nmap.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/noterec.h"
#include "store/store_int.h"
#include "util/mem.h"

#define SEG ((int64_t)1 << STORE_NMAP_SEG_BITS)
#define KINDS STORE_NMAP_KINDS
#define KIND_NOTE 0   /* chunk -> note */
#define KIND_DAY 1    /* note -> date */
#define KIND_LEN 7    /* chunk -> tokens */

static int64_t row_of(int64_t id, int kind)
{
    return (id >> STORE_NMAP_SEG_BITS) * KINDS + kind;
}

const char *const store_nmap_date_keys[STORE_NMAP_N_DATE_KEYS] = {"date", "created"};

static void mark_row(store *st, int64_t row)
{
    if (row < 0)
        return;
    size_t need = (size_t)(row >> 3) + 1;
    if (need > st->nmap_marks_len) {
        size_t n = st->nmap_marks_len ? st->nmap_marks_len : 8;
        while (n < need)
            n *= 2;
        st->nmap_marks = xrealloc(st->nmap_marks, n);
        memset(st->nmap_marks + st->nmap_marks_len, 0, n - st->nmap_marks_len);
        st->nmap_marks_len = n;
    }
    st->nmap_marks[row >> 3] |= (uint8_t)(1u << (row & 7));
}

void store_nmap_mark_chunk(store *st, int64_t chunk_id)
{
    if (chunk_id >= 0) {
        mark_row(st, row_of(chunk_id, KIND_NOTE));
        mark_row(st, row_of(chunk_id, KIND_LEN));
    }
}

void store_nmap_mark_note(store *st, int64_t doc_id)
{
    if (doc_id >= 0)
        mark_row(st, row_of(doc_id, KIND_DAY));
}

void store_nmap_mark_all(store *st)
{
    st->nmap_all = 1;
}

void store_nmap_forget(store *st)
{
    free(st->nmap_marks);
    st->nmap_marks = NULL;
    st->nmap_marks_len = 0;
    st->nmap_all = 0;
}

trove_err store_nmap_mark_note_chunks(store *st, int64_t doc_id)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT min(id), max(id) FROM chunks WHERE doc_id = ?1");
    if (!s)
        return store_fail(st, "reading a note's chunks");
    sqlite3_bind_int64(s, 1, doc_id);
    trove_err rc = TROVE_OK;
    if (store_step(st, s, "reading a note's chunks", &rc) > 0 &&
        sqlite3_column_type(s, 0) != SQLITE_NULL) {
        int64_t lo = sqlite3_column_int64(s, 0) >> STORE_NMAP_SEG_BITS;
        int64_t hi = sqlite3_column_int64(s, 1) >> STORE_NMAP_SEG_BITS;
        for (int64_t seg = lo; seg <= hi; seg++) {
            mark_row(st, seg * KINDS + KIND_NOTE);
            mark_row(st, seg * KINDS + KIND_LEN);
        }
    }
    store_stmt_put(st, s);
    return rc;
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The tokens of all columns in an FTS5 docsize record (a varint per
 * column, SQLite's encoding), as xColumnSize(-1) sums them; -1 when the
 * record is malformed. */
static int64_t docsize_tokens(const uint8_t *p, size_t n)
{
    int64_t total = 0;
    size_t i = 0;
    while (i < n) {
        uint64_t v = 0;
        int k = 0;
        for (;; k++) {
            if (i >= n || k >= 5)
                return -1;   /* a column size is a 32-bit varint */
            uint8_t b = p[i++];
            v = (v << 7) | (b & 0x7f);
            if (!(b & 0x80))
                break;
        }
        total += (int64_t)(v & 0xffffffffu);
    }
    return total;
}

/* Row `row` as the index now is, into out (empty: no slot used; kinds
 * nothing writes yet stay empty). */
static trove_err build_row(store *st, int64_t row, tbuf *out)
{
    int64_t lo = (row / KINDS) << STORE_NMAP_SEG_BITS;
    int kind = (int)(row % KINDS);
    out->len = 0;
    if (kind != KIND_NOTE && kind != KIND_DAY && kind != KIND_LEN)
        return TROVE_OK;
    int width = kind == KIND_DAY ? 8 : kind == KIND_LEN ? 2 : 4;
    sqlite3_stmt *s = store_stmt_get(st, kind == KIND_DAY ? "SELECT doc_id, rec FROM note_meta"
                                                            " WHERE doc_id >= ?1 AND doc_id < ?2"
                                         : kind == KIND_LEN ? "SELECT id, sz FROM chunks_fts_docsize"
                                                              " WHERE id >= ?1 AND id < ?2"
                                                            : "SELECT id, doc_id FROM chunks"
                                                              " WHERE id >= ?1 AND id < ?2");
    if (!s)
        return store_fail(st, "reading the note map");
    sqlite3_bind_int64(s, 1, lo);
    sqlite3_bind_int64(s, 2, lo + SEG);
    uint8_t *a = xmalloc((size_t)(SEG * width));
    uint64_t none;
    double nan = NAN;
    memcpy(&none, &nan, sizeof none);
    for (int64_t i = 0; i < SEG; i++)
        put_le(a + i * width, kind == KIND_DAY ? none : 0, width);
    int64_t used = 0;
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "reading the note map", &rc) > 0) {
        int64_t at = sqlite3_column_int64(s, 0) - lo;
        uint64_t v;
        if (kind == KIND_LEN) {
            int64_t len = docsize_tokens(sqlite3_column_blob(s, 1),
                                         (size_t)sqlite3_column_bytes(s, 1));
            if (len < 0 || len >= 0xffff)
                continue;   /* search asks FTS5 */
            v = (uint64_t)len + 1;
        } else if (kind == KIND_DAY) {
            double days;
            if (noterec_date(sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                             store_nmap_date_keys, STORE_NMAP_N_DATE_KEYS, &days) < 0 ||
                isnan(days))
                continue;   /* no date: search reads the record */
            memcpy(&v, &days, sizeof v);
        } else {
            int64_t doc = sqlite3_column_int64(s, 1);
            if (doc <= 0 || doc > (int64_t)UINT32_MAX)
                continue;   /* not a u32: search asks the chunks table */
            v = (uint64_t)doc;
        }
        put_le(a + at * width, v, width);
        if (at + 1 > used)
            used = at + 1;
    }
    store_stmt_put(st, s);
    if (rc == TROVE_OK)
        tbuf_append(out, (const char *)a, (size_t)(used * width));
    free(a);
    return rc;
}

static trove_err write_row(store *st, int64_t row, const tbuf *data)
{
    sqlite3_stmt *s = store_stmt_get(st, data->len ? "INSERT OR REPLACE INTO note_map(id, data)"
                                                     " VALUES (?1, ?2)"
                                                   : "DELETE FROM note_map WHERE id = ?1");
    if (!s)
        return store_fail(st, "writing the note map");
    sqlite3_bind_int64(s, 1, row);
    if (data->len)
        sqlite3_bind_blob(s, 2, data->data, (int)data->len, SQLITE_STATIC);
    trove_err rc = TROVE_OK;
    store_step(st, s, "writing the note map", &rc);
    store_stmt_put(st, s);
    return rc;
}

/* One past the last row that the index needs or holds. */
static trove_err row_end(store *st, int64_t *end)
{
    sqlite3_stmt *s = store_stmt_get(st, "SELECT (SELECT coalesce(max(id), -1) FROM chunks),"
                                         " (SELECT coalesce(max(doc_id), -1) FROM note_meta),"
                                         " (SELECT coalesce(max(id), -1) FROM note_map)");
    if (!s)
        return store_fail(st, "reading the note map");
    trove_err rc = TROVE_OK;
    *end = 0;
    if (store_step(st, s, "reading the note map", &rc) > 0) {
        int64_t c = sqlite3_column_int64(s, 0), d = sqlite3_column_int64(s, 1);
        int64_t m = sqlite3_column_int64(s, 2);
        if (c >= 0)
            *end = row_of(c, KIND_LEN) + 1;
        if (d >= 0 && row_of(d, KIND_DAY) + 1 > *end)
            *end = row_of(d, KIND_DAY) + 1;
        if (m + 1 > *end)
            *end = m + 1;
    }
    store_stmt_put(st, s);
    return rc;
}

trove_err store_nmap_flush(store *st)
{
    trove_err rc = TROVE_OK;
    if (st->nmap_all) {
        int64_t end;
        if ((rc = row_end(st, &end)) != TROVE_OK)
            return rc;
        for (int64_t row = 0; row < end; row++)
            mark_row(st, row);
    }
    tbuf data = {0};
    for (size_t i = 0; rc == TROVE_OK && i < st->nmap_marks_len * 8; i++)
        if (st->nmap_marks[i >> 3] & (1u << (i & 7))) {
            rc = build_row(st, (int64_t)i, &data);
            if (rc == TROVE_OK)
                rc = write_row(st, (int64_t)i, &data);
        }
    tbuf_free(&data);
    store_nmap_forget(st);
    return rc;
}

trove_err store_nmap_check(store *st, void (*add)(void *ctx, const char *line), void *ctx)
{
    int64_t end, bad = 0, first = 0;
    trove_err rc = row_end(st, &end);
    tbuf want = {0};
    for (int64_t row = 0; rc == TROVE_OK && row < end; row++) {
        rc = build_row(st, row, &want);
        if (rc == TROVE_OK &&
            !store_blob_equals(st, "SELECT data FROM note_map WHERE id = ?1", row, &want,
                               "reading the note map", &rc) &&
            rc == TROVE_OK && bad++ == 0)
            first = row;
    }
    tbuf_free(&want);
    if (rc == TROVE_OK && bad) {
        char line[200];
        snprintf(line, sizeof line, "%lld rows of the note map (note_map) do not match the chunks"
                 " and metadata records (row %lld first)", (long long)bad, (long long)first);
        add(ctx, line);
    }
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct nmap_row {
    uint8_t *data;
    size_t len;
    int loaded;
} nmap_row;

struct store_nmap_reader {
    store *st;
    nmap_row *rows;
    size_t n_rows;
    int absent;      /* no note_map table (an index not upgraded yet) */
};

store_nmap_reader *store_nmap_reader_new(store *st)
{
    store_nmap_reader *r = xcalloc(1, sizeof *r);
    r->st = st;
    return r;
}

void store_nmap_reader_free(store_nmap_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_rows; i++)
        free(r->rows[i].data);
    free(r->rows);
    free(r);
}

/* Row `row`, read once: NULL when it is not there (or no table). */
static const nmap_row *reader_row(store_nmap_reader *r, int64_t row, trove_err *rc)
{
    if (r->absent || row < 0)
        return NULL;
    if ((size_t)row >= r->n_rows) {
        size_t n = r->n_rows ? r->n_rows : 16;
        while (n <= (size_t)row)
            n *= 2;
        r->rows = xrealloc(r->rows, n * sizeof *r->rows);
        memset(r->rows + r->n_rows, 0, (n - r->n_rows) * sizeof *r->rows);
        r->n_rows = n;
    }
    nmap_row *x = &r->rows[row];
    if (x->loaded)
        return x;
    sqlite3_stmt *s = store_stmt_get(r->st, "SELECT data FROM note_map WHERE id = ?1");
    if (!s) {
        r->absent = 1;   /* the caller asks the tables */
        return NULL;
    }
    sqlite3_bind_int64(s, 1, row);
    if (store_step(r->st, s, "reading the note map", rc) > 0) {
        x->len = (size_t)sqlite3_column_bytes(s, 0);
        x->data = xmalloc(x->len ? x->len : 1);
        if (x->len)
            memcpy(x->data, sqlite3_column_blob(s, 0), x->len);
    }
    store_stmt_put(r->st, s);
    x->loaded = *rc == TROVE_OK;
    return x;
}

int store_nmap_chunk_note(store_nmap_reader *r, int64_t chunk_id, int64_t *doc_id, trove_err *rc)
{
    if (chunk_id < 0)
        return 0;
    const nmap_row *x = reader_row(r, row_of(chunk_id, KIND_NOTE), rc);
    if (*rc)
        return -1;
    size_t at = (size_t)(chunk_id & (SEG - 1)) * 4;
    if (!x || at + 4 > x->len)
        return 0;
    uint64_t v = get_le(x->data + at, 4);
    if (!v)
        return 0;
    *doc_id = (int64_t)v;
    return 1;
}

int store_nmap_note_day(store_nmap_reader *r, int64_t doc_id, double *days, trove_err *rc)
{
    if (doc_id < 0)
        return 0;
    const nmap_row *x = reader_row(r, row_of(doc_id, KIND_DAY), rc);
    if (*rc)
        return -1;
    size_t at = (size_t)(doc_id & (SEG - 1)) * 8;
    if (!x || at + 8 > x->len)
        return 0;
    uint64_t v = get_le(x->data + at, 8);
    memcpy(days, &v, sizeof *days);
    return !isnan(*days);
}

int store_nmap_chunk_len(store_nmap_reader *r, int64_t chunk_id, int64_t *len, trove_err *rc)
{
    if (chunk_id < 0)
        return 0;
    const nmap_row *x = reader_row(r, row_of(chunk_id, KIND_LEN), rc);
    if (*rc)
        return -1;
    size_t at = (size_t)(chunk_id & (SEG - 1)) * 2;
    if (!x || at + 2 > x->len)
        return 0;
    uint64_t v = get_le(x->data + at, 2);
    if (!v)
        return 0;
    *len = (int64_t)v - 1;
    return 1;
}
