/* pub_send — requests to OpenSearch with retries (see pub_send.h). */
#include "publish/pub_send.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/mem.h"
#include "util/str.h"

struct pub_conn {
    fetch_http *http;
    char *base;              /* without a trailing / */
    char *shown;             /* base without credentials */
    pub_send_opts o;
    pub_send_stats stats;
    int answered;            /* the server answered once: a refusal now is a restart */
    double last_draw;
    int drawn;
};

static double env_number(const char *name, double fallback)
{
    const char *v = getenv(name);
    double d;
    if (v && *v && str_to_double(v, &d) && d > 0)
        return d;
    return fallback;
}

char *pub_url_display(const char *url)
{
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    const char *at = strchr(host, '@'), *slash = strchr(host, '/');
    if (!at || (slash && slash < at))
        return xstrdup(url);
    tbuf b = {0};
    tbuf_append(&b, url, (size_t)(host - url));
    tbuf_puts(&b, at + 1);
    return tbuf_detach(&b);
}

trove_err pub_conn_open(const char *base, const pub_send_opts *o, pub_conn **out)
{
    *out = NULL;
    if (!str_starts_with(base, "http://") && !str_starts_with(base, "https://"))
        return trove_fail(TROVE_EUSAGE, "'%s' is not an http:// or https:// URL", base);
    fetch_http *h = fetch_http_open();
    if (!h)
        return TROVE_EUNSUPPORTED;
    pub_conn *c = xcalloc(1, sizeof *c);
    c->http = h;
    c->base = xstrdup(base);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/')
        c->base[--n] = '\0';
    c->shown = pub_url_display(c->base);
    c->o = *o;
    if (c->o.retries < 0)
        c->o.retries = 5;
    if (c->o.backoff_s <= 0)
        c->o.backoff_s = env_number("TROVE_PUBLISH_BACKOFF_MS", 500) / 1000.0;
    if (c->o.backoff_max_s <= 0)
        c->o.backoff_max_s = 30;
    if (c->o.timeout_s <= 0)
        c->o.timeout_s = (long)env_number("TROVE_PUBLISH_TIMEOUT", 60);
    *out = c;
    return TROVE_OK;
}

void pub_conn_close(pub_conn *c)
{
    if (!c)
        return;
    fetch_http_close(c->http);
    free(c->base);
    free(c->shown);
    free(c->stats.first_error);
    free(c);
}

const pub_send_stats *pub_conn_stats(const pub_conn *c)
{
    return &c->stats;
}

/* ---- progress ---- */

