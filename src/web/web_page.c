/* web_page — the HTML pages of `trove serve`, rendered on the server so
 * that every page (a search URL included) works with JavaScript off; the
 * page's script (assets/app.js) only fetches the result fragment as the
 * user types and adds keyboard moves. Every byte from a note, a path or a
 * query goes through web_html_esc (or web_md for a note's body). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/date.h"
#include "util/clock.h"
#include "util/mem.h"
#include "web/web_int.h"
#include "web/web_md.h"

static void esc(tbuf *b, const char *s)
{
    web_html_esc(b, s ? s : "", s ? strlen(s) : 0);
}

static void url(tbuf *b, const char *s)
{
    web_url_esc(b, s ? s : "", s ? strlen(s) : 0);
}

static void head(web_srv *s, tbuf *b, const char *title, const char *page)
{
    tbuf_puts(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                 "<meta name=\"color-scheme\" content=\"light dark\"><title>");
    esc(b, title);
    tbuf_puts(b, "</title><link rel=\"stylesheet\" href=\"/static/app.css\">"
                 "<link rel=\"icon\" href=\"/static/favicon.svg\" type=\"image/svg+xml\">"
                 "<script src=\"/static/app.js\" defer></script>");
    tbuf_printf(b, "<meta name=\"trove-token\" content=\"%s\"></head>\n<body data-page=\"%s\">\n"
                   "<a class=\"skip\" href=\"#main\">Skip to content</a>\n"
                   "<header class=\"top\"><a class=\"brand\" href=\"/\">trove</a>"
                   "<nav aria-label=\"Pages\"><a href=\"/\"%s>Search</a>"
                   "<a href=\"/status\"%s>Status</a></nav></header>\n"
                   "<main id=\"main\">\n",
                s->csrf, page, strcmp(page, "search") == 0 ? " aria-current=\"page\"" : "",
                strcmp(page, "status") == 0 ? " aria-current=\"page\"" : "");
}

static void foot(tbuf *b)
{
    tbuf_puts(b, "</main>\n</body></html>\n");
}

void web_page_error(web_srv *s, web_resp *r, unsigned status, const char *msg)
{
    r->status = status;
    r->type = "text/html; charset=utf-8";
    tbuf_reset(&r->body);
    head(s, &r->body, "trove — error", "error");
    tbuf_puts(&r->body, "<h1>Something is not right</h1><p class=\"error\">");
    esc(&r->body, msg);
    tbuf_puts(&r->body, "</p><p><a href=\"/\">Back to search</a></p>\n");
    foot(&r->body);
}

/* ---- search ---- */

/* A snippet's \x02..\x03 match marks as <mark>, the rest escaped. */
static void snippet_html(tbuf *b, const char *snip)
{
    const char *p = snip ? snip : "";
    int open = 0;
    while (*p) {
        size_t run = strcspn(p, "\x02\x03");
        web_html_esc(b, p, run);
        p += run;
        if (*p == '\x02' && !open) {
            tbuf_puts(b, "<mark>");
            open = 1;
        } else if (*p == '\x03' && open) {
            tbuf_puts(b, "</mark>");
            open = 0;
        }
        if (*p)
            p++;
    }
    if (open)
        tbuf_puts(b, "</mark>");
}

static void explain_html(tbuf *b, const search_result *it)
{
    tbuf_printf(b, "<details class=\"score\"><summary title=\"score; open for the channels\">"
                   "%.3f</summary><table><thead><tr><th scope=\"col\">channel</th>"
                   "<th scope=\"col\">rank</th><th scope=\"col\">score</th></tr></thead><tbody>",
                it->score);
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        const search_channel_hit *h = &it->channel[ch];
        if (h->rank)
            tbuf_printf(b, "<tr><td>%s</td><td>%d</td><td>%.4f</td></tr>",
                        search_channel_names[ch], h->rank, h->score);
        else
            tbuf_printf(b, "<tr><td>%s</td><td>–</td><td>–</td></tr>", search_channel_names[ch]);
    }
    tbuf_printf(b, "<tr><td>links</td><td>%d in</td><td>×%.3f</td></tr></tbody></table></details>",
                it->in_degree, it->prior);
}

