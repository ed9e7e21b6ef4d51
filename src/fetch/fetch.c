#include "fetch/fetch.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/mem.h"
#include "util/sha256.h"

/* ---- libcurl, loaded on first use ------------------------------------ */

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*setopt)(CURL *, CURLoption, ...);
    CURLcode (*perform)(CURL *);
    CURLcode (*getinfo)(CURL *, CURLINFO, ...);
    void (*cleanup)(CURL *);
    const char *(*strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static int cu_ok;

static void cu_load(void)
{
    /* The OpenSSL flavour first (what scripts/install-deps.sh installs),
     * then the GnuTLS one a desktop may carry instead. */
    static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !cu_ok; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        cu.global_init = (__typeof__(cu.global_init))dlsym(h, "curl_global_init");
        cu.easy_init = (__typeof__(cu.easy_init))dlsym(h, "curl_easy_init");
        cu.setopt = (__typeof__(cu.setopt))dlsym(h, "curl_easy_setopt");
        cu.perform = (__typeof__(cu.perform))dlsym(h, "curl_easy_perform");
        cu.getinfo = (__typeof__(cu.getinfo))dlsym(h, "curl_easy_getinfo");
        cu.cleanup = (__typeof__(cu.cleanup))dlsym(h, "curl_easy_cleanup");
        cu.strerror = (__typeof__(cu.strerror))dlsym(h, "curl_easy_strerror");
        cu.slist_append = (__typeof__(cu.slist_append))dlsym(h, "curl_slist_append");
        cu.slist_free_all = (__typeof__(cu.slist_free_all))dlsym(h, "curl_slist_free_all");
        if (cu.global_init && cu.easy_init && cu.setopt && cu.perform && cu.getinfo &&
            cu.cleanup && cu.strerror && cu.slist_append && cu.slist_free_all &&
            cu.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK)
            cu_ok = 1;
        else
            dlclose(h);
    }
}

trove_err fetch_load(void)
{
    pthread_once(&cu_once, cu_load);
    if (!cu_ok)
        return trove_fail(TROVE_EUNSUPPORTED, "cannot load libcurl.so.4, which downloads need "
                          "(install the Debian package libcurl4, or run scripts/install-deps.sh)");
    return TROVE_OK;
}

/* ---- small parsers and formatting ------------------------------------ */

