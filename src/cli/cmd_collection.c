/* trove collection add|list|remove|rename, trove context add|list|rm */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "fs/walk.h"
#include "util/buf.h"
#include "util/esc.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"

static const char collection_help[] =
    "usage: trove collection add PATH [--name NAME] [--mask GLOB ...] [--exclude GLOB ...]\n"
    "       trove collection list [--json]\n"
    "       trove collection remove NAME\n"
    "       trove collection rename OLD NEW\n"
    "Masks default to **/*.md. Dot-folders, node_modules and .gitignore'd paths are skipped.\n"
    "  --name NAME     the collection's name (default: the folder's name)\n"
    "  --mask GLOB     index the files matching GLOB (repeatable)\n"
    "  --exclude GLOB  skip the files matching GLOB (repeatable)\n"
    "  --json          list: JSON output (docs/cli.md)\n";

/* A name is typed by people and shown in every result: printable UTF-8. */
static int valid_name(const char *name)
{
    if (!*name || strchr(name, '/') || strchr(name, '\\') || name[0] == '.' || name[0] == '-')
        return 0;
    const unsigned char *p = (const unsigned char *)name;
    size_t len = strlen(name);
    uint32_t cp;
    for (size_t i = 0, k; i < len; i += k) {
        k = esc_utf8_decode(p + i, len - i, &cp);
        if (!k || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029)
            return 0;
    }
    return 1;
}

/* A folder inside another collection, or holding one, would index the
 * same notes twice: refuse it and say which collection is in the way. */
static int check_nesting(const config *cfg, const char *abs)
{
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        const char *rel = fs_path_below(col->path, abs);
        if (rel) {
            fprintf(stderr, "trove: %s is inside collection '%s' (%s), which already indexes its "
                            "notes; not added (search it with `trove search -c %s --folder %s`)\n",
                    abs, col->name, col->path, col->name, rel);
            return EXIT_ERR;
        }
        if (fs_path_below(abs, col->path)) {
            fprintf(stderr, "trove: %s contains collection '%s' (%s), whose notes would be "
                            "indexed twice; not added (remove it first with `trove collection "
                            "remove %s`)\n", abs, col->name, col->path, col->name);
            return EXIT_ERR;
        }
    }
    return EXIT_OK;
}

/* After `collection add`: a running daemon whose watcher is on indexes the
 * new collection itself (it watches config.yaml); otherwise the user runs
 * `trove update`. */
static void say_how_indexed(cli *c)
{
    dcl *d = NULL;
    json_t *hello = NULL;
    char *sock = dcl_socket_path(c->index_path);
    struct stat sb;
    int there = sock && stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode);
    free(sock);
    if (there && dcl_connect(c->index_path, NULL, 5.0, &d) == TROVE_OK) {
        if (dcl_call(d, wire_requests[WIRE_OP_HELLO].op, NULL, &hello) != TROVE_OK)
            hello = NULL;
        dcl_close(d);
    }
    trove_errclear();
    /* "watch": the daemon follows config.yaml (even with no collection
     * yet, when its watcher is still off) */
    const json_t *dj = json_object_get(hello, "daemon");
    if (json_is_true(json_object_get(dj, "watch")))
        printf("the daemon (pid %lld) watches config.yaml and indexes it now; `trove status` "
               "shows when it is done\n",
               (long long)json_integer_value(json_object_get(hello, "pid")));
    else if (hello)
        printf("run `trove update` to index it (the running daemon does not watch the "
               "collections)\n");
    else
        printf("run `trove update` to index it\n");
    json_decref(hello);
}

