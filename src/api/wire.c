#include "api/wire.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"

/* ---- bytes ---- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *p, size_t len)
{
    char *out = xmalloc(4 * ((len + 2) / 3) + 1), *o = out;
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = b64chars[v >> 18];
        *o++ = b64chars[v >> 12 & 63];
        *o++ = b64chars[v >> 6 & 63];
        *o++ = b64chars[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = b64chars[v >> 18];
        *o++ = b64chars[v >> 12 & 63];
        *o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

static int b64_val(unsigned char c)
{
    const char *p = c ? strchr(b64chars, c) : NULL;
    return p ? (int)(p - b64chars) : -1;
}

/* Strict: length a multiple of 4, '=' only as padding. 0 on bad input. */
static int b64_decode(const char *s, size_t n, char **out, size_t *len)
{
    if (n % 4)
        return 0;
    char *buf = xmalloc(n / 4 * 3 + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            if (s[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
            } else if (pad || (v[k] = b64_val((unsigned char)s[i + k])) < 0) {
                free(buf);
                return 0;
            }
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        buf[o++] = (char)(x >> 16);
        if (pad < 2)
            buf[o++] = (char)(x >> 8 & 255);
        if (pad < 1)
            buf[o++] = (char)(x & 255);
    }
    buf[o] = '\0';
    *out = buf;
    *len = o;
    return 1;
}

json_t *wire_bytes(const char *s, size_t len)
{
    if (!s)
        return json_null();
    json_t *j = json_stringn(s, len);
    if (j)
        return j;
    char *b = b64_encode((const unsigned char *)s, len);
    j = json_pack("{s:s}", "base64", b);
    free(b);
    return j;
}

json_t *wire_str(const char *s)
{
    return wire_bytes(s, s ? strlen(s) : 0);
}

int wire_get_bytes(const json_t *v, char **out, size_t *len)
{
    size_t dummy;
    if (!len)
        len = &dummy;
    *out = NULL;
    *len = 0;
    if (!v || json_is_null(v))
        return 1;
    if (json_is_string(v)) {
        *len = json_string_length(v);
        *out = xmalloc(*len + 1);
        memcpy(*out, json_string_value(v), *len);
        (*out)[*len] = '\0';
        return 1;
    }
    const json_t *b = json_is_object(v) && json_object_size(v) == 1 ? json_object_get(v, "base64") : NULL;
    if (!b || !json_is_string(b))
        return 0;
    return b64_decode(json_string_value(b), json_string_length(b), out, len);
}

/* ---- error names ---- */

static const char *const err_names[TROVE_ERR_COUNT] = {
    "OK", "ENOMEM", "EIO", "ENOENT", "EEXIST", "EPARSE", "EUSAGE", "ESQL", "EBUSY",
    "ECORRUPT", "EUNSUPPORTED", "ERANGE", "EINVAL", "EACCES", "EINTR",
};

const char *wire_err_name(trove_err e)
{
    return (unsigned)e < TROVE_ERR_COUNT && err_names[e] ? err_names[e] : "EIO";
}

int wire_err_from_name(const char *name)
{
    for (int i = 0; name && i < TROVE_ERR_COUNT; i++)
        if (err_names[i] && strcmp(err_names[i], name) == 0)
            return i;
    return -1;
}

/* ---- decoding helpers: a missing key keeps the default, a wrong type fails ---- */

static trove_err bad(const char *key, const char *want)
{
    return trove_fail(TROVE_EPARSE, "field '%s' must be %s", key, want);
}

static json_t *real(double d)
{
    return isfinite(d) ? json_real(d) : json_null();
}

static trove_err get_double(const json_t *o, const char *key, double *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return TROVE_OK;
    if (json_is_null(v)) {
        *out = NAN;
        return TROVE_OK;
    }
    if (!json_is_number(v))
        return bad(key, "a number");
    *out = json_number_value(v);
    return TROVE_OK;
}

static trove_err get_i64(const json_t *o, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return TROVE_OK;
    if (json_is_true(v) || json_is_false(v)) {
        *out = json_is_true(v);
        return TROVE_OK;
    }
    if (!json_is_integer(v))
        return bad(key, "an integer");
    *out = (int64_t)json_integer_value(v);
    return TROVE_OK;
}

static trove_err get_int(const json_t *o, const char *key, int *out)
{
    int64_t v = *out;
    trove_err rc = get_i64(o, key, &v);
    if (rc == TROVE_OK && (v < INT32_MIN || v > INT32_MAX))
        return bad(key, "a 32-bit integer");
    *out = (int)v;
    return rc;
}

static trove_err get_long(const json_t *o, const char *key, long *out)
{
    int64_t v = *out;
    trove_err rc = get_i64(o, key, &v);
    *out = (long)v;
    return rc;
}

static trove_err get_size(const json_t *o, const char *key, size_t *out)
{
    if (!json_object_get(o, key))
        return TROVE_OK;            /* absent: *out keeps its value (maybe unset) */
    int64_t v = 0;
    trove_err rc = get_i64(o, key, &v);
    if (rc == TROVE_OK && v < 0)
        return bad(key, "an integer >= 0");
    *out = (size_t)v;
    return rc;
}

/* A string field into malloc'd bytes (null: NULL). */
static trove_err get_str(const json_t *o, const char *key, char **out, size_t *len)
{
    const json_t *v = json_object_get(o, key);
    free(*out);
    *out = NULL;
    if (!wire_get_bytes(v, out, len))
        return bad(key, "a string");
    return TROVE_OK;
}

/* A string into a fixed buffer (docid, lang). */
static trove_err get_fixed(const json_t *o, const char *key, char *buf, size_t cap)
{
    char *s = NULL;
    size_t len;
    trove_err rc = get_str(o, key, &s, &len);
    if (rc == TROVE_OK && s && len >= cap)
        rc = bad(key, "a short string");
    if (rc == TROVE_OK)
        snprintf(buf, cap, "%s", s ? s : "");
    free(s);
    return rc;
}

/* An array of strings; *n counts the filled entries even on failure. */
static trove_err get_strs(const json_t *o, const char *key, char ***out, size_t *n)
{
    const json_t *v = json_object_get(o, key);
    *out = NULL;
    *n = 0;
    if (!v || json_is_null(v))
        return TROVE_OK;
    if (!json_is_array(v))
        return bad(key, "an array of strings");
    *out = xcalloc(json_array_size(v) + 1, sizeof **out);
    for (size_t i = 0; i < json_array_size(v); i++) {
        if (!wire_get_bytes(json_array_get(v, i), &(*out)[i], NULL) || !(*out)[i])
            return bad(key, "an array of strings");
        (*n)++;
    }
    return TROVE_OK;
}

static json_t *strs(char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, wire_str(s[i]));
    return a;
}

