/* md — block structure of a note: frontmatter fences, headings (ATX and
 * setext), fenced and indented code, lists and paragraphs, in one pass over
 * the lines. Blockquote markers ("> ", nested "> > ", Obsidian callouts
 * "> [!note]") are stripped first, so fences and headings inside a quote are
 * code and headings too. Inline constructs are handed to md_inline() line by
 * line. */
#include "md/md.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "md/md_int.h"
#include "util/buf.h"
#include "util/mem.h"

enum { PARA_NONE, PARA_PLAIN, PARA_OTHER };

typedef struct line {
    size_t start;    /* first byte */
    size_t cend;     /* end of content: before "\r\n" / "\n" */
    size_t next;     /* start of the next line */
    size_t fs;       /* first non-blank byte (== cend when blank) */
    int indent;      /* columns of leading white space, tabs to 4 */
} line;

typedef struct blocks {
    int quote;               /* blockquote depth of the previous line */
    int para;                /* PARA_* of the paragraph being continued */
    size_t para_start;
    int para_line;
    int list_active;         /* inside a list: indented lines are not code */
    int in_fence;
    char fence_ch;
    size_t fence_len, fence_start;
    int fence_indent;
    int fence_quote;         /* quote depth the fence opened at */
    int in_icode;
    int icode_quote;
    size_t icode_start, icode_end;
} blocks;

/* First non-blank byte and indent of the content starting at `at`. */
static void measure(const char *s, line *l, size_t at)
{
    int col = 0;
    size_t i = at;
    for (; i < l->cend && (s[i] == ' ' || s[i] == '\t'); i++)
        col = s[i] == '\t' ? (col / 4 + 1) * 4 : col + 1;
    l->fs = i;
    l->indent = col;
}

static void read_line(const char *s, size_t len, size_t at, line *l)
{
    const char *nl = memchr(s + at, '\n', len - at);
    size_t e = nl ? (size_t)(nl - s) : len;
    l->start = at;
    l->next = nl ? e + 1 : len;
    if (e > at && s[e - 1] == '\r')
        e--;
    l->cend = e;
    measure(s, l, at);
}

/* Strip up to `max` blockquote markers ('>' after at most 3 spaces, then
 * one optional blank) from the line's content; returns how many. The line
 * keeps its start, so headings and code spans still begin at the line. */
static int strip_quotes(const char *s, line *l, int max)
{
    int q = 0;
    while (q < max && l->indent <= 3 && l->fs < l->cend && s[l->fs] == '>') {
        size_t at = l->fs + 1;
        if (at < l->cend && (s[at] == ' ' || s[at] == '\t'))
            at++;
        measure(s, l, at);
        q++;
    }
    return q;
}

static int is_blank(const line *l)
{
    return l->fs == l->cend;
}

