/* trove similar, links, dupes: the link graph and notes alike (api.h, "the
 * link graph"); each through a running daemon when there is one, else cold. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/wire.h"
#include "cli/cli.h"
#include "cli/filter_args.h"
#include "cli/out.h"
#include "daemon/client.h"
#include "util/buf.h"
#include "util/esc.h"
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
    "  --folder PREFIX, --tags T[,T...], --lang CODE[,CODE...], --where EXPR,\n"
    "  --since DATE, --until DATE, --heading TEXT\n"
    "                        only notes these let through, as for `trove search`\n"
    "                        (--where repeatable: all must hold)\n"
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
    cli_filters fl;
    cli_filters_init(&fl, argc);
    int rc = -1;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *arg = argv[i], *v;
        double d;
        long n;
        int took;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(similar_help, stdout);
            rc = EXIT_OK;
        } else if ((took = cli_filter_flag("similar", argc, argv, &i, &so.filter, &fl)) != 0) {
            if (took < 0)
                rc = EXIT_USAGE;
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
        cli_filters_free(&fl);
        return rc;
    }
    if (so.model && !(so.model = cli_model_path(so.model))) {
        cli_filters_free(&fl);
        return cli_error(cli_model_error(NULL));
    }
    so.with_body = oo.full;
    char cwd[4096];
    so.cwd = getcwd(cwd, sizeof cwd);
    api *a = NULL;
    wire_similar_answer ans;
    trove_err err;
    if ((rc = cli_answer(c, &a, WIRE_OP_SIMILAR, &so, &ans, &err)) != EXIT_OK) {
        cli_filters_free(&fl);
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
    cli_filters_free(&fl);
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

/* ---- dupes ---- */

static const char dupes_help[] =
    "usage: trove dupes [options]\n"
    "Groups of near-duplicate notes (or passages): word shingles of the indexed\n"
    "text, MinHash signatures, pairs whose estimated similarity reaches the\n"
    "threshold, confirmed by their vectors where the index holds them. Largest\n"
    "groups first.\n"
    "  --threshold F         estimated Jaccard similarity in (0, 1] (default 0.8)\n"
    "  --passages            compare passages (chunks) instead of whole notes\n"
    "  -c, --collection NAME only this collection (repeatable)\n"
    "  --json | --csv | --md | --xml | --files   output format (default: text)\n";

int cmd_dupes(cli *c, int argc, char **argv)
{
    api_dupes_opts o = {0};
    out_opts oo = {.color = c->color};
    const char **collections = xcalloc((size_t)argc, sizeof *collections);
    int rc = -1;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *arg = argv[i], *v;
        double d;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(dupes_help, stdout);
            rc = EXIT_OK;
        } else if (format_flag(arg, &oo.format)) {
            continue;
        } else if (strcmp(arg, "--passages") == 0) {
            o.passages = 1;
        } else if (cli_opt_value(argc, argv, &i, "--threshold", &v)) {
            if (!str_to_double(v, &d) || !(d > 0 && d <= 1))
                rc = cli_usage("dupes", "--threshold needs a number in (0, 1]");
            else
                o.threshold = d;
        } else if (cli_opt_value(argc, argv, &i, "-c", &v) ||
                   cli_opt_value(argc, argv, &i, "--collection", &v)) {
            if (!v)
                rc = cli_usage("dupes", "--collection needs a name");
            else
                collections[o.n_collections++] = v;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            rc = cli_usage("dupes", "unknown option %s", arg);
        } else {
            rc = cli_usage("dupes", "unexpected argument '%s'", arg);
        }
    }
    if (rc >= 0) {
        free(collections);
        return rc;
    }
    o.collections = collections;
    api *a = NULL;
    dupes_result res;
    trove_err err;
    if ((rc = cli_answer(c, &a, WIRE_OP_DUPES, &o, &res, &err)) != EXIT_OK) {
        free(collections);
        return rc;
    }
    if (err) {
        rc = cli_error(err);
    } else {
        out_dupes(stdout, &res, o.threshold > 0 ? o.threshold : DUPES_THRESHOLD, o.passages, &oo);
        dupes_result_free(&res);
        rc = EXIT_OK;
    }
    api_close(a);
    free(collections);
    return rc;
}

/* ---- eval ---- */

static const char eval_help[] =
    "usage: trove eval [options]\n"
    "How well search works on this vault: queries with known answers made from the\n"
    "index itself (titles, aliases, link lines, descriptions, headings), run through\n"
    "search under each channel mix (hybrid, bm25, title, vector) and through\n"
    "`trove query` (mix query: expansion, fusion, the lexical re-scorer), or under\n"
    "two compared settings; nDCG@10, Recall@10 and MRR per kind. Never writes the\n"
    "index.\n"
    "  -n N                  queries per kind at most (default 100)\n"
    "  -c, --collection NAME only notes of this collection (repeatable)\n"
    "  --model PATH          embedding model (default: the active one) for the\n"
    "                        vector channel and the vector mix\n"
    "  --no-vector           keyword channels only\n"
    "  --compare A B         two settings side by side, each NAME=VALUE[,...] of the\n"
    "                        search options (vector_weight=0.3, title_weight=0,\n"
    "                        model=PATH, ...); \"\" is the current settings\n"
    "  --json | --csv        output format (default: text)\n";