static void set(json_t *o, const char *key, json_t *v)
{
    json_object_set_new(o, key, v);
}

static const json_t *need_object(const json_t *v, const char *what, trove_err *rc)
{
    if (!json_is_object(v)) {
        *rc = trove_fail(TROVE_EPARSE, "%s must be an object", what);
        return NULL;
    }
    return v;
}

static const json_t *need_array(const json_t *o, const char *key, trove_err *rc)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_array(v))
        *rc = bad(key, "an array");
    return json_is_array(v) ? v : NULL;
}

#define TRY(x) do { if ((rc = (x)) != TROVE_OK) return rc; } while (0)

/* ---- request arguments ---- */

void wire_args_free(wire_args *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->strs[i]);
    free(w->strs);
    free(w->ptrs);
    memset(w, 0, sizeof *w);
}

static const char *hold_str(wire_args *w, char *s)
{
    xgrow(&w->strs, &w->cap, w->n + 1, sizeof *w->strs);
    w->strs[w->n++] = s;
    return s;
}

/* A string argument held by `w` (NULL when absent or null). */
static trove_err arg_str(const json_t *o, const char *key, wire_args *w, const char **out)
{
    char *s = NULL;
    trove_err rc = get_str(o, key, &s, NULL);
    if (rc == TROVE_OK && s)
        *out = hold_str(w, s);
    return rc;
}

/* Arrays of borrowed pointers live in one growing block; callers get an
 * offset and resolve it once everything is parsed (the block may move). */
static trove_err arg_strs(const json_t *o, const char *key, wire_args *w, size_t *off, size_t *n)
{
    char **s;
    size_t k;
    trove_err rc = get_strs(o, key, &s, &k);
    *off = w->n_ptrs;
    *n = k;
    xgrow(&w->ptrs, &w->cap_ptrs, w->n_ptrs + k + 1, sizeof *w->ptrs);
    for (size_t i = 0; i < k; i++)
        w->ptrs[w->n_ptrs++] = hold_str(w, s[i]);
    free(s);
    return rc;
}

json_t *wire_search_opts(const api_search_opts *o)
{
    const search_opts *s = &o->search;
    json_t *j = json_object(), *w = json_object();
    set(j, "query", wire_str(s->query));
    set(j, "collections", strs((char *const *)s->collections, s->n_collections));
    set(j, "folder", wire_str(s->folder));
    set(j, "tags", strs((char *const *)s->tags, s->n_tags));
    set(j, "langs", strs((char *const *)s->langs, s->n_langs));
    set(j, "path_prefix", wire_str(s->path_prefix));
    set(j, "doc_refs", strs((char *const *)s->doc_refs, s->n_doc_refs));
    set(j, "heading_contains", wire_str(s->heading_contains));
    set(j, "min_score", real(s->min_score));
    if (s->limit != API_UNSET_SIZE)   /* absent: unset (api.h) */
        set(j, "limit", json_integer((json_int_t)s->limit));
    for (int c = 0; c < SEARCH_N_CHANNELS; c++)
        set(w, search_channel_names[c], real(s->weights[c]));
    set(j, "weights", w);
    set(j, "graph_weight", real(s->graph_weight));
    set(j, "lang_bonus", real(s->lang_bonus));
    set(j, "rrf_k", json_integer(s->rrf_k));
    set(j, "with_snippet", json_integer(s->with_snippet));
    set(j, "with_body", json_integer(o->with_body));
    set(j, "vector_only", json_integer(s->vector_only));
    set(j, "each_translation", json_integer(s->each_translation));
    set(j, "vec_threads", json_integer(s->vec_threads));
    set(j, "model", wire_str(o->model));
    return j;
}

trove_err wire_search_opts_parse(const json_t *args, api_search_opts *o, wire_args *w)
{
    trove_err rc = TROVE_OK;
    api_search_opts_init(o);
    if (!need_object(args, "args", &rc))
        return rc;
    search_opts *s = &o->search;
    size_t coff, toff, roff, loff;
    TRY(arg_str(args, "query", w, &s->query));
    if (!s->query)
        return trove_fail(TROVE_EPARSE, "search needs 'query'");
    TRY(arg_strs(args, "collections", w, &coff, &s->n_collections));
    TRY(arg_str(args, "folder", w, &s->folder));
    TRY(arg_strs(args, "tags", w, &toff, &s->n_tags));
    TRY(arg_strs(args, "langs", w, &loff, &s->n_langs));
    TRY(arg_str(args, "path_prefix", w, &s->path_prefix));
    TRY(arg_strs(args, "doc_refs", w, &roff, &s->n_doc_refs));
    TRY(arg_str(args, "heading_contains", w, &s->heading_contains));
    s->collections = s->n_collections ? w->ptrs + coff : NULL;
    s->tags = s->n_tags ? w->ptrs + toff : NULL;
    s->langs = s->n_langs ? w->ptrs + loff : NULL;
    s->doc_refs = s->n_doc_refs ? w->ptrs + roff : NULL;
    TRY(get_double(args, "min_score", &s->min_score));
    TRY(get_size(args, "limit", &s->limit));
    const json_t *wt = json_object_get(args, "weights");
    if (wt && !json_is_object(wt))
        return bad("weights", "an object");
    for (int c = 0; wt && c < SEARCH_N_CHANNELS; c++)
        TRY(get_double(wt, search_channel_names[c], &s->weights[c]));
    TRY(get_double(args, "graph_weight", &s->graph_weight));
    TRY(get_double(args, "lang_bonus", &s->lang_bonus));
    TRY(get_int(args, "rrf_k", &s->rrf_k));
    TRY(get_int(args, "with_snippet", &s->with_snippet));
    TRY(get_int(args, "with_body", &o->with_body));
    TRY(get_int(args, "vector_only", &s->vector_only));
    TRY(get_int(args, "each_translation", &s->each_translation));
    TRY(get_int(args, "vec_threads", &s->vec_threads));
    TRY(arg_str(args, "model", w, &o->model));
    return TROVE_OK;
}

json_t *wire_query_opts(const api_query_opts *o)
{
    json_t *j = wire_search_opts(&o->base);
    set(j, "no_expand", json_integer(o->no_expand));
    set(j, "no_rerank", json_integer(o->no_rerank));
    set(j, "candidates", json_integer((json_int_t)o->candidates));
    set(j, "window_tokens", json_integer((json_int_t)o->window_tokens));
    set(j, "reranker", wire_str(o->reranker));
    set(j, "expand_model", wire_str(o->expand_model));
    return j;
}

