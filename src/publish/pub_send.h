/* pub_send — the HTTP side of `trove publish opensearch`: requests to one
 * OpenSearch endpoint through libcurl (fetch/fetch.h, loaded only when a
 * publish runs, never on the local search path), sent again on a transport
 * failure, a timeout, 429 (waiting what Retry-After says) or 502/503/504,
 * with a doubling backoff; and _bulk batches whose refused items are
 * retried alone when retryable and counted as failed otherwise.
 *
 * A pub_conn owns its session and strings; what a request answers is the
 * caller's (fetch_http_resp_free). */
#ifndef TROVE_PUB_SEND_H
#define TROVE_PUB_SEND_H

#include <signal.h>
#include <stddef.h>

#include "fetch/fetch.h"
#include "publish/pub.h"

typedef struct pub_send_opts {
    int retries;            /* tries after the first; < 0: 5 */
    double backoff_s;       /* first wait; <= 0: $TROVE_PUBLISH_BACKOFF_MS / 1000, else 0.5 */
    double backoff_max_s;   /* <= 0: 30 */
    long timeout_s;         /* per request; <= 0: $TROVE_PUBLISH_TIMEOUT (s), else 60 */
    int progress, tty;      /* a bar on stderr (redrawn on a terminal) */
    size_t total;           /* actions expected, for the bar (0: unknown) */
    const volatile sig_atomic_t *stop;
} pub_send_opts;

typedef struct pub_conn pub_conn;

typedef struct pub_send_stats {
    size_t batches;         /* _bulk requests that were answered 200 */
    size_t sent;            /* actions done (indexed, deleted, or delete of a missing id) */
    size_t retried;         /* requests or items sent again */
    size_t failed;          /* items refused for good */
    char *first_error;      /* "ID: TYPE: REASON" of the first refused item */
} pub_send_stats;

/* base: the endpoint ("http://host:9200", a trailing / is dropped). */
trove_err pub_conn_open(const char *base, const pub_send_opts *o, pub_conn **out);
void pub_conn_close(pub_conn *c);
const pub_send_stats *pub_conn_stats(const pub_conn *c);
/* The endpoint as shown to the user: without user:password@. Caller frees. */
char *pub_url_display(const char *url);

/* METHOD BASE/PATH with a JSON body (NULL: none), retried as above; any
 * HTTP status that is not retryable comes back in *rs (TROVE_OK). */
trove_err pub_request(pub_conn *c, const char *method, const char *path, const char *body,
                      fetch_http_resp *rs);
/* The same, then TROVE_EIO naming the status and the server's words when
 * the answer is not 2xx. */
trove_err pub_request_ok(pub_conn *c, const char *method, const char *path, const char *body);

/* POST BASE/INDEX/_bulk, then the refused items that may succeed later
 * again (alone); others are counted in the stats. */
trove_err pub_send_batch(pub_conn *c, const char *index, pub_batch *b);
/* The actions the bar counts to (0: unknown, a count alone is shown). */
void pub_conn_set_total(pub_conn *c, size_t total);
/* End the progress bar. */
void pub_conn_done(pub_conn *c);

#endif
