#include "cli/out.h"

#include <stdlib.h>
#include <string.h>

#include "api/wire.h"
#include "text/date.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/mem.h"

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_CYAN "\033[36m"
#define C_MATCH "\033[1;33m"

/* ---- shared helpers ---------------------------------------------------- */

json_t *out_json_str(const char *s)
{
    return out_json_strn(s, strlen(s));
}

json_t *out_json_strn(const char *s, size_t len)
{
    tbuf b = {0};
    esc_utf8(&b, s, len);
    json_t *j = json_stringn_nocheck(tbuf_cstr(&b), b.len);
    tbuf_free(&b);
    return j;
}

json_t *out_json_root(void)
{
    return json_pack("{s:i}", "version", OUT_JSON_VERSION);
}

void out_json_print(FILE *f, json_t *root)
{
    json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(root);
}

void out_put_utf8(FILE *f, const char *s, size_t len)
{
    tbuf b = {0};
    esc_utf8(&b, s, len);
    fwrite(tbuf_cstr(&b), 1, b.len, f);
    tbuf_free(&b);
}

void out_put_line(FILE *f, const char *s)
{
    tbuf b = {0};
    esc_line(&b, s);
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

void out_put_path(FILE *f, const char *s)
{
    tbuf b = {0};
    esc_path(&b, s);
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

/* ---- search results ---------------------------------------------------- */

static char *join_path(const char *a, const char *b)
{
    tbuf t = {0};
    tbuf_printf(&t, "%s/%s", a, b);
    return tbuf_detach(&t);
}

/* The whole note, read by api_search (with_body) under the collection rule;
 * NULL when it could not be read. Caller frees. */
static char *note_text(const search_result *r, size_t *len)
{
    *len = r->body ? r->body_len : 0;
    return r->body ? xstrndup(r->body, r->body_len) : NULL;
}

/* Snippet without the match marks. */
static char *plain_snippet(const char *s)
{
    tbuf b = {0};
    for (s = s ? s : ""; *s; s++)
        if (*s != '\x02' && *s != '\x03')
            tbuf_putc(&b, *s);
    return tbuf_detach(&b);
}

static char *join_strs(char *const *items, size_t n, const char *sep)
{
    tbuf b = {0};
    for (size_t i = 0; i < n; i++) {
        if (i)
            tbuf_puts(&b, sep);
        tbuf_puts(&b, items[i]);
    }
    return tbuf_detach(&b);
}

static char *heading_joined(const search_result *r, const char *sep)
{
    return join_strs(r->heading_path, r->n_heading_path, sep);
}

static void print_numbered(FILE *f, const char *text, size_t len, int numbers, const char *indent)
{
    int line = 1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (numbers)
            fprintf(f, "%s%5d  ", indent, line);
        else
            fputs(indent, f);
        out_put_utf8(f, p, n);
        fputc('\n', f);
        line++;
        if (!nl)
            break;
        p = nl + 1;
    }
}

static char *passage_heading(const search_passage *p, const char *sep)
{
    return join_strs(p->heading_path, p->n_heading_path, sep);
}

static void explain_text(FILE *f, const search_result *r, const out_opts *o)
{
    fprintf(f, "      %s", o->color ? C_DIM : "");
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        const search_channel_hit *h = &r->channel[ch];
        if (h->rank && h->z != 0)
            fprintf(f, "%s #%d (%.3f, z %.2f, +%.3f)  ", search_channel_names[ch], h->rank, h->score,
                    h->z, h->vote);
        else if (h->rank)
            fprintf(f, "%s #%d (%.3f, +%.3f)  ", search_channel_names[ch], h->rank, h->score, h->vote);
        else
            fprintf(f, "%s -  ", search_channel_names[ch]);
    }
    char day[11];
    date_format(r->date, day);
    fprintf(f, "graph x%.3f  in-degree %d  lang %s  date %s (%s)  recency x%.3f%s\n", r->prior,
            r->in_degree, *r->lang ? r->lang : "-", day, r->date_source ? r->date_source : "-",
            r->recency, o->color ? C_RESET : "");
}

static void snippet_line(FILE *f, const char *snippet, const char *on, const char *off);