trove_err wire_query_opts_parse(const json_t *args, api_query_opts *o, wire_args *w)
{
    trove_err rc;
    api_query_opts_init(o);
    TRY(wire_search_opts_parse(args, &o->base, w));
    TRY(get_int(args, "no_expand", &o->no_expand));
    TRY(get_int(args, "no_rerank", &o->no_rerank));
    TRY(get_size(args, "candidates", &o->candidates));
    TRY(get_size(args, "window_tokens", &o->window_tokens));
    TRY(arg_str(args, "reranker", w, &o->reranker));
    TRY(arg_str(args, "expand_model", w, &o->expand_model));
    return TROVE_OK;
}

/* ---- search results ---- */

static json_t *result_json(const search_result *r)
{
    json_t *j = json_object(), *ch = json_array();
    set(j, "doc_id", json_integer(r->doc_id));
    set(j, "docid", wire_str(r->docid));
    set(j, "collection", wire_str(r->collection));
    set(j, "root", wire_str(r->root));
    set(j, "path", wire_str(r->path));
    set(j, "title", wire_str(r->title));
    set(j, "heading_path", strs(r->heading_path, r->n_heading_path));
    set(j, "line_start", json_integer(r->line_start));
    set(j, "line_end", json_integer(r->line_end));
    set(j, "start_byte", json_integer(r->start_byte));
    set(j, "end_byte", json_integer(r->end_byte));
    set(j, "score", real(r->score));
    set(j, "snippet", wire_str(r->snippet));
    set(j, "context", strs(r->context, r->n_context));
    set(j, "tags", strs(r->tags, r->n_tags));
    set(j, "in_degree", json_integer(r->in_degree));
    set(j, "prior", real(r->prior));
    set(j, "lang", wire_str(r->lang));
    json_t *alts = json_array();
    for (size_t i = 0; i < r->n_also_in; i++)
        json_array_append_new(alts, json_pack("{s:o, s:o, s:o}", "lang",
                                              wire_str(r->also_in[i].lang), "docid",
                                              wire_str(r->also_in[i].docid), "path",
                                              wire_str(r->also_in[i].path)));
    set(j, "also_in", alts);
    for (int c = 0; c < SEARCH_N_CHANNELS; c++)
        json_array_append_new(ch, json_pack("{s:i, s:o, s:o, s:o}", "rank", r->channel[c].rank,
                                            "score", real(r->channel[c].score), "z",
                                            real(r->channel[c].z), "vote",
                                            real(r->channel[c].vote)));
    set(j, "channels", ch);
    set(j, "body", wire_bytes(r->body, r->body_len));
    return j;
}

/* What the fusion did (for --explain): one object per channel. */
static json_t *fusion_json(const search_fusion *f)
{
    json_t *ch = json_array();
    for (int c = 0; c < SEARCH_N_CHANNELS; c++)
        json_array_append_new(ch, json_pack("{s:o, s:o, s:o, s:i}", "weight", real(f->weight[c]),
                                            "mean", real(f->mean[c]), "sd", real(f->sd[c]), "n",
                                            f->n[c]));
    return json_pack("{s:i, s:o, s:o, s:o, s:o}", "method", (int)f->method, "certainty",
                     real(f->certainty), "agreement", real(f->agreement), "vector_confidence",
                     real(f->vector_confidence), "channels", ch);
}

static trove_err fusion_parse(const json_t *v, search_fusion *f)
{
    trove_err rc = TROVE_OK;
    if (!v || json_is_null(v))
        return TROVE_OK;
    if (!need_object(v, "fusion", &rc))
        return rc;
    int method = (int)f->method;
    TRY(get_int(v, "method", &method));
    if (method < SEARCH_FUSION_NONE || method > SEARCH_FUSION_Z)
        return bad("method", "0, 1 or 2");
    f->method = (search_fusion_method)method;
    TRY(get_double(v, "certainty", &f->certainty));
    TRY(get_double(v, "agreement", &f->agreement));
    TRY(get_double(v, "vector_confidence", &f->vector_confidence));
    const json_t *ch = need_array(v, "channels", &rc);
    TRY(rc);
    for (size_t c = 0; ch && c < json_array_size(ch) && c < SEARCH_N_CHANNELS; c++) {
        const json_t *h = json_array_get(ch, c);
        if (!need_object(h, "a fusion channel", &rc))
            return rc;
        TRY(get_double(h, "weight", &f->weight[c]));
        TRY(get_double(h, "mean", &f->mean[c]));
        TRY(get_double(h, "sd", &f->sd[c]));
        TRY(get_int(h, "n", &f->n[c]));
    }
    return TROVE_OK;
}

json_t *wire_search_results(const search_results *r)
{
    json_t *items = json_array();
    for (size_t i = 0; i < r->n; i++)
        json_array_append_new(items, result_json(&r->items[i]));
    json_t *j = json_object();
    set(j, "fts", wire_str(r->fts));
    set(j, "lang", wire_str(r->lang));
    set(j, "items", items);
    set(j, "vec_state", json_integer(r->vec_state));
    set(j, "vec_missing", strs(r->vec_missing, r->n_vec_missing));
    set(j, "vec_error", wire_str(r->vec_error));
    set(j, "vec_floor_known", json_integer(r->vec_floor_known));
    set(j, "vec_floor", json_real(r->vec_floor));
    set(j, "vec_strength", json_real(r->vec_strength));
    set(j, "fusion", fusion_json(&r->fusion));
    return j;
}

