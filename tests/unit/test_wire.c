/* wire: the daemon's JSON form of the api structs round-trips exactly
 * (what lets `trove search` print the same bytes through a daemon). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wire.h"
#include "util/mem.h"

/* encode → text → parse → decode, as over the socket */
static json_t *through_text(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);
    assert_non_null(s);
    assert_null(strchr(s, '\n'));        /* one line per message */
    json_decref(j);
    json_t *back = json_loads(s, 0, NULL);
    free(s);
    assert_non_null(back);
    return back;
}

static void test_search_results_round_trip(void **state)
{
    (void)state;
    static const char body[] = "caf\xc3\xa9 \xff\xfe bad utf-8\0and a NUL";
    search_result it = {0};
    it.doc_id = 42;
    memcpy(it.docid, "0123abcd", 9);
    it.collection = xstrdup("notes");
    it.root = xstrdup("/home/me/no\xfftes");     /* a file name that is not UTF-8 */
    it.path = xstrdup("a/b.md");
    it.title = xstrdup("Title \"quoted\"");
    it.heading_path = xcalloc(2, sizeof *it.heading_path);
    it.heading_path[0] = xstrdup("H1");
    it.heading_path[1] = xstrdup("H2");
    it.n_heading_path = 2;
    it.line_start = 3;
    it.line_end = 9;
    it.start_byte = 5000000000LL;
    it.end_byte = 5000000100LL;
    it.score = 0.1 + 0.2;                          /* 0.30000000000000004 */
    it.snippet = xstrdup("x \x02match\x03 y\nz");
    it.context = xcalloc(2, sizeof *it.context);
    it.context[0] = xstrdup("context one");
    it.context[1] = xstrdup("context two");
    it.n_context = 2;
    it.in_degree = 7;
    it.prior = 1.0 + 0.1 * log10(8.0);
    memcpy(it.lang, "de", 3);
    it.date = 19844.0 + 1.0 / 3.0;
    it.date_source = xstrdup("frontmatter:created");
    it.recency = 0.75 + 1e-12;
    it.passages = xcalloc(2, sizeof *it.passages);
    it.n_passages = 2;
    it.passages[0].snippet = xstrdup("first");
    it.passages[0].line_start = 3;
    it.passages[1].heading_path = xcalloc(1, sizeof *it.passages[1].heading_path);
    it.passages[1].heading_path[0] = xstrdup("Risks");
    it.passages[1].n_heading_path = 1;
    it.passages[1].start_byte = 6000000000LL;
    it.passages[1].score = 1.0 / 7.0;
    it.passages[1].snippet = xstrdup("second \x02hit\x03");
    it.also_in = xcalloc(2, sizeof *it.also_in);
    it.n_also_in = 2;
    memcpy(it.also_in[0].lang, "pt-BR", 6);
    memcpy(it.also_in[0].docid, "9c01a2b3", 9);
    it.also_in[0].path = xstrdup("pages.pt_BR/a/b.md");
    it.also_in[1].path = xstrdup("und/\xff.md");     /* no language, not UTF-8 */
    memcpy(it.also_in[1].docid, "00000001", 9);
    it.channel[0] = (search_channel_hit){1, 12.345678901234567, 2.5, 0.125};
    it.body = xmalloc(sizeof body);
    memcpy(it.body, body, sizeof body);
    it.body_len = sizeof body - 1;
    search_results r = {.items = xcalloc(1, sizeof *r.items), .n = 1, .fts = xstrdup("\"match\"")};
    r.items[0] = it;
    memcpy(r.lang, "en", 3);
    r.fusion.method = SEARCH_FUSION_Z;
    r.fusion.weight[SEARCH_CH_VECTOR] = 0.5 * (1.0 / 3.0);
    r.fusion.sd[SEARCH_CH_BM25] = 1.0 / 7.0;
    r.fusion.n[SEARCH_CH_BM25] = 100;
    r.fusion.agreement = 2.0 / 3.0;

    json_t *j = through_text(wire_search_results(&r));
    search_results back;
    assert_int_equal(wire_search_results_parse(j, &back), TROVE_OK);
    json_decref(j);
    assert_int_equal(back.n, 1);
    const search_result *b = &back.items[0];
    assert_int_equal(b->doc_id, 42);
    assert_string_equal(b->docid, "0123abcd");
    assert_string_equal(b->root, it.root);
    assert_string_equal(b->title, it.title);
    assert_int_equal(b->n_heading_path, 2);
    assert_string_equal(b->heading_path[1], "H2");
    assert_int_equal(b->start_byte, 5000000000LL);
    assert_memory_equal(&b->score, &it.score, sizeof it.score);   /* bit for bit */
    assert_memory_equal(&b->prior, &it.prior, sizeof it.prior);
    assert_memory_equal(&b->channel[0].score, &it.channel[0].score, sizeof(double));
    assert_int_equal(b->channel[0].rank, 1);
    assert_memory_equal(&b->channel[0].z, &it.channel[0].z, sizeof(double));
    assert_memory_equal(&b->channel[0].vote, &it.channel[0].vote, sizeof(double));
    /* what --explain prints of the fusion comes back bit for bit */
    assert_int_equal(back.fusion.method, SEARCH_FUSION_Z);
    assert_memory_equal(back.fusion.weight, r.fusion.weight, sizeof r.fusion.weight);
    assert_memory_equal(back.fusion.sd, r.fusion.sd, sizeof r.fusion.sd);
    assert_memory_equal(back.fusion.n, r.fusion.n, sizeof r.fusion.n);
    assert_memory_equal(&back.fusion.agreement, &r.fusion.agreement, sizeof(double));
    assert_string_equal(b->snippet, it.snippet);
    assert_int_equal(b->n_context, 2);
    assert_string_equal(b->context[1], "context two");
    assert_int_equal(b->body_len, it.body_len);
    assert_memory_equal(b->body, body, it.body_len);
    assert_string_equal(b->lang, "de");
    assert_int_equal(b->n_also_in, 2);
    assert_string_equal(b->also_in[0].lang, "pt-BR");
    assert_string_equal(b->also_in[0].docid, "9c01a2b3");
    assert_string_equal(b->also_in[0].path, "pages.pt_BR/a/b.md");
    assert_string_equal(b->also_in[1].lang, "");
    assert_string_equal(b->also_in[1].path, it.also_in[1].path);
    assert_memory_equal(&b->date, &it.date, sizeof(double));
    assert_string_equal(b->date_source, "frontmatter:created");
    assert_memory_equal(&b->recency, &it.recency, sizeof(double));
    assert_int_equal(b->n_passages, 2);
    assert_string_equal(b->passages[0].snippet, "first");
    assert_int_equal(b->passages[0].line_start, 3);
    assert_int_equal(b->passages[1].n_heading_path, 1);
    assert_string_equal(b->passages[1].heading_path[0], "Risks");
    assert_int_equal(b->passages[1].start_byte, 6000000000LL);
    assert_memory_equal(&b->passages[1].score, &it.passages[1].score, sizeof(double));
    assert_string_equal(b->passages[1].snippet, it.passages[1].snippet);
    assert_string_equal(back.lang, "en");
    assert_string_equal(back.fts, "\"match\"");
    search_results_free(&back);       /* frees the decoded context lines too */
    r.items[0].context = it.context;
    search_results_free(&r);
}

