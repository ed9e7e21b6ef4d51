/* mcp — JSON-RPC 2.0 framing, lifecycle and method dispatch. */
#include "mcp/mcp_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/mem.h"

#include "util/version.h"
/* A batch may carry at most this many messages. */
#define MCP_MAX_BATCH 64

const char *const mcp_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05", NULL};

static const char instructions[] =
    "trove searches the user's local markdown notes (Obsidian vaults, wikis, meeting notes). "
    "Use `search` first for any question the notes might answer: it ranks notes by keywords, "
    "titles and links and returns the best passage of each with its doc_uri and line range. "
    "Then use `get` with a result's doc_uri (and start_line/end_line) to read more of a note, "
    "or with a glob such as 'notes/projects/*.md' to read several. `status` tells which "
    "collections exist and whether the index is up to date. Every note is also a resource "
    "trove://COLLECTION/PATH. Cite notes by doc_uri and line numbers.";

int mcp_version_supported(const char *v)
{
    for (size_t i = 0; v && mcp_versions[i]; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return 1;
    return 0;
}

int mcp_structured(const mcp_session *ss)
{
    /* Dates compare as strings; "" (no initialize yet) is the newest. */
    return !ss->version[0] || strcmp(ss->version, "2025-06-18") >= 0;
}

void mcp_err_set(mcp_error *e, int code, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(e->message);
    e->code = code;
    e->message = xstrdup(buf);
}

/* Where the clause holding the CLI hint at `hint` starts: the nearest
 * "; ", ": ", ", " or " (" before it, or the message start. */
static const char *clause_start(const char *msg, const char *hint, int *paren)
{
    *paren = 0;
    for (const char *p = hint; p > msg; p--) {
        if (p - msg >= 2 && p[-1] == '(' && p[-2] == ' ') {
            *paren = 1;
            return p - 2;
        }
        if (p - msg >= 2 && p[-1] == ' ' && strchr(";:,", p[-2]))
            return p - 2;
    }
    return msg;
}

char *mcp_agent_text(const char *msg)
{
    tbuf b = {0};
    tbuf_puts(&b, msg ? msg : "");
    char *hint;
    while (b.data && (hint = strstr(b.data, "`trove")) != NULL) {
        int paren;
        char *from = (char *)clause_start(b.data, hint, &paren);
        char *to;
        if (paren) {
            to = strchr(hint, ')');
            to = to ? to + 1 : hint + strlen(hint);
        } else {
            /* to the end of the clause: the next ';', line or aside in
             * parentheses (what the hint downloads, say), else the end */
            to = hint + strcspn(hint, ";\n");
            char *aside = strstr(hint, " (");
            if (aside && aside < to)
                to = aside;
        }
        memmove(from, to, strlen(to) + 1);
        b.len = strlen(b.data);
    }
    char *out = tbuf_detach(&b);
    return out ? out : xstrdup("");
}

void mcp_server_set_reranker(mcp_server *s, const char *path)
{
    s->reranker = path;
}

mcp_server *mcp_server_new(api *a, const char *model)
{
    mcp_server *s = xcalloc(1, sizeof *s);
    s->a = a;
    s->model = model;
    s->tools[0] = mcp_tools_build(0, model != NULL);
    s->tools[1] = mcp_tools_build(1, model != NULL);
    return s;
}

void mcp_server_use_daemon(mcp_server *s, int on)
{
    s->use_daemon = on;
}

static dcl *daemon_of(mcp_server *s)
{
    return s->use_daemon ? dcl_find(api_index_path(s->a), api_config(s->a), 60.0) : NULL;
}

/* Each request through dcl_or_cold: the daemon's answer when one can
 * give it, else the server's own api handle's. */
trove_err mcp_search(mcp_server *s, const api_search_opts *o, search_results *out)
{
    api_search_opts args = *o;
    return dcl_or_cold(daemon_of(s), s->a, o->search.vector_only ? WIRE_OP_VSEARCH : WIRE_OP_SEARCH,
                       &args, out);
}

trove_err mcp_query(mcp_server *s, const api_query_opts *o, search_results *out,
                    api_query_info *info)
{
    api_query_opts args = *o;
    wire_query_answer ans;
    trove_err rc = dcl_or_cold(daemon_of(s), s->a, WIRE_OP_QUERY, &args, &ans);
    *out = ans.results;
    *info = ans.info;
    return rc;
}

trove_err mcp_get(mcp_server *s, const char *ref, long line, long count, api_note *out)
{
    /* A relative on-disk REF means the same to the daemon as to us. */
    char cwd[4096];
    wire_get_args args = {.ref = ref, .cwd = getcwd(cwd, sizeof cwd), .line = line, .count = count};
    return dcl_or_cold(daemon_of(s), s->a, WIRE_OP_GET, &args, out);
}

trove_err mcp_multi_get(mcp_server *s, const char *glob, size_t max_bytes, api_notes *out)
{
    wire_multi_get_args args = {.glob = glob, .max_bytes = (long)max_bytes};
    return dcl_or_cold(daemon_of(s), s->a, WIRE_OP_MULTI_GET, &args, out);
}

trove_err mcp_ls(mcp_server *s, const char *target, api_listing *out)
{
    wire_ls_args args = {.target = target};
    return dcl_or_cold(daemon_of(s), s->a, WIRE_OP_LS, &args, out);
}

trove_err mcp_status(mcp_server *s, api_status *out, json_t **daemon)
{
    *daemon = NULL;
    dcl *d = daemon_of(s);
    if (d) {
        trove_err rc = dcl_status(d, out, daemon);
        if (dcl_answered(d))
            return rc;
        json_decref(*daemon);
        *daemon = NULL;
    }
    return api_status_get(s->a, out);
}

void mcp_server_free(mcp_server *s)
{
    if (!s)
        return;
    json_decref(s->tools[0]);
    json_decref(s->tools[1]);
    free(s);
}

/* ---- methods ---- */

static json_t *m_initialize(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)s;
    json_t *v = json_object_get(params, "protocolVersion");
    if (!json_is_string(v)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "initialize: 'protocolVersion' must be a string");
        return NULL;
    }
    /* The client's version when we speak it, else our newest: the client
     * then decides whether it can go on. */
    const char *want = json_string_value(v);
    const char *got = mcp_version_supported(want) ? want : mcp_versions[0];
    snprintf(ss->version, sizeof ss->version, "%s", got);
    ss->initialized = 0;
    json_t *info = json_pack("{s:s, s:s}", "name", "trove", "version", TROVE_VERSION);
    if (mcp_structured(ss))
        json_object_set_new(info, "title", json_string("trove notes search"));
    json_t *caps = json_pack("{s:{s:b}, s:{s:b, s:b}}", "tools", "listChanged", 0,
                             "resources", "subscribe", 0, "listChanged", 0);
    json_t *r = json_pack("{s:s, s:o, s:o}", "protocolVersion", got, "capabilities", caps,
                          "serverInfo", info);
    if (strcmp(got, "2025-03-26") >= 0)
        json_object_set_new(r, "instructions", json_string(instructions));
    return r;
}