static trove_err result_parse(const json_t *v, search_result *x)
{
    trove_err rc = TROVE_OK;
    if (!need_object(v, "a result", &rc))
        return rc;
    TRY(get_i64(v, "doc_id", &x->doc_id));
    TRY(get_fixed(v, "docid", x->docid, sizeof x->docid));
    TRY(get_str(v, "collection", &x->collection, NULL));
    TRY(get_str(v, "root", &x->root, NULL));
    TRY(get_str(v, "path", &x->path, NULL));
    TRY(get_str(v, "title", &x->title, NULL));
    if (!x->collection || !x->root || !x->path || !x->title)
        return trove_fail(TROVE_EPARSE, "a result needs collection, root, path and title");
    TRY(get_strs(v, "heading_path", &x->heading_path, &x->n_heading_path));
    TRY(get_int(v, "line_start", &x->line_start));
    TRY(get_int(v, "line_end", &x->line_end));
    TRY(get_i64(v, "start_byte", &x->start_byte));
    TRY(get_i64(v, "end_byte", &x->end_byte));
    TRY(get_double(v, "score", &x->score));
    TRY(get_str(v, "snippet", &x->snippet, NULL));
    TRY(get_strs(v, "context", &x->context, &x->n_context));
    TRY(get_strs(v, "tags", &x->tags, &x->n_tags));
    TRY(get_int(v, "in_degree", &x->in_degree));
    TRY(get_double(v, "prior", &x->prior));
    TRY(get_fixed(v, "lang", x->lang, sizeof x->lang));
    const json_t *alts = need_array(v, "also_in", &rc);
    TRY(rc);
    if (alts && json_array_size(alts))
        x->also_in = xcalloc(json_array_size(alts), sizeof *x->also_in);
    for (size_t i = 0; alts && i < json_array_size(alts); i++) {
        const json_t *a = json_array_get(alts, i);
        if (!need_object(a, "an also_in entry", &rc))
            return rc;
        search_alt *y = &x->also_in[x->n_also_in++];
        TRY(get_fixed(a, "lang", y->lang, sizeof y->lang));
        TRY(get_fixed(a, "docid", y->docid, sizeof y->docid));
        TRY(get_str(a, "path", &y->path, NULL));
        if (!y->path)
            return trove_fail(TROVE_EPARSE, "an also_in entry needs a path");
    }
    const json_t *ch = need_array(v, "channels", &rc);
    TRY(rc);
    for (size_t c = 0; ch && c < json_array_size(ch) && c < SEARCH_N_CHANNELS; c++) {
        const json_t *h = json_array_get(ch, c);
        if (!need_object(h, "a channel", &rc))
            return rc;
        TRY(get_int(h, "rank", &x->channel[c].rank));
        TRY(get_double(h, "score", &x->channel[c].score));
        TRY(get_double(h, "z", &x->channel[c].z));
        TRY(get_double(h, "vote", &x->channel[c].vote));
    }
    TRY(get_str(v, "body", &x->body, &x->body_len));
    return TROVE_OK;
}

trove_err wire_search_results_parse(const json_t *v, search_results *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "search result", &rc))
        return rc;
    TRY(get_str(v, "fts", &out->fts, NULL));
    TRY(get_fixed(v, "lang", out->lang, sizeof out->lang));
    int state = SEARCH_VEC_OFF;
    TRY(get_int(v, "vec_state", &state));
    if (state < SEARCH_VEC_OFF || state > SEARCH_VEC_BLANK)
        return bad("vec_state", "0, 1, 2 or 3");
    out->vec_state = (search_vec_state)state;
    TRY(get_strs(v, "vec_missing", &out->vec_missing, &out->n_vec_missing));
    TRY(get_str(v, "vec_error", &out->vec_error, NULL));
    TRY(get_int(v, "vec_floor_known", &out->vec_floor_known));
    TRY(get_double(v, "vec_floor", &out->vec_floor));
    TRY(get_double(v, "vec_strength", &out->vec_strength));
    TRY(fusion_parse(json_object_get(v, "fusion"), &out->fusion));
    const json_t *items = need_array(v, "items", &rc);
    TRY(rc);
    size_t n = items ? json_array_size(items) : 0;
    out->items = xcalloc(n ? n : 1, sizeof *out->items);
    for (size_t i = 0; i < n; i++) {
        out->n++;
        TRY(result_parse(json_array_get(items, i), &out->items[i]));
    }
    return TROVE_OK;
}

/* ---- query results: search results + the pipeline ---- */

static json_t *cand_json(const qp_cand *c)
{
    json_t *rank = json_array(), *quality = json_array();
    for (int l = 0; l < QP_MAX_LISTS; l++) {
        json_array_append_new(rank, json_integer(c->rank[l]));
        json_array_append_new(quality, real(c->quality[l]));
    }
    json_t *j = json_object();
    set(j, "doc_id", json_integer(c->doc_id));
    set(j, "rank", rank);
    set(j, "quality", quality);
    set(j, "rrf", real(c->rrf));
    set(j, "bonus", real(c->bonus));
    set(j, "rrf_rank", json_integer(c->rrf_rank));
    set(j, "reranked", json_integer(c->reranked));
    set(j, "rerank_raw", real(c->rerank_raw));
    set(j, "rerank_norm", real(c->rerank_norm));
    set(j, "retrieval_norm", real(c->retrieval_norm));
    set(j, "w_retrieval", real(c->w_retrieval));
    set(j, "title_protected", json_integer(c->title_protected));
    set(j, "final", real(c->final));
    set(j, "search_rank", json_integer(c->search_rank));
    return j;
}

json_t *wire_query_result(const search_results *r, const api_query_info *q)
{
    json_t *j = wire_search_results(r), *p = json_object();
    json_t *vars = json_array(), *lists = json_array(), *items = json_array();
    for (size_t v = 0; v < q->n_variants; v++)
        json_array_append_new(vars, json_pack("{s:i, s:o, s:o}", "kind", (int)q->variants[v].kind,
                                              "text", wire_str(q->variants[v].text), "weight",
                                              real(q->variants[v].weight)));
    for (size_t l = 0; l < q->n_lists; l++)
        json_array_append_new(lists, json_pack("{s:i, s:i, s:o}", "variant", q->lists[l].variant,
                                               "channel", q->lists[l].channel, "weight",
                                               real(q->lists[l].weight)));
    for (size_t i = 0; i < q->n; i++)
        json_array_append_new(items, cand_json(&q->items[i]));
    set(p, "variants", vars);
    set(p, "lists", lists);
    set(p, "reranker", wire_str(q->reranker));
    set(p, "rerank_warning", wire_str(q->rerank_warning));
    set(p, "n_fused", json_integer((json_int_t)q->n_fused));
    set(p, "n_reranked", json_integer((json_int_t)q->n_reranked));
    set(p, "rerank_trust", real(q->rerank_trust));
    set(p, "items", items);
    set(j, "pipeline", p);
    return j;
}

/* A fixed-size array of ints or doubles ("rank", "quality"). */
static trove_err cand_array(const json_t *c, const char *key, int *ints, double *dbls)
{
    trove_err rc = TROVE_OK;
    const json_t *a = need_array(c, key, &rc);
    TRY(rc);
    if (a && json_array_size(a) > QP_MAX_LISTS)
        return bad(key, "an array of at most 12 numbers");
    for (size_t l = 0; a && l < json_array_size(a); l++) {
        const json_t *x = json_array_get(a, l);
        if (ints && !json_is_integer(x))
            return bad(key, "an array of integers");
        if (dbls && !json_is_number(x) && !json_is_null(x))
            return bad(key, "an array of numbers");
        if (ints)
            ints[l] = (int)json_integer_value(x);
        else
            dbls[l] = json_is_null(x) ? NAN : json_number_value(x);
    }
    return TROVE_OK;
}

