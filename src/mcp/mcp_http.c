/* mcp over Streamable HTTP (MCP 2025-03-26 to 2026-07-28) on libmicrohttpd.
 *
 * One endpoint, /mcp: POST carries one JSON-RPC message (or batch) and gets
 * its reply as application/json (202 with no body for notifications).
 * Before 2026-07-28, `initialize` opens a session whose id comes back in
 * Mcp-Session-Id and must be sent with every later request; DELETE ends a
 * session. From 2026-07-28 every request stands alone (its _meta names the
 * version): no session, and the MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name headers must agree with the body (400, -32020 when not). GET is
 * 405 (this server never pushes). Every request is checked first: Host must
 * name a loopback address (or the bound one) and Origin, when sent, a
 * loopback or configured origin (DNS rebinding), the bearer token when one
 * is configured, and the body is bounded by MCP_MAX_MESSAGE.
 *
 * libmicrohttpd runs one internal polling thread: every callback, and so
 * every use of the mcp_server and its api handle, happens on it. */
#include "mcp/mcp.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/http.h"
#include "util/buf.h"
#include "util/mem.h"

#define MAX_SESSIONS 64
#define SESSION_ID_LEN 32

typedef struct http_session {
    char id[SESSION_ID_LEN + 1];   /* "" = free slot */
    mcp_session mcp;
    unsigned long last_used;
} http_session;

typedef struct http_server {
    mcp_server *mcp;
    const mcp_http_opts *o;
    http_guard guard;
    http_session sessions[MAX_SESSIONS];
    unsigned long clock;           /* use counter for least-recently-used eviction */
} http_server;

/* Per request: the body as it arrives. */
typedef struct http_req {
    tbuf body;
    int too_big;
} http_req;

/* ---- responses ---- */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *body,
                               const char *type, const char *sid)
{
    struct MHD_Response *r = http_mhd.create_response_from_buffer(body ? strlen(body) : 0,
                                                             (void *)(body ? body : ""),
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (type)
        http_mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (sid)
        http_mhd.add_response_header(r, "Mcp-Session-Id", sid);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        http_mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
    if (status == MHD_HTTP_UNAUTHORIZED)
        http_mhd.add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"trove\"");
    enum MHD_Result rc = http_mhd.queue_response(c, status, r);
    http_mhd.destroy_response(r);
    return rc;
}

/* An HTTP refusal with a JSON-RPC error body saying why. */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, int code,
                              const char *message)
{
    char *body = mcp_error_reply(code, message);
    enum MHD_Result rc = respond(c, status, body, "application/json", NULL);
    free(body);
    return rc;
}

/* An MCP-Protocol-Version we do not speak: 400 with the -32022 error whose
 * data lists the stateless versions (a 2026-07-28 client retries with one). */
static enum MHD_Result refuse_version(struct MHD_Connection *c, const char *pv)
{
    char *body = mcp_version_error_reply("MCP-Protocol-Version", pv);
    enum MHD_Result rc = respond(c, MHD_HTTP_BAD_REQUEST, body, "application/json", NULL);
    free(body);
    return rc;
}

/* ---- checks ---- */

static const char *header(struct MHD_Connection *c, const char *name)
{
    return http_header(c, name);
}

static int accepts_json(const char *accept)
{
    return !accept || strstr(accept, "application/json") || strstr(accept, "*/*") ||
           strstr(accept, "application/*");
}

/* ---- sessions ---- */

static http_session *session_find(http_server *hs, const char *id)
{
    for (int i = 0; id && i < MAX_SESSIONS; i++)
        if (hs->sessions[i].id[0] && strcmp(hs->sessions[i].id, id) == 0)
            return &hs->sessions[i];
    return NULL;
}

static http_session *session_new(http_server *hs)
{
    http_session *slot = &hs->sessions[0];
    for (int i = 0; i < MAX_SESSIONS; i++) {
        if (!hs->sessions[i].id[0]) {
            slot = &hs->sessions[i];
            break;
        }
        if (hs->sessions[i].last_used < slot->last_used)
            slot = &hs->sessions[i];   /* full: the least recently used goes */
    }
    unsigned char rnd[SESSION_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t n = getrandom(rnd + got, sizeof rnd - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* No entropy source: ids must still differ and be hard to
             * guess; time and address are the best left. */
            unsigned long x = (unsigned long)time(NULL) ^ (unsigned long)(size_t)slot ^
                              hs->clock * 2654435761UL;
            for (; got < sizeof rnd; got++, x = x * 6364136223846793005UL + 1)
                rnd[got] = (unsigned char)(x >> 33);
            break;
        }
        got += (size_t)n;
    }
    memset(slot, 0, sizeof *slot);
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(slot->id + 2 * i, 3, "%02x", rnd[i]);
    slot->last_used = ++hs->clock;
    return slot;
}

