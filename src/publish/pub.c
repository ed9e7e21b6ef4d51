/* pub — OpenSearch bodies and the _bulk response parser (see pub.h). */
#include "publish/pub.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/where.h"
#include "text/tok.h"
#include "util/esc.h"
#include "util/mem.h"

/* ---- languages ---- */

/* trove's language codes (text/lang.h) and OpenSearch's built-in language
 * analyzers; Chinese, Japanese and Korean get the `cjk` analyzer (bigrams)
 * here, and trove's own word segmentation in `terms`. */
static const struct { const char *code, *analyzer; } lang_analyzers[] = {
    {"en", "english"},   {"de", "german"},     {"fr", "french"},     {"es", "spanish"},
    {"it", "italian"},   {"pt", "portuguese"}, {"nl", "dutch"},      {"cs", "czech"},
    {"sv", "swedish"},   {"tr", "turkish"},    {"id", "indonesian"}, {"ro", "romanian"},
    {"ru", "russian"},   {"ar", "arabic"},     {"fa", "persian"},    {"hi", "hindi"},
    {"el", "greek"},     {"th", "thai"},       {"zh", "cjk"},        {"ja", "cjk"},
    {"ko", "cjk"},       {"da", "danish"},     {"nb", "norwegian"},
};

const char *pub_lang_analyzer(const char *code)
{
    for (size_t i = 0; code && i < sizeof lang_analyzers / sizeof *lang_analyzers; i++)
        if (strcmp(lang_analyzers[i].code, code) == 0)
            return lang_analyzers[i].analyzer;
    return NULL;
}

static int has_lang_field(const char *const *langs, size_t n, const char *code)
{
    if (!code || !*code || !pub_lang_analyzer(code))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(langs[i], code) == 0)
            return 1;
    return 0;
}

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(7));
    json_decref(j);
    if (!s) {
        fprintf(stderr, "trove: out of memory\n");
        abort();
    }
    return s;
}

/* Text from a file or the index as a JSON string: bytes that are not
 * UTF-8 become U+FFFD (jansson refuses them). */
static json_t *jstrn(const char *s, size_t len)
{
    tbuf b = {0};
    esc_utf8(&b, s, len);
    json_t *j = json_stringn_nocheck(tbuf_cstr(&b), b.len);
    tbuf_free(&b);
    return j;
}

static json_t *jstr(const char *s)
{
    return jstrn(s, strlen(s));
}

/* ---- the index ---- */

static json_t *kw(void)
{
    return json_pack("{s:s}", "type", "keyword");
}

static json_t *meta_json(const pub_index_info *info)
{
    json_t *langs = json_array();
    for (size_t i = 0; i < info->n_langs; i++)
        json_array_append_new(langs, json_string(info->langs[i]));
    return json_pack("{s:{s:i, s:s, s:I, s:I, s:i, s:s, s:s, s:o}}", "trove", "format",
                     PUB_FORMAT, "index_id", info->index_id ? info->index_id : "", "snapshot",
                     (json_int_t)info->snapshot, "missing_vectors",
                     (json_int_t)info->missing_vectors, "dim", info->dim, "model",
                     info->model ? info->model : "", "fingerprint",
                     info->fingerprint ? info->fingerprint : "", "langs", langs);
}

