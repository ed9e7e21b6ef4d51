/* trove model — inspect and run GGUF embedding/reranking models:
 *   trove model info FILE [--json]
 *   trove model tokenize FILE [--no-special] TEXT
 *   trove model tokenize FILE --pair QUERY DOC
 *   trove model embed FILE [--query] [--dim N] [--threads N] [--max-tokens N]
 *                          [--prompt P] [--no-prompt] [--no-normalize] [--ids] [--timing]
 *                          TEXT...
 *   trove model rerank FILE [--threads N] [--max-tokens N] [--doc-tokens N]
 *                           [--instruction TEXT] [--no-prefix-cache] [--timing] QUERY DOC...
 *   trove model generate FILE [--max-new N] [--temperature T] [--top-k K] [--seed S]
 *                             [--stop TEXT]... [--ignore-eos] [--threads N] [--timing] PROMPT
 * Results are JSON on stdout (floats printed with 9 significant digits,
 * enough to round-trip a float). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "embed/embed.h"
#include "models/models.h"
#include "util/clock.h"
#include "util/mem.h"

static const char USAGE[] =
    "usage: trove model info FILE [--json]\n"
    "       trove model tokenize FILE [--no-special] TEXT\n"
    "       trove model tokenize FILE --pair QUERY DOC\n"
    "       trove model embed FILE [--query] [--dim N] [--threads N] [--max-tokens N]\n"
    "                         [--prompt P] [--no-prompt] [--no-normalize] [--ids] [--timing]\n"
    "                         TEXT...\n"
    "       trove model rerank FILE [--threads N] [--max-tokens N] [--doc-tokens N]\n"
    "                         [--instruction TEXT] [--no-prefix-cache] [--timing] QUERY DOC...\n"
    "       trove model generate FILE [--max-new N] [--temperature T] [--top-k K] [--seed S]\n"
    "                         [--stop TEXT]... [--ignore-eos] [--threads N] [--timing] PROMPT\n"
    "       trove model bench FILE [--threads N] [--batch B] [--tokens T] [--iters K]\n"
    "                         [--quant-sgemm | --quant-int8]\n"
    "       trove model pull [NAME | hf:ORG/REPO[/FILE] | URL] [--sha256 HEX] [--force]\n"
    "       trove model list [--json]\n"
    "       trove model use [NAME | PATH | --unset]\n"
    "\n"
    "embed prints {\"model\", \"dim\", \"vectors\"}; --query embeds with the model's query\n"
    "prompt (default: document prompt); --ids takes comma-separated token ids instead\n"
    "of text; --timing adds open_ms, embed_ms and cpu_ms. rerank prints {\"model\", \"scores\"} (raw cross-encoder logits; P(yes)\n"
    "for decoder rerankers such as Qwen3-Reranker); --doc-tokens keeps that many tokens\n"
    "of each DOC (default 256; 128 for decoder rerankers); --timing adds open_ms,\n"
    "rerank_ms and cpu_ms.\n"
    "generate continues PROMPT (special tokens such as <|im_start|> written in it are\n"
    "read as tokens) with a decoder model such as Qwen3 and prints {\"model\", \"text\",\n"
    "\"ids\", \"prompt_tokens\", \"end\"}: greedy unless --temperature > 0 (then seeded\n"
    "top-k sampling, --seed, --top-k default 40); --max-new is the token budget\n"
    "(default 256); --stop ends at a text (repeatable); --timing adds prefill_ms,\n"
    "decode_ms and tokens_per_s.\n"
    "bench times open, batched embedding of B random T-token passages, a 16-token\n"
    "query, and the machine's sgemm rate, and prints JSON.\n";

/* A JSON string (invalid UTF-8 as U+FFFD), encoded by jansson. */
static void json_str(FILE *o, const char *raw)
{
    json_t *j = out_json_str(raw);
    json_dumpf(j, o, JSON_ENCODE_ANY);
    json_decref(j);
}

