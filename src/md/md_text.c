/* UTF-8 cleaning and the tag/alias lists of an md_doc. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "md/md_int.h"
#include "util/buf.h"
#include "util/mem.h"

size_t md_utf8_decode(const unsigned char *s, size_t n, int32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = (int32_t)c;
        return 1;
    }
    size_t need;
    int32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = -1;
        return 1;
    }
    if (n < need) {
        *cp = -1;
        return 1;
    }
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = -1;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return need;
}

size_t md_utf8_encode(int32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* NUL is replaced too: it would silently truncate the C string. */
char *md_clean_text(const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0;
    while (i < len && s[i] >= 0x01 && s[i] < 0x80 && s[i] != '\r')
        i++;
    if (i == len)
        return xstrndup(src, len);
    /* Worst case every byte becomes the 3-byte U+FFFD. */
    char *out = xmalloc(len * 3 + 1);
    memcpy(out, src, i);
    size_t o = i;
    while (i < len) {
        unsigned c = s[i];
        if (c == '\r' && i + 1 < len && s[i + 1] == '\n') {
            i++;
            continue;
        }
        if (c >= 0x01 && c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        int32_t cp;
        size_t n = md_utf8_decode(s + i, len - i, &cp);
        if (cp <= 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
        } else {
            memcpy(out + o, src + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    return out;
}

/* Clean, trim ASCII space and lower-case s into b. */
static void lower_clean(tbuf *b, const char *s, size_t n)
{
    while (n && (s[0] == ' ' || s[0] == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        n--;
    char *c = md_clean_text(s, n);
    const unsigned char *u = (const unsigned char *)c;
    size_t len = strlen(c);
    for (size_t i = 0; i < len;) {
        if (u[i] < 0x80) {
            char ch = (char)u[i];
            if (ch >= 'A' && ch <= 'Z')
                ch = (char)(ch - 'A' + 'a');
            tbuf_putc(b, ch);
            i++;
            continue;
        }
        int32_t cp;
        size_t k = md_utf8_decode(u + i, len - i, &cp);
        char enc[4];
        tbuf_append(b, enc, md_utf8_encode(utf8proc_tolower(cp), enc));
        i += k;
    }
    free(c);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void tagset_insert(mdp *p, size_t idx)
{
    size_t mask = p->tag_slot_cap - 1;
    size_t i = (size_t)hash_str(p->doc->tags[idx]) & mask;
    while (p->tag_slots[i])
        i = (i + 1) & mask;
    p->tag_slots[i] = idx + 1;
}

void md_add_tag(mdp *p, const char *s, size_t n)
{
    while (n && s[0] == '#')
        s++, n--;
    tbuf b = {0};
    lower_clean(&b, s, n);
    if (b.len == 0) {
        tbuf_free(&b);
        return;
    }
    md_doc *d = p->doc;
    if (p->tag_slot_cap) {
        size_t mask = p->tag_slot_cap - 1;
        for (size_t i = (size_t)hash_str(b.data) & mask; p->tag_slots[i]; i = (i + 1) & mask)
            if (strcmp(d->tags[p->tag_slots[i] - 1], b.data) == 0) {
                tbuf_free(&b);
                return;
            }
    }
    xgrow(&d->tags, &p->cap_tags, d->n_tags + 1, sizeof *d->tags);
    d->tags[d->n_tags++] = tbuf_detach(&b);
    /* Keep the set at most half full. */
    if (d->n_tags * 2 > p->tag_slot_cap) {
        free(p->tag_slots);
        p->tag_slot_cap = p->tag_slot_cap ? p->tag_slot_cap * 2 : 16;
        p->tag_slots = xcalloc(p->tag_slot_cap, sizeof *p->tag_slots);
        for (size_t i = 0; i < d->n_tags; i++)
            tagset_insert(p, i);
    } else {
        tagset_insert(p, d->n_tags - 1);
    }
}

/* Real notes have a handful of aliases; the cap keeps the linear
 * duplicate check from turning quadratic on a hostile list. */
enum { MD_MAX_ALIASES = 256 };

void md_add_alias(mdp *p, const char *s, size_t n)
{
    while (n && (s[0] == ' ' || s[0] == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    md_doc *d = p->doc;
    if (n == 0 || d->n_aliases >= MD_MAX_ALIASES)
        return;
    char *a = md_clean_text(s, n);
    /* Aliases are few (a handful per note), a linear check is enough. */
    for (size_t i = 0; i < d->n_aliases; i++)
        if (strcmp(d->aliases[i], a) == 0) {
            free(a);
            return;
        }
    xgrow(&d->aliases, &p->cap_aliases, d->n_aliases + 1, sizeof *d->aliases);
    d->aliases[d->n_aliases++] = a;
}

void md_set_warning(mdp *p, const char *fmt, ...)
{
    if (p->doc->warning)
        return; /* the first problem is the useful one */
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->doc->warning = md_clean_text(msg, strlen(msg));
}