/* --passages: the note's other passages after its best one. */
static void passages_text(FILE *f, const search_result *r, const out_opts *o)
{
    for (size_t k = 1; k < r->n_passages; k++) {
        const search_passage *p = &r->passages[k];
        char *h = passage_heading(p, " > ");
        fprintf(f, "      %s[%zu] :%d-%d%s  ", o->color ? C_DIM : "", k + 1, p->line_start,
                p->line_end, o->color ? C_RESET : "");
        out_put_line(f, h);
        fputc('\n', f);
        free(h);
        if (p->snippet && *p->snippet) {
            fputs("          ", f);
            snippet_line(f, p->snippet, o->color ? C_MATCH : "", o->color ? C_RESET : "");
            fputc('\n', f);
        }
    }
}

/* The fusion line of --explain: the method and the weight each channel
 * got for this query. */
static void explain_fusion(FILE *f, const search_fusion *fu)
{
    fprintf(f, "fusion: %s", fu->method == SEARCH_FUSION_Z ? "z-score" : "rrf");
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        if (fu->method == SEARCH_FUSION_RRF && ch == SEARCH_CH_VECTOR)
            continue;
        fprintf(f, "  %s w=%.3g", search_channel_names[ch], fu->weight[ch]);
        if (fu->method == SEARCH_FUSION_Z && ch != SEARCH_CH_TITLE)
            fprintf(f, " (n=%d mean=%.4g sd=%.4g)", fu->n[ch], fu->mean[ch], fu->sd[ch]);
    }
    if (fu->method == SEARCH_FUSION_Z)
        fprintf(f, "\nvector confidence: %.3f = 1 - bm25 certainty %.3f x (1 - agreement %.3f)",
                fu->vector_confidence, fu->certainty, fu->agreement);
    if (fu->method == SEARCH_FUSION_Z && fu->n[SEARCH_CH_XLATE] && fu->xlate_confidence < 1)
        fprintf(f, "\ntranslation confidence: %.3f = 1 - bm25 certainty of a same-language note"
                   " %.3f (a translated list without spread)",
                fu->xlate_confidence, fu->xlate_certainty);
    fputc('\n', f);
}

/* The translation line of --explain: the translated words, or why the
 * channel did not run. */
static void explain_xlate(FILE *f, const search_results *res)
{
    switch (res->xlate_state) {
    case SEARCH_XLATE_USED:
        fputs("translation: ", f);
        out_put_line(f, res->xlate ? res->xlate : "");
        fprintf(f, " (same-language evidence, its best chunk or a title it names, covers %.0f%% of the query)\n",
                100.0 * res->xlate_coverage);
        break;
    case SEARCH_XLATE_NODICT:
        fputs("translation: off (the Chinese-English dictionary is missing or damaged)\n", f);
        break;
    case SEARCH_XLATE_NONE:
        fputs("translation: none (no word of the query is in the dictionary)\n", f);
        break;
    case SEARCH_XLATE_OTHER:
        fputs("translation: none (the query is neither Chinese nor English)\n", f);
        break;
    case SEARCH_XLATE_NO_TARGET:
        fputs("translation: none (no note is in the language the query would be translated "
              "into)\n", f);
        break;
    case SEARCH_XLATE_TRANSLATED:
        fputs("translation: none (the vault holds translations of its notes)\n", f);
        break;
    default:
        fputs("translation: off (--no-translate or translate: false)\n", f);
        break;
    }
}

/* The vector line of --explain: the noise floor the channel applied, or
 * why it had nothing to compare. */
static void explain_vector(FILE *f, const search_results *res)
{
    if (res->vec_state == SEARCH_VEC_BLANK) {
        fprintf(f, "vector: none (%s)\n", search_vec_blank_why);
    } else if (res->vec_state == SEARCH_VEC_USED && res->vec_floor_known) {
        fprintf(f, "vector: notes above the noise floor %.3f", res->vec_floor);
        if (res->fusion.method == SEARCH_FUSION_Z)
            fprintf(f, ", strength %.3f", res->vec_strength);
        else if (res->fusion.method == SEARCH_FUSION_RRF)
            fputs(" (none)", f);
        fputc('\n', f);
    } else if (res->vec_state == SEARCH_VEC_USED) {
        fputs("vector: no noise floor estimated (run `trove embed`)\n", f);
    }
}

/* ---- `query --explain`: the pipeline (api_query_info) ---- */