static void result_html(tbuf *b, const web_search_req *q, const search_result *it, size_t i)
{
    tbuf href = {0};
    tbuf_puts(&href, "/note?ref=%23");
    tbuf_puts(&href, it->docid);
    tbuf_printf(&href, "&hl=%lld-%lld#hit", (long long)it->start_byte, (long long)it->end_byte);
    tbuf_printf(b, "<li class=\"result\" id=\"r%zu\"><h2 class=\"title\"><a href=\"", i + 1);
    esc(b, href.data);
    tbuf_puts(b, "\">");
    esc(b, it->title && *it->title ? it->title : it->path);
    tbuf_puts(b, "</a></h2>\n<p class=\"where\">");
    int heading_is_title = it->n_heading_path == 1 && it->title &&
                           strcmp(it->heading_path[0], it->title) == 0;
    if (it->n_heading_path && !heading_is_title) {
        tbuf_puts(b, "<span class=\"heading\">");
        for (size_t h = 0; h < it->n_heading_path; h++) {
            if (h)
                tbuf_puts(b, " › ");
            esc(b, it->heading_path[h]);
        }
        tbuf_puts(b, "</span> ");
    }
    tbuf_puts(b, "<span class=\"path\">");
    esc(b, it->collection);
    tbuf_putc(b, '/');
    esc(b, it->path);
    tbuf_printf(b, ":%d</span></p>\n<p class=\"snippet\">", it->line_start);
    snippet_html(b, it->snippet);
    tbuf_puts(b, "</p>\n");
    for (size_t c = 0; c < it->n_context; c++) {
        tbuf_puts(b, "<p class=\"context\">");
        esc(b, it->context[c]);
        tbuf_puts(b, "</p>\n");
    }
    tbuf_puts(b, "<div class=\"meta\">");
    for (size_t t = 0; t < it->n_tags; t++) {
        tbuf_puts(b, "<a class=\"tag\" title=\"only notes tagged so\" href=\"/?q=");
        url(b, q->q);
        tbuf_puts(b, "&amp;tags=");
        url(b, it->tags[t]);
        tbuf_puts(b, "\">#");
        esc(b, it->tags[t]);
        tbuf_puts(b, "</a>");
    }
    if (it->lang[0]) {
        tbuf_puts(b, "<span class=\"lang\" title=\"language\">");
        esc(b, it->lang);
        tbuf_puts(b, "</span>");
    }
    if (it->date_source) {   /* the date --since/--until compare */
        char day[11];
        date_format(it->date, day);
        tbuf_puts(b, "<span class=\"date\" title=\"date from ");
        esc(b, it->date_source);
        tbuf_printf(b, "\"><time datetime=\"%s\">%s</time></span>", day, day);
    }
    explain_html(b, it);
    tbuf_puts(b, "</div></li>\n");
    tbuf_free(&href);
}

static void results_html(web_srv *s, tbuf *b, const web_search_req *q)
{
    if (!*q->q) {
        tbuf_puts(b, "<p class=\"hint\">Type to search your notes. <kbd>/</kbd> focuses the "
                     "search box, <kbd>↓</kbd> <kbd>↑</kbd> move through results, "
                     "<kbd>Enter</kbd> opens one, <kbd>Esc</kbd> goes back.</p>\n");
        return;
    }
    search_results res;
    api_query_info info;
    int has_info;
    double t0 = clock_seconds();
    trove_err e = web_run_search(s, q, &res, &info, &has_info);
    double ms = (clock_seconds() - t0) * 1000.0;
    if (e) {
        const char *m = trove_errmsg();
        tbuf_puts(b, "<p class=\"error\" role=\"alert\">");
        esc(b, m && *m ? m : trove_strerror(e));
        tbuf_puts(b, "</p>\n");
        return;
    }
    if (res.vec_error) {
        tbuf_puts(b, "<p class=\"warning\">");
        esc(b, res.vec_error);
        tbuf_puts(b, "</p>\n");
    }
    tbuf_printf(b, "<p class=\"summary\" data-count=\"%zu\">%zu result%s · %s · %.0f ms</p>\n",
                res.n, res.n, res.n == 1 ? "" : "s", web_mode_names[q->mode], ms);
    if (res.n == 0)
        tbuf_puts(b, "<p class=\"hint\">Nothing matched. Try fewer words, another mode, or "
                     "fewer filters.</p>\n");
    else
        tbuf_puts(b, "<ol class=\"results\">\n");
    for (size_t i = 0; i < res.n; i++)
        result_html(b, q, &res.items[i], i);
    if (res.n)
        tbuf_puts(b, "</ol>\n");
    search_results_free(&res);
    if (has_info)
        api_query_info_free(&info);
}