static trove_err cand_parse(const json_t *c, qp_cand *x)
{
    trove_err rc = TROVE_OK;
    if (!need_object(c, "a candidate", &rc))
        return rc;
    TRY(get_i64(c, "doc_id", &x->doc_id));
    TRY(cand_array(c, "rank", x->rank, NULL));
    TRY(cand_array(c, "quality", NULL, x->quality));
    TRY(get_double(c, "rrf", &x->rrf));
    TRY(get_double(c, "bonus", &x->bonus));
    TRY(get_int(c, "rrf_rank", &x->rrf_rank));
    TRY(get_int(c, "reranked", &x->reranked));
    TRY(get_double(c, "rerank_raw", &x->rerank_raw));
    TRY(get_double(c, "rerank_norm", &x->rerank_norm));
    TRY(get_double(c, "retrieval_norm", &x->retrieval_norm));
    TRY(get_double(c, "w_retrieval", &x->w_retrieval));
    TRY(get_int(c, "title_protected", &x->title_protected));
    TRY(get_double(c, "final", &x->final));
    TRY(get_int(c, "search_rank", &x->search_rank));
    return TROVE_OK;
}

static trove_err pipeline_parse(const json_t *p, api_query_info *q)
{
    trove_err rc = TROVE_OK;
    if (!need_object(p, "pipeline", &rc))
        return rc;
    const json_t *vars = need_array(p, "variants", &rc);
    TRY(rc);
    if (!vars || json_array_size(vars) < 1 || json_array_size(vars) > QP_MAX_VARIANTS)
        return bad("variants", "an array of 1 to 4 variants");
    for (size_t v = 0; v < json_array_size(vars); v++) {
        const json_t *j = json_array_get(vars, v);
        qp_variant *x = &q->variants[v];
        int kind = -1;
        if (!need_object(j, "a variant", &rc))
            return rc;
        q->n_variants++;   /* counted before its text: freed with the rest */
        TRY(get_int(j, "kind", &kind));
        if (kind < 0 || kind >= QP_MAX_VARIANTS)
            return bad("kind", "a variant kind from 0 to 3");
        x->kind = (qp_variant_kind)kind;
        TRY(get_str(j, "text", &x->text, NULL));
        if (!x->text)
            return bad("text", "a string");
        TRY(get_double(j, "weight", &x->weight));
    }
    const json_t *lists = need_array(p, "lists", &rc);
    TRY(rc);
    if (lists && json_array_size(lists) > QP_MAX_LISTS)
        return bad("lists", "an array of at most 12 lists");
    for (size_t l = 0; lists && l < json_array_size(lists); l++) {
        const json_t *j = json_array_get(lists, l);
        qp_list *x = &q->lists[l];
        x->variant = x->channel = -1;
        if (!need_object(j, "a list", &rc))
            return rc;
        TRY(get_int(j, "variant", &x->variant));
        TRY(get_int(j, "channel", &x->channel));
        TRY(get_double(j, "weight", &x->weight));
        if (x->variant < 0 || (size_t)x->variant >= q->n_variants)
            return bad("variant", "the index of a variant");
        if (x->channel < 0 || x->channel > QP_LIST_HYBRID)
            return bad("channel", "a channel number");
        q->n_lists++;
    }
    TRY(get_str(p, "reranker", &q->reranker, NULL));
    TRY(get_str(p, "rerank_warning", &q->rerank_warning, NULL));
    TRY(get_size(p, "n_fused", &q->n_fused));
    TRY(get_size(p, "n_reranked", &q->n_reranked));
    TRY(get_double(p, "rerank_trust", &q->rerank_trust));
    const json_t *items = need_array(p, "items", &rc);
    TRY(rc);
    size_t n = items ? json_array_size(items) : 0;
    q->items = xcalloc(n ? n : 1, sizeof *q->items);
    for (size_t i = 0; i < n; i++) {
        q->n++;
        TRY(cand_parse(json_array_get(items, i), &q->items[i]));
    }
    return TROVE_OK;
}

trove_err wire_query_result_parse(const json_t *v, search_results *out, api_query_info *q)
{
    memset(q, 0, sizeof *q);
    trove_err rc = wire_search_results_parse(v, out);
    if (rc == TROVE_OK)
        rc = pipeline_parse(json_object_get(v, "pipeline"), q);
    return rc;
}

/* ---- notes ---- */

static const char *const skipped_reasons[] = {
    "over --max-bytes", "outside the collection", "unreadable",
};

json_t *wire_note(const api_note *n)
{
    json_t *j = json_object();
    set(j, "docid", wire_str(n->docid));
    set(j, "collection", wire_str(n->collection));
    set(j, "root", wire_str(n->root));
    set(j, "path", wire_str(n->path));
    set(j, "title", wire_str(n->title));
    set(j, "text", wire_bytes(n->text, n->len));
    set(j, "line_start", json_integer(n->line_start));
    set(j, "line_end", json_integer(n->line_end));
    set(j, "n_lines", json_integer(n->n_lines));
    set(j, "skipped", wire_str(n->skipped));
    return j;
}

trove_err wire_note_parse(const json_t *v, api_note *out)
{
    trove_err rc = TROVE_OK;
    if (!need_object(v, "a note", &rc))
        return rc;
    TRY(get_fixed(v, "docid", out->docid, sizeof out->docid));
    TRY(get_str(v, "collection", &out->collection, NULL));
    TRY(get_str(v, "root", &out->root, NULL));
    TRY(get_str(v, "path", &out->path, NULL));
    if (!out->collection || !out->root || !out->path)
        return trove_fail(TROVE_EPARSE, "a note needs collection, root and path");
    TRY(get_str(v, "title", &out->title, NULL));
    TRY(get_str(v, "text", &out->text, &out->len));
    TRY(get_long(v, "line_start", &out->line_start));
    TRY(get_long(v, "line_end", &out->line_end));
    TRY(get_long(v, "n_lines", &out->n_lines));
    char *sk = NULL;
    TRY(get_str(v, "skipped", &sk, NULL));
    if (sk) {
        out->skipped = "skipped";   /* static strings only: a known reason, else this */
        for (size_t i = 0; i < sizeof skipped_reasons / sizeof *skipped_reasons; i++)
            if (strcmp(sk, skipped_reasons[i]) == 0)
                out->skipped = skipped_reasons[i];
        free(sk);
    }
    return TROVE_OK;
}

json_t *wire_notes(const api_notes *n)
{
    json_t *items = json_array();
    for (size_t i = 0; i < n->n; i++)
        json_array_append_new(items, wire_note(&n->items[i]));
    return json_pack("{s:o}", "items", items);
}

trove_err wire_notes_parse(const json_t *v, api_notes *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "notes", &rc))
        return rc;
    const json_t *items = need_array(v, "items", &rc);
    TRY(rc);
    size_t n = items ? json_array_size(items) : 0;
    out->items = xcalloc(n ? n : 1, sizeof *out->items);
    for (size_t i = 0; i < n; i++) {
        out->n++;
        TRY(wire_note_parse(json_array_get(items, i), &out->items[i]));
    }
    return TROVE_OK;
}

