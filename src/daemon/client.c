#include "daemon/client.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/wire.h"
#include "util/buf.h"
#include "store/store_lock.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"

struct dcl {
    int fd;
    char *index_path, *config_file;
    double timeout;
    int failed;        /* last failure: the daemon could not be used */
    long next_id;
    tbuf in;           /* bytes received past the last answer */
    int boundary;      /* requests ask for the agent boundary (dcl_set_boundary) */
};

void dcl_set_boundary(dcl *c, int on)
{
    if (c)
        c->boundary = on != 0;
}

char *dcl_socket_dir(void)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (rt && *rt == '/') {
        tbuf b = {0};
        tbuf_printf(&b, "%s/trove", rt);
        return tbuf_detach(&b);
    }
    return fs_xdg_path(NULL, "XDG_CACHE_HOME", ".cache", "trove/run");
}

char *dcl_abs_path(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return xstrdup(buf);
    tbuf b = {0};
    const char *slash = strrchr(path, '/');
    if (slash) {
        /* The file may not exist yet; its folder usually does. */
        char *dir = xstrndup(path, (size_t)(slash - path));
        if (realpath(*dir ? dir : "/", buf)) {
            tbuf_printf(&b, "%s/%s", strcmp(buf, "/") ? buf : "", slash + 1);
            free(dir);
            return tbuf_detach(&b);
        }
        free(dir);
    }
    if (path[0] == '/')
        return xstrdup(path);
    if (getcwd(buf, sizeof buf))
        tbuf_printf(&b, "%s/%s", buf, path);
    else
        tbuf_puts(&b, path);
    return tbuf_detach(&b);
}

/* The socket of the index whose absolute path is abs. */
static char *socket_of(const char *abs)
{
    char *dir = dcl_socket_dir();
    char *def_raw = fs_xdg_path(NULL, "XDG_CACHE_HOME", ".cache", "trove/index.db");
    char *def = dcl_abs_path(def_raw);
    tbuf b = {0};
    if (strcmp(abs, def) == 0)
        tbuf_printf(&b, "%s/trove.sock", dir);
    else
        tbuf_printf(&b, "%s/trove-%016llx.sock", dir, (unsigned long long)str_hash(abs, strlen(abs)));
    free(dir);
    free(def_raw);
    free(def);
    struct sockaddr_un sa;
    if (b.len >= sizeof sa.sun_path) {
        trove_fail(TROVE_ERANGE, "socket path %s is longer than the %zu bytes a Unix socket "
                   "allows; set XDG_RUNTIME_DIR to a shorter folder", b.data, sizeof sa.sun_path - 1);
        tbuf_free(&b);
        return NULL;
    }
    return tbuf_detach(&b);
}

char *dcl_socket_path(const char *index_path)
{
    char *abs = dcl_abs_path(index_path);
    char *sock = socket_of(abs);
    free(abs);
    return sock;
}

