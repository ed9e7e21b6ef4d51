/* trove search QUERY [options] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "search/search.h"
#include "store/store_vec.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

static const char search_help[] =
    "usage: trove search QUERY... [options]\n"
    "Query: words (ranked by how many and how rare), \"exact phrase\", -excluded, prefix*\n"
    "With an embedding model (--model, $TROVE_EMBED_MODEL) and vectors in the index\n"
    "(`trove embed`), results by meaning are fused in as well.\n"
    "  -n N                  results to show (default 10)\n"
    "  --all                 every match\n"
    "  -c, --collection NAME restrict to a collection (repeatable)\n"
    "  --folder PREFIX       restrict to a folder inside the collections\n"
    "  --tags T[,T...]       notes carrying all these tags (repeatable)\n"
    "  --min-score F         drop results scoring below F (scores are 0..1)\n"
    "  --title-weight F      RRF weight of the title/alias channel (default 1.5)\n"
    "  --bm25-weight F       RRF weight of the keyword channel (default 1.0)\n"
    "  --graph-weight F      RRF weight of the link in-degree channel (default 0.3)\n"
    "  --vector-weight F     RRF weight of the vector channel (default 1.0)\n"
    "  --no-vector           keywords, titles and links only\n"
    "  --model PATH          embedding model (GGUF file or model2vec folder)\n"
    "  --json | --csv | --md | --xml | --files   output format (default: text)\n"
    "  --full                whole note instead of a snippet\n"
    "  --line-numbers        number the lines of --full output\n"
    "  --explain             per-channel ranks and scores\n"
    "Weights may also be set in config.yaml: weights: {bm25: 1, vector: 1.2}\n";

static const char vsearch_help[] =
    "usage: trove vsearch QUERY... [options]\n"
    "Search by meaning only: the query is embedded with the embedding model and\n"
    "compared with every chunk's vector (`trove embed` makes them). The score is\n"
    "the cosine similarity of the best chunk of each note.\n"
    "  --model PATH          embedding model (default: $TROVE_EMBED_MODEL)\n"
    "  -n N, --all, -c NAME, --folder P, --tags T, --min-score F (cosine, -1..1)\n"
    "  --json | --csv | --md | --xml | --files, --full, --line-numbers, --explain\n"
    "                        as for `trove search`\n";

typedef struct search_args {
    search_opts so;
    out_opts oo;
    int vector_only;
    int no_vector;
    const char *model_flag;
    int weight_set[SEARCH_N_CHANNELS];
    tbuf query;
    const char **collections;
    size_t n_collections;
    char **tags;
    size_t n_tags, cap_tags;
} search_args;

static int parse_double(const char *v, double *out)
{
    char *end;
    if (!v || !*v)
        return 0;
    *out = strtod(v, &end);
    return *end == '\0' && isfinite(*out);
}

static void add_tags(search_args *a, const char *v)
{
    const char *p = v;
    while (*p) {
        size_t len = strcspn(p, ", ");
        if (len) {
            xgrow(&a->tags, &a->cap_tags, a->n_tags + 1, sizeof *a->tags);
            a->tags[a->n_tags++] = xstrndup(p, len);
        }
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
}

static void add_query_word(search_args *a, const char *w)
{
    if (a->query.len)
        tbuf_putc(&a->query, ' ');
    tbuf_puts(&a->query, w);
}

static const struct { const char *flag; out_format format; } formats[] = {
    {"--json", OUT_JSON}, {"--csv", OUT_CSV}, {"--md", OUT_MD},
    {"--xml", OUT_XML}, {"--files", OUT_FILES},
};

/* Returns -1 when parsed, else an exit code. */
static int parse_args(search_args *a, int argc, char **argv)
{
    const char *cmd = a->vector_only ? "vsearch" : "search";
    int only_query = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        double d;
        if (only_query || arg[0] != '-' || arg[1] == '\0') {
            add_query_word(a, arg);
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_query = 1;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(a->vector_only ? vsearch_help : search_help, stdout);
            return EXIT_OK;
        }
        int matched_format = 0;
        for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
            if (strcmp(arg, formats[k].flag) == 0) {
                a->oo.format = formats[k].format;
                matched_format = 1;
            }
        }
        if (matched_format)
            continue;
        if (strcmp(arg, "--all") == 0) {
            a->so.limit = 0;
        } else if (strcmp(arg, "--full") == 0) {
            a->oo.full = 1;
        } else if (strcmp(arg, "--line-numbers") == 0) {
            a->oo.line_numbers = 1;
        } else if (strcmp(arg, "--explain") == 0) {
            a->oo.explain = 1;
        } else if (strcmp(arg, "--no-vector") == 0 && !a->vector_only) {
            a->no_vector = 1;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage(cmd, "--model needs a path");
            a->model_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "-n", &v)) {
            char *end;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || n < 1)
                return cli_usage(cmd, "-n needs a positive number");
            a->so.limit = (size_t)n;
        } else if (cli_opt_value(argc, argv, &i, "-c", &v) ||
                   cli_opt_value(argc, argv, &i, "--collection", &v)) {
            if (!v)
                return cli_usage(cmd, "--collection needs a name");
            a->collections[a->n_collections++] = v;
        } else if (cli_opt_value(argc, argv, &i, "--folder", &v)) {
            if (!v)
                return cli_usage(cmd, "--folder needs a path prefix");
            a->so.folder = v;
        } else if (cli_opt_value(argc, argv, &i, "--tags", &v) ||
                   cli_opt_value(argc, argv, &i, "--tag", &v)) {
            if (!v)
                return cli_usage(cmd, "--tags needs a tag");
            add_tags(a, v);
        } else if (cli_opt_value(argc, argv, &i, "--min-score", &v)) {
            if (!parse_double(v, &a->so.min_score))
                return cli_usage(cmd, "--min-score needs a number");
        } else if (cli_opt_value(argc, argv, &i, "--title-weight", &v)) {
            if (!parse_double(v, &d) || d < 0)
                return cli_usage(cmd, "--title-weight needs a number >= 0");
            a->so.weights[SEARCH_CH_TITLE] = d;
            a->weight_set[SEARCH_CH_TITLE] = 1;
        } else if (cli_opt_value(argc, argv, &i, "--bm25-weight", &v)) {
            if (!parse_double(v, &d) || d < 0)
                return cli_usage(cmd, "--bm25-weight needs a number >= 0");
            a->so.weights[SEARCH_CH_BM25] = d;
            a->weight_set[SEARCH_CH_BM25] = 1;
        } else if (cli_opt_value(argc, argv, &i, "--graph-weight", &v)) {
            if (!parse_double(v, &d) || d < 0)
                return cli_usage(cmd, "--graph-weight needs a number >= 0");
            a->so.weights[SEARCH_CH_GRAPH] = d;
            a->weight_set[SEARCH_CH_GRAPH] = 1;
        } else if (cli_opt_value(argc, argv, &i, "--vector-weight", &v)) {
            if (!parse_double(v, &d) || d < 0)
                return cli_usage(cmd, "--vector-weight needs a number >= 0");
            a->so.weights[SEARCH_CH_VECTOR] = d;
            a->weight_set[SEARCH_CH_VECTOR] = 1;
        } else if (arg[1] == '-') {
            return cli_usage(cmd, "unknown option %s", arg);
        } else {
            add_query_word(a, arg);   /* "-word" is an exclusion in the query */
        }
    }
    return -1;
}