char *pub_index_body(const pub_index_info *info)
{
    json_t *props = json_object();
    static const char *const keywords[] = {"docid", "collection", "path", "folder", "lang",
                                           "tags", "aliases", "date_source"};
    for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
        json_object_set_new(props, keywords[i], kw());
    json_object_set_new(props, "title", json_pack("{s:s, s:{s:{s:s}}}", "type", "text", "fields",
                                                  "raw", "type", "keyword"));
    json_object_set_new(props, "heading", json_pack("{s:s}", "type", "text"));
    static const char *const ints[] = {"seq", "line_start", "line_end", "in_degree"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        json_object_set_new(props, ints[i], json_pack("{s:s}", "type", "integer"));
    static const char *const longs[] = {"start_byte", "end_byte", "snapshot"};
    for (size_t i = 0; i < sizeof longs / sizeof *longs; i++)
        json_object_set_new(props, longs[i], json_pack("{s:s}", "type", "long"));
    json_object_set_new(props, "date", json_pack("{s:s, s:s}", "type", "date", "format",
                                                 "strict_date_optional_time"));
    /* The text as OpenSearch reads any language, and as trove's own terms
     * (folded, stemmed, Chinese segmented) for the keyword list of a
     * remote search, which trove analyses the same way. */
    json_object_set_new(props, "text", json_pack("{s:s, s:s}", "type", "text", "analyzer",
                                                 "standard"));
    json_object_set_new(props, "terms", json_pack("{s:s, s:s}", "type", "text", "analyzer",
                                                  "trove_terms"));
    for (size_t i = 0; i < info->n_langs; i++) {
        const char *an = pub_lang_analyzer(info->langs[i]);
        if (!an)
            continue;
        char name[32];
        snprintf(name, sizeof name, "text_%s", info->langs[i]);
        json_object_set_new(props, name, json_pack("{s:s, s:s}", "type", "text", "analyzer", an));
    }
    json_object_set_new(props, "fm", json_pack("{s:s, s:b}", "type", "object", "dynamic", 1));
    if (info->dim > 0)
        json_object_set_new(
            props, "embedding",
            json_pack("{s:s, s:i, s:{s:s, s:s, s:s, s:{s:i, s:i}}}", "type", "knn_vector",
                      "dimension", info->dim, "method", "name", "hnsw", "space_type",
                      "cosinesimil", "engine", "lucene", "parameters", "ef_construction", 128,
                      "m", 16));
    json_t *templates = json_pack("[{s:{s:s, s:s, s:{s:s}}}]", "fm_keywords", "path_match",
                                  "fm.*", "match_mapping_type", "*", "mapping", "type", "keyword");
    /* The vector, trove's terms and the per-language copy are indexed but
     * not stored: _source keeps what a result shows (the vector alone is
     * 11 bytes a component as JSON), and trove republishes rather than
     * reindexes. */
    json_t *mappings = json_pack("{s:s, s:o, s:{s:[s, s, s]}, s:o, s:o}", "dynamic", "strict",
                                 "_meta", meta_json(info), "_source", "excludes", "embedding",
                                 "terms", "text_*", "dynamic_templates", templates, "properties",
                                 props);
    json_t *settings = json_pack(
        "{s:{s:b, s:i, s:i}, s:{s:{s:{s:s, s:s}}}}", "index", "knn", info->dim > 0,
        "number_of_shards", 1, "number_of_replicas", 1, "analysis", "analyzer", "trove_terms",
        "type", "custom", "tokenizer", "whitespace");
    return dump(json_pack("{s:o, s:o}", "settings", settings, "mappings", mappings));
}

char *pub_meta_body(const pub_index_info *info)
{
    return dump(json_pack("{s:o}", "_meta", meta_json(info)));
}

char *pub_pipeline_body(double keyword_weight, double vector_weight, int rank_constant)
{
    return dump(json_pack("{s:s, s:[{s:{s:{s:s, s:i, s:{s:[f, f]}}}}]}", "description",
                          "trove: keyword and vector lists fused by reciprocal rank",
                          "phase_results_processors", "score-ranker-processor", "combination",
                          "technique", "rrf", "rank_constant", rank_constant, "parameters",
                          "weights", keyword_weight, vector_weight));
}

char *pub_pipeline_name(const char *index)
{
    size_t n = strlen(index) + 8;
    char *s = xmalloc(n);
    snprintf(s, n, "%s-hybrid", index);
    return s;
}

char *pub_stale_body(int64_t snapshot)
{
    return dump(json_pack("{s:{s:{s:{s:I}}}}", "query", "range", "snapshot", "lt",
                          (json_int_t)snapshot));
}

/* ---- documents ---- */

void pub_chunk_id(const char *docid, int seq, char out[32])
{
    snprintf(out, 32, "%.8s-%d", docid, seq);
}

static int term_cb(void *ctx, const char *token, size_t len, size_t start, size_t end)
{
    (void)start;
    (void)end;
    tbuf *b = ctx;
    if (b->len)
        tbuf_putc(b, ' ');
    tbuf_append(b, token, len);
    return 0;
}

/* trove's terms of text, space-separated: what the `terms` field holds. */
static json_t *terms_of(const char *text)
{
    tbuf b = {0};
    tok_opts o = {.stem = 1};
    tok_run(&o, text, strlen(text), &b, term_cb);
    json_t *j = json_stringn(b.data ? b.data : "", b.len);
    tbuf_free(&b);
    return j;
}

static json_t *split(const char *s, char sep)
{
    json_t *a = json_array();
    while (s && *s) {
        const char *e = strchr(s, sep);
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n)
            json_array_append_new(a, jstrn(s, n));
        s = e ? e + 1 : s + n;
    }
    return a;
}