static int collection_add(cli *c, int argc, char **argv)
{
    const char *path = NULL, *name = NULL;
    const char **masks = xcalloc((size_t)argc, sizeof *masks);
    const char **excludes = xcalloc((size_t)argc, sizeof *excludes);
    size_t n_masks = 0, n_excludes = 0;
    int rc = EXIT_OK;
    for (int i = 2; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(collection_help, stdout);
            goto out;
        }
        if (cli_opt_value(argc, argv, &i, "--name", &v) || cli_opt_value(argc, argv, &i, "-n", &v)) {
            if (!v) { rc = cli_usage("collection", "--name needs a value"); goto out; }
            name = v;
        } else if (cli_opt_value(argc, argv, &i, "--mask", &v)) {
            if (!v) { rc = cli_usage("collection", "--mask needs a glob"); goto out; }
            masks[n_masks++] = v;
        } else if (cli_opt_value(argc, argv, &i, "--exclude", &v)) {
            if (!v) { rc = cli_usage("collection", "--exclude needs a glob"); goto out; }
            excludes[n_excludes++] = v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            rc = cli_usage("collection", "unknown option %s", argv[i]);
            goto out;
        } else if (!path) {
            path = argv[i];
        } else {
            rc = cli_usage("collection", "unexpected argument '%s'", argv[i]);
            goto out;
        }
    }
    if (!path) {
        rc = cli_usage("collection", "add needs a PATH");
        goto out;
    }
    char abs[PATH_MAX];
    struct stat sb;
    if (!realpath(path, abs) || stat(abs, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "trove: %s is not a folder\n", path);
        rc = EXIT_ERR;
        goto out;
    }
    char *default_name = NULL;
    if (!name) {
        default_name = xstrdup(strcmp(abs, "/") == 0 ? "root" : str_basename(abs));
        name = default_name;
    }
    if (!valid_name(name)) {
        rc = cli_usage("collection", "invalid collection name '%s' (printable UTF-8, no '/', "
                       "not starting with '.' or '-'; pick one with --name)", name);
        free(default_name);
        goto out;
    }
    config cfg;
    if ((rc = cli_load_config(&cfg)) != EXIT_OK) {
        free(default_name);
        goto out;
    }
    /* the same folder however it is spelt (a symlink, a hand-edited path) */
    const config_collection *same = config_same_folder(&cfg, abs, (size_t)-1);
    if (config_find_collection(&cfg, name)) {
        fprintf(stderr, "trove: a collection named '%s' already exists; pick another with "
                        "--name\n", name);
        rc = EXIT_ERR;
    } else if (same) {
        fprintf(stderr, "trove: %s is already collection '%s' (%s); not added\n", abs,
                same->name, same->path);
        rc = EXIT_ERR;
    } else if ((rc = check_nesting(&cfg, abs)) != EXIT_OK) {
        /* refused: its notes would be indexed twice */
    } else {
        config_add_collection(&cfg, name, abs, masks, n_masks, excludes, n_excludes);
        trove_err err = config_save(&cfg);
        if (err)
            rc = cli_error(err);
        else {
            printf("added collection '%s' -> ", name);
            out_put_path(stdout, abs);
            putchar('\n');
            say_how_indexed(c);
        }
    }
    config_free(&cfg);
    free(default_name);
out:
    free(masks);
    free(excludes);
    return rc;
}

/* Number of indexed notes of `name` in the listing. */
static long indexed_count(const api_listing *l, const char *name)
{
    for (size_t i = 0; i < l->n_collections; i++)
        if (strcmp(l->collections[i].name, name) == 0)
            return (long)l->collections[i].n_docs;
    return 0;
}

static json_t *string_array(char *const *items, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, out_json_str(items[i]));
    return arr;
}

static void print_collections_json(const config *cfg, const api_listing *l, int counted)
{
    json_t *root = out_json_root();
    json_t *arr = json_array();
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        json_array_append_new(arr, json_pack("{s:o, s:o, s:o, s:o, s:o}", "name",
                                             out_json_str(col->name), "path", out_json_str(col->path),
                                             "notes", counted ? json_integer(indexed_count(l, col->name))
                                                              : json_null(),
                                             "masks", col->n_masks ? string_array(col->masks, col->n_masks)
                                                                   : json_pack("[s]", WALK_DEFAULT_MASK),
                                             "excludes", string_array(col->excludes, col->n_excludes)));
    }
    json_object_set_new(root, "collections", arr);
    out_json_print(stdout, root);
}

