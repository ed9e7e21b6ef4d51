#include "store/store_nmap.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/nmapcol.h"
#include "store/noterec.h"
#include "store/store_int.h"
#include "util/mem.h"

#define SEG ((int64_t)1 << STORE_NMAP_SEG_BITS)
const char *const store_nmap_date_keys[STORE_NMAP_N_DATE_KEYS] = {"date", "created"};

static void mark_row(store *st, int64_t row)
{
    if (row < 0)
        return;
    size_t need = (size_t)(row >> 3) + 1;
    xgrow_zero(&st->nmap_marks, &st->nmap_marks_len, need, 1);
    st->nmap_marks[row >> 3] |= (uint8_t)(1u << (row & 7));
}

static int64_t row_of(int64_t id, int kind)
{
    return (id >> STORE_NMAP_SEG_BITS) * STORE_NMAP_KINDS + kind;
}

void store_nmap_mark_chunk(store *st, int64_t chunk_id)
{
    if (chunk_id >= 0) {
        mark_row(st, row_of(chunk_id, STORE_NMAP_CHUNK_NOTE));
        mark_row(st, row_of(chunk_id, STORE_NMAP_CHUNK_LEN));
    }
}

void store_nmap_mark_note(store *st, int64_t doc_id)
{
    if (doc_id >= 0) {   /* every kind derived from the note's record or row */
        mark_row(st, row_of(doc_id, STORE_NMAP_NOTE_DATE));
        mark_row(st, row_of(doc_id, STORE_NMAP_FIELDS));
        mark_row(st, row_of(doc_id, STORE_NMAP_NOTE_LINKS));
    }
}

void store_nmap_mark_in_degree(store *st, int64_t doc_id)
{
    if (doc_id >= 0)
        mark_row(st, row_of(doc_id, STORE_NMAP_NOTE_LINKS));
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
            mark_row(st, seg * STORE_NMAP_KINDS + STORE_NMAP_CHUNK_NOTE);
            mark_row(st, seg * STORE_NMAP_KINDS + STORE_NMAP_CHUNK_LEN);
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

/* Kind STORE_NMAP_FIELDS of the segment from lo: the field columns of its
 * notes' records (nmapcol.h). */
static trove_err build_fields(store *st, int64_t lo, tbuf *out)
{
    out->len = 0;
    sqlite3_stmt *s = store_stmt_get(st, "SELECT doc_id, rec FROM note_meta"
                                         " WHERE doc_id >= ?1 AND doc_id < ?2");
    if (!s)
        return store_fail(st, "reading the note map");
    sqlite3_bind_int64(s, 1, lo);
    sqlite3_bind_int64(s, 2, lo + SEG);
    nmapcol_builder *b = nmapcol_builder_new();
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "reading the note map", &rc) > 0) {
        nmapcol_note(b, (uint32_t)(sqlite3_column_int64(s, 0) - lo));
        int64_t mtime;
        noterec_iter it;
        noterec_entry e;
        int more = noterec_open(sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                                &mtime, &it);
        while (more == 0 && (more = noterec_next(&it, &e)) == 1) {
            more = 0;
            nmapcol_field(b, &e);
        }
        if (more < 0)
            nmapcol_note_unknown(b);   /* search reads the record and says it is damaged */
    }
    store_stmt_put(st, s);
    if (rc == TROVE_OK)
        nmapcol_finish(b, out);
    nmapcol_builder_free(b);
    return rc;
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

/* Row `row` as the index now is, into out (empty: no slot used, or a kind
 * this version does not write). */