static void json_floats(FILE *o, const float *v, size_t n)
{
    fputc('[', o);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%.9g", i ? "," : "", (double)v[i]);
    fputc(']', o);
}

static int parse_int(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi)
        return cli_usage(cmd, "%s needs an integer in [%d, %d]", opt, lo, hi);
    *out = (int)x;
    return EXIT_OK;
}

static const char *model_name(const embed_model *m, const char *path)
{
    embed_info in;
    embed_get_info(m, &in);
    if (in.name && *in.name)
        return in.name;
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* FILE of a subcommand: a path ("./x.gguf", "/m/x", anything with a '/'),
 * or a catalogue name or a name in the models folder; a bare name is never
 * opened from the current folder. NULL with *e set when it names nothing. */
static embed_model *open_model(const char *spec, const embed_opts *o, trove_err *e)
{
    models_choice c;
    *e = models_resolve_spec(spec, &c);
    embed_model *m = *e ? NULL : embed_open(c.path, o, e);
    models_choice_free(&c);
    return m;
}

/* ---- info ---- */

static int model_info(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (argv[i][0] == '-')
            return cli_usage("model info", "unknown option %s", argv[i]);
        else if (!path)
            path = argv[i];
        else
            return cli_usage("model info", "one FILE only");
    }
    if (!path)
        return cli_usage("model info", "missing FILE");
    clock_span t0 = clock_span_start();
    trove_err e;
    embed_opts o = {.threads = 1};
    embed_model *m = open_model(path, &o, &e);
    double open_ms = clock_span_ms(&t0);
    if (!m)
        return cli_error(e);
    embed_info in;
    embed_get_info(m, &in);
    if (json) {
        printf("{\"version\":%d,\"file\":", OUT_JSON_VERSION);
        json_str(stdout, path);
        printf(",\"format\":");
        json_str(stdout, in.format);
        printf(",\"file_size\":%" PRIu64 ",\"gguf_version\":%u,\"architecture\":",
               in.file_size, in.format_version);
        json_str(stdout, in.arch);
        printf(",\"name\":");
        json_str(stdout, in.name);
        printf(",\"tokenizer\":");
        json_str(stdout, in.tokenizer);
        printf(",\"pooling\":");
        json_str(stdout, in.pooling);
        printf(",\"vocab\":%" PRId64 ",\"hidden\":%" PRId64 ",\"layers\":%" PRId64
               ",\"heads\":%" PRId64 ",\"kv_heads\":%" PRId64 ",\"head_dim\":%" PRId64
               ",\"ffn\":%" PRId64 ",\"context\":%" PRId64 ",\"dim\":%" PRId64
               ",\"rank_outputs\":%" PRId64 ",\"open_ms\":%.3f,\"query_prompt\":",
               in.n_vocab, in.n_embd, in.n_layer, in.n_head, in.n_head_kv, in.head_dim, in.n_ff,
               in.n_ctx, in.dim_native, in.n_cls_out, open_ms);
        json_str(stdout, in.query_prompt);
        printf(",\"doc_prompt\":");
        json_str(stdout, in.doc_prompt);
        printf(",\"fingerprint\":");
        json_str(stdout, in.fingerprint);
        printf(",\"tensors\":{");
        for (size_t i = 0; i < in.n_tensor_types; i++) {
            const embed_tensor_stat *t = &in.tensor_types[i];
            printf("%s\"%s\":{\"count\":%zu,\"bytes\":%" PRIu64 "}", i ? "," : "", t->type,
                   t->count, t->bytes);
        }
        printf("}}\n");
    } else {
        if (in.format_version)
            printf("file:          %s (%" PRIu64 " bytes, GGUF v%u)\n", path, in.file_size,
                   in.format_version);
        else
            printf("file:          %s (%" PRIu64 " bytes, %s)\n", path, in.file_size, in.format);
        printf("architecture:  %s%s%s\n", in.arch, *in.name ? "  name: " : "", in.name);
        printf("tokenizer:     %s, %" PRId64 " tokens\n", in.tokenizer, in.n_vocab);
        printf("dimensions:    hidden %" PRId64 ", output %" PRId64 ", ffn %" PRId64 "\n",
               in.n_embd, in.dim_native, in.n_ff);
        printf("layers:        %" PRId64 "\n", in.n_layer);
        printf("heads:         %" PRId64 " (kv %" PRId64 ", size %" PRId64 ")\n", in.n_head,
               in.n_head_kv, in.head_dim);
        printf("context:       %" PRId64 " tokens\n", in.n_ctx);
        printf("pooling:       %s%s\n", in.pooling, in.n_cls_out ? " (cross-encoder head)" : "");
        printf("prompts:       query \"%s\", document \"%s\"\n", in.query_prompt, in.doc_prompt);
        printf("tensors:      ");
        for (size_t i = 0; i < in.n_tensor_types; i++)
            printf(" %s x%zu (%.1f MB)", in.tensor_types[i].type, in.tensor_types[i].count,
                   (double)in.tensor_types[i].bytes / 1e6);
        printf("\nfingerprint:   %s\n", in.fingerprint);
        printf("open:          %.2f ms\n", open_ms);
    }
    embed_close(m);
    return EXIT_OK;
}

