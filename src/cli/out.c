#include "cli/out.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_CYAN "\033[36m"
#define C_MATCH "\033[1;33m"

static char *full_path(const search_result *r)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", r->root, r->path);
    return tbuf_detach(&b);
}

/* The whole note, read by api_search (with_body) under the collection rule;
 * NULL when it could not be read. Caller frees. */
static char *note_text(const search_result *r)
{
    return r->body ? xstrndup(r->body, r->body_len) : NULL;
}

/* Snippet without the match marks. */
static char *plain_snippet(const char *s)
{
    tbuf b = {0};
    for (; *s; s++)
        if (*s != '\x02' && *s != '\x03')
            tbuf_putc(&b, *s);
    return tbuf_detach(&b);
}

static void heading_joined(tbuf *b, const search_result *r, const char *sep)
{
    for (size_t i = 0; i < r->n_heading_path; i++) {
        if (i)
            tbuf_puts(b, sep);
        tbuf_puts(b, r->heading_path[i]);
    }
}

static void print_numbered(FILE *f, const char *text, int numbers, const char *indent)
{
    int line = 1;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (numbers)
            fprintf(f, "%s%5d  %.*s\n", indent, line, (int)len, p);
        else
            fprintf(f, "%s%.*s\n", indent, (int)len, p);
        line++;
        if (!nl)
            break;
        p = nl + 1;
    }
}

static void explain_text(FILE *f, const search_result *r, const out_opts *o)
{
    fprintf(f, "      %s", o->color ? C_DIM : "");
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        const search_channel_hit *h = &r->channel[ch];
        if (h->rank)
            fprintf(f, "%s #%d (%.3f)  ", search_channel_names[ch], h->rank, h->score);
        else
            fprintf(f, "%s -  ", search_channel_names[ch]);
    }
    fprintf(f, "graph x%.3f  in-degree %d  lang %s%s\n", r->prior, r->in_degree,
            *r->lang ? r->lang : "-", o->color ? C_RESET : "");
}

static void out_text(FILE *f, const search_results *res, const out_opts *o)
{
    if (o->explain && res->fts)
        fprintf(f, "fts: %s\nlang: %s\n", res->fts, *res->lang ? res->lang : "-");
    if (res->n == 0) {
        fprintf(f, "no results\n");
        return;
    }
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        if (o->color)
            fprintf(f, C_DIM "%.2f" C_RESET "  " C_CYAN "%s/%s:%d" C_RESET "  " C_BOLD "%s" C_RESET "\n",
                    r->score, r->collection, r->path, r->line_start, r->title);
        else
            fprintf(f, "%.2f  %s/%s:%d  %s\n", r->score, r->collection, r->path, r->line_start, r->title);
        if (r->n_heading_path) {
            tbuf h = {0};
            heading_joined(&h, r, " > ");
            fprintf(f, "      %s\n", h.data);
            tbuf_free(&h);
        }
        for (size_t k = 0; k < r->n_context; k++)
            fprintf(f, "      %s[%s]%s\n", o->color ? C_DIM : "", r->context[k], o->color ? C_RESET : "");
        if (o->full) {
            char *text = note_text(r);
            if (text)
                print_numbered(f, text, o->line_numbers, "      ");
            free(text);
        } else if (r->snippet && *r->snippet) {
            fputs("      ", f);
            for (const char *s = r->snippet; *s; s++) {
                if (*s == '\x02')
                    fputs(o->color ? C_MATCH : "", f);
                else if (*s == '\x03')
                    fputs(o->color ? C_RESET : "", f);
                else
                    fputc(*s, f);
            }
            fputc('\n', f);
        }
        if (o->explain)
            explain_text(f, r, o);
        if (i + 1 < res->n)
            fputc('\n', f);
    }
}

static json_t *result_json(const search_result *r, const out_opts *o)
{
    json_t *heading = json_array(), *context = json_array(), *tags = json_array();
    for (size_t i = 0; i < r->n_heading_path; i++)
        json_array_append_new(heading, json_string(r->heading_path[i]));
    for (size_t i = 0; i < r->n_context; i++)
        json_array_append_new(context, json_string(r->context[i]));
    for (size_t i = 0; i < r->n_tags; i++)
        json_array_append_new(tags, json_string(r->tags[i]));
    char docid[10];
    snprintf(docid, sizeof docid, "#%s", r->docid);
    char *file = full_path(r), *snippet = plain_snippet(r->snippet ? r->snippet : "");
    json_t *obj = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:I, s:f, s:s, s:o, s:o}",
                            "docid", docid, "collection", r->collection, "path", r->path,
                            "file", file, "title", r->title, "heading_path", heading,
                            "line_start", r->line_start, "line_end", r->line_end,
                            "start_byte", (json_int_t)r->start_byte, "end_byte", (json_int_t)r->end_byte,
                            "score", r->score, "snippet", snippet, "context", context, "tags", tags);
    json_object_set_new(obj, "lang", json_string(r->lang));
    free(file);
    free(snippet);
    if (o->full) {
        char *text = note_text(r);
        json_object_set_new(obj, "body", text ? json_string(text) : json_null());
        free(text);
    }
    if (o->explain) {
        json_t *ex = json_object();
        for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
            const search_channel_hit *h = &r->channel[ch];
            json_object_set_new(ex, search_channel_names[ch],
                                h->rank ? json_pack("{s:i, s:f}", "rank", h->rank, "score", h->score)
                                        : json_null());
        }
        json_object_set_new(ex, "graph", json_real(r->prior));
        json_object_set_new(ex, "in_degree", json_integer(r->in_degree));
        json_object_set_new(obj, "explain", ex);
    }
    return obj;
}

