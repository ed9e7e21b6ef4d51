/* trove serve [--port N] [--host HOST] [--open] [--allow-remote] — the web page. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "http/http.h"
#include "util/str.h"
#include "web/web.h"

static const char serve_help[] =
    "usage: trove serve [--port N] [--host HOST] [--open] [--allow-remote] [--model PATH]\n"
    "                   [--reranker PATH]\n"
    "A web page for searching and reading your notes at http://HOST:PORT/ (docs/web.md),\n"
    "with a JSON API under /api/. Answers through the running daemon (warm models,\n"
    "watched folders) when there is one, else from the index itself.\n"
    "  --port N         port (default 8686; 0: any free port; the URL is printed on\n"
    "                   stdout once listening)\n"
    "  --host HOST      a numeric address or localhost (default 127.0.0.1)\n"
    "  --open           open the page in the desktop's browser (xdg-open)\n"
    "  --allow-remote   allow a HOST that is not a loopback address; every client\n"
    "                   then needs mcp.token of config.yaml (open /?token=TOKEN once),\n"
    "                   and notes kept from agents (mcp.exclude, private: true) are hidden\n"
    "  --model PATH     embedding model (default: $TROVE_EMBED_MODEL, the configured one)\n"
    "  --reranker PATH  reranker of the \"best answer\" mode (default: $TROVE_RERANK_MODEL,\n"
    "                   config `rerank_model:`; none: the lexical re-scorer)\n";

static volatile int stop_flag;
static int open_browser;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void on_listen(const char *url, void *ctx)
{
    (void)ctx;
    printf("%s\n", url);
    fflush(stdout);
    fprintf(stderr, "trove serve: serving %s (Ctrl-C to stop)\n", url);
    if (!open_browser)
        return;
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        execlp("xdg-open", "xdg-open", url, (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        fprintf(stderr, "trove serve: cannot start xdg-open: open %s yourself\n", url);
}

/* `trove search --json` output, as a string (the same writer). */
static char *results_json(const char *query, const search_results *res, const api_query_info *info,
                          int explain, const char *const *warnings, size_t n_warnings)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return strdup("{}");
    out_opts oo = {.format = OUT_JSON, .explain = explain, .query_info = info,
                   .warnings = warnings, .n_warnings = n_warnings};
    out_results(f, query, res, &oo);
    fclose(f);
    return text;
}

/* Whether a daemon answers for this index now (it then watches the folders). */
static int daemon_running(cli *c)
{
    dcl *d = cli_daemon(c);
    if (!d)
        return 0;
    dcl_close(d);
    return 1;
}

int cmd_serve(cli *c, int argc, char **argv)
{
    const char *model_flag = NULL, *reranker_flag = NULL, *host_flag = NULL;
    long port = 8686;
    int allow_remote = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(serve_help, stdout);
            return EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "--port", &v)) {
            if (!v || !str_to_long(v, 0, 65535, &port))
                return cli_usage("serve", "--port needs a number from 0 to 65535");
        } else if (cli_opt_value(argc, argv, &i, "--host", &v)) {
            if (!v || !*v)
                return cli_usage("serve", "--host needs an address (127.0.0.1, ::1, localhost)");
            host_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage("serve", "--model needs a path");
            model_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "--reranker", &v)) {
            if (!v || !*v)
                return cli_usage("serve", "--reranker needs a path");
            reranker_flag = v;
        } else if (strcmp(argv[i], "--open") == 0) {
            open_browser = 1;
        } else if (strcmp(argv[i], "--allow-remote") == 0) {
            allow_remote = 1;
        } else {
            return cli_usage("serve", "unknown argument %s", argv[i]);
        }
    }
    char host[64], spec[128];
    int iport;
    snprintf(spec, sizeof spec, "%s%s%s:%ld", host_flag && strchr(host_flag, ':') ? "[" : "",
             host_flag ? host_flag : "127.0.0.1",
             host_flag && strchr(host_flag, ':') ? "]" : "", port);
    if (!http_parse_listen(spec, host, sizeof host, &iport))
        return cli_usage("serve", "--host %s: give a numeric address or localhost (127.0.0.1, "
                         "::1)", host_flag);
    if (!http_is_loopback(host) && !allow_remote)
        return cli_usage("serve", "--host %s is not a loopback address: add --allow-remote "
                         "(and set mcp.token in config.yaml)", host);
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    const config *cfg = api_config(a);
    /* --allow-remote always means a token: the page shows every note */
    if (allow_remote && !cfg->mcp.token) {
        fprintf(stderr, "trove serve: --allow-remote needs a token: set mcp.token in %s\n",
                cfg->file);
        api_close(a);
        return EXIT_USAGE;
    }
    /* Whoever reaches the page from another machine is not the owner at
     * this one: the agent boundary (api.h) keeps config `mcp: exclude` and
     * private notes out of every page and API answer, as for MCP. */
    if (allow_remote)
        api_set_boundary(a, 1);
    signal(SIGPIPE, SIG_IGN);
    api_models *models = api_models_new();
    api_use_models(a, models);
    const char *model = cli_model_path(model_flag), *model_msg;
    if (cli_model_error(&model_msg))
        fprintf(stderr, "trove serve: %s (searching by keywords, titles and links)\n", model_msg);
    int watched = daemon_running(c);
    if (!watched)
        fprintf(stderr, "trove serve: no daemon runs for this index: answering from the index "
                "as of the last `trove update`, without watching the folders (start `trove "
                "daemon` to keep it current)\n");
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGCHLD, SIG_IGN);   /* xdg-open: no zombie */
    web_opts o = {
        .host = host, .port = iport,
        .token = allow_remote ? cfg->mcp.token : NULL,
        .origins = (const char *const *)cfg->mcp.origins, .n_origins = cfg->mcp.n_origins,
        .model = model, .reranker = cli_reranker_path(reranker_flag, a),
        .use_daemon = !c->no_daemon,
        .freshness = "no daemon runs: the index is as of the last update (start "
                     "trove daemon to keep it current)",
        .results_json = results_json, .on_listen = on_listen, .stop = &stop_flag,
    };
    trove_err err = web_serve(a, &o);
    rc = err ? cli_error(err) : EXIT_OK;
    api_close(a);
    api_models_free(models);
    return rc;
}