/* ---- tokenize ---- */

static int model_tokenize(int argc, char **argv)
{
    const char *path = NULL, *args[2] = {NULL, NULL};
    int n_args = 0, special = 1, pair = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--no-special") == 0)
            special = 0;
        else if (strcmp(argv[i], "--pair") == 0)
            pair = 1;
        else if (argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2])
            return cli_usage("model tokenize", "unknown option %s", argv[i]);
        else if (!path)
            path = argv[i];
        else if (n_args < 2)
            args[n_args++] = argv[i];
        else
            return cli_usage("model tokenize", "too many arguments");
    }
    if (!path || n_args != (pair ? 2 : 1))
        return cli_usage("model tokenize", pair ? "needs FILE QUERY DOC" : "needs FILE TEXT");
    trove_err e;
    embed_opts o = {.threads = 1};
    embed_model *m = open_model(path, &o, &e);
    if (!m)
        return cli_error(e);
    /* a token per byte at most, plus framing or a reranker's prompt */
    size_t cap = strlen(args[0]) + (args[1] ? strlen(args[1]) : 0) + 1024;
    int32_t *ids = xmalloc(cap * sizeof *ids);
    uint8_t *types = xmalloc(cap);
    size_t n = pair ? embed_tokenize_pair(m, args[0], args[1], ids, types, cap)
                    : embed_tokenize(m, args[0], special, ids, cap);
    printf("{\"version\":%d,\"ids\":[", OUT_JSON_VERSION);
    for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", ids[i]);
    printf("]");
    if (pair) {
        printf(",\"types\":[");
        for (size_t i = 0; i < n; i++)
            printf("%s%d", i ? "," : "", types[i]);
        printf("]");
    }
    printf("}\n");
    free(ids);
    free(types);
    embed_close(m);
    return EXIT_OK;
}

/* ---- embed / rerank ---- */

static int parse_ids(const char *s, int32_t **ids, size_t *n, size_t *cap)
{
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX)
            return -1;
        xgrow(ids, cap, *n + 1, sizeof **ids);
        (*ids)[(*n)++] = (int32_t)v;
        p = end;
        if (*p == ',')
            p++;
        else if (*p)
            return -1;
    }
    return 0;
}

/* The options embed and rerank share: 1 and *rc when argv[*i] is one of
 * them (*rc: EXIT_OK or the usage error), 0 when it is not. */