/* Decimal digits at s[*i..len) into *out; -1 if none or it overflows. */
static int parse_i64(const char *s, size_t len, size_t *i, int64_t *out)
{
    size_t j = *i;
    int64_t v = 0;
    while (j < len && s[j] >= '0' && s[j] <= '9') {
        if (v > (INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (s[j] - '0');
        j++;
    }
    if (j == *i)
        return -1;
    *i = j;
    *out = v;
    return 0;
}

int fetch_parse_content_range(const char *s, size_t len, int64_t *start, int64_t *end,
                              int64_t *total)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (len - i < 6 || strncasecmp(s + i, "bytes", 5) != 0 || (s[i + 5] != ' ' && s[i + 5] != '\t'))
        return -1;
    i += 6;
    while (i < len && s[i] == ' ')
        i++;
    int64_t a, b, t = -1;
    if (parse_i64(s, len, &i, &a) < 0 || i >= len || s[i++] != '-' ||
        parse_i64(s, len, &i, &b) < 0 || i >= len || s[i++] != '/')
        return -1;
    if (i < len && s[i] == '*')
        i++;
    else if (parse_i64(s, len, &i, &t) < 0)
        return -1;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    if (i != len || b < a || (t >= 0 && b >= t))
        return -1;
    *start = a;
    *end = b;
    *total = t;
    return 0;
}

static void fmt_bytes(char *buf, size_t cap, double n)
{
    if (n < 1e3)
        snprintf(buf, cap, "%.0f B", n);
    else if (n < 1e6)
        snprintf(buf, cap, "%.1f kB", n / 1e3);
    else if (n < 1e9)
        snprintf(buf, cap, "%.1f MB", n / 1e6);
    else
        snprintf(buf, cap, "%.2f GB", n / 1e9);
}

static void fmt_duration(char *buf, size_t cap, double s)
{
    if (s > 359999)
        s = 359999;
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

void fetch_format_progress(char *buf, size_t cap, const char *label, int64_t done,
                           int64_t total, double rate)
{
    char d[32], t[32], r[32], eta[32];
    fmt_bytes(d, sizeof d, (double)done);
    if (rate > 0) {
        fmt_bytes(r, sizeof r, rate);
        strcat(r, "/s");
    } else {
        strcpy(r, "-- B/s");
    }
    if (total > 0) {
        fmt_bytes(t, sizeof t, (double)total);
        int64_t left = total > done ? total - done : 0;
        if (rate > 0)
            fmt_duration(eta, sizeof eta, (double)left / rate);
        else
            strcpy(eta, "--:--");
        double pct = 100.0 * (double)done / (double)total;
        snprintf(buf, cap, "%s  %s / %s  %3.0f%%  %s  ETA %s", label, d, t, pct > 100 ? 100 : pct,
                 r, eta);
    } else {
        snprintf(buf, cap, "%s  %s  %s", label, d, r);
    }
}

/* ---- one transfer ---------------------------------------------------- */

typedef struct xfer {
    CURL *h;
    int fd;
    const char *part;
    int64_t offset;     /* bytes in the part file when this request began */
    int64_t written;    /* body bytes this request wrote after offset */
    int64_t expect;     /* size the caller expects, or -1 */
    int64_t total;      /* size the server announced, or -1 */
    int started;        /* the body has begun */
    int rewound;        /* the server ignored Range: writing from byte 0 */
    int64_t kept;       /* leading bytes that came from an earlier run */
    int bad_range;      /* a 206 that does not start at offset */
    trove_err fail;     /* error raised inside a callback */
    /* headers of the response being read */
    int has_range;
    int64_t range_start, range_total, length;
    /* progress */
    const fetch_opts *o;
    const char *label;
    double t0, last_draw;
    int64_t session0;   /* bytes present when fetch_file() began */
    int last_decile;
    int64_t last_shown; /* bytes in the last line printed, or -1 */
    int drawn;
} xfer;

static size_t on_header(char *buf, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
        /* a new response (after a redirect): forget the previous one's */
        x->has_range = 0;
        x->length = -1;
    } else if (len > 14 && strncasecmp(buf, "content-range:", 14) == 0) {
        int64_t a, b, t;
        if (fetch_parse_content_range(buf + 14, len - 14, &a, &b, &t) == 0) {
            x->has_range = 1;
            x->range_start = a;
            x->range_total = t;
        }
    } else if (len > 15 && strncasecmp(buf, "content-length:", 15) == 0) {
        size_t i = 15;
        while (i < len && buf[i] == ' ')
            i++;
        int64_t v;
        if (parse_i64(buf, len, &i, &v) == 0)
            x->length = v;
    }
    return len;
}

static double rate_of(const xfer *x, int64_t done, int final)
{
    double dt = clock_seconds() - x->t0;
    (void)final;
    return dt > 0.001 ? (double)(done - x->session0) / dt : 0;
}

static void draw(xfer *x, int final)
{
    if (!x->o->progress)
        return;
    int64_t done = x->offset + x->written;
    int64_t total = x->total >= 0 ? x->total : x->expect;
    double t = clock_seconds();
    int show;
    if (x->o->tty) {
        show = final || t - x->last_draw >= 0.1;
    } else if (final) {
        show = done != x->last_shown;
    } else if (done == x->session0) {
        show = 0;  /* nothing to report yet */
    } else if (total > 0) {
        int dec = (int)(done * 10 / total);
        show = final || dec > x->last_decile;
        if (show)
            x->last_decile = dec;
    } else {
        show = final || t - x->last_draw >= 10;
    }
    if (!show)
        return;
    char line[256];
    fetch_format_progress(line, sizeof line, x->label, done, total, rate_of(x, done, final));
    x->last_shown = done;
    if (x->o->tty)
        fprintf(stderr, "\r%s\033[K%s", line, final ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    x->drawn = !final && x->o->tty;
    x->last_draw = t;
}

void fetch_vnote(int *drawn, const char *fmt, va_list ap)
{
    if (*drawn)
        fputc('\n', stderr);
    *drawn = 0;
    fputs("trove: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void note(xfer *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(xfer *x, const char *fmt, ...)
{
    if (!x->o->progress)
        return;
    va_list ap;
    va_start(ap, fmt);
    fetch_vnote(&x->drawn, fmt, ap);
    va_end(ap);
}

static int stopped(const xfer *x)
{
    return x->o->stop && *x->o->stop;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    xfer *x = ud;
    if (stopped(x))
        return 1;   /* CURLE_ABORTED_BY_CALLBACK */
    draw(x, 0);
    return 0;
}

/* First body bytes: is this the answer we asked for? */
static int check_start(xfer *x)
{
    long code = 0;
    cu.getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
    if (code == 206) {
        if (!x->has_range || x->range_start != x->offset) {
            x->bad_range = 1;
            return -1;
        }
        x->total = x->range_total;
    } else if (code == 200) {
        if (x->offset > 0) {
            /* the server ignored Range and sends the whole file */
            if (ftruncate(x->fd, 0) != 0) {
                x->fail = trove_fail(TROVE_EIO, "cannot truncate %s: %s", x->part, strerror(errno));
                return -1;
            }
            x->offset = 0;
            x->kept = 0;
            x->rewound = 1;
        }
        x->total = x->length;
    } else {
        x->fail = trove_fail(TROVE_EIO, "unexpected HTTP status %ld", code);
        return -1;
    }
    if (x->expect >= 0 && x->total >= 0 && x->total != x->expect) {
        x->fail = trove_fail(TROVE_ECORRUPT, "the server has %" PRId64 " bytes, expected %" PRId64
                             " (the file changed upstream?)", x->total, x->expect);
        return -1;
    }
    return 0;
}

static size_t on_body(char *buf, size_t size, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = size * n;
    if (stopped(x))
        return 0;
    if (!x->started) {
        x->started = 1;
        if (check_start(x) < 0)
            return 0;
    }
    int64_t at = x->offset + x->written;
    int64_t limit = x->expect >= 0 ? x->expect : x->total;
    if (limit >= 0 && at + (int64_t)len > limit) {
        x->fail = trove_fail(TROVE_ECORRUPT, "the server sent more than the %" PRId64
                             " bytes expected", limit);
        return 0;
    }
    for (size_t off = 0; off < len;) {
        ssize_t w = pwrite(x->fd, buf + off, len - off, (off_t)(at + (int64_t)off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            x->fail = trove_fail(TROVE_EIO, "cannot write %s: %s", x->part,
                                 w < 0 ? strerror(errno) : "short write");
            return 0;
        }
        off += (size_t)w;
    }
    x->written += (int64_t)len;
    return len;
}

static CURLcode perform(xfer *x, const char *url, long stall_s, long connect_s)
{
    CURL *h = x->h;
    char range[48];
    cu.setopt(h, CURLOPT_URL, url);
    cu.setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    cu.setopt(h, CURLOPT_MAXREDIRS, 10L);
    cu.setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu.setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    cu.setopt(h, CURLOPT_FAILONERROR, 1L);
    cu.setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu.setopt(h, CURLOPT_USERAGENT, "trove/0.1 (model pull)");
    cu.setopt(h, CURLOPT_CONNECTTIMEOUT, connect_s);
    /* a stall, not a slow line, is what we give up on */
    cu.setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    cu.setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
    cu.setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    cu.setopt(h, CURLOPT_HEADERDATA, x);
    cu.setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    cu.setopt(h, CURLOPT_WRITEDATA, x);
    cu.setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu.setopt(h, CURLOPT_XFERINFODATA, x);
    cu.setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (x->offset > 0) {
        snprintf(range, sizeof range, "%" PRId64 "-", x->offset);
        cu.setopt(h, CURLOPT_RANGE, range);
    } else {
        cu.setopt(h, CURLOPT_RANGE, (char *)NULL);
    }
    x->written = 0;
    x->started = 0;
    x->rewound = 0;
    x->bad_range = 0;
    x->fail = TROVE_OK;
    x->has_range = 0;
    x->length = -1;
    x->total = -1;
    return cu.perform(h);
}

/* ---- the whole download ---------------------------------------------- */

/* Record "<detail>; fetch it by hand..." for a failed download. */
static trove_err fail_hand(trove_err code, const char *url, const char *dest, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static trove_err fail_hand(trove_err code, const char *url, const char *dest, const char *fmt, ...)
{
    tbuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    char detail[1024];
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    tbuf_printf(&b, "%s\n  to fetch it by hand, download %s\n  and save it as %s, e.g.\n"
                "    curl -fL -C - -o '%s.part' '%s' && mv '%s.part' '%s'",
                detail, url, dest, dest, url, dest, dest);
    trove_err rc = trove_fail(code, "%s", b.data);
    tbuf_free(&b);
    return rc;
}

static int offline_code(CURLcode c)
{
    return c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_RESOLVE_PROXY ||
           c == CURLE_COULDNT_CONNECT || c == CURLE_SSL_CONNECT_ERROR ||
           c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_UNSUPPORTED_PROTOCOL ||
           c == CURLE_URL_MALFORMAT;
}

static int cut_code(CURLcode c)
{
    return c == CURLE_OPERATION_TIMEDOUT || c == CURLE_PARTIAL_FILE || c == CURLE_RECV_ERROR ||
           c == CURLE_GOT_NOTHING || c == CURLE_SEND_ERROR || c == CURLE_HTTP2 ||
           c == CURLE_HTTP2_STREAM;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return *end || errno || x <= 0 || x > 86400 ? dflt : x;
}

/* fsync the folder holding path, so the rename survives a crash. */
static void sync_parent(const char *path)
{
    char *copy = xstrdup(path);
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(copy);
}

/* Wait before retry number `tries` (1, 2, ...): 0.5 s doubling to 8 s, cut
 * short by a stop. */
static void backoff(const xfer *x, int tries)
{
    double wait = 0.5;
    for (int i = 1; i < tries && wait < 8; i++)
        wait *= 2;
    double until = clock_seconds() + wait;
    while (!stopped(x)) {
        double left = until - clock_seconds();
        if (left <= 0)
            break;
        if (left > 0.1)
            left = 0.1;
        struct timespec ts = {0, (long)(left * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* The detail of a stop: what is kept for the next run. */
static trove_err fail_stopped(const xfer *x, const char *dest)
{
    int64_t total = x->expect >= 0 ? x->expect : x->total;
    char of[40] = "";
    if (total >= 0)
        snprintf(of, sizeof of, " of %" PRId64, total);
    if (x->offset > 0)
        return trove_fail(TROVE_EINTR, "interrupted: kept %s (%" PRId64 "%s bytes); the same "
                          "command resumes it from there", x->part, x->offset, of);
    return trove_fail(TROVE_EINTR, "interrupted before any byte of %s arrived: nothing kept",
                      dest);
}

/* Worth another try after a wait: a transfer cut or stalled after it sent
 * something, or once one has started (tries > 0), a server that refuses
 * connections or answers 5xx for a moment (a restart). */
static int transient(CURLcode c, long code, int64_t got, int tries)
{
    if (cut_code(c) && (got > 0 || tries > 0))
        return 1;
    if (c == CURLE_HTTP_RETURNED_ERROR && code >= 500 && code <= 599)
        return 1;
    return tries > 0 && (c == CURLE_COULDNT_CONNECT || c == CURLE_GOT_NOTHING);
}

/* Run requests until the part file holds the whole body (TROVE_OK) or a
 * failure is final. */
static trove_err download(xfer *x, const char *url, const char *dest, const fetch_opts *o)
{
    long stall_s = o->stall_s > 0 ? o->stall_s : env_long("TROVE_FETCH_STALL_SECONDS", 30);
    long connect_s = o->connect_s > 0 ? o->connect_s : 15;
    int retries = o->retries >= 0 ? o->retries : 4, tries = 0, restarts = 0;
    for (;;) {
        if (stopped(x))
            return fail_stopped(x, dest);
        if (x->expect >= 0 && x->offset == x->expect)
            return TROVE_OK;  /* nothing left to ask for */
        if (x->offset > 0)
            note(x, "resuming %s at byte %" PRId64, x->label, x->offset);
        CURLcode c = perform(x, url, stall_s, connect_s);
        int64_t got = x->written;
        x->offset += x->written;
        x->written = 0;
        if (x->rewound)
            note(x, "the server ignored the range request: downloading %s from the start", x->label);
        if (stopped(x))
            return fail_stopped(x, dest);
        if (c == CURLE_OK) {
            if (x->total < 0 || x->offset == x->total)
                return TROVE_OK;
            c = CURLE_PARTIAL_FILE;  /* a clean close before the announced end */
        }
        long code = 0;
        cu.getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
        if (x->bad_range || (c == CURLE_HTTP_RETURNED_ERROR && code == 416 && x->offset > 0)) {
            if (restarts++ == 0) {
                note(x, "the server did not resume at byte %" PRId64 " (HTTP %ld): downloading "
                     "%s from the start", x->offset, code, x->label);
                if (ftruncate(x->fd, 0) != 0)
                    return fail_hand(TROVE_EIO, url, dest, "cannot truncate %s: %s", x->part,
                                     strerror(errno));
                x->offset = 0;
                x->kept = 0;
                continue;
            }
        }
        if (x->fail)
            return fail_hand(x->fail, url, dest, "cannot download %s: %s", url, trove_errmsg());
        if (transient(c, code, got, tries) && tries < retries) {
            tries++;
            const char *what = c == CURLE_OPERATION_TIMEDOUT     ? "stalled"
                               : c == CURLE_HTTP_RETURNED_ERROR ? "server error"
                               : cut_code(c)                    ? "transfer cut"
                                                                : "server unreachable";
            char status[32] = "";
            if (c == CURLE_HTTP_RETURNED_ERROR)
                snprintf(status, sizeof status, " HTTP %ld", code);
            note(x, "%s after %" PRId64 " bytes (%s%s): retrying (%d/%d)", x->label, x->offset,
                 what, status, tries, retries);
            backoff(x, tries);
            continue;
        }
        if (c == CURLE_HTTP_RETURNED_ERROR) {
            return fail_hand(code == 404 ? TROVE_ENOENT : TROVE_EIO, url, dest,
                             "cannot download %s: HTTP %ld%s", url, code,
                             code == 404 ? " (not found)" : code == 401 || code == 403
                                                                ? " (access denied)" : "");
        }
        if (offline_code(c) && tries == 0)
            return fail_hand(TROVE_EIO, url, dest, "cannot download %s: %s (offline?)", url,
                             cu.strerror(c));
        if (c == CURLE_OPERATION_TIMEDOUT)
            return fail_hand(TROVE_EIO, url, dest, "cannot download %s: no data for %ld s at byte "
                             "%" PRId64 "; run the same command again to resume", url, stall_s,
                             x->offset);
        return fail_hand(TROVE_EIO, url, dest, "cannot download %s: %s at byte %" PRId64
                         "; run the same command again to resume", url, cu.strerror(c), x->offset);
    }
}

/* Size and checksum of the finished part file. A mismatch fails at once,
 * also when `kept` bytes of it came from an earlier run: downloading the
 * whole again here would fetch a file twice only to fail on a wrong
 * --sha256; the part is discarded instead, so the next run starts from 0. */
static trove_err verify(xfer *x, const char *url, const char *dest, const fetch_opts *o,
                        int64_t kept)
{
    struct stat st;
    if (fstat(x->fd, &st) != 0)
        return fail_hand(TROVE_EIO, url, dest, "cannot stat %s: %s", x->part, strerror(errno));
    if (x->expect >= 0 && (int64_t)st.st_size != x->expect)
        return fail_hand(TROVE_ECORRUPT, url, dest, "%s has %lld bytes, expected %" PRId64,
                         x->part, (long long)st.st_size, x->expect);
    if (!o->sha256)
        return TROVE_OK;
    char hex[SHA256_HEX_LEN + 1];
    trove_err rc = sha256_file(x->part, hex);
    if (rc)
        return rc;
    if (strcasecmp(hex, o->sha256) != 0) {
        char why[160] = "";
        if (kept > 0)
            snprintf(why, sizeof why, "; its first %" PRId64 " bytes came from an earlier run and "
                     "may be what is wrong: the same command downloads it whole", kept);
        return fail_hand(TROVE_ECORRUPT, url, dest, "checksum mismatch for %s: expected sha256 "
                         "%s, got %s (the download was discarded%s)", dest, o->sha256, hex, why);
    }
    return TROVE_OK;
}

trove_err fetch_file(const char *url, const char *dest, const fetch_opts *o)
{
    static const fetch_opts none = {.size = -1, .retries = -1};
    if (!o)
        o = &none;
    trove_err rc = fetch_load();
    if (rc)
        return fail_hand(rc, url, dest, "%s", trove_errmsg());
    tbuf part = {0};
    tbuf_printf(&part, "%s.part", dest);
    xfer x = {.fd = -1, .part = part.data, .expect = o->size >= 0 ? o->size : -1, .o = o};
    const char *slash = strrchr(dest, '/');
    x.label = o->label ? o->label : slash ? slash + 1 : dest;
    x.fd = open(part.data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (x.fd < 0) {
        rc = fail_hand(TROVE_EIO, url, dest, "cannot create %s: %s", part.data, strerror(errno));
        tbuf_free(&part);
        return rc;
    }
    if (flock(x.fd, LOCK_EX | LOCK_NB) != 0) {
        rc = trove_fail(TROVE_EBUSY, "another trove process is downloading %s (%s is locked)",
                        dest, part.data);
        close(x.fd);
        tbuf_free(&part);
        return rc;
    }
    struct stat st;
    x.offset = fstat(x.fd, &st) == 0 ? (int64_t)st.st_size : 0;
    if (x.expect >= 0 && x.offset > x.expect) {
        /* longer than the real file: not a prefix of it */
        if (ftruncate(x.fd, 0) == 0)
            x.offset = 0;
    }
    x.h = cu.easy_init();
    if (!x.h) {
        close(x.fd);
        tbuf_free(&part);
        return fail_hand(TROVE_ENOMEM, url, dest, "curl_easy_init failed");
    }
    x.t0 = clock_seconds();
    x.session0 = x.offset;
    x.last_decile = x.expect > 0 ? (int)(x.offset * 10 / x.expect) : 0;
    x.last_shown = -1;
    x.kept = x.offset;
    rc = download(&x, url, dest, o);
    if (rc == TROVE_OK) {
        draw(&x, 1);
        if (fsync(x.fd) != 0)
            rc = fail_hand(TROVE_EIO, url, dest, "cannot write %s: %s", part.data,
                           strerror(errno));
    }
    if (rc == TROVE_OK)
        rc = verify(&x, url, dest, o, x.kept);
    cu.cleanup(x.h);
    if (rc == TROVE_OK && rename(part.data, dest) != 0)
        rc = fail_hand(TROVE_EIO, url, dest, "cannot rename %s to %s: %s", part.data, dest,
                       strerror(errno));
    if (rc == TROVE_OK) {
        sync_parent(dest);
    } else if (rc == TROVE_ECORRUPT || (fstat(x.fd, &st) == 0 && st.st_size == 0)) {
        /* keep a partial download for the next run, but neither a file
         * that failed verification nor an empty one */
        unlink(part.data);
    }
    close(x.fd);
    tbuf_free(&part);
    return rc;
}

/* ---- requests with a body in memory ---------------------------------- */

struct fetch_http {
    CURL *h;
};

fetch_http *fetch_http_open(void)
{
    if (fetch_load())
        return NULL;
    CURL *h = cu.easy_init();
    if (!h) {
        trove_fail(TROVE_ENOMEM, "cannot start an HTTP session (curl_easy_init)");
        return NULL;
    }
    fetch_http *s = xcalloc(1, sizeof *s);
    s->h = h;
    return s;
}

void fetch_http_close(fetch_http *s)
{
    if (!s)
        return;
    cu.cleanup(s->h);
    free(s);
}

long fetch_parse_retry_after(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    int64_t v;
    if (parse_i64(s, len, &i, &v) < 0 || v > 86400 * 365)
        return -1;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i == len ? (long)v : -1;
}

typedef struct http_xfer {
    fetch_http_resp *rs;
    int too_big;
} http_xfer;

static size_t http_on_header(char *buf, size_t size, size_t n, void *ud)
{
    http_xfer *x = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0)
        x->rs->retry_after = -1;   /* a new response: forget the previous one's */
    else if (len > 12 && strncasecmp(buf, "retry-after:", 12) == 0)
        x->rs->retry_after = fetch_parse_retry_after(buf + 12, len - 12);
    return len;
}

static size_t http_on_body(char *buf, size_t size, size_t n, void *ud)
{
    http_xfer *x = ud;
    size_t len = size * n;
    if (x->rs->body.len + len > FETCH_HTTP_MAX) {
        x->too_big = 1;
        return 0;
    }
    tbuf_append(&x->rs->body, buf, len);
    return len;
}

trove_err fetch_http_send(fetch_http *s, const fetch_http_req *rq, fetch_http_resp *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->retry_after = -1;
    CURL *h = s->h;
    http_xfer x = {.rs = rs};
    struct curl_slist *hdrs = NULL;
    if (rq->content_type) {
        char line[128];
        snprintf(line, sizeof line, "Content-Type: %s", rq->content_type);
        hdrs = cu.slist_append(hdrs, line);
    }
    hdrs = cu.slist_append(hdrs, "Expect:");   /* no 100-continue round trip per batch */
    cu.setopt(h, CURLOPT_URL, rq->url);
    cu.setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    cu.setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    cu.setopt(h, CURLOPT_NOSIGNAL, 1L);
    cu.setopt(h, CURLOPT_USERAGENT, "trove/0.1 (publish)");
    cu.setopt(h, CURLOPT_CONNECTTIMEOUT, rq->connect_s > 0 ? rq->connect_s : 10L);
    cu.setopt(h, CURLOPT_TIMEOUT, rq->timeout_s > 0 ? rq->timeout_s : 60L);
    cu.setopt(h, CURLOPT_HTTPHEADER, hdrs);
    cu.setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
    cu.setopt(h, CURLOPT_HEADERDATA, &x);
    cu.setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
    cu.setopt(h, CURLOPT_WRITEDATA, &x);
    cu.setopt(h, CURLOPT_NOBODY, strcmp(rq->method, "HEAD") == 0 ? 1L : 0L);
    if (strcmp(rq->method, "GET") == 0) {
        cu.setopt(h, CURLOPT_HTTPGET, 1L);
        cu.setopt(h, CURLOPT_CUSTOMREQUEST, (char *)NULL);
    } else if (strcmp(rq->method, "HEAD") != 0) {
        cu.setopt(h, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
        cu.setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? rq->len : 0));
        cu.setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(rq->method, "POST") == 0 ? NULL : rq->method);
    }
    CURLcode c = cu.perform(h);
    cu.setopt(h, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    cu.slist_free_all(hdrs);
    cu.getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
    if (x.too_big)
        return trove_fail(TROVE_ERANGE, "%s %s: the answer is larger than %u MiB", rq->method,
                          rq->url, FETCH_HTTP_MAX >> 20);
    if (c != CURLE_OK) {
        rs->timed_out = c == CURLE_OPERATION_TIMEDOUT;
        rs->no_connection = c == CURLE_COULDNT_CONNECT || c == CURLE_COULDNT_RESOLVE_HOST;
        return trove_fail(TROVE_EIO, "%s %s: %s", rq->method, rq->url, cu.strerror(c));
    }
    return TROVE_OK;
}

void fetch_http_resp_free(fetch_http_resp *rs)
{
    tbuf_free(&rs->body);
}