static void test_search_opts_round_trip(void **state)
{
    (void)state;
    const char *cols[] = {"a", "b"}, *tags[] = {"t1"}, *langs[] = {"de", "pt-BR"};
    api_search_opts o;
    api_search_opts_init(&o);
    o.search.query = "vector \"clock\" -x";
    o.search.collections = cols;
    o.search.n_collections = 2;
    o.search.tags = tags;
    o.search.n_tags = 1;
    o.search.folder = "work/";
    o.search.langs = langs;
    o.search.n_langs = 2;
    o.search.each_translation = 1;
    const char *where[] = {"status=done", "priority>=2"};
    o.search.where = where;
    o.search.n_where = 2;
    o.search.since = "7d";
    o.search.until = "2026-W14";
    o.search.recent = 1;
    o.search.passages = 3;
    o.search.limit = 0;
    o.search.min_score = 0.1 + 0.2;
    o.search.weights[SEARCH_CH_TITLE] = 2.5;
    o.with_body = 1;
    json_t *j = through_text(wire_search_opts(&o));
    api_search_opts back;
    wire_args hold = {0};
    assert_int_equal(wire_search_opts_parse(j, &back, &hold), TROVE_OK);
    json_decref(j);
    assert_string_equal(back.search.query, o.search.query);
    assert_int_equal(back.search.n_collections, 2);
    assert_string_equal(back.search.collections[1], "b");
    assert_string_equal(back.search.tags[0], "t1");
    assert_string_equal(back.search.folder, "work/");
    assert_int_equal(back.search.n_where, 2);
    assert_string_equal(back.search.where[1], "priority>=2");
    assert_string_equal(back.search.since, "7d");
    assert_string_equal(back.search.until, "2026-W14");
    assert_int_equal(back.search.recent, 1);
    assert_true(isnan(back.search.recency_days));
    assert_int_equal(back.search.passages, 3);
    assert_int_equal(back.search.n_langs, 2);
    assert_string_equal(back.search.langs[1], "pt-BR");
    assert_int_equal(back.search.each_translation, 1);
    assert_int_equal(back.search.limit, 0);
    assert_memory_equal(&back.search.min_score, &o.search.min_score, sizeof(double));
    assert_true(back.search.weights[SEARCH_CH_TITLE] == 2.5);
    assert_int_equal(back.search.rrf_k, o.search.rrf_k);
    assert_int_equal(back.with_body, 1);
    wire_args_free(&hold);
}

