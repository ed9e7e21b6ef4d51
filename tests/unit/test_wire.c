/* wire: the daemon's JSON form of the api structs round-trips exactly
 * (what lets `trove search` print the same bytes through a daemon). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_results_round_trip),
        cmocka_unit_test(test_search_opts_round_trip),
        cmocka_unit_test(test_bad_input_is_an_error),
        cmocka_unit_test(test_status_snapshot_round_trip),
        cmocka_unit_test(test_status_skipped_round_trip),
        cmocka_unit_test(test_update_result_round_trip),
        cmocka_unit_test(test_query_round_trip),
        cmocka_unit_test(test_query_bad_pipeline_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
