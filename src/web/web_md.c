/* web_md — md4c events → escaped, script-free HTML. */
#include "web/web_md.h"

#include <ctype.h>
#include <dlfcn.h>
#include <md4c.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/esc.h"
#include "util/mem.h"

/* ---- escaping ---- */

void web_html_esc(tbuf *b, const char *s, size_t len)
{
    esc_xml(b, s, len, 1);
}

void web_url_esc(tbuf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
            tbuf_putc(b, (char)c);
        } else {
            tbuf_putc(b, '%');
            tbuf_putc(b, hex[c >> 4]);
            tbuf_putc(b, hex[c & 15]);
        }
    }
}

int web_url_safe(const char *s, size_t len, int *relative)
{
    /* Browsers skip leading blanks and controls and drop tabs and newlines
     * inside a scheme ("java\tscript:"): judge the URL as they read it. */
    char scheme[16];
    size_t n = 0, i = 0;
    while (i < len && (unsigned char)s[i] <= ' ')
        i++;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\t' || c == '\n' || c == '\r')
            continue;
        if (c == ':')
            break;
        if (c == '/' || c == '?' || c == '#' || n + 1 >= sizeof scheme) {
            *relative = 1;
            return c != '/' || i + 1 >= len || s[i + 1] != '/';   /* "//host": not relative */
        }
        scheme[n++] = (char)tolower(c);
    }
    if (i == len) {
        *relative = 1;
        return 1;
    }
    scheme[n] = '\0';
    *relative = 0;
    return strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0 ||
           strcmp(scheme, "mailto") == 0;
}

size_t web_md_frontmatter_len(const char *t, size_t len)
{
    if (len < 4 || memcmp(t, "---", 3) != 0 || (t[3] != '\n' && t[3] != '\r'))
        return 0;
    size_t p = 3;
    while (p < len && t[p] != '\n')
        p++;
    while (p < len) {
        size_t line = p + 1, e = line;
        while (e < len && t[e] != '\n')
            e++;
        size_t l = e - line;
        if (l && t[line + l - 1] == '\r')
            l--;
        if (l == 3 && (memcmp(t + line, "---", 3) == 0 || memcmp(t + line, "...", 3) == 0))
            return e < len ? e + 1 : e;
        p = e;
    }
    return 0;
}

/* ---- md4c, loaded on first use ---- */

static __typeof__(md_parse) *md_parse_fn;
static pthread_once_t md_once = PTHREAD_ONCE_INIT;

static void md_load(void)
{
    static const char *const names[] = {"libmd4c.so.0", "libmd4c.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !md_parse_fn; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h && !(*(void **)&md_parse_fn = dlsym(h, "md_parse")))
            dlclose(h);
    }
}

/* ---- the renderer ---- */

enum { CLOSE_NONE, CLOSE_A, CLOSE_SPAN, CLOSE_IMG };

/* Zero bytes after the copy of the note md4c parses. */
#define MD_PAD 64

typedef struct render {
    const web_md_opts *o;
    const char *doc;        /* the whole note: text offsets are against it */
    size_t doc_len;
    web_md_out *out;
    tbuf *h;
    int *closers;           /* per open span: how to close it */
    size_t n_closers, cap_closers;
    int in_heading;         /* collecting the heading's text */
    tbuf heading;
    int in_img;             /* image alt text: plain */
    /* The hit passage: the run of top-level blocks holding text of
     * [hit_start, hit_end), wrapped in one <div class="hit-passage"> */
    int depth;              /* blocks open under the document */
    size_t block_at;        /* where the open top-level block's HTML starts */
    int block_hit;          /* it holds hit text */
    int passage;            /* 0 none yet, 1 open, 2 closed */
} render;

static void push_closer(render *r, int c)
{
    xgrow(&r->closers, &r->cap_closers, r->n_closers + 1, sizeof *r->closers);
    r->closers[r->n_closers++] = c;
}

static int pop_closer(render *r)
{
    return r->n_closers ? r->closers[--r->n_closers] : CLOSE_NONE;
}

static void attr_text(const MD_ATTRIBUTE *a, tbuf *out)
{
    if (a && a->text)
        tbuf_append(out, a->text, a->size);
}