/* ---- ls ---- */

json_t *wire_listing(const api_listing *l)
{
    json_t *cols = json_array(), *docs = json_array();
    for (size_t i = 0; i < l->n_collections; i++) {
        const store_collection_row *c = &l->collections[i];
        json_t *j = json_object();
        set(j, "id", json_integer(c->id));
        set(j, "name", wire_str(c->name));
        set(j, "root", wire_str(c->root));
        set(j, "n_docs", json_integer(c->n_docs));
        json_array_append_new(cols, j);
    }
    for (size_t i = 0; i < l->n_docs; i++) {
        const store_doc *d = &l->docs[i];
        json_t *j = json_object();
        set(j, "id", json_integer(d->id));
        set(j, "docid", wire_str(d->docid));
        set(j, "collection", wire_str(d->collection));
        set(j, "root", wire_str(d->root));
        set(j, "path", wire_str(d->path));
        set(j, "title", wire_str(d->title));
        set(j, "size", json_integer(d->size));
        set(j, "mtime_ns", json_integer(d->mtime_ns));
        set(j, "n_lines", json_integer(d->n_lines));
        set(j, "in_degree", json_integer(d->in_degree));
        json_array_append_new(docs, j);
    }
    return json_pack("{s:o, s:o}", "collections", cols, "docs", docs);
}

trove_err wire_listing_parse(const json_t *v, api_listing *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "listing", &rc))
        return rc;
    const json_t *cols = need_array(v, "collections", &rc);
    TRY(rc);
    const json_t *docs = need_array(v, "docs", &rc);
    TRY(rc);
    size_t nc = cols ? json_array_size(cols) : 0, nd = docs ? json_array_size(docs) : 0;
    out->collections = xcalloc(nc ? nc : 1, sizeof *out->collections);
    out->docs = xcalloc(nd ? nd : 1, sizeof *out->docs);
    for (size_t i = 0; i < nc; i++) {
        const json_t *j = json_array_get(cols, i);
        store_collection_row *c = &out->collections[i];
        out->n_collections++;
        if (!need_object(j, "a collection", &rc))
            return rc;
        TRY(get_i64(j, "id", &c->id));
        TRY(get_str(j, "name", &c->name, NULL));
        TRY(get_str(j, "root", &c->root, NULL));
        TRY(get_i64(j, "n_docs", &c->n_docs));
        if (!c->name || !c->root)
            return trove_fail(TROVE_EPARSE, "a collection needs name and root");
    }
    for (size_t i = 0; i < nd; i++) {
        const json_t *j = json_array_get(docs, i);
        store_doc *d = &out->docs[i];
        out->n_docs++;
        if (!need_object(j, "a doc", &rc))
            return rc;
        TRY(get_i64(j, "id", &d->id));
        TRY(get_fixed(j, "docid", d->docid, sizeof d->docid));
        TRY(get_str(j, "collection", &d->collection, NULL));
        TRY(get_str(j, "root", &d->root, NULL));
        TRY(get_str(j, "path", &d->path, NULL));
        TRY(get_str(j, "title", &d->title, NULL));
        if (!d->collection || !d->root || !d->path || !d->title)
            return trove_fail(TROVE_EPARSE, "a doc needs collection, root, path and title");
        TRY(get_i64(j, "size", &d->size));
        TRY(get_i64(j, "mtime_ns", &d->mtime_ns));
        TRY(get_int(j, "n_lines", &d->n_lines));
        TRY(get_int(j, "in_degree", &d->in_degree));
    }
    return TROVE_OK;
}

/* ---- status ---- */

json_t *wire_snapshot(const store_snapshot *s)
{
    if (!s->id)
        return json_null();
    return json_pack("{s:I, s:I, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "id", (json_int_t)s->id,
                     "created_at", (json_int_t)s->created_at, "kind", s->kind, "note",
                     wire_str(s->note ? s->note : ""), "docs", (json_int_t)s->docs, "chunks",
                     (json_int_t)s->chunks, "links", (json_int_t)s->links, "added",
                     (json_int_t)s->added, "removed", (json_int_t)s->removed, "modified",
                     (json_int_t)s->modified);
}

trove_err wire_snapshot_parse(const json_t *v, store_snapshot *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!v || json_is_null(v)) {
        out->note = xstrdup("");
        return TROVE_OK;
    }
    if (!need_object(v, "snapshot", &rc))
        return rc;
    TRY(get_i64(v, "id", &out->id));
    TRY(get_i64(v, "created_at", &out->created_at));
    TRY(get_fixed(v, "kind", out->kind, sizeof out->kind));
    TRY(get_str(v, "note", &out->note, NULL));
    if (!out->note)
        out->note = xstrdup("");
    TRY(get_i64(v, "docs", &out->docs));
    TRY(get_i64(v, "chunks", &out->chunks));
    TRY(get_i64(v, "links", &out->links));
    TRY(get_i64(v, "added", &out->added));
    TRY(get_i64(v, "removed", &out->removed));
    TRY(get_i64(v, "modified", &out->modified));
    return TROVE_OK;
}

json_t *wire_skipped(const index_freshness *f)
{
    return json_pack("{s:I, s:I, s:I}", "too_large", (json_int_t)f->skipped_large, "binary",
                     (json_int_t)f->skipped_binary, "unreadable", (json_int_t)f->skipped_unreadable);
}

json_t *wire_status(const api_status *s)
{
    json_t *cols = json_array();
    for (size_t i = 0; i < s->n_collections; i++) {
        const api_status_collection *c = &s->collections[i];
        json_t *j = json_object();
        set(j, "name", wire_str(c->name));
        set(j, "path", wire_str(c->path));
        set(j, "notes", json_integer(c->notes));
        set(j, "fresh_known", json_integer(c->fresh_known));
        set(j, "fresh", json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "files", (json_int_t)c->fresh.files,
                                  "fresh", (json_int_t)c->fresh.fresh, "added",
                                  (json_int_t)c->fresh.added, "changed", (json_int_t)c->fresh.changed,
                                  "deleted", (json_int_t)c->fresh.deleted, "skipped",
                                  wire_skipped(&c->fresh)));
        set(j, "problem", wire_str(c->problem));
        json_array_append_new(cols, j);
    }
    json_t *j = json_object();
    set(j, "config_file", wire_str(s->config_file));
    set(j, "index_path", wire_str(s->index_path));
    set(j, "index_exists", json_integer(s->index_exists));
    set(j, "index_bytes", json_integer(s->index_bytes));
    set(j, "last_update", json_integer(s->last_update));
    set(j, "counts", json_pack("{s:I, s:I, s:I, s:I, s:I}", "docs", (json_int_t)s->counts.docs,
                               "chunks", (json_int_t)s->counts.chunks, "links",
                               (json_int_t)s->counts.links, "dangling", (json_int_t)s->counts.dangling,
                               "to_files", (json_int_t)s->counts.to_files));
    set(j, "snapshot", wire_snapshot(&s->snapshot));
    set(j, "collections", cols);
    return j;
}