/* A frontmatter value as keywords: scalars as their text, lists of
 * scalars as lists; mappings are left out (as --where leaves them). */
static json_t *fm_value(json_t *v)
{
    char num[64];
    switch (json_typeof(v)) {
    case JSON_STRING: return json_incref(v);
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        return json_string(num);
    case JSON_REAL:
        snprintf(num, sizeof num, "%.17g", json_real_value(v));
        return json_string(num);
    case JSON_TRUE: return json_string("true");
    case JSON_FALSE: return json_string("false");
    case JSON_ARRAY: {
        json_t *a = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
            if (!json_is_object(e) && !json_is_array(e) && !json_is_null(e))
                json_array_append_new(a, fm_value(e));
        return a;
    }
    default: return NULL;
    }
}

static json_t *fm_of(const char *meta)
{
    json_t *out = json_object();
    json_t *m = meta && *meta ? json_loads(meta, 0, NULL) : NULL;
    const char *key;
    json_t *v;
    if (json_is_object(m))
        json_object_foreach(m, key, v) {
            json_t *kv = fm_value(v);
            if (!kv || !*key)
                continue;
            /* A dot would make an object path of the key. */
            char *k = xstrdup(key);
            for (char *p = k; *p; p++)
                *p = *p == '.' ? '_' : (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            json_object_set_new(out, k, kv);
            free(k);
        }
    json_decref(m);
    return out;
}

static json_t *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return jstrn(path, slash ? (size_t)(slash - path) : 0);
}

char *pub_chunk_source(const pub_doc_src *s, size_t i)
{
    const store_pub_doc *d = s->doc;
    const store_pub_chunk *c = &d->chunks[i];
    json_t *tags = json_array();
    for (size_t t = 0; t < d->n_tags; t++)
        json_array_append_new(tags, jstr(d->tags[t]));
    json_t *j = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:i, s:I, s:I, s:o, s:o, s:o, s:i,"
        " s:I, s:o, s:o}",
        "docid", jstr(d->doc.docid), "collection", jstr(d->doc.collection), "path",
        jstr(d->doc.path), "folder", folder_of(d->doc.path), "title", jstr(d->doc.title),
        "aliases", split(d->aliases, '\n'),
        "heading", split(c->heading, '\x1f'), "seq", c->seq, "line_start", c->line_start,
        "line_end", c->line_end, "start_byte", (json_int_t)c->start_byte, "end_byte",
        (json_int_t)c->end_byte, "tags", tags, "lang", jstr(d->lang), "fm", fm_of(d->meta),
        "in_degree", d->doc.in_degree, "snapshot", (json_int_t)s->snapshot, "text", jstr(c->body),
        "terms", terms_of(c->body));
    if (has_lang_field(s->langs, s->n_langs, d->lang)) {
        char name[32];
        snprintf(name, sizeof name, "text_%s", d->lang);
        json_object_set_new(j, name, jstr(c->body));
    }
    if (s->date) {
        json_object_set_new(j, "date", json_string(s->date));
        json_object_set_new(j, "date_source", jstr(s->date_source ? s->date_source : ""));
    }
    if (s->dim > 0 && s->have && s->have[i]) {
        json_t *v = json_array();
        for (int k = 0; k < s->dim; k++)
            json_array_append_new(v, json_real(s->vecs[i * (size_t)s->dim + (size_t)k]));
        json_object_set_new(j, "embedding", v);
    }
    return dump(j);
}

/* ---- _bulk bodies ---- */

void pub_batch_free(pub_batch *b)
{
    tbuf_free(&b->body);
    for (size_t i = 0; i < b->n; i++)
        free(b->ids[i]);
    free(b->ids);
    free(b->off);
    free(b->is_delete);
    memset(b, 0, sizeof *b);
}