static void text_input(tbuf *b, const char *name, const char *label, const char *value,
                       const char *placeholder)
{
    tbuf_printf(b, "<label>%s <input type=\"text\" name=\"%s\" value=\"", label, name);
    esc(b, value);
    tbuf_printf(b, "\" placeholder=\"%s\" autocomplete=\"off\"></label>\n", placeholder);
}

static char *joined(char **items, size_t n)
{
    tbuf b = {0};
    for (size_t i = 0; i < n; i++) {
        if (i)
            tbuf_putc(&b, ',');
        tbuf_puts(&b, items[i]);
    }
    return tbuf_detach(&b);
}

static void search_form(web_srv *s, tbuf *b, const web_search_req *q)
{
    tbuf_puts(b, "<form class=\"search\" action=\"/\" method=\"get\" role=\"search\">\n"
                 "<div class=\"bar\"><input type=\"search\" id=\"q\" name=\"q\" value=\"");
    esc(b, q->q);
    tbuf_puts(b, "\" placeholder=\"Search notes\" aria-label=\"Search notes\" "
                 "autocomplete=\"off\" autofocus><button type=\"submit\">Search</button></div>\n"
                 "<div class=\"controls\"><fieldset class=\"modes\"><legend>Mode</legend>");
    static const char *const labels[3] = {"Hybrid", "Meaning", "Best answer"};
    for (int m = 0; m < 3; m++) {
        if (m == WEB_VSEARCH && !s->o->model)
            continue;
        tbuf_printf(b, "<label><input type=\"radio\" name=\"mode\" value=\"%s\"%s> %s</label>",
                    web_mode_names[m], (int)q->mode == m ? " checked" : "", labels[m]);
    }
    tbuf_puts(b, "</fieldset>\n");
    int any = q->n_collections || q->folder || q->n_tags || q->n_langs || q->since || q->until ||
              q->n_where || q->recent;
    tbuf_printf(b, "<details class=\"filters\"%s><summary>Filters</summary><div class=\"grid\">\n",
                any ? " open" : "");
    const config *cfg = api_config(s->a);
    tbuf_puts(b, "<label>Collection <select name=\"c\"><option value=\"\">all</option>");
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const char *name = cfg->collections[i].name;
        int sel = q->n_collections && strcmp(q->collections[0], name) == 0;
        tbuf_puts(b, "<option value=\"");
        esc(b, name);
        tbuf_printf(b, "\"%s>", sel ? " selected" : "");
        esc(b, name);
        tbuf_puts(b, "</option>");
    }
    tbuf_puts(b, "</select></label>\n");
    text_input(b, "folder", "Folder", q->folder ? q->folder : "", "projects/2024");
    char *tags = joined(q->tags, q->n_tags), *langs = joined(q->langs, q->n_langs);
    text_input(b, "tags", "Tags", tags, "meeting, idea");
    text_input(b, "lang", "Language", langs, "en, de, zh");
    free(tags);
    free(langs);
    text_input(b, "since", "Since", q->since ? q->since : "", "2024-05-01, 7d");
    text_input(b, "until", "Until", q->until ? q->until : "", "2024-12-31");
    tbuf wh = {0};
    for (size_t i = 0; i < q->n_where; i++)
        tbuf_printf(&wh, "%s%s", i ? "; " : "", q->where[i]);
    text_input(b, "where", "Where", wh.len ? wh.data : "", "status=done");
    tbuf_free(&wh);
    tbuf_printf(b, "<label class=\"check\"><input type=\"checkbox\" name=\"recent\" "
                   "value=\"1\"%s> Favour newer notes</label>\n", q->recent ? " checked" : "");
    tbuf_puts(b, "</div></details></div>\n</form>\n");
}

