/* trove get, multi-get, ls, status: read notes and the index, never write. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "api/api.h"
#include "api/wire.h"
#include "cli/cli.h"
#include "daemon/client.h"
#include "util/mem.h"
#include "cli/out.h"
#include "util/buf.h"

/* Print text line by line, numbered from `first` when asked; a last line
 * without a newline gets one. Invalid UTF-8 is shown as U+FFFD. */
static void print_lines(const char *text, size_t len, long first, int numbers)
{
    const char *p = text, *end = text + len;
    long at = first;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (numbers)
            printf("%6ld  ", at);
        out_put_utf8(stdout, p, n);
        putchar('\n');
        p += n + (nl != NULL);
        at++;
    }
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
            if (!cli_opt_positive(v, &count))
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
    api *a = NULL;
    int rc = EXIT_OK;
    api_note note;
    trove_err err;
    /* A relative on-disk PATH means the same to a daemon as to us. */
    char cwd[4096];
    wire_get_args args = {.ref = target, .cwd = getcwd(cwd, sizeof cwd), .count = count};
    if ((rc = cli_answer(c, &a, WIRE_OP_GET, &args, &note, &err)) != EXIT_OK)
        return rc;
    if (err) {
        rc = cli_error(err);
    } else {
        print_lines(note.text, note.len, note.line_start, numbers);
        api_note_free(&note);
    }
    api_close(a);
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
            if (!cli_opt_positive(v, &max_bytes))
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
    api *a = NULL;
    int rc;
    api_notes notes;
    trove_err err;
    wire_multi_get_args args = {.glob = glob, .max_bytes = max_bytes};
    if ((rc = cli_answer(c, &a, WIRE_OP_MULTI_GET, &args, &notes, &err)) != EXIT_OK)
        return rc;
    if (err) {
        rc = cli_error(err);
        api_close(a);
        return rc;
    }
    json_t *arr = json ? json_array() : NULL;   /* the "notes" of the JSON document */
    for (size_t i = 0; i < notes.n; i++) {
        const api_note *n = &notes.items[i];
        if (json) {
            char docid[16];
            snprintf(docid, sizeof docid, "#%s", n->docid);
            json_t *o = json_object();
            json_object_set_new(o, "collection", out_json_str(n->collection));
            json_object_set_new(o, "path", out_json_str(n->path));
            json_object_set_new(o, "docid", json_string(docid));
            json_object_set_new(o, "title", out_json_str(n->title ? n->title : ""));
            if (n->text)
                json_object_set_new(o, "body", out_json_strn(n->text, n->len));
            else
                json_object_set_new(o, "skipped", out_json_str(n->skipped ? n->skipped : "unreadable"));
            json_array_append_new(arr, o);
            continue;
        }
        fputs("==> ", stdout);
        tbuf name = {0};
        tbuf_printf(&name, "%s/%s", n->collection, n->path);
        out_put_path(stdout, name.data);
        tbuf_free(&name);
        if (n->text) {
            fputs(" <==\n", stdout);
            out_put_utf8(stdout, n->text, n->len);
            fputs(n->len && n->text[n->len - 1] == '\n' ? "\n" : "\n\n", stdout);
        } else {
            printf(" <== skipped: %s\n\n",
                   strcmp(n->skipped, "over --max-bytes") == 0 ? "larger than --max-bytes"
                                                              : n->skipped);
        }
    }
    if (json) {
        json_t *root = out_json_root();
        json_object_set_new(root, "glob", out_json_str(glob));
        json_object_set_new(root, "notes", arr);
        out_json_print(stdout, root);
    }
    if (!notes.n)
        fprintf(stderr, "trove: no indexed note matches %s\n", glob);
    api_notes_free(&notes);
    api_close(a);
    return EXIT_OK;
}

int cmd_ls(cli *c, int argc, char **argv)
{
    const char *target = NULL;
    size_t n_pos;
    int rc = cli_positionals("ls", "usage: trove ls [COLLECTION[/PREFIX]]\n", argc, argv, 1, NULL,
                             &target, 1, &n_pos);
    if (rc >= 0)
        return rc;
    rc = EXIT_OK;
    api *a = NULL;
    api_listing l;
    trove_err err;
    wire_ls_args args = {.target = target};
    if ((rc = cli_answer(c, &a, WIRE_OP_LS, &args, &l, &err)) != EXIT_OK)
        return rc;
    if (err) {
        rc = cli_error(err);
    } else {
        for (size_t i = 0; i < l.n_collections; i++) {
            out_put_line(stdout, l.collections[i].name);
            printf("/\t%lld notes\t", (long long)l.collections[i].n_docs);
            out_put_path(stdout, l.collections[i].root);
            putchar('\n');
        }
        for (size_t i = 0; i < l.n_docs; i++) {
            tbuf loc = {0};
            tbuf_printf(&loc, "%s/%s", l.docs[i].collection, l.docs[i].path);
            printf("#%s  ", l.docs[i].docid);
            out_put_path(stdout, loc.data);
            fputs("  ", stdout);
            out_put_line(stdout, l.docs[i].title ? l.docs[i].title : "");
            putchar('\n');
            tbuf_free(&loc);
        }
        api_listing_free(&l);
    }
    api_close(a);
    return rc;
}

