/* trove update [COLLECTION ...] */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "index/indexer.h"
#include "util/mem.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void print_warning(void *ctx, const char *message)
{
    size_t *count = ctx;
    (*count)++;
    fprintf(stderr, "trove: warning: %s\n", message);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Collections in the index that the config no longer lists are dropped. */
static trove_err drop_orphans(store *st, const config *cfg, size_t *dropped)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(store_db(st), "SELECT name FROM collections", -1, &s, NULL) != SQLITE_OK)
        return store_fail(st, "listing collections");
    char **names = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (config_find_collection(cfg, name))
            continue;
        xgrow(&names, &cap, n + 1, sizeof *names);
        names[n++] = xstrdup(name);
    }
    sqlite3_finalize(s);
    trove_err rc = TROVE_OK;
    for (size_t i = 0; i < n; i++) {
        if (rc == TROVE_OK)
            rc = store_collection_delete(st, names[i]);
        free(names[i]);
    }
    free(names);
    *dropped = n;
    return rc;
}

static int selected(int argc, char **argv, const char *name)
{
    if (argc <= 1)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

int cmd_update(cli *c, int argc, char **argv)
{
    const char *model_flag = NULL;
    int no_embed = 0;
    /* Options are taken out of argv so that what is left names collections. */
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove update [COLLECTION ...] [--no-embed] [--model PATH]\n"
                   "Index new and changed notes and drop deleted ones, in one transaction.\n"
                   "With an embedding model (--model, $TROVE_EMBED_MODEL) the new chunks are\n"
                   "then embedded as by `trove embed`; --no-embed skips that.\n");
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--no-embed") == 0) {
            no_embed = 1;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage("update", "--model needs a path");
            model_flag = v;
        } else if (argv[i][0] == '-') {
            return cli_usage("update", "unknown option %s", argv[i]);
        } else {
            argv[kept++] = argv[i];
        }
    }
    argc = kept;
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    for (int i = 1; i < argc; i++) {
        if (!config_find_collection(&cfg, argv[i])) {
            fprintf(stderr, "trove: no collection named '%s' (see `trove collection list`)\n", argv[i]);
            config_free(&cfg);
            return EXIT_ERR;
        }
    }
    if (cfg.n_collections == 0) {
        fprintf(stderr, "trove: no collections to index; add one with `trove collection add PATH`\n");
        config_free(&cfg);
        return EXIT_ERR;
    }
    store *st;
    if ((rc = cli_open_store(c, 0, &st)) != EXIT_OK) {
        config_free(&cfg);
        return rc;
    }
    struct sigaction sa = {.sa_handler = on_sigint};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    size_t warnings = 0;
    index_opts opts = {
        .max_file_bytes = INDEX_DEFAULT_MAX_FILE_BYTES,
        .chunk = CHUNK_OPTS_DEFAULT,
        .progress = c->stderr_tty,
        .warn = print_warning,
        .warn_ctx = &warnings,
        .interrupted = &interrupted,
    };
    trove_err err = store_begin(st);
    int failed_collections = 0, changed = 0;
    size_t dropped = 0;
    if (!err && argc <= 1) {
        err = drop_orphans(st, &cfg, &dropped);
        changed |= dropped > 0;
    }
    for (size_t i = 0; !err && i < cfg.n_collections; i++) {
        const config_collection *col = &cfg.collections[i];
        if (!selected(argc, argv, col->name))
            continue;
        index_stats s;
        double t0 = now();
        err = index_collection(st, col, &opts, &s);
        if (err == TROVE_ENOENT) {
            fprintf(stderr, "trove: warning: %s\n", trove_errmsg());
            failed_collections++;
            err = TROVE_OK;
            continue;
        }
        if (err)
            break;
        changed |= s.added || s.updated || s.renamed || s.removed;
        printf("%s: %zu files, %zu new, %zu changed, %zu renamed, %zu deleted, %zu unchanged",
               col->name, s.files, s.added, s.updated, s.renamed, s.removed, s.unchanged);
        if (s.skipped)
            printf(", %zu skipped", s.skipped);
        printf(" (%.2fs)\n", now() - t0);
    }
    if (!err && changed)
        err = store_links_resolve(st);
    if (!err)
        err = store_exec(st, "INSERT OR REPLACE INTO meta(key, value)"
                             " VALUES ('last_update', strftime('%s', 'now'))");
    if (!err)
        err = store_commit(st);
    if (err) {
        store_rollback(st);
        store_close(st);
        config_free(&cfg);
        if (err == TROVE_EINTR) {
            fprintf(stderr, "\ntrove: interrupted; the index is unchanged\n");
            return 130;
        }
        return cli_error(err);
    }
    if (dropped)
        printf("dropped %zu collection(s) no longer in the config\n", dropped);
    if (warnings)
        fprintf(stderr, "trove: %zu warning(s)\n", warnings);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    /* The keyword index is committed; vectors follow in their own commits. */
    int erc = EXIT_OK;
    const char *model = no_embed ? NULL : cli_model_path(model_flag);
    if (model) {
        embed_model *m = NULL;
        erc = cli_open_model(model, 0, &m);
        if (erc == EXIT_OK)
            erc = cli_embed_pass(c, st, m, model, 0, 0, 0);
        else
            fprintf(stderr, "trove: the notes are indexed; keyword search works, vectors were "
                            "not updated\n");
        embed_close(m);
    }
    store_close(st);
    config_free(&cfg);
    if (erc != EXIT_OK)
        return erc;
    return failed_collections ? EXIT_ERR : EXIT_OK;
}