/* Append one action (its lines already in `lines`) to b. */
static void batch_add(pub_batch *b, const char *id, int is_delete, const char *lines, size_t len)
{
    /* Three arrays of one capacity: each grows from the same cap to the
     * same need, so each gets the same new cap. */
    size_t cap = b->cap;
    xgrow(&b->ids, &cap, b->n + 2, sizeof *b->ids);
    cap = b->cap;
    xgrow(&b->is_delete, &cap, b->n + 2, sizeof *b->is_delete);
    cap = b->cap;
    xgrow(&b->off, &cap, b->n + 2, sizeof *b->off);
    b->cap = cap;
    b->ids[b->n] = xstrdup(id);
    b->is_delete[b->n] = (unsigned char)is_delete;
    b->off[b->n] = b->body.len;
    tbuf_append(&b->body, lines, len);
    b->n++;
    b->off[b->n] = b->body.len;
}

void pub_batch_subset(const pub_batch *b, const size_t *which, size_t n, pub_batch *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        size_t k = which[i];
        batch_add(out, b->ids[k], b->is_delete[k], b->body.data + b->off[k],
                  b->off[k + 1] - b->off[k]);
    }
}

void pub_bulk_init(pub_bulk *w, size_t max_bytes, size_t max_actions, pub_flush_fn flush,
                   void *ctx)
{
    memset(w, 0, sizeof *w);
    w->max_bytes = max_bytes ? max_bytes : PUB_BULK_MAX_BYTES;
    w->max_actions = max_actions ? max_actions : PUB_BULK_MAX_ACTIONS;
    w->flush = flush;
    w->ctx = ctx;
}

static trove_err bulk_flush(pub_bulk *w)
{
    if (!w->cur.n)
        return TROVE_OK;
    trove_err rc = w->flush(w->ctx, &w->cur);
    w->batches++;
    w->actions += w->cur.n;
    pub_batch_free(&w->cur);
    return rc;
}

static trove_err bulk_add(pub_bulk *w, const char *id, int is_delete, const tbuf *lines)
{
    if (w->cur.n && (w->cur.n >= w->max_actions || w->cur.body.len + lines->len > w->max_bytes)) {
        trove_err rc = bulk_flush(w);
        if (rc)
            return rc;
    }
    batch_add(&w->cur, id, is_delete, lines->data, lines->len);
    return TROVE_OK;
}

static void action_line(tbuf *b, const char *op, const char *id)
{
    char *line = dump(json_pack("{s:{s:s}}", op, "_id", id));
    tbuf_puts(b, line);
    tbuf_putc(b, '\n');
    free(line);
}

trove_err pub_bulk_index(pub_bulk *w, const char *id, const char *source)
{
    tbuf b = {0};
    action_line(&b, "index", id);
    tbuf_puts(&b, source);
    tbuf_putc(&b, '\n');
    trove_err rc = bulk_add(w, id, 0, &b);
    tbuf_free(&b);
    return rc;
}

trove_err pub_bulk_delete(pub_bulk *w, const char *id)
{
    tbuf b = {0};
    action_line(&b, "delete", id);
    trove_err rc = bulk_add(w, id, 1, &b);
    tbuf_free(&b);
    return rc;
}

trove_err pub_bulk_finish(pub_bulk *w)
{
    trove_err rc = bulk_flush(w);
    pub_batch_free(&w->cur);
    return rc;
}

/* ---- _bulk responses ---- */

static trove_err bad_response(const char *what)
{
    return trove_fail(TROVE_EPARSE, "the _bulk response %s", what);
}