void web_page_search(web_srv *s, const web_args *args, int fragment, web_resp *r)
{
    web_search_req q;
    char msg[160];
    if (!web_search_req_parse(args, &q, msg, sizeof msg)) {
        web_search_req_free(&q);
        return web_page_error(s, r, 400, msg);
    }
    tbuf *b = &r->body;
    if (!fragment) {
        tbuf title = {0};
        tbuf_puts(&title, *q.q ? q.q : "");
        tbuf_puts(&title, *q.q ? " — trove" : "trove — search your notes");
        head(s, b, title.data, "search");
        tbuf_free(&title);
        tbuf_puts(b, "<h1 class=\"sr-only\">Search</h1>\n");
        search_form(s, b, &q);
        tbuf_puts(b, "<section id=\"results\" aria-live=\"polite\" aria-label=\"Results\">\n");
    }
    results_html(s, b, &q);
    if (!fragment) {
        tbuf_puts(b, "</section>\n");
        foot(b);
    }
    web_search_req_free(&q);
}

/* ---- a note ---- */

/* A link of the note leads where `update` resolved it (its outlinks). */
static int resolve_link(void *ctx, const char *target, int wiki, tbuf *href)
{
    (void)wiki;
    const api_link_set *links = ctx;
    for (size_t i = 0; i < links->n_out; i++) {
        const api_link *l = &links->out[i];
        if (l->target && l->note.docid[0] && strcmp(l->target, target) == 0) {
            tbuf_printf(href, "/note?ref=%%23%s", l->note.docid);
            return 1;
        }
    }
    return 0;
}

static void note_href(tbuf *b, const char *docid)
{
    tbuf_printf(b, "/note?ref=%%23%s", docid);
}

static void backlinks_html(tbuf *b, const api_link_set *links)
{
    tbuf_printf(b, "<section class=\"panel backlinks\" aria-labelledby=\"bl\"><h2 id=\"bl\">"
                   "Backlinks <span class=\"count\">%zu</span></h2>", links->n_back);
    if (!links->n_back)
        tbuf_puts(b, "<p class=\"hint\">No note links here.</p>");
    else
        tbuf_puts(b, "<ul>");
    for (size_t i = 0; i < links->n_back; i++) {
        const api_link *l = &links->back[i];
        tbuf_puts(b, "<li><a href=\"");
        note_href(b, l->note.docid);
        tbuf_puts(b, "\">");
        esc(b, l->note.title && *l->note.title ? l->note.title : l->note.path);
        tbuf_puts(b, "</a> <span class=\"path\">");
        esc(b, l->note.path);
        tbuf_printf(b, ":%d</span>", l->line);
        if (l->text && *l->text) {
            tbuf_puts(b, "<p class=\"line\">");
            esc(b, l->text);
            tbuf_puts(b, "</p>");
        }
        tbuf_puts(b, "</li>");
    }
    if (links->n_back)
        tbuf_puts(b, "</ul>");
    tbuf_puts(b, "</section>\n");
}

/* Notes like ref, with the page's since=, until=, where= (as the search
 * page's); a malformed one is said in the panel. */
static void similar_html(web_srv *s, tbuf *b, const char *ref, const web_args *args)
{
    api_similar_opts so;
    api_similar_opts_init(&so);
    so.ref = ref;
    so.limit = 5;
    so.model = s->o->model;
    search_results res;
    api_similar_info info;
    trove_err e = web_run_similar(s, args, &so, &res, &info);
    if (e == TROVE_EUSAGE || e == TROVE_ENOENT) {   /* the filters: said, as search says them */
        const char *m = trove_errmsg();
        tbuf_puts(b, "<section class=\"panel similar\" aria-labelledby=\"sim\"><h2 id=\"sim\">"
                     "Similar notes</h2><p class=\"error\" role=\"alert\">");
        esc(b, m && *m ? m : trove_strerror(e));
        tbuf_puts(b, "</p></section>\n");
    }
    if (e) {
        trove_errclear();
        return;
    }
    tbuf_puts(b, "<section class=\"panel similar\" aria-labelledby=\"sim\"><h2 id=\"sim\">"
                 "Similar notes</h2>");
    if (!res.n)
        tbuf_puts(b, "<p class=\"hint\">None found.</p>");
    else
        tbuf_puts(b, "<ol>");
    for (size_t i = 0; i < res.n; i++) {
        const search_result *it = &res.items[i];
        tbuf_puts(b, "<li><a href=\"");
        note_href(b, it->docid);
        tbuf_puts(b, "\">");
        esc(b, it->title && *it->title ? it->title : it->path);
        tbuf_puts(b, "</a> <span class=\"path\">");
        esc(b, it->path);
        tbuf_puts(b, "</span></li>");
    }
    if (res.n)
        tbuf_puts(b, "</ol>");
    tbuf_puts(b, "</section>\n");
    search_results_free(&res);
    api_similar_info_free(&info);
}

