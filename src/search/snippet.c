#include "search/snippet.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "util/buf.h"
#include "util/mem.h"

typedef struct match {
    size_t start, end;
    size_t term;
} match;

typedef struct collector {
    const snippet_term *terms;
    size_t n_terms;
    match *m;
    size_t n, cap;
} collector;

static int on_token(void *ctx, const char *tok, size_t len, size_t start, size_t end)
{
    collector *c = ctx;
    for (size_t i = 0; i < c->n_terms; i++) {
        size_t tl = strlen(c->terms[i].token);
        int hit = c->terms[i].prefix ? len >= tl && memcmp(tok, c->terms[i].token, tl) == 0
                                     : len == tl && memcmp(tok, c->terms[i].token, tl) == 0;
        if (hit) {
            xgrow(&c->m, &c->cap, c->n + 1, sizeof *c->m);
            c->m[c->n++] = (match){start, end, i};
            break;
        }
    }
    return 0;
}

/* Choose the first match of the best window: most distinct terms, then most
 * matches, then earliest. */
static size_t best_window(const collector *c, size_t max_bytes, size_t *last)
{
    size_t best = 0, best_last = 0;
    int best_distinct = -1, best_count = -1;
    unsigned char *seen = xcalloc(c->n_terms ? c->n_terms : 1, 1);
    for (size_t i = 0; i < c->n; i++) {
        memset(seen, 0, c->n_terms);
        int distinct = 0, count = 0;
        size_t j = i;
        for (; j < c->n && c->m[j].end - c->m[i].start <= max_bytes; j++) {
            if (!seen[c->m[j].term]) {
                seen[c->m[j].term] = 1;
                distinct++;
            }
            count++;
        }
        if (distinct > best_distinct || (distinct == best_distinct && count > best_count)) {
            best = i;
            best_last = j ? j - 1 : 0;
            best_distinct = distinct;
            best_count = count;
        }
    }
    free(seen);
    *last = best_last;
    return best;
}

static int is_cont(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r';
}

/* Emit text[from, to) with whitespace collapsed and matches marked. */
static void emit(tbuf *b, const char *text, size_t from, size_t to, const collector *c)
{
    size_t mi = 0;
    while (mi < c->n && c->m[mi].end <= from)
        mi++;
    int in_space = 0;
    size_t mark_end = 0;
    for (size_t i = from; i < to; i++) {
        if (mark_end && i >= mark_end) {
            tbuf_putc(b, '\x03');
            mark_end = 0;
        }
        if (is_space(text[i])) {
            in_space = 1;
            continue;
        }
        if (in_space && b->len)
            tbuf_putc(b, ' ');
        in_space = 0;
        while (mi < c->n && c->m[mi].start < i && !mark_end)
            mi++;   /* a match cut by the window start */
        if (!mark_end && mi < c->n && c->m[mi].start == i) {
            mark_end = c->m[mi].end;
            /* merge overlapping or touching matches (CJK bigrams) */
            while (mi + 1 < c->n && c->m[mi + 1].start <= mark_end) {
                if (c->m[mi + 1].end > mark_end)
                    mark_end = c->m[mi + 1].end;
                mi++;
            }
            mi++;
            tbuf_putc(b, '\x02');
        }
        tbuf_putc(b, text[i]);
    }
    if (mark_end)
        tbuf_putc(b, '\x03');
}

char *snippet_make(const char *text, size_t len, const snippet_term *terms, size_t n_terms,
                   size_t max_bytes)
{
    collector c = {.terms = terms, .n_terms = n_terms};
    /* on_token compares tokens with the terms alone: no stemming of words
     * that could not be one of them */
    tok_first first = {0};
    for (size_t i = 0; i < n_terms; i++)
        tok_first_add(&first, terms[i].token);
    /* terms that start with ASCII bytes: no word starting otherwise */
    const tok_opts opts = {.stem = 1, .stem_only = &first, .ascii_first = tok_first_ascii(&first)};
    if (n_terms)
        tok_run(&opts, text, len, &c, on_token);
    size_t from = 0;
    if (c.n) {
        size_t last;
        size_t first = best_window(&c, max_bytes, &last);
        size_t span = c.m[last].end - c.m[first].start;
        size_t lead = span < max_bytes ? (max_bytes - span) / 3 : 0;
        from = c.m[first].start > lead ? c.m[first].start - lead : 0;
        /* start at a word boundary when one is near */
        size_t k = from;
        while (k > 0 && k + 24 > from && !is_space(text[k - 1]))
            k--;
        if (k == 0 || is_space(text[k - 1]))
            from = k;
    }
    while (from < len && is_cont((unsigned char)text[from]))
        from++;
    size_t to = from + max_bytes < len ? from + max_bytes : len;
    while (to < len && is_cont((unsigned char)text[to]))
        to++;
    tbuf b = {0};
    if (from > 0)
        tbuf_puts(&b, "…");
    emit(&b, text, from, to, &c);
    if (to < len)
        tbuf_puts(&b, "…");
    free(c.m);
    return tbuf_detach(&b);
}