static void set_timeouts(int fd, double secs)
{
    struct timeval tv = {.tv_sec = (time_t)secs, .tv_usec = (suseconds_t)((secs - (double)(time_t)secs) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

void dcl_set_timeout(dcl *c, double timeout_s)
{
    c->timeout = timeout_s;
    if (c->fd >= 0)
        set_timeouts(c->fd, timeout_s);
}

char *dcl_holder_socket(const char *index_path)
{
    long pid;
    char *sock = NULL;
    if (!store_lock_holder(index_path, &pid, &sock))
        return NULL;
    struct sockaddr_un sa;
    if (sock && strlen(sock) >= sizeof sa.sun_path) {
        free(sock);
        sock = NULL;
    }
    return sock;
}

/* Connect to the socket at `path`; abs: the index's absolute path. */
static trove_err connect_at(const char *path, const char *abs, const char *config_file,
                            double timeout_s, dcl **out)
{
    *out = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return trove_fail(TROVE_EIO, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return trove_fail(TROVE_ENOENT, "no daemon at %s: %s", path, strerror(e));
    }
    /* Only a daemon of our own user: one of another user (a socket in a
     * folder someone else made) could answer anything. */
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != geteuid()) {
        close(fd);
        return trove_fail(TROVE_EACCES, "the daemon at %s runs as another user", path);
    }
    set_timeouts(fd, timeout_s);
    dcl *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->index_path = xstrdup(abs);
    c->config_file = config_file ? dcl_abs_path(config_file) : NULL;
    c->timeout = timeout_s;
    *out = c;
    return TROVE_OK;
}

/* dcl_connect once the index's absolute path (abs) and socket (sock, NULL
 * when too long: its trove_fail detail is set) are known; holder: the
 * socket the index's lock names, when the caller looked already. */
static trove_err connect_known(const char *index_path, const char *abs, const char *sock,
                               char *holder, int looked, const char *config_file,
                               double timeout_s, dcl **out)
{
    *out = NULL;
    if (!sock) {
        free(holder);
        return TROVE_ERANGE;
    }
    trove_err rc = connect_at(sock, abs, config_file, timeout_s, out);
    if (rc != TROVE_ENOENT) {
        free(holder);
        return rc;
    }
    /* No daemon on our socket; one started with another $XDG_RUNTIME_DIR
     * may still hold the index (its lock names its socket). */
    char *other = looked ? holder : dcl_holder_socket(index_path);
    if (other && strcmp(other, sock) != 0) {
        char *detail = xstrdup(trove_errmsg());
        if (connect_at(other, abs, config_file, timeout_s, out) == TROVE_OK) {
            free(detail);
            free(other);
            return TROVE_OK;
        }
        trove_fail(rc, "%s", detail);
        free(detail);
    }
    free(other);
    return rc;
}

trove_err dcl_connect(const char *index_path, const char *config_file, double timeout_s, dcl **out)
{
    char *abs = dcl_abs_path(index_path);
    char *sock = socket_of(abs);
    trove_err rc = connect_known(index_path, abs, sock, NULL, 0, config_file, timeout_s, out);
    free(sock);
    free(abs);
    return rc;
}

void dcl_close(dcl *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->index_path);
    free(c->config_file);
    tbuf_free(&c->in);
    free(c);
}

int dcl_failed(const dcl *c)
{
    return c->failed;
}

dcl *dcl_probe(const char *index_path, const config *cfg, double timeout_s, int *there)
{
    if (there)
        *there = 0;
    if (cfg->daemon_off)
        return NULL;
    /* Cheap check first: most cold runs have no daemon, and its socket
     * file is then missing. The index's absolute path and socket are
     * worked out once (each realpath() is a readlink per path component). */
    char *abs = dcl_abs_path(index_path);
    char *sock = socket_of(abs);
    struct stat sb;
    int here = sock && stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode);
    /* a daemon of this index on another socket folder */
    char *holder = here ? NULL : dcl_holder_socket(index_path);
    int found = here || holder;
    dcl *d = NULL;
    if (found &&
        connect_known(index_path, abs, sock, holder, !here, cfg->file, timeout_s, &d) != TROVE_OK)
        d = NULL;
    if (there)
        *there = found;
    free(sock);
    free(abs);
    trove_errclear();
    return d;
}

dcl *dcl_find(const char *index_path, const config *cfg, double timeout_s)
{
    return dcl_probe(index_path, cfg, timeout_s, NULL);
}

int dcl_answered(dcl *d)
{
    int cold = dcl_failed(d);
    dcl_close(d);
    if (cold)
        trove_errclear();
    return !cold;
}

