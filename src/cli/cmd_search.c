/* trove search QUERY [options] */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/filter_args.h"
#include "models/models.h"
#include "cli/out.h"
#include "daemon/client.h"
#include "search/search.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

static const char search_help[] =
    "usage: trove search QUERY... [options]\n"
    "Query: words (ranked by how many and how rare), \"exact phrase\", -excluded, prefix*\n"
    "With an embedding model (--model, $TROVE_EMBED_MODEL) and vectors in the index\n"
    "(`trove embed`), notes close in meaning are fused in as well.\n"
    "  -n N                  results to show (default {limit}; also -nN)\n"
    "  --all                 every match\n"
    "  -c, --collection NAME restrict to a collection (repeatable; also -cNAME)\n"
    "  --folder PREFIX       restrict to a folder: inside the collections (en) or\n"
    "                        as results print it, with the collection (help/en)\n"
    "  --tags T[,T...]       notes carrying all these tags (repeatable)\n"
    "  --lang CODE[,CODE...] notes in these languages (repeatable; ISO 639-1: en,\n"
    "                        de, pt-BR; by the language folder or the detected one)\n"
    "  --where EXPR          frontmatter condition (repeatable, all must hold):\n"
    "                        status=done, status!=draft, priority>=2, tags~=proj/*,\n"
    "                        author in (ana, li), due<2026-01-01, exists(due)\n"
    "  --since DATE          notes dated DATE or later: 2024-05-01, 2026-W14, 2024-05,\n"
    "                        7d, 3w, 2m, 1y, today, last-week, this-month, ...\n"
    "  --until DATE          notes dated up to DATE (that day included)\n"
    "  --recent              favour newer notes (half-life from config `recency:`,\n"
    "                        default 90d); --no-recent: not even when configured\n"
    "  --heading TEXT        only passages under a heading containing TEXT\n"
    "  --passages N          up to N passages per note, best first\n"
    "  --each-translation    every copy of a translated note a result of its own\n"
    "                        (default: one result, the reader's language, `also in:`)\n"
    "  --no-translate        no Chinese-English dictionary channel (config translate: false)\n"
    "  --min-score F         drop results scoring below F (scores are 0..1)\n"
    "  --title-weight F      RRF weight of the title/alias channel (default {title_weight})\n"
    "  --bm25-weight F       RRF weight of the keyword channel (default {bm25_weight})\n"
    "  --graph-weight F      strength of the link in-degree prior (default {graph_weight})\n"
    "  --vector-weight F     weight of the vector channel (default {vector_weight})\n"
    "  --no-vector           keywords and titles only\n"
    "  --vector-scan HOW     exact, two-stage or auto (default: two-stage from\n"
    "                        250,000 vectors): how the vector channel scans\n"
    "                        (config vector_scan:); two-stage ranks 2-bit\n"
    "                        sketches first, an approximation\n"
    "  --vector-candidates N two-stage: vectors scored exactly per note the vector\n"
    "                        channel keeps (default {vector_candidates})\n"
    "  --model PATH          embedding model (GGUF file or model2vec folder)\n"
    "  --remote URL          search the index `trove publish opensearch` made at\n"
    "                        URL/INDEX (http://host:9200/notes) instead of this one\n"
    "  --local               this index even when config.yaml sets `remote:`\n"
    "  --json | --csv | --md | --xml | --files   output format (default: text)\n"
    "  --full                whole note instead of a snippet\n"
    "  --line-numbers        number the lines of --full output\n"
    "  --explain             per-channel ranks and scores\n"
    "  --                    every later argument is a query word: -- -n5 excludes n5\n"
    "Weights can also be set in config.yaml: weights: {bm25: 1, vector: 1.2}\n";

static const char vsearch_help[] =
    "usage: trove vsearch QUERY... [options]\n"
    "Search by meaning only: the query is embedded with the embedding model and\n"
    "compared with every chunk's vector (`trove embed` makes them). The score is\n"
    "the cosine similarity of each note's best chunk.\n"
    "  --model PATH          embedding model (default: $TROVE_EMBED_MODEL)\n"
    "  -n N, --all, -c NAME, --folder P, --tags T, --lang L, --where EXPR,\n"
    "  --since D, --until D, --recent, --heading T, --passages N as for `trove search`\n"
    "  --min-score F         drop notes less similar than F (cosine, -1..1)\n"
    "  --vector-scan HOW     exact, two-stage or auto (`trove search --help`)\n"
    "  --remote URL          the published index at URL/INDEX (`trove search --help`)\n"
    "  --local               this index even when config.yaml sets `remote:`\n"
    "  --json | --csv | --md | --xml | --files, --full, --line-numbers, --explain\n";

