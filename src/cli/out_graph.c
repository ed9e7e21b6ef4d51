/* out_graph: rendering of `trove links` and of `trove similar`'s --explain
 * (out.h). Every field goes through the esc_ writers, as in out.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/out.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/mem.h"

static const char *const section_names[] = {"backlink", "outlink", "unresolved", "mention"};

typedef struct section {
    const api_link *items;
    size_t n;
} section;

static void sections_of(const api_link_set *s, section out[4])
{
    out[0] = (section){s->back, s->n_back};
    out[1] = (section){s->out, s->n_out};
    out[2] = (section){s->unresolved, s->n_unresolved};
    out[3] = (section){s->mentions, s->n_mentions};
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case 0: return "wiki";
    case 1: return "embed";
    case 2: return "markdown";
    default: return "mention";
    }
}

static void put_loc(FILE *f, const api_graph_note *n)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", n->collection, n->path);
    out_put_path(f, b.data);
    tbuf_free(&b);
}

/* ---- text ---- */

static void text_section(FILE *f, const char *heading, const section *sec, int mentions,
                         int outgoing)
{
    fprintf(f, "\n%s (%zu)\n", heading, sec->n);
    for (size_t i = 0; i < sec->n; i++) {
        const api_link *l = &sec->items[i];
        fputs("  ", f);
        if (l->note.path) {
            put_loc(f, &l->note);
            if (!outgoing)
                fprintf(f, ":%d", l->line);
            fputs("  ", f);
            out_put_line(f, l->note.title ? l->note.title : "");
        } else {
            fputs("[[", f);
            out_put_line(f, l->target);
            fputs("]]", f);
        }
        if (outgoing)
            fprintf(f, "  (line %d)", l->line);
        if (mentions) {
            fputs("  names \"", f);
            out_put_line(f, l->target);
            fputc('"', f);
        }
        fputs("\n      ", f);
        out_put_line(f, l->text);
        fputc('\n', f);
    }
}

static void links_text(FILE *f, const api_link_set *s)
{
    put_loc(f, &s->note);
    fputs("  ", f);
    out_put_line(f, s->note.title ? s->note.title : "");
    fputc('\n', f);
    section sec[4];
    sections_of(s, sec);
    text_section(f, "backlinks", &sec[0], 0, 0);
    text_section(f, "outlinks", &sec[1], 0, 1);
    text_section(f, "unresolved", &sec[2], 0, 1);
    text_section(f, "unlinked mentions", &sec[3], 1, 0);
}

/* ---- JSON ---- */

static json_t *note_json(const api_graph_note *n)
{
    if (!n->path)
        return json_null();
    char docid[16];
    snprintf(docid, sizeof docid, "#%s", n->docid);
    json_t *o = json_object();
    json_object_set_new(o, "docid", json_string(docid));
    json_object_set_new(o, "collection", out_json_str(n->collection));
    json_object_set_new(o, "path", out_json_str(n->path));
    json_object_set_new(o, "title", out_json_str(n->title ? n->title : ""));
    return o;
}

static json_t *link_json(const api_link *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "note", note_json(&l->note));
    json_object_set_new(o, "kind", json_string(kind_name(l->kind)));
    json_object_set_new(o, l->kind == API_LINK_MENTION ? "name" : "target", out_json_str(l->target));
    if (l->kind != API_LINK_MENTION)
        json_object_set_new(o, "fragment", l->fragment ? out_json_str(l->fragment) : json_null());
    json_object_set_new(o, "line", json_integer(l->line));
    json_object_set_new(o, "text", out_json_str(l->text));
    return o;
}