trove_err wire_status_parse(const json_t *v, api_status *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "status", &rc))
        return rc;
    TRY(get_str(v, "config_file", &out->config_file, NULL));
    TRY(get_str(v, "index_path", &out->index_path, NULL));
    if (!out->config_file || !out->index_path)
        return trove_fail(TROVE_EPARSE, "status needs config_file and index_path");
    TRY(get_int(v, "index_exists", &out->index_exists));
    TRY(get_i64(v, "index_bytes", &out->index_bytes));
    TRY(get_i64(v, "last_update", &out->last_update));
    const json_t *c = json_object_get(v, "counts");
    if (c) {
        if (!need_object(c, "counts", &rc))
            return rc;
        TRY(get_i64(c, "docs", &out->counts.docs));
        TRY(get_i64(c, "chunks", &out->counts.chunks));
        TRY(get_i64(c, "links", &out->counts.links));
        TRY(get_i64(c, "dangling", &out->counts.dangling));
        TRY(get_i64(c, "to_files", &out->counts.to_files));
    }
    TRY(wire_snapshot_parse(json_object_get(v, "snapshot"), &out->snapshot));
    const json_t *cols = need_array(v, "collections", &rc);
    TRY(rc);
    size_t n = cols ? json_array_size(cols) : 0;
    out->collections = xcalloc(n ? n : 1, sizeof *out->collections);
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_array_get(cols, i);
        api_status_collection *sc = &out->collections[i];
        out->n_collections++;
        if (!need_object(j, "a collection", &rc))
            return rc;
        TRY(get_str(j, "name", &sc->name, NULL));
        TRY(get_str(j, "path", &sc->path, NULL));
        if (!sc->name || !sc->path)
            return trove_fail(TROVE_EPARSE, "a collection needs name and path");
        TRY(get_i64(j, "notes", &sc->notes));
        TRY(get_int(j, "fresh_known", &sc->fresh_known));
        const json_t *f = json_object_get(j, "fresh");
        if (f) {
            if (!need_object(f, "fresh", &rc))
                return rc;
            TRY(get_size(f, "files", &sc->fresh.files));
            TRY(get_size(f, "fresh", &sc->fresh.fresh));
            TRY(get_size(f, "added", &sc->fresh.added));
            TRY(get_size(f, "changed", &sc->fresh.changed));
            TRY(get_size(f, "deleted", &sc->fresh.deleted));
            const json_t *sk = json_object_get(f, "skipped");
            if (sk) {
                if (!need_object(sk, "skipped", &rc))
                    return rc;
                TRY(get_size(sk, "too_large", &sc->fresh.skipped_large));
                TRY(get_size(sk, "binary", &sc->fresh.skipped_binary));
                TRY(get_size(sk, "unreadable", &sc->fresh.skipped_unreadable));
            }
        }
        TRY(get_str(j, "problem", &sc->problem, NULL));
    }
    return TROVE_OK;
}

/* ---- update ---- */

json_t *wire_update_result(const index_update_result *r)
{
    json_t *cols = json_array();
    for (size_t i = 0; i < r->n_collections; i++) {
        const index_update_collection *c = &r->collections[i];
        const index_stats *s = &c->stats;
        json_t *j = json_object();
        set(j, "name", wire_str(c->name));
        set(j, "seconds", real(c->seconds));
        set(j, "missing", wire_str(c->missing));
        set(j, "stats", json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "files", (json_int_t)s->files,
                                  "added", (json_int_t)s->added, "updated", (json_int_t)s->updated,
                                  "renamed", (json_int_t)s->renamed, "removed",
                                  (json_int_t)s->removed, "unchanged", (json_int_t)s->unchanged,
                                  "skipped", (json_int_t)s->skipped));
        json_array_append_new(cols, j);
    }
    json_t *j = json_object();
    set(j, "collections", cols);
    set(j, "dropped", json_integer((json_int_t)r->dropped));
    set(j, "changed", json_integer(r->changed));
    set(j, "retokenized", json_integer(r->retokenized));
    set(j, "snapshot", json_integer((json_int_t)r->snapshot));
    return j;
}

trove_err wire_update_result_parse(const json_t *v, index_update_result *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "update result", &rc))
        return rc;
    const json_t *cols = need_array(v, "collections", &rc);
    TRY(rc);
    size_t n = cols ? json_array_size(cols) : 0;
    out->collections = xcalloc(n ? n : 1, sizeof *out->collections);
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_array_get(cols, i);
        index_update_collection *c = &out->collections[i];
        out->n_collections++;
        if (!need_object(j, "a collection", &rc))
            return rc;
        TRY(get_str(j, "name", &c->name, NULL));
        TRY(get_double(j, "seconds", &c->seconds));
        TRY(get_str(j, "missing", &c->missing, NULL));
        const json_t *s = json_object_get(j, "stats");
        if (s) {
            if (!need_object(s, "stats", &rc))
                return rc;
            TRY(get_size(s, "files", &c->stats.files));
            TRY(get_size(s, "added", &c->stats.added));
            TRY(get_size(s, "updated", &c->stats.updated));
            TRY(get_size(s, "renamed", &c->stats.renamed));
            TRY(get_size(s, "removed", &c->stats.removed));
            TRY(get_size(s, "unchanged", &c->stats.unchanged));
            TRY(get_size(s, "skipped", &c->stats.skipped));
        }
    }
    TRY(get_size(v, "dropped", &out->dropped));
    TRY(get_int(v, "changed", &out->changed));
    TRY(get_int(v, "retokenized", &out->retokenized));
    TRY(get_i64(v, "snapshot", &out->snapshot));
    return TROVE_OK;
}

/* ---- the link graph: similar, links ---- */

json_t *wire_similar_opts(const api_similar_opts *o)
{
    json_t *j = json_object();
    set(j, "ref", wire_str(o->ref));
    set(j, "cwd", wire_str(o->cwd));
    set(j, "limit", json_integer((json_int_t)o->limit));
    set(j, "collections", strs((char *const *)o->collections, o->n_collections));
    set(j, "bm25_weight", real(o->bm25_weight));
    set(j, "vector_weight", real(o->vector_weight));
    set(j, "model", wire_str(o->model));
    set(j, "with_body", json_integer(o->with_body));
    return j;
}

