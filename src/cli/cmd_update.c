/* trove update [--rebuild] [COLLECTION ...], trove check */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/wire.h"
#include "cli/cli.h"
#include "cli/out.h"
#include "daemon/client.h"
#include "text/tok.h"
#include "util/clock.h"
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

/* A progress bar on stderr, redrawn at most ten times a second. */
static void draw_progress(void *ctx, const char *collection, size_t done, size_t total)
{
    double *last = ctx, t = clock_seconds();
    if (done != total && t - *last < 0.1)
        return;
    *last = t;
    int width = 30, filled = total ? (int)(width * done / total) : width;
    fprintf(stderr, "\r%-12.12s [", collection);
    for (int i = 0; i < width; i++)
        fputc(i < filled ? '#' : ' ', stderr);
    fprintf(stderr, "] %zu/%zu", done, total);
    if (done == total)
        fputs("\r\033[K", stderr);
    fflush(stderr);
}

static void print_result(const index_update_result *res, size_t warnings)
{
    for (size_t i = 0; i < res->n_collections; i++) {
        const index_update_collection *uc = &res->collections[i];
        if (uc->missing) {
            fprintf(stderr, "trove: warning: %s\n", uc->missing);
            continue;
        }
        const index_stats *s = &uc->stats;
        printf("%s: %zu files, %zu new, %zu changed, %zu renamed, %zu deleted, %zu unchanged",
               uc->name, s->files, s->added, s->updated, s->renamed, s->removed, s->unchanged);
        if (s->skipped)
            printf(", %zu skipped", s->skipped);
        printf(" (%.2fs)\n", uc->seconds);
    }
    if (res->retokenized)
        printf("re-tokenized the index for the current tokenizer (%s)\n", tok_version());
    if (res->dropped)
        printf("dropped %zu collection(s) no longer in the config\n", res->dropped);
    if (res->snapshot)
        printf("snapshot %lld (`trove snapshot list`)\n", (long long)res->snapshot);
    if (warnings)
        fprintf(stderr, "trove: %zu warning(s)\n", warnings);
}

/* Ask a running daemon whose watcher vouches for the collections to
 * answer without a walk (docs/architecture.md, "An update without a
 * walk"): 1 and *res filled when it did; else 0 and *why (caller frees),
 * and the caller walks. */
static int ask_daemon(cli *c, const api_update_opts *o, int walk, index_update_result *res,
                      char **why)
{
    *why = NULL;
    if (o->rebuild || walk || c->no_daemon) {
        *why = xstrdup(o->rebuild ? "--rebuild indexes everything"
                       : walk     ? "--walk asks for a walk"
                                  : "--no-daemon");
        return 0;
    }
    const config *cfg = cli_config_once();
    dcl *d = cfg ? dcl_find(c->index_path, cfg, 10.0) : NULL;
    if (!d) {
        *why = xstrdup("no daemon serves this index");
        return 0;
    }
    int ok = dcl_update_unwalked(d, o, res, why);
    dcl_close(d);
    return ok;
}

/* --json: the update's answer as the daemon protocol encodes it, and
 * whether it walked. */
static void print_result_json(const index_update_result *res, const char *why)
{
    json_t *root = out_json_root();
    json_t *r = wire_emit(wire_requests[WIRE_OP_UPDATE].result, res);
    json_object_update(root, r);
    json_decref(r);
    json_object_set_new(root, "walked", json_boolean(why != NULL));
    json_object_set_new(root, "why", why ? json_string(why) : json_null());
    out_json_print(stdout, root);
}

