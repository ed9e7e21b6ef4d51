/* fetch — download one file over HTTP(S) for `trove model pull`.
 *
 * libcurl is dlopen()ed on first use (see fetch.c): linking it would cost
 * every trove process ~5 ms of dynamic linking for 30 libraries, and only
 * `model pull` needs it.
 *
 * fetch_file(url, dest) downloads into "DEST.part" and renames it to DEST
 * only after the size and SHA-256 (when known) check out, so DEST is either
 * absent or complete. A DEST.part left by an earlier run is resumed with an
 * HTTP Range request; the answer is used only if it is a 206 whose
 * Content-Range starts where the part file ends, otherwise the download
 * restarts from byte 0. A transfer that is cut or stalls (less than 1 byte/s
 * for stall_s seconds) is resumed up to `retries` times, waiting 0.5 s, 1 s,
 * 2 s, ... (at most 8 s) before each try; an HTTP 5xx (a server
 * restarting) is retried the same way, and so is a refused connection once
 * the transfer has started. Offline at the first try (no DNS, connection
 * refused) or an HTTP 4xx fails at once; every failure's detail names the URL and says
 * where to put the file when fetched by hand. A file that fails its SHA-256
 * is downloaded once: only bytes resumed from an earlier run are fetched
 * again when the whole fails (they may be what is wrong). *stop becoming
 * non-zero (Ctrl-C) ends the download with TROVE_EINTR, keeping DEST.part
 * for the next run. An exclusive lock on DEST.part keeps two trove
 * processes from writing the same file.
 *
 * Progress goes to stderr: a redrawn bar with rate and ETA on a terminal,
 * a plain line every 10% (or every 10 s when the size is unknown)
 * otherwise. No memory is retained between calls; the caller owns every
 * string it passes. */
#ifndef TROVE_FETCH_H
#define TROVE_FETCH_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

typedef struct fetch_opts {
    int64_t size;           /* expected bytes; < 0: unknown */
    const char *sha256;     /* expected lowercase hex digest; NULL: unknown */
    const char *label;      /* name in progress lines; NULL: DEST's last segment */
    int progress;           /* 0: silent; 1: report progress on stderr */
    int tty;                /* stderr is a terminal: redraw one line */
    long stall_s;           /* <= 0: $TROVE_FETCH_STALL_SECONDS, else 30 */
    long connect_s;         /* <= 0: 15 */
    int retries;            /* resumes after a cut or stalled transfer; < 0: 4 */
    const volatile sig_atomic_t *stop;   /* non-zero: stop (TROVE_EINTR); may be NULL */
} fetch_opts;

/* Download url to dest (see above). dest's folder must exist. */
trove_err fetch_file(const char *url, const char *dest, const fetch_opts *o);

/* Can libcurl be loaded? TROVE_EUNSUPPORTED with the package to install
 * otherwise. fetch_file() calls it itself. */
trove_err fetch_load(void);

/* Parse the value of a Content-Range header ("bytes 100-199/1000", total may
 * be "*"). Returns 0 and sets start/end (inclusive) and total (-1 for "*"),
 * or -1 when malformed. Reads at most len bytes of s. */
int fetch_parse_content_range(const char *s, size_t len, int64_t *start, int64_t *end,
                              int64_t *total);

/* One progress line (no newline) into buf: label, bytes done / total,
 * percent, rate and ETA. total < 0: unknown; rate in bytes/s. */
void fetch_format_progress(char *buf, size_t cap, const char *label, int64_t done,
                           int64_t total, double rate);

/* "trove: MESSAGE" on stderr under a redrawn progress line (*drawn: one
 * is on screen; it is ended first and *drawn cleared). */
void fetch_vnote(int *drawn, const char *fmt, va_list ap);

/* ---- requests with a body in memory (publish's calls to OpenSearch) ----
 * A session keeps one connection open across requests (keep-alive). A
 * request is sent once: retries are the caller's (it knows what may be
 * sent again). Every HTTP status is TROVE_OK, the caller reads it; a
 * transport failure (refused, DNS, TLS, timeout) is TROVE_EIO naming the
 * URL with curl's words, *timed_out set for a timeout. The answer's body is
 * kept up to FETCH_HTTP_MAX bytes (TROVE_ERANGE past it). The URL may carry
 * user:password@ (basic authentication). */
#define FETCH_HTTP_MAX (64u << 20)

typedef struct fetch_http fetch_http;

typedef struct fetch_http_req {
    const char *method;        /* GET, PUT, POST, DELETE, HEAD */
    const char *url;
    const char *content_type;  /* NULL: none (no body) */
    const char *body;          /* may be NULL */
    size_t len;
    long timeout_s;            /* whole request; <= 0: 60 */
    long connect_s;            /* <= 0: 10 */
} fetch_http_req;

typedef struct fetch_http_resp {
    long status;
    tbuf body;
    long retry_after;          /* seconds from a Retry-After header; -1: none */
    int timed_out;
    int no_connection;         /* refused or no such host: nothing was sent */
} fetch_http_resp;

/* NULL (with trove_fail) when libcurl cannot be loaded. */
fetch_http *fetch_http_open(void);
void fetch_http_close(fetch_http *h);
trove_err fetch_http_send(fetch_http *h, const fetch_http_req *rq, fetch_http_resp *rs);
void fetch_http_resp_free(fetch_http_resp *rs);
/* The delay-seconds form of a Retry-After value ("120"); -1 for anything
 * else (an HTTP date is not read: the caller's backoff applies). Reads at
 * most len bytes of s. */
long fetch_parse_retry_after(const char *s, size_t len);

#endif
