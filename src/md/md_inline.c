/* Inline scanning of one line: wiki links, embeds, markdown links to local
 * .md files and #tags, skipping code spans, escapes and bare URLs.
 *
 * Every search for a closing delimiter is bounded (a link text, a wiki
 * target, a backtick run) so a hostile line costs O(bound * length), never
 * quadratic in the file size. */
#include <string.h>

#include <utf8proc.h>

#include "md/md_int.h"
#include "util/buf.h"
#include "util/mem.h"

enum { WIKI_MAX = 1024, LINK_TEXT_MAX = 1024, LINK_DEST_MAX = 2048, BT_MAX_RUN = 32 };

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_punct(unsigned char c)
{
    return c < 0x80 && c > 0x20 && c != 0x7F && !is_alnum(c);
}

static void trim(const char *s, size_t *a, size_t *b)
{
    while (*a < *b && is_space((unsigned char)s[*a]))
        (*a)++;
    while (*b > *a && is_space((unsigned char)s[*b - 1]))
        (*b)--;
}

static char *clean_or_null(const char *s, size_t n)
{
    return n ? md_clean_text(s, n) : NULL;
}

static void push_link(mdp *p, md_link_kind kind, char *target, char *frag, char *disp,
                      size_t start)
{
    md_doc *d = p->doc;
    xgrow(&d->links, &p->cap_links, d->n_links + 1, sizeof *d->links);
    d->links[d->n_links++] = (md_link){kind, target, frag, disp, start, p->line};
}

/* Code span opening at i (a backtick run): returns the index after the
 * closing run, or after the opening run when there is none on this line. */
static size_t code_span(mdp *p, size_t i, size_t b)
{
    const char *s = p->src;
    size_t run = 0;
    while (i + run < b && s[i + run] == '`')
        run++;
    if (run > BT_MAX_RUN || p->bt_fail[run] == p->bt_gen)
        return i + run;
    for (size_t j = i + run; j < b;) {
        if (s[j] != '`') {
            j++;
            continue;
        }
        size_t r = 0;
        while (j + r < b && s[j + r] == '`')
            r++;
        if (r == run)
            return j + r;
        j += r;
    }
    /* No closer of this length later on the line: none from any later
     * position either, so remember that for the rest of the line. */
    p->bt_fail[run] = p->bt_gen;
    return i + run;
}

/* [[target#fragment|display]] whose "[[" is at i. Returns the index after
 * it, or 0 when this is not a wiki link. */
static size_t wiki_link(mdp *p, size_t i, size_t a, size_t b)
{
    const char *s = p->src;
    size_t lim = b - i > WIKI_MAX ? i + WIKI_MAX : b;
    size_t cs = i + 2, j = cs;
    while (j + 1 < lim && !(s[j] == ']' && s[j + 1] == ']')) {
        if (s[j] == '[' && s[j + 1] == '[')
            return 0; /* an inner "[[" starts the real link; caller moves on */
        j++;
    }
    if (j + 1 >= lim)
        return 0;
    size_t ce = j, ta = cs, te = ce, pipe = 0, hash = 0;
    for (size_t k = cs; k < ce; k++)
        if (s[k] == '|') {
            pipe = k;
            te = k;
            /* Inside tables Obsidian writes the pipe escaped: [[a\|b]]. */
            if (te > cs && s[te - 1] == '\\')
                te--;
            break;
        }
    for (size_t k = cs; k < te; k++)
        if (s[k] == '#') {
            hash = k;
            break;
        }
    size_t tend = hash ? hash : te;
    trim(s, &ta, &tend);
    if (ta == tend && !hash)
        return 0; /* "[[]]" or "[[ |x]]" */
    char *frag = NULL, *disp = NULL;
    if (hash) {
        size_t fa = hash + 1, fe = te;
        trim(s, &fa, &fe);
        frag = clean_or_null(s + fa, fe - fa);
    }
    if (pipe) {
        size_t da = pipe + 1, de = ce;
        trim(s, &da, &de);
        disp = clean_or_null(s + da, de - da);
    }
    int embed = i > a && s[i - 1] == '!';
    push_link(p, embed ? MD_LINK_EMBED : MD_LINK_WIKI, md_clean_text(s + ta, tend - ta), frag,
              disp, embed ? i - 1 : i);
    return ce + 2;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decode and unescape a link destination piece. */
static void url_decode(tbuf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
            hexval((unsigned char)s[i + 2]) >= 0) {
            tbuf_putc(out, (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2])));
            i += 2;
        } else if (c == '\\' && i + 1 < n && is_punct((unsigned char)s[i + 1])) {
            tbuf_putc(out, s[++i]);
        } else {
            tbuf_putc(out, (char)c);
        }
    }
}