static int model_run_option(const char *cmd, int argc, char **argv, int *i, embed_opts *o,
                            bool *timing, int *rc)
{
    const char *v;
    *rc = EXIT_OK;
    if (strcmp(argv[*i], "--timing") == 0)
        *timing = true;
    else if (cli_opt_value(argc, argv, i, "--threads", &v))
        *rc = parse_int(cmd, "--threads", v, 1, 256, &o->threads);
    else if (cli_opt_value(argc, argv, i, "--max-tokens", &v))
        *rc = parse_int(cmd, "--max-tokens", v, 1, 1 << 20, &o->max_tokens);
    else
        return 0;
    return 1;
}

/* --timing: the model's open, and its calls alone (wall and CPU). */
typedef struct {
    double open_ms, run_ms, run_cpu_ms;
} model_timing;

static void timing_add_run(model_timing *t, const clock_span *run)
{
    t->run_ms += clock_span_ms(run);
    t->run_cpu_ms += clock_span_cpu_ms(run);
}

/* As JSON members; run_key names the call's ("embed_ms", "rerank_ms"). */
static void timing_print(const model_timing *t, const char *run_key)
{
    printf(",\"open_ms\":%.3f,\"%s\":%.3f,\"cpu_ms\":%.3f", t->open_ms, run_key, t->run_ms,
           t->run_cpu_ms);
}

static int model_embed(int argc, char **argv)
{
    const char *path = NULL, *prompt = NULL;
    int query = 0, as_ids = 0, no_prompt = 0, rc;
    bool timing = false;
    embed_opts o = {0};
    const char **texts = xcalloc((size_t)argc, sizeof *texts);
    size_t n = 0;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (model_run_option("model embed", argc, argv, &i, &o, &timing, &rc)) {
            if (rc)
                goto out;
        } else if (strcmp(argv[i], "--query") == 0) {
            query = 1;
        } else if (strcmp(argv[i], "--ids") == 0) {
            as_ids = 1;
        } else if (strcmp(argv[i], "--no-prompt") == 0) {
            no_prompt = 1;
        } else if (strcmp(argv[i], "--no-normalize") == 0) {
            o.no_normalize = 1;
        } else if (cli_opt_value(argc, argv, &i, "--dim", &v)) {
            if ((rc = parse_int("model embed", "--dim", v, 1, 1 << 20, &o.dim)))
                goto out;
        } else if (cli_opt_value(argc, argv, &i, "--prompt", &v)) {
            if (!v) {
                rc = cli_usage("model embed", "--prompt needs a value");
                goto out;
            }
            prompt = v;
        } else if (argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]) {
            rc = cli_usage("model embed", "unknown option %s", argv[i]);
            goto out;
        } else if (!path) {
            path = argv[i];
        } else {
            texts[n++] = argv[i];
        }
    }
    if (!path || n == 0) {
        rc = cli_usage("model embed", "needs FILE and at least one TEXT");
        goto out;
    }
    if (no_prompt)
        prompt = "";
    if (prompt) {
        o.query_prompt = prompt;
        o.doc_prompt = prompt;
    }
    trove_err e;
    model_timing tm = {0};
    clock_span t0 = clock_span_start();
    embed_model *m = open_model(path, &o, &e);
    tm.open_ms = clock_span_ms(&t0);
    if (!m) {
        rc = cli_error(e);
        goto out;
    }
    size_t dim = (size_t)embed_dim(m);
    float *vec = xmalloc(n * dim * sizeof *vec);
    if (as_ids) {
        int32_t *ids = NULL;
        size_t nid = 0, cap = 0;
        int64_t *start = xmalloc(n * sizeof *start), *len = xmalloc(n * sizeof *len);
        e = TROVE_OK;
        for (size_t i = 0; i < n && !e; i++) {
            start[i] = (int64_t)nid;
            if (parse_ids(texts[i], &ids, &nid, &cap) < 0)
                e = trove_fail(TROVE_EUSAGE, "--ids: '%s' is not a comma-separated id list",
                               texts[i]);
            len[i] = (int64_t)nid - start[i];
        }
        if (!e) {
            clock_span run = clock_span_start();
            e = embed_tokens(m, ids, start, len, n, vec);
            timing_add_run(&tm, &run);
        }
        free(ids);
        free(start);
        free(len);
    } else {
        clock_span run = clock_span_start();
        e = embed_texts(m, texts, n, query ? EMBED_QUERY : EMBED_DOCUMENT, vec);
        timing_add_run(&tm, &run);
    }
    if (e) {
        rc = cli_error(e);
    } else {
        printf("{\"version\":%d,\"model\":", OUT_JSON_VERSION);
        json_str(stdout, model_name(m, path));
        printf(",\"dim\":%zu,\"vectors\":[", dim);
        for (size_t i = 0; i < n; i++) {
            if (i)
                putchar(',');
            json_floats(stdout, vec + i * dim, dim);
        }
        printf("]");
        if (timing)
            timing_print(&tm, "embed_ms");
        printf("}\n");
        rc = EXIT_OK;
    }
    free(vec);
    embed_close(m);