/* ---- requests ---- */

/* ---- stateless requests (2026-07-28) ---- */

/* The standard headers of a stateless request against its body: NULL when
 * they agree, else why not. */
static const char *modern_headers_differ(struct MHD_Connection *c, const mcp_peek *pk)
{
    const char *pv = header(c, "MCP-Protocol-Version");
    const char *method = header(c, "Mcp-Method");
    if (!pk->request)
        return NULL;   /* notifications need none of them */
    if (!pk->version[0])
        return NULL;   /* no envelope: refused as invalid params by the caller */
    if (!pv)
        return "header mismatch: MCP-Protocol-Version header required";
    if (strcmp(pv, pk->version) != 0)
        return "header mismatch: MCP-Protocol-Version differs from the body's _meta version";
    if (!method)
        return "header mismatch: Mcp-Method header required";
    if (strcmp(method, pk->method) != 0)
        return "header mismatch: Mcp-Method differs from the body's method";
    if (!pk->named || !pk->name)
        return NULL;
    const char *name = header(c, "Mcp-Name");
    if (!name)
        return "header mismatch: Mcp-Name header required for this method";
    char *decoded = mcp_header_value_decode(name);
    int same = decoded && strcmp(decoded, pk->name) == 0;
    free(decoded);
    return same ? NULL : "header mismatch: Mcp-Name differs from the body";
}

/* A request of the stateless protocol: no session, headers checked against
 * the body, answered in the version its _meta names. */
static enum MHD_Result handle_stateless(http_server *hs, struct MHD_Connection *c,
                                        const char *body, size_t len, const mcp_peek *pk)
{
    if (pk->request && !pk->version[0])
        return refuse(c, MHD_HTTP_BAD_REQUEST, MCP_INVALID_PARAMS, "invalid params: "
                      "MCP-Protocol-Version names a stateless version but the request has no "
                      "_meta." MCP_META_VERSION);
    const char *why = modern_headers_differ(c, pk);
    if (why)
        return refuse(c, MHD_HTTP_BAD_REQUEST, MCP_HEADER_MISMATCH, why);
    mcp_session once = {0};
    char *reply = mcp_handle(hs->mcp, &once, body, len);
    enum MHD_Result rc = reply ? respond(c, MHD_HTTP_OK, reply, "application/json", NULL)
                               : respond(c, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
    free(reply);
    return rc;
}

static enum MHD_Result handle_post(http_server *hs, struct MHD_Connection *c, http_req *rq)
{
    if (rq->too_big) {
        char m[96];
        snprintf(m, sizeof m, "request body larger than %d bytes", MCP_MAX_MESSAGE);
        return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, MCP_INVALID_REQUEST, m);
    }
    const char *body = tbuf_cstr(&rq->body);
    size_t len = rq->body.len;
    mcp_peek pk;
    mcp_peek_message(body, len, &pk);
    const char *pv = header(c, "MCP-Protocol-Version");
    if (pk.version[0] || mcp_version_modern(pv)) {
        enum MHD_Result rc = handle_stateless(hs, c, body, len, &pk);
        mcp_peek_free(&pk);
        return rc;
    }
    mcp_peek_free(&pk);
    http_session *s;
    int opened = 0;
    if (mcp_is_initialize(body, len)) {
        s = session_new(hs);
        opened = 1;
    } else {
        const char *sid = header(c, "Mcp-Session-Id");
        if (!sid)
            return refuse(c, MHD_HTTP_BAD_REQUEST, MCP_INVALID_REQUEST,
                          "Mcp-Session-Id header required (send initialize first)");
        s = session_find(hs, sid);
        if (!s)
            return refuse(c, MHD_HTTP_NOT_FOUND, MCP_INVALID_REQUEST,
                          "session not found (expired or deleted): initialize again");
        s->last_used = ++hs->clock;
    }
    char *reply = mcp_handle(hs->mcp, &s->mcp, body, len);
    if (opened && !s->mcp.version[0]) {
        s->id[0] = '\0';   /* initialize failed: no session */
        opened = 0;
    }
    enum MHD_Result rc;
    if (!reply)
        rc = respond(c, MHD_HTTP_ACCEPTED, NULL, NULL, NULL);
    else
        rc = respond(c, MHD_HTTP_OK, reply, "application/json", opened ? s->id : NULL);
    free(reply);
    return rc;
}