static void links_json(FILE *f, const api_link_set *s)
{
    static const char *const keys[] = {"backlinks", "outlinks", "unresolved", "mentions"};
    json_t *root = out_json_root();
    json_object_set_new(root, "note", note_json(&s->note));
    json_t *names = json_array();
    for (size_t i = 0; i < s->n_names; i++)
        json_array_append_new(names, out_json_str(s->names[i]));
    json_object_set_new(root, "names", names);
    section sec[4];
    sections_of(s, sec);
    for (int k = 0; k < 4; k++) {
        json_t *a = json_array();
        for (size_t i = 0; i < sec[k].n; i++)
            json_array_append_new(a, link_json(&sec[k].items[i]));
        json_object_set_new(root, keys[k], a);
    }
    out_json_print(f, root);
}

/* ---- CSV, Markdown, XML, files ---- */

static void csv(FILE *f, const char *s)
{
    tbuf b = {0};
    esc_csv(&b, s ? s : "");
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

static void links_csv(FILE *f, const api_link_set *s)
{
    fputs("section,kind,docid,collection,path,title,target,line,text\r\n", f);
    section sec[4];
    sections_of(s, sec);
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < sec[k].n; i++) {
            const api_link *l = &sec[k].items[i];
            fprintf(f, "%s,%s,%s%s,", section_names[k], kind_name(l->kind), *l->note.docid ? "#" : "",
                    l->note.docid);
            csv(f, l->note.collection);
            fputc(',', f);
            csv(f, l->note.path);
            fputc(',', f);
            csv(f, l->note.title);
            fputc(',', f);
            csv(f, l->target);
            fprintf(f, ",%d,", l->line);
            csv(f, l->text);
            fputs("\r\n", f);
        }
    }
}

static void links_md(FILE *f, const api_link_set *s)
{
    static const char *const headings[] = {"Backlinks", "Outlinks", "Unresolved links",
                                           "Unlinked mentions"};
    fputs("# Links of ", f);
    out_put_line(f, s->note.title ? s->note.title : "");
    fputs(" (", f);
    put_loc(f, &s->note);
    fputs(")\n", f);
    section sec[4];
    sections_of(s, sec);
    for (int k = 0; k < 4; k++) {
        fprintf(f, "\n## %s (%zu)\n\n", headings[k], sec[k].n);
        for (size_t i = 0; i < sec[k].n; i++) {
            const api_link *l = &sec[k].items[i];
            fputs("- ", f);
            if (l->note.path) {
                fputc('`', f);
                put_loc(f, &l->note);
                fprintf(f, ":%d` ", k == 0 || k == 3 ? l->line : 0);
                out_put_line(f, l->note.title ? l->note.title : "");
            } else {
                fputs("`[[", f);
                out_put_line(f, l->target);
                fprintf(f, "]]` line %d", l->line);
            }
            fputs(": ", f);
            out_put_line(f, l->text);
            fputc('\n', f);
        }
    }
}

static void xml(FILE *f, const char *s, int attr)
{
    tbuf b = {0};
    esc_xml(&b, s ? s : "", s ? strlen(s) : 0, attr);
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

static void links_xml(FILE *f, const api_link_set *s)
{
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<links docid=\"#%s\" collection=\"",
            s->note.docid);
    xml(f, s->note.collection, 1);
    fputs("\" path=\"", f);
    xml(f, s->note.path, 1);
    fputs("\">\n", f);
    section sec[4];
    sections_of(s, sec);
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < sec[k].n; i++) {
            const api_link *l = &sec[k].items[i];
            fprintf(f, "  <link section=\"%s\" kind=\"%s\" line=\"%d\"", section_names[k],
                    kind_name(l->kind), l->line);
            if (l->note.path) {
                fprintf(f, " docid=\"#%s\" collection=\"", l->note.docid);
                xml(f, l->note.collection, 1);
                fputs("\" path=\"", f);
                xml(f, l->note.path, 1);
                fputc('"', f);
            }
            fputs(" target=\"", f);
            xml(f, l->target, 1);
            fputs("\">", f);
            xml(f, l->text, 0);
            fputs("</link>\n", f);
        }
    }
    fputs("</links>\n", f);
}

