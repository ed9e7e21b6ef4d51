/* trove get, multi-get, ls, status: read notes and the index, never write. */
#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "fs/walk.h"
#include "index/indexer.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"

/* A note located on disk: collection root and path relative to it. */
typedef struct located {
    char *collection;
    char *root;
    char *rel;
} located;

static void located_free(located *l)
{
    free(l->collection);
    free(l->root);
    free(l->rel);
    memset(l, 0, sizeof *l);
}

static int lookup_docid(store *st, const char *prefix, located *out)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(store_db(st), "SELECT c.name, c.root, d.path FROM docs d JOIN collections c"
                           " ON c.id = d.collection_id WHERE substr(d.docid, 1, length(?1)) = ?1"
                           " LIMIT 5", -1, &s, NULL) != SQLITE_OK)
        return cli_error(store_fail(st, "looking up docid"));
    sqlite3_bind_text(s, 1, prefix, -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (n++ == 0) {
            out->collection = xstrdup((const char *)sqlite3_column_text(s, 0));
            out->root = xstrdup((const char *)sqlite3_column_text(s, 1));
            out->rel = xstrdup((const char *)sqlite3_column_text(s, 2));
        } else {
            if (n == 2)
                fprintf(stderr, "trove: docid #%s is ambiguous: %s/%s", prefix, out->collection, out->rel);
            fprintf(stderr, ", %s/%s", sqlite3_column_text(s, 0), sqlite3_column_text(s, 2));
        }
    }
    sqlite3_finalize(s);
    if (n == 0) {
        fprintf(stderr, "trove: no note with docid #%s (ids are shown by `trove search`)\n", prefix);
        return EXIT_ERR;
    }
    if (n > 1) {
        fprintf(stderr, "; give more digits\n");
        located_free(out);
        return EXIT_ERR;
    }
    return EXIT_OK;
}