static void test_bad_input_is_an_error(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"query\": 5}", "{\"query\": \"x\", \"limit\": -1}", "{\"query\": \"x\", \"tags\": [1]}",
        "{\"query\": \"x\", \"weights\": []}", "{\"limit\": 3}", "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        api_search_opts o;
        wire_args hold = {0};
        assert_int_equal(wire_search_opts_parse(j, &o, &hold), TROVE_EPARSE);
        wire_args_free(&hold);
        json_decref(j);
    }
    json_t *j = json_loads("{\"items\": [{\"collection\": \"c\"}]}", 0, NULL);
    search_results r;
    assert_int_equal(wire_search_results_parse(j, &r), TROVE_EPARSE);
    search_results_free(&r);
    json_decref(j);
    char *out;
    size_t len;
    j = json_loads("{\"base64\": \"@@@@\"}", 0, NULL);
    assert_int_equal(wire_get_bytes(j, &out, &len), 0);
    json_decref(j);
}

/* The status's snapshot survives the wire (daemon `status`, MCP status
 * through a daemon); none is null and reads back as id 0. */
static void test_status_snapshot_round_trip(void **state)
{
    (void)state;
    api_status st = {0};
    st.config_file = xstrdup("/c/config.yaml");
    st.index_path = xstrdup("/i/index.db");
    st.index_exists = 1;
    st.snapshot = (store_snapshot){.id = 7, .created_at = 1796047072, .kind = "rollback",
                                   .note = xstrdup("rollback to 3"), .docs = 23, .chunks = 26,
                                   .links = 57, .added = 1, .removed = 2, .modified = 3};
    api_status back;
    json_t *j = through_text(wire_status(&st));
    assert_int_equal(wire_status_parse(j, &back), TROVE_OK);
    json_decref(j);
    assert_int_equal(back.snapshot.id, 7);
    assert_int_equal(back.snapshot.created_at, 1796047072);
    assert_string_equal(back.snapshot.kind, "rollback");
    assert_string_equal(back.snapshot.note, "rollback to 3");
    assert_int_equal(back.snapshot.docs, 23);
    assert_int_equal(back.snapshot.chunks, 26);
    assert_int_equal(back.snapshot.links, 57);
    assert_int_equal(back.snapshot.added, 1);
    assert_int_equal(back.snapshot.removed, 2);
    assert_int_equal(back.snapshot.modified, 3);
    api_status_free(&back);
    store_snapshot_clear(&st.snapshot);
    j = through_text(wire_status(&st));
    assert_true(json_is_null(json_object_get(j, "snapshot")));
    assert_int_equal(wire_status_parse(j, &back), TROVE_OK);
    json_decref(j);
    assert_int_equal(back.snapshot.id, 0);
    api_status_free(&back);
    api_status_free(&st);
}

/* The files update skips by design cross the wire with their reasons, so
 * status through a daemon does not count them as new. */
static void test_status_skipped_round_trip(void **state)
{
    (void)state;
    api_status_collection col = {.name = xstrdup("notes"), .path = xstrdup("/n"), .fresh_known = 1,
                                 .fresh = {.files = 9, .fresh = 5, .added = 1, .skipped_large = 1,
                                           .skipped_binary = 2, .skipped_unreadable = 3}};
    api_status st = {.config_file = xstrdup("/c/config.yaml"), .index_path = xstrdup("/i/index.db"),
                     .collections = &col, .n_collections = 1};
    api_status back;
    json_t *j = through_text(wire_status(&st));
    assert_int_equal(wire_status_parse(j, &back), TROVE_OK);
    json_decref(j);
    assert_int_equal(back.n_collections, 1);
    const index_freshness *f = &back.collections[0].fresh;
    assert_int_equal(f->added, 1);
    assert_int_equal(f->skipped_large, 1);
    assert_int_equal(f->skipped_binary, 2);
    assert_int_equal(f->skipped_unreadable, 3);
    api_status_free(&back);
    st.collections = NULL;
    st.n_collections = 0;
    api_status_free(&st);
    free(col.name);
    free(col.path);
}

