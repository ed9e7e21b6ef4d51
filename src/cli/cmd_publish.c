/* trove publish opensearch URL [--index NAME] [--dry-run DIR] [--full]
 * [--batch-size N] [--json]: the index as OpenSearch documents, sent
 * incrementally (docs/scaling.md). Parsing and rendering only; the work is
 * api_publish. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "util/str.h"

static const char usage_text[] =
    "usage: trove publish opensearch URL [--index NAME] [--dry-run DIR] [--full]\n"
    "                                    [--batch-size N] [--json]\n"
    "Publish the index to an OpenSearch cluster: one document per chunk with its\n"
    "note's fields, the text, trove's terms and the vector (knn_vector, cosine,\n"
    "HNSW), a hybrid search pipeline, and `_bulk` requests with retries. The first\n"
    "publish sends everything; the next ones only what the snapshots since changed\n"
    "(docs/scaling.md). URL: http(s)://[user:password@]host:port\n"
    "options:\n"
    "  --index NAME      the OpenSearch index (default trove; lower case)\n"
    "  --dry-run DIR     write the mapping, pipeline and NDJSON bodies to DIR;\n"
    "                    send and record nothing (URL may then be left out)\n"
    "  --full            send everything, then delete what this publish did not send\n"
    "  --batch-size N    actions per `_bulk` request at most (default 500; each\n"
    "                    request also stays under 5 MB)\n"
    "  --json            a JSON summary (docs/cli.md)\n"
    "environment: TROVE_PUBLISH_TIMEOUT (seconds per request, default 60),\n"
    "  TROVE_PUBLISH_BACKOFF_MS (first retry wait, default 500)\n";

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void print_json(const api_publish_result *r, int dry)
{
    json_t *root = out_json_root();
    json_object_set_new(root, dry ? "dir" : "url", out_json_str(r->url));
    json_object_set_new(root, "index", out_json_str(r->index));
    json_object_set_new(root, "dry_run", json_boolean(dry));
    json_object_set_new(root, "full", json_boolean(r->full));
    json_object_set_new(root, "why_full", r->why_full ? json_string(r->why_full) : json_null());
    json_object_set_new(root, "from_snapshot", json_integer(r->from));
    json_object_set_new(root, "snapshot", json_integer(r->to));
    json_object_set_new(root, "created", json_boolean(r->created));
    json_object_set_new(root, "dim", json_integer(r->dim));
    json_object_set_new(root, "model", r->model ? out_json_str(r->model) : json_null());
    json_object_set_new(root, "notes", json_integer((json_int_t)r->notes));
    json_object_set_new(root, "upserts", json_integer((json_int_t)r->upserts));
    json_object_set_new(root, "deletes", json_integer((json_int_t)r->deletes));
    json_object_set_new(root, "batches", json_integer((json_int_t)r->batches));
    json_object_set_new(root, "retried", json_integer((json_int_t)r->retried));
    json_object_set_new(root, "no_vector", json_integer((json_int_t)r->no_vector));
    out_json_print(stdout, root);
}

static void print_text(const api_publish_result *r, int dry)
{
    if (r->full)
        printf("%s everything (%s): ", dry ? "would publish" : "published", r->why_full);
    else
        printf("%s the changes of snapshots %lld..%lld: ", dry ? "would publish" : "published",
               (long long)r->from + 1, (long long)r->to);
    printf("%zu chunk%s of %zu note%s, %zu delete%s in %zu request%s", r->upserts,
           r->upserts == 1 ? "" : "s", r->notes, r->notes == 1 ? "" : "s", r->deletes,
           r->deletes == 1 ? "" : "s", r->batches, r->batches == 1 ? "" : "s");
    if (r->retried)
        printf(" (%zu sent again)", r->retried);
    printf("\n%s %s, index %s, snapshot %lld; ", dry ? "written to" : "to", r->url, r->index,
           (long long)r->to);
    if (r->dim)
        printf("vectors: %d-d of %s\n", r->dim, r->model ? r->model : "?");
    if (r->no_vector)
        printf("%zu chunk%s had no vector yet: after `trove embed` the next publish sends "
               "everything again\n", r->no_vector, r->no_vector == 1 ? "" : "s");
    else
        printf("no vectors (run `trove embed` to publish them)\n");
}

int cmd_publish(cli *c, int argc, char **argv)
{
    api_publish_opts o = {.retries = -1};
    int json = 0;
    const char *pos[2];
    size_t n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            json = 1;
        } else if (strcmp(arg, "--full") == 0) {
            o.full = 1;
        } else if (cli_opt_value(argc, argv, &i, "--index", &v)) {
            if (!v || !*v)
                return cli_usage("publish", "--index needs a name");
            o.index = v;
        } else if (cli_opt_value(argc, argv, &i, "--dry-run", &v)) {
            if (!v || !*v)
                return cli_usage("publish", "--dry-run needs a folder");
            o.dry_run = v;
        } else if (cli_opt_value(argc, argv, &i, "--batch-size", &v)) {
            long n;
            if (!v || !str_to_long(v, 1, 100000, &n))
                return cli_usage("publish", "--batch-size needs a whole number 1..100000");
            o.batch_actions = (size_t)n;
        } else if (arg[0] == '-' && arg[1]) {
            return cli_usage("publish", "unknown option %s", arg);
        } else if (n_pos < 2) {
            pos[n_pos++] = arg;
        } else {
            return cli_usage("publish", "unexpected argument '%s'", arg);
        }
    }
    if (n_pos == 0)
        return cli_usage("publish", "which service? `trove publish opensearch URL`");
    if (strcmp(pos[0], "opensearch") != 0)
        return cli_usage("publish", "unknown target '%s' (trove publishes to opensearch)", pos[0]);
    if (n_pos < 2 && !o.dry_run)
        return cli_usage("publish", "opensearch needs a URL (http://host:9200) or --dry-run DIR");
    o.url = n_pos == 2 ? pos[1] : NULL;
    o.progress = !json;
    o.tty = c->stderr_tty;
    o.stop = &interrupted;

    api *a;
    int rc = cli_open_api(c, &a);
    if (rc)
        return rc;
    interrupted = 0;
    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    api_publish_result r;
    trove_err err = api_publish(a, &o, &r);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    api_close(a);
    if (err == TROVE_OK) {
        if (json)
            print_json(&r, o.dry_run != NULL);
        else
            print_text(&r, o.dry_run != NULL);
    }
    api_publish_result_free(&r);
    return err ? cli_error(err) : EXIT_OK;
}
