/* api_int — the api handle's fields, shared by the api's own files
 * (api.c, api_query.c); front ends see only the opaque `api`. */
#ifndef TROVE_API_INT_H
#define TROVE_API_INT_H

#include "api/api.h"
#include "embed/embed.h"

struct api {
    config cfg;
    char *index_path;
    store *rd;          /* read-only connection, opened by api_reader() */
    embed_model *em;    /* embedding model, opened by api_embedder() */
    char *em_path;
    embed_model *rm;    /* reranker model, opened by api_query() */
    char *rm_path;
    int rm_tokens;      /* its max_tokens (the reranker window) */
};

#endif
