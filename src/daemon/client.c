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
};

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

char *dcl_socket_path(const char *index_path)
{
    char *dir = dcl_socket_dir();
    char *abs = dcl_abs_path(index_path);
    char *def_raw = fs_xdg_path(NULL, "XDG_CACHE_HOME", ".cache", "trove/index.db");
    char *def = dcl_abs_path(def_raw);
    tbuf b = {0};
    if (strcmp(abs, def) == 0)
        tbuf_printf(&b, "%s/trove.sock", dir);
    else
        tbuf_printf(&b, "%s/trove-%016llx.sock", dir, (unsigned long long)str_hash(abs, strlen(abs)));
    free(dir);
    free(abs);
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

static trove_err connect_at(char *path, const char *index_path, const char *config_file,
                            double timeout_s, dcl **out);

trove_err dcl_connect(const char *index_path, const char *config_file, double timeout_s, dcl **out)
{
    *out = NULL;
    char *path = dcl_socket_path(index_path);
    if (!path)
        return TROVE_ERANGE;
    trove_err rc = connect_at(path, index_path, config_file, timeout_s, out);
    if (rc != TROVE_ENOENT)
        return rc;
    /* No daemon on our socket; one started with another $XDG_RUNTIME_DIR
     * may still hold the index (its lock names its socket). */
    char *other = dcl_holder_socket(index_path);
    char *ours = dcl_socket_path(index_path);
    if (other && ours && strcmp(other, ours) != 0) {
        char *detail = xstrdup(trove_errmsg());
        if (connect_at(other, index_path, config_file, timeout_s, out) == TROVE_OK) {
            free(detail);
            free(ours);
            return TROVE_OK;
        }
        trove_fail(rc, "%s", detail);
        free(detail);
    } else {
        free(other);
    }
    free(ours);
    return rc;
}

/* Connect to the socket at `path` (taken: freed here). */
static trove_err connect_at(char *path, const char *index_path, const char *config_file,
                            double timeout_s, dcl **out)
{
    *out = NULL;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        free(path);
        return trove_fail(TROVE_EIO, "socket: %s", strerror(errno));
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        trove_err rc = trove_fail(TROVE_ENOENT, "no daemon at %s: %s", path, strerror(e));
        free(path);
        return rc;
    }
    /* Only a daemon of our own user: one of another user (a socket in a
     * folder someone else made) could answer anything. */
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.uid != geteuid()) {
        close(fd);
        trove_err rc = trove_fail(TROVE_EACCES, "the daemon at %s runs as another user", path);
        free(path);
        return rc;
    }
    free(path);
    set_timeouts(fd, timeout_s);
    dcl *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->index_path = dcl_abs_path(index_path);
    c->config_file = config_file ? dcl_abs_path(config_file) : NULL;
    c->timeout = timeout_s;
    *out = c;
    return TROVE_OK;
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

dcl *dcl_find(const char *index_path, const config *cfg, double timeout_s)
{
    if (cfg->daemon_off)
        return NULL;
    /* Cheap check first: most cold runs have no daemon, and its socket
     * file is then missing. */
    char *sock = dcl_socket_path(index_path);
    struct stat sb;
    int there = sock && stat(sock, &sb) == 0 && S_ISSOCK(sb.st_mode);
    free(sock);
    if (!there) {
        /* a daemon of this index on another socket folder */
        char *other = dcl_holder_socket(index_path);
        there = other != NULL;
        free(other);
    }
    dcl *d = NULL;
    if (!there || dcl_connect(index_path, cfg->file, timeout_s, &d) != TROVE_OK)
        d = NULL;
    trove_errclear();
    return d;
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
        if (clock_seconds() > deadline)
            return broken(c, "daemon: %s", "no answer in time");
        char buf[65536];
        ssize_t r = recv(c->fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return broken(c, "daemon: %s", r == 0 ? "connection closed" : strerror(errno));
        tbuf_append(&c->in, buf, (size_t)r);
    }
}

trove_err dcl_call(dcl *c, const char *op, json_t *args, json_t **result)
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
    if (c->config_file)
        json_object_set_new(req, "config", wire_str(c->config_file));
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
    if (json_is_true(ok)) {
        *result = json_incref(json_object_get(resp, "result"));
        json_decref(resp);
        if (!*result)
            return broken(c, "daemon: %s", "answer without result");
        return TROVE_OK;
    }
    const json_t *err = json_object_get(resp, "error");
    const char *code = json_string_value(json_object_get(err, "code"));
    const char *msg = json_string_value(json_object_get(err, "message"));
    int e = wire_err_from_name(code);
    if (e <= 0) {
        /* EPROTO, EMISMATCH, E2BIG, EBUSY...: the daemon could not serve
         * this request; the cold path can. */
        c->failed = 1;
        rc = trove_fail(TROVE_EIO, "daemon: %s: %s", code ? code : "?", msg ? msg : "");
    } else {
        rc = trove_fail((trove_err)e, "%s", msg ? msg : "");
    }
    json_decref(resp);
    return rc;
}

