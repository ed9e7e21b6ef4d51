/* trove daemon [--detach] [--idle SECS] [--no-watch] | stop | status [--json] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/out.h"
#include "daemon/client.h"
#include "daemon/server.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/str.h"

static const char daemon_help[] =
    "usage: trove daemon [--detach] [--idle SECS] [--no-watch]\n"
    "       trove daemon stop | status [--json]\n"
    "Keep the index open and answer `trove search`, get, ls, status (and MCP\n"
    "clients) over a Unix socket; watch the collections and index saved notes at once.\n"
    "  --detach      run in the background (log: the socket path + .log)\n"
    "  --idle SECS   exit after SECS without a request (default: daemon_idle in\n"
    "                config.yaml, else 1800; 0 = never)\n"
    "  --no-watch    do not watch the collections\n"
    "  stop          ask the daemon of this index to exit\n"
    "  status        say whether one runs: pid, socket, uptime, requests, the\n"
    "                watcher's state and queue, the models loaded (--json: as JSON)\n";

typedef struct ready_ctx {
    int fd;        /* write end of the --detach pipe, -1 in the foreground */
} ready_ctx;

/* Detached: stdout/stderr go to the log before the parent returns, so
 * whoever waits for the parent's output is not kept waiting for ours. */
static void on_ready(void *vctx, const char *socket_path)
{
    ready_ctx *r = vctx;
    if (r->fd < 0) {
        fprintf(stderr, "trove daemon: listening on %s\n", socket_path);
        return;
    }
    tbuf log = {0};
    tbuf_printf(&log, "%s.log", socket_path);
    int fd = open(log.data, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    tbuf_free(&log);
    if (fd < 0)
        fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        fflush(stdout);
        fflush(stderr);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    ssize_t w = write(r->fd, "1", 1);
    (void)w;
    close(r->fd);
    r->fd = -1;
}

static int run_daemon(cli *c, const dmn_opts *base, int detach)
{
    dmn_opts o = *base;
    ready_ctx rc_ctx = {.fd = -1};
    o.on_ready = on_ready;
    o.ready_ctx = &rc_ctx;
    o.index_path = c->index_path;
    if (!detach) {
        trove_err err = dmn_run(&o);
        return err ? cli_error(err) : EXIT_OK;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        fprintf(stderr, "trove: pipe: %s\n", strerror(errno));
        return EXIT_ERR;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "trove: fork: %s\n", strerror(errno));
        return EXIT_ERR;
    }
    if (pid == 0) {
        close(p[0]);
        setsid();
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            close(null);
        }
        rc_ctx.fd = p[1];
        trove_err err = dmn_run(&o);
        /* Back through main like any command, not _exit(): everything
         * freed, and under ASan the exit's leak check covers the detached
         * daemon too (its report goes to the log). The parent flushed its
         * stdio before the fork, so nothing of its is written twice. An
         * error is still on the parent's stderr when it failed to start. */
        return err ? cli_error(err) : EXIT_OK;
    }
    close(p[1]);
    char b;
    ssize_t n;
    do
        n = read(p[0], &b, 1);
    while (n < 0 && errno == EINTR);
    close(p[0]);
    if (n == 1) {
        char *sock = dcl_socket_path(c->index_path);
        printf("trove daemon: pid %d serving %s on %s\n", (int)pid, c->index_path, sock ? sock : "?");
        free(sock);
        return EXIT_OK;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EXIT_ERR;
}

static dcl *connect_or_say(cli *c)
{
    dcl *d = NULL;
    if (dcl_connect(c->index_path, NULL, 10.0, &d) != TROVE_OK) {
        char *sock = dcl_socket_path(c->index_path);
        fprintf(stderr, "trove: no daemon serves %s (no answer at %s)\n", c->index_path,
                sock ? sock : "?");
        free(sock);
        return NULL;
    }
    return d;
}

static int daemon_holds(cli *c)
{
    char *other = dcl_holder_socket(c->index_path);
    int held = other != NULL;
    free(other);
    return held;
}

static int daemon_stop(cli *c)
{
    dcl *d = connect_or_say(c);
    if (!d)
        return EXIT_ERR;
    trove_err err = dcl_shutdown(d);
    dcl_close(d);
    if (err)
        return cli_error(err);
    /* Gone once its socket is: the daemon removes it on the way out. */
    char *sock = dcl_socket_path(c->index_path);
    double until = clock_seconds() + 10;
    struct stat sb;
    /* ... and its index lock (a daemon of another socket folder) */
    while (((sock && stat(sock, &sb) == 0) || daemon_holds(c)) && clock_seconds() < until)
        usleep(10000);
    int gone = (!sock || stat(sock, &sb) != 0) && !daemon_holds(c);
    free(sock);
    if (!gone) {
        fprintf(stderr, "trove: the daemon did not exit within 10 s\n");
        return EXIT_ERR;
    }
    printf("trove daemon: stopped\n");
    return EXIT_OK;
}

