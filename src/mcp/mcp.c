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

const char *const mcp_versions[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                    "2024-11-05", NULL};

/* The first version of the stateless protocol (no initialize: every request
 * names its version in _meta; server/discover tells which ones we speak).
 * Versions are dates: they compare as strings. */
#define MODERN_FIRST "2026-07-28"
/* What `initialize` answers a client whose version it does not speak (or
 * one asking for a modern version, which has no initialize). */
#define LEGACY_NEWEST "2025-11-25"

/* How long a client may keep a list or discover result (ttlMs). Tools,
 * prompts and templates change only with the server binary; notes change
 * whenever the user writes: those are never cached. Always "private": they
 * describe one user's notes. */
#define TTL_STATIC_MS 300000
#define TTL_NOTES_MS 0

static const char instructions_base[] =
    "trove searches the user's local markdown notes (Obsidian vaults, wikis, meeting notes). "
    "Use `search` first for any question the notes might answer: it ranks notes by keywords, "
    "titles and links and returns the best passage of each with its doc_uri and line range. "
    "Then use `get` with a result's doc_uri (and start_line/end_line) to read more of a note, "
    "or with a glob such as 'notes/projects/*.md' to read several. `status` tells which "
    "collections exist and whether the index is up to date. Every note is also a resource "
    "trove://COLLECTION/PATH. Cite notes by doc_uri and line numbers.";

/* The languages the notes are written in, most notes first (the index's
 * detection: a query in one of them finds them best). */
static void languages(tbuf *b, const api_status *st)
{
    if (!st->n_langs)
        return;
    tbuf_puts(b, " Languages of the notes:");
    for (size_t i = 0; i < st->n_langs && i < 8; i++)
        tbuf_printf(b, "%s %s (%lld)", i ? "," : "", st->langs[i].lang,
                    (long long)st->langs[i].notes);
    tbuf_puts(b, st->n_langs > 8 ? ", and others." : ".");
}

/* The instructions: how to use the tools, then what this index holds (its
 * collections with note counts, contexts and languages, whether meaning search is
 * there), read at each initialize/discover so a model knows what it is
 * searching before it searches. Caller frees. */
static char *instructions(mcp_server *s)
{
    tbuf b = {0};
    tbuf_puts(&b, instructions_base);
    api_status st;
    json_t *daemon;
    if (mcp_status(s, &st, &daemon) != TROVE_OK) {
        tbuf_puts(&b, " (The index could not be read; call `status`.)");
        return tbuf_detach(&b);
    }
    json_decref(daemon);
    if (!st.index_exists) {
        tbuf_puts(&b, " The index is empty: nothing has been indexed yet.");
    } else {
        tbuf_printf(&b, "\n\nThis index holds %lld notes in %zu collection%s:",
                    (long long)st.counts.docs, st.n_collections,
                    st.n_collections == 1 ? "" : "s");
        const config *cfg = api_config(s->a);
        for (size_t i = 0; i < st.n_collections; i++) {
            const api_status_collection *c = &st.collections[i];
            tbuf_printf(&b, "%s %s (%lld notes", i ? ";" : "", c->name, (long long)c->notes);
            for (size_t k = 0; k < cfg->n_contexts; k++)
                if (strcmp(cfg->contexts[k].target, c->name) == 0)
                    tbuf_printf(&b, ": %s", cfg->contexts[k].text);
            tbuf_puts(&b, ")");
        }
        tbuf_puts(&b, ".");
        languages(&b, &st);
    }
    tbuf_puts(&b, s->model ? " Meaning search is on: `vsearch` finds notes that say the same "
                             "thing in other words."
                           : " There is no embedding model: search matches words, titles and "
                             "links, not meaning.");
    api_status_free(&st);
    return tbuf_detach(&b);
}