static int has_scheme(const char *s, size_t n)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n && i < 33; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ':')
            return 1;
        if (!is_alnum(c) && c != '+' && c != '.' && c != '-')
            return 0;
    }
    return 0;
}

static int ends_with_md(const tbuf *t)
{
    if (t->len < 3)
        return 0;
    const char *e = t->data + t->len - 3;
    return e[0] == '.' && (e[1] == 'm' || e[1] == 'M') && (e[2] == 'd' || e[2] == 'D');
}

static void record_md_link(mdp *p, size_t start, size_t ta, size_t te, size_t ds, size_t de)
{
    const char *s = p->src;
    if (ds == de || s[ds] == '#' || has_scheme(s + ds, de - ds))
        return; /* same-note anchor or a URL, not a note */
    size_t h = ds;
    while (h < de && s[h] != '#')
        h++;
    tbuf path = {0};
    url_decode(&path, s + ds, h - ds);
    if (!ends_with_md(&path)) {
        tbuf_free(&path);
        return;
    }
    char *frag = NULL;
    if (h < de && de - h > 1) {
        tbuf f = {0};
        url_decode(&f, s + h + 1, de - h - 1);
        frag = md_clean_text(f.data, f.len);
        tbuf_free(&f);
    }
    trim(s, &ta, &te);
    char *target = md_clean_text(path.data, path.len);
    tbuf_free(&path);
    push_link(p, MD_LINK_MARKDOWN, target, frag, clean_or_null(s + ta, te - ta), start);
}

/* [text](dest "title") with "[" at i. Returns the index after ")" or 0. */
static size_t markdown_link(mdp *p, size_t i, size_t a, size_t b)
{
    const char *s = p->src;
    size_t lim = b - i > LINK_TEXT_MAX ? i + LINK_TEXT_MAX : b;
    size_t j = i + 1;
    int depth = 1;
    for (; j < lim; j++) {
        if (s[j] == '\\') {
            j++;
            continue;
        }
        if (s[j] == '[')
            depth++;
        else if (s[j] == ']' && --depth == 0)
            break;
    }
    if (j >= lim || j + 1 >= b || s[j + 1] != '(')
        return 0;
    size_t te = j, k = j + 2, ds, de;
    while (k < b && (s[k] == ' ' || s[k] == '\t'))
        k++;
    if (k < b && s[k] == '<') {
        ds = ++k;
        while (k < b && k - ds < LINK_DEST_MAX && s[k] != '>' && s[k] != '<')
            k++;
        if (k >= b || s[k] != '>')
            return 0;
        de = k++;
    } else {
        ds = k;
        int pd = 0;
        while (k < b && k - ds < LINK_DEST_MAX && !is_space((unsigned char)s[k])) {
            if (s[k] == '\\' && k + 1 < b) {
                k += 2;
                continue;
            }
            if (s[k] == '(')
                pd++;
            else if (s[k] == ')' && pd-- == 0)
                break;
            k++;
        }
        de = k;
    }
    while (k < b && (s[k] == ' ' || s[k] == '\t'))
        k++;
    if (k < b && (s[k] == '"' || s[k] == '\'' || s[k] == '(')) {
        char close = s[k] == '(' ? ')' : s[k];
        size_t tl = k + 1 + LINK_DEST_MAX < b ? k + 1 + LINK_DEST_MAX : b;
        for (k++; k < tl && s[k] != close; k++)
            if (s[k] == '\\')
                k++;
        if (k >= tl)
            return 0;
        k++;
        while (k < b && (s[k] == ' ' || s[k] == '\t'))
            k++;
    }
    if (k >= b || s[k] != ')')
        return 0;
    if (!(i > a && s[i - 1] == '!')) /* images are not note links */
        record_md_link(p, i, i + 1, te, ds, de);
    return k + 1;
}