static json_t *m_ping(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)s, (void)ss, (void)params, (void)err;
    return json_object();
}

static json_t *m_tools_list(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)params, (void)err;
    return json_pack("{s:O}", "tools", s->tools[mcp_structured(ss)]);
}

static json_t *m_tools_call(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    return mcp_tools_call(s, ss, params, err);
}

static json_t *m_res_list(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss;
    return mcp_resources_list(s, params, err);
}

static json_t *m_res_templates(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)s, (void)ss, (void)params, (void)err;
    return mcp_resources_templates();
}

static json_t *m_res_read(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss;
    return mcp_resources_read(s, params, err);
}

typedef json_t *(*method_fn)(mcp_server *, mcp_session *, json_t *, mcp_error *);

static const struct {
    const char *name;
    method_fn fn;
} methods[] = {
    {"initialize", m_initialize},
    {"ping", m_ping},
    {"tools/list", m_tools_list},
    {"tools/call", m_tools_call},
    {"resources/list", m_res_list},
    {"resources/templates/list", m_res_templates},
    {"resources/read", m_res_read},
};

/* ---- framing ---- */

static json_t *error_obj(json_t *id, int code, const char *message, json_t *data)
{
    json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data)
        json_object_set(e, "data", data);
    return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

static char *dump(json_t *reply)
{
    char *out = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    if (!out) {
        /* Only allocation failure gets here: xmalloc would have aborted. */
        out = xstrdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
                      "\"message\":\"reply could not be encoded\"}}");
    }
    return out;
}

char *mcp_error_reply(int code, const char *message)
{
    return dump(error_obj(NULL, code, message, NULL));
}