static int collection_list(cli *c, int argc, char **argv)
{
    int json = 0;
    size_t n_pos;
    int rc = cli_positionals("collection", collection_help, argc, argv, 2, &json, NULL, 0, &n_pos);
    if (rc >= 0)
        return rc;
    api *a;
    rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    const config *cfg = api_config(a);
    api_listing l = {0};
    /* The counts are a bonus: without a (healthy) index the list still shows. */
    int counted = api_index_exists(a);
    if (counted && api_ls(a, NULL, &l) != TROVE_OK) {
        fprintf(stderr, "trove: warning: %s\n", trove_errmsg());
        counted = 0;
    }
    if (json) {
        print_collections_json(cfg, &l, counted);
        api_listing_free(&l);
        api_close(a);
        return EXIT_OK;
    }
    if (cfg->n_collections == 0)
        printf("no collections; add one with `trove collection add PATH`\n");
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        out_put_line(stdout, col->name);
        putchar('\t');
        out_put_path(stdout, col->path);
        if (counted)
            printf("\t%ld notes", indexed_count(&l, col->name));
        for (size_t m = 0; m < col->n_masks; m++) {
            fputs("\tmask=", stdout);
            out_put_path(stdout, col->masks[m]);
        }
        for (size_t m = 0; m < col->n_excludes; m++) {
            fputs("\texclude=", stdout);
            out_put_path(stdout, col->excludes[m]);
        }
        putchar('\n');
    }
    api_listing_free(&l);
    api_close(a);
    return EXIT_OK;
}

/* Apply a change to the index too, if one exists: one snapshot, kept as
 * the config says. */
static int index_apply(cli *c, const config *cfg, const char *from, const char *to,
                       const char *settings)
{
    if (access(c->index_path, F_OK) != 0)
        return EXIT_OK;
    store *st;
    int rc = cli_open_store(c, 0, &st);
    if (rc)
        return rc;
    store_retention keep = api_retention(cfg);
    store_snapshot_retention(st, &keep);
    tbuf note = {0};
    if (to)
        tbuf_printf(&note, "rename %s to %s", from, to);
    else
        tbuf_printf(&note, "remove %s", from);
    store_snapshot_label(st, "collection", note.data);
    tbuf_free(&note);
    trove_err err = store_begin(st);
    /* A removed collection's settings go into the snapshot: a rollback
     * past the removal puts its config.yaml entry back. */
    if (!err && settings)
        err = store_snapshot_coll_conf(st, from, settings);
    if (!err)
        err = to ? store_collection_rename(st, from, to) : store_collection_delete(st, from);
    if (!err)
        err = store_commit(st);
    else
        store_rollback(st);
    store_close(st);
    return err ? cli_error(err) : EXIT_OK;
}

static int collection_remove(cli *c, int argc, char **argv)
{
    const char *pos[1];
    size_t n;
    int prc = cli_positionals("collection", collection_help, argc, argv, 2, NULL, pos, 1, &n);
    if (prc >= 0)
        return prc;
    if (n != 1)
        return cli_usage("collection", "remove needs exactly one NAME");
    const char *name = pos[0];
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    char *settings = config_collection_settings(&cfg, name);
    if (!config_remove_collection(&cfg, name)) {
        fprintf(stderr, "trove: no collection named '%s' (see `trove collection list`)\n", name);
        config_free(&cfg);
        return EXIT_ERR;
    }
    /* contexts of the collection go with it */
    for (size_t i = 0; i < cfg.n_contexts;) {
        const char *t = cfg.contexts[i].target;
        size_t nl = strlen(name);
        if (strncmp(t, name, nl) == 0 && (t[nl] == '\0' || t[nl] == '/')) {
            char *target = xstrdup(t);
            config_remove_context(&cfg, target);
            free(target);
        } else {
            i++;
        }
    }
    rc = index_apply(c, &cfg, name, NULL, settings);
    free(settings);
    if (rc == EXIT_OK) {
        trove_err err = config_save(&cfg);
        rc = err ? cli_error(err) : EXIT_OK;
    }
    if (rc == EXIT_OK)
        printf("removed collection '%s'\n", name);
    config_free(&cfg);
    return rc;
}