static const char query_help[] =
    "usage: trove query QUERY... [options]\n"
    "The best-answer path: the query and its variants (keywords only; words from\n"
    "the best keyword hits) are searched with every channel, fused (RRF), the top\n"
    "candidates re-scored by a reranker model (--reranker, $TROVE_RERANK_MODEL,\n"
    "config `rerank_model:`) or, without one, by query-term coverage and proximity,\n"
    "and retrieval and reranker blended so strong first-stage hits stay on top.\n"
    "Every option of `trove search`, and:\n"
    "  --reranker PATH       reranker GGUF: a cross-encoder (rank head) or a\n"
    "                        Qwen3-Reranker (yes/no)\n"
    "  --candidates N        candidates to rerank (default 20)\n"
    "  --rerank-window N     tokens of each candidate the reranker reads, cut\n"
    "                        around its best passage (default 256 for a\n"
    "                        cross-encoder, 128 for a decoder reranker)\n"
    "  --no-rerank           fused order, no re-scoring\n"
    "  --no-expand           the query as typed, no variants\n"
    "  --expand-model MODEL  also expand with qmd's query-expansion model (a Qwen3\n"
    "                        GGUF; config `expand_model:`): its lex:, vec: and hyde:\n"
    "                        lines add variants; unusable output keeps the\n"
    "                        deterministic expansion alone (--explain says why)\n"
    "  --explain             variants, per-list ranks, reranker score, blend weight\n";

typedef struct search_args {
    api_search_opts ao;
    int is_query, no_rerank, no_expand;
    long candidates, window;
    const char *reranker_flag;
    const char *expand_flag;
    out_opts oo;
    int vector_only, no_vector;
    const char *model_flag;
    const char *remote;      /* --remote URL: a published index, NULL: this one */
    tbuf query;
    cli_filters filters;     /* -c, --folder, --tags, --lang, --where, ... */
} search_args;