static long long jint(const json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

static const char *jstr(const json_t *o, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : dflt;
}

/* The watcher's line: its state, what it watches and what waits. */
static void print_watcher(const json_t *d)
{
    const json_t *w = json_object_get(d, "watcher");
    printf("watcher: %s", jstr(w, "state", "?"));
    if (json_object_get(w, "folders"))
        printf(" (%lld folders, %lld update%s so far", jint(w, "folders"), jint(w, "updates"),
               jint(w, "updates") == 1 ? "" : "s");
    const json_t *last = json_object_get(w, "last_event");
    if (json_is_number(last)) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        double ago = (double)now.tv_sec + now.tv_nsec / 1e9 - json_number_value(last);
        printf(", last event %.0f s ago: %s", ago < 0 ? 0 : ago, jstr(w, "last_event_path", "?"));
    }
    if (json_object_get(w, "folders"))
        putchar(')');
    putchar('\n');
    const char *problem = jstr(w, "problem", NULL);
    if (problem)
        printf("  %s\n", problem);
    printf("queue: %lld changed paths waiting for the watcher's next update, %lld other "
           "connections open\n", jint(w, "pending"), jint(d, "connections"));
}

static void print_models(const json_t *d)
{
    const json_t *m = json_object_get(d, "models");
    const json_t *open = json_object_get(m, "open");
    printf("models loaded: %lld (%zu open now)\n", jint(m, "loads"), json_array_size(open));
    for (size_t i = 0; i < json_array_size(open); i++) {
        const json_t *o = json_array_get(open, i);
        printf("  %s: %s (%lld users)\n", jstr(o, "kind", "?"), jstr(o, "path", "?"), jint(o, "users"));
    }
    /* the vector segments kept between searches (docs/daemon.md, Models) */
    const json_t *vc = json_object_get(m, "vec_cache");
    if (json_is_object(vc))
        printf("vector segments: %lld held (%.1f MB), %lld read from the index, %lld served from "
               "memory\n", jint(vc, "segments"), (double)jint(vc, "bytes") / 1e6, jint(vc, "loaded"),
               jint(vc, "served"));
}

static int daemon_status(cli *c, int json)
{
    dcl *d = connect_or_say(c);
    if (!d)
        return EXIT_ERR;
    json_t *res;
    trove_err err = dcl_call(d, wire_requests[WIRE_OP_HELLO].op, NULL, &res);
    dcl_close(d);
    if (err)
        return cli_error(err);
    const json_t *dj = json_object_get(res, "daemon");
    if (json) {
        /* the hello answer under the envelope; its "version" (trove's)
         * becomes trove_version */
        json_t *root = out_json_root();
        json_object_set(root, "trove_version", json_object_get(res, "version"));
        json_object_del(res, "version");
        json_object_update(root, res);
        json_decref(res);
        out_json_print(stdout, root);
        return EXIT_OK;
    }
    printf("pid: %lld\nsocket: %s\nindex: %s\nconfig: %s\n", jint(res, "pid"),
           jstr(dj, "socket", "?"), jstr(res, "index", "?"), jstr(res, "config", "?"));
    double up = json_number_value(json_object_get(dj, "uptime"));
    printf("uptime: %.0f s\nrequests: %lld\n", up, jint(res, "requests"));
    print_watcher(dj);
    print_models(dj);
    json_decref(res);
    return EXIT_OK;
}

int cmd_daemon(cli *c, int argc, char **argv)
{
    dmn_opts o = {.idle_secs = -1, .watch = 1, .render = cli_render};
    int detach = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(daemon_help, stdout);
            return EXIT_OK;
        }
        if (i == 1 && (strcmp(argv[i], "stop") == 0 || strcmp(argv[i], "status") == 0)) {
            size_t n;
            int json = 0, stop = argv[i][1] == 't' && argv[i][2] == 'o';
            int rc = cli_positionals("daemon", daemon_help, argc, argv, 2, stop ? NULL : &json,
                                     NULL, 0, &n);
            if (rc >= 0)
                return rc;
            return stop ? daemon_stop(c) : daemon_status(c, json);
        }
        if (strcmp(argv[i], "--detach") == 0) {
            detach = 1;
        } else if (strcmp(argv[i], "--no-watch") == 0) {
            o.watch = 0;
        } else if (cli_opt_value(argc, argv, &i, "--idle", &v)) {
            if (!v || !str_to_double(v, &o.idle_secs) || o.idle_secs < 0)
                return cli_usage("daemon", "--idle needs seconds >= 0");
        } else {
            return cli_usage("daemon", argv[i][0] == '-' ? "unknown option %s"
                                       : "unknown subcommand %s (stop, status)", argv[i]);
        }
    }
    o.model = cli_model_path(NULL);
    const char *model_msg;
    if (cli_model_error(&model_msg))
        fprintf(stderr, "trove daemon: %s (the watcher indexes without embedding)\n", model_msg);
    const char *nw = getenv("TROVE_NO_WATCH");
    if (nw && *nw && strcmp(nw, "0") != 0)
        o.watch = 0;
    return run_daemon(c, &o, detach);
}