/* The unique indexed note whose path (inside any collection) is `rel`. */
static int lookup_indexed_path(store *st, const char *rel, located *out)
{
    sqlite3_stmt *s;
    if (!st || sqlite3_prepare_v2(store_db(st), "SELECT c.name, c.root, d.path FROM docs d JOIN"
                                  " collections c ON c.id = d.collection_id WHERE d.path = ? LIMIT 2",
                                  -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, rel, -1, SQLITE_STATIC);
    int n = 0;
    while (sqlite3_step(s) == SQLITE_ROW && n < 2) {
        if (n++ == 0) {
            out->collection = xstrdup((const char *)sqlite3_column_text(s, 0));
            out->root = xstrdup((const char *)sqlite3_column_text(s, 1));
            out->rel = xstrdup((const char *)sqlite3_column_text(s, 2));
        }
    }
    sqlite3_finalize(s);
    if (n != 1)
        located_free(out);
    return n == 1;
}

/* Resolve PATH as "collection/relative", an indexed relative path, or a
 * path on disk inside a collection; then refuse anything whose real path is
 * outside its collection's folder (../, symlinks out). */
static int locate(const config *cfg, store *st, const char *arg, located *out)
{
    memset(out, 0, sizeof *out);
    if (arg[0] == '#') {
        if (strlen(arg + 1) < 4) {
            fprintf(stderr, "trove: '%s': give at least 4 hex digits of a docid\n", arg);
            return EXIT_ERR;
        }
        if (!st) {
            fprintf(stderr, "trove: no index yet; run `trove update` first\n");
            return EXIT_ERR;
        }
        return lookup_docid(st, arg + 1, out);
    }
    for (size_t i = 0; i < cfg->n_collections && !out->root; i++) {
        const config_collection *col = &cfg->collections[i];
        size_t nl = strlen(col->name);
        if (strncmp(arg, col->name, nl) == 0 && arg[nl] == '/') {
            out->collection = xstrdup(col->name);
            out->root = xstrdup(col->path);
            out->rel = xstrdup(arg + nl + 1);
        }
    }
    if (!out->root && !lookup_indexed_path(st, arg, out)) {
        char abs[PATH_MAX];
        if (realpath(arg, abs)) {
            for (size_t i = 0; i < cfg->n_collections && !out->root; i++) {
                const config_collection *col = &cfg->collections[i];
                size_t rl = strlen(col->path);
                if (strncmp(abs, col->path, rl) == 0 && abs[rl] == '/') {
                    out->collection = xstrdup(col->name);
                    out->root = xstrdup(col->path);
                    out->rel = xstrdup(abs + rl + 1);
                }
            }
        }
    }
    if (!out->root) {
        fprintf(stderr, "trove: %s: not found in any collection (use COLLECTION/PATH, a path "
                        "inside a collection folder, or #DOCID)\n", arg);
        return EXIT_ERR;
    }
    tbuf full = {0};
    tbuf_printf(&full, "%s/%s", out->root, out->rel);
    char real[PATH_MAX], root_real[PATH_MAX];
    int rc = EXIT_OK;
    struct stat sb;
    if (!realpath(full.data, real)) {
        fprintf(stderr, "trove: %s: no such file\n", full.data);
        rc = EXIT_ERR;
    } else if (stat(real, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "trove: %s: not a file (use `trove ls %s` for a folder)\n", full.data, arg);
        rc = EXIT_ERR;
    } else if (!realpath(out->root, root_real) ||
               strncmp(real, root_real, strlen(root_real)) != 0 || real[strlen(root_real)] != '/') {
        fprintf(stderr, "trove: %s: refused, the path leads outside collection '%s'\n", arg,
                out->collection);
        rc = EXIT_ERR;
    }
    tbuf_free(&full);
    if (rc)
        located_free(out);
    return rc;
}

static int open_store_if_any(cli *c, store **st)
{
    *st = NULL;
    struct stat sb;
    if (stat(c->index_path, &sb) != 0)
        return EXIT_OK;
    return cli_open_store(c, 1, st);
}

/* Split "path:LINE" (LINE all digits) in place. */
static long split_line(char *arg)
{
    char *colon = strrchr(arg, ':');
    if (!colon || !colon[1])
        return 0;
    for (const char *p = colon + 1; *p; p++)
        if (!isdigit((unsigned char)*p))
            return 0;
    *colon = '\0';
    return strtol(colon + 1, NULL, 10);
}

int cmd_get(cli *c, int argc, char **argv)
{
    const char *target = NULL;
    long count = 100;
    int numbers = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove get PATH[:LINE] | '#DOCID' [-l N] [--line-numbers]\n"
                   "Print N lines (default 100) of a note from disk, starting at LINE.\n");
            return EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "-l", &v) || cli_opt_value(argc, argv, &i, "--lines", &v)) {
            char *end;
            count = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || count < 1)
                return cli_usage("get", "-l needs a positive number of lines");
        } else if (strcmp(argv[i], "--line-numbers") == 0) {
            numbers = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage("get", "unknown option %s", argv[i]);
        } else if (!target) {
            target = argv[i];
        } else {
            return cli_usage("get", "takes one PATH");
        }
    }
    if (!target)
        return cli_usage("get", "needs a PATH or #DOCID");
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    store *st;
    if ((rc = open_store_if_any(c, &st)) != EXIT_OK) {
        config_free(&cfg);
        return rc;
    }
    char *arg = xstrdup(target);
    long line = split_line(arg);
    if (line < 1)
        line = 1;
    located loc;
    rc = locate(&cfg, st, arg, &loc);
    if (rc == EXIT_OK) {
        tbuf full = {0};
        tbuf_printf(&full, "%s/%s", loc.root, loc.rel);
        FILE *f = fopen(full.data, "rb");
        if (!f) {
            fprintf(stderr, "trove: %s: cannot read\n", full.data);
            rc = EXIT_ERR;
        } else {
            char *lbuf = NULL;
            size_t lcap = 0;
            ssize_t n;
            long at = 0;
            while ((n = getline(&lbuf, &lcap, f)) >= 0 && at < line - 1 + count) {
                if (++at < line)
                    continue;
                if (numbers)
                    printf("%6ld  ", at);
                out_put_utf8(stdout, lbuf, (size_t)n);
                if (n == 0 || lbuf[n - 1] != '\n')
                    putchar('\n');
            }
            free(lbuf);
            fclose(f);
        }
        tbuf_free(&full);
        located_free(&loc);
    }
    free(arg);
    store_close(st);
    config_free(&cfg);
    return rc;
}

