/* mcp internals shared by mcp.c (dispatch), mcp_tools.c and mcp_res.c. */
#ifndef TROVE_MCP_INT_H
#define TROVE_MCP_INT_H

#include <jansson.h>

#include "mcp/mcp.h"

struct mcp_server {
    api *a;
    const char *model;     /* embedding model path, NULL: none */
    const char *reranker;  /* `query` tool's reranker model, NULL: lexical */
    json_t *tools[2];      /* tools/list arrays: [0] < 2025-06-18, [1] with
                              title + outputSchema */
};

/* A JSON-RPC error a handler sets instead of returning a result. */
typedef struct mcp_error {
    int code;
    char *message;         /* owned */
    json_t *data;          /* owned, may be NULL */
} mcp_error;

void mcp_err_set(mcp_error *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* 1 when the session speaks 2025-06-18 or newer (structured tool output). */
int mcp_structured(const mcp_session *ss);

/* ---- tools (mcp_tools.c) ---- */
json_t *mcp_tools_build(int structured, int with_vectors);
/* tools/call: the CallToolResult, or NULL with *err set (unknown tool,
 * arguments that break the input schema). */
json_t *mcp_tools_call(mcp_server *s, const mcp_session *ss, json_t *params, mcp_error *err);

/* ---- resources (mcp_res.c) ---- */
json_t *mcp_resources_list(mcp_server *s, json_t *params, mcp_error *err);
json_t *mcp_resources_templates(void);
json_t *mcp_resources_read(mcp_server *s, json_t *params, mcp_error *err);

/* "trove://COLLECTION/PATH" with PATH percent-encoded where a URI needs it
 * (caller frees). */
char *mcp_doc_uri(const char *collection, const char *path);
/* Split a trove:// URI into "COLLECTION/PATH" (percent-decoded; caller
 * frees), or NULL when it is not one. */
char *mcp_doc_ref_from_uri(const char *uri);
/* 1 when "COLLECTION/PATH" names a configured collection: a trove:// URI
 * is never read as a bare indexed PATH. */
int mcp_ref_collection_known(mcp_server *s, const char *ref);
/* NULL when REF (COLLECTION/PATH or PATH) stays inside a collection by its
 * spelling alone, else why not: absolute, ~, or a ".." segment. */
const char *mcp_ref_escapes(const char *ref);

#endif
