/* Fuzz the web server's input parsers and its note renderer.
 *
 * Input: a query string / form body, a NUL byte, then a note (no NUL: the
 * whole input is both). Checks that parsing arguments and the search
 * request they make never crashes or reads out of bounds, and that the
 * note rendered to HTML (web_md) never holds an element the note could
 * run or load (script, iframe, img, object, embed, style, a handler
 * attribute) nor an href other than the resolver's /note? links, http(s)
 * and mailto — whatever markdown and raw HTML the bytes hold. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <stdio.h>

#include "util/mem.h"
#include "web/web_md.h"
#include "web/web_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int resolve(void *ctx, const char *target, int wiki, tbuf *href)
{
    (void)ctx;
    if (strlen(target) % 2 == (size_t)wiki)   /* some resolve, some dangle */
        return 0;
    tbuf_puts(href, "/note?ref=");
    web_url_esc(href, target, strlen(target));
    return 1;
}

static const char *find_ci(const char *h, const char *needle)
{
    size_t n = strlen(needle);
    for (; *h; h++)
        if (strncasecmp(h, needle, n) == 0)
            return h;
    return NULL;
}

/* abort() saying what and where: the driver's mutations are many */
#define BAD(what, at) (fprintf(stderr, "fuzz_web: %s at: %.80s\n", what, at), abort())

static void check_html(const char *html)
{
    static const char *const banned[] = {"<script", "<iframe", "<img", "<object", "<embed",
                                         "<style", "<svg", "<link", "<meta", "<base", "<form"};
    for (size_t i = 0; i < sizeof banned / sizeof *banned; i++)
        if (find_ci(html, banned[i]))
            BAD("banned element", find_ci(html, banned[i]));
    /* inside every tag: no on*= attribute; every href is one we allow */
    for (const char *p = strchr(html, '<'); p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        if (!end)
            BAD("unclosed tag", p);
        for (const char *a = p; a < end; a++) {
            if (isspace((unsigned char)a[0]) && tolower((unsigned char)a[1]) == 'o' &&
                tolower((unsigned char)a[2]) == 'n' && isalpha((unsigned char)a[3]))
                BAD("handler attribute", p);
        }
        const char *h = strstr(p, " href=\"");
        if (h && h < end) {
            h += 7;
            if (strncmp(h, "/note?", 6) != 0 && strncasecmp(h, "http:", 5) != 0 &&
                strncasecmp(h, "https:", 6) != 0 && strncasecmp(h, "mailto:", 7) != 0)
                BAD("href", h);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t qlen = nul ? (size_t)(nul - data) : size;
    const char *note = nul ? (const char *)nul + 1 : (const char *)data;
    size_t note_len = nul ? size - qlen - 1 : size;

    web_args args = {0};
    web_args_parse(&args, (const char *)data, qlen);
    if (args.n > WEB_MAX_ARGS)
        abort();
    web_search_req req;
    char err[160];
    if (web_search_req_parse(&args, &req, err, sizeof err) && (req.limit < 1 || req.limit > 1000))
        abort();
    web_search_req_free(&req);
    web_args_free(&args);

    web_md_opts o = {.resolve = resolve};
    if (note_len > 4) {
        o.hit_start = data[0] % note_len;
        o.hit_end = o.hit_start + data[1];
    }
    web_md_out out;
    if (web_md_render(note, note_len, &o, &out) == TROVE_OK) {
        check_html(tbuf_cstr(&out.html));
        web_md_out_free(&out);
    }
    return 0;
}