/* Collections named with -c must exist: a typo should not look like "no results". */
static int check_collections(const search_args *a, const config *cfg)
{
    for (size_t i = 0; i < a->n_collections; i++) {
        if (!config_find_collection(cfg, a->collections[i])) {
            fprintf(stderr, "trove: no collection named '%s' (see `trove collection list`)\n",
                    a->collections[i]);
            return EXIT_ERR;
        }
    }
    return EXIT_OK;
}

/* Channel weights from config.yaml, where no flag set them. */
static void apply_config_weights(search_args *a, const config *cfg)
{
    static const int map[CONFIG_N_WEIGHTS] = {
        [CONFIG_W_BM25] = SEARCH_CH_BM25, [CONFIG_W_TITLE] = SEARCH_CH_TITLE,
        [CONFIG_W_GRAPH] = SEARCH_CH_GRAPH, [CONFIG_W_VECTOR] = SEARCH_CH_VECTOR,
    };
    for (int i = 0; i < CONFIG_N_WEIGHTS; i++)
        if (cfg->has_weight[i] && !a->weight_set[map[i]])
            a->so.weights[map[i]] = cfg->weights[i];
}

/* Open the embedding model when the vector channel can run. Returns an
 * exit code; *m stays NULL when the channel is off. `search` goes on
 * without it (saying why once); `vsearch` cannot. */
