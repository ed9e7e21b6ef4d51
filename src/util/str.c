#include "util/str.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <xxhash.h>

#include "util/buf.h"
#include "util/mem.h"

char *str_fold(const char *s)
{
    tbuf b = {0};
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len) {
        if (p[i] < 0x80) {
            char c = (char)p[i];
            tbuf_putc(&b, c >= 'A' && c <= 'Z' ? (char)(c + 32) : c);
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0) {
            tbuf_putc(&b, (char)p[i]);
            i++;
            continue;
        }
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t m = utf8proc_encode_char(utf8proc_tolower(cp), enc);
        tbuf_append(&b, enc, (size_t)m);
        i += (size_t)n;
    }
    return tbuf_detach(&b);
}

char *str_note_key(const char *s, size_t len)
{
    char *raw = xstrndup(s, len);
    for (char *p = raw; *p; p++)
        if (*p == '\\')
            *p = '/';
    const char *start = raw;
    while (str_starts_with(start, "./"))
        start += 2;
    while (*start == '/')
        start++;
    char *key = str_fold(start);
    free(raw);
    size_t kl = strlen(key);
    if (kl > 3 && strcmp(key + kl - 3, ".md") == 0)
        key[kl - 3] = '\0';
    return key;
}

const char *str_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int str_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int str_ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

uint64_t str_hash(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

size_t str_utf8_invalid_at(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (p[i] < 0x80) {
            /* eight ASCII bytes at a time: a note is mostly ASCII */
            i++;
            uint64_t w;
            while (len - i >= 8 && (memcpy(&w, p + i, 8), (w & 0x8080808080808080u) == 0))
                i += 8;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &cp);
        if (n <= 0)
            return i;
        i += (size_t)n;
    }
    return (size_t)-1;
}

int str_to_long(const char *s, long min, long max, long *out)
{
    if (!s || !*s || *s == ' ' || *s == '\t' || *s == '+')
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return 0;
    *out = v;
    return 1;
}

int str_to_double(const char *s, double *out)
{
    if (!s || !*s || *s == ' ' || *s == '\t')
        return 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}
