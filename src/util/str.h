/* str — small string helpers shared by modules. All returned strings are
 * malloc'd and owned by the caller. */
#ifndef TROVE_STR_H
#define TROVE_STR_H

#include <stddef.h>
#include <stdint.h>

/* Unicode case-folded copy (invalid UTF-8 bytes kept as they are). */
char *str_fold(const char *s);

/* Lookup key of a note path or link target: case-folded, "\\" -> "/",
 * leading "./" and "/" dropped, a trailing ".md" removed. */
char *str_note_key(const char *s, size_t len);

/* Last path segment of a note key ("a/b/c" -> "c"); borrowed pointer. */
const char *str_basename(const char *path);

int str_starts_with(const char *s, const char *prefix);
int str_ends_with(const char *s, const char *suffix);

/* Offset of the first invalid UTF-8 sequence, or (size_t)-1 if valid. */
size_t str_utf8_invalid_at(const char *s, size_t len);

/* Parse a whole decimal integer in [min, max] (no sign games, no trailing
 * bytes, no overflow): 1 and *out set, or 0. The one number parser of
 * command-line options. */
int str_to_long(const char *s, long min, long max, long *out);

/* Parse a whole finite floating-point number: 1 and *out set, or 0. */
int str_to_double(const char *s, double *out);

/* 64-bit content hash (xxh3). */
uint64_t str_hash(const void *data, size_t len);

#endif