/* The daemon's own lines of `status` (when it answered). */
static void print_daemon(const json_t *d)
{
    const json_t *w = json_object_get(d, "watcher");
    printf("\ndaemon: pid %lld, up %.0f s, %lld requests (%s)\n",
           (long long)json_integer_value(json_object_get(d, "pid")),
           json_number_value(json_object_get(d, "uptime")),
           (long long)json_integer_value(json_object_get(d, "requests")),
           json_string_value(json_object_get(d, "socket")) ? json_string_value(json_object_get(d, "socket")) : "?");
    const char *state = json_string_value(json_object_get(w, "state"));
    printf("watcher: %s", state ? state : "?");
    if (json_integer_value(json_object_get(w, "folders")))
        printf(", %lld folders", (long long)json_integer_value(json_object_get(w, "folders")));
    printf(", %lld pending, %lld updates", (long long)json_integer_value(json_object_get(w, "pending")),
           (long long)json_integer_value(json_object_get(w, "updates")));
    const json_t *last = json_object_get(w, "last_event");
    if (json_is_number(last)) {
        const char *path = json_string_value(json_object_get(w, "last_event_path"));
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        double ago = (double)now.tv_sec + now.tv_nsec / 1e9 - json_number_value(last);
        printf(", last event %.1f s ago (%s)", ago < 0 ? 0 : ago, path ? path : "?");
    }
    putchar('\n');
    const char *problem = json_string_value(json_object_get(w, "problem"));
    if (problem)
        printf("  %s\n", problem);
}

static void print_vec_status(const api_vec_status *v)
{
    if (!v->model)
        printf("embedding model: none (set TROVE_EMBED_MODEL or pass --model)\n");
    else if (v->model_error) {
        fputs("embedding model: ", stdout);
        out_put_line(stdout, v->model_error);
        putchar('\n');
    } else {
        fputs("embedding model: ", stdout);
        out_put_path(stdout, v->model);
        printf(" (%s, %lld dimensions)\n", v->model_arch, (long long)v->model_dim);
    }
    for (size_t i = 0; i < v->n_models; i++) {
        const store_vec_model *m = &v->models[i];
        int active = m->id == v->active_id;
        printf("vectors: %lld of %s (%d dimensions)%s\n", (long long)m->vectors, m->name, m->dim,
               active ? ", active model" : v->model && !v->model_error
               ? ", stale: another model (`trove embed --prune` drops them)" : "");
    }
}

static void print_vec_collection(const api_vec_status *v, const char *name)
{
    for (size_t i = 0; i < v->n_counts; i++) {
        const store_vec_count *c = &v->counts[i];
        if (strcmp(c->collection, name) != 0)
            continue;
        int64_t pending = c->chunks - c->embedded;
        printf("  embeddings: %lld of %lld chunks embedded, %lld pending", (long long)c->embedded,
               (long long)c->chunks, (long long)pending);
        if (c->stale)
            printf(" (%lld with stale vectors of another model)", (long long)c->stale);
        printf("%s\n", pending ? " (run `trove embed`)" : "");
    }
}

/* `status --json`: the status as the daemon protocol encodes it (docs/cli.md). */
static void print_status_json(const api_status *s, json_t *daemon)
{
    json_t *root = out_json_root();
    json_t *body = wire_status(s);
    json_object_update(root, body);
    json_decref(body);
    if (daemon)
        json_object_set(root, "daemon", daemon);
    out_json_print(stdout, root);
}

/* The files `update` skips by design, with the reason: they are neither
 * new nor pending, however often it runs (its warnings name them). */
static void print_skipped(const index_freshness *f, const char *before, const char *after)
{
    size_t n = f->skipped_binary + f->skipped_large + f->skipped_unreadable;
    if (n) {
        printf("%s%zu skipped by `trove update`:", before, n);
        const char *sep = " ";
        if (f->skipped_binary) {
            printf("%s%zu binary", sep, f->skipped_binary);
            sep = ", ";
        }
        if (f->skipped_large) {
            printf("%s%zu over the %u MiB limit", sep, f->skipped_large,
                   INDEX_DEFAULT_MAX_FILE_BYTES >> 20);
            sep = ", ";
        }
        if (f->skipped_unreadable)
            printf("%s%zu unreadable", sep, f->skipped_unreadable);
    }
    fputs(after, stdout);
}