static void list_name(char *buf, size_t cap, const api_query_info *q, size_t l)
{
    snprintf(buf, cap, "%s/%s", qp_variant_names[q->variants[q->lists[l].variant].kind],
             qp_list_channel_name(q->lists[l].channel));
}

static void pipe_text_header(FILE *f, const api_query_info *q)
{
    for (size_t v = 0; v < q->n_variants; v++) {
        fprintf(f, "variant %s (x%.3g): ", qp_variant_names[q->variants[v].kind],
                q->variants[v].weight);
        out_put_line(f, q->variants[v].text);
        fputc('\n', f);
    }
    if (q->expand_note) {
        fputs("expansion: ", f);
        out_put_line(f, q->expand_note);
        fputc('\n', f);
    }
    fputs("lists:", f);
    for (size_t l = 0; l < q->n_lists; l++) {
        char name[64];
        list_name(name, sizeof name, q, l);
        fprintf(f, " %s w=%.3g", name, q->lists[l].weight);
    }
    fprintf(f, "\nrrf k=%d, bonus +%.2f #1, +%.2f #2-3; fused %zu, reranked %zu by ", QP_RRF_K,
            QP_BONUS_FIRST, QP_BONUS_TOP3, q->n_fused, q->n_reranked);
    out_put_line(f, q->reranker ? q->reranker : "none");
    /* a reranker model's earned share (the lexical one's is fixed) */
    if (q->n_reranked && q->reranker && strcmp(q->reranker, "lexical") != 0)
        fprintf(f, " (trust %.3f)", q->rerank_trust);
    fputc('\n', f);
}

static void pipe_text_item(FILE *f, const api_query_info *q, size_t i, const out_opts *o)
{
    const qp_cand *c = &q->items[i];
    fprintf(f, "      %s", o->color ? C_DIM : "");
    for (size_t l = 0; l < q->n_lists; l++) {
        char name[64];
        list_name(name, sizeof name, q, l);
        if (c->rank[l])
            fprintf(f, "%s #%d  ", name, c->rank[l]);
        else
            fprintf(f, "%s -  ", name);
    }
    fprintf(f, "\n      rrf #%d %.4f (bonus +%.2f)", c->rrf_rank, c->rrf, c->bonus);
    if (c->reranked)
        fprintf(f, "  rerank %.4f (norm %.3f)  blend %.0f%% retrieval %.3f + %.0f%% rerank%s",
                c->rerank_raw, c->rerank_norm, 100 * c->w_retrieval, c->retrieval_norm,
                100 * (1 - c->w_retrieval), c->title_protected ? "  title-protected" : "");
    else
        fputs("  not reranked", f);
    fprintf(f, "%s\n", o->color ? C_RESET : "");
}

static json_t *pipe_json_root(const api_query_info *q)
{
    json_t *vars = json_array(), *lists = json_array();
    for (size_t v = 0; v < q->n_variants; v++)
        json_array_append_new(vars, json_pack("{s:s, s:o, s:f}", "kind",
                                              qp_variant_names[q->variants[v].kind], "text",
                                              out_json_str(q->variants[v].text), "weight",
                                              q->variants[v].weight));
    for (size_t l = 0; l < q->n_lists; l++)
        json_array_append_new(lists, json_pack("{s:s, s:s, s:f}", "variant",
                                               qp_variant_names[q->variants[q->lists[l].variant].kind],
                                               "channel", qp_list_channel_name(q->lists[l].channel),
                                               "weight", q->lists[l].weight));
    json_t *p = json_pack("{s:o, s:o, s:i, s:f, s:f, s:I, s:I}", "variants", vars, "lists", lists,
                          "rrf_k", QP_RRF_K, "bonus_first", QP_BONUS_FIRST, "bonus_top3",
                          QP_BONUS_TOP3, "fused", (json_int_t)q->n_fused, "reranked",
                          (json_int_t)q->n_reranked);
    json_object_set_new(p, "reranker", out_json_str(q->reranker ? q->reranker : "none"));
    json_object_set_new(p, "rerank_warning",
                        q->rerank_warning ? out_json_str(q->rerank_warning) : json_null());
    json_object_set_new(p, "rerank_trust", json_real(q->rerank_trust));
    if (q->expand_note) /* a generative expansion model was asked for */
        json_object_set_new(p, "expansion", out_json_str(q->expand_note));
    return p;
}