static int enter_block(MD_BLOCKTYPE type, void *detail, void *ud)
{
    render *r = ud;
    tbuf *h = r->h;
    if (type != MD_BLOCK_DOC && r->depth++ == 0) {
        r->block_at = h->len;
        r->block_hit = 0;
    }
    switch (type) {
    case MD_BLOCK_DOC: break;
    case MD_BLOCK_QUOTE: tbuf_puts(h, "<blockquote>\n"); break;
    case MD_BLOCK_UL: tbuf_puts(h, "<ul>\n"); break;
    case MD_BLOCK_OL: {
        unsigned start = ((MD_BLOCK_OL_DETAIL *)detail)->start;
        if (start == 1)
            tbuf_puts(h, "<ol>\n");
        else
            tbuf_printf(h, "<ol start=\"%u\">\n", start);
        break;
    }
    case MD_BLOCK_LI: {
        MD_BLOCK_LI_DETAIL *li = detail;
        tbuf_puts(h, "<li>");
        if (li->is_task)
            tbuf_puts(h, li->task_mark == ' ' ? "<input type=\"checkbox\" disabled aria-label=\"open task\"> "
                                              : "<input type=\"checkbox\" checked disabled aria-label=\"done task\"> ");
        break;
    }
    case MD_BLOCK_HR: tbuf_puts(h, "<hr>\n"); break;
    case MD_BLOCK_H: {
        unsigned level = ((MD_BLOCK_H_DETAIL *)detail)->level;
        size_t k = r->out->n_headings;
        tbuf_printf(h, "<h%u id=\"h-%zu\">", level, k + 1);
        r->in_heading = (int)level;
        tbuf_reset(&r->heading);
        break;
    }
    case MD_BLOCK_CODE: tbuf_puts(h, "<pre><code>"); break;
    case MD_BLOCK_HTML: tbuf_puts(h, "<pre class=\"raw-html\"><code>"); break;
    case MD_BLOCK_P: tbuf_puts(h, "<p>"); break;
    case MD_BLOCK_TABLE: tbuf_puts(h, "<div class=\"table\"><table>\n"); break;
    case MD_BLOCK_THEAD: tbuf_puts(h, "<thead>\n"); break;
    case MD_BLOCK_TBODY: tbuf_puts(h, "<tbody>\n"); break;
    case MD_BLOCK_TR: tbuf_puts(h, "<tr>"); break;
    case MD_BLOCK_TH: tbuf_puts(h, "<th>"); break;
    case MD_BLOCK_TD: tbuf_puts(h, "<td>"); break;
    }
    return 0;
}

static void insert_at(tbuf *b, size_t at, const char *s)
{
    tbuf out = {0};
    tbuf_append(&out, b->data, at);
    tbuf_puts(&out, s);
    tbuf_append(&out, b->data + at, b->len - at);
    tbuf_free(b);
    *b = out;
}

/* A top-level block ended: open the passage before the first one with hit
 * text, close it before the first one after without. */
static void passage_step(render *r)
{
    if (r->block_hit && r->passage == 0) {
        insert_at(r->h, r->block_at, "<div class=\"hit-passage\" id=\"hit\">\n");
        r->passage = 1;
    } else if (!r->block_hit && r->passage == 1) {
        insert_at(r->h, r->block_at, "</div>\n");
        r->passage = 2;
    }
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *ud)
{
    render *r = ud;
    tbuf *h = r->h;
    switch (type) {
    case MD_BLOCK_DOC: break;
    case MD_BLOCK_QUOTE: tbuf_puts(h, "</blockquote>\n"); break;
    case MD_BLOCK_UL: tbuf_puts(h, "</ul>\n"); break;
    case MD_BLOCK_OL: tbuf_puts(h, "</ol>\n"); break;
    case MD_BLOCK_LI: tbuf_puts(h, "</li>\n"); break;
    case MD_BLOCK_HR: break;
    case MD_BLOCK_H: {
        unsigned level = ((MD_BLOCK_H_DETAIL *)detail)->level;
        tbuf_printf(h, "</h%u>\n", level);
        web_md_out *o = r->out;
        o->headings = xrealloc(o->headings, (o->n_headings + 1) * sizeof *o->headings);
        web_md_heading *hd = &o->headings[o->n_headings++];
        hd->level = (int)level;
        hd->text = xstrdup(tbuf_cstr(&r->heading));
        snprintf(hd->id, sizeof hd->id, "h-%zu", o->n_headings);
        r->in_heading = 0;
        break;
    }
    case MD_BLOCK_CODE:
    case MD_BLOCK_HTML: tbuf_puts(h, "</code></pre>\n"); break;
    case MD_BLOCK_P: tbuf_puts(h, "</p>\n"); break;
    case MD_BLOCK_TABLE: tbuf_puts(h, "</table></div>\n"); break;
    case MD_BLOCK_THEAD: tbuf_puts(h, "</thead>\n"); break;
    case MD_BLOCK_TBODY: tbuf_puts(h, "</tbody>\n"); break;
    case MD_BLOCK_TR: tbuf_puts(h, "</tr>\n"); break;
    case MD_BLOCK_TH: tbuf_puts(h, "</th>"); break;
    case MD_BLOCK_TD: tbuf_puts(h, "</td>"); break;
    }
    if (type != MD_BLOCK_DOC && --r->depth == 0)
        passage_step(r);
    return 0;
}