static int open_query_model(search_args *a, store *st, embed_model **m)
{
    *m = NULL;
    const char *cmd = a->vector_only ? "vsearch" : "search";
    if (a->no_vector || (!a->vector_only && a->so.weights[SEARCH_CH_VECTOR] <= 0))
        return EXIT_OK;
    const char *path = cli_model_path(a->model_flag);
    if (!path) {
        if (!a->vector_only)
            return EXIT_OK;
        fprintf(stderr, "trove: vsearch needs an embedding model: pass --model PATH or set "
                        "TROVE_EMBED_MODEL\n");
        return EXIT_ERR;
    }
    /* No vectors at all: say so without paying for loading the model. */
    store_vec_model *models;
    size_t n_models;
    trove_err err = store_vec_models(st, &models, &n_models);
    if (err)
        return cli_error(err);
    int64_t vectors = 0;
    for (size_t i = 0; i < n_models; i++)
        vectors += models[i].vectors;
    store_vec_models_free(models, n_models);
    if (vectors == 0) {
        fprintf(stderr, "trove: %s: the index has no embeddings yet; run `trove embed`%s\n", cmd,
                a->vector_only ? "" : " (answering by keywords, titles and links)");
        return a->vector_only ? EXIT_ERR : EXIT_OK;
    }
    int rc = cli_open_model(path, 0, m);
    if (rc != EXIT_OK && !a->vector_only) {
        fprintf(stderr, "trove: search: answering by keywords, titles and links\n");
        return EXIT_OK;
    }
    return rc;
}

static void vector_notices(const search_args *a, const search_results *res)
{
    const char *cmd = a->vector_only ? "vsearch" : "search";
    if (res->vec_state == SEARCH_VEC_NONE) {
        fprintf(stderr, "trove: %s: the index has no embeddings of this model; run `trove embed`%s\n",
                cmd, a->vector_only ? "" : " (answering by keywords, titles and links)");
        return;
    }
    for (size_t i = 0; i < res->n_vec_missing; i++)
        fprintf(stderr, "trove: %s: collection '%s' has no embeddings; run `trove embed`%s\n", cmd,
                res->vec_missing[i], a->vector_only ? "" : " (answered from the other channels)");
}

static int run(cli *c, int argc, char **argv, int vector_only)
{
    search_args a = {0};
    a.vector_only = vector_only;
    search_opts_init(&a.so);
    a.oo.color = c->color;
    a.collections = xcalloc((size_t)argc, sizeof *a.collections);
    int rc = parse_args(&a, argc, argv);
    const char *cmd = vector_only ? "vsearch" : "search";
    config cfg = {0};
    store *st = NULL;
    embed_model *model = NULL;
    if (rc >= 0)
        goto out;
    if (a.query.len == 0) {
        rc = cli_usage(cmd, "needs a QUERY");
        goto out;
    }
    a.so.query = a.query.data;
    a.so.collections = a.collections;
    a.so.n_collections = a.n_collections;
    a.so.tags = (const char *const *)a.tags;
    a.so.n_tags = a.n_tags;
    a.so.vector_only = vector_only;
    if ((rc = cli_load_config(&cfg)) != EXIT_OK || (rc = check_collections(&a, &cfg)) != EXIT_OK)
        goto out;
    apply_config_weights(&a, &cfg);
    if ((rc = cli_open_store(c, 1, &st)) != EXIT_OK)
        goto out;
    if ((rc = open_query_model(&a, st, &model)) != EXIT_OK)
        goto out;
    if (vector_only && !model) {
        rc = EXIT_ERR;
        goto out;
    }
    a.so.model = model;
    search_results res;
    trove_err err = search_run(st, &cfg, &a.so, &res);
    if (err) {
        rc = cli_error(err);
        goto out;
    }
    vector_notices(&a, &res);
    out_results(stdout, a.query.data, &res, &a.oo);
    rc = vector_only && res.vec_state != SEARCH_VEC_USED ? EXIT_ERR : EXIT_OK;
    search_results_free(&res);
out:
    embed_close(model);
    store_close(st);
    config_free(&cfg);
    for (size_t i = 0; i < a.n_tags; i++)
        free(a.tags[i]);
    free(a.tags);
    free(a.collections);
    tbuf_free(&a.query);
    return rc;
}

int cmd_search(cli *c, int argc, char **argv)
{
    return run(c, argc, argv, 0);
}

int cmd_vsearch(cli *c, int argc, char **argv)
{
    return run(c, argc, argv, 1);
}