static int parse_double(const char *v, double *out)
{
    return str_to_double(v, out);
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

/* Help text with each "{option}" replaced by that search option's default
 * (api_search_opt_table), so the help never restates a number; other
 * braces print as they are. */
static void put_help(const char *text)
{
    const char *p = text;
    for (const char *open; (open = strchr(p, '{'));) {
        const char *close = strchr(open, '}');
        if (!close)
            break;
        char name[32];
        size_t len = (size_t)(close - open - 1);
        const api_opt *o = NULL;
        if (len < sizeof name) {
            memcpy(name, open + 1, len);
            name[len] = '\0';
            o = api_search_opt(name);
        }
        fwrite(p, 1, (size_t)(open - p), stdout);
        if (o)
            printf("%g", o->def);
        else
            fwrite(open, 1, (size_t)(close + 1 - open), stdout);
        p = close + 1;
    }
    fputs(p, stdout);
}

/* Returns -1 when parsed, else an exit code. */
static int parse_args(search_args *a, int argc, char **argv)
{
    const char *cmd = a->is_query ? "query" : a->vector_only ? "vsearch" : "search";
    int only_query = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        int took;
        if (only_query || arg[0] != '-' || arg[1] == '\0') {
            add_query_word(a, arg);
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_query = 1;
            continue;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            put_help(a->is_query ? query_help : a->vector_only ? vsearch_help : search_help);
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
        if (a->is_query && strcmp(arg, "--no-rerank") == 0) {
            a->no_rerank = 1;
        } else if (a->is_query && strcmp(arg, "--no-expand") == 0) {
            a->no_expand = 1;
        } else if (a->is_query && cli_opt_value(argc, argv, &i, "--candidates", &v)) {
            if (!cli_opt_positive(v, &a->candidates))
                return cli_usage(cmd, "--candidates needs a positive number");
        } else if (a->is_query && cli_opt_value(argc, argv, &i, "--rerank-window", &v)) {
            if (!cli_opt_positive(v, &a->window))
                return cli_usage(cmd, "--rerank-window needs a positive number");
        } else if (a->is_query && cli_opt_value(argc, argv, &i, "--expand-model", &v)) {
            if (!v || !*v)
                return cli_usage(cmd, "--expand-model needs a model name or path");
            a->expand_flag = v;
        } else if (a->is_query && cli_opt_value(argc, argv, &i, "--reranker", &v)) {
            if (!v || !*v)
                return cli_usage(cmd, "--reranker needs a path");
            a->reranker_flag = v;
        } else if (strcmp(arg, "--all") == 0) {
            a->ao.search.limit = 0;
        } else if (strcmp(arg, "--full") == 0) {
            a->oo.full = 1;
        } else if (strcmp(arg, "--line-numbers") == 0) {
            a->oo.line_numbers = 1;
        } else if (strcmp(arg, "--no-translate") == 0) {
            a->ao.search.no_translate = 1;
        } else if (strcmp(arg, "--each-translation") == 0) {
            a->ao.search.each_translation = 1;
        } else if (strcmp(arg, "--explain") == 0) {
            a->oo.explain = 1;
        } else if (strcmp(arg, "--no-vector") == 0 && !a->vector_only) {
            a->no_vector = 1;
        } else if (!a->is_query && cli_opt_value(argc, argv, &i, "--remote", &v)) {
            if (!v || !*v)
                return cli_usage(cmd, "--remote needs a URL (http://host:9200/INDEX)");
            a->remote = v;
        } else if (!a->is_query && strcmp(arg, "--local") == 0) {
            a->ao.local = 1;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage(cmd, "--model needs a path");
            a->model_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "-n", &v)) {
            long n;
            if (!cli_opt_positive(v, &n)) {
                if (v && v == arg + 2)
                    return cli_usage(cmd, "-n needs a positive number (a query word starting "
                                     "with '-' goes after `--`: trove %s -- %s)", cmd, arg);
                return cli_usage(cmd, "-n needs a positive number");
            }
            a->ao.search.limit = (size_t)n;
        } else if ((took = cli_filter_flag(cmd, argc, argv, &i, &a->ao.search, &a->filters))) {
            if (took < 0)
                return EXIT_USAGE;
        } else if (strcmp(arg, "--recent") == 0) {
            a->ao.search.recent = 1;
        } else if (strcmp(arg, "--no-recent") == 0) {
            a->ao.search.recent = 0;
        } else if (cli_opt_value(argc, argv, &i, "--passages", &v)) {
            long n;
            if (!v || !str_to_long(v, 1, API_MAX_PASSAGES, &n))
                return cli_usage(cmd, "--passages needs a number from 1 to %d", API_MAX_PASSAGES);
            a->ao.search.passages = (size_t)n;
        } else if (cli_opt_value(argc, argv, &i, "--min-score", &v)) {
            if (!parse_double(v, &a->ao.search.min_score))
                return cli_usage(cmd, "--min-score needs a number");
        } else if (cli_opt_value(argc, argv, &i, "--title-weight", &v)) {
            if (!parse_double(v, &a->ao.search.weights[SEARCH_CH_TITLE]))
                return cli_usage(cmd, "--title-weight needs a number");
        } else if (cli_opt_value(argc, argv, &i, "--bm25-weight", &v)) {
            if (!parse_double(v, &a->ao.search.weights[SEARCH_CH_BM25]))
                return cli_usage(cmd, "--bm25-weight needs a number");
        } else if (cli_opt_value(argc, argv, &i, "--graph-weight", &v)) {
            if (!parse_double(v, &a->ao.search.graph_weight))
                return cli_usage(cmd, "--graph-weight needs a number");
        } else if (cli_opt_value(argc, argv, &i, "--vector-scan", &v)) {
            int scan = config_vec_scan_parse(v);
            if (scan < 0)
                return cli_usage(cmd, "--vector-scan needs exact, two-stage or auto");
            a->ao.search.vec_scan = scan;
        } else if (cli_opt_value(argc, argv, &i, "--vector-candidates", &v)) {
            long n;
            if (!v || !str_to_long(v, 1, 4096, &n))
                return cli_usage(cmd, "--vector-candidates needs a number from 1 to 4096");
            a->ao.search.vec_candidates = (int)n;
        } else if (!a->vector_only && cli_opt_value(argc, argv, &i, "--vector-weight", &v)) {
            if (!parse_double(v, &a->ao.search.weights[SEARCH_CH_VECTOR]))
                return cli_usage(cmd, "--vector-weight needs a number");
        } else if (arg[1] == '-') {
            return cli_usage(cmd, "unknown option %s", arg);
        } else {
            add_query_word(a, arg);   /* "-word" is an exclusion in the query */
        }
    }
    if (a->remote && a->ao.local)
        return cli_usage(cmd, "--remote and --local ask for different indexes: give one");
    if (api_search_opts_check(&a->ao) != TROVE_OK)   /* bounds, before anything runs */
        return cli_usage(cmd, "%s", trove_errmsg());
    return -1;
}

