/* trove snapshot list [--json] [-n N] | rollback ID [--json]: the index's
 * numbered snapshots (one per committed change of notes) and making an
 * older one current again. Parsing and rendering only; the work is
 * api_snapshot_list / api_snapshot_rollback. */
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "util/str.h"

static const char usage_text[] =
    "usage: trove snapshot list [--json] [-n N]\n"
    "       trove snapshot rollback ID [--json]\n"
    "Every `update` (and watcher batch, `collection remove|rename`, rollback) that\n"
    "changes notes commits a numbered snapshot of the index. Kept by default\n"
    "(config.yaml `snapshots:`): every one of the last hour, the newest of each\n"
    "hour for a day, of each day for 30 days, and always the newest 5; the others\n"
    "are merged into the next kept one.\n"
    "  list          the kept snapshots, newest first; * marks the current one\n"
    "  rollback ID   make snapshot ID current again, atomically, as a new snapshot\n"
    "                (itself undoable); `trove update` then brings the index forward\n"
    "                to the files on disk\n"
    "options:\n"
    "  --json        JSON output (docs/cli.md)\n"
    "  -n N          list at most N snapshots\n";

static void local_time(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S", localtime(&tt));
}

static json_t *snapshot_json(const store_snapshot *s, int64_t current)
{
    char when[32];
    time_t t = (time_t)s->created_at;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:I, s:b, s:s, s:I, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                     "id", (json_int_t)s->id, "current", s->id == current, "time", when,
                     "created_at", (json_int_t)s->created_at, "kind", s->kind, "note",
                     out_json_str(s->note ? s->note : ""), "notes", (json_int_t)s->docs, "chunks",
                     (json_int_t)s->chunks, "links", (json_int_t)s->links, "added",
                     (json_int_t)s->added, "removed", (json_int_t)s->removed, "modified",
                     (json_int_t)s->modified, "changed",
                     (json_int_t)(s->added + s->removed + s->modified));
}

/* "24 hours", "1 day": the larger unit that fits. */
static void put_duration(int64_t secs)
{
    static const struct { int64_t s; const char *unit; } units[] = {
        {86400, "day"}, {3600, "hour"}, {60, "minute"}, {1, "second"},
    };
    size_t i = 0;
    while (i + 1 < sizeof units / sizeof *units && secs < units[i].s)
        i++;
    int64_t v = secs / units[i].s;
    printf("%lld %s%s", (long long)v, units[i].unit, v == 1 ? "" : "s");
}

/* The time the listed snapshots cover, and the rule that keeps them. */
static void print_span(const api_snapshots *l)
{
    char from[32], to[32];
    local_time(l->items[l->n - 1].created_at, from, sizeof from);
    local_time(l->items[0].created_at, to, sizeof to);
    printf("%zu snapshot%s covering %s to %s (", l->n, l->n == 1 ? "" : "s", from, to);
    put_duration(l->items[0].created_at - l->items[l->n - 1].created_at);
    printf(")\nkept: ");
    const store_retention *k = &l->keep;
    if (k->minutes)
        printf("every one of the last %d minute%s, ", k->minutes, k->minutes == 1 ? "" : "s");
    if (k->hourly)
        printf("the newest of each hour for %d hour%s, ", k->hourly, k->hourly == 1 ? "" : "s");
    if (k->daily)
        printf("of each day for %d day%s, ", k->daily, k->daily == 1 ? "" : "s");
    printf("%sthe newest %d (config.yaml `snapshots:`%s)\n",
           k->minutes || k->hourly || k->daily ? "and always " : "", k->last,
           l->keep_count_form ? ", the older form `snapshots: N`" : "");
}

static int snapshot_list(cli *c, int json, size_t limit)
{
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    api_snapshots l;
    trove_err err = api_snapshot_list(a, limit, &l);
    api_close(a);
    if (err)
        return cli_error(err);
    if (json) {
        json_t *root = out_json_root();
        json_t *arr = json_array();
        for (size_t i = 0; i < l.n; i++)
            json_array_append_new(arr, snapshot_json(&l.items[i], l.current));
        json_object_set_new(root, "current", json_integer(l.current));
        json_object_set_new(root, "keep", json_pack("{s:i, s:i, s:i, s:i}", "last", l.keep.last,
                                                    "minutes", l.keep.minutes, "hourly",
                                                    l.keep.hourly, "daily", l.keep.daily));
        if (l.n) {
            json_object_set_new(root, "oldest", json_integer(l.items[l.n - 1].created_at));
            json_object_set_new(root, "newest", json_integer(l.items[0].created_at));
        }
        json_object_set_new(root, "snapshots", arr);
        out_json_print(stdout, root);
    } else if (l.n == 0) {
        printf("no snapshots yet: run `trove update`\n");
    } else {
        printf("   ID  TIME                 KIND         NOTES  CHUNKS  CHANGED NOTES\n");
        for (size_t i = 0; i < l.n; i++) {
            const store_snapshot *s = &l.items[i];
            char when[32];
            local_time(s->created_at, when, sizeof when);
            printf("%c%4lld  %s  %-10s %7lld %7lld  +%lld -%lld ~%lld", s->id == l.current ? '*' : ' ',
                   (long long)s->id, when, s->kind, (long long)s->docs, (long long)s->chunks,
                   (long long)s->added, (long long)s->removed, (long long)s->modified);
            if (s->note && *s->note) {
                fputs("  ", stdout);
                out_put_line(stdout, s->note);
            }
            putchar('\n');
        }
        printf("(+ added, - removed, ~ modified: against the row below)\n");
        print_span(&l);
    }
    api_snapshots_free(&l);
    return EXIT_OK;
}