static trove_err build_row(store *st, int64_t row, tbuf *out)
{
    int64_t lo = (row / STORE_NMAP_KINDS) << STORE_NMAP_SEG_BITS;
    int kind = (int)(row % STORE_NMAP_KINDS);
    out->len = 0;
    if (kind == STORE_NMAP_FIELDS)
        return build_fields(st, lo, out);
    if (!store_nmap_kind_written(kind))
        return TROVE_OK;
    int width = kind == STORE_NMAP_NOTE_DATE ? 8 : kind == STORE_NMAP_CHUNK_LEN ? 2 : 4;
    sqlite3_stmt *s = store_stmt_get(st, kind == STORE_NMAP_NOTE_DATE
                                             ? "SELECT doc_id, rec FROM note_meta"
                                               " WHERE doc_id >= ?1 AND doc_id < ?2"
                                         : kind == STORE_NMAP_CHUNK_LEN
                                             ? "SELECT id, sz FROM chunks_fts_docsize"
                                               " WHERE id >= ?1 AND id < ?2"
                                         : kind == STORE_NMAP_NOTE_LINKS
                                             ? "SELECT id, in_degree, lang FROM docs"
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
        put_le(a + i * width, kind == STORE_NMAP_NOTE_DATE ? none : 0, width);
    int64_t used = 0;
    trove_err rc = TROVE_OK;
    while (store_step(st, s, "reading the note map", &rc) > 0) {
        int64_t at = sqlite3_column_int64(s, 0) - lo;
        uint64_t v;
        if (kind == STORE_NMAP_CHUNK_LEN) {
            int64_t len = docsize_tokens(sqlite3_column_blob(s, 1),
                                         (size_t)sqlite3_column_bytes(s, 1));
            if (len < 0 || len >= 0xffff)
                continue;   /* search asks FTS5 */
            v = (uint64_t)len + 1;
        } else if (kind == STORE_NMAP_NOTE_DATE) {
            double days;
            if (noterec_date(sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                             store_nmap_date_keys, STORE_NMAP_N_DATE_KEYS, &days) < 0 ||
                isnan(days))
                continue;   /* no date: search reads the record */
            memcpy(&v, &days, sizeof v);
        } else if (kind == STORE_NMAP_NOTE_LINKS) {
            int64_t deg = sqlite3_column_int64(s, 1);
            const unsigned char *code = sqlite3_column_text(s, 2);
            size_t n = code ? strlen((const char *)code) : 0;
            if (deg < 0 || deg >= 0xffff || (n != 0 && n != 2))
                continue;   /* search reads the docs row */
            v = (uint64_t)deg + 1;
            if (n == 2)
                v |= (uint64_t)code[0] << 16 | (uint64_t)code[1] << 24;
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
                                         " max((SELECT coalesce(max(doc_id), -1) FROM note_meta),"
                                         "  (SELECT coalesce(max(id), -1) FROM docs)),"
                                         " (SELECT coalesce(max(id), -1) FROM note_map)");
    if (!s)
        return store_fail(st, "reading the note map");
    trove_err rc = TROVE_OK;
    *end = 0;
    if (store_step(st, s, "reading the note map", &rc) > 0) {
        int64_t c = sqlite3_column_int64(s, 0), d = sqlite3_column_int64(s, 1);
        int64_t m = sqlite3_column_int64(s, 2);
        if (c >= 0)
            *end = ((c >> STORE_NMAP_SEG_BITS) + 1) * STORE_NMAP_KINDS;
        if (d >= 0 && ((d >> STORE_NMAP_SEG_BITS) + 1) * STORE_NMAP_KINDS > *end)
            *end = ((d >> STORE_NMAP_SEG_BITS) + 1) * STORE_NMAP_KINDS;
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
            if (store_nmap_kind_written((int)(row % STORE_NMAP_KINDS)))
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
        snprintf(line, sizeof line, "%lld rows of the note map (note_map) do not match the chunks,"
                 " notes and metadata records (row %lld first)", (long long)bad, (long long)first);
        add(ctx, line);
    }
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

/* A row of a fixed-width kind, read a slice at a time: a search asks
 * for ~100-300 entries of kinds 0 and 3, one or two a row, so reading
 * whole rows (16 KiB each, ~250 a kind at 1M notes) copied and faulted
 * in ~10 MB per cold search for ~1 KiB used (docs/performance.md,
 * session 36). `data` is allocated at the row's length and filled where
 * `have` says (the rest is never touched, so never faulted in). */
#define NMAP_SLICE 4096
#define NMAP_MAX_SLICES 32   /* bits of `have`; a longer row is read whole */
typedef struct nmap_row {
    uint8_t *data;
    size_t len;
    uint32_t have;   /* slices of data read (bit k: bytes [k, k+1) x NMAP_SLICE) */
    int loaded;      /* len known (0: no such row) */
} nmap_row;

/* A wanted key's column in one segment. */
typedef struct fcol {
    int state;           /* FCOL_* */
    nmapcol_col col;
} fcol;

enum { FCOL_UNKNOWN, FCOL_ABSENT, FCOL_CODED };

/* A segment's field columns, read once for the wanted keys. */
typedef struct fseg {
    int loaded;
    uint8_t *dir;        /* the row's bytes up to its directory's end */
    size_t dir_len;
    fcol *cols;          /* one per wanted key */
} fseg;

/* Rows a resident reader's store keeps across read transactions
 * (store_nmap_keep): read at data_version `version` of its connection. */
struct store_nmap_kept {
    nmap_row *rows;
    size_t n_rows;
    int64_t version;
};

static void rows_free(nmap_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].data);
    free(rows);
}

void store_nmap_keep(store *st)
{
    if (!st->nmap_kept && sqlite3_db_readonly(st->db, "main") == 1) {
        st->nmap_kept = xcalloc(1, sizeof *st->nmap_kept);
        st->nmap_kept->version = -1;
    }
}

void store_nmap_kept_free(store *st)
{
    if (st->nmap_kept) {
        rows_free(st->nmap_kept->rows, st->nmap_kept->n_rows);
        free(st->nmap_kept);
        st->nmap_kept = NULL;
    }
}

struct store_nmap_reader {
    store *st;
    nmap_row *rows;
    size_t n_rows;
    /* the store's kept rows, once reader_rows found them current (NULL:
     * not looked yet, or none kept: rows above) */
    struct store_nmap_kept *kept;
    int looked;
    char **keys;     /* the keys whose columns are read */
    size_t n_keys;
    fseg *segs;
    size_t n_segs;
    sqlite3_blob *blob;   /* on the last row read (closed by _close) */
    int64_t at_row;       /* the row r->blob is on, when a fixed-width kind's; else -1 */
};

store_nmap_reader *store_nmap_reader_new(store *st)
{
    store_nmap_reader *r = xcalloc(1, sizeof *r);
    r->st = st;
    r->at_row = -1;
    return r;
}

void store_nmap_reader_close(store_nmap_reader *r)
{
    if (r && r->blob) {
        sqlite3_blob_close(r->blob);
        r->blob = NULL;
    }
    if (r)
        r->at_row = -1;
}

void store_nmap_reader_free(store_nmap_reader *r)
{
    if (!r)
        return;
    store_nmap_reader_close(r);
    rows_free(r->rows, r->n_rows);
    for (size_t i = 0; i < r->n_segs; i++) {
        for (size_t k = 0; r->segs[i].cols && k < r->n_keys; k++)
            nmapcol_col_free(&r->segs[i].cols[k].col);
        free(r->segs[i].cols);
        free(r->segs[i].dir);
    }
    free(r->segs);
    for (size_t k = 0; k < r->n_keys; k++)
        free(r->keys[k]);
    free(r->keys);
    free(r);
}

void store_nmap_reader_want(store_nmap_reader *r, const char *const *keys, size_t n)
{
    for (size_t k = 0; k < r->n_keys; k++)
        free(r->keys[k]);
    free(r->keys);
    r->keys = xcalloc(n ? n : 1, sizeof *r->keys);
    for (size_t k = 0; k < n; k++)
        r->keys[k] = xstrdup(keys[k]);
    r->n_keys = n;
}

/* The store's kept rows when it keeps them (store_nmap_keep), emptied
 * first when the index changed since they were read: asked once per
 * reader, in its read transaction (data_version is its snapshot's: the
 * connection is read-only, so only other connections' commits change it). */
static struct store_nmap_kept *kept_rows(store_nmap_reader *r)
{
    if (r->looked)
        return r->kept;
    r->looked = 1;
    struct store_nmap_kept *k = r->st->nmap_kept;
    int stale = k ? store_kept_stale(r->st, &k->version) : -1;
    if (stale < 0)
        return NULL;   /* the reader's own rows, as without a keeper */
    if (stale) {
        rows_free(k->rows, k->n_rows);
        k->rows = NULL;
        k->n_rows = 0;
    }
    return r->kept = k;
}

/* Row `row` of *rows (capacity *n_rows), its length known (its blob
 * opened on r->blob): NULL when it is not there (or no table). */
static nmap_row *row_open(store_nmap_reader *r, nmap_row **rows, size_t *n_rows, int64_t row,
                          trove_err *rc)
{
    xgrow_zero(rows, n_rows, (size_t)row + 1, sizeof **rows);
    nmap_row *x = &(*rows)[row];
    if (x->loaded)
        return x;
    int got = store_blob_at(r->st, &r->blob, "note_map", "data", row, "reading the note map", rc);
    r->at_row = got > 0 ? row : -1;
    if (got < 0)
        return NULL;
    x->len = got ? (size_t)sqlite3_blob_bytes(r->blob) : 0;
    x->data = xmalloc(x->len ? x->len : 1);
    x->have = 0;
    x->loaded = 1;
    return x;
}

/* Bytes [at, at + width) of row `row` read (the slices holding them):
 * the row, or NULL when it is not there or too short (or on a read
 * error, *rc set). A search asks ~4,000 times, for ~20 rows and a few
 * hundred slices: a slice read before is found without a call. */
static const nmap_row *row_bytes(store_nmap_reader *r, int64_t row, size_t at, size_t width,
                                 trove_err *rc)
{
    if (row < 0)
        return NULL;
    struct store_nmap_kept *k = r->looked ? r->kept : kept_rows(r);
    nmap_row **rows = k ? &k->rows : &r->rows;
    size_t *n_rows = k ? &k->n_rows : &r->n_rows;
    nmap_row *x = (size_t)row < *n_rows && (*rows)[row].loaded ? &(*rows)[row]
                                                              : row_open(r, rows, n_rows, row, rc);
    if (!x || at + width > x->len)
        return NULL;
    /* a row longer than `have` can say is read whole, once (bit 0) */
    int whole = x->len > (size_t)NMAP_MAX_SLICES * NMAP_SLICE;
    size_t first = whole ? 0 : at / NMAP_SLICE;
    size_t last = (whole ? x->len - 1 : at + width - 1) / NMAP_SLICE;
    uint32_t want = whole ? 1 : 0;
    for (size_t i = first; !whole && i <= last; i++)
        want |= (uint32_t)1 << i;
    if ((x->have & want) == want)
        return x;
    size_t off = first * NMAP_SLICE, end = (last + 1) * NMAP_SLICE;
    if (end > x->len)
        end = x->len;
    if (r->at_row != row &&
        store_blob_at(r->st, &r->blob, "note_map", "data", row, "reading the note map", rc) <= 0) {
        r->at_row = -1;
        if (*rc == TROVE_OK)   /* gone meanwhile: not this transaction's row */
            *rc = trove_fail(TROVE_ECORRUPT, "note map row %lld vanished", (long long)row);
        return NULL;
    }
    r->at_row = row;
    if (sqlite3_blob_read(r->blob, x->data + off, (int)(end - off), (int)off) != SQLITE_OK) {
        *rc = store_fail(r->st, "reading the note map");
        return NULL;
    }
    x->have |= want;
    return x;
}

/* The `width` bytes of id's entry in its segment's row of `kind`; NULL
 * when the id has none (negative, no row, a row too short) or on a read
 * error (*rc set). */
static const uint8_t *entry_of(store_nmap_reader *r, int64_t id, int kind, size_t width,
                               trove_err *rc)
{
    if (id < 0)
        return NULL;
    size_t at = (size_t)(id & (SEG - 1)) * width;
    const nmap_row *x = row_bytes(r, row_of(id, kind), at, width, rc);
    if (*rc || !x)
        return NULL;
    return x->data + at;
}

int store_nmap_chunk_note(store_nmap_reader *r, int64_t chunk_id, int64_t *doc_id, trove_err *rc)
{
    const uint8_t *e = entry_of(r, chunk_id, STORE_NMAP_CHUNK_NOTE, 4, rc);
    if (!e)
        return *rc ? -1 : 0;
    uint64_t v = get_le(e, 4);
    if (!v)
        return 0;
    *doc_id = (int64_t)v;
    return 1;
}

int store_nmap_note_day(store_nmap_reader *r, int64_t doc_id, double *days, trove_err *rc)
{
    const uint8_t *e = entry_of(r, doc_id, STORE_NMAP_NOTE_DATE, 8, rc);
    if (!e)
        return *rc ? -1 : 0;
    uint64_t v = get_le(e, 8);
    memcpy(days, &v, sizeof *days);
    return !isnan(*days);
}

/* ---- the field columns (kind STORE_NMAP_FIELDS) ------------------------- */

/* n bytes of the open blob from off into a new buffer; NULL on an error. */
static uint8_t *blob_bytes(store_nmap_reader *r, uint32_t off, uint32_t n, trove_err *rc)
{
    uint8_t *p = xmalloc(n ? n : 1);
    if (n && sqlite3_blob_read(r->blob, p, (int)n, (int)off) != SQLITE_OK) {
        *rc = store_fail(r->st, "reading the note map");
        free(p);
        return NULL;
    }
    return p;
}

/* Segment seg's columns of the wanted keys: its directory, then the block
 * of each coded key, by blob reads of those bytes only (a row holds every
 * key's column; a search reads the ones its conditions name). A row that
 * is not there or malformed leaves them unknown: the records decide. */
static void load_fields(store_nmap_reader *r, fseg *g, int64_t seg, trove_err *rc)
{
    g->loaded = 1;
    g->cols = xcalloc(r->n_keys ? r->n_keys : 1, sizeof *g->cols);
    r->at_row = -1;
    if (store_blob_at(r->st, &r->blob, "note_map", "data",
                      seg * STORE_NMAP_KINDS + STORE_NMAP_FIELDS, "reading the note map", rc) <= 0)
        return;
    uint32_t total = (uint32_t)sqlite3_blob_bytes(r->blob);
    uint8_t head[NMAPCOL_HEADER];
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    if (total < NMAPCOL_HEADER ||
        sqlite3_blob_read(r->blob, head, NMAPCOL_HEADER, 0) != SQLITE_OK) {
        if (total >= NMAPCOL_HEADER)
            *rc = store_fail(r->st, "reading the note map");
        return;
    }
    if (nmapcol_header(head, sizeof head, &flags, &n_keys, &n_slots, &dir_end) < 0 ||
        dir_end > total || !(g->dir = blob_bytes(r, 0, dir_end, rc)))
        return;
    g->dir_len = dir_end;
    for (size_t k = 0; k < r->n_keys && *rc == TROVE_OK; k++) {
        nmapcol_dir_entry e;
        int found = nmapcol_dir_find(g->dir, g->dir_len, r->keys[k], strlen(r->keys[k]), &e);
        if (found < 0)
            break;
        if (!found) {
            g->cols[k].state = flags & 1 ? FCOL_UNKNOWN : FCOL_ABSENT;
            continue;
        }
        if (!e.coded || e.off < dir_end || e.off > total || e.len > total - e.off)
            continue;
        uint8_t *block = blob_bytes(r, e.off, e.len, rc);
        if (block && nmapcol_col_parse(block, e.len, n_slots, &g->cols[k].col) == 0)
            g->cols[k].state = FCOL_CODED;
        free(block);
    }
}

int store_nmap_note_field(store_nmap_reader *r, int64_t doc_id, size_t key,
                          const nmapcol_col **col, size_t *col_id, uint32_t *code,
                          trove_err *rc)
{
    if (doc_id < 0 || key >= r->n_keys)
        return 0;
    size_t seg = (size_t)(doc_id >> STORE_NMAP_SEG_BITS);
    xgrow_zero(&r->segs, &r->n_segs, seg + 1, sizeof *r->segs);
    fseg *g = &r->segs[seg];
    if (!g->loaded)
        load_fields(r, g, (int64_t)seg, rc);
    if (*rc)
        return -1;
    uint32_t slot = (uint32_t)(doc_id & (SEG - 1));
    const fcol *c = &g->cols[key];
    if (c->state == FCOL_ABSENT) {
        if (!nmapcol_has_record(g->dir, g->dir_len, slot))
            return 0;
        *code = 0;
        *col = NULL;
    } else if (c->state == FCOL_CODED) {
        *code = nmapcol_code(&c->col, slot);
        if (*code == NMAPCOL_UNKNOWN)
            return 0;
        *col = &c->col;
    } else {
        return 0;
    }
    *col_id = seg * r->n_keys + key;
    return 1;
}

int store_nmap_chunk_len(store_nmap_reader *r, int64_t chunk_id, int64_t *len, trove_err *rc)
{
    const uint8_t *e = entry_of(r, chunk_id, STORE_NMAP_CHUNK_LEN, 2, rc);
    if (!e)
        return *rc ? -1 : 0;
    uint64_t v = get_le(e, 2);
    if (!v)
        return 0;
    *len = (int64_t)v - 1;
    return 1;
}

int store_nmap_note_links(store_nmap_reader *r, int64_t doc_id, int *in_degree, char lang[3],
                          trove_err *rc)
{
    const uint8_t *e = entry_of(r, doc_id, STORE_NMAP_NOTE_LINKS, 4, rc);
    if (!e)
        return *rc ? -1 : 0;
    uint64_t deg = get_le(e, 2);
    if (!deg)
        return 0;
    *in_degree = (int)deg - 1;
    lang[0] = (char)e[2];
    lang[1] = (char)e[3];
    lang[2] = 0;
    return 1;
}