static trove_err broken(dcl *c, const char *fmt, const char *what)
{
    c->failed = 1;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    return trove_fail(TROVE_EIO, fmt, what);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One recv more into c->in: TROVE_OK with at least a byte added, or the
 * connection is broken (closed, an error, or nothing by the deadline). */
static trove_err fill(dcl *c, double deadline)
{
    for (;;) {
        if (clock_seconds() > deadline)
            return broken(c, "daemon: %s", "no answer in time");
        /* Straight into c->in: a 64 KB buffer on the stack cost every
         * client process the fresh stack pages below it (and a copy).
         * 16 KB with the NUL: a heap block, below malloc's mmap threshold. */
        enum { CHUNK = 16 * 1024 - 1 };
        ssize_t r = recv(c->fd, tbuf_room(&c->in, CHUNK), CHUNK, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return broken(c, "daemon: %s", r == 0 ? "connection closed" : strerror(errno));
        tbuf_grew(&c->in, (size_t)r);
        return TROVE_OK;
    }
}

/* One line from the daemon (without its '\n') into `line`. */
static trove_err read_line(dcl *c, tbuf *line)
{
    double deadline = clock_seconds() + c->timeout;
    for (;;) {
        char *nl = c->in.len ? memchr(c->in.data, '\n', c->in.len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - c->in.data);
            tbuf_reset(line);
            tbuf_append(line, c->in.data, n);
            memmove(c->in.data, nl + 1, c->in.len - n - 1);
            c->in.len -= n + 1;
            c->in.data[c->in.len] = '\0';
            return TROVE_OK;
        }
        trove_err rc = fill(c, deadline);
        if (rc)
            return rc;
    }
}

/* n bytes that follow an answer's line into `to`. */
static trove_err read_bytes(dcl *c, size_t n, tbuf *to)
{
    double deadline = clock_seconds() + c->timeout;
    while (c->in.len < n) {
        trove_err rc = fill(c, deadline);
        if (rc)
            return rc;
    }
    tbuf_append(to, c->in.data, n);
    memmove(c->in.data, c->in.data + n, c->in.len - n);
    c->in.len -= n;
    return TROVE_OK;
}

/* A rendered answer's byte counts, each 0..1 GiB; -1 when malformed. */
static int64_t rendered_len(const json_t *result, const char *key)
{
    const json_t *v = json_object_get(result, key);
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
    return n >= 0 && n <= (1 << 30) ? (int64_t)n : -1;
}

/* dcl_call, the request carrying "render": how (borrowed) when not NULL;
 * then the rendered bytes that follow the answer into *payload. */
static trove_err call(dcl *c, const char *op, json_t *args, const json_t *how, json_t **result,
                      tbuf *payload)
{
    *result = NULL;
    c->failed = 0;
    if (c->fd < 0) {
        json_decref(args);
        c->failed = 1;
        return trove_fail(TROVE_EIO, "daemon: connection closed");
    }
    long id = ++c->next_id;
    json_t *req = json_pack("{s:i, s:I, s:s, s:o*}", "v", WIRE_PROTOCOL, "id", (json_int_t)id, "op", op,
                            "args", args ? args : json_object());
    if (!req)
        return broken(c, "daemon: %s", "request not encodable");
    json_object_set_new(req, "index", wire_str(c->index_path));
    if (c->boundary)
        json_object_set_new(req, "boundary", json_true());
    if (c->config_file)
        json_object_set_new(req, "config", wire_str(c->config_file));
    if (how)
        json_object_set_new(req, "render", json_deep_copy(how));
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text)
        return broken(c, "daemon: %s", "request not encodable");
    tbuf line = {0};
    tbuf_puts(&line, text);
    free(text);
    tbuf_putc(&line, '\n');
    int w = write_all(c->fd, line.data, line.len);
    trove_err rc = w ? broken(c, "daemon: %s", strerror(errno)) : read_line(c, &line);
    if (rc) {
        tbuf_free(&line);
        return rc;
    }
    json_error_t jerr;
    json_t *resp = json_loadb(line.data, line.len, 0, &jerr);
    tbuf_free(&line);
    const json_t *rid = resp ? json_object_get(resp, "id") : NULL;
    const json_t *ok = resp ? json_object_get(resp, "ok") : NULL;
    if (!resp || !json_is_object(resp) || !json_is_boolean(ok) || !json_is_integer(rid) ||
        json_integer_value(rid) != id) {
        json_decref(resp);
        return broken(c, "daemon: %s", "malformed answer");
    }
    if (c->boundary && !json_is_true(json_object_get(resp, "boundary"))) {
        /* a daemon older than the boundary answered without it: never use
         * that answer; the cold path keeps the boundary */
        json_decref(resp);
        c->failed = 1;
        return trove_fail(TROVE_EIO, "daemon: it does not keep the agent boundary");
    }
    if (json_is_true(ok)) {
        *result = json_incref(json_object_get(resp, "result"));
        json_decref(resp);
        if (!*result)
            return broken(c, "daemon: %s", "answer without result");
        if (!how)
            return TROVE_OK;
        int64_t no = rendered_len(*result, "out_bytes"), ne = rendered_len(*result, "err_bytes");
        rc = no < 0 || ne < 0 ? broken(c, "daemon: %s", "malformed answer")
                              : read_bytes(c, (size_t)(no + ne), payload);
        if (rc) {
            json_decref(*result);
            *result = NULL;
        }
        return rc;
    }
    const json_t *err = json_object_get(resp, "error");
    const char *code = json_string_value(json_object_get(err, "code"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    int e = wire_code_from_name(code);
    if (e <= TROVE_OK || e >= TROVE_ERR_COUNT) {
        /* A refusal (WIRE_EPROTO, WIRE_EMISMATCH, WIRE_E2BIG) or a code we
         * do not know: the daemon could not serve this request; the cold
         * path can. */
        c->failed = 1;
        rc = trove_fail(TROVE_EIO, "daemon: %s: %s", code ? code : "?", msg ? msg : "");
    } else {
        rc = trove_fail((trove_err)e, "%s", msg ? msg : "");
    }
    json_decref(resp);
    return rc;
}

trove_err dcl_call(dcl *c, const char *op, json_t *args, json_t **result)
{
    return call(c, op, args, NULL, result, NULL);
}

/* A malformed answer means the daemon is not usable. */
static trove_err decoded(dcl *c, trove_err rc)
{
    if (rc)
        c->failed = 1;
    return rc;
}

/* The path rows of t (merged ones included) in obj made absolute: a
 * daemon has another cwd. The strings made are added to made[]. */
static void absolute_paths(const wire_type *t, char *obj, char **made, size_t *n_made)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const wire_field *f = &t->fields[i];
        const char **p = (const char **)(void *)(obj + f->off);
        if (!f->key[0] && f->kind == WIRE_OBJ)
            absolute_paths(wire_sub(f), obj + f->off, made, n_made);
        else if (f->path && *p && (*p)[0] != '/' && *n_made < 8)
            *p = made[(*n_made)++] = dcl_abs_path(*p);
    }
}