/* <a href=...> for a link the page may follow, else a span saying why. */
static void open_link(render *r, const char *target, size_t len, int wiki)
{
    tbuf t = {0}, href = {0};
    tbuf_append(&t, target, len);
    int relative = 0, ok = web_url_safe(t.data ? t.data : "", t.len, &relative);
    if (ok && (wiki || relative)) {
        /* another note: its path or name, without the #fragment */
        size_t cut = strcspn(tbuf_cstr(&t), "#");
        t.len = cut;
        if (t.data)
            t.data[cut] = '\0';
        ok = cut && r->o->resolve && r->o->resolve(r->o->ctx, t.data, wiki, &href);
        if (ok) {
            tbuf_puts(r->h, "<a class=\"note-link\" href=\"");
            web_html_esc(r->h, href.data, href.len);
            tbuf_puts(r->h, "\">");
        } else {
            tbuf_puts(r->h, "<span class=\"dangling\" title=\"no such note in the index\">");
        }
    } else if (ok) {
        tbuf_puts(r->h, "<a class=\"external\" rel=\"noopener noreferrer nofollow\" href=\"");
        web_html_esc(r->h, target, len);
        tbuf_puts(r->h, "\">");
    } else {
        tbuf_puts(r->h, "<span class=\"blocked-link\" title=\"link not followed (scheme not allowed)\">");
    }
    push_closer(r, ok ? CLOSE_A : CLOSE_SPAN);
    tbuf_free(&t);
    tbuf_free(&href);
}

static int enter_span(MD_SPANTYPE type, void *detail, void *ud)
{
    render *r = ud;
    tbuf *h = r->h;
    tbuf tmp = {0};
    switch (type) {
    case MD_SPAN_EM: tbuf_puts(h, "<em>"); break;
    case MD_SPAN_STRONG: tbuf_puts(h, "<strong>"); break;
    case MD_SPAN_U: tbuf_puts(h, "<u>"); break;
    case MD_SPAN_DEL: tbuf_puts(h, "<del>"); break;
    case MD_SPAN_CODE: tbuf_puts(h, "<code>"); break;
    case MD_SPAN_LATEXMATH:
    case MD_SPAN_LATEXMATH_DISPLAY: tbuf_puts(h, "<code class=\"math\">"); break;
    case MD_SPAN_A:
        attr_text(&((MD_SPAN_A_DETAIL *)detail)->href, &tmp);
        open_link(r, tbuf_cstr(&tmp), tmp.len, 0);
        break;
    case MD_SPAN_WIKILINK:
        attr_text(&((MD_SPAN_WIKILINK_DETAIL *)detail)->target, &tmp);
        open_link(r, tbuf_cstr(&tmp), tmp.len, 1);
        break;
    case MD_SPAN_IMG:
        /* never loaded: the note names a file or a remote address */
        tbuf_puts(h, "<span class=\"image\" title=\"image (not loaded)\">[image: ");
        r->in_img++;
        push_closer(r, CLOSE_IMG);
        break;
    }
    tbuf_free(&tmp);
    return 0;
}

static int leave_span(MD_SPANTYPE type, void *detail, void *ud)
{
    (void)detail;
    render *r = ud;
    tbuf *h = r->h;
    switch (type) {
    case MD_SPAN_EM: tbuf_puts(h, "</em>"); break;
    case MD_SPAN_STRONG: tbuf_puts(h, "</strong>"); break;
    case MD_SPAN_U: tbuf_puts(h, "</u>"); break;
    case MD_SPAN_DEL: tbuf_puts(h, "</del>"); break;
    case MD_SPAN_CODE:
    case MD_SPAN_LATEXMATH:
    case MD_SPAN_LATEXMATH_DISPLAY: tbuf_puts(h, "</code>"); break;
    case MD_SPAN_A:
    case MD_SPAN_WIKILINK:
    case MD_SPAN_IMG:
        switch (pop_closer(r)) {
        case CLOSE_A: tbuf_puts(h, "</a>"); break;
        case CLOSE_IMG: tbuf_puts(h, "]</span>"); r->in_img--; break;
        default: tbuf_puts(h, "</span>"); break;
        }
        break;
    }
    return 0;
}