static int collection_rename(cli *c, int argc, char **argv)
{
    const char *pos[2];
    size_t n;
    int prc = cli_positionals("collection", collection_help, argc, argv, 2, NULL, pos, 2, &n);
    if (prc >= 0)
        return prc;
    if (n != 2)
        return cli_usage("collection", "rename needs OLD and NEW names");
    const char *from = pos[0], *to = pos[1];
    if (!valid_name(to))
        return cli_usage("collection", "invalid collection name '%s'", to);
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    config_collection *col = config_find_collection(&cfg, from);
    if (!col) {
        fprintf(stderr, "trove: no collection named '%s' (see `trove collection list`)\n", from);
        rc = EXIT_ERR;
    } else if (config_find_collection(&cfg, to)) {
        fprintf(stderr, "trove: a collection named '%s' already exists\n", to);
        rc = EXIT_ERR;
    } else {
        free(col->name);
        col->name = xstrdup(to);
        /* contexts follow their collection */
        size_t fl = strlen(from);
        for (size_t i = 0; i < cfg.n_contexts; i++) {
            char *t = cfg.contexts[i].target;
            if (strncmp(t, from, fl) == 0 && (t[fl] == '\0' || t[fl] == '/')) {
                size_t len = strlen(to) + strlen(t + fl) + 1;
                char *nt = xmalloc(len);
                snprintf(nt, len, "%s%s", to, t + fl);
                free(t);
                cfg.contexts[i].target = nt;
            }
        }
        rc = index_apply(c, &cfg, from, to, NULL);
        if (rc == EXIT_OK) {
            trove_err err = config_save(&cfg);
            rc = err ? cli_error(err) : EXIT_OK;
        }
        if (rc == EXIT_OK)
            printf("renamed collection '%s' to '%s'\n", from, to);
    }
    config_free(&cfg);
    return rc;
}

int cmd_collection(cli *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(collection_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "add") == 0)
        return collection_add(c, argc, argv);
    if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0)
        return collection_list(c, argc, argv);
    if (strcmp(sub, "remove") == 0 || strcmp(sub, "rm") == 0)
        return collection_remove(c, argc, argv);
    if (strcmp(sub, "rename") == 0 || strcmp(sub, "mv") == 0)
        return collection_rename(c, argc, argv);
    return cli_usage("collection", "unknown subcommand '%s'", sub);
}

/* ---- contexts --------------------------------------------------------- */

static const char context_help[] =
    "usage: trove context add TARGET \"description\"\n"
    "       trove context list [--json]\n"
    "       trove context rm TARGET\n"
    "TARGET is a collection name, COLLECTION/path/inside, or a path on disk inside a\n"
    "collection. Descriptions are returned with every result under TARGET.\n"
    "  --json   list: JSON output (docs/cli.md)\n";

/* Turn TARGET into "collection[/relative/path]". Returns NULL if it names
 * neither a collection nor a path inside one. */
static char *resolve_target(const config *cfg, const char *target)
{
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const char *name = cfg->collections[i].name;
        size_t nl = strlen(name);
        if (strncmp(target, name, nl) == 0 && (target[nl] == '\0' || target[nl] == '/'))
            return xstrdup(target);
    }
    char abs[PATH_MAX];
    if (!realpath(target, abs))
        return NULL;
    for (size_t i = 0; i < cfg->n_collections; i++) {
        const char *root = cfg->collections[i].path;
        size_t rl = strlen(root);
        if (strncmp(abs, root, rl) == 0 && (abs[rl] == '\0' || abs[rl] == '/')) {
            size_t len = strlen(cfg->collections[i].name) + strlen(abs + rl) + 1;
            char *out = xmalloc(len);
            snprintf(out, len, "%s%s", cfg->collections[i].name, abs + rl);
            return out;
        }
    }
    return NULL;
}