static const char *base_name(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash && slash[1] ? slash + 1 : p;
}

static void note_links_out(tbuf *b, const api_note *n)
{
    /* Obsidian names a vault by its folder, a file by its path without .md */
    char *root = xstrdup(n->root ? n->root : "");
    size_t rl = strlen(root);
    while (rl > 1 && root[rl - 1] == '/')
        root[--rl] = '\0';
    size_t pl = strlen(n->path);
    size_t cut = pl > 3 && strcmp(n->path + pl - 3, ".md") == 0 ? pl - 3 : pl;
    tbuf o = {0};
    tbuf_puts(&o, "obsidian://open?vault=");
    url(&o, base_name(root));
    tbuf_puts(&o, "&file=");
    web_url_esc(&o, n->path, cut);
    tbuf_puts(b, "<p class=\"where\"><span class=\"path\">");
    esc(b, n->collection);
    tbuf_putc(b, '/');
    esc(b, n->path);
    tbuf_puts(b, "</span> · <a href=\"");
    esc(b, o.data);
    tbuf_puts(b, "\">Open in Obsidian</a></p>\n<p class=\"file\"><code>");
    esc(b, root);
    tbuf_putc(b, '/');
    esc(b, n->path);
    tbuf_puts(b, "</code></p>\n");
    tbuf_free(&o);
    free(root);
}

void web_page_note(web_srv *s, const web_args *args, web_resp *r)
{
    const char *ref = web_arg(args, "ref"), *hl = web_arg(args, "hl");
    if (!ref || !*ref)
        return web_page_error(s, r, 400, "Which note? (ref=COLLECTION/PATH or #DOCID)");
    api_note n;
    trove_err e = front_get(&s->f, ref, 0, 0, &n);
    if (e) {
        const char *m = trove_errmsg();
        return web_page_error(s, r, e == TROVE_ENOENT ? 404 : e == TROVE_EACCES ? 403 : 400,
                              m && *m ? m : trove_strerror(e));
    }
    web_md_opts mo = {0};
    unsigned long long hs = 0, he = 0;
    if (hl && sscanf(hl, "%llu-%llu", &hs, &he) == 2 && he > hs) {
        mo.hit_start = (size_t)hs;
        mo.hit_end = (size_t)he;
    }
    api_link_set links;
    int have_links = n.docid[0] && front_links(&s->f, ref, &links) == TROVE_OK;
    if (have_links) {
        mo.resolve = resolve_link;
        mo.ctx = &links;
    }
    trove_errclear();
    web_md_out md;
    e = web_md_render(n.text ? n.text : "", n.text ? n.len : 0, &mo, &md);
    if (e) {
        api_note_free(&n);
        if (have_links)
            api_link_set_free(&links);
        return web_page_error(s, r, 500, trove_errmsg());
    }
    tbuf *b = &r->body;
    const char *title = n.title && *n.title ? n.title : n.path;
    tbuf t = {0};
    tbuf_puts(&t, title);
    tbuf_puts(&t, " — trove");
    head(s, b, t.data, "note");
    tbuf_free(&t);
    tbuf_puts(b, "<article class=\"note\"><header class=\"note-head\">"
                 "<p class=\"back\"><a href=\"/\" data-back>← Back to results</a></p><h1>");
    esc(b, title);
    tbuf_puts(b, "</h1>\n");
    note_links_out(b, &n);
    tbuf_puts(b, "</header>\n<div class=\"note-body\">");
    if (md.n_headings > 1) {
        tbuf_puts(b, "<nav class=\"outline\" aria-label=\"Outline\"><h2>Outline</h2><ul>");
        for (size_t i = 0; i < md.n_headings; i++) {
            tbuf_printf(b, "<li class=\"l%d\"><a href=\"#%s\">", md.headings[i].level,
                        md.headings[i].id);
            esc(b, md.headings[i].text);
            tbuf_puts(b, "</a></li>");
        }
        tbuf_puts(b, "</ul></nav>\n");
    }
    tbuf_puts(b, "<div class=\"md\">\n");
    tbuf_append(b, md.html.data, md.html.len);
    tbuf_puts(b, "</div></div>\n<aside class=\"related\" aria-label=\"Related notes\">\n");
    if (have_links) {
        backlinks_html(b, &links);
        tbuf_printf(b, "<section class=\"panel graph\" aria-labelledby=\"gr\"><h2 id=\"gr\">"
                       "Neighbourhood</h2><div id=\"graph\" data-ref=\"#%s\"></div></section>\n",
                    n.docid);
        similar_html(s, b, ref, args);
        api_link_set_free(&links);
    }
    tbuf_puts(b, "</aside></article>\n");
    foot(b);
    web_md_out_free(&md);
    api_note_free(&n);
}