static trove_err parse_item(json_t *entry, pub_bulk_item *it)
{
    if (!json_is_object(entry) || json_object_size(entry) != 1)
        return bad_response("has an item that is not an object of one action");
    const char *op = json_object_iter_key(json_object_iter(entry));
    json_t *r = json_object_iter_value(json_object_iter(entry));
    static const char *const ops[] = {"index", "create", "update", "delete"};
    int known = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        known |= strcmp(op, ops[i]) == 0;
    if (!known || !json_is_object(r))
        return bad_response("has an item of an unknown action");
    snprintf(it->op, sizeof it->op, "%s", op);
    json_t *st = json_object_get(r, "status");
    if (!json_is_integer(st) || json_integer_value(st) < 100 || json_integer_value(st) > 599)
        return bad_response("has an item without a valid status");
    it->status = (int)json_integer_value(st);
    json_t *id = json_object_get(r, "_id");
    it->id = xstrdup(json_is_string(id) ? json_string_value(id) : "");
    json_t *err = json_object_get(r, "error");
    if (err) {
        json_t *type = json_object_get(err, "type"), *reason = json_object_get(err, "reason");
        tbuf b = {0};
        tbuf_printf(&b, "%s: %s", json_is_string(type) ? json_string_value(type) : "error",
                    json_is_string(reason) ? json_string_value(reason)
                    : json_is_string(err)  ? json_string_value(err)
                                           : "(no reason given)");
        it->error = tbuf_detach(&b);
    }
    return TROVE_OK;
}

trove_err pub_bulk_response_parse(const char *body, size_t len, pub_bulk_resp *out)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return trove_fail(TROVE_EPARSE, "the _bulk response is not JSON (%s at byte %d)", je.text,
                          je.position);
    trove_err rc = TROVE_OK;
    json_t *errors = json_object_get(j, "errors"), *items = json_object_get(j, "items");
    if (!json_is_object(j) || !json_is_boolean(errors) || !json_is_array(items))
        rc = bad_response("lacks \"errors\" (true/false) or \"items\" (a list)");
    out->errors = json_is_true(errors);
    size_t n = rc ? 0 : json_array_size(items);
    out->items = n ? xcalloc(n, sizeof *out->items) : NULL;
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        rc = parse_item(json_array_get(items, i), &out->items[i]);
        if (rc == TROVE_OK)
            out->n = i + 1;
    }
    json_decref(j);
    if (rc)
        pub_bulk_resp_free(out);
    return rc;
}

void pub_bulk_resp_free(pub_bulk_resp *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->items[i].id);
        free(r->items[i].error);
    }
    free(r->items);
    memset(r, 0, sizeof *r);
}

int pub_item_done(const pub_bulk_item *it)
{
    return (it->status >= 200 && it->status < 300) ||
           (it->status == 404 && strcmp(it->op, "delete") == 0);
}

int pub_status_retryable(int status)
{
    return status == 429 || status == 502 || status == 503 || status == 504;
}

double pub_backoff(int attempt, double base_s, double max_s, long retry_after)
{
    if (retry_after >= 0)
        return (double)retry_after < max_s ? (double)retry_after : max_s;
    double w = base_s;
    for (int i = 1; i < attempt && w < max_s; i++)
        w *= 2;
    return w < max_s ? w : max_s;
}

/* ---- what a published index says about itself ---- */

static char *jdup(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return xstrdup(s ? s : "");
}

trove_err pub_meta_parse(const char *body, size_t len, pub_meta *out)
{
    memset(out, 0, sizeof *out);
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!json_is_object(j) || json_object_size(j) < 1) {
        json_decref(j);
        return trove_fail(TROVE_EPARSE, "the answer to GET _mapping is not a mapping");
    }
    json_t *m = json_object_iter_value(json_object_iter(j));
    json_t *tr = json_object_get(json_object_get(json_object_get(m, "mappings"), "_meta"),
                                 "trove");
    if (json_is_object(tr)) {
        out->is_trove = 1;
        out->snapshot = json_integer_value(json_object_get(tr, "snapshot"));
        out->missing_vectors = json_integer_value(json_object_get(tr, "missing_vectors"));
        out->format = (int)json_integer_value(json_object_get(tr, "format"));
        out->dim = (int)json_integer_value(json_object_get(tr, "dim"));
        out->index_id = jdup(tr, "index_id");
        out->fingerprint = jdup(tr, "fingerprint");
        out->model = jdup(tr, "model");
    }
    json_decref(j);
    return TROVE_OK;
}

void pub_meta_free(pub_meta *m)
{
    free(m->index_id);
    free(m->fingerprint);
    free(m->model);
    memset(m, 0, sizeof *m);
}

/* ---- remote search ---- */

static json_t *strs(const char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, jstr(v[i]));
    return a;
}

