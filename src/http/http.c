/* http — libmicrohttpd loading, listen specs, request guards, serve loop. */
#include "http/http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/str.h"

http_fns http_mhd;
static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static int mhd_ok;

static void mhd_load(void)
{
    static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !mhd_ok; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        http_fns *f = &http_mhd;
        *(void **)&f->start_daemon = dlsym(h, "MHD_start_daemon");
        *(void **)&f->stop_daemon = dlsym(h, "MHD_stop_daemon");
        *(void **)&f->create_response_from_buffer = dlsym(h, "MHD_create_response_from_buffer");
        *(void **)&f->add_response_header = dlsym(h, "MHD_add_response_header");
        *(void **)&f->queue_response = dlsym(h, "MHD_queue_response");
        *(void **)&f->destroy_response = dlsym(h, "MHD_destroy_response");
        *(void **)&f->lookup_connection_value = dlsym(h, "MHD_lookup_connection_value");
        *(void **)&f->get_connection_values = dlsym(h, "MHD_get_connection_values");
        if (f->start_daemon && f->stop_daemon && f->create_response_from_buffer &&
            f->add_response_header && f->queue_response && f->destroy_response &&
            f->lookup_connection_value && f->get_connection_values)
            mhd_ok = 1;
        else
            dlclose(h);
    }
}

trove_err http_load(const char *who)
{
    pthread_once(&mhd_once, mhd_load);
    if (!mhd_ok)
        return trove_fail(TROVE_EUNSUPPORTED, "cannot load libmicrohttpd.so.12, which `%s` needs "
                          "(install the Debian package libmicrohttpd12, or run "
                          "scripts/install-deps.sh)", who);
    return TROVE_OK;
}

const char *http_header(struct MHD_Connection *c, const char *name)
{
    return http_mhd.lookup_connection_value(c, MHD_HEADER_KIND, name);
}

int http_parse_listen(const char *spec, char *host, size_t host_size, int *port)
{
    const char *colon = strrchr(spec, ':');
    const char *p = colon ? colon + 1 : spec;
    long v;
    if (!str_to_long(p, 0, 65535, &v))
        return 0;
    *port = (int)v;
    if (!colon || colon == spec) {
        snprintf(host, host_size, "127.0.0.1");
        return 1;
    }
    size_t len = (size_t)(colon - spec);
    if (spec[0] == '[' && len >= 2 && spec[len - 1] == ']') {
        spec++;
        len -= 2;
    }
    if (len >= host_size)
        return 0;
    memcpy(host, spec, len);
    host[len] = '\0';
    /* the one name taken: it is loopback by definition (RFC 6761), and
     * resolving it would ask the resolver, which may say anything */
    if (strcasecmp(host, "localhost") == 0) {
        snprintf(host, host_size, "127.0.0.1");
        return 1;
    }
    unsigned char addr[16];
    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

int http_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
}

int http_loopback_name(const char *h)
{
    unsigned char a[16];
    static const unsigned char v6_loop[16] = {[15] = 1};
    if (strcasecmp(h, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, h, a) == 1)
        return a[0] == 127;
    return inet_pton(AF_INET6, h, a) == 1 && memcmp(a, v6_loop, 16) == 0;
}

/* "HOST", "HOST:PORT", "[V6]" or "[V6]:PORT" -> HOST (no brackets). */
static void host_part(const char *s, char *out, size_t size)
{
    size_t len;
    if (s[0] == '[') {
        s++;
        len = strcspn(s, "]");
    } else {
        len = strcspn(s, ":");
    }
    if (len >= size)
        len = size - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

int http_host_ok(const http_guard *g, const char *host)
{
    if (!host)
        return 0;
    char h[256];
    host_part(host, h, sizeof h);
    return http_loopback_name(h) || strcmp(h, g->host) == 0;
}

int http_origin_ok(const http_guard *g, const char *origin)
{
    if (!origin)
        return 1;
    for (size_t i = 0; i < g->n_origins; i++)
        if (strcmp(origin, g->origins[i]) == 0)
            return 1;
    const char *rest = strncmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncmp(origin, "https://", 8) == 0 ? origin + 8
                                                             : NULL;
    if (!rest || strchr(rest, '/'))
        return 0;
    char h[256];
    host_part(rest, h, sizeof h);
    return http_loopback_name(h) || strcmp(h, g->host) == 0;
}

int http_secret_ok(const char *want, const char *got)
{
    if (!want)
        return 1;
    if (!got)
        return 0;
    size_t gl = strlen(got), wl = strlen(want);
    unsigned diff = gl != wl;
    for (size_t i = 0; i < gl; i++)
        diff |= (unsigned char)got[i] ^ (unsigned char)want[i % (wl ? wl : 1)];
    return diff == 0;
}

int http_bearer_ok(const http_guard *g, const char *auth)
{
    if (!g->token)
        return 1;
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return 0;
    return http_secret_ok(g->token, auth + 7);
}

static int listen_socket(const http_serve_opts *o, char *url, size_t url_size)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    int v6 = strchr(o->host, ':') != NULL;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET6, o->host, &a->sin6_addr) != 1)
            return -1;
        sl = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)o->port);
        if (inet_pton(AF_INET, o->host, &a->sin_addr) != 1)
            return -1;
        sl = sizeof *a;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int port = v6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    snprintf(url, url_size, v6 ? "http://[%s]:%d%s" : "http://%s:%d%s", o->host, port,
             o->path ? o->path : "/");
    return fd;
}

trove_err http_serve(const http_serve_opts *o)
{
    char url[160];
    int fd = listen_socket(o, url, sizeof url);
    if (fd < 0)
        return trove_fail(TROVE_EIO, "cannot listen on %s port %d: %s", o->host, o->port,
                          strerror(errno));
    /* Signals go to this thread, not to libmicrohttpd's, which inherits
     * the blocked mask. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    struct MHD_Daemon *d = http_mhd.start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (strchr(o->host, ':') ? MHD_USE_IPv6 : 0),
        0, NULL, NULL, o->handler, o->handler_cls,
        MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, o->completed, o->completed_cls,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
        MHD_OPTION_END);
    if (!d) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(fd);
        return trove_fail(TROVE_EIO, "cannot start the HTTP server on %s", url);
    }
    if (o->on_listen)
        o->on_listen(url, o->ctx);
    sigset_t wait = old;
    sigdelset(&wait, SIGINT);
    sigdelset(&wait, SIGTERM);
    while (!*o->stop)
        sigsuspend(&wait);
    http_mhd.stop_daemon(d);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return TROVE_OK;
}