static void notification(mcp_session *ss, const char *method)
{
    if (strcmp(method, "notifications/initialized") == 0)
        ss->initialized = 1;
    /* notifications/cancelled: every request is answered before the next
     * is read, so there is nothing in flight to cancel. Others: ignored,
     * as JSON-RPC says. */
}

/* The value of the \uXXXX escape at p (4 hex digits), or -1. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* "\u0000" and a lone surrogate ("\ud800") are valid JSON, and the request
 * that holds one must be answered with its own id: a parse error would
 * answer id null, which no client can match to its request (it waits for
 * the reply until it times out). Strings may hold NUL (JSON_ALLOW_NUL);
 * handle_one refuses them with invalid params. jansson refuses a NUL in an
 * object key and a lone surrogate anywhere even so: such a message is read
 * again with each of those escapes spelt \uFFFD, only to answer it
 * (*salvaged = 1). */
static json_t *load_message(const char *msg, size_t len, json_error_t *jerr, int *salvaged)
{
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
    *salvaged = 0;
    json_t *root = json_loadb(msg, len, flags, jerr);
    if (root)
        return root;
    char *copy = xmalloc(len ? len : 1);
    memcpy(copy, msg, len);
    int in_string = 0, changed = 0;
    for (size_t i = 0; i < len; i++) {
        if (copy[i] == '"') {
            in_string = !in_string;
        } else if (in_string && copy[i] == '\\' && i + 1 < len) {
            long u = copy[i + 1] == 'u' && i + 5 < len ? hex4(copy + i + 2) : -1;
            int pair = u >= 0xD800 && u <= 0xDBFF && i + 11 < len && copy[i + 6] == '\\' &&
                       copy[i + 7] == 'u' && hex4(copy + i + 8) >= 0xDC00 &&
                       hex4(copy + i + 8) <= 0xDFFF;
            if (pair) {
                i += 11;   /* a whole surrogate pair: fine */
                continue;
            }
            if (u == 0 || (u >= 0xD800 && u <= 0xDFFF)) {
                memcpy(copy + i + 2, "FFFD", 4);
                changed = 1;
            }
            i++;   /* the escaped character, never a quote that ends the string */
        }
    }
    json_error_t again;
    root = changed ? json_loadb(copy, len, flags, &again) : NULL;
    free(copy);
    *salvaged = root != NULL;
    return root;
}

/* 1 when a string in v holds U+0000, or (salvaged) a string or an object
 * key holds U+FFFD, how load_message spelt what jansson refused; *where
 * gets the dotted path of it. */
static int holds_nul(json_t *v, int salvaged, tbuf *where)
{
    if (json_is_string(v))
        return memchr(json_string_value(v), '\0', json_string_length(v)) != NULL ||
               (salvaged && strstr(json_string_value(v), "\xEF\xBF\xBD"));
    size_t mark = where->len;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
            tbuf_printf(where, "%s%s", mark ? "." : "", k);
            if ((salvaged && strstr(k, "\xEF\xBF\xBD")) || holds_nul(x, salvaged, where))
                return 1;
            where->len = mark;
            where->data[mark] = '\0';
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            tbuf_printf(where, "[%zu]", i);
            if (holds_nul(x, salvaged, where))
                return 1;
            where->len = mark;
            where->data[mark] = '\0';
        }
    }
    return 0;
}

