/* trove embed [-f] [--model PATH]: give every indexed chunk a vector of
 * the active embedding model. Also the helpers that find and open that
 * model for `update`, `search`, `vsearch` and `status`. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "api/api.h"
#include "index/vembed.h"
#include "models/models.h"
#include "util/mem.h"
#include "util/str.h"

static trove_err model_err;   /* of the last cli_model_path(); message below */
static char *model_err_msg;

const char *cli_model_path(const char *flag)
{
    static char *resolved;  /* one model per process; kept until exit */
    free(resolved);
    free(model_err_msg);
    resolved = model_err_msg = NULL;
    model_err = TROVE_OK;
    static const config none;    /* the command reports a bad config itself */
    const config *cfg = cli_config_once();
    models_choice c;
    trove_err rc = models_resolve_choice(cfg ? cfg : &none, flag, &c);
    if (rc == TROVE_OK) {
        resolved = c.path;
        c.path = NULL;
    } else {
        /* Never handed on as written: a name that is not installed must not
         * open whatever file or folder of that name is in the current one. */
        model_err = rc;
        model_err_msg = xstrdup(trove_errmsg());
    }
    models_choice_free(&c);
    return resolved;
}

trove_err cli_model_error(const char **msg)
{
    if (msg)
        *msg = model_err_msg;
    if (model_err)
        trove_fail(model_err, "%s", model_err_msg);
    return model_err;
}

/* ---- progress ----------------------------------------------------------- */

typedef struct progress_ctx {
    int tty;
    double last;
} progress_ctx;

static void fmt_eta(char *buf, size_t cap, double secs)
{
    if (secs < 0 || secs > 99 * 3600)
        snprintf(buf, cap, "--:--");
    else if (secs >= 3600)
        snprintf(buf, cap, "%d:%02d:%02d", (int)secs / 3600, (int)secs / 60 % 60, (int)secs % 60);
    else
        snprintf(buf, cap, "%d:%02d", (int)secs / 60, (int)secs % 60);
}

static void on_progress(void *vctx, const vembed_progress *p)
{
    progress_ctx *ctx = vctx;
    double rate = p->elapsed > 0 ? (double)p->done / p->elapsed : 0;
    char eta[32];
    fmt_eta(eta, sizeof eta, rate > 0 ? (double)(p->total - (p->done < p->total ? p->done : p->total)) / rate : -1);
    if (ctx->tty) {
        if (p->elapsed - ctx->last < 0.1 && p->done < p->total)
            return;
        ctx->last = p->elapsed;
        int width = 24, fill = p->total ? (int)((double)p->done * width / (double)p->total) : width;
        if (fill > width)
            fill = width;
        fprintf(stderr, "\r\033[Kembedding [%.*s%*s] %zu/%zu chunks  %.0f/s  ETA %s", fill,
                "########################", width - fill, "", p->done, p->total, rate, eta);
        fflush(stderr);
    } else if (p->committed && p->done) {
        /* Plain lines for logs: one per commit, at most every 5 s. */
        if (p->elapsed - ctx->last < 5 && p->done < p->total)
            return;
        ctx->last = p->elapsed;
        fprintf(stderr, "embedding: %zu/%zu chunks, %.0f/s, ETA %s\n", p->done, p->total, rate, eta);
    }
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* What the pass did, in the progress line's terms (done = computed by the
 * model + given the stored vector of the same text), and how many of those
 * an update deleted meanwhile (not stored). */
static void print_embed_summary(const vembed_stats *s, int64_t dim)
{
    if (s->pending == 0) {
        printf("embedded nothing: every chunk has a vector of this model (%lld dimensions)\n",
               (long long)dim);
        return;
    }
    size_t done = s->embedded + s->reused;
    size_t skipped = done > s->stored ? done - s->stored : 0;
    printf("embedded %zu chunks: %zu computed", done, s->embedded);
    if (s->embedded && s->secs > 0)
        printf(" (%.0f chunks/s)", (double)s->embedded / s->secs);
    printf(", %zu reused (same text as a stored vector); %zu skipped (deleted meanwhile); "
           "%.2fs, %lld dimensions\n", s->reused, skipped, s->secs, (long long)dim);
}