int cmd_multi_get(cli *c, int argc, char **argv)
{
    const char *glob = NULL;
    long max_bytes = 20480;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove multi-get GLOB [--max-bytes N] [--json]\n"
                   "Print every indexed note whose COLLECTION/PATH or PATH matches GLOB;\n"
                   "notes over N bytes (default 20480) are listed but not printed.\n");
            return EXIT_OK;
        }
        if (cli_opt_value(argc, argv, &i, "--max-bytes", &v)) {
            char *end;
            max_bytes = v ? strtol(v, &end, 10) : 0;
            if (!v || *end || max_bytes < 1)
                return cli_usage("multi-get", "--max-bytes needs a positive number");
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage("multi-get", "unknown option %s", argv[i]);
        } else if (!glob) {
            glob = argv[i];
        } else {
            return cli_usage("multi-get", "takes one GLOB (quote it)");
        }
    }
    if (!glob)
        return cli_usage("multi-get", "needs a GLOB");
    store *st;
    int rc = cli_open_store(c, 1, &st);
    if (rc)
        return rc;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(store_db(st), "SELECT c.name, c.root, d.path, d.docid, d.title FROM docs d"
                           " JOIN collections c ON c.id = d.collection_id ORDER BY c.name, d.path",
                           -1, &s, NULL) != SQLITE_OK) {
        rc = cli_error(store_fail(st, "listing notes"));
        store_close(st);
        return rc;
    }
    json_t *arr = json ? json_array() : NULL;   /* the "notes" of the JSON document */
    size_t matched = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *coll = (const char *)sqlite3_column_text(s, 0);
        const char *root = (const char *)sqlite3_column_text(s, 1);
        const char *path = (const char *)sqlite3_column_text(s, 2);
        tbuf name = {0}, full = {0};
        tbuf_printf(&name, "%s/%s", coll, path);
        if (!glob_match(glob, name.data) && !glob_match(glob, path)) {
            tbuf_free(&name);
            continue;
        }
        matched++;
        tbuf_printf(&full, "%s/%s", root, path);
        struct stat sb;
        int have_stat = stat(full.data, &sb) == 0;
        int too_big = have_stat && sb.st_size > max_bytes;
        size_t len = 0;
        char *text = NULL;
        if (!too_big)
            fs_read_file(full.data, have_stat ? (size_t)sb.st_size : 0, &text, &len);
        if (json) {
            char docid[16];
            snprintf(docid, sizeof docid, "#%s", (const char *)sqlite3_column_text(s, 3));
            json_t *o = json_object();
            json_object_set_new(o, "collection", out_json_str(coll));
            json_object_set_new(o, "path", out_json_str(path));
            json_object_set_new(o, "docid", json_string(docid));
            json_object_set_new(o, "title", out_json_str((const char *)sqlite3_column_text(s, 4)));
            if (text)
                json_object_set_new(o, "body", out_json_strn(text, len));
            else
                json_object_set_new(o, "skipped", json_string(too_big ? "over --max-bytes" : "unreadable"));
            json_array_append_new(arr, o);
        } else {
            fputs("==> ", stdout);
            out_put_path(stdout, name.data);
            if (text) {
                fputs(" <==\n", stdout);
                out_put_utf8(stdout, text, len);
                fputs(len && text[len - 1] == '\n' ? "\n" : "\n\n", stdout);
            } else {
                printf(" <== skipped: %s\n\n", too_big ? "larger than --max-bytes" : "cannot read the file");
            }
        }
        free(text);
        tbuf_free(&name);
        tbuf_free(&full);
    }
    sqlite3_finalize(s);
    if (json) {
        json_t *root = out_json_root();
        json_object_set_new(root, "glob", out_json_str(glob));
        json_object_set_new(root, "notes", arr);
        out_json_print(stdout, root);
    }
    if (!matched)
        fprintf(stderr, "trove: no indexed note matches %s\n", glob);
    store_close(st);
    return EXIT_OK;
}

int cmd_ls(cli *c, int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            printf("usage: trove ls [COLLECTION[/PREFIX]]\n");
            return EXIT_OK;
        }
        return cli_usage("ls", "takes at most one COLLECTION[/PREFIX]");
    }
    store *st;
    int rc = cli_open_store(c, 1, &st);
    if (rc)
        return rc;
    sqlite3_stmt *s;
    if (argc == 1) {
        sqlite3_prepare_v2(store_db(st), "SELECT c.name, c.root, count(d.id) FROM collections c"
                           " LEFT JOIN docs d ON d.collection_id = c.id GROUP BY c.id ORDER BY c.name",
                           -1, &s, NULL);
        while (sqlite3_step(s) == SQLITE_ROW) {
            out_put_line(stdout, (const char *)sqlite3_column_text(s, 0));
            printf("/\t%lld notes\t", (long long)sqlite3_column_int64(s, 2));
            out_put_path(stdout, (const char *)sqlite3_column_text(s, 1));
            putchar('\n');
        }
        sqlite3_finalize(s);
        store_close(st);
        return EXIT_OK;
    }
    char *arg = xstrdup(argv[1]);
    char *slash = strchr(arg, '/');
    tbuf prefix_buf = {0};
    if (slash) {
        *slash = '\0';
        tbuf_puts(&prefix_buf, slash + 1);
        while (prefix_buf.len && prefix_buf.data[prefix_buf.len - 1] == '/')
            prefix_buf.data[--prefix_buf.len] = '\0';
        if (prefix_buf.len)
            tbuf_putc(&prefix_buf, '/');   /* a folder: match at a segment boundary */
    }
    const char *prefix = tbuf_cstr(&prefix_buf);
    sqlite3_prepare_v2(store_db(st), "SELECT d.docid, d.path, d.title, c.id FROM collections c"
                       " LEFT JOIN docs d ON d.collection_id = c.id AND substr(d.path, 1, length(?2)) = ?2"
                       " WHERE c.name = ?1 ORDER BY d.path", -1, &s, NULL);
    sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, prefix, -1, SQLITE_STATIC);
    int found_collection = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        found_collection = 1;
        if (sqlite3_column_type(s, 0) != SQLITE_NULL) {
            tbuf loc = {0};
            tbuf_printf(&loc, "%s/%s", arg, sqlite3_column_text(s, 1));
            printf("#%s  ", sqlite3_column_text(s, 0));
            out_put_path(stdout, loc.data);
            fputs("  ", stdout);
            out_put_line(stdout, (const char *)sqlite3_column_text(s, 2));
            putchar('\n');
            tbuf_free(&loc);
        }
    }
    sqlite3_finalize(s);
    if (!found_collection) {
        fprintf(stderr, "trove: no collection named '%s' in the index (see `trove ls`)\n", arg);
        rc = EXIT_ERR;
    }
    free(arg);
    tbuf_free(&prefix_buf);
    store_close(st);
    return rc;
}