static json_t *pipe_json_item(const api_query_info *q, size_t i)
{
    const qp_cand *c = &q->items[i];
    json_t *ranks = json_object();
    for (size_t l = 0; l < q->n_lists; l++) {
        char name[64];
        list_name(name, sizeof name, q, l);
        json_object_set_new(ranks, name, c->rank[l] ? json_integer(c->rank[l]) : json_null());
    }
    json_t *p = json_pack("{s:o, s:i, s:f, s:f, s:b, s:f}", "ranks", ranks, "rrf_rank", c->rrf_rank,
                          "rrf", c->rrf, "bonus", c->bonus, "reranked", c->reranked,
                          "retrieval_norm", c->retrieval_norm);
    json_object_set_new(p, "rerank_score", c->reranked ? json_real(c->rerank_raw) : json_null());
    json_object_set_new(p, "rerank_norm", c->reranked ? json_real(c->rerank_norm) : json_null());
    json_object_set_new(p, "retrieval_weight", json_real(c->w_retrieval));
    json_object_set_new(p, "title_protected", json_boolean(c->title_protected));
    return p;
}

/* Markdown emphasis characters of the note's own text, escaped: the match
 * marks are the only emphasis in a --md snippet (a match inside the note's
 * **bold** printed as ****Linking**). */
static char *md_escape_emphasis(const char *s)
{
    tbuf b = {0};
    for (; *s; s++) {
        if (*s == '*' || *s == '_' || *s == '\\')
            tbuf_putc(&b, '\\');
        tbuf_putc(&b, *s);
    }
    return tbuf_detach(&b);
}

/* The snippet on one line, match marks rendered by `on`/`off`; md: the
 * text's own emphasis characters escaped. */
static void snippet_line_as(FILE *f, const char *snippet, const char *on, const char *off, int md)
{
    const char *s = snippet;
    while (*s) {
        size_t n = strcspn(s, "\x02\x03");
        char *part = xstrndup(s, n);
        if (md) {
            char *escaped = md_escape_emphasis(part);
            free(part);
            part = escaped;
        }
        out_put_line(f, part);
        free(part);
        s += n;
        if (*s)
            fputs(*s++ == '\x02' ? on : off, f);
    }
}

static void snippet_line(FILE *f, const char *snippet, const char *on, const char *off)
{
    snippet_line_as(f, snippet, on, off, 0);
}

/* "de fr ja": the languages of a result's translations ("?" unknown). */
static char *also_in_langs(const search_result *r)
{
    tbuf b = {0};
    for (size_t i = 0; i < r->n_also_in; i++)
        tbuf_printf(&b, "%s%s", i ? " " : "", *r->also_in[i].lang ? r->also_in[i].lang : "?");
    return tbuf_detach(&b);
}

static void out_text(FILE *f, const search_results *res, const out_opts *o)
{
    if (o->explain && res->fts) {
        fputs("fts: ", f);
        out_put_line(f, res->fts);
        fprintf(f, "\nlang: %s\n", *res->lang ? res->lang : "-");
    }
    if (o->explain && res->fts && res->fusion.method != SEARCH_FUSION_NONE)
        explain_fusion(f, &res->fusion);
    if (o->explain)
        explain_vector(f, res);
    if (o->explain && res->fts)
        explain_xlate(f, res);
    if (o->explain && o->query_info)
        pipe_text_header(f, o->query_info);
    if (o->explain && o->similar)
        out_similar_text_header(f, o->similar);
    if (res->n == 0) {
        fprintf(f, "no results\n");
        return;
    }
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        char *loc = join_path(r->collection, r->path);
        fprintf(f, "%s%.2f%s  %s", o->color ? C_DIM : "", r->score, o->color ? C_RESET : "",
                o->color ? C_CYAN : "");
        out_put_path(f, loc);
        fprintf(f, ":%d%s  %s", r->line_start, o->color ? C_RESET : "", o->color ? C_BOLD : "");
        out_put_line(f, r->title);
        fprintf(f, "%s\n", o->color ? C_RESET : "");
        free(loc);
        if (r->n_heading_path) {
            char *h = heading_joined(r, " > ");
            fputs("      ", f);
            out_put_line(f, h);
            fputc('\n', f);
            free(h);
        }
        for (size_t k = 0; k < r->n_context; k++) {
            fprintf(f, "      %s[", o->color ? C_DIM : "");
            out_put_line(f, r->context[k]);
            fprintf(f, "]%s\n", o->color ? C_RESET : "");
        }
        if (r->via_translation)
            fprintf(f, "      %svia: translation%s\n", o->color ? C_DIM : "",
                    o->color ? C_RESET : "");
        if (r->n_also_in) {
            char *langs = also_in_langs(r);
            fprintf(f, "      %salso in: %s%s\n", o->color ? C_DIM : "", langs,
                    o->color ? C_RESET : "");
            free(langs);
        }
        if (o->full) {
            size_t len;
            char *text = note_text(r, &len);
            if (text)
                print_numbered(f, text, len, o->line_numbers, "      ");
            free(text);
        } else if (r->snippet && *r->snippet) {
            fputs("      ", f);
            snippet_line(f, r->snippet, o->color ? C_MATCH : "", o->color ? C_RESET : "");
            fputc('\n', f);
        }
        passages_text(f, r, o);
        if (o->explain)
            explain_text(f, r, o);
        if (o->explain && o->query_info && i < o->query_info->n)
            pipe_text_item(f, o->query_info, i, o);
        if (o->explain && o->similar)
            out_similar_text_item(f, o->similar, i, o->color);
        if (i + 1 < res->n)
            fputc('\n', f);
    }
}

