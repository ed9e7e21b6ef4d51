/* mcp — the Model Context Protocol server: JSON-RPC 2.0 messages in, replies
 * out, over the read API (api/api.h). Transport-free: mcp_stdio.c and
 * mcp_http.c carry the bytes; this module never reads a socket or a file
 * descriptor itself.
 *
 * Protocol versions: 2026-07-28, the stateless one (no handshake: every
 * request names its version and the client's capabilities in _meta, and a
 * client learns what we speak from server/discover), and 2025-11-25,
 * 2025-06-18, 2025-03-26 and 2024-11-05, negotiated at `initialize` (the
 * client's when supported, else 2025-11-25). Methods: server/discover,
 * initialize and ping (before 2026-07-28), tools/list, tools/call,
 * resources/list, resources/templates/list, resources/read and
 * notifications, prompts/list, prompts/get and completion/complete. Tools:
 * search, vsearch (with a model), query, get, multi_get, links, similar,
 * status (mcp_tools.c); prompts and completion (mcp_prompts.c); resources
 * trove://COLLECTION/PATH (mcp_res.c).
 * Everything is read-only and reads only indexed notes inside their
 * collection folder.
 *
 * With mcp_server_use_daemon() the answers come from a running daemon of
 * the same index when one answers, else from the api handle.
 *
 * Ownership: the server borrows the api handle (the caller closes it after
 * mcp_server_free()). Replies are malloc'd strings the caller frees. One
 * server is used by one thread at a time. */
#ifndef TROVE_MCP_H
#define TROVE_MCP_H

#include <stddef.h>

#include "api/api.h"

/* Largest JSON-RPC message accepted (bytes); larger ones get an error. */
#define MCP_MAX_MESSAGE (1024 * 1024)

enum {
    MCP_PARSE_ERROR = -32700,
    MCP_INVALID_REQUEST = -32600,
    MCP_METHOD_NOT_FOUND = -32601,
    MCP_INVALID_PARAMS = -32602,
    MCP_INTERNAL_ERROR = -32603,
    MCP_RESOURCE_NOT_FOUND = -32002,
    MCP_HEADER_MISMATCH = -32020,       /* HTTP headers disagree with the body */
    MCP_UNSUPPORTED_VERSION = -32022,   /* _meta names a version we lack */
};

/* The 2026-07-28 request envelope: params._meta keys. */
#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"   /* in results */

/* What a client and the server agreed on; zeroed before `initialize`. */
typedef struct mcp_session {
    char version[16];    /* negotiated protocol version, "" before initialize */
    int initialized;     /* notifications/initialized seen */
} mcp_session;

typedef struct mcp_server mcp_server;

/* The versions this server speaks, newest first, NULL-terminated. */
extern const char *const mcp_versions[];
/* 1 when `v` is one of mcp_versions. */
int mcp_version_supported(const char *v);
/* 1 when `v` is a stateless (2026-07-28 or later) version. */
int mcp_version_modern(const char *v);

/* The server turns the agent boundary on in `a` (api.h api_set_boundary):
 * notes config `mcp: {exclude, private_key}` keeps from agents are in no
 * answer, through the daemon too.
 * model: the embedding model (GGUF file or model2vec folder) for the
 * vector channel of `search` and for `vsearch`, which is offered only with
 * one; NULL: keywords, titles and links only. Borrowed. */
mcp_server *mcp_server_new(api *a, const char *model);
/* The reranker the `query` tool uses (borrowed; NULL: the lexical
 * re-scorer), as `trove query` picks it: --reranker, $TROVE_RERANK_MODEL,
 * config `rerank_model:`. */
void mcp_server_set_reranker(mcp_server *s, const char *path);
void mcp_server_free(mcp_server *s);
/* on: answer through the running daemon of the api's index when there is
 * one (docs/daemon.md), falling back to the api handle when none can answer
 * (dcl_find/dcl_answered: the CLI's rule). Off by default. */
void mcp_server_use_daemon(mcp_server *s, int on);

/* Handle one message (a request, a notification, a response, or a batch
 * array of them) of `len` bytes. Returns the reply (caller frees), or NULL
 * when none is due (notifications, responses). A message that is not JSON
 * or not JSON-RPC gets an error reply with id null; the server keeps no
 * state from it. */
char *mcp_handle(mcp_server *s, mcp_session *ss, const char *msg, size_t len);

/* The error reply {"jsonrpc":"2.0","id":null,"error":{code,message}} for a
 * transport-level refusal (message too large, ...). Caller frees. */
char *mcp_error_reply(int code, const char *message);

/* The -32022 error reply (id null) for a request naming protocol version
 * `requested` in `what` (a header, say), with data {supported, requested}
 * as 2026-07-28 clients read it to retry with one we speak. Caller frees. */
char *mcp_version_error_reply(const char *what, const char *requested);

/* What a transport reads of one message before handling it (the HTTP
 * transport checks its Mcp-Method/Mcp-Name/MCP-Protocol-Version headers
 * against it). All fields zero/"" when the message is not one JSON-RPC
 * object. */
typedef struct mcp_peek {
    int request;          /* it has an id */
    char method[64];      /* "" when absent or longer */
    char version[32];     /* params._meta protocol version, "" when none */
    int named;            /* the method's params field Mcp-Name mirrors exists */
    char *name;           /* that field's string value (owned), NULL when absent */
} mcp_peek;
void mcp_peek_message(const char *msg, size_t len, mcp_peek *out);
void mcp_peek_free(mcp_peek *p);

/* An Mcp-Name header value as the body spells it: "=?base64?B64?=" (how a
 * 2026-07-28 client sends a value that is not plain printable ASCII)
 * decoded, anything else as is. NULL for broken base64 or a NUL in it.
 * Caller frees. */
char *mcp_header_value_decode(const char *h);

/* The JSON-RPC method of a single request message when it is `initialize`
 * (1), else 0: transports open a session on it. */
int mcp_is_initialize(const char *msg, size_t len);

/* ---- transports ---- */

/* Serve newline-delimited JSON-RPC on in_fd/out_fd (stdio) until EOF on
 * in_fd or a failed write. A line over MCP_MAX_MESSAGE is skipped and
 * answered with an error. Returns 0 at EOF, -1 when writing failed. */
int mcp_stdio_serve(mcp_server *s, int in_fd, int out_fd);

typedef struct mcp_http_opts {
    const char *host;          /* numeric IPv4/IPv6 address to bind */
    int port;                  /* 0: any free port */
    const char *token;         /* bearer token clients must send; NULL: none */
    const char *const *origins;   /* Origin values allowed besides loopback */
    size_t n_origins;
    /* Called once the socket listens, with the URL of the endpoint. */
    void (*on_listen)(const char *url, void *ctx);
    void *ctx;
    volatile int *stop;        /* serve until *stop becomes non-zero */
} mcp_http_opts;

/* Serve Streamable HTTP at /mcp until *o->stop. TROVE_EIO when the
 * address cannot be bound. */
trove_err mcp_http_serve(mcp_server *s, const mcp_http_opts *o);

#endif
