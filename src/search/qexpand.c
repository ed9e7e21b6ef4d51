/* qexpand — see qexpand.h. */
#include "search/qexpand.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/mem.h"

const char *const qx_kind_names[QX_KINDS] = {"lex", "vec", "hyde"};

void qx_prompt(const char *query, tbuf *out)
{
    tbuf_puts(out, "<|im_start|>user\n/no_think Expand this search query: ");
    tbuf_puts(out, query);
    tbuf_puts(out, "<|im_end|>\n<|im_start|>assistant\n");
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Length of s[0..n) cut to at most max bytes without splitting a UTF-8
 * sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* The line s[0..n) trimmed, cut and cleaned, as a new string. */
static char *clean(const char *s, size_t n)
{
    while (n && is_space(*s))
        s++, n--;
    while (n && is_space(s[n - 1]))
        n--;
    n = utf8_cut(s, n, QX_MAX_LINE);
    char *t = xstrndup(s, n);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7F)
            t[i] = ' ';
    return t;
}

/* The type of a line "type: text" (case-insensitive, "- " bullets and
 * spaces before it tolerated); *rest set past the colon. -1: none. */
static int line_kind(const char *s, size_t n, size_t *rest)
{
    size_t i = 0;
    while (i < n && (is_space(s[i]) || s[i] == '-' || s[i] == '*'))
        i++;
    for (int k = 0; k < QX_KINDS; k++) {
        size_t kl = strlen(qx_kind_names[k]);
        if (n - i > kl && strncasecmp(s + i, qx_kind_names[k], kl) == 0 && s[i + kl] == ':') {
            *rest = i + kl + 1;
            return k;
        }
    }
    return -1;
}

/* Lines the model writes around its answer that carry nothing: an empty
 * think block (Qwen3's /no_think), end-of-turn markers. */
static int is_noise(const char *s, size_t n)
{
    static const char *const noise[] = {"<think>", "</think>", "<|im_end|>", "<|endoftext|>"};
    for (size_t i = 0; i < sizeof noise / sizeof *noise; i++)
        if (n == strlen(noise[i]) && memcmp(s, noise[i], n) == 0)
            return 1;
    return 0;
}

static void take_line(const char *s, size_t n, const char *query, qx_result *out)
{
    char *t = clean(s, n);
    size_t rest = 0;
    int k = *t && !is_noise(t, strlen(t)) ? line_kind(t, strlen(t), &rest) : -2;
    if (k == -2) { /* blank or noise */
        free(t);
        return;
    }
    char *body = k >= 0 ? clean(t + rest, strlen(t + rest)) : NULL;
    free(t);
    if (k < 0 || !*body) {
        out->n_bad++;
    } else if (strcasecmp(body, query) == 0) {
        out->n_same++;
    } else {
        out->n[k]++;
        if (!out->first[k]) {
            out->first[k] = body;
            body = NULL;
        }
    }
    free(body);
}

void qx_parse(const char *text, size_t len, const char *query, qx_result *out)
{
    memset(out, 0, sizeof *out);
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        take_line(text + at, end - at, query ? query : "", out);
        at = end + 1;
    }
}

int qx_usable(const qx_result *r)
{
    return r->first[QX_LEX] || r->first[QX_VEC];
}

void qx_result_free(qx_result *r)
{
    for (int k = 0; k < QX_KINDS; k++)
        free(r->first[k]);
    memset(r, 0, sizeof *r);
}
