/* store statements: the cache by SQL text (store_stmt_get/put) never
 * evicts or finalizes a statement that is checked out, however many are
 * held at once; store_each steps, checks and hands back; store_step never
 * takes an error for the end of the rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "testutil.h"

static char dir[64];
static store *st;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-stmt.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.db", dir);
    return store_open(path, 0, &st) == TROVE_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    return tu_rm_rf(dir);
}

/* Is s among the connection's statements (not finalized)? */
static int alive(sqlite3_stmt *s)
{
    for (sqlite3_stmt *x = sqlite3_next_stmt(store_db(st), NULL); x;
         x = sqlite3_next_stmt(store_db(st), x))
        if (x == s)
            return 1;
    return 0;
}

/* Distinct texts: "SELECT <i>, ?1". */
static void sql_of(int i, char *out, size_t cap)
{
    snprintf(out, cap, "SELECT %d, ?1", i);
}

static void test_held_statements_survive_a_full_cache(void **state)
{
    (void)state;
    enum { N = STORE_STMT_CACHE * 2 + 3 };
    sqlite3_stmt *held[N];
    char sql[64];
    /* Hold more statements than the cache has slots, all at once, the way a
     * caller holds a list query and an insert (store_snap.c) while other
     * code runs further statements. */
    for (int i = 0; i < N; i++) {
        sql_of(i, sql, sizeof sql);
        held[i] = store_stmt_get(st, sql);
        assert_non_null(held[i]);
        sqlite3_bind_int(held[i], 1, i * 10);
    }
    /* Hand back every other one, then make the cache evict: many more
     * texts, each got and put back at once. */
    for (int i = 1; i < N; i += 2)
        store_stmt_put(st, held[i]);
    for (int i = N; i < N + 3 * STORE_STMT_CACHE; i++) {
        sql_of(i, sql, sizeof sql);
        sqlite3_stmt *s = store_stmt_get(st, sql);
        assert_non_null(s);
        store_stmt_put(st, s);
    }
    for (int i = 1; i < N; i += 2) {
        sql_of(i, sql, sizeof sql);
        held[i] = store_stmt_get(st, sql);
        sqlite3_bind_int(held[i], 1, i * 10);
    }
    /* Every one is still alive, bound and answering its own SQL. */
    for (int i = 0; i < N; i++) {
        assert_true(alive(held[i]));
        sql_of(i, sql, sizeof sql);
        assert_string_equal(sqlite3_sql(held[i]), sql);
        trove_err rc = TROVE_OK;
        assert_int_equal(store_step(st, held[i], "test", &rc), 1);
        assert_int_equal(sqlite3_column_int(held[i], 0), i);
        assert_int_equal(sqlite3_column_int(held[i], 1), i * 10);
        assert_int_equal(store_step(st, held[i], "test", &rc), 0);
        assert_int_equal(rc, TROVE_OK);
    }
    for (int i = 0; i < N; i++)
        store_stmt_put(st, held[i]);
    /* Back in the cache: the next get of a text is reset and unbound. */
    sql_of(1, sql, sizeof sql);
    sqlite3_stmt *s = store_stmt_get(st, sql);
    assert_non_null(s);
    trove_err rc = TROVE_OK;
    assert_int_equal(store_step(st, s, "test", &rc), 1);
    assert_int_equal(sqlite3_column_type(s, 1), SQLITE_NULL);
    store_stmt_put(st, s);
}

static void test_nested_use_of_one_text(void **state)
{
    (void)state;
    static const char sql[] = "SELECT value FROM (SELECT 1 AS value UNION ALL SELECT 2)";
    sqlite3_stmt *outer = store_stmt_get(st, sql);
    trove_err rc = TROVE_OK;
    assert_int_equal(store_step(st, outer, "outer", &rc), 1);
    /* The same text while the first is out: another statement. */
    sqlite3_stmt *inner = store_stmt_get(st, sql);
    assert_non_null(inner);
    assert_ptr_not_equal(inner, outer);
    assert_int_equal(store_step(st, inner, "inner", &rc), 1);
    assert_int_equal(sqlite3_column_int(inner, 0), 1);
    store_stmt_put(st, inner);
    /* the outer one carries on where it was */
    assert_int_equal(store_step(st, outer, "outer", &rc), 1);
    assert_int_equal(sqlite3_column_int(outer, 0), 2);
    assert_int_equal(store_step(st, outer, "outer", &rc), 0);
    store_stmt_put(st, outer);
}

typedef struct sum_ctx {
    int bound, sum, rows, stop_at;
} sum_ctx;

static void bind_sum(void *ctx, sqlite3_stmt *s)
{
    sqlite3_bind_int(s, 1, ((sum_ctx *)ctx)->bound);
}

static trove_err row_sum(void *ctx, sqlite3_stmt *s)
{
    sum_ctx *c = ctx;
    c->sum += sqlite3_column_int(s, 0);
    if (++c->rows == c->stop_at)
        return trove_fail(TROVE_ERANGE, "enough rows");
    return TROVE_OK;
}

static void test_each(void **state)
{
    (void)state;
    static const char sql[] = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n"
                              " WHERE x < ?1) SELECT x FROM n";
    sum_ctx c = {.bound = 10};
    assert_int_equal(store_each(st, sql, "counting", bind_sum, row_sum, &c), TROVE_OK);
    assert_int_equal(c.sum, 55);
    /* A row function's error stops the loop and is the result. */
    c = (sum_ctx){.bound = 10, .stop_at = 3};
    assert_int_equal(store_each(st, sql, "counting", bind_sum, row_sum, &c), TROVE_ERANGE);
    assert_int_equal(c.rows, 3);
    /* and the statement went back: it runs again from the start */
    c = (sum_ctx){.bound = 4};
    assert_int_equal(store_each(st, sql, "counting", bind_sum, row_sum, &c), TROVE_OK);
    assert_int_equal(c.sum, 10);
    /* SQL that does not compile */
    assert_int_equal(store_each(st, "SELECT FROM nowhere", "a typo", NULL, NULL, NULL), TROVE_ESQL);
    assert_non_null(strstr(trove_errmsg(), "a typo"));
}

static int stop_now(void *ctx)
{
    (void)ctx;
    return 1;
}

static void test_step_error_is_not_the_end(void **state)
{
    (void)state;
    sum_ctx c = {.bound = 1000};
    sqlite3_progress_handler(store_db(st), 1, stop_now, NULL);
    trove_err rc = store_each(st, "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n"
                              " WHERE x < ?1) SELECT x FROM n", "counting", bind_sum, row_sum, &c);
    sqlite3_progress_handler(store_db(st), 0, NULL, NULL);
    assert_int_equal(rc, TROVE_ESQL);
    assert_non_null(strstr(trove_errmsg(), "counting"));
    assert_non_null(strstr(trove_errmsg(), "interrupted"));
    /* The store's own lists report it too, and hand back nothing. */
    sqlite3_progress_handler(store_db(st), 1, stop_now, NULL);
    store_collection_row *cols = (void *)1;
    size_t n = 7;
    rc = store_collections(st, &cols, &n);
    sqlite3_progress_handler(store_db(st), 0, NULL, NULL);
    assert_int_equal(rc, TROVE_ESQL);
    assert_null(cols);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_statements_survive_a_full_cache),
        cmocka_unit_test(test_nested_use_of_one_text),
        cmocka_unit_test(test_each),
        cmocka_unit_test(test_step_error_is_not_the_end),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