/* One message of a batch or alone: the reply, or NULL when none is due. */
static json_t *handle_one(mcp_server *s, mcp_session *ss, json_t *msg, int nul_key)
{
    if (!json_is_object(msg))
        return error_obj(NULL, MCP_INVALID_REQUEST, "invalid request: a JSON-RPC message is an "
                         "object", NULL);
    if (nul_key) {
        /* which message of a batch has it */
        tbuf t = {0};
        nul_key = holds_nul(msg, 1, &t);
        tbuf_free(&t);
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    json_t *ver = json_object_get(msg, "jsonrpc");
    /* A valid id is echoed back in errors; anything else becomes null. */
    json_t *reply_id = (json_is_string(id) || json_is_integer(id)) ? id : NULL;
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)
        return error_obj(reply_id, MCP_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be "
                         "\"2.0\"", NULL);
    if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        return NULL;   /* a response: this server sends no requests to answer */
    if (!json_is_string(method))
        return error_obj(reply_id, MCP_INVALID_REQUEST, "invalid request: \"method\" must be "
                         "a string", NULL);
    if (id && !reply_id)
        return error_obj(NULL, MCP_INVALID_REQUEST, "invalid request: \"id\" must be a string "
                         "or an integer", NULL);
    if (json_string_length(method) != strlen(json_string_value(method)))
        return error_obj(reply_id, MCP_INVALID_REQUEST, "invalid request: \"method\" holds a "
                         "NUL character (\\u0000)", NULL);
    const char *name = json_string_value(method);
    json_t *params = json_object_get(msg, "params");
    if (!id) {
        notification(ss, name);
        return NULL;
    }
    if (params && !json_is_object(params))
        return error_obj(id, MCP_INVALID_PARAMS, "invalid params: \"params\" must be an object",
                         NULL);
    tbuf where = {0};
    tbuf_puts(&where, "");
    if (params && holds_nul(params, nul_key, &where)) {
        char m[400];
        snprintf(m, sizeof m, "invalid params: '%.200s' holds a NUL character (\\u0000)%s, "
                 "which no query, note path or URI can", where.len ? where.data : "params",
                 nul_key ? " or a lone UTF-16 surrogate" : "");
        tbuf_free(&where);
        return error_obj(id, MCP_INVALID_PARAMS, m, NULL);
    }
    tbuf_free(&where);
    if (nul_key)
        return error_obj(id, MCP_INVALID_REQUEST, "invalid request: an object key or the "
                         "method holds a NUL character (\\u0000) or a lone UTF-16 surrogate",
                         NULL);
    json_t *empty = NULL;
    if (!params)
        params = empty = json_object();
    json_t *reply = NULL;
    size_t k;
    for (k = 0; k < sizeof methods / sizeof *methods; k++)
        if (strcmp(methods[k].name, name) == 0)
            break;
    if (k == sizeof methods / sizeof *methods) {
        char m[160];
        snprintf(m, sizeof m, "method not found: %.100s", name);
        reply = error_obj(id, MCP_METHOD_NOT_FOUND, m, NULL);
    } else {
        mcp_error err = {0};
        json_t *result = methods[k].fn(s, ss, params, &err);
        if (result) {
            reply = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
        } else {
            reply = error_obj(id, err.code ? err.code : MCP_INTERNAL_ERROR,
                              err.message ? err.message : "internal error", err.data);
        }
        free(err.message);
        json_decref(err.data);
    }
    json_decref(empty);
    return reply;
}

char *mcp_handle(mcp_server *s, mcp_session *ss, const char *msg, size_t len)
{
    if (len > MCP_MAX_MESSAGE) {
        char m[96];
        snprintf(m, sizeof m, "invalid request: message larger than %d bytes", MCP_MAX_MESSAGE);
        return mcp_error_reply(MCP_INVALID_REQUEST, m);
    }
    json_error_t jerr;
    int nul_key = 0;
    json_t *root = load_message(msg, len, &jerr, &nul_key);
    if (!root) {
        char m[300];
        snprintf(m, sizeof m, "parse error: %s (byte %d)", jerr.text, jerr.position);
        return mcp_error_reply(MCP_PARSE_ERROR, m);
    }
    json_t *reply = NULL;
    if (json_is_array(root)) {
        size_t n = json_array_size(root);
        if (n == 0 || n > MCP_MAX_BATCH) {
            char m[96];
            snprintf(m, sizeof m, "invalid request: a batch holds 1 to %d messages",
                     MCP_MAX_BATCH);
            reply = error_obj(NULL, MCP_INVALID_REQUEST, m, NULL);
        } else {
            reply = json_array();
            for (size_t i = 0; i < n; i++) {
                json_t *r = handle_one(s, ss, json_array_get(root, i), nul_key);
                if (r)
                    json_array_append_new(reply, r);
            }
            if (json_array_size(reply) == 0) {
                json_decref(reply);
                reply = NULL;
            }
        }
    } else {
        reply = handle_one(s, ss, root, nul_key);
    }
    json_decref(root);
    return reply ? dump(reply) : NULL;
}

int mcp_is_initialize(const char *msg, size_t len)
{
    if (len > MCP_MAX_MESSAGE)
        return 0;
    json_error_t jerr;
    int nul_key;
    json_t *root = load_message(msg, len, &jerr, &nul_key);
    json_t *m = json_object_get(root, "method");
    int yes = json_is_string(m) && strcmp(json_string_value(m), "initialize") == 0 &&
              json_object_get(root, "id") != NULL;
    json_decref(root);
    return yes;
}