/* After a rollback: do the files on disk differ from the index now? */
static int files_differ(cli *c)
{
    api *a;
    if (api_open(c->index_path, &a) != TROVE_OK)
        return 0;
    api_status s;
    int differ = 0;
    if (api_status_get(a, &s) == TROVE_OK) {
        for (size_t i = 0; i < s.n_collections; i++) {
            const index_freshness *f = &s.collections[i].fresh;
            differ |= s.collections[i].fresh_known && (f->added || f->changed || f->deleted);
        }
        api_status_free(&s);
    }
    api_close(a);
    return differ;
}

static int snapshot_rollback(cli *c, const char *arg, int json)
{
    long id;
    if (!str_to_long(arg, 1, INT64_MAX > LONG_MAX ? LONG_MAX : (long)INT64_MAX, &id))
        return cli_usage("snapshot", "'%s' is not a snapshot id (see `trove snapshot list`)", arg);
    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    api_rollback r;
    trove_err err = api_snapshot_rollback(a, id, &r);
    api_close(a);
    if (err)
        return cli_error(err);
    int differ = r.noop ? 0 : files_differ(c);
    if (json) {
        json_t *root = out_json_root();
        json_object_set_new(root, "from", json_integer(r.from));
        json_object_set_new(root, "to", json_integer(id));
        json_object_set_new(root, "noop", json_boolean(r.noop));
        json_object_set_new(root, "snapshot", snapshot_json(&r.made, r.made.id));
        json_object_set_new(root, "files_differ", json_boolean(differ));
        json_t *back = json_array();
        for (size_t i = 0; i < r.n_restored; i++)
            json_array_append_new(back, out_json_str(r.restored[i]));
        json_object_set_new(root, "restored_collections", back);
        out_json_print(stdout, root);
    } else if (r.noop) {
        printf("snapshot %ld is already the current one; nothing changed\n", id);
    } else {
        printf("rolled back from snapshot %lld to %ld, committed as snapshot %lld\n",
               (long long)r.from, id, (long long)r.made.id);
        printf("notes: %lld restored, %lld removed, %lld reverted; now %lld notes, %lld chunks\n",
               (long long)r.made.added, (long long)r.made.removed, (long long)r.made.modified,
               (long long)r.made.docs, (long long)r.made.chunks);
        for (size_t i = 0; i < r.n_restored; i++) {
            fputs("collection '", stdout);
            out_put_line(stdout, r.restored[i]);
            printf("' is back in config.yaml%s\n", r.restored_settings[i] ? "" :
                   " (its masks were not recorded: every .md file; edit config.yaml if it had "
                   "others)");
        }
        if (differ)
            printf("the files on disk differ from it: run `trove update` to bring it forward to "
                   "the files on disk\n");
    }
    api_rollback_free(&r);
    return EXIT_OK;
}

int cmd_snapshot(cli *c, int argc, char **argv)
{
    int json = 0;
    long limit = 0;
    const char *sub = NULL, *arg = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (cli_opt_value(argc, argv, &i, "-n", &v)) {
            if (!v || !cli_opt_positive(v, &limit))
                return cli_usage("snapshot", "-n needs a number >= 1");
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage("snapshot", "unknown option %s", argv[i]);
        } else if (!sub) {
            sub = argv[i];
        } else if (!arg) {
            arg = argv[i];
        } else {
            return cli_usage("snapshot", "unexpected argument %s", argv[i]);
        }
    }
    if (!sub)
        return cli_usage("snapshot", "list or rollback ID");
    if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0) {
        if (arg)
            return cli_usage("snapshot", "list takes no argument");
        return snapshot_list(c, json, (size_t)limit);
    }
    if (strcmp(sub, "rollback") == 0) {
        if (!arg)
            return cli_usage("snapshot", "rollback needs a snapshot ID (see `trove snapshot list`)");
        if (limit)
            return cli_usage("snapshot", "-n is for list");
        return snapshot_rollback(c, arg, json);
    }
    return cli_usage("snapshot", "unknown subcommand '%s' (list, rollback)", sub);
}