trove_err wire_similar_opts_parse(const json_t *args, api_similar_opts *o, wire_args *w)
{
    trove_err rc = TROVE_OK;
    api_similar_opts_init(o);
    if (!need_object(args, "args", &rc))
        return rc;
    size_t coff;
    TRY(arg_str(args, "ref", w, &o->ref));
    if (!o->ref)
        return trove_fail(TROVE_EPARSE, "similar needs 'ref'");
    TRY(arg_str(args, "cwd", w, &o->cwd));
    TRY(get_size(args, "limit", &o->limit));
    TRY(arg_strs(args, "collections", w, &coff, &o->n_collections));
    o->collections = o->n_collections ? w->ptrs + coff : NULL;
    TRY(get_double(args, "bm25_weight", &o->bm25_weight));
    TRY(get_double(args, "vector_weight", &o->vector_weight));
    if (isnan(o->bm25_weight) || isnan(o->vector_weight))
        return bad("bm25_weight", "a number");
    TRY(arg_str(args, "model", w, &o->model));
    TRY(get_int(args, "with_body", &o->with_body));
    return TROVE_OK;
}

static json_t *graph_note_json(const api_graph_note *n)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "docid", wire_str(n->docid), "collection",
                     wire_str(n->collection), "root", wire_str(n->root), "path", wire_str(n->path),
                     "title", wire_str(n->title));
}

static trove_err graph_note_parse(const json_t *v, api_graph_note *n)
{
    trove_err rc = TROVE_OK;
    if (!need_object(v, "a note", &rc))
        return rc;
    TRY(get_fixed(v, "docid", n->docid, sizeof n->docid));
    TRY(get_str(v, "collection", &n->collection, NULL));
    TRY(get_str(v, "root", &n->root, NULL));
    TRY(get_str(v, "path", &n->path, NULL));
    TRY(get_str(v, "title", &n->title, NULL));
    return TROVE_OK;
}

json_t *wire_similar_result(const search_results *r, const api_similar_info *si)
{
    json_t *j = wire_search_results(r), *s = json_object(), *w = json_array();
    for (size_t i = 0; i < si->why.n_terms; i++)
        json_array_append_new(w, real(si->why.term_weights[i]));
    set(s, "note", graph_note_json(&si->note));
    set(s, "terms", strs(si->why.terms, si->why.n_terms));
    set(s, "term_weights", w);
    set(s, "shared", strs(si->why.shared, si->why.n_shared));
    set(s, "vec_model", wire_str(si->why.vec_model));
    set(s, "vec_chunks", json_integer((json_int_t)si->why.vec_chunks));
    set(j, "similar", s);
    return j;
}

trove_err wire_similar_result_parse(const json_t *v, search_results *out, api_similar_info *si)
{
    memset(si, 0, sizeof *si);
    trove_err rc = wire_search_results_parse(v, out);
    if (rc)
        return rc;
    const json_t *s = json_object_get(v, "similar");
    if (!need_object(s, "similar", &rc))
        return rc;
    TRY(graph_note_parse(json_object_get(s, "note"), &si->note));
    TRY(get_strs(s, "terms", &si->why.terms, &si->why.n_terms));
    TRY(get_strs(s, "shared", &si->why.shared, &si->why.n_shared));
    TRY(get_str(s, "vec_model", &si->why.vec_model, NULL));
    TRY(get_size(s, "vec_chunks", &si->why.vec_chunks));
    const json_t *w = need_array(s, "term_weights", &rc);
    TRY(rc);
    si->why.term_weights = xcalloc(si->why.n_terms + 1, sizeof *si->why.term_weights);
    if (json_array_size(w) != si->why.n_terms)
        return bad("term_weights", "one number per term");
    for (size_t i = 0; i < si->why.n_terms; i++) {
        const json_t *x = json_array_get(w, i);
        if (!json_is_number(x))
            return bad("term_weights", "an array of numbers");
        si->why.term_weights[i] = json_number_value(x);
    }
    return TROVE_OK;
}

static json_t *links_json(const api_link *l, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:o, s:o, s:o, s:i, s:i, s:o}", "note",
                                           graph_note_json(&l[i].note), "target",
                                           wire_str(l[i].target), "fragment",
                                           wire_str(l[i].fragment), "kind", l[i].kind, "line",
                                           l[i].line, "text", wire_str(l[i].text)));
    return a;
}

static trove_err links_parse(const json_t *o, const char *key, api_link **out, size_t *n)
{
    trove_err rc = TROVE_OK;
    const json_t *a = need_array(o, key, &rc);
    TRY(rc);
    size_t k = a ? json_array_size(a) : 0;
    *out = xcalloc(k ? k : 1, sizeof **out);
    for (size_t i = 0; i < k; i++) {
        const json_t *v = json_array_get(a, i);
        api_link *l = &(*out)[i];
        (*n)++;
        if (!need_object(v, key, &rc))
            return rc;
        TRY(graph_note_parse(json_object_get(v, "note"), &l->note));
        TRY(get_str(v, "target", &l->target, NULL));
        TRY(get_str(v, "fragment", &l->fragment, NULL));
        TRY(get_int(v, "kind", &l->kind));
        TRY(get_int(v, "line", &l->line));
        TRY(get_str(v, "text", &l->text, NULL));
        if (!l->target || !l->text)
            return bad(key, "links with a target and a text");
        if (l->kind < API_LINK_MENTION || l->kind > 2)
            return bad("kind", "-1, 0, 1 or 2");
    }
    return TROVE_OK;
}

json_t *wire_link_set(const api_link_set *s)
{
    json_t *j = json_object();
    set(j, "note", graph_note_json(&s->note));
    set(j, "names", strs(s->names, s->n_names));
    set(j, "back", links_json(s->back, s->n_back));
    set(j, "out", links_json(s->out, s->n_out));
    set(j, "unresolved", links_json(s->unresolved, s->n_unresolved));
    set(j, "mentions", links_json(s->mentions, s->n_mentions));
    return j;
}

trove_err wire_link_set_parse(const json_t *v, api_link_set *out)
{
    trove_err rc = TROVE_OK;
    memset(out, 0, sizeof *out);
    if (!need_object(v, "links", &rc))
        return rc;
    TRY(graph_note_parse(json_object_get(v, "note"), &out->note));
    TRY(get_strs(v, "names", &out->names, &out->n_names));
    TRY(links_parse(v, "back", &out->back, &out->n_back));
    TRY(links_parse(v, "out", &out->out, &out->n_out));
    TRY(links_parse(v, "unresolved", &out->unresolved, &out->n_unresolved));
    TRY(links_parse(v, "mentions", &out->mentions, &out->n_mentions));
    return TROVE_OK;
}
