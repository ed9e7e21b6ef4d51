/* client — talk to the trove daemon of an index (docs/daemon.md).
 *
 * dcl_connect() finds the socket of an index and connects; dcl_request()
 * sends one request of api/wire's table and decodes the answer into the
 * same struct the matching api_* function fills, so a front end renders
 * both alike.
 * A failed call either carries the daemon's own answer (an error the cold
 * path would give too: dcl_failed() is 0, show it) or means the daemon
 * could not be used (no answer, a malformed one, a daemon for another index:
 * dcl_failed() is 1, answer cold instead). After a transport failure the
 * connection is closed and every later call fails the same way.
 *
 * Ownership: a dcl is created by dcl_connect and freed by dcl_close;
 * results belong to the caller and are freed with the api's *_free(). */
#ifndef TROVE_DAEMON_CLIENT_H
#define TROVE_DAEMON_CLIENT_H

#include <jansson.h>

#include "api/api.h"
#include "api/wire.h"
#include "config/config.h"
#include "util/buf.h"

typedef struct dcl dcl;

/* The socket folder: $XDG_RUNTIME_DIR/trove, else $XDG_CACHE_HOME/trove/run
 * (else ~/.cache/trove/run). Caller frees. */
char *dcl_socket_dir(void);
/* The socket of the index at `index_path` (any form; made absolute):
 * DIR/trove.sock for the default index, DIR/trove-HASH.sock otherwise.
 * NULL (with a trove_fail detail) when the path would not fit a Unix
 * socket address. Caller frees. */
char *dcl_socket_path(const char *index_path);
/* The socket of the daemon that holds the index's lock (store_lock.h),
 * which may be in another socket folder than ours (a daemon started with
 * another $XDG_RUNTIME_DIR); NULL when none holds it. Caller frees. */
char *dcl_holder_socket(const char *index_path);
/* `path` made absolute without requiring it to exist (caller frees). */
char *dcl_abs_path(const char *path);

/* Connect to the daemon of `index_path`: at its socket, else at the socket
 * the index's lock names; requests carry index_path and
 * config_file (absolute) so that a daemon of another index or config
 * refuses them. TROVE_ENOENT when no daemon listens there. timeout_s bounds
 * every later send and receive. */
trove_err dcl_connect(const char *index_path, const char *config_file, double timeout_s, dcl **out);
void dcl_close(dcl *c);
/* A new bound for the later sends and receives on c: for a request the
 * daemon may legitimately compute on for long (a reranked `query`). */
void dcl_set_timeout(dcl *c, double timeout_s);
/* on: every later request asks the daemon to answer past the agent
 * boundary (api.h api_set_boundary; the daemon applies its own config's
 * rule to that request), and an answer that does not say it did counts as
 * "the daemon could not answer" (a daemon older than the boundary). */
void dcl_set_boundary(dcl *c, int on);
/* 1 when the last failure means "the daemon could not answer". */
int dcl_failed(const dcl *c);

/* For a front end (CLI, MCP) that answers cold when no daemon can: the
 * daemon of `index_path` under `cfg`, or NULL (errors cleared) when its
 * socket is missing, cfg says `daemon: off`, or connecting fails. */
dcl *dcl_find(const char *index_path, const config *cfg, double timeout_s);
/* dcl_find, and *there (may be NULL) 1 when a daemon's socket was found,
 * whether or not connecting to it worked (a front end that starts a daemon
 * when none runs must not start a second one). */
dcl *dcl_probe(const char *index_path, const config *cfg, double timeout_s, int *there);
/* After one call on d (from dcl_find): closes d and returns 1 when that
 * call's outcome is the answer (results, or the daemon's own error to
 * show), 0 when the caller must answer cold (the error is then cleared). */
int dcl_answered(dcl *d);

/* One raw request: `args` is taken over (may be NULL); *result is a new
 * reference on success. */
trove_err dcl_call(dcl *c, const char *op, json_t *args, json_t **result);

/* Request op (WIRE_OP_*, api/wire.h) with args, a struct of its argument
 * table; the answer decoded into out, a struct of its result table
 * (wire_requests[op]; freed with wire_free(), or its own *_free(), after
 * TROVE_OK). Relative model and reranker paths are sent absolute; the
 * answer's reranker is then the caller's path as given, as cold. */
trove_err dcl_request(dcl *c, int op, const void *args, void *out);

/* Request op with args (as dcl_request) asking the daemon to answer in the
 * front end's own output form: the request carries "render": how, which
 * the daemon's render hook (server.h) reads. *result is the answer's
 * {"rc", "out_bytes", "err_bytes"} (new reference on success) and
 * *payload receives the bytes that follow the answer's line (out_bytes of
 * stdout, then err_bytes of stderr). A daemon that cannot render it
 * refuses (dcl_failed() is 1: answer cold). */
trove_err dcl_render(dcl *c, int op, const void *args, const json_t *how, json_t **result,
                     tbuf *payload);

/* The one fallback rule every front end uses. dcl_try: op asked of d (from
 * dcl_find, may be NULL; closed here); 1 when that is the answer (*err its
 * error, out filled on TROVE_OK), 0 when the caller must answer cold:
 *     if (!dcl_try(d, WIRE_OP_LS, &args, &out, &err))
 *         err = wire_call(a, WIRE_OP_LS, &args, &out);   (after opening a)
 * dcl_or_cold: both, for a caller whose api handle is open already. */
int dcl_try(dcl *d, int op, const void *args, void *out, trove_err *err);
trove_err dcl_or_cold(dcl *d, api *a, int op, void *args, void *out);

/* `trove update` without a walk (api_update_opts.unwalked; docs/daemon.md):
 * 1 and *out filled (as api_update() fills it) when the daemon's watcher
 * vouched for every collection `o` selects; 0 and *why (caller frees) when
 * the caller must walk: the daemon's reason, or why it did not answer. */
int dcl_update_unwalked(dcl *c, const api_update_opts *o, index_update_result *out, char **why);

/* *daemon (may be NULL): the daemon's own state object (new reference). */
trove_err dcl_status(dcl *c, api_status *out, json_t **daemon);
trove_err dcl_shutdown(dcl *c);

#endif
