/* store_nrec — the note_meta table (schema version 7, docs/schema.md): one
 * packed metadata record per note (store/noterec.h), derived from the
 * note's fields, tags, aliases and file time, written wherever those are,
 * verified by `trove check`, and read by search through a blob handle.
 *
 * A reader owns one sqlite3_blob and the bytes of the last record it read;
 * close it (store_nrec_reader_free) before the read transaction ends. */
#ifndef TROVE_STORE_NREC_H
#define TROVE_STORE_NREC_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/buf.h"

#define STORE_NREC_SCHEMA_SQL \
    "CREATE TABLE IF NOT EXISTS note_meta(doc_id INTEGER PRIMARY KEY, rec BLOB NOT NULL);"

/* The record of note doc_id as its rows now are, into out. */
trove_err store_nrec_build(store *st, int64_t doc_id, tbuf *out);
/* Write (or replace) the record of note doc_id; drop it. */
trove_err store_nrec_write(store *st, int64_t doc_id);
/* Write the record of a note just inserted without frontmatter fields
 * (docs.meta NULL), from what the insert wrote rather than by reading the
 * rows back: its file time, its file name's date (name_date NULL: none),
 * its tags as inserted (duplicates dropped, as the table's key drops them)
 * and its alias keys in order. The same bytes as store_nrec_write (trove
 * check rebuilds and compares). */
trove_err store_nrec_write_plain(store *st, int64_t doc_id, int64_t mtime_ns,
                                 const double *name_date, char *const *tags, size_t n_tags,
                                 char *const *aliases, size_t n_aliases);
trove_err store_nrec_delete(store *st, int64_t doc_id);
/* Write the record of every note `sql` selects (one column, the note id;
 * ?1 bound to arg when sql has it): the upgrade, a snapshot's rollback. */
trove_err store_nrec_write_each(store *st, const char *sql, int64_t arg);
/* `trove check`: add(ctx, line) for notes whose record is missing or does
 * not match their rows, and records of no note. */
trove_err store_nrec_check(store *st, void (*add)(void *ctx, const char *line), void *ctx);

typedef struct store_nrec_reader store_nrec_reader;
store_nrec_reader *store_nrec_reader_new(store *st);
void store_nrec_reader_free(store_nrec_reader *r);
/* 1 and the record of doc_id in *data (valid until the next read), 0 when
 * the note has none, -1 and *rc on an error. */
int store_nrec_read(store_nrec_reader *r, int64_t doc_id, const uint8_t **data, size_t *len,
                    trove_err *rc);

#endif