static void eval_print(const api_eval_result *r, out_format fmt)
{
    if (fmt == OUT_JSON) {
        json_t *root = out_json_root(), *rows = json_array(), *sets = json_object();
        for (int k = 0; k < EVAL_N_KINDS; k++)
            json_object_set_new(sets, evalset_kind_names[k],
                                json_pack("{s:I, s:I}", "queries", (json_int_t)r->queries[k],
                                          "candidates", (json_int_t)r->found[k]));
        for (size_t i = 0; i < r->n; i++) {
            const api_eval_row *x = &r->rows[i];
            json_array_append_new(rows, json_pack("{s:s, s:s, s:o, s:I, s:f, s:f, s:f}", "kind",
                                                  x->kind, "mix", x->mix, "setting",
                                                  x->setting ? out_json_str(x->setting) : json_null(),
                                                  "queries", (json_int_t)x->n, "ndcg@10",
                                                  x->ndcg10, "recall@10", x->recall10, "mrr",
                                                  x->mrr));
        }
        json_object_set_new(root, "sets", sets);
        json_object_set_new(root, "results", rows);
        out_json_print(stdout, root);
        return;
    }
    if (fmt == OUT_CSV) {
        fputs("kind,mix,setting,queries,ndcg@10,recall@10,mrr\r\n", stdout);
        for (size_t i = 0; i < r->n; i++) {
            const api_eval_row *x = &r->rows[i];
            printf("%s,%s,", x->kind, x->mix);
            tbuf b = {0};
            esc_csv(&b, x->setting ? x->setting : "");
            fputs(tbuf_cstr(&b), stdout);
            tbuf_free(&b);
            printf(",%zu,%.4f,%.4f,%.4f\r\n", x->n, x->ndcg10, x->recall10, x->mrr);
        }
        return;
    }
    printf("queries:");
    for (int k = 0; k < EVAL_N_KINDS; k++)
        printf(" %s %zu/%zu%s", evalset_kind_names[k], r->queries[k], r->found[k],
               k + 1 < EVAL_N_KINDS ? "," : "\n");
    printf("\n%-12s %-7s %-24s %6s %8s %9s %7s\n", "kind", "mix", "setting", "n", "nDCG@10",
           "Recall@10", "MRR");
    for (size_t i = 0; i < r->n; i++) {
        const api_eval_row *x = &r->rows[i];
        printf("%-12s %-7s ", x->kind, x->mix);
        char set[25];
        snprintf(set, sizeof set, "%s", x->setting ? (*x->setting ? x->setting : "(current)") : "-");
        out_put_line(stdout, set);
        printf("%*s %6zu %8.3f %9.3f %7.3f\n", (int)(24 - strlen(set) > 0 ? 24 - strlen(set) : 0),
               "", x->n, x->ndcg10, x->recall10, x->mrr);
    }
    if (!r->n)
        printf("no queries: the index has no titles, links, descriptions or headings to ask about\n");
}

int cmd_eval(cli *c, int argc, char **argv)
{
    api_eval_opts o = {0};
    out_format fmt = OUT_TEXT;
    const char **collections = xcalloc((size_t)argc, sizeof *collections);
    const char *model_flag = NULL;
    int no_vector = 0, rc = -1;
    for (int i = 1; i < argc && rc < 0; i++) {
        const char *arg = argv[i], *v;
        long n;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(eval_help, stdout);
            rc = EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            fmt = OUT_JSON;
        } else if (strcmp(arg, "--csv") == 0) {
            fmt = OUT_CSV;
        } else if (strcmp(arg, "--no-vector") == 0) {
            no_vector = 1;
        } else if (strcmp(arg, "--compare") == 0) {
            if (i + 2 >= argc)
                rc = cli_usage("eval", "--compare needs two settings (\"\" is the current ones)");
            else {
                o.compare[0] = argv[++i];
                o.compare[1] = argv[++i];
            }
        } else if (cli_opt_value(argc, argv, &i, "-n", &v)) {
            if (!cli_opt_positive(v, &n))
                rc = cli_usage("eval", "-n needs a positive number");
            else
                o.per_kind = (size_t)n;
        } else if (cli_opt_value(argc, argv, &i, "-c", &v) ||
                   cli_opt_value(argc, argv, &i, "--collection", &v)) {
            if (!v)
                rc = cli_usage("eval", "--collection needs a name");
            else
                collections[o.n_collections++] = v;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                rc = cli_usage("eval", "--model needs a path");
            else
                model_flag = v;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            rc = cli_usage("eval", "unknown option %s", arg);
        } else {
            rc = cli_usage("eval", "unexpected argument '%s'", arg);
        }
    }
    if (rc >= 0) {
        free(collections);
        return rc;
    }
    o.collections = collections;
    o.model = no_vector ? NULL : cli_model_path(model_flag);
    const char *model_msg;
    if (!no_vector && cli_model_error(&model_msg))
        fprintf(stderr, "trove: eval: %s (keyword channels only)\n", model_msg);
    api *a = NULL;
    api_eval_result res;
    trove_err err;
    dcl *d = cli_daemon(c);
    if (d)
        dcl_set_timeout(d, 900.0);   /* hundreds of searches: never redo them cold */
    if (!dcl_try(d, WIRE_OP_EVAL, &o, &res, &err)) {
        if ((rc = cli_open_api(c, &a)) != EXIT_OK) {
            free(collections);
            return rc;
        }
        err = wire_call(a, WIRE_OP_EVAL, &o, &res);
    }
    if (err) {
        rc = cli_error(err);
    } else {
        eval_print(&res, fmt);
        api_eval_result_free(&res);
        rc = EXIT_OK;
    }
    api_close(a);
    free(collections);
    return rc;
}
