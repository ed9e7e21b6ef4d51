/* web_md — a note's markdown as HTML that cannot run anything, for the
 * web page's note view (web.h).
 *
 * md4c (libmd4c.so.0, dlopen()ed on first use: only `trove serve` renders
 * markdown) parses; this renderer writes every element itself from md4c's
 * events, so nothing of the note reaches the page unescaped: raw HTML
 * blocks and spans are shown as text, link targets keep only the http,
 * https and mailto schemes (any other scheme: the link is shown as text,
 * so `javascript:` and `data:` never become an href), images become a
 * labelled link (a page never loads anything a note names), wikilinks and
 * relative links go through the caller's resolver. The top-level blocks
 * (paragraphs, lists, headings, ...) holding text of [hit_start, hit_end)
 * of the note's bytes are wrapped in <div class="hit-passage" id="hit">.
 * Frontmatter is not shown.
 *
 * Ownership: web_md_out owns its HTML and headings; web_md_out_free(). */
#ifndef TROVE_WEB_MD_H
#define TROVE_WEB_MD_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

typedef struct web_md_opts {
    size_t hit_start, hit_end;    /* byte range of the note to highlight; end 0: none */
    /* The href (already a URL, not yet HTML-escaped) for a link to another
     * note: `target` as written in the note (a wikilink's target without
     * its #fragment, or a relative markdown link's path). Return 0 when it
     * leads nowhere (shown as a dangling link). NULL: every one dangles. */
    int (*resolve)(void *ctx, const char *target, int wiki, tbuf *href);
    void *ctx;
} web_md_opts;

typedef struct web_md_heading {
    int level;
    char *text;
    char id[16];
} web_md_heading;

typedef struct web_md_out {
    tbuf html;
    web_md_heading *headings;
    size_t n_headings;
} web_md_out;

/* TROVE_EUNSUPPORTED when libmd4c cannot be loaded. */
trove_err web_md_render(const char *text, size_t len, const web_md_opts *o, web_md_out *out);
void web_md_out_free(web_md_out *out);

/* Length of a leading YAML frontmatter block ("---" line to "---" or
 * "..." line), 0 when there is none. */
size_t web_md_frontmatter_len(const char *text, size_t len);

/* Append s as HTML text or attribute value (markup escaped, invalid
 * UTF-8 as U+FFFD). */
void web_html_esc(tbuf *b, const char *s, size_t len);
/* Append s percent-encoded for a URL query value. */
void web_url_esc(tbuf *b, const char *s, size_t len);
/* 1 when an href with this target may be written: http, https, mailto, or
 * no scheme at all (relative). */
int web_url_safe(const char *s, size_t len, int *relative);

#endif
