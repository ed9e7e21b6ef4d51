#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static void reserve(tbuf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need > b->cap)
        xgrow(&b->data, &b->cap, need, 1);
}

void tbuf_append(tbuf *b, const void *data, size_t len)
{
    reserve(b, len);
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

char *tbuf_room(tbuf *b, size_t extra)
{
    reserve(b, extra);
    return b->data + b->len;
}

void tbuf_grew(tbuf *b, size_t n)
{
    b->len += n;
    b->data[b->len] = '\0';
}

void tbuf_puts(tbuf *b, const char *s)
{
    tbuf_append(b, s, strlen(s));
}

void tbuf_putc(tbuf *b, char c)
{
    tbuf_append(b, &c, 1);
}

void tbuf_printf(tbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        tbuf_append(b, small, (size_t)n);
        return;
    }
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tbuf_reset(tbuf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void tbuf_free(tbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *tbuf_detach(tbuf *b)
{
    char *p = b->data ? b->data : xstrdup("");
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

const char *tbuf_cstr(const tbuf *b)
{
    return b->data ? b->data : "";
}
