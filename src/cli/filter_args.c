/* filter_args — the filter flags search and similar share (filter_args.h). */
#include "cli/filter_args.h"

#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "text/transl.h"
#include "util/mem.h"

/* "a,b c" → a, b, c appended to list (owned copies). */
static void add_list(char ***list, size_t *n, size_t *cap, const char *v)
{
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ", ");
        if (len) {
            xgrow(list, cap, *n + 1, sizeof **list);
            (*list)[(*n)++] = xstrndup(p, len);
        }
        p += len;
        p += strspn(p, ", ");
    }
}

void cli_filters_init(cli_filters *l, int argc)
{
    memset(l, 0, sizeof *l);
    size_t n = argc > 0 ? (size_t)argc : 1;
    l->collections = xcalloc(n, sizeof *l->collections);
    l->attached = xcalloc(n, 1);
    l->where = xcalloc(n, sizeof *l->where);
}

void cli_filters_free(cli_filters *l)
{
    for (size_t i = 0; i < l->n_tags; i++)
        free(l->tags[i]);
    for (size_t i = 0; i < l->n_langs; i++)
        free(l->langs[i]);
    free(l->tags);
    free(l->langs);
    free(l->collections);
    free(l->attached);
    free(l->where);
    memset(l, 0, sizeof *l);
}

/* --lang: every comma-separated code a language code. */
static int add_langs(const char *cmd, cli_filters *l, const char *v)
{
    size_t first = l->n_langs;
    add_list(&l->langs, &l->n_langs, &l->cap_langs, v);
    char code[16];
    for (size_t k = first; k < l->n_langs; k++)
        if (!transl_code_normalise(l->langs[k], code, sizeof code))
            return cli_usage(cmd, "--lang: '%s' is not a language code (ISO 639-1: en, de, "
                             "pt-BR, ...)", l->langs[k]), -1;
    return 1;
}

int cli_filter_flag(const char *cmd, int argc, char **argv, int *i, search_opts *f,
                    cli_filters *l)
{
    const char *arg = argv[*i], *v;
    if (cli_opt_value(argc, argv, i, "-c", &v) || cli_opt_value(argc, argv, i, "--collection", &v)) {
        if (!v)
            return cli_usage(cmd, "--collection needs a name"), -1;
        l->attached[l->n_collections] = v == arg + 2;
        l->collections[l->n_collections++] = v;
    } else if (cli_opt_value(argc, argv, i, "--folder", &v)) {
        if (!v)
            return cli_usage(cmd, "--folder needs a path prefix"), -1;
        f->folder = v;
    } else if (cli_opt_value(argc, argv, i, "--tags", &v) ||
               cli_opt_value(argc, argv, i, "--tag", &v)) {
        if (!v)
            return cli_usage(cmd, "--tags needs a tag"), -1;
        add_list(&l->tags, &l->n_tags, &l->cap_tags, v);
    } else if (cli_opt_value(argc, argv, i, "--lang", &v)) {
        if (!v || !*v)
            return cli_usage(cmd, "--lang needs a language code (en, de, pt-BR, ...)"), -1;
        if (add_langs(cmd, l, v) < 0)
            return -1;
    } else if (cli_opt_value(argc, argv, i, "--where", &v)) {
        if (!v || !*v)
            return cli_usage(cmd, "--where needs a condition: KEY=VALUE, KEY>=VALUE, "
                             "KEY in (A, B), exists(KEY)"), -1;
        l->where[l->n_where++] = v;
    } else if (cli_opt_value(argc, argv, i, "--since", &v)) {
        if (!v || !*v)
            return cli_usage(cmd, "--since needs a date (2024-05-01, 7d, last-week, ...)"), -1;
        f->since = v;
    } else if (cli_opt_value(argc, argv, i, "--until", &v)) {
        if (!v || !*v)
            return cli_usage(cmd, "--until needs a date (2024-05-01, 7d, last-week, ...)"), -1;
        f->until = v;
    } else if (cli_opt_value(argc, argv, i, "--heading", &v)) {
        if (!v || !*v)
            return cli_usage(cmd, "--heading needs text to find in headings"), -1;
        f->heading_contains = v;
    } else {
        return 0;
    }
    f->collections = l->collections;
    f->n_collections = l->n_collections;
    f->where = l->where;
    f->n_where = l->n_where;
    f->tags = (const char *const *)l->tags;
    f->n_tags = l->n_tags;
    f->langs = (const char *const *)l->langs;
    f->n_langs = l->n_langs;
    return 1;
}
