/* mcp internals shared by mcp.c (dispatch), mcp_tools.c and mcp_res.c. */
#ifndef TROVE_MCP_INT_H
#define TROVE_MCP_INT_H

#include <jansson.h>

#include "daemon/client.h"
#include "mcp/mcp.h"

struct mcp_server {
    api *a;
    const char *model;     /* embedding model path, NULL: none */
    int use_daemon;        /* ask a running daemon first */
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

/* An error detail from the api fit for an agent (caller frees): CLI hints
 * ("(see `trove ls`)", "; run `trove update`") cut out, since an agent
 * cannot run them and the tools have their own ways (see `status`). */
char *mcp_agent_text(const char *msg);

/* 1 when the session speaks 2025-06-18 or newer (structured tool output). */
int mcp_structured(const mcp_session *ss);

/* The read calls of the tools and resources: api_* on s->a, or the same
 * through the daemon when s->use_daemon and one answers (dcl_find, then
 * dcl_or_cold decides, as in the CLI). Results as the api's. */
trove_err mcp_search(mcp_server *s, const api_search_opts *o, search_results *out);
trove_err mcp_query(mcp_server *s, const api_query_opts *o, search_results *out,
                    api_query_info *info);
trove_err mcp_get(mcp_server *s, const char *ref, long line, long count, api_note *out);
trove_err mcp_multi_get(mcp_server *s, const char *glob, size_t max_bytes, api_notes *out);
trove_err mcp_ls(mcp_server *s, const char *target, api_listing *out);
trove_err mcp_links(mcp_server *s, const char *ref, api_link_set *out);
trove_err mcp_similar(mcp_server *s, const api_similar_opts *o, search_results *out,
                      api_similar_info *info);
/* *daemon: the daemon's state object (new reference), NULL when answered
 * without one. */
trove_err mcp_status(mcp_server *s, api_status *out, json_t **daemon);

/* ---- tools (mcp_tools.c) ---- */
json_t *mcp_tools_build(int structured, int with_vectors);
/* tools/call: the CallToolResult, or NULL with *err set (unknown tool,
 * arguments that break the input schema). */
json_t *mcp_tools_call(mcp_server *s, const mcp_session *ss, json_t *params, mcp_error *err);

/* ---- prompts and completion (mcp_prompts.c) ---- */
json_t *mcp_prompts_list(void);
/* prompts/get: the prompt's messages, or NULL with *err set. */
json_t *mcp_prompts_get(mcp_server *s, json_t *params, mcp_error *err);
/* completion/complete for the resource template's and the prompts'
 * arguments: at most 100 values, with total and hasMore. */
json_t *mcp_complete(mcp_server *s, json_t *params, mcp_error *err);

/* ---- resources (mcp_res.c) ---- */

/* The one resource template: every indexed note. */
#define MCP_NOTE_TEMPLATE "trove://{collection}/{+path}"
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
