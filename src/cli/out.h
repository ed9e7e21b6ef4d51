/* out — render search results as text, JSON, CSV, Markdown, XML or a file
 * list. Formatters write to a FILE and own nothing. Snippets carry match
 * marks \x02..\x03 (from search); each format renders or strips them. */
#ifndef TROVE_OUT_H
#define TROVE_OUT_H

#include <stdio.h>

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
} out_opts;

void out_results(FILE *f, const char *query, const search_results *res, const out_opts *o);

#endif