/* A context for a path that is not there is allowed (it may be created
 * later) but is most often a typo: say so. */
static void warn_missing_target(const config *cfg, const char *target)
{
    size_t nl = strcspn(target, "/");
    char *name = xstrndup(target, nl);
    const config_collection *col = config_find_collection(cfg, name);
    free(name);
    if (!col)
        return;
    size_t len = strlen(col->path) + strlen(target + nl) + 1;
    char *disk = xmalloc(len);
    snprintf(disk, len, "%s%s", col->path, target + nl);
    struct stat sb;
    if (stat(disk, &sb) != 0)
        fprintf(stderr, "trove: warning: %s does not exist (no file or folder %s); the context "
                        "is saved and applies once it does\n", target, disk);
    free(disk);
}

static int context_list(int json)
{
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc != EXIT_OK)
        return rc;
    json_t *root = json ? out_json_root() : NULL, *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < cfg.n_contexts; i++) {
        if (json) {
            json_array_append_new(arr, json_pack("{s:o, s:o}", "target",
                                                 out_json_str(cfg.contexts[i].target), "text",
                                                 out_json_str(cfg.contexts[i].text)));
            continue;
        }
        out_put_path(stdout, cfg.contexts[i].target);
        putchar('\t');
        out_put_line(stdout, cfg.contexts[i].text);
        putchar('\n');
    }
    if (json) {
        json_object_set_new(root, "contexts", arr);
        out_json_print(stdout, root);
    }
    config_free(&cfg);
    return EXIT_OK;
}

int cmd_context(cli *c, int argc, char **argv)
{
    (void)c;
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(context_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    const char *sub = argv[1];
    int list = strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0;
    int add = strcmp(sub, "add") == 0;
    int rm = strcmp(sub, "rm") == 0 || strcmp(sub, "remove") == 0;
    if (!list && !add && !rm)
        return cli_usage("context", "unknown subcommand '%s'", sub);
    int json = 0;
    const char *pos[2];
    size_t n;
    int rc = cli_positionals("context", context_help, argc, argv, 2, list ? &json : NULL, pos,
                             list ? 0 : add ? 2 : 1, &n);
    if (rc >= 0)
        return rc;
    if (list)
        return context_list(json);
    if (n != (add ? 2u : 1u))
        return cli_usage("context", add ? "add needs TARGET and a description"
                                        : "rm needs a TARGET");
    const char *target_arg = pos[0];
    config cfg;
    if ((rc = cli_load_config(&cfg)) != EXIT_OK)
        return rc;
    char *target = resolve_target(&cfg, target_arg);
    if (!target && rm)
        target = xstrdup(target_arg);
    if (!target && access(target_arg, F_OK) != 0 && strchr(target_arg, '/')) {
        fprintf(stderr, "trove: '%s' does not exist; a context for a path not created yet is "
                        "given as COLLECTION/path (see `trove collection list`)\n", target_arg);
        config_free(&cfg);
        return EXIT_ERR;
    }
    if (!target) {
        fprintf(stderr, "trove: '%s' is neither a collection nor a path inside one "
                        "(see `trove collection list`)\n", target_arg);
        config_free(&cfg);
        return EXIT_ERR;
    }
    if (add) {
        warn_missing_target(&cfg, target);
        config_add_context(&cfg, target, pos[1]);
    } else if (!config_remove_context(&cfg, target)) {
        fprintf(stderr, "trove: no context for '%s' (see `trove context list`)\n", target);
        free(target);
        config_free(&cfg);
        return EXIT_ERR;
    }
    trove_err err = config_save(&cfg);
    rc = err ? cli_error(err) : EXIT_OK;
    if (rc == EXIT_OK)
        printf("%s context for %s\n", add ? "set" : "removed", target);
    free(target);
    config_free(&cfg);
    return rc;
}
