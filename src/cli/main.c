/* trove — local-first hybrid search for markdown knowledge bases. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cjk/seg.h"
#include "xlate/xlate.h"
#include "cli/cli.h"
#include "cli/mathlib.h"
#include "models/models.h"
#include "util/mem.h"
#include "util/str.h"

#include "util/version.h"

typedef struct command {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
} command;

static const command commands[] = {
    {"collection", cmd_collection, "add|list|remove|rename collections of markdown files"},
    {"context", cmd_context, "add|list|rm descriptions returned with results under a path"},
    {"update", cmd_update, "index new and changed files, drop deleted ones"},
    {"embed", cmd_embed, "give indexed chunks vectors of the embedding model"},
    {"search", cmd_search, "search by keywords, meaning, titles and links"},
    {"vsearch", cmd_vsearch, "search by meaning only (the vector channel)"},
    {"query", cmd_query, "best answer: expand, search every variant, fuse, rerank, blend"},
    {"get", cmd_get, "print a note (PATH[:LINE] or #DOCID) from disk"},
    {"multi-get", cmd_multi_get, "print several notes matching a glob"},
    {"ls", cmd_ls, "list indexed notes"},
    {"similar", cmd_similar, "notes like a note: its distinctive terms and vectors"},
    {"links", cmd_links, "backlinks, outlinks, unresolved links and unlinked mentions of a note"},
    {"dupes", cmd_dupes, "groups of near-duplicate notes or passages"},
    {"eval", cmd_eval, "how well search works on this vault: a test set made from it"},
    {"status", cmd_status, "collections, counts, index size and freshness"},
    {"check", cmd_check, "check the index for damage and broken invariants"},
    {"snapshot", cmd_snapshot, "list|rollback numbered snapshots of the index (one per change)"},
    {"publish", cmd_publish, "send the index to OpenSearch, incrementally (docs/scaling.md)"},
    {"mcp", cmd_mcp, "serve the Model Context Protocol (stdio or --http) for AI agents"},
    {"serve", cmd_serve, "a local web page for searching and reading notes (docs/web.md)"},
    {"tokenize", cmd_tokenize, "show the terms the index (or --query) makes of a text"},
    {"model", cmd_model, "pull|list|use|info|tokenize|embed|rerank|generate|bench models: fetch, pick, run"},
    {"daemon", cmd_daemon, "keep the index open and watch the collections (see docs/daemon.md)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: trove [--index PATH] [--no-daemon] COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nenvironment: TROVE_INDEX (index file), TROVE_CONFIG_DIR (config folder), "
                 "TROVE_EMBED_MODEL (embedding model), NO_COLOR,\n"
                 "  TROVE_NO_DAEMON=1 (never use a running daemon)\n"
                 "run `trove COMMAND --help` for the options of a command\n");
}

int cli_error(trove_err err)
{
    const char *detail = trove_errmsg();
    fprintf(stderr, "trove: %s\n", detail && *detail ? detail : trove_strerror(err));
    return err == TROVE_EUSAGE ? EXIT_USAGE : EXIT_ERR;
}

int cli_load_config(config *cfg)
{
    trove_err rc = config_load(cfg);
    if (rc)
        return cli_error(rc);
    return EXIT_OK;
}

static config once_cfg;
static int once_state;   /* 0: not read, 1: read, -1: failed */

const config *cli_config_once(void)
{
    if (once_state == 0) {
        once_state = config_load(&once_cfg) == TROVE_OK ? 1 : -1;
        if (once_state < 0)
            trove_errclear();
    }
    return once_state > 0 ? &once_cfg : NULL;
}

static void cli_config_once_free(void)
{
    if (once_state > 0)
        config_free(&once_cfg);
    once_state = 0;
}

/* The commands that open the index do math (scores: log, exp, ...): libm
 * is loaded first, while the process is small (cli/mathlib.h). */
int cli_open_store(cli *c, int readonly, store **out)
{
    mathlib_load();
    trove_err rc = store_open(c->index_path, readonly, out);
    return rc ? cli_error(rc) : EXIT_OK;
}

int cli_open_api(cli *c, api **out)
{
    mathlib_load();
    trove_err rc = api_open(c->index_path, out);
    return rc ? cli_error(rc) : EXIT_OK;
}