int mcp_version_supported(const char *v)
{
    for (size_t i = 0; v && mcp_versions[i]; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return 1;
    return 0;
}

int mcp_version_modern(const char *v)
{
    return v && strcmp(v, MODERN_FIRST) >= 0;
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
    /* every answer of this server is an agent's: the notes config `mcp:`
     * keeps from agents are not there for it (api.h, the agent boundary) */
    api_set_boundary(a, 1);
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
    dcl *d = s->use_daemon ? dcl_find(api_index_path(s->a), api_config(s->a), 60.0) : NULL;
    dcl_set_boundary(d, api_boundary(s->a));
    return d;
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

trove_err mcp_links(mcp_server *s, const char *ref, api_link_set *out)
{
    char cwd[4096];
    wire_links_args args = {.ref = ref, .cwd = getcwd(cwd, sizeof cwd)};
    return dcl_or_cold(daemon_of(s), s->a, WIRE_OP_LINKS, &args, out);
}

trove_err mcp_similar(mcp_server *s, const api_similar_opts *o, search_results *out,
                      api_similar_info *info)
{
    api_similar_opts args = *o;
    wire_similar_answer ans;
    trove_err rc = dcl_or_cold(daemon_of(s), s->a, WIRE_OP_SIMILAR, &args, &ans);
    *out = ans.results;
    *info = ans.info;
    return rc;
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

/* Who we are: initialize's serverInfo, and in 2026-07-28 discover's and
 * every result's _meta "io.modelcontextprotocol/serverInfo". */
static json_t *server_info(int with_title)
{
    json_t *info = json_pack("{s:s, s:s}", "name", "trove", "version", TROVE_VERSION);
    if (with_title)
        json_object_set_new(info, "title", json_string("trove notes search"));
    return info;
}

static json_t *server_caps(void)
{
    return json_pack("{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}}", "tools", "listChanged", 0,
                     "resources", "subscribe", 0, "listChanged", 0, "prompts", "listChanged", 0,
                     "completions");
}

/* server/discover (2026-07-28): the versions a client may name in _meta,
 * what we offer and how to use it. No handshake follows. */
static json_t *m_discover(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss, (void)params, (void)err;
    json_t *versions = json_array();
    for (size_t i = 0; mcp_versions[i]; i++)
        if (mcp_version_modern(mcp_versions[i]))
            json_array_append_new(versions, json_string(mcp_versions[i]));
    char *text = instructions(s);
    json_t *r = json_pack("{s:o, s:o, s:o, s:s}", "supportedVersions", versions, "capabilities",
                          server_caps(), "serverInfo", server_info(1), "instructions", text);
    free(text);
    return r;
}

static json_t *m_initialize(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    json_t *v = json_object_get(params, "protocolVersion");
    if (!json_is_string(v)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "initialize: 'protocolVersion' must be a string");
        return NULL;
    }
    /* The client's version when we speak it, else our newest: the client
     * then decides whether it can go on. */
    const char *want = json_string_value(v);
    const char *got = mcp_version_supported(want) && !mcp_version_modern(want) ? want
                                                                              : LEGACY_NEWEST;
    snprintf(ss->version, sizeof ss->version, "%s", got);
    ss->initialized = 0;
    json_t *info = server_info(mcp_structured(ss));
    json_t *r = json_pack("{s:s, s:o, s:o}", "protocolVersion", got, "capabilities",
                          server_caps(), "serverInfo", info);
    if (strcmp(got, "2025-03-26") >= 0) {
        char *text = instructions(s);
        json_object_set_new(r, "instructions", json_string(text));
        free(text);
    }
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

static json_t *m_prompts_list(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)s, (void)ss, (void)params, (void)err;
    return mcp_prompts_list();
}

static json_t *m_prompts_get(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss;
    return mcp_prompts_get(s, params, err);
}

static json_t *m_complete(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss;
    return mcp_complete(s, params, err);
}

static json_t *m_res_read(mcp_server *s, mcp_session *ss, json_t *params, mcp_error *err)
{
    (void)ss;
    return mcp_resources_read(s, params, err);
}

typedef json_t *(*method_fn)(mcp_server *, mcp_session *, json_t *, mcp_error *);

enum { ERA_BOTH, ERA_LEGACY, ERA_MODERN };
#define NO_TTL (-1)

/* Every method: which protocol era has it (2026-07-28 dropped initialize
 * and ping), how long its result may be cached there (ttlMs; NO_TTL: not a
 * cacheable result), and which params field the Streamable HTTP Mcp-Name
 * header mirrors (NULL: none). */
static const struct {
    const char *name;
    method_fn fn;
    int era;
    long ttl_ms;
    const char *name_field;
} methods[] = {
    {"initialize", m_initialize, ERA_LEGACY, NO_TTL, NULL},
    {"ping", m_ping, ERA_LEGACY, NO_TTL, NULL},
    {"server/discover", m_discover, ERA_BOTH, TTL_STATIC_MS, NULL},
    {"tools/list", m_tools_list, ERA_BOTH, TTL_STATIC_MS, NULL},
    {"tools/call", m_tools_call, ERA_BOTH, NO_TTL, "name"},
    {"resources/list", m_res_list, ERA_BOTH, TTL_NOTES_MS, NULL},
    {"resources/templates/list", m_res_templates, ERA_BOTH, TTL_STATIC_MS, NULL},
    {"resources/read", m_res_read, ERA_BOTH, TTL_NOTES_MS, "uri"},
    {"prompts/list", m_prompts_list, ERA_BOTH, TTL_STATIC_MS, NULL},
    {"prompts/get", m_prompts_get, ERA_BOTH, NO_TTL, "name"},
    {"completion/complete", m_complete, ERA_BOTH, NO_TTL, NULL},
};
#define N_METHODS (sizeof methods / sizeof *methods)

static int method_index(const char *name, int modern)
{
    for (size_t k = 0; k < N_METHODS; k++)
        if (strcmp(methods[k].name, name) == 0)
            return methods[k].era == (modern ? ERA_LEGACY : ERA_MODERN) ? -1 : (int)k;
    return -1;
}

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

/* ---- the 2026-07-28 request envelope ---- */

static json_t *modern_versions(void)
{
    json_t *a = json_array();
    for (size_t i = 0; mcp_versions[i]; i++)
        if (mcp_version_modern(mcp_versions[i]))
            json_array_append_new(a, json_string(mcp_versions[i]));
    return a;
}

static json_t *version_error(json_t *id, const char *what, const char *requested)
{
    char m[300];
    snprintf(m, sizeof m, "unsupported %s '%.40s' (supported: %s in _meta; or initialize "
             "with %s or older)", what, requested, MODERN_FIRST, LEGACY_NEWEST);
    json_t *data = json_pack("{s:o, s:s}", "supported", modern_versions(), "requested",
                             requested);
    json_t *e = error_obj(id, MCP_UNSUPPORTED_VERSION, m, data);
    json_decref(data);
    return e;
}

char *mcp_version_error_reply(const char *what, const char *requested)
{
    return dump(version_error(NULL, what, requested));
}

/* The error reply for a request whose _meta envelope is broken or names a
 * version we do not speak, else NULL with req->version set from it. */
static json_t *envelope_error(json_t *id, json_t *params, mcp_session *req)
{
    json_t *meta = json_object_get(params, "_meta");
    json_t *pv = json_object_get(meta, MCP_META_VERSION);
    if (!json_is_string(pv))
        return error_obj(id, MCP_INVALID_PARAMS, "invalid params: '_meta." MCP_META_VERSION
                         "' must be a string", NULL);
    const char *v = json_string_value(pv);
    if (!mcp_version_modern(v) || !mcp_version_supported(v))
        return version_error(id, "protocol version", v);
    if (!json_is_object(json_object_get(meta, MCP_META_CAPABILITIES)))
        return error_obj(id, MCP_INVALID_PARAMS, "invalid params: '_meta."
                         MCP_META_CAPABILITIES "' must be an object (protocol 2026-07-28 "
                         "sends the client's capabilities with every request)", NULL);
    snprintf(req->version, sizeof req->version, "%s", v);
    return NULL;
}

/* What every 2026-07-28 result carries: resultType, who answered, and for
 * a cacheable one how long and for whom it may be kept. */
static void stamp_result(json_t *result, long ttl_ms)
{
    json_object_set_new(result, "resultType", json_string("complete"));
    json_object_set_new(result, "_meta", json_pack("{s:o}", MCP_META_SERVER_INFO,
                                                   server_info(1)));
    if (ttl_ms != NO_TTL) {
        json_object_set_new(result, "ttlMs", json_integer(ttl_ms));
        json_object_set_new(result, "cacheScope", json_string("private"));
    }
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
    /* 2026-07-28: the request names its version and the client's
     * capabilities in _meta and is answered in that version, whatever this
     * session did before (no initialize needed). */
    mcp_session req = *ss;
    json_t *pv = json_object_get(json_object_get(params, "_meta"), MCP_META_VERSION);
    json_t *reply = pv ? envelope_error(id, params, &req) : NULL;
    int modern = pv != NULL;
    int k = reply ? -1 : method_index(name, modern);
    if (reply) {
        /* the envelope was refused */
    } else if (k < 0) {
        char m[160];
        snprintf(m, sizeof m, "method not found: %.100s%s", name,
                 modern && method_index(name, 0) >= 0 ? " (not in protocol 2026-07-28)" : "");
        reply = error_obj(id, MCP_METHOD_NOT_FOUND, m, NULL);
    } else {
        mcp_error err = {0};
        json_t *result = methods[k].fn(s, modern ? &req : ss, params, &err);
        if (result) {
            if (modern || methods[k].fn == m_discover)
                stamp_result(result, methods[k].ttl_ms);
            reply = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
        } else {
            if (modern && err.code == MCP_RESOURCE_NOT_FOUND) {
                /* 2026-07-28 spells "no such resource" as invalid params
                 * naming the uri. */
                err.code = MCP_INVALID_PARAMS;
                if (!err.data)
                    err.data = json_pack("{s:O}", "uri", json_object_get(params, "uri"));
            }
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

void mcp_peek_message(const char *msg, size_t len, mcp_peek *out)
{
    memset(out, 0, sizeof *out);
    if (len > MCP_MAX_MESSAGE)
        return;
    json_error_t jerr;
    int salvaged;
    json_t *root = load_message(msg, len, &jerr, &salvaged);
    if (!json_is_object(root)) {
        json_decref(root);
        return;
    }
    out->request = json_object_get(root, "id") != NULL;
    json_t *m = json_object_get(root, "method");
    json_t *params = json_object_get(root, "params");
    json_t *pv = json_object_get(json_object_get(params, "_meta"), MCP_META_VERSION);
    if (json_is_string(m) && json_string_length(m) < sizeof out->method)
        snprintf(out->method, sizeof out->method, "%s", json_string_value(m));
    if (json_is_string(pv) && json_string_length(pv) < sizeof out->version)
        snprintf(out->version, sizeof out->version, "%s", json_string_value(pv));
    for (size_t k = 0; k < N_METHODS; k++) {
        if (!methods[k].name_field || strcmp(methods[k].name, out->method) != 0)
            continue;
        out->named = 1;
        json_t *v = json_object_get(params, methods[k].name_field);
        if (json_is_string(v))
            out->name = xstrdup(json_string_value(v));
    }
    json_decref(root);
}

void mcp_peek_free(mcp_peek *p)
{
    free(p->name);
    p->name = NULL;
}

/* ---- Streamable HTTP header values ---- */

static int b64_value(char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

char *mcp_header_value_decode(const char *h)
{
    static const char pre[] = "=?base64?", suf[] = "?=";
    size_t n = strlen(h);
    if (n < sizeof pre - 1 + sizeof suf - 1 || strncmp(h, pre, sizeof pre - 1) != 0 ||
        strcmp(h + n - (sizeof suf - 1), suf) != 0)
        return xstrdup(h);
    tbuf out = {0};
    unsigned acc = 0;
    int bits = 0;
    for (const char *p = h + sizeof pre - 1; p < h + n - (sizeof suf - 1); p++) {
        if (*p == '=')
            break;
        int v = b64_value(*p);
        if (v < 0) {
            tbuf_free(&out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char byte = (char)((acc >> bits) & 0xFF);
            if (!byte) {
                tbuf_free(&out);
                return NULL;
            }
            tbuf_putc(&out, byte);
        }
    }
    tbuf_puts(&out, "");
    return tbuf_detach(&out);
}
