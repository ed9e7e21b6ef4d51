/* trove similar, links, dupes: the link graph and notes alike (api.h, "the
 * link graph"); each through a running daemon when there is one, else cold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "daemon/client.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

static const struct { const char *flag; out_format format; } formats[] = {
    {"--json", OUT_JSON}, {"--csv", OUT_CSV}, {"--md", OUT_MD},
    {"--xml", OUT_XML}, {"--files", OUT_FILES},
};

/* 1 when arg is an output format flag (then *fmt is set). */
static int format_flag(const char *arg, out_format *fmt)
{
    for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
        if (strcmp(arg, formats[k].flag) == 0) {
            *fmt = formats[k].format;
            return 1;
        }
    }
    return 0;
}

/* ---- similar ---- */

static const char similar_help[] =
    "usage: trove similar NOTE [options]\n"
    "Notes like NOTE (COLLECTION/PATH, a path inside a collection, or #DOCID): by\n"
    "its distinctive terms (always) and by the mean of its chunk vectors (when the\n"
    "index holds vectors for it), fused. Never NOTE itself or its translations.\n"
    "  -n N                  results to show (default 10)\n"
    "  -c, --collection NAME results only from this collection (repeatable)\n"
    "  --bm25-weight F       weight of the terms (default 1)\n"
    "  --vector-weight F     weight of the vectors (default 1)\n"
    "  --model PATH          compare the vectors of this embedding model (default:\n"
    "                        the index's model with the most vectors; no model is loaded)\n"
    "  --json | --csv | --md | --xml | --files   output format (default: text)\n"
    "  --full                whole note instead of a snippet\n"
    "  --line-numbers        number the lines of --full output\n"
    "  --explain             the terms used, each result's shared terms and ranks\n";

int cmd_similar(cli *c, int argc, char **argv)
{
    api_similar_opts so;
    api_similar_opts_init(&so);
    out_opts oo = {.color = c->color};
    const char **collections = xcalloc((size_t)argc, sizeof *collections);
    size_t n_collections = 0;
    int rc = -1;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *arg = argv[i], *v;
        double d;
        long n;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(similar_help, stdout);
            rc = EXIT_OK;
        } else if (format_flag(arg, &oo.format)) {
            continue;
        } else if (strcmp(arg, "--full") == 0) {
            oo.full = 1;
        } else if (strcmp(arg, "--line-numbers") == 0) {
            oo.line_numbers = 1;
        } else if (strcmp(arg, "--explain") == 0) {
            oo.explain = 1;
        } else if (cli_opt_value(argc, argv, &i, "-n", &v)) {
            if (!cli_opt_positive(v, &n))
                rc = cli_usage("similar", "-n needs a positive number");
            else
                so.limit = (size_t)n;
        } else if (cli_opt_value(argc, argv, &i, "-c", &v) ||
                   cli_opt_value(argc, argv, &i, "--collection", &v)) {
            if (!v)
                rc = cli_usage("similar", "--collection needs a name");
            else
                collections[n_collections++] = v;
        } else if (cli_opt_value(argc, argv, &i, "--bm25-weight", &v)) {
            if (!str_to_double(v, &d) || d < 0)
                rc = cli_usage("similar", "--bm25-weight needs a number >= 0");
            else
                so.bm25_weight = d;
        } else if (cli_opt_value(argc, argv, &i, "--vector-weight", &v)) {
            if (!str_to_double(v, &d) || d < 0)
                rc = cli_usage("similar", "--vector-weight needs a number >= 0");
            else
                so.vector_weight = d;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                rc = cli_usage("similar", "--model needs a path");
            else
                so.model = v;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            rc = cli_usage("similar", "unknown option %s", arg);
        } else if (!so.ref) {
            so.ref = arg;
        } else {
            rc = cli_usage("similar", "takes one NOTE");
        }
    }
    if (rc < 0 && !so.ref)
        rc = cli_usage("similar", "needs a NOTE (COLLECTION/PATH or #DOCID)");
    if (rc >= 0) {
        free(collections);
        return rc;
    }
    if (so.model && !(so.model = cli_model_path(so.model))) {
        free(collections);
        return cli_error(cli_model_error(NULL));
    }
    so.collections = collections;
    so.n_collections = n_collections;
    so.with_body = oo.full;
    char cwd[4096];
    so.cwd = getcwd(cwd, sizeof cwd);
    api *a = NULL;
    wire_similar_answer ans;
    trove_err err;
    if ((rc = cli_answer(c, &a, WIRE_OP_SIMILAR, &so, &ans, &err)) != EXIT_OK) {
        free(collections);
        return rc;
    }
    if (err) {
        rc = cli_error(err);
    } else {
        search_results res = ans.results;
        api_similar_info info = ans.info;
        oo.similar = &info;
        tbuf q = {0};
        tbuf_printf(&q, "similar:%s", so.ref);
        out_results(stdout, q.data, &res, &oo);
        tbuf_free(&q);
        search_results_free(&res);
        api_similar_info_free(&info);
        rc = EXIT_OK;
    }
    api_close(a);
    free(collections);
    return rc;
}

/* ---- links ---- */

static const char links_help[] =
    "usage: trove links NOTE [--json | --csv | --md | --xml | --files]\n"
    "The link graph around NOTE (COLLECTION/PATH, a path inside a collection, or\n"
    "#DOCID): backlinks with the line that links, outlinks, unresolved links, and\n"
    "unlinked mentions (notes that name NOTE's title, an alias or its file name\n"
    "without linking it).\n";

int cmd_links(cli *c, int argc, char **argv)
{
    out_opts oo = {.color = c->color};
    const char *ref = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(links_help, stdout);
            return EXIT_OK;
        }
        if (format_flag(arg, &oo.format))
            continue;
        if (arg[0] == '-' && arg[1] != '\0')
            return cli_usage("links", "unknown option %s", arg);
        if (ref)
            return cli_usage("links", "takes one NOTE");
        ref = arg;
    }
    if (!ref)
        return cli_usage("links", "needs a NOTE (COLLECTION/PATH or #DOCID)");
    char cwd[4096];
    const char *here = getcwd(cwd, sizeof cwd);
    api *a = NULL;
    api_link_set set;
    trove_err err;
    int rc;
    wire_links_args args = {.ref = ref, .cwd = here};
    if ((rc = cli_answer(c, &a, WIRE_OP_LINKS, &args, &set, &err)) != EXIT_OK)
        return rc;
    if (err) {
        rc = cli_error(err);
    } else {
        out_links(stdout, &set, &oo);
        api_link_set_free(&set);
        rc = EXIT_OK;
    }
    api_close(a);
    return rc;
}