static void test_update_result_round_trip(void **state)
{
    (void)state;
    index_update_collection col = {.name = xstrdup("notes"), .seconds = 0.25,
                                   .stats = {.files = 9, .added = 2, .updated = 1, .renamed = 1,
                                             .removed = 3, .unchanged = 2, .skipped = 1}};
    index_update_result r = {.collections = &col, .n_collections = 1, .dropped = 1,
                             .changed = 1, .retokenized = 1, .snapshot = 4242};
    json_t *j = through_text(wire_update_result(&r));
    index_update_result back;
    assert_int_equal(wire_update_result_parse(j, &back), TROVE_OK);
    json_decref(j);
    assert_int_equal(back.n_collections, 1);
    assert_string_equal(back.collections[0].name, "notes");
    assert_memory_equal(&back.collections[0].stats, &col.stats, sizeof col.stats);
    assert_true(back.collections[0].seconds == 0.25);
    assert_int_equal(back.dropped, 1);
    assert_int_equal(back.changed, 1);
    assert_int_equal(back.retokenized, 1);
    assert_int_equal(back.snapshot, 4242);
    index_update_result_free(&back);
    free(col.name);
}

static void test_query_round_trip(void **state)
{
    (void)state;
    api_query_opts o;
    api_query_opts_init(&o);
    o.base.search.query = "errors in rust";
    o.base.search.limit = 7;
    o.no_expand = 1;
    o.candidates = 12;
    o.window_tokens = 100;
    o.reranker = "/m/rerank.gguf";
    json_t *j = through_text(wire_query_opts(&o));
    api_query_opts bo;
    wire_args hold = {0};
    assert_int_equal(wire_query_opts_parse(j, &bo, &hold), TROVE_OK);
    json_decref(j);
    assert_string_equal(bo.base.search.query, "errors in rust");
    assert_int_equal(bo.base.search.limit, 7);
    assert_int_equal(bo.no_expand, 1);
    assert_int_equal(bo.no_rerank, 0);
    assert_int_equal(bo.candidates, 12);
    assert_int_equal(bo.window_tokens, 100);
    assert_string_equal(bo.reranker, "/m/rerank.gguf");
    assert_null(bo.expand_model);
    wire_args_free(&hold);

    /* the answer: results + the pipeline, every double bit for bit */
    search_results r = {0};
    r.items = xcalloc(1, sizeof *r.items);
    r.n = 1;
    r.items[0].collection = xstrdup("c");
    r.items[0].root = xstrdup("/r");
    r.items[0].path = xstrdup("a.md");
    r.items[0].title = xstrdup("A");
    r.items[0].score = 1.0 / 3;
    api_query_info q = {0};
    q.variants[0] = (qp_variant){QP_VAR_ORIGINAL, xstrdup("errors in rust"), 2.0};
    q.variants[1] = (qp_variant){QP_VAR_PRF, xstrdup("rust result \xff"), 1.0};
    q.n_variants = 2;
    q.lists[0] = (qp_list){0, SEARCH_CH_BM25, 2.0};
    q.lists[1] = (qp_list){1, SEARCH_CH_VECTOR, 1.0};
    q.n_lists = 2;
    q.reranker = xstrdup("lexical");   /* owned, as every string of the info */
    q.rerank_warning = xstrdup("cannot use reranker x: no");
    q.n_fused = 30;
    q.n_reranked = 20;
    q.items = xcalloc(1, sizeof *q.items);
    q.n = 1;
    q.items[0] = (qp_cand){.doc_id = 42, .rank = {1, 3}, .quality = {1.0, 0.1 + 0.2},
                           .rrf = 0.0493, .bonus = 0.05, .rrf_rank = 1, .reranked = 1,
                           .rerank_raw = -1.0 / 7, .w_retrieval = 0.875, .title_protected = 1,
                           .final = 0.9 + 1e-16, .search_rank = 2};
    j = through_text(wire_query_result(&r, &q));
    search_results br;
    api_query_info bq;
    assert_int_equal(wire_query_result_parse(j, &br, &bq), TROVE_OK);
    json_decref(j);
    assert_int_equal(br.n, 1);
    assert_memory_equal(&br.items[0].score, &r.items[0].score, sizeof(double));
    assert_int_equal(bq.n_variants, 2);
    assert_int_equal(bq.variants[1].kind, QP_VAR_PRF);
    assert_string_equal(bq.variants[1].text, "rust result \xff");
    assert_int_equal(bq.n_lists, 2);
    assert_int_equal(bq.lists[1].channel, SEARCH_CH_VECTOR);
    assert_string_equal(bq.reranker, "lexical");
    assert_ptr_not_equal(bq.reranker, q.reranker);   /* its own copy */
    assert_string_equal(bq.rerank_warning, q.rerank_warning);
    assert_int_equal(bq.n_fused, 30);
    assert_int_equal(bq.n_reranked, 20);
    assert_int_equal(bq.n, 1);
    assert_memory_equal(&bq.items[0], &q.items[0], offsetof(qp_cand, src));
    api_query_info_free(&bq);
    search_results_free(&br);

    /* a model path comes back owned */
    free(q.reranker);
    q.reranker = xstrdup("/m/rerank.gguf");
    j = through_text(wire_query_result(&r, &q));
    assert_int_equal(wire_query_result_parse(j, &br, &bq), TROVE_OK);
    json_decref(j);
    assert_string_equal(bq.reranker, "/m/rerank.gguf");
    api_query_info_free(&bq);
    search_results_free(&br);
    api_query_info_free(&q);
    search_results_free(&r);
}

