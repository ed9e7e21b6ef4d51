/* out — render search results as text, JSON, CSV, Markdown, XML or a file
 * list, and the small writers every command's output goes through so that
 * it stays valid for its format whatever bytes notes, paths and queries hold
 * (escaping rules: util/esc.h). Formatters write to a FILE and own nothing.
 * Snippets carry match marks \x02..\x03 (from search); each format renders
 * or strips them. */
#ifndef TROVE_OUT_H
#define TROVE_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "api/api.h"
#include "search/search.h"

typedef enum out_format {
    OUT_TEXT, OUT_JSON, OUT_CSV, OUT_MD, OUT_XML, OUT_FILES
} out_format;

typedef struct out_opts {
    out_format format;
    int color;
    int full;           /* include the whole note text read from disk */
    int line_numbers;   /* number the lines of --full text */
    int explain;        /* per-channel ranks and scores */
    const api_query_info *query_info;  /* `query`: the pipeline's detail, else NULL */
    const api_similar_info *similar;   /* `similar`: its terms and vectors, else NULL */
    /* What the command could not do (sentences, borrowed): JSON `warnings` */
    const char *const *warnings;
    size_t n_warnings;
} out_opts;

/* Version of the JSON output shape: the top-level "version" of every JSON
 * document trove prints. Raised when a field changes meaning or goes away,
 * not when one is added. */
#define OUT_JSON_VERSION 1

/* A new JSON document: {"version": OUT_JSON_VERSION}; commands add fields. */
json_t *out_json_root(void);
/* Print `root` indented, then a newline, and release it. */
void out_json_print(FILE *f, json_t *root);
/* JSON strings from any bytes (invalid UTF-8 becomes U+FFFD). */
json_t *out_json_str(const char *s);
json_t *out_json_strn(const char *s, size_t len);

/* Text writers: bytes with invalid UTF-8 as U+FFFD; a one-line field
 * (controls become spaces); a path, quoted with C escapes when needed. */
void out_put_utf8(FILE *f, const char *s, size_t len);
void out_put_line(FILE *f, const char *s);
void out_put_path(FILE *f, const char *s);

void out_results(FILE *f, const char *query, const search_results *res, const out_opts *o);

/* out_graph.c: `trove links` in o->format; the pieces of `similar
 * --explain` that out_results adds when o->similar is set. */
void out_links(FILE *f, const api_link_set *s, const out_opts *o);
void out_similar_text_header(FILE *f, const api_similar_info *si);
void out_similar_text_item(FILE *f, const api_similar_info *si, size_t i, int color);
json_t *out_similar_json(const api_similar_info *si);
json_t *out_similar_json_item(const api_similar_info *si, size_t i);

#endif
