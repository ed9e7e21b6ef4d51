/* buf — a growable byte string, always NUL-terminated.
 *
 * A zero-initialised tbuf is an empty string ready for use. The buffer owns
 * its `data`; release it with tbuf_free() or take it with tbuf_detach(). */
#ifndef TROVE_BUF_H
#define TROVE_BUF_H

#include <stddef.h>

typedef struct tbuf {
    char *data;  /* NULL until the first append */
    size_t len;
    size_t cap;
} tbuf;

void tbuf_append(tbuf *b, const void *data, size_t len);
void tbuf_puts(tbuf *b, const char *s);
void tbuf_putc(tbuf *b, char c);
void tbuf_printf(tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Room for at least `extra` more bytes at b->data + b->len, for a reader
 * (recv) to fill in place; then tbuf_grew(b, n) with the n bytes it wrote. */
char *tbuf_room(tbuf *b, size_t extra);
void tbuf_grew(tbuf *b, size_t n);
void tbuf_reset(tbuf *b);          /* len = 0, keeps capacity */
void tbuf_free(tbuf *b);
char *tbuf_detach(tbuf *b);        /* caller frees; b becomes empty */
const char *tbuf_cstr(const tbuf *b); /* "" when empty */

#endif