static void out_json(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    json_t *results = json_array();
    for (size_t i = 0; i < res->n; i++)
        json_array_append_new(results, result_json(&res->items[i], o));
    json_t *root = json_pack("{s:s, s:o}", "query", query, "results", results);
    if (o->explain) {
        json_object_set_new(root, "fts", res->fts ? json_string(res->fts) : json_null());
        json_object_set_new(root, "lang", json_string(res->lang));
    }
    json_dumpf(root, f, JSON_INDENT(2));
    fputc('\n', f);
    json_decref(root);
}

static void csv_field(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        if (*s != '\x02' && *s != '\x03')
            fputc(*s, f);
    }
    fputc('"', f);
}

static void out_csv(FILE *f, const search_results *res)
{
    fputs("docid,collection,path,title,heading_path,line_start,line_end,start_byte,end_byte,"
          "score,snippet,context\r\n", f);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        tbuf h = {0}, ctx = {0};
        heading_joined(&h, r, " > ");
        for (size_t k = 0; k < r->n_context; k++) {
            if (k)
                tbuf_puts(&ctx, " | ");
            tbuf_puts(&ctx, r->context[k]);
        }
        fprintf(f, "#%s,", r->docid);
        csv_field(f, r->collection);
        fputc(',', f);
        csv_field(f, r->path);
        fputc(',', f);
        csv_field(f, r->title);
        fputc(',', f);
        csv_field(f, tbuf_cstr(&h));
        fprintf(f, ",%d,%d,%lld,%lld,%.4f,", r->line_start, r->line_end, (long long)r->start_byte,
                (long long)r->end_byte, r->score);
        csv_field(f, r->snippet ? r->snippet : "");
        fputc(',', f);
        csv_field(f, tbuf_cstr(&ctx));
        fputs("\r\n", f);
        tbuf_free(&h);
        tbuf_free(&ctx);
    }
}

static void out_md(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    fprintf(f, "# Results for: %s\n\n", query);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        fprintf(f, "## %zu. %s\n\n", i + 1, r->title);
        fprintf(f, "- path: `%s/%s:%d-%d`\n- docid: `#%s`\n- score: %.3f\n", r->collection, r->path,
                r->line_start, r->line_end, r->docid, r->score);
        if (r->n_heading_path) {
            tbuf h = {0};
            heading_joined(&h, r, " > ");
            fprintf(f, "- section: %s\n", h.data);
            tbuf_free(&h);
        }
        for (size_t k = 0; k < r->n_context; k++)
            fprintf(f, "- context: %s\n", r->context[k]);
        fputc('\n', f);
        if (o->full) {
            char *text = note_text(r);
            if (text)
                fprintf(f, "%s\n\n", text);
            free(text);
        } else if (r->snippet && *r->snippet) {
            fputs("> ", f);
            for (const char *s = r->snippet; *s; s++) {
                if (*s == '\x02' || *s == '\x03')
                    fputs("**", f);
                else
                    fputc(*s == '\n' ? ' ' : *s, f);
            }
            fputs("\n\n", f);
        }
    }
}

/* XML 1.0 text: escape markup, drop characters XML cannot carry. */
static void xml_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\t': case '\n': case '\r': fputc(*p, f); break;
        default:
            if (*p >= 0x20)
                fputc(*p, f);
        }
    }
}

static void xml_elem(FILE *f, const char *name, const char *value)
{
    fprintf(f, "    <%s>", name);
    xml_text(f, value);
    fprintf(f, "</%s>\n", name);
}

static void out_xml(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results query=\"", f);
    xml_text(f, query);
    fputs("\">\n", f);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        fprintf(f, "  <result docid=\"#%s\" score=\"%.4f\" line_start=\"%d\" line_end=\"%d\""
                   " start_byte=\"%lld\" end_byte=\"%lld\">\n", r->docid, r->score, r->line_start,
                r->line_end, (long long)r->start_byte, (long long)r->end_byte);
        xml_elem(f, "collection", r->collection);
        xml_elem(f, "path", r->path);
        xml_elem(f, "title", r->title);
        fputs("    <heading_path>", f);
        for (size_t k = 0; k < r->n_heading_path; k++) {
            fputs("<h>", f);
            xml_text(f, r->heading_path[k]);
            fputs("</h>", f);
        }
        fputs("</heading_path>\n", f);
        char *snippet = plain_snippet(r->snippet ? r->snippet : "");
        xml_elem(f, "snippet", snippet);
        free(snippet);
        for (size_t k = 0; k < r->n_context; k++)
            xml_elem(f, "context", r->context[k]);
        if (o->full) {
            char *text = note_text(r);
            if (text)
                xml_elem(f, "body", text);
            free(text);
        }
        fputs("  </result>\n", f);
    }
    fputs("</results>\n", f);
}

void out_results(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    switch (o->format) {
    case OUT_TEXT: out_text(f, res, o); break;
    case OUT_JSON: out_json(f, query, res, o); break;
    case OUT_CSV: out_csv(f, res); break;
    case OUT_MD: out_md(f, query, res, o); break;
    case OUT_XML: out_xml(f, query, res, o); break;
    case OUT_FILES:
        for (size_t i = 0; i < res->n; i++)
            fprintf(f, "%s/%s\n", res->items[i].root, res->items[i].path);
        break;
    }
}
