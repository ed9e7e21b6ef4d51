/* http — what trove's HTTP servers (`mcp --http`, `serve`) share:
 * libmicrohttpd loaded on first use, the [HOST:]PORT spec, the listening
 * socket, the guards every request passes first (Host and Origin against
 * DNS rebinding, the bearer token) and the serve loop that runs until a
 * stop flag is set by a signal.
 *
 * libmicrohttpd is dlopen()ed: linking it pulls GnuTLS and eight more
 * libraries (and their constructors) into every trove process. Its headers
 * still give the types. http_mhd's pointers are valid after http_load().
 * Nothing here allocates what a caller must free. */
#ifndef TROVE_HTTP_H
#define TROVE_HTTP_H

#include <microhttpd.h>
#include <stddef.h>

#include "util/err.h"

typedef struct http_fns {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_get_connection_values) *get_connection_values;
} http_fns;

extern http_fns http_mhd;

/* Load libmicrohttpd once; TROVE_EUNSUPPORTED naming `who` (the command
 * that needs it) and the package to install when it is missing. */
trove_err http_load(const char *who);

/* A request header, NULL when absent. */
const char *http_header(struct MHD_Connection *c, const char *name);

/* "[HOST:]PORT", "[V6]:PORT" or "localhost:PORT" → a numeric host
 * (127.0.0.1 when none or localhost) and port 0..65535; 0 when malformed
 * or HOST is a name (resolving one would ask a resolver that may say
 * anything). */
int http_parse_listen(const char *spec, char *host, size_t host_size, int *port);
/* A numeric loopback address (127.0.0.0/8, ::1). */
int http_is_loopback(const char *host);
/* localhost, 127.0.0.0/8 or ::1 as a whole name, never as a prefix. */
int http_loopback_name(const char *h);

/* Who may talk to a server. */
typedef struct http_guard {
    const char *host;                 /* the bound address (numeric) */
    const char *token;                /* required bearer token, NULL: none */
    const char *const *origins;       /* browser origins allowed besides loopback */
    size_t n_origins;
} http_guard;

/* Host names a loopback address or the bound one (a page loaded through
 * DNS rebinding sends the attacker's name). */
int http_host_ok(const http_guard *g, const char *host);
/* Origin absent (not a browser), a loopback origin, the bound address,
 * or one configured. */
int http_origin_ok(const http_guard *g, const char *origin);
/* `got` equals `want` (want NULL: anything), in time independent of
 * where they differ. */
int http_secret_ok(const char *want, const char *got);
/* "Bearer TOKEN" carrying g's token (any when g has none). */
int http_bearer_ok(const http_guard *g, const char *authorization);

typedef struct http_serve_opts {
    const char *host;       /* numeric */
    int port;               /* 0: any free port */
    const char *path;       /* appended to the URL announced, e.g. "/mcp" or "/" */
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    MHD_RequestCompletedCallback completed;   /* may be NULL */
    void *completed_cls;
    void (*on_listen)(const char *url, void *ctx);   /* once listening */
    void *ctx;
    volatile int *stop;     /* serve until *stop (set by SIGINT/SIGTERM handlers) */
} http_serve_opts;

/* Listen, start libmicrohttpd's polling thread (every handler runs on it,
 * one at a time), wait for *stop, stop. SIGINT and SIGTERM are blocked in
 * the server thread, so they reach the caller's handlers. */
trove_err http_serve(const http_serve_opts *o);

#endif