/* Each linked, linking or mentioning note's file once, in section order. */
static void links_files(FILE *f, const api_link_set *s)
{
    section sec[4];
    sections_of(s, sec);
    const api_graph_note **shown = NULL;
    size_t n_shown = 0, cap = 0;
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < sec[k].n; i++) {
            const api_graph_note *n = &sec[k].items[i].note;
            int dup = !n->path;
            for (size_t j = 0; !dup && j < n_shown; j++)
                dup = strcmp(shown[j]->docid, n->docid) == 0 &&
                      strcmp(shown[j]->path, n->path) == 0;
            if (dup)
                continue;
            xgrow(&shown, &cap, n_shown + 1, sizeof *shown);
            shown[n_shown++] = n;
            tbuf file = {0};
            tbuf_printf(&file, "%s/%s", n->root, n->path);
            out_put_path(f, file.data);
            fputc('\n', f);
            tbuf_free(&file);
        }
    }
    free(shown);
}

void out_links(FILE *f, const api_link_set *s, const out_opts *o)
{
    switch (o->format) {
    case OUT_TEXT: links_text(f, s); break;
    case OUT_JSON: links_json(f, s); break;
    case OUT_CSV: links_csv(f, s); break;
    case OUT_MD: links_md(f, s); break;
    case OUT_XML: links_xml(f, s); break;
    case OUT_FILES: links_files(f, s); break;
    }
}

/* ---- `similar --explain` ---- */

void out_similar_text_header(FILE *f, const api_similar_info *si)
{
    fputs("similar to: ", f);
    put_loc(f, &si->note);
    fputs("  ", f);
    out_put_line(f, si->note.title ? si->note.title : "");
    fputs("\nterms:", f);
    for (size_t i = 0; i < si->why.n_terms; i++) {
        fputc(' ', f);
        out_put_line(f, si->why.terms[i]);
        fprintf(f, " (%.2f)", si->why.term_weights[i]);
    }
    if (!si->why.n_terms)
        fputs(" none (no word of the note is in another note)", f);
    if (si->why.vec_model) {
        fprintf(f, "\nvectors: the mean of %zu chunk vector%s of ", si->why.vec_chunks,
                si->why.vec_chunks == 1 ? "" : "s");
        out_put_line(f, si->why.vec_model);
    } else {
        fputs("\nvectors: none (the note has no vector in the index)", f);
    }
    fputc('\n', f);
}

void out_similar_text_item(FILE *f, const api_similar_info *si, size_t i, int color)
{
    if (i >= si->why.n_shared)
        return;
    fprintf(f, "      %sshares: ", color ? "\x1b[2m" : "");
    out_put_line(f, *si->why.shared[i] ? si->why.shared[i] : "-");
    fprintf(f, "%s\n", color ? "\x1b[0m" : "");
}

json_t *out_similar_json(const api_similar_info *si)
{
    json_t *terms = json_array();
    for (size_t i = 0; i < si->why.n_terms; i++)
        json_array_append_new(terms, json_pack("{s:o, s:f}", "term", out_json_str(si->why.terms[i]),
                                               "weight", si->why.term_weights[i]));
    json_t *vec = si->why.vec_model
                      ? json_pack("{s:o, s:I}", "model", out_json_str(si->why.vec_model), "chunks",
                                  (json_int_t)si->why.vec_chunks)
                      : json_null();
    return json_pack("{s:o, s:o, s:o}", "note", note_json(&si->note), "terms", terms, "vector", vec);
}

json_t *out_similar_json_item(const api_similar_info *si, size_t i)
{
    json_t *a = json_array();
    const char *p = i < si->why.n_shared ? si->why.shared[i] : "";
    while (p && *p) {
        size_t len = strcspn(p, " ");
        json_array_append_new(a, out_json_strn(p, len));
        p += len + (p[len] == ' ');
    }
    return a;
}