/* A transformer model (a GGUF file) costs seconds to load per process:
 * with one active, the first command starts a daemon that keeps it. The
 * active model is the one every command resolves (models_resolve:
 * $TROVE_EMBED_MODEL, then `embed_model:` of config.yaml, which `trove
 * model use` writes); --model is one command's choice, not the daemon's. */
static int wants_daemon(const config *cfg)
{
    char *m = NULL;
    if (models_resolve(cfg, NULL, &m) != TROVE_OK)
        trove_errclear();   /* the command itself reports a model it cannot find */
    struct stat sb;
    int gguf = m && str_ends_with(m, ".gguf") && stat(m, &sb) == 0 && S_ISREG(sb.st_mode);
    free(m);
    return gguf;
}

/* `trove --index I daemon --detach`, which returns once the socket listens;
 * its output is not this command's. */
static void start_daemon(cli *c)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execl(self, "trove", "--index", c->index_path, "daemon", "--detach", (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

dcl *cli_daemon(cli *c)
{
    if (c->no_daemon)
        return NULL;
    const config *cfg = cli_config_once();
    if (!cfg)
        return NULL;   /* the cold path reports the broken config */
    int there;
    dcl *d = dcl_probe(c->index_path, cfg, 60.0, &there);
    if (d || there || cfg->daemon_off || !wants_daemon(cfg))
        return d;
    start_daemon(c);
    return dcl_find(c->index_path, cfg, 60.0);
}

int cli_answer(cli *c, api **a, int op, void *args, void *out, trove_err *err)
{
    if (dcl_try(cli_daemon(c), op, args, out, err))
        return EXIT_OK;
    int rc = cli_open_api(c, a);
    if (rc == EXIT_OK)
        *err = wire_call(*a, op, args, out);
    return rc;
}

/* The Chinese segmenter asks for its paths on the first CJK text only, so
 * the config is read for it only then. */
static void seg_paths(void *ud, char **dict, char **user)
{
    (void)ud;
    config cfg;
    if (config_load(&cfg) != TROVE_OK) {
        fprintf(stderr, "trove: warning: %s\n", trove_errmsg());
        return;
    }
    *dict = cfg.zh_dict;
    *user = cfg.zh_user_dict;
    cfg.zh_dict = cfg.zh_user_dict = NULL;
    config_free(&cfg);
}

static void seg_warn(const char *message)
{
    fprintf(stderr, "trove: warning: %s\n", message);
}

/* jansson seeds its hash tables at the first JSON object by opening and
 * reading /dev/urandom (three system calls); one getrandom() gives it as
 * random a seed. Before any JSON object exists, or it has no effect. */
static void json_seed(void)
{
    size_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed && seed)
        json_object_seed(seed);
}

int main(int argc, char **argv)
{
    json_seed();
    seg_install(seg_paths, NULL, seg_warn);
    xlate_set_warn(seg_warn);
    cli c = {0};
    int i = 1;
    const char *index = NULL;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("trove %s\n", TROVE_VERSION);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--no-daemon") == 0) {
            c.no_daemon = 1;
            continue;
        }
        if (cli_opt_value(argc, argv, &i, "--index", &v)) {
            if (!v || !*v) {
                fprintf(stderr, "trove: --index needs a path\n");
                return EXIT_USAGE;
            }
            index = v;
            continue;
        }
        fprintf(stderr, "trove: unknown option %s\n", argv[i]);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (i >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    char *default_index = NULL;
    if (!index)
        index = default_index = store_default_path();
    c.index_path = index;
    const char *no_color = getenv("NO_COLOR");
    c.color = isatty(STDOUT_FILENO) && !(no_color && *no_color);
    c.stderr_tty = isatty(STDERR_FILENO);
    const char *nd = getenv("TROVE_NO_DAEMON");
    if (nd && *nd && strcmp(nd, "0") != 0)
        c.no_daemon = 1;

    const char *name = argv[i];
    int rc = -1;
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++) {
        if (strcmp(commands[k].name, name) == 0) {
            rc = commands[k].fn(&c, argc - i, argv + i);
            break;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "trove: unknown command '%s'\n", name);
        usage(stderr);
        rc = EXIT_USAGE;
    }
    cli_config_once_free();
    free(default_index);
    return rc;
}
