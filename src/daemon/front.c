/* front — the daemon when it answers, else the api handle (dcl_or_cold). */
#include "daemon/front.h"

#include <unistd.h>

#include "api/wire.h"
#include "daemon/client.h"

static dcl *daemon_of(const front *f)
{
    dcl *d = f->use_daemon ? dcl_find(api_index_path(f->a), api_config(f->a), 60.0) : NULL;
    dcl_set_boundary(d, api_boundary(f->a));   /* the daemon keeps the handle's boundary */
    return d;
}

trove_err front_search(const front *f, const api_search_opts *o, search_results *out)
{
    api_search_opts args = *o;
    return dcl_or_cold(daemon_of(f), f->a,
                       o->search.vector_only ? WIRE_OP_VSEARCH : WIRE_OP_SEARCH, &args, out);
}

trove_err front_query(const front *f, const api_query_opts *o, search_results *out,
                      api_query_info *info)
{
    api_query_opts args = *o;
    wire_query_answer ans;
    trove_err rc = dcl_or_cold(daemon_of(f), f->a, WIRE_OP_QUERY, &args, &ans);
    *out = ans.results;
    *info = ans.info;
    return rc;
}

trove_err front_get(const front *f, const char *ref, long line, long count, api_note *out)
{
    /* A relative on-disk REF means the same to the daemon as to us. */
    char cwd[4096];
    wire_get_args args = {.ref = ref, .cwd = getcwd(cwd, sizeof cwd), .line = line, .count = count};
    return dcl_or_cold(daemon_of(f), f->a, WIRE_OP_GET, &args, out);
}

trove_err front_links(const front *f, const char *ref, api_link_set *out)
{
    char cwd[4096];
    wire_links_args args = {.ref = ref, .cwd = getcwd(cwd, sizeof cwd)};
    return dcl_or_cold(daemon_of(f), f->a, WIRE_OP_LINKS, &args, out);
}

trove_err front_similar(const front *f, const api_similar_opts *o, search_results *out,
                        api_similar_info *info)
{
    api_similar_opts args = *o;
    wire_similar_answer ans;
    trove_err rc = dcl_or_cold(daemon_of(f), f->a, WIRE_OP_SIMILAR, &args, &ans);
    *out = ans.results;
    *info = ans.info;
    return rc;
}

trove_err front_status(const front *f, api_status *out, json_t **daemon)
{
    *daemon = NULL;
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_status(d, out, daemon);
        if (dcl_answered(d))
            return rc;
        json_decref(*daemon);
        *daemon = NULL;
    }
    return api_status_get(f->a, out);
}