int cli_embed_pass(cli *c, api *a, const cli_embed_args *args)
{
    progress_ctx pc = {.tty = c->stderr_tty, .last = -1};
    api_embed_opts o = {
        .model = args->model,
        .threads = args->threads,
        .prune = args->prune,
        .embed = {
            .force = args->force,
            .batch = args->batch,
            .commit_secs = args->commit_secs,
            .progress = on_progress,
            .progress_ctx = &pc,
            .interrupted = &interrupted,
        },
    };
    interrupted = 0;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    api_embed_result res;
    trove_err err = api_embed(a, &o, &res);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (pc.tty)
        fputs("\r\033[K", stderr);
    if (res.pruned)
        printf("dropped the vectors of %zu other model(s)\n", res.pruned);
    const vembed_stats *s = &res.stats;
    if (err == TROVE_EINTR) {
        fprintf(stderr, "trove: interrupted; %zu vectors saved, run `trove embed` to finish\n",
                s->stored);
        return 130;
    }
    if (err) {
        int rc = cli_error(err);
        if (s->stored)
            fprintf(stderr, "trove: %zu vectors were saved before the error; run `trove embed` "
                            "again to finish\n", s->stored);
        return rc;
    }
    print_embed_summary(s, res.dim);
    return EXIT_OK;
}

static const char embed_help[] =
    "usage: trove embed [options]\n"
    "Give every indexed chunk a vector of the embedding model, for `vsearch` and the\n"
    "vector channel of `search`. Only chunks without a vector of this model are\n"
    "embedded; progress is committed every few seconds, so an interrupted run resumes.\n"
    "  --model PATH   GGUF file or model2vec folder (default: $TROVE_EMBED_MODEL)\n"
    "  -f, --force    drop this model's vectors and embed everything again\n"
    "  --prune        also drop the vectors of every other model\n"
    "  --batch N      texts per model call (default 64)\n"
    "  --commit-every SECONDS  commit vectors at least this often (default 3)\n"
    "  --threads N    model threads (default: every CPU)\n";

int cmd_embed(cli *c, int argc, char **argv)
{
    const char *model_flag = NULL;
    cli_embed_args ea = {0};
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(embed_help, stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--force") == 0) {
            ea.force = 1;
        } else if (strcmp(argv[i], "--prune") == 0) {
            ea.prune = 1;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage("embed", "--model needs a path");
            model_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "--batch", &v)) {
            long n;
            if (!cli_opt_positive(v, &n) || n > 4096)
                return cli_usage("embed", "--batch needs a number from 1 to 4096");
            ea.batch = (int)n;
        } else if (cli_opt_value(argc, argv, &i, "--commit-every", &v)) {
            char *end;
            double d = v ? strtod(v, &end) : 0;
            if (!v || *end || !(d > 0) || d > 3600)
                return cli_usage("embed", "--commit-every needs seconds, more than 0");
            ea.commit_secs = d;
        } else if (cli_opt_value(argc, argv, &i, "--threads", &v)) {
            long n;
            if (!cli_opt_positive(v, &n) || n > 256)
                return cli_usage("embed", "--threads needs a number from 1 to 256");
            ea.threads = (int)n;
        } else {
            return cli_usage("embed", argv[i][0] == '-' ? "unknown option %s" : "unexpected argument '%s'",
                             argv[i]);
        }
    }
    ea.model = cli_model_path(model_flag);
    trove_err merr = cli_model_error(NULL);
    if (merr)
        return cli_error(merr);
    if (!ea.model) {
        fprintf(stderr, "trove: no embedding model: pass --model PATH or set TROVE_EMBED_MODEL "
                        "(a GGUF file or a model2vec folder)\n");
        return EXIT_ERR;
    }
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    rc = cli_embed_pass(c, a, &ea);
    api_close(a);
    return rc;
}