/* ---- status and rollback ---- */

static void when(tbuf *b, int64_t t)
{
    if (!t) {
        tbuf_puts(b, "never");
        return;
    }
    char s[64];
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    strftime(s, sizeof s, "%Y-%m-%d %H:%M", &tm);
    tbuf_printf(b, "<time datetime=\"%lld\">%s</time>", (long long)t, s);
}

static void status_collections(tbuf *b, const api_status *st)
{
    tbuf_puts(b, "<h2>Collections</h2><div class=\"table\"><table><thead><tr>"
                 "<th scope=\"col\">Name</th><th scope=\"col\">Folder</th>"
                 "<th scope=\"col\">Notes</th><th scope=\"col\">Changes</th>"
                 "</tr></thead><tbody>\n");
    for (size_t i = 0; i < st->n_collections; i++) {
        const api_status_collection *c = &st->collections[i];
        tbuf_puts(b, "<tr><td>");
        esc(b, c->name);
        tbuf_puts(b, "</td><td><code>");
        esc(b, c->path);
        tbuf_printf(b, "</code></td><td>%lld</td><td>", (long long)c->notes);
        if (c->problem)
            esc(b, c->problem);
        else if (!c->fresh_known)
            tbuf_puts(b, "unknown");
        else if (!c->fresh.added && !c->fresh.changed && !c->fresh.deleted)
            tbuf_puts(b, "up to date");
        else
            tbuf_printf(b, "%zu new, %zu changed, %zu deleted", c->fresh.added,
                        c->fresh.changed, c->fresh.deleted);
        tbuf_puts(b, "</td></tr>\n");
    }
    tbuf_puts(b, "</tbody></table></div>\n");
}

static void status_snapshots(web_srv *s, tbuf *b)
{
    api_snapshots sn;
    if (api_snapshot_list(s->a, 0, &sn) != TROVE_OK) {
        trove_errclear();
        return;
    }
    tbuf_puts(b, "<h2>Snapshots</h2><p class=\"hint\">Every update is a snapshot; rolling back "
                 "to one is itself a new snapshot, so it can be undone.</p>"
                 "<div class=\"table\"><table><thead><tr><th scope=\"col\">#</th>"
                 "<th scope=\"col\">When</th><th scope=\"col\">What</th>"
                 "<th scope=\"col\">Notes +/−/~</th><th scope=\"col\"><span class=\"sr-only\">"
                 "Action</span></th></tr></thead><tbody>\n");
    for (size_t i = 0; i < sn.n; i++) {
        const store_snapshot *x = &sn.items[i];
        tbuf_printf(b, "<tr><td>%lld</td><td>", (long long)x->id);
        when(b, x->created_at);
        tbuf_puts(b, "</td><td>");
        esc(b, x->kind);
        if (x->note && *x->note) {
            tbuf_puts(b, " — ");
            esc(b, x->note);
        }
        tbuf_printf(b, "</td><td>+%lld −%lld ~%lld</td><td>", (long long)x->added,
                    (long long)x->removed, (long long)x->modified);
        if (x->id == sn.current)
            tbuf_puts(b, "<span class=\"current\">current</span>");
        else
            tbuf_printf(b, "<a class=\"button\" href=\"/rollback?id=%lld\">Roll back…</a>",
                        (long long)x->id);
        tbuf_puts(b, "</td></tr>\n");
    }
    tbuf_puts(b, "</tbody></table></div>\n");
    api_snapshots_free(&sn);
}

