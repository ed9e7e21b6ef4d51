/* front — one answer for a front end (MCP server, web server): from the
 * running daemon of the handle's index when one answers, else from the
 * handle itself (client.h's fallback rule, dcl_or_cold). The web server
 * uses it; the MCP server has the same calls of its own (mcp.c).
 * The daemon answers with the handle's agent boundary (api.h): on when
 * api_set_boundary(a, 1) was called, as `trove serve --allow-remote` does.
 * Results are the api's structs, freed with the api's *_free(). */
#ifndef TROVE_DAEMON_FRONT_H
#define TROVE_DAEMON_FRONT_H

#include <jansson.h>

#include "api/api.h"

typedef struct front {
    api *a;           /* borrowed: the cold path, and the index and config named */
    int use_daemon;   /* 0: always cold (--no-daemon) */
} front;

trove_err front_search(const front *f, const api_search_opts *o, search_results *out);
trove_err front_query(const front *f, const api_query_opts *o, search_results *out,
                      api_query_info *info);
/* A relative on-disk REF is resolved against this process's directory. */
trove_err front_get(const front *f, const char *ref, long line, long count, api_note *out);
trove_err front_links(const front *f, const char *ref, api_link_set *out);
trove_err front_similar(const front *f, const api_similar_opts *o, search_results *out,
                        api_similar_info *info);
/* *daemon: the daemon's own state (new reference), NULL when answered cold. */
trove_err front_status(const front *f, api_status *out, json_t **daemon);

#endif
