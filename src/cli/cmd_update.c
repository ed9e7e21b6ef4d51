/* trove update [COLLECTION ...] */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "text/tok.h"
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
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove update [COLLECTION ...]\n"
                   "Index new and changed notes and drop deleted ones, in one transaction.\n");
            return EXIT_OK;
        }
        if (argv[i][0] == '-')
            return cli_usage("update", "unknown option %s", argv[i]);
    }
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
    int failed_collections = 0, changed = 0, retokenized = 0;
    size_t dropped = 0;
    /* A trove with another tokenizer (CJK bigrams before the Chinese
     * dictionary, another user dictionary) re-tokenizes the stored text. */
    if (!err)
        err = store_tokenizer_sync(st, tok_version(), &retokenized);
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
    if (retokenized)
        printf("re-tokenized the index for the current tokenizer (%s)\n", tok_version());
    if (dropped)
        printf("dropped %zu collection(s) no longer in the config\n", dropped);
    if (warnings)
        fprintf(stderr, "trove: %zu warning(s)\n", warnings);
    store_close(st);
    config_free(&cfg);
    return failed_collections ? EXIT_ERR : EXIT_OK;
}