/* Code point ending just before index i (not before line start a). */
static int32_t prev_cp(const char *s, size_t a, size_t i)
{
    size_t st = i - 1;
    while (st > a && i - st < 4 && ((unsigned char)s[st] & 0xC0) == 0x80)
        st--;
    int32_t cp;
    size_t n = md_utf8_decode((const unsigned char *)s + st, i - st, &cp);
    return st + n == i ? cp : -1;
}

static int tag_may_follow(const char *s, size_t a, size_t i)
{
    if (i == a)
        return 1;
    unsigned char c = (unsigned char)s[i - 1];
    /* Not after quotes, ':' or '=': href="#x" and color:#fff are no tags. */
    if (c < 0x80)
        return is_space(c) || (c != 0 && strchr("([{,;!?*_~>|.", c) != NULL);
    int32_t cp = prev_cp(s, a, i);
    if (cp < 0)
        return 0;
    utf8proc_category_t cat = utf8proc_category(cp);
    return (cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO) ||
           (cat >= UTF8PROC_CATEGORY_ZS && cat <= UTF8PROC_CATEGORY_ZP);
}

/* #tag at i (s[i] == '#'). Returns the index after it, or 0. */
static size_t tag(mdp *p, size_t i, size_t a, size_t b)
{
    const char *s = p->src;
    if (!tag_may_follow(s, a, i))
        return 0;
    size_t j = i + 1;
    int nondigit = 0;
    while (j < b) {
        unsigned char c = (unsigned char)s[j];
        if (c < 0x80) {
            if (!(is_alnum(c) || c == '_' || c == '-' || c == '/'))
                break;
            if (!(c >= '0' && c <= '9') && c != '/')
                nondigit = 1;
            j++;
            continue;
        }
        int32_t cp;
        size_t n = md_utf8_decode((const unsigned char *)s + j, b - j, &cp);
        if (cp < 0)
            break;
        utf8proc_category_t cat = utf8proc_category(cp);
        if (cat < UTF8PROC_CATEGORY_LU || cat > UTF8PROC_CATEGORY_NO)
            break;
        nondigit = 1;
        j += n;
    }
    size_t end = j;
    while (end > i + 1 && s[end - 1] == '/')
        end--;
    if (end == i + 1 || s[i + 1] == '/' || !nondigit)
        return 0;
    md_add_tag(p, s + i + 1, end - i - 1);
    return j;
}

/* A bare URL (scheme://...) at a word start: returns the index after it. */
static size_t bare_url(const char *s, size_t i, size_t b)
{
    size_t j = i;
    while (j < b && j - i < 33 && (is_alnum((unsigned char)s[j]) || s[j] == '+' || s[j] == '.' || s[j] == '-'))
        j++;
    if (j + 2 >= b || s[j] != ':' || s[j + 1] != '/' || s[j + 2] != '/')
        return 0;
    while (j < b && !is_space((unsigned char)s[j]) && s[j] != '>')
        j++;
    return j;
}

void md_inline(mdp *p, size_t a, size_t b)
{
    const char *s = p->src;
    if (++p->bt_gen == 0) {
        memset(p->bt_fail, 0, sizeof p->bt_fail);
        p->bt_gen = 1;
    }
    size_t i = a;
    while (i < b) {
        unsigned char c = (unsigned char)s[i];
        size_t next = 0;
        switch (c) {
        case '\\':
            next = i + 1 < b && is_punct((unsigned char)s[i + 1]) ? i + 2 : i + 1;
            break;
        case '`':
            next = code_span(p, i, b);
            break;
        case '[':
            if (i + 1 < b && s[i + 1] == '[') {
                next = wiki_link(p, i, a, b);
                if (!next)
                    next = i + 1; /* the second '[' may start an inner link */
            } else {
                next = markdown_link(p, i, a, b);
            }
            break;
        case '#':
            next = tag(p, i, a, b);
            break;
        default:
            if (is_alpha(c) && (i == a || is_space((unsigned char)s[i - 1]) ||
                                s[i - 1] == '(' || s[i - 1] == '<')) {
                next = bare_url(s, i, b);
                if (!next) {
                    /* Skip the rest of the word: no construct starts inside. */
                    next = i + 1;
                    while (next < b && is_alnum((unsigned char)s[next]))
                        next++;
                }
            }
            break;
        }
        i = next > i ? next : i + 1;
    }
}
