#include "daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/wire.h"
#include "daemon/client.h"
#include "daemon/watch.h"
#include "util/buf.h"
#include "store/store_lock.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/thread.h"
#include "util/version.h"

#define CONN_IDLE_S 300.0      /* a connection without a request is closed */
#define REQUEST_S 10.0         /* a started request must be complete by then */
#define SEND_TIMEOUT_S 10      /* a client that does not read its answer */

/* What an api handle was opened against: a changed config file or a new
 * index file (a rebuild renames one in) means "open again". */
typedef struct sig {
    dev_t cdev, idev;
    ino_t cino, iino;
    off_t csize;
    struct timespec cmtime;
} sig;

typedef struct handle {
    api *a;
    sig s;
    int busy;
} handle;

typedef struct srv {
    const dmn_opts *o;
    char *index_path, *config_file, *sock_path;
    char *model;              /* absolute, NULL: none (the watcher's embedding) */
    int listen_fd, lock_fd;
    store_lock *index_lock;     /* held for the daemon's life: one per index */
    int stop[2];              /* readable once stopping: every poll wakes */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    handle *h;
    int nh;
    int conns;                /* connections being served (under mu) */
    /* Connection threads (under mu): started once and kept, each waiting
     * in accept() between connections (conn_thread), so a request costs no
     * thread start and its stack and heap pages are warm. */
    int threads, waiting;     /* alive; of them, waiting for a connection */
    int stopping;             /* the threads leave instead of accepting */
    double last_activity, started, idle;
    long requests;
    /* Lock order (docs/architecture.md): write_mu, then a pool handle
     * (acquire), then mu. A writer takes write_mu before a handle, so
     * writers waiting for their turn hold no handle a search could use. */
    pthread_mutex_t write_mu; /* one update at a time, watcher included */
    int writers_waiting;      /* update ops waiting for write_mu (under mu) */
    pthread_cond_t writers_cv;   /* writers_waiting went down (under mu) */
    volatile sig_atomic_t embed_yield;   /* a writer waits: the watcher's
                                            embedding pass stops at its next batch */
    watcher *w;
    api *watch_api;           /* the watcher's own handle (under write_mu) */
    sig watch_sig;
    unsigned watch_gen;       /* times watch_api was (re)opened (under write_mu) */
    /* An update without a walk (docs/architecture.md): the index's
     * data_version on watch_api after the watcher's last successful update,
     * valid while vouch_gen == watch_gen (under write_mu); the config file
     * the watcher's collections came from (under mu); the answers given. */
    int vouch_ok;
    unsigned vouch_gen;
    int64_t vouch_dv;
    sig watch_cfg;
    long unwalked, walked;    /* update requests answered without a walk, refused (under mu) */
    char *last_why;           /* why the last one was refused (under mu) */
    api_models *models;       /* one copy of each model, lent to every handle */
} srv;

static srv *the_srv;          /* for the signal handler */

static void touch(srv *s, int request);

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    char when[32];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "trove daemon %s: ", when);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void request_stop(srv *s)
{
    ssize_t w = write(s->stop[1], "x", 1);
    (void)w;
}

static void on_signal(int sig)
{
    (void)sig;
    if (the_srv)
        request_stop(the_srv);
}

/* ---- api handles ---- */

static void sig_get(const srv *s, sig *g)
{
    struct stat sb;
    memset(g, 0, sizeof *g);
    if (stat(s->config_file, &sb) == 0) {
        g->cdev = sb.st_dev;
        g->cino = sb.st_ino;
        g->csize = sb.st_size;
        g->cmtime = sb.st_mtim;
    }
    if (stat(s->index_path, &sb) == 0) {
        g->idev = sb.st_dev;
        g->iino = sb.st_ino;
    }
}

static int sig_eq(const sig *a, const sig *b)
{
    return a->cdev == b->cdev && a->cino == b->cino && a->csize == b->csize &&
           a->cmtime.tv_sec == b->cmtime.tv_sec && a->cmtime.tv_nsec == b->cmtime.tv_nsec &&
           a->idev == b->idev && a->iino == b->iino;
}

/* The handle reopened when the config or the index file changed; *gen
 * (may be NULL) counts the reopenings. */
static trove_err refresh(srv *s, api **a, sig *have, unsigned *gen)
{
    sig now;
    sig_get(s, &now);
    if (*a && sig_eq(&now, have))
        return TROVE_OK;
    api_close(*a);
    *a = NULL;
    if (gen)
        ++*gen;
    trove_err rc = api_open(s->index_path, a);
    if (rc == TROVE_OK) {
        api_use_models(*a, s->models);
        *have = now;
    }
    return rc;
}

/* write_mu for an update op: counted as waiting meanwhile, so the
 * watcher's embedding pass (which holds write_mu for long) lets it in. */
static void writer_lock(srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->writers_waiting++;
    s->embed_yield = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->write_mu);
    pthread_mutex_lock(&s->mu);
    if (--s->writers_waiting == 0)
        s->embed_yield = 0;
    pthread_cond_broadcast(&s->writers_cv);
    pthread_mutex_unlock(&s->mu);
}

static handle *acquire(srv *s)
{
    pthread_mutex_lock(&s->mu);
    handle *h = NULL;
    while (!h) {
        for (int i = 0; i < s->nh && !h; i++)
            if (!s->h[i].busy)
                h = &s->h[i];
        if (!h)
            pthread_cond_wait(&s->cv, &s->mu);
    }
    h->busy = 1;
    pthread_mutex_unlock(&s->mu);
    return h;
}