out:
    free(texts);
    return rc;
}

static int model_rerank(int argc, char **argv)
{
    const char *path = NULL, *query = NULL;
    bool timing = false;
    embed_opts o = {0};
    const char **docs = xcalloc((size_t)argc, sizeof *docs);
    size_t n = 0;
    int rc;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (model_run_option("model rerank", argc, argv, &i, &o, &timing, &rc)) {
            if (rc)
                goto out;
        } else if (cli_opt_value(argc, argv, &i, "--doc-tokens", &v)) {
            if ((rc = parse_int("model rerank", "--doc-tokens", v, 1, 1 << 20, &o.rerank_tokens)))
                goto out;
        } else if (cli_opt_value(argc, argv, &i, "--instruction", &v)) {
            o.rerank_instruction = v;
        } else if (strcmp(argv[i], "--no-prefix-cache") == 0) {
            o.rerank_no_prefix_cache = 1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]) {
            rc = cli_usage("model rerank", "unknown option %s", argv[i]);
            goto out;
        } else if (!path) {
            path = argv[i];
        } else if (!query) {
            query = argv[i];
        } else {
            docs[n++] = argv[i];
        }
    }
    if (!path || !query || n == 0) {
        rc = cli_usage("model rerank", "needs FILE QUERY and at least one DOC");
        goto out;
    }
    trove_err e;
    model_timing tm = {0};
    clock_span t0 = clock_span_start();
    embed_model *m = open_model(path, &o, &e);
    tm.open_ms = clock_span_ms(&t0);
    if (!m) {
        rc = cli_error(e);
        goto out;
    }
    float *scores = xmalloc(n * sizeof *scores);
    clock_span run = clock_span_start();
    e = embed_rerank(m, query, docs, n, scores);
    timing_add_run(&tm, &run);
    if (e) {
        rc = cli_error(e);
    } else {
        printf("{\"version\":%d,\"model\":", OUT_JSON_VERSION);
        json_str(stdout, model_name(m, path));
        printf(",\"scores\":");
        json_floats(stdout, scores, n);
        if (timing)
            timing_print(&tm, "rerank_ms");
        printf("}\n");
        rc = EXIT_OK;
    }
    free(scores);
    embed_close(m);
out:
    free(docs);
    return rc;
}

/* ---- generate ---- */

#define GEN_MAX_STOPS 16