/* "---" or "..." (for closing) alone on a line, trailing blanks allowed. */
static int is_fm_fence(const char *s, const line *l, int closing)
{
    size_t e = l->cend;
    while (e > l->start && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        e--;
    if (e - l->start != 3)
        return 0;
    return memcmp(s + l->start, "---", 3) == 0 || (closing && memcmp(s + l->start, "...", 3) == 0);
}

static void add_code(mdp *p, size_t a, size_t b)
{
    md_doc *d = p->doc;
    xgrow(&d->code, &p->cap_code, d->n_code + 1, sizeof *d->code);
    d->code[d->n_code++] = (md_span){a, b};
}

static void add_heading(mdp *p, int level, char *text, size_t a, size_t b, int ln)
{
    md_doc *d = p->doc;
    xgrow(&d->headings, &p->cap_headings, d->n_headings + 1, sizeof *d->headings);
    d->headings[d->n_headings++] = (md_heading){level, text, a, b, ln};
}

static size_t run_of(const char *s, size_t i, size_t e, char c)
{
    size_t n = 0;
    while (i + n < e && s[i + n] == c)
        n++;
    return n;
}

static int only_blanks(const char *s, size_t i, size_t e)
{
    for (; i < e; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return 0;
    return 1;
}

static int fence_open(mdp *p, blocks *bk, const line *l)
{
    const char *s = p->src;
    char c = s[l->fs];
    if (c != '`' && c != '~')
        return 0;
    size_t n = run_of(s, l->fs, l->cend, c);
    if (n < 3)
        return 0;
    if (c == '`' && memchr(s + l->fs + n, '`', l->cend - l->fs - n))
        return 0; /* a backtick info string is an inline code span */
    bk->in_fence = 1;
    bk->fence_quote = bk->quote;
    bk->fence_ch = c;
    bk->fence_len = n;
    bk->fence_indent = l->indent;
    bk->fence_start = l->start;
    return 1;
}

static int fence_close(mdp *p, const blocks *bk, const line *l)
{
    const char *s = p->src;
    int max_indent = bk->fence_indent > 3 ? bk->fence_indent + 3 : 3;
    if (l->indent > max_indent || l->fs == l->cend || s[l->fs] != bk->fence_ch)
        return 0;
    size_t n = run_of(s, l->fs, l->cend, bk->fence_ch);
    return n >= bk->fence_len && only_blanks(s, l->fs + n, l->cend);
}

/* ATX heading: 1-6 '#' then a blank or the end of the line. */
static int atx_heading(mdp *p, const line *l)
{
    const char *s = p->src;
    size_t n = run_of(s, l->fs, l->cend, '#');
    if (n < 1 || n > 6)
        return 0;
    size_t a = l->fs + n, e = l->cend;
    if (a < e && s[a] != ' ' && s[a] != '\t')
        return 0;
    while (a < e && (s[a] == ' ' || s[a] == '\t'))
        a++;
    while (e > a && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        e--;
    /* Closing sequence: trailing '#'s preceded by a blank (or alone). */
    size_t h = e;
    while (h > a && s[h - 1] == '#')
        h--;
    if (h < e && (h == a || s[h - 1] == ' ' || s[h - 1] == '\t')) {
        e = h;
        while (e > a && (s[e - 1] == ' ' || s[e - 1] == '\t'))
            e--;
    }
    add_heading(p, (int)n, md_clean_text(s + a, e - a), l->start, l->next, p->line);
    md_inline(p, a, e);
    return 1;
}

/* Setext underline: only '=' or only '-' (at least one), then blanks. */
static int setext_level(const char *s, const line *l)
{
    char c = s[l->fs];
    if (c != '=' && c != '-')
        return 0;
    size_t n = run_of(s, l->fs, l->cend, c);
    if (!only_blanks(s, l->fs + n, l->cend))
        return 0;
    return c == '=' ? 1 : 2;
}

static void setext_heading(mdp *p, blocks *bk, const line *l, int level)
{
    const char *s = p->src;
    tbuf t = {0};
    for (size_t at = bk->para_start; at < l->start;) {
        line pl;
        read_line(s, l->start, at, &pl);
        strip_quotes(s, &pl, bk->quote);
        size_t e = pl.cend;
        while (e > pl.fs && (s[e - 1] == ' ' || s[e - 1] == '\t'))
            e--;
        if (t.len && e > pl.fs)
            tbuf_putc(&t, ' ');
        tbuf_append(&t, s + pl.fs, e - pl.fs);
        at = pl.next;
    }
    add_heading(p, level, md_clean_text(t.data ? t.data : "", t.len), bk->para_start, l->next,
                bk->para_line);
    tbuf_free(&t);
}

static int thematic_break(const char *s, const line *l)
{
    char c = s[l->fs];
    if (c != '-' && c != '*' && c != '_')
        return 0;
    int n = 0;
    for (size_t i = l->fs; i < l->cend; i++) {
        if (s[i] == c)
            n++;
        else if (s[i] != ' ' && s[i] != '\t')
            return 0;
    }
    return n >= 3;
}

static int list_item(const char *s, const line *l)
{
    size_t i = l->fs, e = l->cend;
    if (s[i] == '-' || s[i] == '*' || s[i] == '+')
        return i + 1 == e || s[i + 1] == ' ' || s[i + 1] == '\t';
    size_t d = 0;
    while (i + d < e && d < 10 && s[i + d] >= '0' && s[i + d] <= '9')
        d++;
    if (d == 0 || d > 9 || i + d >= e || (s[i + d] != '.' && s[i + d] != ')'))
        return 0;
    return i + d + 1 == e || s[i + d + 1] == ' ' || s[i + d + 1] == '\t';
}

/* One line outside fenced and indented code. */
static void block_line(mdp *p, blocks *bk, const line *l)
{
    const char *s = p->src;
    if (is_blank(l)) {
        bk->para = PARA_NONE;
        return;
    }
    if (l->indent >= 4 && bk->para == PARA_NONE && !bk->list_active) {
        bk->in_icode = 1;
        bk->icode_quote = bk->quote;
        bk->icode_start = l->start;
        bk->icode_end = l->next;
        return;
    }
    int leaves_list = l->indent < 2 && bk->para == PARA_NONE;
    if ((l->indent <= 3 || bk->list_active) && fence_open(p, bk, l)) {
        bk->para = PARA_NONE;
        if (l->indent < 2)
            bk->list_active = 0;
        return;
    }
    if (l->indent >= 4) {
        /* Lazy paragraph continuation or list item content. */
        if (bk->para == PARA_NONE)
            bk->para = PARA_OTHER;
        md_inline(p, l->fs, l->cend);
        return;
    }
    if (atx_heading(p, l)) {
        bk->para = PARA_NONE;
        if (l->indent < 2)
            bk->list_active = 0;
        return;
    }
    int lvl = bk->para == PARA_PLAIN ? setext_level(s, l) : 0;
    if (lvl) {
        setext_heading(p, bk, l, lvl);
        bk->para = PARA_NONE;
        return;
    }
    if (thematic_break(s, l)) {
        bk->para = PARA_NONE;
        if (l->indent < 2)
            bk->list_active = 0;
        return;
    }
    if (list_item(s, l)) {
        bk->list_active = 1;
        bk->para = PARA_OTHER;
    } else if (s[l->fs] == '>') {
        if (leaves_list)
            bk->list_active = 0;
        bk->para = PARA_OTHER;
    } else if (bk->para == PARA_NONE) {
        if (bk->list_active && l->indent >= 2) {
            bk->para = PARA_OTHER;
        } else {
            bk->list_active = 0;
            bk->para = PARA_PLAIN;
            bk->para_start = l->start;
            bk->para_line = p->line;
        }
    }
    md_inline(p, l->fs, l->cend);
}

static void scan_body(mdp *p, size_t at)
{
    blocks bk = {0};
    const char *s = p->src;
    while (at < p->len) {
        line l;
        read_line(s, p->len, at, &l);
        int in_quote = bk.in_fence ? bk.fence_quote : bk.in_icode ? bk.icode_quote : 0;
        int q = strip_quotes(s, &l, in_quote);
        if (bk.in_fence && q < bk.fence_quote) {
            /* The quote holding the fence ended: so did the fence. */
            add_code(p, bk.fence_start, l.start);
            bk.in_fence = 0;
            bk.para = PARA_NONE;
        }
        if (bk.in_fence) {
            if (fence_close(p, &bk, &l)) {
                add_code(p, bk.fence_start, l.next);
                bk.in_fence = 0;
                bk.para = PARA_NONE;
            }
        } else if (bk.in_icode && q == bk.icode_quote && (is_blank(&l) || l.indent >= 4)) {
            if (!is_blank(&l))
                bk.icode_end = l.next;
        } else {
            if (bk.in_icode) {
                add_code(p, bk.icode_start, bk.icode_end);
                bk.in_icode = 0;
                bk.para = PARA_NONE;
            }
            q += strip_quotes(s, &l, INT_MAX);
            if (q != bk.quote) {
                /* A quote starts or ends: no paragraph or list runs across. */
                bk.para = PARA_NONE;
                bk.list_active = 0;
                bk.quote = q;
            }
            block_line(p, &bk, &l);
        }
        at = l.next;
        p->line++;
    }
    if (bk.in_fence)
        add_code(p, bk.fence_start, p->len);
    if (bk.in_icode)
        add_code(p, bk.icode_start, bk.icode_end);
}

/* Frontmatter: "---" on the first line, closed by "---" or "...". Returns
 * the body start and sets p->line to its line. */
static size_t frontmatter(mdp *p, size_t at)
{
    const char *s = p->src;
    line l;
    read_line(s, p->len, at, &l);
    if (!is_fm_fence(s, &l, 0) || l.next == l.cend)
        return at; /* no "---" line, or "---" without a newline */
    size_t yaml = l.next;
    int ln = 2;
    for (size_t cur = yaml; cur < p->len; ln++) {
        read_line(s, p->len, cur, &l);
        if (is_fm_fence(s, &l, 1)) {
            p->doc->has_frontmatter = 1;
            md_frontmatter(p, s + yaml, l.start - yaml, 2);
            p->line = l.next > l.cend ? ln + 1 : ln;
            return l.next;
        }
        cur = l.next;
    }
    md_set_warning(p, "unclosed frontmatter at line 1: no closing '---'; read as text");
    return at;
}

static int count_lines(const char *s, size_t len)
{
    int n = 0;
    for (const char *q = s, *e = s + len; q < e; q++) {
        q = memchr(q, '\n', (size_t)(e - q));
        if (!q)
            break;
        n++;
    }
    return n + (len > 0 && s[len - 1] != '\n');
}

trove_err md_parse(const char *src, size_t len, md_doc *out)
{
    memset(out, 0, sizeof *out);
    if (!src)
        len = 0, src = "";
    mdp p = {.src = src, .len = len, .doc = out, .line = 1};
    size_t at = len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    at = frontmatter(&p, at);
    out->body_start = at;
    out->body_line = p.line;
    scan_body(&p, at);
    out->n_lines = count_lines(src, len);
    if (!out->title)
        for (size_t i = 0; i < out->n_headings; i++)
            if (out->headings[i].level == 1) {
                out->title = xstrdup(out->headings[i].text);
                break;
            }
    free(p.tag_slots);
    return TROVE_OK;
}

void md_doc_free(md_doc *d)
{
    if (!d)
        return;
    free(d->title);
    for (size_t i = 0; i < d->n_aliases; i++)
        free(d->aliases[i]);
    free(d->aliases);
    for (size_t i = 0; i < d->n_tags; i++)
        free(d->tags[i]);
    free(d->tags);
    free(d->meta_json);
    for (size_t i = 0; i < d->n_headings; i++)
        free(d->headings[i].text);
    free(d->headings);
    for (size_t i = 0; i < d->n_links; i++) {
        free(d->links[i].target);
        free(d->links[i].fragment);
        free(d->links[i].display);
    }
    free(d->links);
    free(d->code);
    free(d->warning);
    memset(d, 0, sizeof *d);
}
