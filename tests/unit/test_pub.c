/* publish: the _bulk response parser (documented shapes, partial failures,
 * malformed answers), the batcher's bounds and subsets, backoff, chunk ids,
 * index names, Retry-After. (Sending is tested end to end against a
 * loopback server in tests/e2e/test_publish.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "fetch/fetch.h"
#include "publish/pub.h"

static trove_err parse(const char *s, pub_bulk_resp *r)
{
    return pub_bulk_response_parse(s, strlen(s), r);
}

static void test_bulk_response_ok(void **state)
{
    (void)state;
    pub_bulk_resp r;
    assert_int_equal(parse("{\"took\":30,\"errors\":false,\"items\":["
                           "{\"index\":{\"_index\":\"t\",\"_id\":\"a-0\",\"_version\":1,"
                           "\"result\":\"created\",\"status\":201}},"
                           "{\"delete\":{\"_index\":\"t\",\"_id\":\"b-1\",\"result\":"
                           "\"not_found\",\"status\":404}}]}", &r), TROVE_OK);
    assert_int_equal(r.errors, 0);
    assert_int_equal(r.n, 2);
    assert_string_equal(r.items[0].op, "index");
    assert_string_equal(r.items[0].id, "a-0");
    assert_int_equal(r.items[0].status, 201);
    assert_null(r.items[0].error);
    assert_true(pub_item_done(&r.items[0]));
    /* deleting what is not there is done too */
    assert_true(pub_item_done(&r.items[1]));
    pub_bulk_resp_free(&r);
}

static void test_bulk_response_partial(void **state)
{
    (void)state;
    pub_bulk_resp r;
    assert_int_equal(parse("{\"took\":3,\"errors\":true,\"items\":["
                           "{\"index\":{\"_id\":\"a-0\",\"status\":429,\"error\":{\"type\":"
                           "\"es_rejected_execution_exception\",\"reason\":\"queue full\"}}},"
                           "{\"index\":{\"_id\":\"a-1\",\"status\":400,\"error\":{\"type\":"
                           "\"mapper_parsing_exception\",\"reason\":\"bad date\"}}},"
                           "{\"create\":{\"_id\":\"a-2\",\"status\":409,\"error\":{\"type\":"
                           "\"version_conflict_engine_exception\"}}},"
                           "{\"index\":{\"_id\":\"a-3\",\"status\":200}}]}", &r), TROVE_OK);
    assert_int_equal(r.errors, 1);
    assert_int_equal(r.n, 4);
    assert_false(pub_item_done(&r.items[0]));
    assert_true(pub_status_retryable(r.items[0].status));
    assert_string_equal(r.items[0].error, "es_rejected_execution_exception: queue full");
    assert_false(pub_status_retryable(r.items[1].status));
    assert_string_equal(r.items[1].error, "mapper_parsing_exception: bad date");
    assert_string_equal(r.items[2].error, "version_conflict_engine_exception: (no reason given)");
    assert_false(pub_item_done(&r.items[2]));
    assert_true(pub_item_done(&r.items[3]));
    pub_bulk_resp_free(&r);
}

static void test_bulk_response_malformed(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "[]", "{}", "{\"errors\":false}", "{\"errors\":0,\"items\":[]}",
        "{\"errors\":false,\"items\":[1]}",
        "{\"errors\":false,\"items\":[{\"index\":{}}]}",
        "{\"errors\":false,\"items\":[{\"index\":{\"status\":99}}]}",
        "{\"errors\":false,\"items\":[{\"upsert\":{\"status\":200}}]}",
        "{\"errors\":false,\"items\":[{\"index\":{\"status\":200},\"delete\":{\"status\":200}}]}",
        "{\"errors\":false,\"errors\":true,\"items\":[]}",
        "{\"errors\":false,\"items\":[{\"index\":{\"status\":201,\"_id\":\"x\"}},{\"index\":7}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pub_bulk_resp r;
        assert_int_equal(parse(bad[i], &r), TROVE_EPARSE);
        assert_int_equal(r.n, 0);
        assert_null(r.items);
    }
}

typedef struct flushed {
    size_t batches, actions, max_bytes;
} flushed;

static trove_err count_flush(void *ctx, pub_batch *b)
{
    flushed *f = ctx;
    f->batches++;
    f->actions += b->n;
    if (b->body.len > f->max_bytes)
        f->max_bytes = b->body.len;
    assert_int_equal(b->off[0], 0);
    assert_int_equal(b->off[b->n], b->body.len);
    assert_int_equal(b->body.data[b->body.len - 1], '\n');
    return TROVE_OK;
}