static json_t *str_array(const char *const *items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, out_json_str(items[i]));
    return a;
}

static json_t *explain_json(const search_result *r)
{
    json_t *ex = json_object();
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        const search_channel_hit *h = &r->channel[ch];
        json_object_set_new(ex, search_channel_names[ch],
                            h->rank ? json_pack("{s:i, s:f, s:f, s:f}", "rank", h->rank,
                                                "score", h->score, "z", h->z, "vote", h->vote)
                                    : json_null());
    }
    json_object_set_new(ex, "graph", json_real(r->prior));
    json_object_set_new(ex, "recency", json_real(r->recency));
    json_object_set_new(ex, "in_degree", json_integer(r->in_degree));
    return ex;
}

/* --passages in --json: each passage with its snippet unmarked. */
static json_t *passages_json(const search_result *r)
{
    json_t *ps = json_array();
    for (size_t k = 0; k < r->n_passages; k++) {
        const search_passage *p = &r->passages[k];
        char *snip = plain_snippet(p->snippet);
        json_array_append_new(ps, json_pack(
            "{s:o, s:i, s:i, s:I, s:I, s:f, s:o}", "heading_path",
            str_array((const char *const *)p->heading_path, p->n_heading_path), "line_start",
            p->line_start, "line_end", p->line_end, "start_byte", (json_int_t)p->start_byte,
            "end_byte", (json_int_t)p->end_byte, "score", p->score, "snippet",
            out_json_str(snip)));
        free(snip);
    }
    return ps;
}

/* --json's own keys of a result (out_opts as ctx). */
static json_t *result_own(const void *obj, const char *key, void *ctx)
{
    const search_result *r = obj;
    const out_opts *o = ctx;
    json_t *j = NULL;
    if (strcmp(key, "file") == 0) {
        char *file = join_path(r->root, r->path);
        j = out_json_str(file);
        free(file);
    } else if (strcmp(key, "snippet") == 0) {
        char *snippet = plain_snippet(r->snippet);
        j = out_json_str(snippet);
        free(snippet);
    } else if (strcmp(key, "body") == 0 && o->full) {
        size_t len;
        char *text = note_text(r, &len);
        j = text ? out_json_strn(text, len) : json_null();
        free(text);
    } else if (strcmp(key, "explain") == 0 && o->explain) {
        j = explain_json(r);
    } else if (strcmp(key, "date") == 0) {
        char day[11];
        date_format(r->date, day);
        j = json_string(day);
    } else if (strcmp(key, "passages") == 0 && r->n_passages) {
        j = passages_json(r);
    } else if (strcmp(key, "via") == 0 && r->via_translation) {
        j = json_string("translation");   /* found only through the translated query */
    }
    return j;
}

static const wire_pick alt_picks[] = {
    WIRE_PICK("lang"), WIRE_PICK("docid", .prefix = "#"), WIRE_PICK("path"),
};
static const wire_view alt_view = {alt_picks, sizeof alt_picks / sizeof *alt_picks, out_json_strn, NULL};

