#include "util/esc.h"

#include <string.h>

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

size_t esc_utf8_encode(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t esc_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

int esc_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = p[i] < 0x80 ? 1 : esc_utf8_decode(p + i, len - i, &cp);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

void esc_utf8(tbuf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0; /* start of the valid run not yet copied */
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = p[i] < 0x80 ? 1 : esc_utf8_decode(p + i, len - i, &cp);
        if (k) {
            i += k;
            continue;
        }
        tbuf_append(b, s + run, i - run);
        tbuf_puts(b, REPLACEMENT);
        run = ++i;
    }
    tbuf_append(b, s + run, len - run);
}

static int is_line_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029;
}

void esc_line(tbuf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        /* printable ASCII as it stands, a run at a time (a search's text
         * output is mostly that: a call per byte was ~0.2 M instructions of
         * a daemon's rendered answer) */
        size_t run = i;
        while (run < len && p[run] >= 0x20 && p[run] < 0x7F)
            run++;
        if (run > i) {
            tbuf_append(b, s + i, run - i);
            i = run;
            continue;
        }
        size_t k = esc_utf8_decode(p + i, len - i, &cp);
        if (!k) {
            tbuf_puts(b, REPLACEMENT);
            i++;
        } else {
            if (is_line_control(cp))
                tbuf_putc(b, ' ');
            else
                tbuf_append(b, s + i, k);
            i += k;
        }
    }
}

void esc_xml(tbuf *b, const char *s, size_t len, int attr)
{
    const unsigned char *p = (const unsigned char *)s;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = esc_utf8_decode(p + i, len - i, &cp);
        if (!k) {
            tbuf_puts(b, REPLACEMENT);
            i++;
            continue;
        }
        switch (cp) {
        case '<': tbuf_puts(b, "&lt;"); break;
        case '>': tbuf_puts(b, "&gt;"); break;
        case '&': tbuf_puts(b, "&amp;"); break;
        case '"': tbuf_puts(b, "&quot;"); break;
        case '\r': tbuf_puts(b, "&#13;"); break; /* parsers turn a raw CR into LF */
        case '\t': case '\n':
            if (attr)
                tbuf_printf(b, "&#%u;", (unsigned)cp);
            else
                tbuf_putc(b, (char)cp);
            break;
        default:
            if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF)
                tbuf_puts(b, REPLACEMENT);
            else
                tbuf_append(b, s + i, k);
        }
        i += k;
    }
}

static int path_needs_quotes(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        size_t k = esc_utf8_decode(p + i, len - i, &cp);
        if (!k || is_line_control(cp) || cp == '"' || cp == '\\')
            return 1;
        i += k;
    }
    return 0;
}

int esc_path(tbuf *b, const char *s)
{
    if (!path_needs_quotes(s)) {
        tbuf_puts(b, s);
        return 0;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    uint32_t cp;
    tbuf_putc(b, '"');
    for (size_t i = 0; i < len;) {
        size_t k = esc_utf8_decode(p + i, len - i, &cp);
        if (k && !is_line_control(cp)) {
            if (cp == '"' || cp == '\\')
                tbuf_putc(b, '\\');
            tbuf_append(b, s + i, k);
            i += k;
            continue;
        }
        /* An invalid byte, or every byte of a control character. */
        size_t stop = k ? i + k : i + 1;
        for (; i < stop; i++) {
            switch (p[i]) {
            case '\t': tbuf_puts(b, "\\t"); break;
            case '\n': tbuf_puts(b, "\\n"); break;
            case '\r': tbuf_puts(b, "\\r"); break;
            default: tbuf_printf(b, "\\%03o", p[i]);
            }
        }
    }
    tbuf_putc(b, '"');
    return 1;
}

void esc_csv(tbuf *b, const char *s)
{
    tbuf v = {0};
    esc_utf8(&v, s, strlen(s));
    tbuf_putc(b, '"');
    for (const char *q = tbuf_cstr(&v); *q; q++) {
        if (*q == '"')
            tbuf_putc(b, '"');
        tbuf_putc(b, *q);
    }
    tbuf_putc(b, '"');
    tbuf_free(&v);
}