static int gen_option(int argc, char **argv, int *i, embed_opts *o, embed_gen_opts *g,
                      const char **stops, bool *timing, int *rc)
{
    const char *v;
    const char *cmd = "model generate";
    *rc = EXIT_OK;
    if (cli_opt_value(argc, argv, i, "--threads", &v)) {
        *rc = parse_int(cmd, "--threads", v, 1, 256, &o->threads);
    } else if (cli_opt_value(argc, argv, i, "--max-new", &v)) {
        *rc = parse_int(cmd, "--max-new", v, 1, 1 << 16, &g->max_tokens);
    } else if (cli_opt_value(argc, argv, i, "--top-k", &v)) {
        *rc = parse_int(cmd, "--top-k", v, 1, 1024, &g->top_k);
    } else if (cli_opt_value(argc, argv, i, "--temperature", &v)) {
        char *end;
        double t = v ? strtod(v, &end) : -1;
        if (!v || !*v || *end || !(t >= 0 && t <= 10))
            *rc = cli_usage(cmd, "--temperature needs a number in [0, 10]");
        g->temperature = (float)t;
    } else if (cli_opt_value(argc, argv, i, "--seed", &v)) {
        char *end;
        errno = 0;
        unsigned long long x = v ? strtoull(v, &end, 10) : 0;
        if (!v || !*v || *end || errno || *v == '-')
            *rc = cli_usage(cmd, "--seed needs a whole number");
        g->seed = x;
    } else if (cli_opt_value(argc, argv, i, "--stop", &v)) {
        if (!v || !*v || g->n_stop == GEN_MAX_STOPS)
            *rc = cli_usage(cmd, "--stop needs a non-empty text (at most %d of them)",
                            GEN_MAX_STOPS);
        else
            stops[g->n_stop++] = v;
    } else if (strcmp(argv[*i], "--ignore-eos") == 0) {
        g->ignore_eos = 1;
    } else if (strcmp(argv[*i], "--timing") == 0) {
        *timing = true;
    } else {
        return 0;
    }
    return 1;
}

static void gen_print(const embed_model *m, const char *path, const embed_gen_result *r,
                      bool timing)
{
    printf("{\"version\":%d,\"model\":", OUT_JSON_VERSION);
    json_str(stdout, model_name(m, path));
    printf(",\"text\":");
    json_str(stdout, r->text);
    printf(",\"ids\":[");
    for (size_t i = 0; i < r->n_ids; i++)
        printf("%s%d", i ? "," : "", r->ids[i]);
    printf("],\"prompt_tokens\":%zu,\"end\":\"%s\"", r->n_prompt, embed_gen_end_name(r->end));
    if (timing) {
        double tps = r->decode_ms > 0 && r->n_ids > 1 ? (double)(r->n_ids - 1) * 1e3 / r->decode_ms
                                                      : 0;
        printf(",\"prefill_ms\":%.3f,\"decode_ms\":%.3f,\"tokens_per_s\":%.3f", r->prefill_ms,
               r->decode_ms, tps);
    }
    printf("}\n");
}