/* What the vector channel could not do: sentences for JSON `warnings`,
 * and the same once on stderr (a blank query vector only for vsearch,
 * where it is why nothing was found; search says it with --explain). */
typedef struct notices {
    char **items;
    size_t n, cap;
} notices;

static void notice(notices *ns, const search_args *a, FILE *err, int on_stderr, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
static void notice(notices *ns, const search_args *a, FILE *err, int on_stderr, const char *fmt,
                   ...)
{
    const char *cmd = a->is_query ? "query" : a->vector_only ? "vsearch" : "search";
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (on_stderr)
        fprintf(err, "trove: %s: %s\n", cmd, msg);
    xgrow(&ns->items, &ns->cap, ns->n + 1, sizeof *ns->items);
    ns->items[ns->n++] = xstrdup(msg);
}

static void vector_notices(search_args *a, const search_results *res, notices *ns, FILE *err)
{
    const char *rest = a->vector_only ? "" : " (answering by keywords, titles and links)";
    if (res->vec_error)
        notice(ns, a, err, 1, "%s%s", res->vec_error, rest);
    else if (res->vec_state == SEARCH_VEC_NONE)
        notice(ns, a, err, 1, "the index has no embeddings of this model; run `trove embed`%s",
               rest);
    else if (res->vec_state == SEARCH_VEC_BLANK)
        notice(ns, a, err, a->vector_only, "%s%s", search_vec_blank_why, rest);
    for (size_t i = 0; i < res->n_vec_missing; i++)
        notice(ns, a, err, 1, "collection '%s' has no embeddings; run `trove embed`%s",
               res->vec_missing[i], a->vector_only ? "" : " (answered from the other channels)");
    a->oo.warnings = (const char *const *)ns->items;
    a->oo.n_warnings = ns->n;
}

static void notices_free(notices *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->items[i]);
    free(ns->items);
}

static const char *attached_unknown(const search_args *a, trove_err err);

/* A search's answer as the user sees it: the notices on err, the results
 * on out in a->oo's form; returns the exit code. The cold path and the
 * daemon (cli_render, for a client) both print through here, so the two
 * are the same bytes. */
static int show(search_args *a, const search_results *res, FILE *out, FILE *err)
{
    notices ns = {0};
    vector_notices(a, res, &ns, err);
    out_results(out, a->ao.search.query, res, &a->oo);
    notices_free(&ns);
    a->oo.warnings = NULL;
    a->oo.n_warnings = 0;
    /* A blank query vector is a query that matches nothing, not an error. */
    return a->vector_only && res->vec_state != SEARCH_VEC_USED &&
                   res->vec_state != SEARCH_VEC_BLANK
               ? EXIT_ERR : EXIT_OK;
}

/* The output options a client sends with "render" (what the daemon cannot
 * know: the format asked for, and whether the client's stdout is a
 * terminal that takes colour). */
static const struct { const char *key; size_t off; } how_keys[] = {
    {"format", offsetof(out_opts, format)},
    {"color", offsetof(out_opts, color)},
    {"full", offsetof(out_opts, full)},
    {"line_numbers", offsetof(out_opts, line_numbers)},
    {"explain", offsetof(out_opts, explain)},
};
_Static_assert(sizeof(out_format) == sizeof(int), "out_opts.format is read as an int");

