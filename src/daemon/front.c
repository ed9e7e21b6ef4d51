/* front — the daemon when it answers, else the api handle. */
#include "daemon/front.h"

#include <unistd.h>

#include "daemon/client.h"

static dcl *daemon_of(const front *f)
{
    return f->use_daemon ? dcl_find(api_index_path(f->a), api_config(f->a), 60.0) : NULL;
}

trove_err front_search(const front *f, const api_search_opts *o, search_results *out)
{
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_search(d, o, out);
        if (dcl_answered(d))
            return rc;
    }
    return api_search(f->a, o, out);
}

trove_err front_query(const front *f, const api_query_opts *o, search_results *out,
                      api_query_info *info)
{
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_query(d, o, out, info);
        if (dcl_answered(d))
            return rc;
    }
    return api_query(f->a, o, out, info);
}

trove_err front_get(const front *f, const char *ref, long line, long count, api_note *out)
{
    dcl *d = daemon_of(f);
    if (d) {
        /* A relative on-disk REF means the same to the daemon as to us. */
        char cwd[4096];
        trove_err rc = dcl_get(d, getcwd(cwd, sizeof cwd), ref, line, count, out);
        if (dcl_answered(d))
            return rc;
    }
    return api_get(f->a, ref, line, count, out);
}

trove_err front_multi_get(const front *f, const char *glob, size_t max_bytes, api_notes *out)
{
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_multi_get(d, glob, max_bytes, out);
        if (dcl_answered(d))
            return rc;
    }
    return api_multi_get(f->a, glob, max_bytes, out);
}

trove_err front_ls(const front *f, const char *target, api_listing *out)
{
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_ls(d, target, out);
        if (dcl_answered(d))
            return rc;
    }
    return api_ls(f->a, target, out);
}

trove_err front_links(const front *f, const char *ref, api_link_set *out)
{
    char cwd[4096];
    const char *here = getcwd(cwd, sizeof cwd);
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_links(d, here, ref, out);
        if (dcl_answered(d))
            return rc;
    }
    return api_links(f->a, here, ref, out);
}

trove_err front_similar(const front *f, const api_similar_opts *o, search_results *out,
                        api_similar_info *info)
{
    dcl *d = daemon_of(f);
    if (d) {
        trove_err rc = dcl_similar(d, o, out, info);
        if (dcl_answered(d))
            return rc;
    }
    return api_similar(f->a, o, out, info);
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