static void test_query_bad_pipeline_is_an_error(void **state)
{
    (void)state;
    const char *bad[] = {
        "{\"items\": []}",                                          /* no pipeline */
        "{\"pipeline\": {\"variants\": []}}",
        "{\"pipeline\": {\"variants\": [{\"kind\": 9, \"text\": \"x\"}]}}",
        "{\"pipeline\": {\"variants\": [{\"kind\": 0}]}}",
        "{\"pipeline\": {\"variants\": [{\"kind\": 0, \"text\": \"x\"}], "
        "\"lists\": [{\"variant\": 1, \"channel\": 0}]}}",
        "{\"pipeline\": {\"variants\": [{\"kind\": 0, \"text\": \"x\"}], "
        "\"lists\": [{\"variant\": 0, \"channel\": 7}]}}",
        "{\"pipeline\": {\"variants\": [{\"kind\": 0, \"text\": \"x\"}], "
        "\"items\": [{\"rank\": [1,2,3,4,5,6,7,8,9,10,11,12,13]}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *j = json_loads(bad[i], 0, NULL);
        assert_non_null(j);
        search_results r;
        api_query_info q;
        assert_int_equal(wire_query_result_parse(j, &r, &q), TROVE_EPARSE);
        api_query_info_free(&q);
        search_results_free(&r);
        json_decref(j);
    }
}

/* ---- the tables themselves ---- */

typedef struct span {
    size_t from, to;
} span;

typedef struct spans {
    span s[256];
    size_t n;
} spans;

static void cover(spans *c, size_t from, size_t len)
{
    assert_true(c->n < 256);
    c->s[c->n++] = (span){from, from + len};
}

static void cover_rows(spans *c, const wire_type *t, size_t base)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const wire_field *f = &t->fields[i];
        size_t off = base + f->off, n = f->n ? f->n : 1;
        if (f->kind == WIRE_BYTES || f->kind == WIRE_STRS || f->kind == WIRE_DOUBLES ||
            f->kind == WIRE_ARRAY || f->has_count)
            cover(c, base + f->aux, sizeof(size_t));
        if (f->kind == WIRE_OBJ && f->soa) {
            for (size_t k = 0; k < wire_sub(f)->n_fields; k++)
                cover(c, off + wire_sub(f)->fields[k].off, n * wire_sub(f)->fields[k].size);
        } else if (f->kind == WIRE_OBJ && !wire_sub(f)->size) {
            cover_rows(c, wire_sub(f), off);   /* a view of this struct's members */
        } else if (f->kind == WIRE_OBJ) {
            cover(c, off, n * wire_sub(f)->size);
        } else {
            cover(c, off, n * f->size);
        }
    }
}

static int by_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* Every member of every struct that crosses the wire has a row: the rows
 * cover the struct but for alignment padding (a gap shorter than 8 bytes
 * that ends aligned). A member added without a row leaves a larger gap, or
 * one that is not padding, and fails here. */