int cmd_status(cli *c, int argc, char **argv)
{
    const char *model_flag = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: trove status [--model PATH] [--json]\nCollections, counts, index size, "
                   "the current snapshot, files new, changed or deleted since the\nlast update, "
                   "and the embeddings of the model (--model, $TROVE_EMBED_MODEL): embedded,\n"
                   "pending, stale. --json: the status as JSON (without the embeddings).\n");
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (cli_opt_value(argc, argv, &i, "--model", &v)) {
            if (!v || !*v)
                return cli_usage("status", "--model needs a path");
            model_flag = v;
        } else
            return cli_usage("status", argv[i][0] == '-' ? "unknown option %s"
                                                        : "unexpected argument '%s'", argv[i]);
    }
    /* Counts and freshness cold (they are cheap, and the embedding state
     * needs the model); a running daemon adds its own and its watcher's. */
    json_t *daemon = NULL;
    dcl *d = cli_daemon(c);
    if (d) {
        api_status ds;
        if (dcl_status(d, &ds, &daemon) == TROVE_OK)
            api_status_free(&ds);
        dcl_answered(d);
    }
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    api_status s;
    api_vec_status vs = {0};
    const char *model = cli_model_path(model_flag), *model_msg;
    int model_bad = cli_model_error(&model_msg) != TROVE_OK;
    trove_err err = api_status_get(a, &s);
    if (!err && (err = api_vec_status_get(a, model, &vs)) != TROVE_OK)
        api_status_free(&s);
    if (!err && model_bad) {
        /* a model is set but does not resolve: say why, in its line */
        vs.model = xstrdup(model_msg);
        vs.model_error = xstrdup(model_msg);
    }
    api_close(a);
    if (err) {
        json_decref(daemon);
        return cli_error(err);
    }
    if (json) {
        print_status_json(&s, daemon);
        json_decref(daemon);
        api_status_free(&s);
        api_vec_status_free(&vs);
        return EXIT_OK;
    }
    fputs("config: ", stdout);
    out_put_path(stdout, s.config_file);
    fputs("\nindex:  ", stdout);
    out_put_path(stdout, s.index_path);
    if (!s.index_exists) {
        printf(" (not created yet: run `trove update`)\n");
    } else {
        printf(" (%.1f MiB)\n", (double)s.index_bytes / (1024.0 * 1024.0));
        if (s.last_update) {
            char when[64];
            time_t t = (time_t)s.last_update;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
            printf("last update: %s\n", when);
        }
        if (s.snapshot.id) {
            char when[64];
            time_t t = (time_t)s.snapshot.created_at;
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
            printf("snapshot: %lld of %s (%s; `trove snapshot list`)\n", (long long)s.snapshot.id,
                   when, s.snapshot.kind);
        }
        printf("notes: %lld  chunks: %lld  links: %lld (%lld dangling, %lld to other files)\n",
               (long long)s.counts.docs, (long long)s.counts.chunks, (long long)s.counts.links,
               (long long)s.counts.dangling, (long long)s.counts.to_files);
        print_vec_status(&vs);
    }
    if (s.n_collections == 0)
        printf("no collections; add one with `trove collection add PATH`\n");
    for (size_t i = 0; i < s.n_collections; i++) {
        const api_status_collection *sc = &s.collections[i];
        putchar('\n');
        out_put_line(stdout, sc->name);
        fputs("  ", stdout);
        out_put_path(stdout, sc->path);
        printf("\n  notes indexed: %lld\n", (long long)sc->notes);
        print_vec_collection(&vs, sc->name);
        if (sc->problem) {
            fputs("  warning: ", stdout);
            out_put_line(stdout, sc->problem);
            putchar('\n');
        } else if (!sc->fresh_known) {
            continue;
        } else if (sc->fresh.added || sc->fresh.changed || sc->fresh.deleted) {
            printf("  since last update: %zu new, %zu changed, %zu deleted (run `trove update`)",
                   sc->fresh.added, sc->fresh.changed, sc->fresh.deleted);
            print_skipped(&sc->fresh, "; ", "\n");
        } else {
            printf("  up to date (%zu files", sc->fresh.files);
            print_skipped(&sc->fresh, "; ", ")\n");
        }
    }
    if (daemon)
        print_daemon(daemon);
    json_decref(daemon);
    api_status_free(&s);
    api_vec_status_free(&vs);
    return EXIT_OK;
}