/* The arguments as sent: a copy with relative paths made absolute (the
 * strings made are in made[], freed by args_sent_free). */
typedef struct args_sent {
    char *copy, *made[8];
    size_t n_made;
} args_sent;

static json_t *args_json(const wire_request *q, const void *args, args_sent *as)
{
    memset(as, 0, sizeof *as);
    if (!q->args)
        return NULL;
    as->copy = xmalloc(q->args->size);
    memcpy(as->copy, args, q->args->size);
    absolute_paths(q->args, as->copy, as->made, &as->n_made);
    return wire_emit(q->args, as->copy);
}

static void args_sent_free(args_sent *as)
{
    free(as->copy);
    for (size_t i = 0; i < as->n_made; i++)
        free(as->made[i]);
}

trove_err dcl_render(dcl *c, int op, const void *args, const json_t *how, json_t **result,
                     tbuf *payload)
{
    args_sent as;
    json_t *a = args_json(&wire_requests[op], args, &as);
    trove_err rc = call(c, wire_requests[op].op, a, how, result, payload);
    args_sent_free(&as);
    return rc;
}

trove_err dcl_request(dcl *c, int op, const void *args, void *out)
{
    const wire_request *q = &wire_requests[op];
    memset(out, 0, q->result->size);
    args_sent as;
    json_t *a = args_json(q, args, &as);
    const char *sent = as.copy;
    json_t *res;
    trove_err rc = dcl_call(c, q->op, a, &res);
    if (rc == TROVE_OK) {
        rc = decoded(c, wire_parse(q->result, res, out, NULL));
        json_decref(res);
        if (rc) {
            wire_free(q->result, out);
            memset(out, 0, q->result->size);
        }
    }
    /* The reranker as the caller gave it, as the cold path reports it. */
    api_query_info *info = op == WIRE_OP_QUERY ? &((wire_query_answer *)out)->info : NULL;
    const char *rr = info ? ((const api_query_opts *)sent)->reranker : NULL;
    if (rc == TROVE_OK && info && info->reranker && rr && strcmp(info->reranker, rr) == 0) {
        free(info->reranker);
        info->reranker = xstrdup(((const api_query_opts *)args)->reranker);
    }
    args_sent_free(&as);
    return rc;
}

int dcl_update_unwalked(dcl *c, const api_update_opts *o, index_update_result *out, char **why)
{
    memset(out, 0, sizeof *out);
    *why = NULL;
    api_update_opts u = *o;
    u.unwalked = 1;
    json_t *res = NULL;
    trove_err rc = dcl_render(c, WIRE_OP_UPDATE, &u, NULL, &res, NULL);
    if (rc == TROVE_OK && !json_is_false(json_object_get(res, "walked"))) {
        /* a daemon older than "unwalked" walked: a right answer, but this
         * caller says whether it walked, so it walks itself */
        rc = trove_fail(TROVE_EIO, "the daemon does not answer an update without a walk");
    } else if (rc == TROVE_OK) {
        rc = wire_parse(wire_requests[WIRE_OP_UPDATE].result, res, out, NULL);
    }
    json_decref(res);
    if (rc == TROVE_OK)
        return 1;
    static const char refused[] = "daemon: EWALK: ";
    const char *m = trove_errmsg();
    *why = xstrdup(strncmp(m, refused, sizeof refused - 1) == 0 ? m + sizeof refused - 1 : m);
    trove_errclear();
    return 0;
}

int dcl_try(dcl *d, int op, const void *args, void *out, trove_err *err)
{
    if (!d)
        return 0;
    *err = dcl_request(d, op, args, out);
    return dcl_answered(d);
}

trove_err dcl_or_cold(dcl *d, api *a, int op, void *args, void *out)
{
    trove_err err;
    if (dcl_try(d, op, args, out, &err))
        return err;
    return wire_call(a, op, args, out);
}

trove_err dcl_status(dcl *c, api_status *out, json_t **daemon)
{
    memset(out, 0, sizeof *out);
    if (daemon)
        *daemon = NULL;
    json_t *res;
    trove_err rc = dcl_call(c, wire_requests[WIRE_OP_STATUS].op, NULL, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_status_parse(res, out));
    if (rc)
        api_status_free(out);
    else if (daemon)
        *daemon = json_incref(json_object_get(res, "daemon"));
    json_decref(res);
    return rc;
}

trove_err dcl_shutdown(dcl *c)
{
    json_t *res;
    trove_err rc = dcl_call(c, wire_requests[WIRE_OP_SHUTDOWN].op, NULL, &res);
    json_decref(res);
    return rc;
}
