/* store_nmap — the note_map table (schema version 9, docs/schema.md):
 * dense arrays derived from the index, so that search maps a matching chunk
 * to its note, reads a note's date and decides a --where condition with an
 * array index instead of a statement or a record read per candidate
 * (docs/performance.md, --where/--since, sessions 29 and 30). Rows hold
 * SEG ids each; row id = segment * STORE_NMAP_KINDS + kind:
 *   kind 0: chunk id -> note id, u32 little-endian per chunk id (0: none);
 *   kind 1: note id -> date in days under the default date keys (date,
 *           created; meta.h's rule, noterec_date), f64 little-endian per
 *           note id (NaN: none);
 *   kind 2: note id -> its frontmatter fields, a column per key:
 *           dictionary-coded values and a code per note (nmapcol.h, which
 *           says the layout and the bounds past which the record decides);
 *   kind 3: note id -> its link prior's inputs (schema version 10): u16
 *           little-endian in-degree + 1 (docs.in_degree; 0: no note, or
 *           65,535 links or more: search reads the docs row), then the two
 *           bytes of docs.lang (its ISO 639-1 code; 0 0 for '', and slot 0
 *           for a code of another length), per note id;
 *   kinds 4..6: not written by this version (kept free; check expects none);
 *   kind 7: chunk id -> its length in tokens, all columns (FTS5's
 *           chunks_fts_docsize, what bm25 reads per row), u16 little-endian
 *           per chunk id holding length + 1 (0: none, or too long: the
 *           rank function asks FTS5; store_rank.h);
 *   kinds 8..15: not written by this version.
 * A row ends after its last used slot; a row with none is not stored.
 * Written at commit (store_commit) for the segments the transaction's
 * writes marked (chunks inserted or deleted, records written or deleted),
 * whole at an upgrade and after a rollback; `trove check`
 * compares every row with a rebuild.
 *
 * A reader (store_nmap_reader) copies what it needs once, lazily, by blob
 * reads (of kinds 0, 1, 3 and 7 the 4 KiB slices of a row that hold the
 * entries asked; of kind 2 only the directory and the columns of the
 * keys it wants), and lives as long as one read transaction
 * (a search); it never answers from another's data, except the rows a
 * keeping store (store_nmap_keep) read at the same data_version. Close it
 * (store_nmap_reader_close: its blob handle) before that transaction ends. */
#ifndef TROVE_STORE_NMAP_H
#define TROVE_STORE_NMAP_H

#include <stddef.h>
#include <stdint.h>

#include "store/nmapcol.h"
#include "store/store.h"

#define STORE_NMAP_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS note_map(id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
#define STORE_NMAP_SEG_BITS 12
#define STORE_NMAP_KINDS 16   /* row id stride per segment */
enum { STORE_NMAP_CHUNK_NOTE = 0, STORE_NMAP_NOTE_DATE = 1, STORE_NMAP_FIELDS = 2,
       STORE_NMAP_NOTE_LINKS = 3, STORE_NMAP_CHUNK_LEN = 7 };
/* The kinds this version writes (a rebuild marks these rows only). */
static inline int store_nmap_kind_written(int kind)
{
    return kind <= STORE_NMAP_NOTE_LINKS || kind == STORE_NMAP_CHUNK_LEN;
}

/* The date keys kind 1 is computed with (search uses it only when the
 * configured keys are these, in this order). */
extern const char *const store_nmap_date_keys[];
#define STORE_NMAP_N_DATE_KEYS 2

/* Marks, from the store's writes (store_int.h holds the state). */
void store_nmap_mark_chunk(store *st, int64_t chunk_id);
void store_nmap_mark_note(store *st, int64_t doc_id);
/* Note doc_id's in-degree changed (kind 3 only). */
void store_nmap_mark_in_degree(store *st, int64_t doc_id);
/* The chunks of note doc_id, before they are deleted. */
trove_err store_nmap_mark_note_chunks(store *st, int64_t doc_id);
void store_nmap_mark_all(store *st);
/* Rewrite the marked rows (inside the write transaction), forget the marks. */
trove_err store_nmap_flush(store *st);
void store_nmap_forget(store *st);
/* `trove check`: add(ctx, line) for rows that differ from a rebuild. */
trove_err store_nmap_check(store *st, void (*add)(void *ctx, const char *line), void *ctx);

/* A resident process's read-only store keeps the rows its readers read
 * (kinds 0, 1, 3 and 7) across read transactions, while the connection's
 * data_version says no other connection committed since (a daemon's
 * searches then read no row of an unchanged index twice); nothing on a
 * store that can write. store_nmap_kept_free: at store_close. */
void store_nmap_keep(store *st);
void store_nmap_kept_free(store *st);

typedef struct store_nmap_reader store_nmap_reader;
store_nmap_reader *store_nmap_reader_new(store *st);
void store_nmap_reader_free(store_nmap_reader *r);
/* Close its blob handle (the next read opens another). */
void store_nmap_reader_close(store_nmap_reader *r);
/* The keys (exact bytes, as fields.key) whose columns
 * store_nmap_note_field reads; set before the first call. */
void store_nmap_reader_want(store_nmap_reader *r, const char *const *keys, size_t n);
/* 1 and the note of chunk_id; 0 when the map does not say (the caller asks
 * the chunks table); -1 and *rc on an error. */
int store_nmap_chunk_note(store_nmap_reader *r, int64_t chunk_id, int64_t *doc_id,
                          trove_err *rc);
/* 1 and the date of note doc_id (days) under store_nmap_date_keys; 0 when
 * the map does not say; -1 and *rc on an error. */
int store_nmap_note_day(store_nmap_reader *r, int64_t doc_id, double *days, trove_err *rc);
/* 1, note doc_id's in-degree and its language's code (lang: 3 bytes,
 * "" when undetermined) as the docs row holds them (kind 3); 0 when the
 * map does not say (the caller reads the row); -1 and *rc on an error. */
int store_nmap_note_links(store_nmap_reader *r, int64_t doc_id, int *in_degree, char lang[3],
                          trove_err *rc);
/* 1 and the length in tokens of chunk_id (kind 7); 0 when the map does not
 * say; -1 and *rc on an error. */
int store_nmap_chunk_len(store_nmap_reader *r, int64_t chunk_id, int64_t *len, trove_err *rc);

/* 1 when the map says note doc_id's value of wanted key `key` (an index
 * into the wanted keys): *code (0: it lacks the key; else nmapcol's code
 * into *col, NULL when the code is 0) and *col_id, the same number for
 * every note of one column (its segment's, for a caller's per-column
 * memo: seg * n_keys + key). 0 when the map cannot say (no row, a key
 * past the bounds, a note without a record): the caller reads the record.
 * -1 and *rc on an error. */
int store_nmap_note_field(store_nmap_reader *r, int64_t doc_id, size_t key,
                          const nmapcol_col **col, size_t *col_id, uint32_t *code,
                          trove_err *rc);

#endif