/* similar's filters travel as search's (one table, merged in both), and
 * a search option row found among them reads into the search request. */
static void test_similar_filters_round_trip(void **state)
{
    (void)state;
    const char *cols[] = {"notes"}, *where[] = {"status=done", "priority>=2"},
               *tags[] = {"proj/a"}, *langs[] = {"de"};
    api_similar_opts o;
    api_similar_opts_init(&o);
    o.ref = "notes/a.md";
    o.limit = 7;
    o.filter.collections = cols;
    o.filter.n_collections = 1;
    o.filter.where = where;
    o.filter.n_where = 2;
    o.filter.since = "2w";
    o.filter.until = "2026-01-01";
    o.filter.tags = tags;
    o.filter.n_tags = 1;
    o.filter.langs = langs;
    o.filter.n_langs = 1;
    o.filter.folder = "work/";
    o.filter.heading_contains = "Risks";
    o.filter.hide_key = "private";   /* not a filter: stays here */
    const wire_type *t = wire_requests[WIRE_OP_SIMILAR].args;
    json_t *j = through_text(wire_emit(t, &o));
    assert_string_equal(json_string_value(json_object_get(j, "since")), "2w");
    assert_int_equal(json_array_size(json_object_get(j, "where")), 2);
    assert_null(json_object_get(j, "hide_key"));
    assert_null(json_object_get(j, "query"));
    api_similar_opts back;
    wire_args hold = {0};
    assert_int_equal(wire_parse(t, j, &back, &hold), TROVE_OK);
    json_decref(j);
    assert_string_equal(back.ref, "notes/a.md");
    assert_int_equal(back.limit, 7);
    assert_int_equal(back.filter.n_collections, 1);
    assert_string_equal(back.filter.collections[0], "notes");
    assert_int_equal(back.filter.n_where, 2);
    assert_string_equal(back.filter.where[1], "priority>=2");
    assert_string_equal(back.filter.since, "2w");
    assert_string_equal(back.filter.until, "2026-01-01");
    assert_string_equal(back.filter.tags[0], "proj/a");
    assert_string_equal(back.filter.langs[0], "de");
    assert_string_equal(back.filter.folder, "work/");
    assert_string_equal(back.filter.heading_contains, "Risks");
    assert_null(back.filter.hide_key);
    assert_null(back.filter.query);
    wire_args_free(&hold);

    api_search_opts so;
    api_search_opts_init(&so);
    json_t *v = json_string("7d");
    assert_int_equal(wire_search_row("since")->kind, WIRE_STR);
    assert_int_equal(wire_search_row_parse("since", v, &so, &hold), TROVE_OK);
    json_decref(v);
    assert_string_equal(so.search.since, "7d");
    v = json_pack("[s]", "status=done");
    assert_int_equal(wire_search_row_parse("where", v, &so, &hold), TROVE_OK);
    json_decref(v);
    assert_int_equal(so.search.n_where, 1);
    assert_string_equal(so.search.where[0], "status=done");
    wire_args_free(&hold);
}

static void test_tables_cover_their_structs(void **state)
{
    (void)state;
    for (const wire_type *const *t = wire_types; *t; t++) {
        spans c = {.n = 0};
        cover_rows(&c, *t, 0);
        qsort(c.s, c.n, sizeof *c.s, by_start);
        size_t end = 0;
        for (size_t i = 0; i <= c.n; i++) {
            size_t next = i < c.n ? c.s[i].from : (*t)->size;
            if (next > end && (next - end >= 8 || next % 8 != 0)) {
                print_error("%s: bytes %zu..%zu of %zu have no row in its wire table\n",
                            (*t)->what, end, next, (*t)->size);
                fail();
            }
            if (i < c.n && c.s[i].to > end)
                end = c.s[i].to;
        }
        assert_true(end <= (*t)->size);
    }
}

/* The rows' keys are inline arrays (wire.h): a key of exactly
 * WIRE_KEY_MAX characters would compile without its NUL. Every OBJ and
 * ARRAY row names a table, every WIRE_NAME row a names list. */
static void check_rows(const wire_type *t)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const wire_field *f = &t->fields[i];
        if (memchr(f->key, '\0', sizeof f->key) == NULL) {
            print_error("%s: a key of %d bytes or more\n", t->what, WIRE_KEY_MAX);
            fail();
        }
        if (f->kind == WIRE_OBJ || f->kind == WIRE_ARRAY) {
            assert_non_null(wire_sub(f));
            check_rows(wire_sub(f));
        } else {
            assert_null(wire_sub(f));
        }
        if (f->kind == WIRE_NAME)
            assert_non_null(wire_names(f));
    }
}