static json_t *render_how(const out_opts *oo)
{
    json_t *j = json_object();
    for (size_t i = 0; i < sizeof how_keys / sizeof *how_keys; i++)
        json_object_set_new(j, how_keys[i].key,
                            json_integer(*(const int *)(const void *)((const char *)oo +
                                                                      how_keys[i].off)));
    return j;
}

/* how into oo; 0 when it is not exactly the object render_how makes. */
static int render_how_parse(const json_t *how, out_opts *oo)
{
    if (!json_is_object(how) || json_object_size(how) != sizeof how_keys / sizeof *how_keys)
        return 0;
    for (size_t i = 0; i < sizeof how_keys / sizeof *how_keys; i++) {
        const json_t *v = json_object_get(how, how_keys[i].key);
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < 0 || n > (i == 0 ? OUT_FILES : 1))
            return 0;
        *(int *)(void *)((char *)oo + how_keys[i].off) = (int)n;
    }
    return 1;
}

/* A memstream's bytes appended to `to`; 0 when the stream failed. */
static int stream_bytes(FILE *f, char **buf, size_t *len, tbuf *to)
{
    int ok = fclose(f) == 0;
    if (ok && *len)
        tbuf_append(to, *buf, *len);
    free(*buf);
    return ok;
}

int cli_render(int op, const void *args, const void *result, const json_t *how, tbuf *out,
               tbuf *err)
{
    if (op != WIRE_OP_SEARCH && op != WIRE_OP_VSEARCH)
        return -1;
    search_args a = {0};
    a.ao = *(const api_search_opts *)args;
    a.vector_only = op == WIRE_OP_VSEARCH;
    if (!render_how_parse(how, &a.oo))
        return -1;
    char *ob = NULL, *eb = NULL;
    size_t ol = 0, el = 0;
    FILE *fo = open_memstream(&ob, &ol), *fe = open_memstream(&eb, &el);
    int rc = fo && fe ? show(&a, result, fo, fe) : -1;
    int ok = fo && stream_bytes(fo, &ob, &ol, out);
    ok = fe && stream_bytes(fe, &eb, &el, err) && ok;
    return ok ? rc : -1;
}

/* The daemon's rendered answer (cli_render) written out: 1 when it was
 * well-formed, with *rc its exit code. */
static int put_rendered(const json_t *r, const tbuf *payload, int *rc)
{
    const json_t *code = json_object_get(r, "rc");
    json_int_t no = json_integer_value(json_object_get(r, "out_bytes"));
    if (!json_is_integer(code) ||
        (json_integer_value(code) != EXIT_OK && json_integer_value(code) != EXIT_ERR) ||
        no < 0 || (size_t)no > payload->len)
        return 0;
    if (payload->len > (size_t)no)
        fwrite(payload->data + no, 1, payload->len - (size_t)no, stderr);
    if (no)
        fwrite(payload->data, 1, (size_t)no, stdout);
    *rc = (int)json_integer_value(code);
    return 1;
}

/* search and vsearch through a running daemon, which renders the answer
 * (cli_render): the client parses no result struct. 1 when answered (*rc
 * the exit code, or the daemon's own error shown), 0: answer cold. */
static int daemon_search(cli *c, search_args *a, int op, int *rc)
{
    dcl *d = cli_daemon(c);
    if (!d)
        return 0;
    json_t *how = render_how(&a->oo), *r = NULL;
    tbuf payload = {0};
    trove_err err = dcl_render(d, op, &a->ao, how, &r, &payload);
    json_decref(how);
    if (!dcl_answered(d)) {
        json_decref(r);
        tbuf_free(&payload);
        return 0;
    }
    if (err) {
        const char *cut = attached_unknown(a, err);
        *rc = cli_error(err);
        if (cut)
            fprintf(stderr, "trove: -c%s reads as -c %s; to exclude the word, put it after `--`: "
                            "trove search ... -- -c%s\n", cut, cut, cut);
        return 1;
    }
    int ok = put_rendered(r, &payload, rc);
    json_decref(r);
    tbuf_free(&payload);
    if (!ok)   /* a daemon that answered nonsense: as if it had not answered */
        return 0;
    return 1;
}