static trove_err where_filter(const pub_where *w, json_t *filter, json_t *must_not)
{
    char field[300];
    snprintf(field, sizeof field, "fm.%s", w->key);
    for (char *p = field + 3; *p; p++)
        *p = *p == '.' ? '_' : *p;
    switch (w->op) {
    case WHERE_EQ:
    case WHERE_NE:
        json_array_append_new(w->op == WHERE_EQ ? filter : must_not,
                              json_pack("{s:{s:o}}", "term", field, jstr(w->values[0])));
        return TROVE_OK;
    case WHERE_IN:
    case WHERE_NOT_IN:
        json_array_append_new(w->op == WHERE_IN ? filter : must_not,
                              json_pack("{s:{s:o}}", "terms", field,
                                        strs(w->values, w->n_values)));
        return TROVE_OK;
    case WHERE_GLOB:
        json_array_append_new(filter, json_pack("{s:{s:{s:o}}}", "wildcard", field, "value",
                                                jstr(w->values[0])));
        return TROVE_OK;
    case WHERE_EXISTS:
    case WHERE_MISSING:
        json_array_append_new(w->op == WHERE_EXISTS ? filter : must_not,
                              json_pack("{s:{s:s}}", "exists", "field", field));
        return TROVE_OK;
    default:
        return trove_fail(TROVE_EUNSUPPORTED, "--where %s %s ... has no remote filter: "
                          "frontmatter fields are keywords in OpenSearch, compared as text "
                          "(use =, !=, in, ~= or exists there)", w->key, where_op_name(w->op));
    }
}

/* The filters of rq as one bool query's filter and must_not lists. */
static trove_err filters(const pub_search_req *rq, json_t **out)
{
    json_t *f = json_array(), *not = json_array();
    if (rq->n_collections)
        json_array_append_new(f, json_pack("{s:{s:o}}", "terms", "collection",
                                           strs(rq->collections, rq->n_collections)));
    if (rq->folder && *rq->folder) {
        tbuf b = {0};
        tbuf_puts(&b, rq->folder);
        if (b.data[b.len - 1] != '/')
            tbuf_putc(&b, '/');
        json_array_append_new(f, json_pack("{s:{s:o}}", "prefix", "path", jstrn(b.data, b.len)));
        tbuf_free(&b);
    }
    for (size_t i = 0; i < rq->n_tags; i++)
        json_array_append_new(f, json_pack("{s:{s:o}}", "term", "tags", jstr(rq->tags[i])));
    if (rq->n_langs)
        json_array_append_new(f, json_pack("{s:{s:o}}", "terms", "lang",
                                           strs(rq->langs, rq->n_langs)));
    if (rq->since || rq->until) {
        json_t *r = json_object();
        if (rq->since)
            json_object_set_new(r, "gte", jstr(rq->since));
        if (rq->until)
            json_object_set_new(r, "lte", jstr(rq->until));
        json_array_append_new(f, json_pack("{s:{s:o}}", "range", "date", r));
    }
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < rq->n_where; i++)
        rc = where_filter(&rq->where[i], f, not);
    if (rc) {
        json_decref(f);
        json_decref(not);
        return rc;
    }
    *out = json_array_size(f) || json_array_size(not)
               ? json_pack("{s:o, s:o}", "filter", f, "must_not", not)
               : (json_decref(f), json_decref(not), NULL);
    return TROVE_OK;
}

trove_err pub_search_body(const pub_search_req *rq, char **body, int *hybrid)
{
    *body = NULL;
    json_t *fb;
    trove_err rc = filters(rq, &fb);
    if (rc)
        return rc;
    json_t *kw = json_pack("{s:{s:[{s:{s:{s:o}}}, {s:{s:{s:o, s:f}}}], s:i}}", "bool", "should",
                           "match", "terms", "query", jstr(rq->terms ? rq->terms : ""), "match",
                           "title", "query", jstr(rq->query ? rq->query : ""), "boost", 2.0,
                           "minimum_should_match", 1);
    if (fb)
        json_object_update(json_object_get(kw, "bool"), fb);
    json_t *knn = NULL;
    if (rq->vec && rq->dim > 0) {
        json_t *v = json_array();
        for (int i = 0; i < rq->dim; i++)
            json_array_append_new(v, json_real(rq->vec[i]));
        json_t *inner = json_pack("{s:o, s:I}", "vector", v, "k", (json_int_t)rq->k);
        if (fb)
            json_object_set_new(inner, "filter", json_pack("{s:O}", "bool", fb));
        knn = json_pack("{s:{s:o}}", "knn", "embedding", inner);
    }
    json_decref(fb);
    json_t *query;
    *hybrid = knn && !rq->vector_only;
    if (*hybrid) {
        query = json_pack("{s:{s:[o, o]}}", "hybrid", "queries", kw, knn);
    } else if (knn) {
        json_decref(kw);
        query = knn;
    } else {
        query = kw;
    }
    *body = dump(json_pack("{s:I, s:o, s:{s:[s, s, s]}}", "size", (json_int_t)rq->k, "query",
                           query, "_source", "excludes", "embedding", "terms", "text_*"));
    return TROVE_OK;
}