/* An entity md4c recognised, written back only when it is plainly one
 * (&name; &#123; &#x1F;): then it means the same to the browser. */
static int entity_ok(const char *s, size_t n)
{
    if (n < 3 || n > 34 || s[0] != '&' || s[n - 1] != ';')
        return 0;
    size_t i = 1;
    if (s[i] == '#') {
        i++;
        int hexa = i < n && (s[i] == 'x' || s[i] == 'X');
        i += (size_t)hexa;
        if (i >= n - 1)
            return 0;
        for (; i < n - 1; i++)
            if (!(hexa ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i])))
                return 0;
        return 1;
    }
    for (; i < n - 1; i++)
        if (!isalnum((unsigned char)s[i]))
            return 0;
    return 1;
}

static int text(MD_TEXTTYPE type, const MD_CHAR *s, MD_SIZE size, void *ud)
{
    render *r = ud;
    tbuf *h = r->h;
    /* md4c 0.4.8 can hand out a text run reaching past the input (fuzz_web
     * found one): the input has zero padding after it, and nothing past the
     * note's last byte is shown. */
    if (s >= r->doc && s <= r->doc + r->doc_len + MD_PAD && s + size > r->doc + r->doc_len)
        size = s >= r->doc + r->doc_len ? 0 : (MD_SIZE)(r->doc + r->doc_len - s);
    if (r->in_heading && type != MD_TEXT_BR && type != MD_TEXT_SOFTBR)
        tbuf_append(&r->heading, s, size);
    size_t at = (size_t)(s - r->doc);
    int in_doc = s >= r->doc && s < r->doc + r->doc_len;
    if (in_doc && r->o->hit_end > r->o->hit_start && at < r->o->hit_end &&
        at + size > r->o->hit_start)
        r->block_hit = 1;
    switch (type) {
    case MD_TEXT_NULLCHAR: tbuf_puts(h, "\xEF\xBF\xBD"); break;
    case MD_TEXT_BR: tbuf_puts(h, r->in_img ? " " : "<br>\n"); break;
    case MD_TEXT_SOFTBR: tbuf_putc(h, '\n'); break;
    case MD_TEXT_ENTITY:
        if (entity_ok(s, size))
            tbuf_append(h, s, size);
        else
            web_html_esc(h, s, size);
        break;
    default: web_html_esc(h, s, size); break;   /* NORMAL, CODE, HTML, LATEXMATH: as text */
    }
    return 0;
}

trove_err web_md_render(const char *t, size_t len, const web_md_opts *o, web_md_out *out)
{
    memset(out, 0, sizeof *out);
    pthread_once(&md_once, md_load);
    if (!md_parse_fn)
        return trove_fail(TROVE_EUNSUPPORTED, "cannot load libmd4c.so.0, which renders notes "
                          "for `trove serve` (install the Debian package libmd4c0, or run "
                          "scripts/install-deps.sh)");
    size_t skip = web_md_frontmatter_len(t, len);
    if (len - skip > 0xFFFFFFF0u)
        return trove_fail(TROVE_EINVAL, "the note is too large to render");
    char *copy = xcalloc(1, len + MD_PAD);
    memcpy(copy, t, len);
    render r = {.o = o, .doc = copy, .doc_len = len, .out = out, .h = &out->html};
    MD_PARSER p = {
        .abi_version = 0,
        .flags = MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_TASKLISTS | MD_FLAG_WIKILINKS |
                 MD_FLAG_PERMISSIVEURLAUTOLINKS | MD_FLAG_PERMISSIVEEMAILAUTOLINKS |
                 MD_FLAG_LATEXMATHSPANS,
        .enter_block = enter_block, .leave_block = leave_block,
        .enter_span = enter_span, .leave_span = leave_span, .text = text,
    };
    int rc = md_parse_fn(copy + skip, (MD_SIZE)(len - skip), &p, &r);
    if (r.passage == 1)
        tbuf_puts(&out->html, "</div>\n");
    free(r.closers);
    free(copy);
    tbuf_free(&r.heading);
    if (rc != 0) {
        web_md_out_free(out);
        return trove_fail(TROVE_EINVAL, "the note could not be rendered as markdown");
    }
    return TROVE_OK;
}

void web_md_out_free(web_md_out *out)
{
    tbuf_free(&out->html);
    for (size_t i = 0; i < out->n_headings; i++)
        free(out->headings[i].text);
    free(out->headings);
    memset(out, 0, sizeof *out);
}