static void draw(pub_conn *c, int final)
{
    if (!c->o.progress || !c->o.tty)
        return;
    double t = clock_seconds();
    if (!final && t - c->last_draw < 0.1)
        return;
    c->last_draw = t;
    size_t done = c->stats.sent + c->stats.failed, total = c->o.total;
    if (!total) {
        fprintf(stderr, "\rpublishing: %zu sent\033[K", done);
        c->drawn = 1;
        return;
    }
    char bar[31];
    size_t fill = total ? (done >= total ? 30 : done * 30 / total) : 0;
    for (size_t i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\rpublishing [%s] %zu/%zu", bar, done, total);
    if (c->stats.retried)
        fprintf(stderr, " (%zu sent again)", c->stats.retried);
    fputs("\033[K", stderr);
    c->drawn = 1;
}

void pub_conn_set_total(pub_conn *c, size_t total)
{
    c->o.total = total;
}

void pub_conn_done(pub_conn *c)
{
    if (c->drawn) {
        draw(c, 1);
        fputc('\n', stderr);
        c->drawn = 0;
    }
}

static void note(pub_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Retries are said on stderr whatever the output format: a publish that
 * succeeds slowly should say why. */
static void note(pub_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fetch_vnote(&c->drawn, fmt, ap);
    va_end(ap);
}

/* ---- requests ---- */

static int stopped(const pub_conn *c)
{
    return c->o.stop && *c->o.stop;
}

/* Sleep s seconds, waking early when stopped. */
static void wait_s(const pub_conn *c, double s)
{
    double end = clock_seconds() + s;
    while (!stopped(c)) {
        double left = end - clock_seconds();
        if (left <= 0)
            break;
        if (left > 0.1)
            left = 0.1;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static trove_err send_once(pub_conn *c, const char *method, const char *path, const char *ctype,
                           const char *body, size_t len, fetch_http_resp *rs)
{
    tbuf url = {0};
    tbuf_printf(&url, "%s/%s", c->base, path);
    fetch_http_req rq = {.method = method, .url = url.data, .content_type = body ? ctype : NULL,
                         .body = body, .len = len, .timeout_s = c->o.timeout_s};
    trove_err rc = fetch_http_send(c->http, &rq, rs);
    tbuf_free(&url);
    if (rc) {
        /* curl's message names the URL with its credentials: say it again
         * without them. */
        char *why = xstrdup(trove_errmsg());
        char *at = strstr(why, ": ");
        rc = trove_fail(rc, "%s %s/%s%s", method, c->shown, path, at ? at : "");
        free(why);
    }
    return rc;
}

static trove_err request(pub_conn *c, const char *method, const char *path, const char *ctype,
                         const char *body, size_t len, fetch_http_resp *rs)
{
    for (int attempt = 0;; attempt++) {
        trove_err rc = send_once(c, method, path, ctype, body, len, rs);
        c->answered |= rc == TROVE_OK;
        /* Nobody there at the first request is a wrong URL or a cluster
         * that is down: say so at once, as `model pull` does. */
        int again = (rc == TROVE_EIO && (c->answered || !rs->no_connection)) ||
                    (rc == TROVE_OK && pub_status_retryable((int)rs->status));
        if (!again || attempt >= c->o.retries || stopped(c)) {
            if (rc == TROVE_OK && stopped(c))
                rc = trove_fail(TROVE_EINTR, "publish interrupted");
            return rc;
        }
        long ra = rc == TROVE_OK ? rs->retry_after : -1;
        double w = pub_backoff(attempt + 1, c->o.backoff_s, c->o.backoff_max_s, ra);
        if (rc)
            note(c, "%s; trying again in %.1f s", trove_errmsg(), w);
        else
            note(c, "%s %s/%s: HTTP %ld; trying again in %.1f s", method, c->shown, path,
                 rs->status, w);
        trove_errclear();
        fetch_http_resp_free(rs);
        c->stats.retried++;
        wait_s(c, w);
    }
}

trove_err pub_request(pub_conn *c, const char *method, const char *path, const char *body,
                      fetch_http_resp *rs)
{
    return request(c, method, path, "application/json", body, body ? strlen(body) : 0, rs);
}

/* The status and the first 300 bytes of the server's answer. */
static trove_err status_error(pub_conn *c, const char *method, const char *path,
                              const fetch_http_resp *rs)
{
    int n = rs->body.len > 300 ? 300 : (int)rs->body.len;
    return trove_fail(TROVE_EIO, "%s %s/%s: HTTP %ld%s%.*s", method, c->shown, path, rs->status,
                      n ? ": " : "", n, rs->body.data ? rs->body.data : "");
}

trove_err pub_request_ok(pub_conn *c, const char *method, const char *path, const char *body)
{
    fetch_http_resp rs;
    trove_err rc = pub_request(c, method, path, body, &rs);
    if (rc == TROVE_OK && (rs.status < 200 || rs.status > 299))
        rc = status_error(c, method, path, &rs);
    fetch_http_resp_free(&rs);
    return rc;
}

/* ---- _bulk ---- */

static void refused(pub_conn *c, const pub_bulk_item *it, const char *id)
{
    c->stats.failed++;
    if (!c->stats.first_error) {
        tbuf b = {0};
        tbuf_printf(&b, "%s: HTTP %d %s", id, it->status, it->error ? it->error : "");
        c->stats.first_error = tbuf_detach(&b);
    }
}

/* Send b once (with request()'s retries); the items to send again go
 * into *again (indexes into b). */
static trove_err bulk_once(pub_conn *c, const char *path, const pub_batch *b, size_t **again,
                           size_t *n_again)
{
    *n_again = 0;
    fetch_http_resp rs;
    trove_err rc = request(c, "POST", path, "application/x-ndjson", b->body.data, b->body.len, &rs);
    if (rc == TROVE_OK && rs.status != 200)
        rc = status_error(c, "POST", path, &rs);
    pub_bulk_resp r = {0};
    if (rc == TROVE_OK)
        rc = pub_bulk_response_parse(rs.body.data ? rs.body.data : "", rs.body.len, &r);
    fetch_http_resp_free(&rs);
    if (rc == TROVE_OK && r.n != b->n)
        rc = trove_fail(TROVE_EPARSE, "POST %s/%s: %zu items answered for %zu sent", c->shown,
                        path, r.n, b->n);
    if (rc) {
        pub_bulk_resp_free(&r);
        return rc;
    }
    c->stats.batches++;
    *again = xmalloc((b->n ? b->n : 1) * sizeof **again);
    for (size_t i = 0; i < r.n; i++) {
        const pub_bulk_item *it = &r.items[i];
        if (pub_item_done(it))
            c->stats.sent++;
        else if (pub_status_retryable(it->status))
            (*again)[(*n_again)++] = i;
        else
            refused(c, it, b->ids[i]);
    }
    pub_bulk_resp_free(&r);
    draw(c, 0);
    return TROVE_OK;
}

trove_err pub_send_batch(pub_conn *c, const char *index, pub_batch *b)
{
    tbuf path = {0};
    tbuf_printf(&path, "%s/_bulk", index);
    pub_batch cur = {0}, *send = b;
    trove_err rc = TROVE_OK;
    for (int attempt = 0; rc == TROVE_OK; attempt++) {
        size_t *again = NULL, n_again = 0;
        rc = bulk_once(c, path.data, send, &again, &n_again);
        if (rc == TROVE_OK && n_again && (attempt >= c->o.retries || stopped(c))) {
            /* out of tries: what is left counts as refused */
            for (size_t i = 0; i < n_again; i++) {
                pub_bulk_item it = {.status = 429, .error = (char *)"still refused after retries"};
                refused(c, &it, send->ids[again[i]]);
            }
            n_again = 0;
        }
        if (rc == TROVE_OK && n_again) {
            pub_batch next;
            pub_batch_subset(send, again, n_again, &next);
            c->stats.retried += n_again;
            note(c, "%zu of %zu items refused for now (HTTP 429/5xx); sending them again", n_again,
                 send->n);
            pub_batch_free(&cur);
            cur = next;
            send = &cur;
            wait_s(c, pub_backoff(attempt + 1, c->o.backoff_s, c->o.backoff_max_s, -1));
        }
        free(again);
        if (!n_again)
            break;
    }
    pub_batch_free(&cur);
    tbuf_free(&path);
    return rc;
}