static char **str_list(json_t *a, size_t *n)
{
    *n = 0;
    size_t m = json_is_array(a) ? json_array_size(a) : 0;
    char **out = m ? xcalloc(m, sizeof *out) : NULL;
    for (size_t i = 0; i < m; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s)
            out[(*n)++] = xstrdup(s);
    }
    return out;
}

static int jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    json_int_t i = json_is_integer(v) ? json_integer_value(v) : 0;
    return i < 0 ? 0 : i > INT32_MAX ? INT32_MAX : (int)i;
}

static trove_err hit_parse(json_t *h, pub_hit *out)
{
    json_t *src = json_object_get(h, "_source");
    const char *id = json_string_value(json_object_get(h, "_id"));
    if (!json_is_object(h) || !json_is_object(src) || !id ||
        !json_is_string(json_object_get(src, "docid")) ||
        !json_is_string(json_object_get(src, "collection")) ||
        !json_is_string(json_object_get(src, "path")))
        return trove_fail(TROVE_EPARSE, "the search answer has a hit without _id, docid, "
                          "collection or path (not published by trove?)");
    out->id = xstrdup(id);
    json_t *sc = json_object_get(h, "_score");
    out->score = json_is_number(sc) ? json_number_value(sc) : 0;
    out->docid = jdup(src, "docid");
    out->collection = jdup(src, "collection");
    out->path = jdup(src, "path");
    out->title = jdup(src, "title");
    out->lang = jdup(src, "lang");
    out->text = jdup(src, "text");
    out->date = jdup(src, "date");
    out->date_source = jdup(src, "date_source");
    out->heading = str_list(json_object_get(src, "heading"), &out->n_heading);
    out->tags = str_list(json_object_get(src, "tags"), &out->n_tags);
    out->line_start = jint(src, "line_start");
    out->line_end = jint(src, "line_end");
    out->in_degree = jint(src, "in_degree");
    out->start_byte = jint(src, "start_byte");
    out->end_byte = jint(src, "end_byte");
    return TROVE_OK;
}

trove_err pub_search_parse(const char *body, size_t len, pub_hit **hits, size_t *n)
{
    *hits = NULL;
    *n = 0;
    json_t *j = json_loadb(body, len, 0, NULL);
    json_t *a = json_object_get(json_object_get(j, "hits"), "hits");
    trove_err rc = json_is_array(a) ? TROVE_OK
                                    : trove_fail(TROVE_EPARSE, "the search answer has no "
                                                 "hits.hits list");
    size_t m = rc ? 0 : json_array_size(a);
    *hits = m ? xcalloc(m, sizeof **hits) : NULL;
    for (size_t i = 0; rc == TROVE_OK && i < m; i++)
        if ((rc = hit_parse(json_array_get(a, i), &(*hits)[i])) == TROVE_OK)
            *n = i + 1;
    json_decref(j);
    if (rc) {
        pub_hits_free(*hits, *n);
        *hits = NULL;
        *n = 0;
    }
    return rc;
}

void pub_hits_free(pub_hit *hits, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pub_hit *h = &hits[i];
        free(h->id);
        free(h->docid);
        free(h->collection);
        free(h->path);
        free(h->title);
        free(h->lang);
        free(h->text);
        free(h->date);
        free(h->date_source);
        for (size_t k = 0; k < h->n_heading; k++)
            free(h->heading[k]);
        free(h->heading);
        for (size_t k = 0; k < h->n_tags; k++)
            free(h->tags[k]);
        free(h->tags);
    }
    free(hits);
}
