/* server — the trove daemon: one index, one Unix socket, many clients.
 *
 * dmn_run() binds the socket of the index (client.h names it), then serves
 * the protocol of docs/daemon.md until SIGTERM/SIGINT, a `shutdown`
 * request, or `idle_secs` without a request; it removes its socket on the
 * way out. Each connection gets a thread (at most DMN_MAX_CONNS; beyond
 * that a client is answered EBUSY; the threads are kept and wait in
 * accept() between connections), and requests run on one of a fixed pool
 * of api handles, each with its own read connection, so a slow client
 * holds a thread, never a handle, and searches see the last committed
 * update. Updates (requests and the watcher's) take one writer lock.
 *
 * Ownership: dmn_opts strings are borrowed for the duration of dmn_run. */
#ifndef TROVE_DAEMON_SERVER_H
#define TROVE_DAEMON_SERVER_H

#include <jansson.h>

#include "util/buf.h"
#include "util/err.h"

#define DMN_MAX_CONNS 64

typedef struct dmn_opts {
    const char *index_path;
    double idle_secs;        /* < 0: the config's daemon_idle; 0: never */
    int handles;             /* api handles for requests; <= 0: one per CPU, 2..8 */
    int watch;               /* run the file watcher */
    /* The embedding model (GGUF file or model2vec folder; NULL: none): the
     * watcher embeds what each of its updates changed, as `trove update`
     * does with a model. */
    const char *model;
    /* Optional: the answer in the asking front end's own output form, for
     * a request that carries "render" (docs/daemon.md): op (WIRE_OP_*), its
     * decoded arguments and its answer struct, and the request's "render"
     * value. Appends what the front end would print to out and err
     * (the CLI's stdout and stderr) and returns its exit code, or -1 when
     * it cannot render that op or form: the request is then refused
     * (EPROTO) and the client answers cold. Without it every such request
     * is refused. Runs on a request thread: it must be thread-safe. */
    int (*render)(int op, const void *args, const void *result, const json_t *how, tbuf *out,
                  tbuf *err);
    /* Called once the socket listens (the --detach parent waits for it). */
    void (*on_ready)(void *ctx, const char *socket_path);
    void *ready_ctx;
} dmn_opts;

/* TROVE_EEXIST when a live daemon already serves the index; TROVE_EACCES
 * when the socket folder is not private to this user. */
trove_err dmn_run(const dmn_opts *o);

#endif
