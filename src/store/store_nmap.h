/* store_nmap — the note_map table (schema version 9, docs/schema.md):
 * dense arrays derived from the index, so that search maps a matching chunk
 * to its note and reads a note's date with an array index instead of a
 * statement per candidate (docs/performance.md, --where/--since, session
 * 29). Rows hold SEG ids each; row id = segment * STORE_NMAP_KINDS + kind:
 *   kind 0: chunk id -> note id, u32 little-endian per chunk id (0: none);
 *   kind 1: note id -> date in days under the default date keys (date,
 *           created; meta.h's rule, noterec_date), f64 little-endian per
 *           note id (NaN: none);
 *   kinds 2..6: reserved (--where, session 30);
 *   kind 7: chunk id -> its length in tokens, all columns (FTS5's
 *           chunks_fts_docsize, what bm25 reads per row), u16 little-endian
 *           per chunk id holding length + 1 (0: none, or too long: the
 *           rank function asks FTS5; store_rank.h).
 * A row ends after its last used slot; a row with none is not stored.
 * Written at commit (store_commit) for the segments the transaction's
 * writes marked (chunks inserted or deleted, records written or deleted),
 * whole at the v7 -> v8 upgrade and after a rollback; `trove check`
 * compares every row with a rebuild.
 *
 * A reader (store_nmap_reader) copies the rows it needs once, lazily, by
 * statement: it holds no handle on the index, and lives as long as one
 * read transaction (a search); it never answers from another's data. */
#ifndef TROVE_STORE_NMAP_H
#define TROVE_STORE_NMAP_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define STORE_NMAP_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS note_map(id INTEGER PRIMARY KEY, data BLOB NOT NULL);"
#define STORE_NMAP_SEG_BITS 12
#define STORE_NMAP_KINDS 8   /* row id stride per segment */

/* The date keys kind 1 is computed with (search uses it only when the
 * configured keys are these, in this order). */
extern const char *const store_nmap_date_keys[];
#define STORE_NMAP_N_DATE_KEYS 2

/* Marks, from the store's writes (store_int.h holds the state). */
void store_nmap_mark_chunk(store *st, int64_t chunk_id);
void store_nmap_mark_note(store *st, int64_t doc_id);
/* The chunks of note doc_id, before they are deleted. */
trove_err store_nmap_mark_note_chunks(store *st, int64_t doc_id);
void store_nmap_mark_all(store *st);
/* Rewrite the marked rows (inside the write transaction), forget the marks. */
trove_err store_nmap_flush(store *st);
void store_nmap_forget(store *st);
/* `trove check`: add(ctx, line) for rows that differ from a rebuild. */
trove_err store_nmap_check(store *st, void (*add)(void *ctx, const char *line), void *ctx);

typedef struct store_nmap_reader store_nmap_reader;
store_nmap_reader *store_nmap_reader_new(store *st);
void store_nmap_reader_free(store_nmap_reader *r);
/* 1 and the note of chunk_id; 0 when the map does not say (the caller asks
 * the chunks table); -1 and *rc on an error. */
int store_nmap_chunk_note(store_nmap_reader *r, int64_t chunk_id, int64_t *doc_id,
                          trove_err *rc);
/* 1 and the date of note doc_id (days) under store_nmap_date_keys; 0 when
 * the map does not say; -1 and *rc on an error. */
int store_nmap_note_day(store_nmap_reader *r, int64_t doc_id, double *days, trove_err *rc);
/* 1 and the length in tokens of chunk_id (kind 7); 0 when the map does not
 * say; -1 and *rc on an error. */
int store_nmap_chunk_len(store_nmap_reader *r, int64_t chunk_id, int64_t *len, trove_err *rc);

#endif