static void test_rows_are_well_formed(void **state)
{
    (void)state;
    for (const wire_type *const *t = wire_types; *t; t++)
        check_rows(*t);
}

/* A value in every row of t at obj (strings malloc'd: wire_free frees them). */
static void fill(const wire_type *t, void *obj, int *seed);

static void fill_one(const wire_field *f, void *obj, char *p, int *seed)
{
    int k = ++*seed;
    char text[WIRE_KEY_MAX + 16];
    snprintf(text, sizeof text, "%s \xff%d", f->key, k);   /* not UTF-8 either */
    switch (f->kind) {
    case WIRE_STR: *(char **)p = xstrdup(text); break;
    case WIRE_BYTES:
        *(char **)p = xmalloc(4);
        memcpy(*(char **)p, "a\0b", 4);
        *(size_t *)((char *)obj + f->aux) = 3;
        break;
    case WIRE_FIXED: snprintf(p, f->size, "%d", k % 100); break;
    case WIRE_STRS: {
        char **a = xcalloc(3, sizeof *a);
        a[0] = xstrdup(text);
        a[1] = xstrdup("two");
        *(char ***)p = a;
        *(size_t *)((char *)obj + f->aux) = 2;
        break;
    }
    case WIRE_DOUBLES: {   /* as many as the earlier row counted */
        size_t n = *(size_t *)((char *)obj + f->aux);
        double *d = xcalloc(n ? n : 1, sizeof *d);
        for (size_t i = 0; i < n; i++)
            d[i] = k + i + 0.25;
        *(double **)p = d;
        break;
    }
    case WIRE_NAME: *(const char **)p = wire_names(f)[1] ? wire_names(f)[1] : wire_names(f)[0]; break;
    case WIRE_INT: *(int *)p = f->lo < f->hi ? (int)f->hi : k; break;
    case WIRE_LONG: *(long *)p = -k; break;
    case WIRE_I64: *(int64_t *)p = 5000000000LL + k; break;
    case WIRE_SIZE: *(size_t *)p = (size_t)k; break;
    case WIRE_DOUBLE: *(double *)p = k + 1.0 / 3; break;
    case WIRE_OBJ: fill(wire_sub(f), p, seed); break;
    case WIRE_ARRAY: {
        char *items = xcalloc(2, wire_sub(f)->size);
        fill(wire_sub(f), items, seed);
        fill(wire_sub(f), items + wire_sub(f)->size, seed);
        *(char **)p = items;
        *(size_t *)((char *)obj + f->aux) = 2;
        break;
    }
    case WIRE_LOCAL: break;
    }
}

static void fill(const wire_type *t, void *obj, int *seed)
{
    for (size_t i = 0; i < t->n_fields; i++) {
        const wire_field *f = &t->fields[i];
        char *p = (char *)obj + f->off;
        if (!f->n) {
            fill_one(f, obj, p, seed);
            continue;
        }
        for (size_t e = 0; e < f->n; e++) {
            if (f->soa)
                for (size_t k = 0; k < wire_sub(f)->n_fields; k++)
                    fill_one(&wire_sub(f)->fields[k], obj,
                             p + wire_sub(f)->fields[k].off + e * wire_sub(f)->fields[k].size, seed);
            else
                fill_one(f, obj, p + e * (f->kind == WIRE_OBJ ? wire_sub(f)->size : f->size), seed);
        }
        if (f->has_count)
            *(size_t *)((char *)obj + f->aux) = f->n;
    }
}

static char *dump(json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(s);
    return s;
}

/* Every row of every table filled, encoded, sent as text, decoded and
 * encoded again: the same JSON, and no row left at its zero value. */