#define LINK_TO_FILE                                                                        \
    "lower(target) NOT LIKE '%.md' AND instr(replace(target, rtrim(target,"                 \
    " replace(target, '/', '')), ''), '.') > 0"

static long long query_int(store *st, const char *sql, const char *arg)
{
    sqlite3_stmt *s;
    long long v = 0;
    if (sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL) == SQLITE_OK) {
        if (arg)
            sqlite3_bind_text(s, 1, arg, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    return v;
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
}

int cmd_status(cli *c, int argc, char **argv)
{
    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: trove status\nCollections, counts, index size, and files new, changed "
                   "or deleted since the last update.\n");
            return EXIT_OK;
        }
        return cli_usage("status", "takes no arguments");
    }
    config cfg;
    int rc = cli_load_config(&cfg);
    if (rc)
        return rc;
    fputs("config: ", stdout);
    out_put_path(stdout, cfg.file);
    fputs("\nindex:  ", stdout);
    out_put_path(stdout, c->index_path);
    store *st = NULL;
    struct stat sb;
    if (stat(c->index_path, &sb) != 0) {
        printf(" (not created yet: run `trove update`)\n");
    } else if ((rc = cli_open_store(c, 1, &st)) != EXIT_OK) {
        config_free(&cfg);
        return rc;
    } else {
        tbuf wal = {0};
        tbuf_printf(&wal, "%s-wal", c->index_path);
        long long bytes = file_size(c->index_path) + file_size(wal.data);
        tbuf_free(&wal);
        printf(" (%.1f MiB)\n", (double)bytes / (1024.0 * 1024.0));
        long long last = query_int(st, "SELECT value FROM meta WHERE key = 'last_update'", NULL);
        if (last) {
            char when[64];
            time_t t = (time_t)last;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
            printf("last update: %s\n", when);
        }
        /* Embeds of images and other files never resolve to a note; count
         * them apart so dangling note links stand out. A target whose last
         * segment has an extension other than .md is such a file. */
        printf("notes: %lld  chunks: %lld  links: %lld (%lld dangling, %lld to other files)\n",
               query_int(st, "SELECT count(*) FROM docs", NULL),
               query_int(st, "SELECT count(*) FROM chunks", NULL),
               query_int(st, "SELECT count(*) FROM links", NULL),
               query_int(st, "SELECT count(*) FROM links WHERE dst_doc IS NULL AND NOT"
                             " (" LINK_TO_FILE ")", NULL),
               query_int(st, "SELECT count(*) FROM links WHERE dst_doc IS NULL AND"
                             " (" LINK_TO_FILE ")", NULL));
    }
    if (cfg.n_collections == 0)
        printf("no collections; add one with `trove collection add PATH`\n");
    int stale = 0;
    for (size_t i = 0; i < cfg.n_collections; i++) {
        const config_collection *col = &cfg.collections[i];
        long long notes = st ? query_int(st, "SELECT count(*) FROM docs d JOIN collections c ON"
                                             " c.id = d.collection_id WHERE c.name = ?", col->name) : 0;
        putchar('\n');
        out_put_line(stdout, col->name);
        fputs("  ", stdout);
        out_put_path(stdout, col->path);
        printf("\n  notes indexed: %lld\n", notes);
        if (!st)
            continue;
        index_freshness fr;
        trove_err err = index_check_freshness(st, col, &fr);
        if (err) {
            fputs("  warning: ", stdout);
            out_put_line(stdout, trove_errmsg());
            putchar('\n');
            continue;
        }
        if (fr.added || fr.changed || fr.deleted) {
            stale = 1;
            printf("  since last update: %zu new, %zu changed, %zu deleted (run `trove update`)\n",
                   fr.added, fr.changed, fr.deleted);
        } else {
            printf("  up to date (%zu files)\n", fr.files);
        }
    }
    (void)stale;
    store_close(st);
    config_free(&cfg);
    return EXIT_OK;
}