/* Decode a result; a malformed one means the daemon is not usable. */
static trove_err decoded(dcl *c, trove_err rc)
{
    if (rc)
        c->failed = 1;
    return rc;
}

trove_err dcl_search(dcl *c, const api_search_opts *o, search_results *out)
{
    memset(out, 0, sizeof *out);
    /* A model path means the same file to a daemon with another cwd. */
    api_search_opts abs = *o;
    char *model = o->model && o->model[0] != '/' ? dcl_abs_path(o->model) : NULL;
    if (model)
        abs.model = model;
    json_t *args = wire_search_opts(&abs), *res;
    free(model);
    trove_err rc = dcl_call(c, o->search.vector_only ? "vsearch" : "search", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_search_results_parse(res, out));
    json_decref(res);
    if (rc)
        search_results_free(out);
    return rc;
}

trove_err dcl_query(dcl *c, const api_query_opts *o, search_results *out, api_query_info *info)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    api_query_opts abs = *o;
    char *model = o->base.model && o->base.model[0] != '/' ? dcl_abs_path(o->base.model) : NULL;
    char *rr = o->reranker && o->reranker[0] != '/' ? dcl_abs_path(o->reranker) : NULL;
    if (model)
        abs.base.model = model;
    if (rr)
        abs.reranker = rr;
    json_t *args = wire_query_opts(&abs), *res;
    trove_err rc = dcl_call(c, "query", args, &res);
    if (rc == TROVE_OK) {
        rc = decoded(c, wire_query_result_parse(res, out, info));
        json_decref(res);
    }
    /* The model path as the caller gave it, as the cold path reports it. */
    if (rc == TROVE_OK && info->reranker && abs.reranker &&
        strcmp(info->reranker, abs.reranker) == 0) {
        free(info->reranker);
        info->reranker = xstrdup(o->reranker);
    }
    if (rc) {
        search_results_free(out);
        api_query_info_free(info);
    }
    free(model);
    free(rr);
    return rc;
}

trove_err dcl_get(dcl *c, const char *cwd, const char *ref, long line, long count, api_note *out)
{
    memset(out, 0, sizeof *out);
    json_t *args = json_object(), *res;
    json_object_set_new(args, "ref", wire_str(ref));
    json_object_set_new(args, "line", json_integer(line));
    json_object_set_new(args, "count", json_integer(count));
    if (cwd)
        json_object_set_new(args, "cwd", wire_str(cwd));
    trove_err rc = dcl_call(c, "get", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_note_parse(res, out));
    json_decref(res);
    if (rc)
        api_note_free(out);
    return rc;
}

trove_err dcl_similar(dcl *c, const api_similar_opts *o, search_results *out,
                      api_similar_info *info)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    api_similar_opts abs = *o;
    char *model = o->model && o->model[0] != '/' ? dcl_abs_path(o->model) : NULL;
    if (model)
        abs.model = model;
    json_t *args = wire_similar_opts(&abs), *res;
    free(model);
    trove_err rc = dcl_call(c, "similar", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_similar_result_parse(res, out, info));
    json_decref(res);
    if (rc) {
        search_results_free(out);
        api_similar_info_free(info);
    }
    return rc;
}

trove_err dcl_links(dcl *c, const char *cwd, const char *ref, api_link_set *out)
{
    memset(out, 0, sizeof *out);
    json_t *args = json_object(), *res;
    json_object_set_new(args, "ref", wire_str(ref));
    if (cwd)
        json_object_set_new(args, "cwd", wire_str(cwd));
    trove_err rc = dcl_call(c, "links", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_link_set_parse(res, out));
    json_decref(res);
    if (rc)
        api_link_set_free(out);
    return rc;
}

trove_err dcl_multi_get(dcl *c, const char *glob, size_t max_bytes, api_notes *out)
{
    memset(out, 0, sizeof *out);
    json_t *args = json_object(), *res;
    json_object_set_new(args, "glob", wire_str(glob));
    json_object_set_new(args, "max_bytes", json_integer((json_int_t)max_bytes));
    trove_err rc = dcl_call(c, "multi_get", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_notes_parse(res, out));
    json_decref(res);
    if (rc)
        api_notes_free(out);
    return rc;
}

trove_err dcl_ls(dcl *c, const char *target, api_listing *out)
{
    memset(out, 0, sizeof *out);
    json_t *args = json_object(), *res;
    json_object_set_new(args, "target", wire_str(target));
    trove_err rc = dcl_call(c, "ls", args, &res);
    if (rc)
        return rc;
    rc = decoded(c, wire_listing_parse(res, out));
    json_decref(res);
    if (rc)
        api_listing_free(out);
    return rc;
}

trove_err dcl_status(dcl *c, api_status *out, json_t **daemon)
{
    memset(out, 0, sizeof *out);
    if (daemon)
        *daemon = NULL;
    json_t *res;
    trove_err rc = dcl_call(c, "status", NULL, &res);
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
    trove_err rc = dcl_call(c, "shutdown", NULL, &res);
    json_decref(res);
    return rc;
}
