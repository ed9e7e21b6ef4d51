/* nmapcol — the field columns of one note-map segment (note_map kind 2,
 * store_nmap.h; docs/schema.md): for every frontmatter key the segment's
 * notes hold, a dictionary of its distinct values and one code per note,
 * so that search decides a --where condition once per distinct value and
 * then per note with a table index, reading no record (docs/performance.md,
 * session 30). No SQL here: store_nmap.c writes and reads the rows.
 *
 * Layout, little-endian:
 *   header: u8 version (1), u8 flags (bit 0: keys left out of the
 *           directory), u16 key count, u16 slot count (notes 0 .. n-1 of
 *           the segment), u32 directory end (where the blocks begin);
 *   the slots with a record: a bit per slot (slot & 7 of byte slot / 8);
 *   directory, keys in byte order: u8 key length, key bytes, u8 coded,
 *           u32 block offset, u32 block length (from the row's start; 0, 0
 *           when not coded);
 *   a block per coded key: u16 value count, u16 set count, u8 code width
 *           (1 or 2), the values (u8 type, u8 has_num, f64 num, u32 text
 *           length or 0xffffffff for NULL, the text), the sets (u8 count,
 *           that many u16 value indexes, ascending), then a code per slot:
 *           0 the note lacks the key, 1..V its one value (index + 1),
 *           V+1..V+S a set (a list), all ones (0xff, 0xffff): unknown
 *           (no record: search reads the tables).
 *
 * Bounds (beyond them the record decides, as before): a key is coded when
 * its name is at most NMAPCOL_MAX_KEY bytes, each text value at most
 * NMAPCOL_MAX_TEXT bytes, a list at most NMAPCOL_MAX_SET distinct values,
 * and values + sets at most NMAPCOL_MAX_CODES in the segment; of those, the
 * NMAPCOL_MAX_CODED keys most notes of the segment hold (ties by name).
 * Keys not coded are listed with coded 0 (a name too long, or a key past
 * the first NMAPCOL_MAX_KEYS, a name with a NUL byte, is not listed: flags bit 0 then says an
 * unlisted key is unknown, not absent).
 *
 * A text value is kept up to its first NUL byte, as search's record path
 * reads it (a C string); a key holding a NUL byte is not listed. The parser checks every
 * length and index against the bytes it was given: a row is bytes from a
 * file. */
#ifndef TROVE_NMAPCOL_H
#define TROVE_NMAPCOL_H

#include <stddef.h>
#include <stdint.h>

#include "store/noterec.h"
#include "util/buf.h"

#define NMAPCOL_VERSION 1
#define NMAPCOL_HEADER 10
#define NMAPCOL_MAX_KEY 255
#define NMAPCOL_MAX_TEXT 256
#define NMAPCOL_MAX_SET 64
#define NMAPCOL_MAX_CODES 4000
#define NMAPCOL_MAX_CODED 64
#define NMAPCOL_MAX_KEYS 4096   /* listed per segment */
#define NMAPCOL_UNKNOWN 0xffffffffu

/* ---- building a row (the store, at commit and by check) ---------------- */

typedef struct nmapcol_builder nmapcol_builder;
nmapcol_builder *nmapcol_builder_new(void);
void nmapcol_builder_free(nmapcol_builder *b);
/* Slot `slot` (< 65536, ascending) has a record; its field entries follow. */
void nmapcol_note(nmapcol_builder *b, uint32_t slot);
/* A field entry (src NOTEREC_FIELD) of the note begun last. */
void nmapcol_field(nmapcol_builder *b, const noterec_entry *e);
/* The note begun last has a malformed record: unknown for every key. */
void nmapcol_note_unknown(nmapcol_builder *b);
/* The row into out (emptied; empty when no note was begun). */
void nmapcol_finish(nmapcol_builder *b, tbuf *out);

/* ---- reading a row ------------------------------------------------------ */

typedef struct nmapcol_dir_entry {
    const uint8_t *key;   /* into the bytes given to nmapcol_dir_find */
    size_t key_len;
    int coded;
    uint32_t off, len;
} nmapcol_dir_entry;

/* The header's fields; -1 when it is not a row of this version. */
int nmapcol_header(const uint8_t *p, size_t len, int *flags, uint32_t *n_keys,
                   uint32_t *n_slots, uint32_t *dir_end);
/* Look key up in the directory (p[0..len) holds the row's first dir_end
 * bytes at least): 1 and *e when listed, 0 when not, -1 malformed. */
int nmapcol_dir_find(const uint8_t *p, size_t len, const char *key, size_t key_len,
                     nmapcol_dir_entry *e);

/* 1 when the row (its first dir_end bytes, in p[0..len)) says the note at
 * slot has a record (a key it does not list is then absent from it). */
int nmapcol_has_record(const uint8_t *p, size_t len, uint32_t slot);

typedef struct nmapcol_value {
    int type, has_num;
    double num;
    char *txt;            /* NUL-terminated copy; NULL: SQL NULL */
} nmapcol_value;

/* One key's column of one segment, decoded (owns its memory). */
typedef struct nmapcol_col {
    uint32_t n_values, n_sets, n_slots;
    nmapcol_value *values;
    uint32_t *set_start;  /* n_sets + 1 offsets into set_codes */
    uint16_t *set_codes;  /* value indexes */
    int width;
    uint8_t *codes;       /* n_slots * width bytes */
} nmapcol_col;

/* Decode a key's block (its bytes, block[0..len)); 0, or -1 when
 * malformed (c is then empty). n_slots from the header. */
int nmapcol_col_parse(const uint8_t *block, size_t len, uint32_t n_slots, nmapcol_col *c);
void nmapcol_col_free(nmapcol_col *c);
/* The note at slot's code: 0 absent, 1..n_values a value, then sets;
 * NMAPCOL_UNKNOWN when the column cannot say. */
uint32_t nmapcol_code(const nmapcol_col *c, uint32_t slot);

#endif