static void release(srv *s, handle *h)
{
    pthread_mutex_lock(&s->mu);
    h->busy = 0;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- requests ---- */

typedef struct reply {
    json_t *result;           /* success */
    int failed;               /* 1: an error: code and message */
    int code;                 /* a trove_err or WIRE_E* (api/wire.h) */
    char *message;
    int boundary;             /* the request asked for the agent boundary (api.h): the
                                 call ran with it, and the answer says so */
    const json_t *render;     /* the request's "render" (borrowed), else NULL */
    tbuf payload;             /* rendered: the bytes sent after the answer's line */
} reply;

static void fail_proto(reply *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_proto(reply *r, int code, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->failed = 1;
    r->code = code;
    r->message = xstrdup(buf);
}

static void fail_err(reply *r, trove_err e)
{
    const char *m = trove_errmsg();
    r->failed = 1;
    r->code = (int)e;
    r->message = xstrdup(m && *m ? m : trove_strerror(e));
}

/* The shared models: how many loads so far, and which are open. */
static json_t *models_state(srv *s)
{
    api_models_stats ms;
    api_models_stats_get(s->models, &ms);
    json_t *open = json_array();
    for (size_t i = 0; i < ms.n; i++)
        json_array_append_new(open, json_pack("{s:o, s:s, s:i}", "path", wire_str(ms.models[i].path),
                                              "kind", ms.models[i].kind, "users",
                                              ms.models[i].users));
    const vcache_stats *v = &ms.vec_cache;
    json_t *vc = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "loaded", (json_int_t)v->loaded,
                           "served", (json_int_t)v->served, "evicted", (json_int_t)v->evicted,
                           "dropped", (json_int_t)v->dropped, "segments",
                           (json_int_t)v->segments, "bytes", (json_int_t)v->bytes, "max_bytes",
                           (json_int_t)v->max_bytes);
    json_t *m = json_pack("{s:I, s:o, s:o}", "loads", (json_int_t)ms.loads, "open", open,
                          "vec_cache", vc);
    api_models_stats_free(&ms);
    return m;
}

static json_t *daemon_state(srv *s)
{
    pthread_mutex_lock(&s->mu);
    double up = clock_seconds() - s->started;
    long requests = s->requests;
    int conns = s->conns;
    pthread_mutex_unlock(&s->mu);
    json_t *d = json_object();
    json_object_set_new(d, "pid", json_integer(getpid()));
    json_object_set_new(d, "socket", wire_str(s->sock_path));
    json_object_set_new(d, "uptime", json_real(up));
    json_object_set_new(d, "requests", json_integer(requests));
    /* connections besides the one asking */
    json_object_set_new(d, "connections", json_integer(conns > 0 ? conns - 1 : 0));
    json_t *w = json_object();
    if (s->w) {
        watch_state ws;
        watch_state_get(s->w, &ws);
        json_object_set_new(w, "state", wire_str(ws.state));
        json_object_set_new(w, "folders", json_integer((json_int_t)ws.folders));
        json_object_set_new(w, "last_event", ws.last_event > 0 ? json_real(ws.last_event) : json_null());
        json_object_set_new(w, "last_event_path", wire_str(ws.last_path));
        json_object_set_new(w, "pending", json_integer((json_int_t)ws.pending));
        json_object_set_new(w, "updates", json_integer((json_int_t)ws.updates));
        json_object_set_new(w, "last_update_ms", json_real(ws.last_update_ms));
        json_object_set_new(w, "problem", wire_str(ws.problem));
        watch_state_free(&ws);
        pthread_mutex_lock(&s->mu);
        json_object_set_new(w, "unwalked_updates", json_integer(s->unwalked));
        json_object_set_new(w, "walked_updates", json_integer(s->walked));
        json_object_set_new(w, "last_walk_why", wire_str(s->last_why));
        pthread_mutex_unlock(&s->mu);
    } else {
        json_object_set_new(w, "state", json_string("off"));
        json_object_set_new(w, "problem", json_string(s->o->watch ? "no collections" : "disabled"));
    }
    json_object_set_new(d, "watch", json_boolean(s->o->watch));
    json_object_set_new(d, "watcher", w);
    json_object_set_new(d, "models", models_state(s));
    return d;
}


static void collect_warning(void *ctx, const char *message)
{
    json_array_append_new(ctx, wire_str(message));
}

/* update: the warnings of the indexing, in the answer */
static void update_before(srv *s, void *args, json_t **extra)
{
    (void)s;
    api_update_opts *o = args;
    *extra = json_array();
    o->index.warn = collect_warning;
    o->index.warn_ctx = *extra;
}

static void update_after(srv *s, json_t *result, json_t **extra)
{
    (void)s;
    json_object_set_new(result, "warnings", json_incref(*extra));
}

/* status: the daemon's own state besides the index's */
static void status_after(srv *s, json_t *result, json_t **extra)
{
    (void)extra;
    json_object_set_new(result, "daemon", daemon_state(s));
}

/* What the daemon adds to an op of wire_requests[] (which says how to
 * decode, answer and encode it): writer ops run one at a time under
 * write_mu; before() sees the decoded arguments, after() the answer. */
static const struct {
    int writer;
    void (*before)(srv *s, void *args, json_t **extra);
    void (*after)(srv *s, json_t *result, json_t **extra);
} ops[WIRE_N_OPS] = {
    [WIRE_OP_STATUS] = {0, NULL, status_after},
    [WIRE_OP_UPDATE] = {1, update_before, update_after},
};

static void op_hello(srv *s, reply *r)
{
    pthread_mutex_lock(&s->mu);
    long requests = ++s->requests;
    pthread_mutex_unlock(&s->mu);
    r->result = json_pack("{s:s, s:i, s:i, s:o, s:o, s:f, s:I}", "version", TROVE_VERSION,
                          "protocol", WIRE_PROTOCOL, "pid", (int)getpid(), "index", wire_str(s->index_path),
                          "config", wire_str(s->config_file), "started",
                          (double)time(NULL) - (clock_seconds() - s->started),
                          "requests", (json_int_t)requests);
    api_models_stats ms;
    api_models_stats_get(s->models, &ms);
    json_object_set_new(r->result, "models_loaded", json_integer((json_int_t)ms.loads));
    json_object_set_new(r->result, "vec_segments",
                        json_pack("{s:I, s:I, s:I, s:I}", "held",
                                  (json_int_t)ms.vec_cache.segments, "bytes",
                                  (json_int_t)ms.vec_cache.bytes, "loaded",
                                  (json_int_t)ms.vec_cache.loaded, "served",
                                  (json_int_t)ms.vec_cache.served));
    api_models_stats_free(&ms);
    json_object_set_new(r->result, "daemon", daemon_state(s));
}

static int vouch(void *ctx, const char *name, size_t *files, char *why, size_t cap)
{
    return watch_vouch(ctx, name, files, why, cap);
}

/* Why the watcher's word cannot stand for the index as it is now (why[0]
 * stays 0 when it can). Under write_mu. */
static void unwalked_why(srv *s, char *why, size_t cap)
{
    sig now;
    sig_get(s, &now);
    pthread_mutex_lock(&s->mu);
    int same_cfg = now.cdev == s->watch_cfg.cdev && now.cino == s->watch_cfg.cino &&
                   now.csize == s->watch_cfg.csize &&
                   now.cmtime.tv_sec == s->watch_cfg.cmtime.tv_sec &&
                   now.cmtime.tv_nsec == s->watch_cfg.cmtime.tv_nsec;
    pthread_mutex_unlock(&s->mu);
    int64_t dv = 0;
    if (!s->w)
        snprintf(why, cap, "the daemon runs without a watcher (--no-watch, or no collections "
                 "when it started)");
    else if (!same_cfg)
        snprintf(why, cap, "config.yaml changed since the watcher last read it");
    else if (refresh(s, &s->watch_api, &s->watch_sig, &s->watch_gen) != TROVE_OK)
        snprintf(why, cap, "the daemon cannot open the index: %s", trove_errmsg());
    else if (!s->vouch_ok || s->vouch_gen != s->watch_gen)
        snprintf(why, cap, "the watcher has not finished an update since it started or the "
                 "index was replaced");
    else if (api_data_version(s->watch_api, &dv) != TROVE_OK)
        snprintf(why, cap, "the daemon cannot read the index: %s", trove_errmsg());
    else if (dv != s->vouch_dv) {
        snprintf(why, cap, "the index was written by another process since the watcher's last "
                 "update");
        watch_recheck(s->w);   /* its next walk sees what that did */
    }
    trove_errclear();
}

/* update with "unwalked": the answer of an update that finds nothing
 * changed, when the watcher vouches for every collection asked for; else
 * refused (WIRE_EWALK, saying why) and the client walks itself. */
static void op_update_unwalked(srv *s, const api_update_opts *o, reply *r)
{
    char why[768] = "";
    index_update_result res = {0};
    writer_lock(s);   /* no watcher update halfway; watch_api is ours */
    unwalked_why(s, why, sizeof why);
    trove_err rc = why[0] ? TROVE_OK
                          : api_update_unwalked(s->watch_api, o, vouch, s->w, &res, why, sizeof why);
    pthread_mutex_unlock(&s->write_mu);
    if (rc) {
        fail_err(r, rc);
        return;
    }
    pthread_mutex_lock(&s->mu);
    if (why[0]) {
        s->walked++;
        free(s->last_why);
        s->last_why = xstrdup(why);
    } else {
        s->unwalked++;
    }
    pthread_mutex_unlock(&s->mu);
    if (why[0]) {
        fail_proto(r, WIRE_EWALK, "%s", why);
        return;
    }
    r->result = wire_emit(wire_requests[WIRE_OP_UPDATE].result, &res);
    json_object_set_new(r->result, "walked", json_false());
    json_object_set_new(r->result, "warnings", json_array());
    index_update_result_free(&res);
}

/* The api call of an op on a pool handle, refreshed first. */
static void call_op(srv *s, int which, void *args, reply *r)
{
    const wire_request *q = &wire_requests[which];
    if (which == WIRE_OP_UPDATE && ((api_update_opts *)args)->unwalked && !r->render)
        return op_update_unwalked(s, args, r);
    json_t *extra = NULL;
    if (ops[which].before)
        ops[which].before(s, args, &extra);
    if (ops[which].writer)
        writer_lock(s);   /* before the handle: see srv.write_mu */
    handle *h = acquire(s);
    trove_errclear();
    void *out = xcalloc(1, q->result->size);
    trove_err rc = refresh(s, &h->a, &h->s, NULL);
    if (rc == TROVE_OK) {
        api_set_boundary(h->a, r->boundary);   /* for this request only */
        rc = wire_call(h->a, which, args, out);
        api_set_boundary(h->a, 0);
    }
    release(s, h);
    if (ops[which].writer)
        pthread_mutex_unlock(&s->write_mu);
    if (rc) {
        fail_err(r, rc);
    } else if (r->render) {
        /* the front end's own output, made here from the same struct */
        tbuf o = {0}, e = {0};
        int code = s->o->render ? s->o->render(which, args, out, r->render, &o, &e) : -1;
        if (code < 0) {
            fail_proto(r, WIRE_EPROTO, "cannot render '%s' in that form", q->op);
        } else {
            r->result = json_pack("{s:i, s:I, s:I}", "rc", code, "out_bytes", (json_int_t)o.len,
                                  "err_bytes", (json_int_t)e.len);
            if (e.len)
                tbuf_append(&o, e.data, e.len);
            r->payload = o;
            o = (tbuf){0};
        }
        tbuf_free(&o);
        tbuf_free(&e);
        wire_free(q->result, out);
    } else {
        r->result = wire_emit(q->result, out);
        wire_free(q->result, out);
        if (ops[which].after)
            ops[which].after(s, r->result, &extra);
    }
    json_decref(extra);
    free(out);
}

/* An op on a pool handle: its arguments decoded by their table. */
static void run_op(srv *s, int which, const json_t *args, reply *r)
{
    const wire_type *t = wire_requests[which].args;
    wire_args hold = {0};
    void *a = t ? xcalloc(1, t->size) : NULL;
    touch(s, 1);   /* counts requests served, not protocol errors */
    if (t && wire_parse(t, args, a, &hold) != TROVE_OK)
        fail_proto(r, WIRE_EPROTO, "%s", trove_errmsg());
    else
        call_op(s, which, a, r);
    wire_args_free(&hold);
    free(a);
}

static void dispatch(srv *s, const json_t *req, reply *r)
{
    const json_t *v = json_object_get(req, "v");
    const char *op = json_string_value(json_object_get(req, "op"));
    const json_t *args = json_object_get(req, "args");
    if (v && (!json_is_integer(v) || json_integer_value(v) != WIRE_PROTOCOL))
        return fail_proto(r, WIRE_EPROTO, "protocol version %s not supported (this daemon speaks 1)",
                          json_is_integer(v) ? "other than 1" : "of the wrong type");
    if (!op)
        return fail_proto(r, WIRE_EPROTO, "request needs 'op' (a string)");
    if (args && !json_is_object(args))
        return fail_proto(r, WIRE_EPROTO, "'args' must be an object");
    const json_t *boundary = json_object_get(req, "boundary");
    if (boundary && !json_is_boolean(boundary))
        return fail_proto(r, WIRE_EPROTO, "'boundary' must be true or false");
    r->boundary = json_is_true(boundary);
    r->render = json_object_get(req, "render");
    const char *idx = json_string_value(json_object_get(req, "index"));
    const char *cfg = json_string_value(json_object_get(req, "config"));
    if ((idx && strcmp(idx, s->index_path)) || (cfg && strcmp(cfg, s->config_file)))
        return fail_proto(r, WIRE_EMISMATCH, "this daemon serves index %s with config %s",
                          s->index_path, s->config_file);
    int which = wire_op_find(op);
    if (which == WIRE_OP_HELLO)
        return op_hello(s, r);
    if (which == WIRE_OP_SHUTDOWN) {
        touch(s, 1);
        r->result = json_object();
        request_stop(s);
        return;
    }
    if (which < 0 || !wire_requests[which].call)
        return fail_proto(r, WIRE_EPROTO, "unknown op '%.100s'", op);
    json_t *empty = args ? NULL : json_object();
    run_op(s, which, args ? args : empty, r);
    json_decref(empty);
}


/* One request line → one answer line (with its '\n'), then a rendered
 * answer's bytes; caller frees. */
static tbuf answer(srv *s, const char *line, size_t len)
{
    reply r = {0};
    json_error_t jerr;
    json_t *req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *id = NULL;
    if (!req)
        fail_proto(&r, WIRE_EPROTO, "bad JSON at column %d: %s", jerr.column, jerr.text);
    else if (!json_is_object(req))
        fail_proto(&r, WIRE_EPROTO, "a request is a JSON object");
    else {
        id = json_object_get(req, "id");
        dispatch(s, req, &r);
    }
    json_t *resp = json_object();
    json_object_set(resp, "id", id ? id : json_null());
    json_object_set_new(resp, "ok", json_boolean(!r.failed));
    if (r.boundary)
        json_object_set_new(resp, "boundary", json_true());
    if (r.failed)
        json_object_set_new(resp, "error", json_pack("{s:s, s:o}", "code", wire_code_name(r.code), "message",
                                                     wire_str(r.message)));
    else
        json_object_set_new(resp, "result", r.result ? r.result : json_object());
    char *text = json_dumps(resp, JSON_COMPACT);
    json_decref(resp);
    json_decref(req);
    free(r.message);
    tbuf b = {0};
    tbuf_puts(&b, text ? text : "{\"id\":null,\"ok\":false,\"error\":{\"code\":\"EIO\",\"message\":\"answer not encodable\"}}");
    tbuf_putc(&b, '\n');
    if (text && !r.failed && r.payload.len)
        tbuf_append(&b, r.payload.data, r.payload.len);
    free(text);
    tbuf_free(&r.payload);
    return b;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;   /* a client that stopped reading: SO_SNDTIMEO ends it */
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void send_error(int fd, int code, const char *message)
{
    json_t *resp = json_pack("{s:n, s:b, s:{s:s, s:s}}", "id", "ok", 0, "error", "code", wire_code_name(code),
                             "message", message);
    char *text = json_dumps(resp, JSON_COMPACT);
    json_decref(resp);
    if (text) {
        send_all(fd, text, strlen(text));
        send_all(fd, "\n", 1);
    }
    free(text);
}

static void touch(srv *s, int request)
{
    pthread_mutex_lock(&s->mu);
    s->last_activity = clock_seconds();
    s->requests += request;
    pthread_mutex_unlock(&s->mu);
}

/* A request over WIRE_MAX_REQUEST is answered with E2BIG, then the rest of
 * its line is read and dropped (until its newline, the client's close or
 * the request deadline) before the connection is closed: a client still
 * writing it would otherwise get EPIPE and never read the answer. `seen_nl`:
 * its newline has arrived already. */
static void refuse_too_long(srv *s, int fd, int seen_nl, double deadline)
{
    send_error(fd, WIRE_E2BIG, "request longer than 1 MiB");
    shutdown(fd, SHUT_WR);
    char buf[65536];
    while (!seen_nl) {
        double left = deadline - clock_seconds();
        if (left <= 0)
            break;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
        int pr = poll(p, 2, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0 || (p[1].revents && !(p[0].revents & POLLIN)))
            break;
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            break;
        seen_nl = memchr(buf, '\n', (size_t)r) != NULL;
    }
    /* what is queued already, so the close leaves nothing unread */
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

/* One connection's requests, answered in order until it closes, idles
 * out or the daemon stops. */
static void serve_conn(srv *s, int fd)
{
    tbuf in = {0};
    double first_byte = 0;
    for (;;) {
        char *nl;
        int closing = 0;
        while (in.len && (nl = memchr(in.data, '\n', in.len)) != NULL) {
            size_t n = (size_t)(nl - in.data);
            touch(s, 0);
            if (n > WIRE_MAX_REQUEST) {
                refuse_too_long(s, fd, 1, 0);
                closing = 1;
                break;
            }
            tbuf out = answer(s, in.data, n);
            int w = send_all(fd, out.data, out.len);
            tbuf_free(&out);
            memmove(in.data, nl + 1, in.len - n - 1);
            in.len -= n + 1;
            touch(s, 0);
            if (w) {
                closing = 1;
                break;
            }
            first_byte = in.len ? clock_seconds() : 0;
        }
        if (closing)
            break;
        if (in.len > WIRE_MAX_REQUEST) {
            refuse_too_long(s, fd, 0, first_byte + REQUEST_S);
            break;
        }
        double now = clock_seconds();
        double left = in.len ? first_byte + REQUEST_S - now : CONN_IDLE_S;
        if (left <= 0)
            break;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
        int pr = poll(p, 2, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0 || (p[1].revents && !(p[0].revents & POLLIN)))
            break;
        char buf[65536];
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            break;
        if (!in.len)
            first_byte = clock_seconds();
        tbuf_append(&in, buf, (size_t)r);
    }
    tbuf_free(&in);
    close(fd);
    pthread_mutex_lock(&s->mu);
    s->conns--;
    s->last_activity = clock_seconds();
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- the watcher's updates ---- */

static void log_warning(void *ctx, const char *message)
{
    (void)ctx;
    logf_("warning: %s", message);
}

/* After a watcher update (under write_mu): embed the chunks without a
 * vector of the daemon's model, as `trove update` does after indexing. A
 * failure leaves the keyword index updated and is logged; the next update
 * retries. */
static void watch_embed(srv *s)
{
    api_embed_opts eo = {.model = s->model};
    eo.embed.interrupted = &s->embed_yield;
    api_embed_result er;
    size_t stored = 0, embedded = 0, reused = 0;
    trove_err rc;
    /* A pass can take minutes: an update op waiting for write_mu stops it
     * at its next batch (what was computed is kept), goes first, and the
     * pass resumes with what is still to embed. */
    while ((rc = api_embed(s->watch_api, &eo, &er)) == TROVE_EINTR) {
        stored += er.stats.stored, embedded += er.stats.embedded, reused += er.stats.reused;
        pthread_mutex_unlock(&s->write_mu);
        pthread_mutex_lock(&s->mu);
        while (s->writers_waiting > 0)
            pthread_cond_wait(&s->writers_cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        pthread_mutex_lock(&s->write_mu);
        if (refresh(s, &s->watch_api, &s->watch_sig, &s->watch_gen) != TROVE_OK) {
            rc = TROVE_EIO;
            break;
        }
    }
    if (rc != TROVE_OK) {
        logf_("embedding with %s failed: %s", s->model, trove_errmsg());
        return;
    }
    stored += er.stats.stored, embedded += er.stats.embedded, reused += er.stats.reused;
    if (stored)
        logf_("embedded %zu chunks (%zu computed, %zu reused)", stored, embedded, reused);
}

static void log_warning_counted(void *ctx, const char *message)
{
    ++*(size_t *)ctx;
    log_warning(NULL, message);
}

/* What the watcher vouches with: a collection's walk was clean when the
 * update warned of nothing (warnings name no collection: any counts for
 * all), skipped no file and found its folder. */
static void walked_of(const index_update_result *res, size_t warnings, const char *const *names,
                      size_t n, watch_walked *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = (watch_walked){0};
        for (size_t k = 0; k < res->n_collections; k++) {
            const index_update_collection *uc = &res->collections[k];
            if (strcmp(uc->name, names[i]) != 0)
                continue;
            out[i].clean = !warnings && !uc->missing && !uc->stats.skipped;
            out[i].files = uc->stats.files;
        }
    }
}

static int watch_update(void *ctx, const char *const *names, size_t n, watch_walked *walked)
{
    srv *s = ctx;
    pthread_mutex_lock(&s->write_mu);
    s->vouch_ok = 0;
    trove_err rc = refresh(s, &s->watch_api, &s->watch_sig, &s->watch_gen);
    index_update_result res = {0};
    size_t warnings = 0;
    if (rc == TROVE_OK) {
        api_update_opts o;
        api_update_opts_init(&o);
        o.collections = names;
        o.n_collections = n;
        o.index.warn = log_warning_counted;
        o.index.warn_ctx = &warnings;
        rc = api_update(s->watch_api, &o, &res);
    }
    if (rc == TROVE_OK && s->model)
        watch_embed(s);
    /* The index as this update (and its embedding) left it: a commit by
     * anyone else from now on ends the watcher's word (op_update_unwalked). */
    if (rc == TROVE_OK) {
        if (api_data_version(s->watch_api, &s->vouch_dv) == TROVE_OK) {
            s->vouch_ok = 1;
            s->vouch_gen = s->watch_gen;
        }
        trove_errclear();
    }
    pthread_mutex_unlock(&s->write_mu);
    walked_of(&res, warnings, names, n, walked);
    if (rc) {
        logf_("update failed: %s", trove_errmsg());
        return -1;
    }
    for (size_t i = 0; i < res.n_collections; i++) {
        const index_stats *st = &res.collections[i].stats;
        if (st->added || st->updated || st->renamed || st->removed)
            logf_("%s: %zu new, %zu changed, %zu renamed, %zu deleted", res.collections[i].name,
                  st->added, st->updated, st->renamed, st->removed);
    }
    index_update_result_free(&res);
    return 0;
}

/* ---- socket ---- */

/* A symlink (a runtime folder linked elsewhere, as some systems do) is
 * taken only as it stands: the link the user's or root's, and what it
 * leads to a folder of the user's that is already private. Nothing is
 * changed through a link: a chmod there would open or close someone
 * else's folder. */
static trove_err linked_dir(const char *dir, const struct stat *link)
{
    struct stat sb;
    if (link->st_uid != geteuid() && link->st_uid != 0)
        return trove_fail(TROVE_EACCES, "%s is a symlink of another user; refusing to put the "
                          "daemon's socket where it leads", dir);
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return trove_fail(TROVE_EACCES, "%s is a symlink to something that is not a folder",
                          dir);
    if (sb.st_uid != geteuid())
        return trove_fail(TROVE_EACCES, "%s leads to a folder of another user; refusing to put "
                          "the daemon's socket there", dir);
    if ((sb.st_mode & 0777) != 0700)
        return trove_fail(TROVE_EACCES, "%s leads to a folder open to others (mode %04o); make "
                          "it private (chmod 0700) or remove the link", dir,
                          (unsigned)(sb.st_mode & 0777));
    return TROVE_OK;
}

static trove_err private_dir(const char *dir)
{
    if (fs_mkdir_private(dir) != 0 && errno != EEXIST)
        return trove_fail(TROVE_EIO, "cannot create %s: %s", dir, strerror(errno));
    struct stat sb;
    if (lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode))
        return linked_dir(dir, &sb);
    if (lstat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return trove_fail(TROVE_EACCES, "%s is not a folder", dir);
    if (sb.st_uid != geteuid())
        return trove_fail(TROVE_EACCES, "%s belongs to another user; refusing to put the "
                          "daemon's socket there", dir);
    if ((sb.st_mode & 0777) != 0700 && chmod(dir, 0700) != 0)
        return trove_fail(TROVE_EACCES, "cannot make %s private (chmod 0700): %s", dir, strerror(errno));
    return TROVE_OK;
}

static trove_err bind_socket(srv *s)
{
    char *dir = dcl_socket_dir();
    trove_err rc = private_dir(dir);
    free(dir);
    if (rc)
        return rc;
    /* The index's own lock, not only the socket's: a daemon started with
     * another $XDG_RUNTIME_DIR has another socket, but the same index. */
    if ((rc = store_lock_take(s->index_path, s->sock_path, &s->index_lock)) != TROVE_OK)
        return rc;
    tbuf lock = {0};
    tbuf_printf(&lock, "%s.lock", s->sock_path);
    s->lock_fd = open(lock.data, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = s->lock_fd < 0 ? trove_fail(TROVE_EIO, "%s: %s", lock.data, strerror(errno))
                            : trove_fail(TROVE_EEXIST, "a daemon already serves %s (socket %s)",
                                         s->index_path, s->sock_path);
        tbuf_free(&lock);
        return rc;
    }
    tbuf_free(&lock);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, s->sock_path, strlen(s->sock_path) + 1);
    /* We hold the lock, so a socket file here is a dead daemon's unless it
     * answers (a daemon from before the lock): connect to find out. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
        close(probe);
        return trove_fail(TROVE_EEXIST, "a daemon already serves %s (socket %s)", s->index_path,
                          s->sock_path);
    }
    if (probe >= 0)
        close(probe);
    if (unlink(s->sock_path) == 0)
        logf_("replaced the stale socket %s", s->sock_path);
    /* blocking: the connection threads wait in accept() (conn_thread) */
    s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0)
        return trove_fail(TROVE_EIO, "socket: %s", strerror(errno));
    mode_t old = umask(0177);
    int b = bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    umask(old);
    if (b != 0)
        return trove_fail(TROVE_EIO, "cannot bind %s: %s", s->sock_path, strerror(e));
    if (chmod(s->sock_path, 0600) != 0 || listen(s->listen_fd, 128) != 0)
        return trove_fail(TROVE_EIO, "cannot listen on %s: %s", s->sock_path, strerror(errno));
    return TROVE_OK;
}

/* ---- main loop ---- */

/* A connection accepted by a connection thread: 1 when it is to be
 * served, 0 when it was refused (another user; too many) and closed. */
static int admit(srv *s, int fd)
{
    struct timeval tv = {.tv_sec = SEND_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* The 0700 folder and the 0600 socket keep other users out; should
     * either be opened up (a chmod by hand), the kernel's word on who
     * connected still does. Root may, as it may read the index anyway. */
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 ||
        (cred.uid != geteuid() && cred.uid != 0)) {
        send_error(fd, TROVE_EACCES, "this daemon serves only its own user");
        close(fd);
        return 0;
    }
    pthread_mutex_lock(&s->mu);
    int full = s->conns >= DMN_MAX_CONNS;
    if (!full)
        s->conns++;
    s->last_activity = clock_seconds();
    pthread_mutex_unlock(&s->mu);
    if (full) {
        send_error(fd, TROVE_EBUSY, "too many connections; try again");
        close(fd);
        return 0;
    }
    return 1;
}

static void *conn_thread(void *arg);

/* One more connection thread (under mu); 0 when none could start. */
static int spawn_locked(srv *s)
{
    pthread_t t;
    if (thread_start(&t, conn_thread, s) != 0)
        return 0;
    pthread_detach(t);
    s->threads++;
    s->waiting++;
    return 1;
}

/* Each connection thread waits in accept() on the listening socket, which
 * wakes one waiter per connection, and serves what it accepted itself:
 * no hand-off from a listening thread, no thread started per connection
 * (a thread started and ended per connection cost its clone, ~70 page
 * faults of its fresh stack and heap, and a wake-up more: ~0.35 ms of a
 * search through the daemon; docs/performance.md, session 34). One that
 * accepts the last waiting one's place starts another, so a connection
 * always finds one waiting; up to DMN_MAX_CONNS + 1, the one past the
 * limit there to answer EBUSY. shutdown_srv's shutdown() of the socket
 * wakes the waiting ones with an error, and they leave. */
static void *conn_thread(void *arg)
{
    srv *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        int fd = stopping ? -1 : accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && !stopping && (errno == EINTR || errno == ECONNABORTED))
            continue;
        pthread_mutex_lock(&s->mu);
        stopping = s->stopping;
        if (fd < 0 && !stopping) {
            /* out of descriptors or memory: wait a little, as the listening
             * loop did by polling again */
            pthread_mutex_unlock(&s->mu);
            usleep(10000);
            continue;
        }
        s->waiting--;
        if (fd < 0) {
            s->threads--;
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        if (s->waiting == 0 && s->threads <= DMN_MAX_CONNS)
            spawn_locked(s);
        pthread_mutex_unlock(&s->mu);
        if (admit(s, fd))
            serve_conn(s, fd);
        pthread_mutex_lock(&s->mu);
        s->waiting++;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Watch the collections of the current config (again when it changed). */
static void watch_sync(srv *s, sig *cfg_seen)
{
    sig now;
    sig_get(s, &now);
    if (cfg_seen->cino == now.cino && cfg_seen->cdev == now.cdev && cfg_seen->csize == now.csize &&
        cfg_seen->cmtime.tv_sec == now.cmtime.tv_sec && cfg_seen->cmtime.tv_nsec == now.cmtime.tv_nsec)
        return;
    *cfg_seen = now;
    config cfg;
    if (config_load(&cfg) != TROVE_OK) {
        logf_("config: %s (watching the previous collections)", trove_errmsg());
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->watch_cfg = now;   /* the file the watcher's collections come from */
    pthread_mutex_unlock(&s->mu);
    if (s->w) {
        watch_reconfigure(s->w, &cfg);
    } else {
        watch_opts wo;
        watch_opts_init(&wo);
        wo.update = watch_update;
        wo.ctx = s;
        const char *max = getenv("TROVE_WATCH_MAX");   /* tests: a small inotify limit */
        if (max && *max)
            wo.max_watches = (size_t)strtoul(max, NULL, 10);
        const char *poll_s = getenv("TROVE_WATCH_POLL");   /* tests: rescan period, seconds */
        if (poll_s && *poll_s && strtod(poll_s, NULL) > 0)
            wo.poll_s = strtod(poll_s, NULL);
        /* tests: a watcher that waits this long before updating (events
         * read, collections marked, nothing indexed yet) */
        const char *debounce = getenv("TROVE_WATCH_DEBOUNCE");
        if (debounce && *debounce && strtod(debounce, NULL) > 0)
            wo.debounce_s = wo.max_wait_s = strtod(debounce, NULL);
        if (watch_start(&cfg, &wo, &s->w) != TROVE_OK)
            logf_("watcher: %s", trove_errmsg());
    }
    config_free(&cfg);
}

static void serve(srv *s)
{
    sig cfg_seen;
    memset(&cfg_seen, 0, sizeof cfg_seen);
    cfg_seen.cino = (ino_t)-1;
    double last_check = 0;
    for (;;) {
        double now = clock_seconds();
        if (s->o->watch && now - last_check >= 1.0) {
            watch_sync(s, &cfg_seen);
            last_check = now;
        }
        pthread_mutex_lock(&s->mu);
        int idle = s->conns == 0 && s->idle > 0 && now - s->last_activity >= s->idle;
        pthread_mutex_unlock(&s->mu);
        if (idle) {
            logf_("idle for %.0f s; exiting", s->idle);
            break;
        }
        pthread_mutex_lock(&s->mu);
        if (s->threads == 0 && !spawn_locked(s))
            logf_("cannot start a thread for connections; trying again");
        pthread_mutex_unlock(&s->mu);
        /* the connections are the connection threads' (conn_thread) */
        struct pollfd p = {.fd = s->stop[0], .events = POLLIN};
        int pr = poll(&p, 1, 250);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr > 0 && p.revents) {
            logf_("stopping");
            break;
        }
    }
}

static void shutdown_srv(srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_mutex_unlock(&s->mu);
    if (s->listen_fd >= 0) {
        unlink(s->sock_path);
        shutdown(s->listen_fd, SHUT_RDWR);   /* wakes the threads in accept() */
    }
    request_stop(s);
    watch_stop(s->w);
    /* Connection threads leave when their request is answered. */
    double until = clock_seconds() + 5;
    pthread_mutex_lock(&s->mu);
    while (s->threads > 0 && clock_seconds() < until) {
        pthread_mutex_unlock(&s->mu);
        usleep(10000);
        pthread_mutex_lock(&s->mu);
    }
    int left = s->threads;
    pthread_mutex_unlock(&s->mu);
    /* closed once no thread may still be in accept() on it */
    if (left == 0 && s->listen_fd >= 0)
        close(s->listen_fd);
    if (left == 0) {
        for (int i = 0; i < s->nh; i++)
            api_close(s->h[i].a);
        free(s->h);
        api_close(s->watch_api);
        api_models_free(s->models);   /* after every handle it was lent to */
    }
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    store_lock_release(s->index_lock);
}

trove_err dmn_run(const dmn_opts *o)
{
    srv s = {.o = o, .listen_fd = -1, .lock_fd = -1};
    s.index_path = dcl_abs_path(o->index_path);
    char *cdir = config_dir();
    tbuf cf = {0};
    tbuf_printf(&cf, "%s/config.yaml", cdir);
    free(cdir);
    s.config_file = dcl_abs_path(cf.data);
    tbuf_free(&cf);
    s.sock_path = dcl_socket_path(s.index_path);
    s.model = o->model && *o->model ? dcl_abs_path(o->model) : NULL;
    if (!s.sock_path) {
        trove_err rc = TROVE_ERANGE;
        free(s.index_path);
        free(s.config_file);
        free(s.model);
        return rc;
    }
    config cfg;
    trove_err rc = config_load(&cfg);
    if (rc == TROVE_OK) {
        s.idle = o->idle_secs >= 0 ? o->idle_secs : cfg.daemon_idle;
        config_free(&cfg);
    }
    if (rc == TROVE_OK && pipe2(s.stop, O_CLOEXEC | O_NONBLOCK) != 0)
        rc = trove_fail(TROVE_EIO, "pipe: %s", strerror(errno));
    if (rc == TROVE_OK)
        rc = bind_socket(&s);
    if (rc) {
        store_lock_release(s.index_lock);
        if (s.lock_fd >= 0)
            close(s.lock_fd);
        if (s.listen_fd >= 0)
            close(s.listen_fd);
        free(s.index_path);
        free(s.config_file);
        free(s.model);
        free(s.sock_path);
        return rc;
    }
    /* A request's few hundred KiB of heap stay with its thread's arena for
     * the next one: by default glibc gave them back (MADV_DONTNEED) at
     * every other request and took them again page by page, ~15 page
     * faults a request; and blocks up to 4 MiB come from the arena, not a
     * fresh mmap each (setting the trim threshold stops glibc raising the
     * mmap threshold by itself). */
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    pthread_mutex_init(&s.write_mu, NULL);
    pthread_cond_init(&s.writers_cv, NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s.nh = o->handles > 0 ? o->handles : (int)(cpus < 2 ? 2 : cpus > 8 ? 8 : cpus);
    s.h = xcalloc((size_t)s.nh, sizeof *s.h);
    s.models = api_models_new();
    s.started = s.last_activity = clock_seconds();
    the_srv = &s;
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    logf_("serving %s on %s (pid %d, %d handles, idle exit %s)", s.index_path, s.sock_path,
          (int)getpid(), s.nh, s.idle > 0 ? "on" : "off");
    if (o->on_ready)
        o->on_ready(o->ready_ctx, s.sock_path);
    serve(&s);
    shutdown_srv(&s);
    logf_("stopped; removed %s", s.sock_path);
    free(s.model);
    free(s.index_path);
    free(s.config_file);
    free(s.sock_path);
    free(s.last_why);
    return TROVE_OK;
}