static void test_every_row_round_trips(void **state)
{
    (void)state;
    for (const wire_type *const *t = wire_types; *t; t++) {
        void *a = xcalloc(1, (*t)->size), *b = xcalloc(1, (*t)->size);
        int seed = 0;
        if ((*t)->init)
            (*t)->init(a);
        if ((*t)->is_null) {   /* its null form: from init; free that first */
            wire_free(*t, a);
            memset(a, 0, (*t)->size);
        }
        fill(*t, a, &seed);
        json_t *j = wire_emit(*t, a);
        char *first = dump(j);
        json_t *back = through_text(j);
        wire_args hold = {0};
        int is_args = (*t)->init && !(*t)->is_null;   /* request arguments: held strings */
        if (wire_parse(*t, back, b, is_args ? &hold : NULL) != TROVE_OK) {
            print_error("%s: %s\n", (*t)->what, trove_errmsg());
            fail();
        }
        json_decref(back);
        json_t *again = wire_emit(*t, b);
        char *second = dump(again);
        json_decref(again);
        assert_string_equal(first, second);
        assert_null(strstr(first, ":0,"));   /* every row was filled */
        assert_null(strstr(first, ":null"));
        free(first);
        free(second);
        wire_free(*t, a);
        if (!is_args)
            wire_free(*t, b);
        wire_args_free(&hold);
        free(a);
        free(b);
    }
}

/* A front end's view: the rows it picks, renamed and prefixed, its own
 * keys (left out when own() gives NULL), translations by a sub view. */
static json_t *upper_text(const char *s, size_t len)
{
    char *u = xstrndup(s, len);
    for (char *p = u; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    json_t *j = json_string(u);
    free(u);
    return j;
}

static json_t *view_own(const void *obj, const char *key, void *ctx)
{
    (void)obj;
    return strcmp(key, "mine") == 0 ? json_integer(*(int *)ctx) : NULL;
}

static void test_view_picks_rows(void **state)
{
    (void)state;
    static const wire_pick alt_picks[] = {WIRE_PICK("path")};
    static const wire_view alt_view = {alt_picks, 1, upper_text, view_own};
    static const wire_pick picks[] = {
        WIRE_PICK("docid", .prefix = "#"), WIRE_AS("start_line", "line_start"), WIRE_OWN("mine"),
        WIRE_OWN("absent"), WIRE_PICK("tags"), WIRE_PICK("also_in", .sub = &alt_view),
    };
    static const wire_view view = {picks, sizeof picks / sizeof *picks, upper_text, view_own};
    char *tags[] = {"x", "y"};
    search_alt alt = {.path = "de/a.md"};
    search_result r = {.docid = "0123abcd", .line_start = 7, .tags = tags, .n_tags = 2,
                       .also_in = &alt, .n_also_in = 1};
    int mine = 42;
    json_t *j = wire_emit_view(&wire_result_type, &r, &view, &mine);
    char *s = json_dumps(j, JSON_COMPACT);
    assert_string_equal(s, "{\"docid\":\"#0123ABCD\",\"start_line\":7,\"mine\":42,\"tags\":[\"X\",\"Y\"],"
                           "\"also_in\":[{\"path\":\"DE/A.MD\"}]}");
    free(s);
    json_decref(j);
}

/* Every op has its row: a name found again, and an answer table for each
 * api call; every argument and answer table is one the tests walk. */
static void test_requests_table(void **state)
{
    (void)state;
    for (int op = 0; op < WIRE_N_OPS; op++) {
        const wire_request *q = &wire_requests[op];
        assert_non_null(q->op);
        assert_int_equal(wire_op_find(q->op), op);
        assert_true(!q->call == !q->result);
        for (int k = 0; k < 2; k++) {
            const wire_type *t = k ? q->result : q->args;
            int walked = !t;
            for (const wire_type *const *w = wire_types; *w && !walked; w++)
                walked = *w == t;
            assert_true(walked);
        }
    }
    assert_int_equal(wire_op_find("nope"), -1);
    assert_string_equal(wire_code_name(TROVE_ENOENT), "ENOENT");
    assert_int_equal(wire_code_from_name("EMISMATCH"), WIRE_EMISMATCH);
    assert_int_equal(wire_code_from_name("E?"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_cover_their_structs),
        cmocka_unit_test(test_rows_are_well_formed),
        cmocka_unit_test(test_every_row_round_trips),
        cmocka_unit_test(test_view_picks_rows),
        cmocka_unit_test(test_requests_table),
        cmocka_unit_test(test_search_results_round_trip),
        cmocka_unit_test(test_search_opts_round_trip),
        cmocka_unit_test(test_similar_filters_round_trip),
        cmocka_unit_test(test_bad_input_is_an_error),
        cmocka_unit_test(test_status_snapshot_round_trip),
        cmocka_unit_test(test_status_skipped_round_trip),
        cmocka_unit_test(test_update_result_round_trip),
        cmocka_unit_test(test_query_round_trip),
        cmocka_unit_test(test_query_bad_pipeline_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