void web_page_status(web_srv *s, web_resp *r)
{
    api_status st;
    json_t *daemon = NULL;
    trove_err e = front_status(&s->f, &st, &daemon);
    if (e)
        return web_page_error(s, r, 500, trove_errmsg());
    tbuf *b = &r->body;
    head(s, b, "Status — trove", "status");
    tbuf_puts(b, "<h1>Status</h1>\n<dl class=\"facts\">");
    tbuf_printf(b, "<dt>Notes</dt><dd>%lld</dd><dt>Chunks</dt><dd>%lld</dd>"
                   "<dt>Links</dt><dd>%lld</dd><dt>Last update</dt><dd>",
                (long long)st.counts.docs, (long long)st.counts.chunks,
                (long long)st.counts.links);
    when(b, st.last_update);
    tbuf_printf(b, "</dd><dt>Snapshot</dt><dd>%lld</dd><dt>Index</dt><dd><code>",
                (long long)st.snapshot.id);
    esc(b, st.index_path);
    tbuf_printf(b, "</code> (%.1f MB)</dd><dt>Model</dt><dd>", st.index_bytes / 1e6);
    if (s->o->model)
        esc(b, base_name(s->o->model));
    else
        tbuf_puts(b, "none (keywords, titles and links)");
    tbuf_puts(b, "</dd><dt>Freshness</dt><dd>");
    esc(b, daemon ? "a daemon serves this index and watches its folders" : s->o->freshness);
    tbuf_puts(b, "</dd></dl>\n");
    status_collections(b, &st);
    status_snapshots(s, b);
    foot(b);
    json_decref(daemon);
    api_status_free(&st);
}

void web_page_rollback(web_srv *s, const web_args *args, int post, web_resp *r)
{
    const char *v = web_arg(args, "id");
    long id;
    if (!v || sscanf(v, "%ld", &id) != 1 || id < 1)
        return web_page_error(s, r, 400, "Which snapshot? (id=N)");
    tbuf *b = &r->body;
    if (!post) {
        head(s, b, "Roll back? — trove", "status");
        tbuf_printf(b, "<h1>Roll back to snapshot %ld?</h1>\n<p>The index goes back to how it "
                       "was at snapshot %ld. This is a new snapshot itself: you can roll "
                       "forward again from the status page.</p>\n"
                       "<form method=\"post\" action=\"/rollback\" class=\"confirm\">"
                       "<input type=\"hidden\" name=\"id\" value=\"%ld\">"
                       "<input type=\"hidden\" name=\"csrf\" value=\"%s\">"
                       "<button type=\"submit\" class=\"danger\">Roll back to %ld</button> "
                       "<a href=\"/status\">Cancel</a></form>\n",
                    id, id, id, s->csrf, id);
        return foot(b);
    }
    api_rollback rb;
    trove_err e = api_snapshot_rollback(s->a, id, &rb);
    if (e)
        return web_page_error(s, r, e == TROVE_ENOENT ? 404 : 500, trove_errmsg());
    head(s, b, "Rolled back — trove", "status");
    if (rb.noop)
        tbuf_printf(b, "<h1>Nothing to do</h1><p>Snapshot %ld is the current one.</p>", id);
    else
        tbuf_printf(b, "<h1>Rolled back</h1><p role=\"status\">The index is now as it was at "
                       "snapshot %ld (as new snapshot %lld; it was %lld).</p>",
                    id, (long long)rb.made.id, (long long)rb.from);
    tbuf_puts(b, "<p><a href=\"/status\">Back to status</a></p>\n");
    foot(b);
    api_rollback_free(&rb);
}
