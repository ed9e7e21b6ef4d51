/* trove mcp [--http [HOST:]PORT] [--allow-remote] — the MCP server. */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "http/http.h"
#include "mcp/mcp.h"
#include "util/str.h"

static const char mcp_help[] =
    "usage: trove mcp [--http [HOST:]PORT] [--allow-remote] [--model PATH] [--reranker PATH]\n"
    "Serve the Model Context Protocol: over stdin/stdout (default), or over\n"
    "Streamable HTTP at http://HOST:PORT/mcp (HOST: a numeric address or localhost,\n"
    "default 127.0.0.1; PORT 0: any free port; the URL with the real port is\n"
    "printed on stdout once listening).\n"
    "  --allow-remote   allow a HOST that is not a loopback address\n"
    "  --model PATH     embedding model for the vector channel and the vsearch\n"
    "                   tool (default: $TROVE_EMBED_MODEL; none: keywords only)\n"
    "  --reranker PATH  reranker of the query tool (default: $TROVE_RERANK_MODEL,\n"
    "                   config `rerank_model:`; none: the lexical re-scorer)\n"
    "config.yaml `mcp: {token: T, origins: [...]}`: HTTP clients must send\n"
    "`Authorization: Bearer T`; extra browser origins allowed.\n";

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void print_url(const char *url, void *ctx)
{
    (void)ctx;
    printf("%s\n", url);
    fflush(stdout);
    fprintf(stderr, "trove mcp: serving %s (Ctrl-C to stop)\n", url);
}

int cmd_mcp(cli *c, int argc, char **argv)
{
    const char *listen = NULL, *model_flag = NULL, *reranker_flag = NULL;
    int allow_remote = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(mcp_help, stdout);
            return EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "--http", &v)) {
            if (!v || !*v)
                return cli_usage("mcp", "--http needs [HOST:]PORT, e.g. 127.0.0.1:8765");
            listen = v;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage("mcp", "--model needs a path");
            model_flag = v;
        } else if (cli_opt_value(argc, argv, &i, "--reranker", &v)) {
            if (!v || !*v)
                return cli_usage("mcp", "--reranker needs a path");
            reranker_flag = v;
        } else if (strcmp(argv[i], "--allow-remote") == 0) {
            allow_remote = 1;
        } else {
            return cli_usage("mcp", "unknown argument %s", argv[i]);
        }
    }
    char host[64];
    int port = 0;
    if (listen) {
        if (!http_parse_listen(listen, host, sizeof host, &port))
            return cli_usage("mcp", "--http %s: give [HOST:]PORT with a numeric address or "
                             "localhost (127.0.0.1:8765, [::1]:8765, localhost:0)", listen);
        if (!http_is_loopback(host) && !allow_remote)
            return cli_usage("mcp", "--http %s is not a loopback address: add --allow-remote "
                             "(and set mcp.token in config.yaml)", host);
    }
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    /* A resident process: its searches keep the vector segments they read
     * (api_models' segment cache) instead of reading them every time. */
    api_models *models = api_models_new();
    api_use_models(a, models);
    const char *model = cli_model_path(model_flag), *model_msg;
    if (cli_model_error(&model_msg))
        fprintf(stderr, "trove mcp: %s (searching by keywords, titles and links)\n", model_msg);
    mcp_server *s = mcp_server_new(a, model);
    mcp_server_use_daemon(s, !c->no_daemon);
    mcp_server_set_reranker(s, cli_reranker_path(reranker_flag, a));
    if (!listen) {
        rc = mcp_stdio_serve(s, STDIN_FILENO, STDOUT_FILENO) == 0 ? EXIT_OK : EXIT_ERR;
    } else {
        const config *cfg = api_config(a);
        if (!http_is_loopback(host) && !cfg->mcp.token)
            fprintf(stderr, "trove mcp: warning: serving %s without a token (set mcp.token in "
                    "%s)\n", host, cfg->file);
        struct sigaction sa = {.sa_handler = on_signal};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        mcp_http_opts o = {
            .host = host, .port = port, .token = cfg->mcp.token,
            .origins = (const char *const *)cfg->mcp.origins, .n_origins = cfg->mcp.n_origins,
            .on_listen = print_url, .stop = &stop_flag,
        };
        trove_err err = mcp_http_serve(s, &o);
        rc = err ? cli_error(err) : EXIT_OK;
    }
    mcp_server_free(s);
    api_close(a);
    api_models_free(models);
    return rc;
}