/* A result in --json: the rows of api/wire's search_result table it shows. */
static const wire_pick result_picks[] = {
    WIRE_PICK("docid", .prefix = "#"), WIRE_PICK("collection"), WIRE_PICK("path"),
    WIRE_OWN("file"), WIRE_PICK("title"), WIRE_PICK("heading_path"), WIRE_PICK("line_start"),
    WIRE_PICK("line_end"), WIRE_PICK("start_byte"), WIRE_PICK("end_byte"), WIRE_PICK("score"),
    WIRE_OWN("snippet"), WIRE_PICK("context"), WIRE_PICK("tags"), WIRE_PICK("lang"),
    WIRE_PICK("also_in", .sub = &alt_view), WIRE_OWN("via"), WIRE_OWN("date"),
    WIRE_PICK("date_source"), WIRE_OWN("passages"), WIRE_OWN("body"), WIRE_OWN("explain"),
};
static const wire_view result_view = {result_picks, sizeof result_picks / sizeof *result_picks,
                                      out_json_strn, result_own};

static json_t *result_json(const search_result *r, const out_opts *o)
{
    return wire_emit_view(&wire_result_type, r, &result_view, (void *)o);
}

/* `vector` of --explain: what the vector channel did with this query. */
static const char *vector_state(const search_results *res)
{
    switch (res->vec_state) {
    case SEARCH_VEC_USED: return "used";
    case SEARCH_VEC_NONE: return "no-vectors";
    case SEARCH_VEC_BLANK: return "blank-query";
    default: return "off";
    }
}

static json_t *vector_json(const search_results *res)
{
    if (res->vec_state == SEARCH_VEC_OFF)
        return json_null();
    json_t *v = json_pack("{s:s, s:o}", "state", vector_state(res), "floor",
                          res->vec_floor_known ? json_real(res->vec_floor) : json_null());
    if (res->fusion.method == SEARCH_FUSION_Z)
        json_object_set_new(v, "strength", json_real(res->vec_strength));
    return v;
}

static void out_json(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    json_t *results = json_array();
    for (size_t i = 0; i < res->n; i++) {
        json_t *rj = result_json(&res->items[i], o);
        if (o->explain && o->query_info && i < o->query_info->n)
            json_object_set_new(json_object_get(rj, "explain"), "pipeline",
                                pipe_json_item(o->query_info, i));
        if (o->explain && o->similar)
            json_object_set_new(json_object_get(rj, "explain"), "shared_terms",
                                out_similar_json_item(o->similar, i));
        json_array_append_new(results, rj);
    }
    json_t *root = out_json_root();
    json_object_set_new(root, "query", out_json_str(query));
    json_object_set_new(root, "results", results);
    json_object_set_new(root, "warnings", str_array(o->warnings, o->n_warnings));
    if (o->explain) {
        json_object_set_new(root, "fts", res->fts ? out_json_str(res->fts) : json_null());
        json_object_set_new(root, "lang", out_json_str(res->lang));
        const search_fusion *fu = &res->fusion;
        json_t *chans = fu->method != SEARCH_FUSION_NONE ? json_object() : NULL;
        for (int ch = 0; chans && ch < SEARCH_N_CHANNELS; ch++) {
            json_t *c = json_pack("{s:f}", "weight", fu->weight[ch]);
            if (fu->method == SEARCH_FUSION_Z && ch != SEARCH_CH_TITLE) {
                json_object_set_new(c, "n", json_integer(fu->n[ch]));
                json_object_set_new(c, "mean", json_real(fu->mean[ch]));
                json_object_set_new(c, "sd", json_real(fu->sd[ch]));
            }
            json_object_set_new(chans, search_channel_names[ch], c);
        }
        json_t *fj = chans ? json_pack("{s:s, s:o}", "method",
                                       fu->method == SEARCH_FUSION_Z ? "z-score" : "rrf",
                                       "channels", chans)
                           : json_null();
        if (fu->method == SEARCH_FUSION_Z) {
            json_object_set_new(fj, "bm25_certainty", json_real(fu->certainty));
            json_object_set_new(fj, "agreement", json_real(fu->agreement));
            json_object_set_new(fj, "vector_confidence", json_real(fu->vector_confidence));
            json_object_set_new(fj, "translation_confidence", json_real(fu->xlate_confidence));
        }
        json_object_set_new(root, "fusion", fj);
        json_object_set_new(root, "vector", vector_json(res));
        json_object_set_new(root, "translation",
                            json_pack("{s:s, s:o, s:f}", "state",
                                      search_xlate_state_names[res->xlate_state], "words",
                                      res->xlate ? out_json_str(res->xlate) : json_null(),
                                      "coverage", res->xlate_coverage));
        if (o->query_info)
            json_object_set_new(root, "pipeline", pipe_json_root(o->query_info));
        if (o->similar)
            json_object_set_new(root, "similar", out_similar_json(o->similar));
    }
    out_json_print(f, root);
}

