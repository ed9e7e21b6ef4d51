/* noterec — a note's packed metadata record, the `note_meta` table's rec
 * (docs/schema.md): its file time and its typed frontmatter fields, tags
 * and aliases in one blob, so that search decides --where/--since/--until
 * on a note with one blob read (sqlite3_blob_reopen) instead of SQL per
 * candidate. No SQL here: store_nrec.c writes and reads the table.
 *
 * Layout, little-endian: u8 version (1), i64 mtime_ns, u32 entry count,
 * then per entry: u8 src, u8 type, u8 has_num, f64 num, u32 key length,
 * u32 txt length (0xffffffff: NULL), the key bytes, the txt bytes. Entries
 * hold fields in their rowid order (a list in its order), then tags, then
 * aliases. noterec_next() checks every length against the blob's end: a
 * record is bytes from a file. Entries point into the caller's blob. */
#ifndef TROVE_NOTEREC_H
#define TROVE_NOTEREC_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define NOTEREC_VERSION 1

enum { NOTEREC_FIELD = 1, NOTEREC_TAG, NOTEREC_ALIAS };

typedef struct noterec_entry {
    int src;            /* NOTEREC_FIELD, _TAG, _ALIAS */
    int type;           /* fields.type (store_field_type); 1 for tags and aliases */
    int has_num;
    double num;
    const char *key;    /* fields.key, "" for tags and aliases; not NUL-terminated */
    size_t key_len;
    const char *txt;    /* NULL: SQL NULL; not NUL-terminated */
    size_t txt_len;
} noterec_entry;

/* Start a record in out (emptied), then add its entries in order. */
void noterec_begin(tbuf *out, int64_t mtime_ns);
void noterec_add(tbuf *out, const noterec_entry *e);

typedef struct noterec_iter {
    const uint8_t *p, *end;
    uint32_t left;
} noterec_iter;

/* 0 and *mtime_ns, it at the first entry; -1 when the header is not a
 * record of this version. */
int noterec_open(const uint8_t *data, size_t len, int64_t *mtime_ns, noterec_iter *it);
/* 1 and the next entry in *e, 0 at the end, -1 when the record is cut
 * short or holds bytes past its last entry. */
int noterec_next(noterec_iter *it, noterec_entry *e);

/* The note's date in days (search/meta.h says the rule): the first of
 * keys[0..n_keys) (lower case) it holds as a date, the first value of a
 * list; else its file name's (key ""); else its file time. Returns the
 * key's index, n_keys for the file name, n_keys + 1 for the file time, -1
 * for a malformed record. */
int noterec_date(const uint8_t *data, size_t len, const char *const *keys, size_t n_keys,
                 double *days);

#endif