static int model_generate(int argc, char **argv)
{
    const char *path = NULL, *prompt = NULL;
    const char *stops[GEN_MAX_STOPS];
    embed_opts o = {0};
    embed_gen_opts g = {.stop = stops};
    bool timing = false;
    int rc = EXIT_OK;
    for (int i = 2; i < argc; i++) {
        if (gen_option(argc, argv, &i, &o, &g, stops, &timing, &rc)) {
            if (rc)
                return rc;
        } else if (argv[i][0] == '-' && argv[i][1] == '-' && argv[i][2]) {
            return cli_usage("model generate", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else if (!prompt) {
            prompt = argv[i];
        } else {
            return cli_usage("model generate", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!path || !prompt)
        return cli_usage("model generate", "needs FILE and PROMPT");
    trove_err e;
    embed_model *m = open_model(path, &o, &e);
    if (!m)
        return cli_error(e);
    embed_gen_result r;
    e = embed_generate(m, prompt, &g, &r);
    if (e)
        rc = cli_error(e);
    else
        gen_print(m, path, &r, timing);
    embed_gen_result_free(&r);
    embed_close(m);
    return rc;
}

/* ---- bench ---- */

static int model_bench(int argc, char **argv)
{
    const char *path = NULL;
    int rc;
    embed_opts o = {.threads = 1};
    embed_bench_opts bo = {.batch = 32, .tokens = 256, .iters = 3};
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (cli_opt_value(argc, argv, &i, "--threads", &v)) {
            if ((rc = parse_int("model bench", "--threads", v, 1, 256, &o.threads)))
                return rc;
        } else if (cli_opt_value(argc, argv, &i, "--batch", &v)) {
            if ((rc = parse_int("model bench", "--batch", v, 1, 4096, &bo.batch)))
                return rc;
        } else if (cli_opt_value(argc, argv, &i, "--tokens", &v)) {
            if ((rc = parse_int("model bench", "--tokens", v, 3, 1 << 16, &bo.tokens)))
                return rc;
        } else if (cli_opt_value(argc, argv, &i, "--iters", &v)) {
            if ((rc = parse_int("model bench", "--iters", v, 1, 1000, &bo.iters)))
                return rc;
        } else if (strcmp(argv[i], "--quant-sgemm") == 0) {
            bo.quant_path = EMBED_QUANT_SGEMM;
        } else if (strcmp(argv[i], "--quant-int8") == 0) {
            bo.quant_path = EMBED_QUANT_INT8;
        } else if (argv[i][0] == '-') {
            return cli_usage("model bench", "unknown option %s", argv[i]);
        } else if (!path) {
            path = argv[i];
        } else {
            return cli_usage("model bench", "one FILE only");
        }
    }
    if (!path)
        return cli_usage("model bench", "missing FILE");
    clock_span t0 = clock_span_start();
    trove_err e;
    embed_model *m = open_model(path, &o, &e);
    double open_ms = clock_span_ms(&t0);
    if (!m)
        return cli_error(e);
    embed_info in;
    embed_get_info(m, &in);
    embed_bench_result r;
    if ((e = embed_bench(m, &bo, &r))) {
        embed_close(m);
        return cli_error(e);
    }
    printf("{\"version\":%d,\"model\":", OUT_JSON_VERSION);
    json_str(stdout, model_name(m, path));
    printf(",\"threads\":%d,\"batch\":%d,\"tokens\":%d,\"open_ms\":%.2f,\"tokens_per_s\":%.0f,"
           "\"gflops\":%.1f,\"sgemm_gflops\":%.1f,\"pct_of_sgemm\":%.0f,\"query16_ms\":%.2f}\n",
           in.threads, r.batch, r.tokens, open_ms, r.tokens_per_s, r.gflops, r.sgemm_gflops,
           r.sgemm_gflops > 0 ? 100.0 * r.gflops / r.sgemm_gflops : 0.0, r.query16_ms);
    embed_close(m);
    return EXIT_OK;
}

int cmd_model(cli *c, int argc, char **argv)
{
    (void)c;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    /* model management has its own file and --help texts */
    if (strcmp(argv[1], "pull") == 0 || strcmp(argv[1], "list") == 0 || strcmp(argv[1], "use") == 0)
        return cmd_model_manage(c, argc, argv);
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(USAGE, stdout);
            return EXIT_OK;
        }
    if (strcmp(argv[1], "info") == 0)
        return model_info(argc, argv);
    if (strcmp(argv[1], "tokenize") == 0)
        return model_tokenize(argc, argv);
    if (strcmp(argv[1], "embed") == 0)
        return model_embed(argc, argv);
    if (strcmp(argv[1], "rerank") == 0)
        return model_rerank(argc, argv);
    if (strcmp(argv[1], "generate") == 0)
        return model_generate(argc, argv);
    if (strcmp(argv[1], "bench") == 0)
        return model_bench(argc, argv);
    return cli_usage("model", "unknown subcommand '%s' (info, tokenize, embed, rerank, generate, "
                     "bench, pull, list, use)", argv[1]);
}