static void test_batches_are_bounded(void **state)
{
    (void)state;
    flushed f = {0};
    pub_bulk w;
    pub_bulk_init(&w, 200, 3, count_flush, &f);
    for (int i = 0; i < 10; i++) {
        char id[32];
        pub_chunk_id("0123abcd", i, id);
        assert_int_equal(pub_bulk_index(&w, id, "{\"text\":\"some words here\"}"), TROVE_OK);
    }
    assert_int_equal(pub_bulk_delete(&w, "0123abcd-10"), TROVE_OK);
    assert_int_equal(pub_bulk_finish(&w), TROVE_OK);
    assert_int_equal(f.actions, 11);
    assert_int_equal(f.batches, 4);   /* 3 + 3 + 3 + 2 */
    assert_true(f.max_bytes <= 200);
    /* many actions in one batch: its arrays grow together (they once
     * grew apart past 8 and overflowed) */
    memset(&f, 0, sizeof f);
    pub_bulk_init(&w, 1u << 20, 1000, count_flush, &f);
    for (int i = 0; i < 100; i++) {
        char id[32];
        pub_chunk_id("0123abcd", i, id);
        assert_int_equal(i % 3 ? pub_bulk_index(&w, id, "{}") : pub_bulk_delete(&w, id),
                         TROVE_OK);
    }
    assert_int_equal(pub_bulk_finish(&w), TROVE_OK);
    assert_int_equal(f.batches, 1);
    assert_int_equal(f.actions, 100);
    /* one action larger than the byte bound goes alone */
    memset(&f, 0, sizeof f);
    pub_bulk_init(&w, 10, 100, count_flush, &f);
    assert_int_equal(pub_bulk_index(&w, "a-0", "{\"text\":\"longer than ten bytes\"}"), TROVE_OK);
    assert_int_equal(pub_bulk_index(&w, "a-1", "{}"), TROVE_OK);
    assert_int_equal(pub_bulk_finish(&w), TROVE_OK);
    assert_int_equal(f.batches, 2);
}

static pub_batch kept;

static trove_err keep_flush(void *ctx, pub_batch *b)
{
    (void)ctx;
    size_t all[3] = {2, 0, 1};
    pub_batch_subset(b, all, 3, &kept);
    return TROVE_OK;
}

static void test_batch_subset(void **state)
{
    (void)state;
    pub_bulk w;
    pub_bulk_init(&w, 0, 0, keep_flush, NULL);
    pub_bulk_index(&w, "a-0", "{\"n\":0}");
    pub_bulk_delete(&w, "a-1");
    pub_bulk_index(&w, "a-2", "{\"n\":2}");
    pub_bulk_finish(&w);
    assert_int_equal(kept.n, 3);
    assert_string_equal(kept.ids[0], "a-2");
    assert_true(kept.is_delete[2]);
    const char *want = "{\"index\":{\"_id\":\"a-2\"}}\n{\"n\":2}\n"
                       "{\"index\":{\"_id\":\"a-0\"}}\n{\"n\":0}\n"
                       "{\"delete\":{\"_id\":\"a-1\"}}\n";
    assert_int_equal(kept.body.len, strlen(want));
    assert_memory_equal(kept.body.data, want, strlen(want));
    pub_batch_free(&kept);
}

static void test_backoff(void **state)
{
    (void)state;
    assert_true(pub_backoff(1, 0.5, 30, -1) == 0.5);
    assert_true(pub_backoff(2, 0.5, 30, -1) == 1.0);
    assert_true(pub_backoff(4, 0.5, 30, -1) == 4.0);
    assert_true(pub_backoff(40, 0.5, 30, -1) == 30.0);
    assert_true(pub_backoff(1, 0.5, 30, 7) == 7.0);      /* Retry-After wins */
    assert_true(pub_backoff(1, 0.5, 30, 3600) == 30.0);  /* capped */
    assert_int_equal(fetch_parse_retry_after(" 120\r\n", 6), 120);
    assert_int_equal(fetch_parse_retry_after("0", 1), 0);
    assert_int_equal(fetch_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 29), -1);
    assert_int_equal(fetch_parse_retry_after("-1", 2), -1);
    assert_int_equal(fetch_parse_retry_after("99999999999999999999", 20), -1);
}

static void test_names(void **state)
{
    (void)state;
    char id[32];
    pub_chunk_id("75f0eb7e", 12, id);
    assert_string_equal(id, "75f0eb7e-12");
    assert_int_equal(api_publish_index_check("notes-2026"), TROVE_OK);
    static const char *const bad[] = {"", "Notes", "a b", "_x", "-x", "+x", ".", "..", "a/b",
                                      "a*b", "a,b", "a#b", "a:b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(api_publish_index_check(bad[i]), TROVE_EUSAGE);
    char *name = pub_pipeline_name("notes");
    assert_string_equal(name, "notes-hybrid");
    free(name);
    assert_string_equal(pub_lang_analyzer("de"), "german");
    assert_string_equal(pub_lang_analyzer("zh"), "cjk");
    assert_null(pub_lang_analyzer("xx"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_response_ok),
        cmocka_unit_test(test_bulk_response_partial),
        cmocka_unit_test(test_bulk_response_malformed),
        cmocka_unit_test(test_batches_are_bounded),
        cmocka_unit_test(test_batch_subset),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
