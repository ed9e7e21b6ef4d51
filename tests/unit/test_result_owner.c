/* Ownership of answers: every string of a search_results and of an
 * api_query_info is owned by it, so an answer outlives the handle (and the
 * config) it came from — the daemon closes and reopens a handle when the
 * config file changes while earlier answers may still be held. Run under
 * ASan: a borrowed string would be read after it was freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/wire.h"
#include "testutil.h"
#include "util/fsutil.h"

static char dir[160];
static char vault[PATH_MAX + 16];
static char index_path[PATH_MAX + 32];

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/trove-test-owner.XXXXXX", real[PATH_MAX];
    if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof dir - 1)
        return -1;
    snprintf(dir, sizeof dir, "%s", real);
    snprintf(vault, sizeof vault, "%s/vault", dir);
    snprintf(index_path, sizeof index_path, "%s/state/index.db", dir);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/birds/finch.md", vault);
    if (fs_mkdir_parents(path) != 0)
        return -1;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs("# Finch\n\nThe zebrafinch sings.\n", f);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

static api *open_api(const char *context)
{
    config cfg = {0};
    config_add_collection(&cfg, "v", vault, NULL, 0, NULL, 0);
    config_add_context(&cfg, "v", context);
    config_add_context(&cfg, "v/birds", "notes about birds");
    api *a;
    assert_int_equal(api_open_config(index_path, &cfg, &a), TROVE_OK);
    return a;
}

static void test_results_outlive_their_config(void **state)
{
    (void)state;
    api *a = open_api("the whole vault");
    api_update_opts uo;
    api_update_opts_init(&uo);
    index_update_result ur;
    assert_int_equal(api_update(a, &uo, &ur), TROVE_OK);
    index_update_result_free(&ur);

    api_search_opts o;
    api_search_opts_init(&o);
    o.search.query = "zebrafinch";
    search_results r;
    assert_int_equal(api_search(a, &o, &r), TROVE_OK);
    assert_int_equal(r.n, 1);

    api_query_opts qo;
    api_query_opts_init(&qo);
    qo.base.search.query = "zebrafinch";
    qo.no_rerank = 1;
    search_results qr;
    api_query_info info;
    assert_int_equal(api_query(a, &qo, &qr, &info), TROVE_OK);

    /* The daemon's reload: the handle and its config go, answers stay. */
    api_close(a);
    a = open_api("a different line after the reload");

    assert_int_equal(r.items[0].n_context, 2);
    assert_string_equal(r.items[0].context[0], "the whole vault");
    assert_string_equal(r.items[0].context[1], "notes about birds");
    assert_true(qr.n >= 1);
    assert_string_equal(qr.items[0].context[0], "the whole vault");
    assert_string_equal(info.reranker, "none");

    /* Through the wire and back: the decoded answer owns its strings too. */
    json_t *j = wire_query_result(&qr, &info);
    search_results dr;
    api_query_info dinfo;
    assert_int_equal(wire_query_result_parse(j, &dr, &dinfo), TROVE_OK);
    json_decref(j);
    search_results_free(&qr);
    api_query_info_free(&info);
    assert_string_equal(dr.items[0].context[1], "notes about birds");
    assert_string_equal(dinfo.reranker, "none");
    search_results_free(&dr);
    api_query_info_free(&dinfo);

    search_results_free(&r);
    api_close(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_outlive_their_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