/* The "-cNAME" collection an unknown-collection error names, if any: the
 * user may have meant to exclude the word "cNAME". */
static const char *attached_unknown(const search_args *a, trove_err err)
{
    const char *msg = trove_errmsg();
    if (err != TROVE_ENOENT || !msg)
        return NULL;
    const cli_filters *l = &a->filters;
    for (size_t i = 0; i < l->n_collections; i++) {
        if (!l->attached[i])
            continue;
        tbuf want = {0};
        tbuf_printf(&want, "no collection named '%s'", l->collections[i]);
        int hit = strstr(msg, want.data) != NULL;
        tbuf_free(&want);
        if (hit)
            return l->collections[i];
    }
    return NULL;
}

/* The spec resolved to a path; one that does not resolve is said once and
 * gives NULL (the lexical re-scorer), never a file of the current folder
 * that happens to bear the name. */
static const char *resolve_reranker(const config *cfg, const char *flag)
{
    static char *resolved;
    static int warned;
    free(resolved);
    resolved = NULL;
    models_choice c;
    if (models_resolve_reranker(cfg, flag, &c) == TROVE_OK) {
        resolved = c.path;
        c.path = NULL;
    } else if (!warned) {
        warned = 1;
        fprintf(stderr, "trove: query: %s; re-scoring lexically instead\n", trove_errmsg());
    }
    models_choice_free(&c);
    return resolved;
}

const char *cli_reranker_path(const char *flag, api *api)
{
    return resolve_reranker(api_config(api), flag);
}

/* The reranker: --reranker, $TROVE_RERANK_MODEL, then config.yaml (as read
 * once for the daemon check). */
static const char *reranker_path(const search_args *a)
{
    if (a->no_rerank)
        return NULL;
    static const config none;    /* the cold path reports a broken config */
    const config *cfg = cli_config_once();
    return resolve_reranker(cfg ? cfg : &none, a->reranker_flag);
}

/* The expansion model: --expand-model, else config `expand_model:`, as a
 * path (models_resolve_spec: a catalogue or models-folder name, or a path).
 * NULL when none is set; one that does not resolve is an error (exit 1):
 * the user asked for it by name. */
static int expand_model_path(const search_args *a, char **out)
{
    *out = NULL;
    const config *cfg = cli_config_once();
    const char *spec = a->expand_flag ? a->expand_flag : cfg ? cfg->expand_model : NULL;
    if (!spec || a->no_expand)
        return EXIT_OK;
    models_choice c;
    trove_err e = models_resolve_spec(spec, &c);
    if (e) {
        models_choice_free(&c);
        return cli_error(e);
    }
    *out = c.path;
    c.path = NULL;
    models_choice_free(&c);
    return EXIT_OK;
}

/* A cold search ends its process here once the answer is out, unless a
 * sanitizer is to check its frees: the kernel takes the address space down
 * at exit anyway, and tearing it down first (SQLite's close, the munmap of
 * the index's mapping, of the model's and the tokenizer cache's, a dozen in
 * all) cost 1-3 ms of a cold hybrid search (docs/performance.md, session
 * 31, w-cvec). Nothing of it is lost: the index was opened read-only (its
 * locks and files go with the process, as they would at close), and stdio
 * is flushed here. */
static void exit_cold(int rc)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)rc;
#else
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
#endif
}

/* `trove query`: through a running daemon when there is one (the same
 * fallback rule as search), else in this process. */
