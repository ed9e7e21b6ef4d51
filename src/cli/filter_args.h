/* filter_args — the filter flags `search`, `vsearch`, `query` and `similar`
 * share (-c/--collection, --folder, --tags, --lang, --where, --since,
 * --until, --heading): parsed once, with one set of messages, onto a
 * search_opts (search/search.h).
 *
 * cli_filters owns the split --tags and --lang values and its arrays; the
 * --collection and --where values point into argv (borrowed). The
 * search_opts a flag fills borrows from it: free it only after the search
 * ran (cli_filters_free). */
#ifndef TROVE_CLI_FILTER_ARGS_H
#define TROVE_CLI_FILTER_ARGS_H

#include <stddef.h>

#include "search/search.h"

typedef struct cli_filters {
    const char **collections;   /* room for argc */
    char *attached;             /* per collection: given as "-cNAME" */
    size_t n_collections;
    const char **where;         /* room for argc */
    size_t n_where;
    char **tags, **langs;
    size_t n_tags, cap_tags, n_langs, cap_langs;
} cli_filters;

/* For a command line of argc words. */
void cli_filters_init(cli_filters *l, int argc);
void cli_filters_free(cli_filters *l);

/* The filter flag at argv[*i] (its value may take argv[*i + 1]) onto f,
 * whose lists then point into l: 1 taken, 0 not a filter flag, -1 a usage
 * error, said for cmd (cli_usage). */
int cli_filter_flag(const char *cmd, int argc, char **argv, int *i, search_opts *f,
                    cli_filters *l);

#endif