static enum MHD_Result handle_delete(http_server *hs, struct MHD_Connection *c)
{
    const char *sid = header(c, "Mcp-Session-Id");
    if (!sid)
        return refuse(c, MHD_HTTP_BAD_REQUEST, MCP_INVALID_REQUEST,
                      "Mcp-Session-Id header required");
    http_session *s = session_find(hs, sid);
    if (!s)
        return refuse(c, MHD_HTTP_NOT_FOUND, MCP_INVALID_REQUEST, "session not found");
    s->id[0] = '\0';
    return respond(c, MHD_HTTP_OK, NULL, NULL, NULL);
}

/* Checks that need only the headers: done before any body is read. */
static enum MHD_Result check_headers(http_server *hs, struct MHD_Connection *c, const char *url,
                                     const char *method, int *refused)
{
    *refused = 1;
    if (strcmp(url, "/mcp") != 0)
        return refuse(c, MHD_HTTP_NOT_FOUND, MCP_INVALID_REQUEST, "not found: the endpoint "
                      "is /mcp");
    if (!http_host_ok(&hs->guard, header(c, MHD_HTTP_HEADER_HOST)))
        return refuse(c, MHD_HTTP_FORBIDDEN, MCP_INVALID_REQUEST, "forbidden: Host is not a "
                      "loopback address");
    if (!http_origin_ok(&hs->guard, header(c, MHD_HTTP_HEADER_ORIGIN)))
        return refuse(c, MHD_HTTP_FORBIDDEN, MCP_INVALID_REQUEST, "forbidden: Origin not "
                      "allowed (add it to mcp.origins in config.yaml)");
    if (!http_bearer_ok(&hs->guard, header(c, MHD_HTTP_HEADER_AUTHORIZATION)))
        return refuse(c, MHD_HTTP_UNAUTHORIZED, MCP_INVALID_REQUEST, "unauthorized: send "
                      "Authorization: Bearer <mcp.token from config.yaml>");
    const char *pv = header(c, "MCP-Protocol-Version");
    if (pv && !mcp_version_supported(pv))
        return refuse_version(c, pv);
    if (strcmp(method, "POST") == 0) {
        const char *type = header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!type || strncasecmp(type, "application/json", 16) != 0)
            return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, MCP_INVALID_REQUEST,
                          "Content-Type must be application/json");
        if (!accepts_json(header(c, MHD_HTTP_HEADER_ACCEPT)))
            return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, MCP_INVALID_REQUEST,
                          "Accept must allow application/json");
    } else if (strcmp(method, "DELETE") != 0) {
        return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, MCP_INVALID_REQUEST,
                      "method not allowed: POST a JSON-RPC message, DELETE a session "
                      "(this server opens no SSE stream)");
    }
    *refused = 0;
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **req_cls)
{
    (void)version;
    http_server *hs = cls;
    http_req *rq = *req_cls;
    if (!rq) {
        int refused;
        enum MHD_Result rc = check_headers(hs, c, url, method, &refused);
        if (refused)
            return rc;
        *req_cls = xcalloc(1, sizeof *rq);
        return MHD_YES;
    }
    if (*upload_size) {
        if (rq->body.len + *upload_size > MCP_MAX_MESSAGE) {
            rq->too_big = 1;
            tbuf_free(&rq->body);
        } else if (!rq->too_big) {
            tbuf_append(&rq->body, upload, *upload_size);
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "DELETE") == 0)
        return handle_delete(hs, c);
    return handle_post(hs, c, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    http_req *rq = *req_cls;
    if (rq) {
        tbuf_free(&rq->body);
        free(rq);
        *req_cls = NULL;
    }
}

/* ---- serving ---- */

trove_err mcp_http_serve(mcp_server *s, const mcp_http_opts *o)
{
    trove_err rc = http_load("trove mcp --http");
    if (rc)
        return rc;
    http_server *hs = xcalloc(1, sizeof *hs);
    hs->mcp = s;
    hs->o = o;
    hs->guard = (http_guard){.host = o->host, .token = o->token, .origins = o->origins,
                             .n_origins = o->n_origins};
    http_serve_opts so = {
        .host = o->host, .port = o->port, .path = "/mcp",
        .handler = on_request, .handler_cls = hs,
        .completed = on_completed, .completed_cls = hs,
        .on_listen = o->on_listen, .ctx = o->ctx, .stop = o->stop,
    };
    rc = http_serve(&so);
    free(hs);
    return rc;
}
