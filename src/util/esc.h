/* esc — make arbitrary bytes safe for one output syntax.
 *
 * Notes, file names, queries and config values can hold any bytes. Every
 * front end writes them through these functions so that its output stays
 * valid for its format (UTF-8 text, JSON, XML, CSV, one path per line)
 * whatever the input. Each esc_* function appends to a caller-owned tbuf;
 * nothing here allocates anything the caller must free except that buffer.
 *
 * Policy (docs/cli.md "Bytes that are not text"): invalid UTF-8 becomes
 * U+FFFD, one per invalid byte, in text fields; paths printed one per line
 * are quoted with C escapes when they need it, which is lossless. */
#ifndef TROVE_ESC_H
#define TROVE_ESC_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Decode one UTF-8 sequence of at most n (> 0) bytes at s, strictly: no
 * overlong forms, no surrogates, nothing above U+10FFFF. Returns its length
 * and stores the code point, or returns 0 when the byte at s starts no valid
 * sequence. */
size_t esc_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Encode code point cp (<= U+10FFFF) into out (room for 4 bytes); returns
 * the length. */
size_t esc_utf8_encode(uint32_t cp, char *out);

/* 1 if [s, s+len) is valid UTF-8. */
int esc_utf8_valid(const char *s, size_t len);

/* Append s with every invalid byte replaced by U+FFFD; NUL bytes are kept. */
void esc_utf8(tbuf *b, const char *s, size_t len);

/* One-line text (a title, heading, context, query shown on one line):
 * as esc_utf8, and control characters (C0, DEL, C1, U+2028, U+2029)
 * become a space, so the field cannot break the line it sits on. */
void esc_line(tbuf *b, const char *s);

/* XML 1.0 character data or attribute value: markup escaped, invalid
 * UTF-8 and the characters XML 1.0 cannot carry (C0 controls other than
 * tab/LF/CR, U+FFFE, U+FFFF) become U+FFFD. In an attribute, tab, LF and CR
 * are written as character references so a parser keeps them. */
void esc_xml(tbuf *b, const char *s, size_t len, int attr);

/* A path for line-oriented output (--files, ls): printed as is, unless it
 * holds a control character, a '"', a '\\', a C1 control, U+2028/U+2029 or
 * bytes that are not UTF-8; then it is written in double quotes with C
 * escapes (\t \n \r \" \\, \ooo octal for other bytes), as git quotes
 * paths. Lossless: every byte can be recovered. Returns 1 if quoted. */
int esc_path(tbuf *b, const char *s);

/* RFC 4180 field: always double-quoted, '"' doubled, invalid UTF-8 as
 * U+FFFD. Line breaks stay inside the quotes, as RFC 4180 allows. */
void esc_csv(tbuf *b, const char *s);

#endif