static int run_query(cli *c, search_args *a, api **api)
{
    api_query_opts qo;
    api_query_opts_init(&qo);
    qo.base = a->ao;
    qo.no_rerank = a->no_rerank;
    qo.no_expand = a->no_expand;
    qo.candidates = (size_t)a->candidates;
    qo.window_tokens = (size_t)a->window;
    wire_query_answer ans;
    trove_err err;
    char *expand = NULL;
    int rc = expand_model_path(a, &expand);
    if (rc != EXIT_OK)
        return rc;
    qo.expand_model = expand;
    /* A daemon keeps the expansion model open like its reranker
     * (api_models' APIM_GENERATE slot): the warm path for it too. */
    dcl *d = cli_daemon(c);
    if (d) {
        qo.reranker = reranker_path(a);
        /* Reranking with a decoder, or generating the expansion, can take
         * a minute on a slow machine: giving up at the usual 60 s would
         * make the CLI do it all again cold. A daemon that dies still
         * closes the socket at once. */
        if (qo.reranker || expand)
            dcl_set_timeout(d, 900.0);
    }
    if (!dcl_try(d, WIRE_OP_QUERY, &qo, &ans, &err)) {
        if ((rc = cli_open_api(c, api)) != EXIT_OK) {
            free(expand);
            return rc;
        }
        qo.reranker = a->no_rerank ? NULL : cli_reranker_path(a->reranker_flag, *api);
        err = wire_call(*api, WIRE_OP_QUERY, &qo, &ans);
    }
    free(expand);
    if (err) {
        rc = cli_error(err);
    } else {
        search_results res = ans.results;
        api_query_info info = ans.info;
        if (info.rerank_warning)
            fprintf(stderr, "trove: query: %s; re-scoring lexically instead\n",
                    info.rerank_warning);
        notices ns = {0};
        vector_notices(a, &res, &ns, stderr);
        a->oo.query_info = &info;
        out_results(stdout, a->query.data, &res, &a->oo);
        notices_free(&ns);
        search_results_free(&res);
        api_query_info_free(&info);
        rc = EXIT_OK;
    }
    return rc;
}

static int run(cli *c, int argc, char **argv, int vector_only, int is_query)
{
    search_args a = {0};
    api_search_opts_init(&a.ao);
    a.vector_only = vector_only;
    a.is_query = is_query;
    a.oo.color = c->color;
    cli_filters_init(&a.filters, argc);
    int rc = parse_args(&a, argc, argv);
    api *api = NULL;
    if (rc >= 0)
        goto out;
    if (a.query.len == 0) {
        rc = cli_usage(is_query ? "query" : vector_only ? "vsearch" : "search", "needs a QUERY");
        goto out;
    }
    a.ao.search.query = a.query.data;
    a.ao.with_body = a.oo.full;
    a.ao.search.vector_only = vector_only;
    a.ao.model = a.no_vector ? NULL : cli_model_path(a.model_flag);
    const char *model_msg;
    trove_err merr = a.no_vector ? TROVE_OK : cli_model_error(&model_msg);
    if (merr && vector_only) {
        rc = cli_error(merr);   /* the one error: nothing to search with */
        goto out;
    }
    if (merr)
        fprintf(stderr, "trove: %s: %s (answering by keywords, titles and links)\n",
                is_query ? "query" : "search", model_msg);
    if (is_query) {
        rc = run_query(c, &a, &api);
        goto out;
    }
    search_results res;
    trove_err err;
    if (a.remote) {
        /* The published index answers: no daemon, no local index needed. */
        if ((rc = cli_open_api(c, &api)) != EXIT_OK)
            goto out;
        err = api_search_remote(api, &a.ao, a.remote, &res);
    } else {
        int op = a.ao.search.vector_only ? WIRE_OP_VSEARCH : WIRE_OP_SEARCH;
        if (daemon_search(c, &a, op, &rc))
            goto out;
        if ((rc = cli_open_api(c, &api)) != EXIT_OK)
            goto out;
        err = wire_call(api, op, &a.ao, &res);
    }
    if (err) {
        const char *cut = attached_unknown(&a, err);
        rc = cli_error(err);
        if (cut)
            fprintf(stderr, "trove: -c%s reads as -c %s; to exclude the word, put it after `--`: "
                            "trove search ... -- -c%s\n", cut, cut, cut);
        goto out;
    }
    rc = show(&a, &res, stdout, stderr);
    exit_cold(rc);
    search_results_free(&res);
out:
    api_close(api);
    cli_filters_free(&a.filters);
    tbuf_free(&a.query);
    return rc;
}

int cmd_search(cli *c, int argc, char **argv)
{
    return run(c, argc, argv, 0, 0);
}

int cmd_vsearch(cli *c, int argc, char **argv)
{
    return run(c, argc, argv, 1, 0);
}

int cmd_query(cli *c, int argc, char **argv)
{
    return run(c, argc, argv, 0, 1);
}