static void csv_field(FILE *f, const char *s)
{
    tbuf b = {0};
    esc_csv(&b, s);
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

static void out_csv(FILE *f, const search_results *res)
{
    fputs("docid,collection,path,title,heading_path,line_start,line_end,start_byte,end_byte,"
          "score,snippet,context,also_in,date,date_source,passages\r\n", f);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        char *h = heading_joined(r, " > "), *snippet = plain_snippet(r->snippet);
        tbuf ctx = {0};
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
        csv_field(f, h);
        fprintf(f, ",%d,%d,%lld,%lld,%.4f,", r->line_start, r->line_end, (long long)r->start_byte,
                (long long)r->end_byte, r->score);
        csv_field(f, snippet);
        fputc(',', f);
        csv_field(f, tbuf_cstr(&ctx));
        fputc(',', f);
        char *langs = also_in_langs(r);
        csv_field(f, langs);
        free(langs);
        char day[11];
        date_format(r->date, day);
        fprintf(f, ",%s,", day);
        csv_field(f, r->date_source ? r->date_source : "");
        fputc(',', f);
        tbuf ps = {0};   /* "START-END HEADING | ..." after the best passage */
        for (size_t k = 1; k < r->n_passages; k++) {
            char *ph = passage_heading(&r->passages[k], " > ");
            tbuf_printf(&ps, "%s%d-%d %s", k > 1 ? " | " : "", r->passages[k].line_start,
                        r->passages[k].line_end, ph);
            free(ph);
        }
        csv_field(f, tbuf_cstr(&ps));
        tbuf_free(&ps);
        fputs("\r\n", f);
        free(h);
        free(snippet);
        tbuf_free(&ctx);
    }
}

/* `PATH:START-END` in Markdown, with a fence one backtick longer than any
 * run inside. */
static void md_location(FILE *f, const char *path, int start, int end)
{
    tbuf b = {0};
    esc_path(&b, path);
    tbuf_printf(&b, ":%d-%d", start, end);
    size_t run = 0, longest = 0;
    for (const char *p = tbuf_cstr(&b); *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
    fputs(longest ? " " : "", f);
    fputs(tbuf_cstr(&b), f);
    fputs(longest ? " " : "", f);
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
    tbuf_free(&b);
}

static void out_md(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    fputs("# Results for: ", f);
    out_put_line(f, query);
    fputs("\n\n", f);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        fprintf(f, "## %zu. ", i + 1);
        out_put_line(f, r->title);
        fputs("\n\n- path: ", f);
        char *loc = join_path(r->collection, r->path);
        md_location(f, loc, r->line_start, r->line_end);
        free(loc);
        fprintf(f, "\n- docid: `#%s`\n- score: %.3f\n", r->docid, r->score);
        if (r->n_heading_path) {
            char *h = heading_joined(r, " > ");
            fputs("- section: ", f);
            out_put_line(f, h);
            fputc('\n', f);
            free(h);
        }
        for (size_t k = 0; k < r->n_context; k++) {
            fputs("- context: ", f);
            out_put_line(f, r->context[k]);
            fputc('\n', f);
        }
        if (r->n_also_in) {
            char *langs = also_in_langs(r);
            fprintf(f, "- also in: %s\n", langs);
            free(langs);
        }
        char day[11];
        date_format(r->date, day);
        fprintf(f, "- date: %s (", day);
        out_put_line(f, r->date_source ? r->date_source : "");
        fputs(")\n", f);
        for (size_t k = 1; k < r->n_passages; k++) {
            const search_passage *p = &r->passages[k];
            char *loc = join_path(r->collection, r->path), *ph = passage_heading(p, " > ");
            fprintf(f, "- passage %zu: ", k + 1);
            md_location(f, loc, p->line_start, p->line_end);
            if (*ph) {
                fputs(" ", f);
                out_put_line(f, ph);
            }
            fputc('\n', f);
            free(loc);
            free(ph);
        }
        fputc('\n', f);
        if (o->full) {
            size_t len;
            char *text = note_text(r, &len);
            if (text) {
                out_put_utf8(f, text, len);
                fputs("\n\n", f);
            }
            free(text);
        } else if (r->snippet && *r->snippet) {
            fputs("> ", f);
            snippet_line_as(f, r->snippet, "**", "**", 1);
            fputs("\n\n", f);
        }
    }
}