int cmd_update(cli *c, int argc, char **argv)
{
    const char **names = xcalloc((size_t)argc, sizeof *names);
    size_t n_names = 0;
    int rebuild = 0, no_embed = 0, walk = 0, as_json = 0, explain = 0;
    const char *model_flag = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove update [--rebuild] [--walk] [--no-embed] [--model PATH] [--json]\n"
                   "                    [--explain] [COLLECTION ...]\n"
                   "Index new and changed notes and drop deleted ones, in one transaction.\n"
                   "A running daemon whose watcher has seen every change answers at once,\n"
                   "without walking the folders (nothing changed since its last walk).\n"
                   "  --rebuild   index everything into a fresh file that replaces the index\n"
                   "              (the fix for a damaged index; the old file stays on failure;\n"
                   "              the snapshot history starts again)\n"
                   "  --walk      walk the folders even when the daemon's watcher vouches\n"
                   "  --model PATH  then embed the chunks without a vector, as `trove embed`\n"
                   "              (default: $TROVE_EMBED_MODEL)\n"
                   "  --no-embed  do not embed\n"
                   "  --json      the counts as JSON, with \"walked\" and \"why\"\n"
                   "  --explain   say on stderr whether the folders were walked, and why\n");
            free(names);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--rebuild") == 0) {
            rebuild = 1;
        } else if (strcmp(argv[i], "--walk") == 0) {
            walk = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            as_json = 1;
        } else if (strcmp(argv[i], "--explain") == 0) {
            explain = 1;
        } else if (strcmp(argv[i], "--no-embed") == 0) {
            no_embed = 1;
        } else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v) {
                free(names);
                return cli_usage("update", "--model needs a path");
            }
            model_flag = v;
        } else if (argv[i][0] == '-') {
            free(names);
            return cli_usage("update", "unknown option %s", argv[i]);
        } else {
            names[n_names++] = argv[i];
        }
    }
    if (rebuild && n_names) {
        free(names);
        return cli_usage("update", "--rebuild indexes every collection; name none");
    }
    size_t warnings = 0;
    double last_draw = 0;
    api_update_opts o;
    api_update_opts_init(&o);
    o.collections = names;
    o.n_collections = n_names;
    o.rebuild = rebuild;
    index_update_result res;
    char *why = NULL;
    api *a = NULL;
    int rc;
    if (!ask_daemon(c, &o, walk, &res, &why)) {
        if ((rc = cli_open_api(c, &a))) {
            free(names);
            free(why);
            return rc;
        }
        struct sigaction sa = {.sa_handler = on_sigint};
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        o.index.warn = print_warning;
        o.index.warn_ctx = &warnings;
        if (c->stderr_tty && !as_json) {
            o.index.progress = draw_progress;
            o.index.progress_ctx = &last_draw;
        }
        o.index.interrupted = &interrupted;
        trove_err err = api_update(a, &o, &res);
        if (err) {
            free(names);
            free(why);
            api_close(a);
            if (err == TROVE_EINTR) {
                fprintf(stderr, "\ntrove: interrupted; the index is unchanged\n");
                return 130;
            }
            return cli_error(err);
        }
    }
    free(names);
    if (explain) {
        if (why)
            fprintf(stderr, "trove: walked the folders: %s\n", why);
        else
            fprintf(stderr, "trove: not walked: the daemon's watcher has seen every change since "
                            "its last walk, which found these counts\n");
    }
    if (as_json) {
        print_result_json(&res, why);
        if (warnings)
            fprintf(stderr, "trove: %zu warning(s)\n", warnings);
    } else {
        print_result(&res, warnings);
    }
    free(why);
    if (rebuild && !as_json)
        printf("rebuilt the index %s; its snapshot history starts again (the old snapshots "
               "are gone)\n", c->index_path);
    int missing = 0;
    for (size_t i = 0; i < res.n_collections; i++)
        missing |= res.collections[i].missing != NULL;
    index_update_result_free(&res);
    /* The keyword index is committed; vectors follow in commits of their own. */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    int erc = EXIT_OK;
    cli_embed_args ea = {.model = no_embed ? NULL : cli_model_path(model_flag)};
    const char *model_msg;
    if (!no_embed && cli_model_error(&model_msg)) {
        fprintf(stderr, "trove: %s\n", model_msg);
        erc = EXIT_ERR;
    }
    if (ea.model && !a && (rc = cli_open_api(c, &a)))
        return rc;
    if (ea.model) {
        erc = cli_embed_pass(c, a, &ea);
        if (erc != EXIT_OK && erc != 130)
            fprintf(stderr, "trove: the notes are indexed and keyword search works; the vectors "
                            "are not up to date\n");
    }
    if (erc == EXIT_ERR && !ea.model)
        fprintf(stderr, "trove: the notes are indexed and keyword search works; the vectors "
                        "are not up to date\n");
    api_close(a);
    if (erc != EXIT_OK)
        return erc;
    return missing ? EXIT_ERR : EXIT_OK;
}

/* One line per dictionary; a damaged one is a problem (and says the
 * fix), a missing one a note of what runs without it. Returns the number
 * damaged; frees `d`. */
static size_t print_dict_checks(api_dict_check d[API_N_DICTS])
{
    size_t damaged = 0;
    for (size_t i = 0; i < API_N_DICTS; i++) {
        if (d[i].state == API_DICT_OK) {
            printf("%s: ok (%s dictionary)\n", d[i].path, d[i].what);
        } else {
            /* the detail names the file and why */
            int bad = d[i].state == API_DICT_DAMAGED;
            printf("%s: %s; %s\n", bad ? "problem" : "note", d[i].detail, d[i].without);
            damaged += bad;
        }
    }
    if (damaged)
        fprintf(stderr, "trove: %zu damaged dictionary file(s); reinstall trove (`make install`) "
                        "or rebuild them (cmake --build BUILD)\n", damaged);
    api_dict_checks_free(d);
    return damaged;
}

int cmd_check(cli *c, int argc, char **argv)
{
    size_t n;
    int rc = cli_positionals("check", "usage: trove check\n"
                             "SQLite's integrity check and trove's own invariants on the index, "
                             "and the\nChinese and translation dictionaries read whole; "
                             "exit 1 with one line per problem.\n", argc, argv, 1, NULL, NULL, 0, &n);
    if (rc >= 0)
        return rc;
    api *a;
    rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    api_check_result res;
    trove_err err = api_check(a, &res);
    api_dict_check dicts[API_N_DICTS];
    if (err == TROVE_OK)
        api_check_dicts(a, dicts);
    api_close(a);
    if (err)
        return cli_error(err);
    for (size_t i = 0; i < res.n; i++)
        printf("problem: %s\n", res.problems[i]);
    if (res.n) {
        fprintf(stderr, "trove: %s: %zu problem(s); rebuild the index with `trove update "
                        "--rebuild`\n", c->index_path, res.n);
        rc = EXIT_ERR;
    } else {
        printf("%s: ok (%lld notes, %lld chunks, %lld links)\n", c->index_path,
               (long long)res.counts.docs, (long long)res.counts.chunks,
               (long long)res.counts.links);
    }
    api_check_result_free(&res);
    return print_dict_checks(dicts) ? EXIT_ERR : rc;
}