static void xml_text(FILE *f, const char *s, size_t len, int attr)
{
    tbuf b = {0};
    esc_xml(&b, s, len, attr);
    fputs(tbuf_cstr(&b), f);
    tbuf_free(&b);
}

static void xml_elem(FILE *f, const char *name, const char *value, size_t len)
{
    fprintf(f, "    <%s>", name);
    xml_text(f, value, len, 0);
    fprintf(f, "</%s>\n", name);
}

static void out_xml(FILE *f, const char *query, const search_results *res, const out_opts *o)
{
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results query=\"", f);
    xml_text(f, query, strlen(query), 1);
    fputs("\">\n", f);
    for (size_t i = 0; i < res->n; i++) {
        const search_result *r = &res->items[i];
        char day[11];
        date_format(r->date, day);
        fprintf(f, "  <result docid=\"#%s\" score=\"%.4f\" line_start=\"%d\" line_end=\"%d\""
                   " start_byte=\"%lld\" end_byte=\"%lld\" date=\"%s\" date_source=\"",
                r->docid, r->score, r->line_start, r->line_end, (long long)r->start_byte,
                (long long)r->end_byte, day);
        xml_text(f, r->date_source ? r->date_source : "", strlen(r->date_source ? r->date_source : ""), 1);
        fputs("\">\n", f);
        xml_elem(f, "collection", r->collection, strlen(r->collection));
        xml_elem(f, "path", r->path, strlen(r->path));
        xml_elem(f, "title", r->title, strlen(r->title));
        fputs("    <heading_path>", f);
        for (size_t k = 0; k < r->n_heading_path; k++) {
            fputs("<h>", f);
            xml_text(f, r->heading_path[k], strlen(r->heading_path[k]), 0);
            fputs("</h>", f);
        }
        fputs("</heading_path>\n", f);
        char *snippet = plain_snippet(r->snippet);
        xml_elem(f, "snippet", snippet, strlen(snippet));
        free(snippet);
        for (size_t k = 0; k < r->n_context; k++)
            xml_elem(f, "context", r->context[k], strlen(r->context[k]));
        for (size_t k = 0; k < r->n_passages; k++) {
            const search_passage *p = &r->passages[k];
            fprintf(f, "    <passage rank=\"%zu\" line_start=\"%d\" line_end=\"%d\" start_byte=\"%lld\""
                       " end_byte=\"%lld\" score=\"%.6g\">", k + 1, p->line_start, p->line_end,
                    (long long)p->start_byte, (long long)p->end_byte, p->score);
            for (size_t h = 0; h < p->n_heading_path; h++) {
                fputs("<h>", f);
                xml_text(f, p->heading_path[h], strlen(p->heading_path[h]), 0);
                fputs("</h>", f);
            }
            char *ps = plain_snippet(p->snippet);
            fputs("<snippet>", f);
            xml_text(f, ps, strlen(ps), 0);
            fputs("</snippet></passage>\n", f);
            free(ps);
        }
        for (size_t k = 0; k < r->n_also_in; k++) {
            const search_alt *a = &r->also_in[k];
            fputs("    <also_in lang=\"", f);
            xml_text(f, a->lang, strlen(a->lang), 1);
            fprintf(f, "\" docid=\"#%s\">", a->docid);
            xml_text(f, a->path, strlen(a->path), 0);
            fputs("</also_in>\n", f);
        }
        if (o->full) {
            size_t len;
            char *text = note_text(r, &len);
            if (text)
                xml_elem(f, "body", text, len);
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
        for (size_t i = 0; i < res->n; i++) {
            char *file = join_path(res->items[i].root, res->items[i].path);
            out_put_path(f, file);
            fputc('\n', f);
            free(file);
        }
        break;
    }
}
