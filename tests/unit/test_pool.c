/* pool: workers start and stop, many jobs from several submitters all run
 * exactly once, a job waited for before any worker took it runs on the
 * waiter, jobs that submit jobs of their own, a pool without workers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "util/pool.h"

typedef struct counter {
    atomic_int runs;
    atomic_int *total;
    pthread_t ran_on;
} counter;

static void count(void *arg)
{
    counter *c = arg;
    atomic_fetch_add(&c->runs, 1);
    if (c->total)
        atomic_fetch_add(c->total, 1);
    c->ran_on = pthread_self();
}

static void test_start_stop(void **state)
{
    (void)state;
    for (int n = 0; n <= 4; n++) {
        pool *p = pool_new(n);
        assert_int_equal(pool_workers(p), n);
        pool_free(p);
    }
    pool_free(NULL);
    assert_int_equal(pool_workers(NULL), 0);
}

static void test_many_jobs(void **state)
{
    (void)state;
    pool *p = pool_new(3);
    enum { N = 2000 };
    static pool_job jobs[N];
    static counter c[N];
    atomic_int total = 0;
    for (int round = 0; round < 3; round++) {
        memset(c, 0, sizeof c);
        for (int i = 0; i < N; i++) {
            c[i].total = &total;
            pool_submit(p, &jobs[i], count, &c[i]);
        }
        for (int i = N - 1; i >= 0; i--)   /* some taken back, most not */
            pool_wait(p, &jobs[i]);
        for (int i = 0; i < N; i++)
            assert_int_equal(c[i].runs, 1);
    }
    assert_int_equal(total, 3 * N);
    pool_stats st;
    pool_stats_get(p, &st);
    assert_int_equal(st.by_worker + st.by_waiter, 3 * N);
    pool_free(p);
}

/* Without workers every job runs in pool_wait, on the waiting thread. */
static void test_no_workers(void **state)
{
    (void)state;
    pool *pools[2] = {NULL, pool_new(0)};
    for (int k = 0; k < 2; k++) {
        pool_job j;
        counter c = {0};
        pool_submit(pools[k], &j, count, &c);
        assert_int_equal(c.runs, 0);
        pool_wait(pools[k], &j);
        assert_int_equal(c.runs, 1);
        assert_true(pthread_equal(c.ran_on, pthread_self()));
    }
    pool_free(pools[1]);
}

/* A job that waits on a busy pool's jobs of its own: the waiter runs them. */
typedef struct nest {
    pool *p;
    int depth;
    atomic_int *leaves;
} nest;

static void nested(void *arg)
{
    nest *n = arg;
    if (n->depth == 0) {
        atomic_fetch_add(n->leaves, 1);
        return;
    }
    pool_job j[3];
    nest kid[3];
    for (int i = 0; i < 3; i++) {
        kid[i] = (nest){n->p, n->depth - 1, n->leaves};
        pool_submit(n->p, &j[i], nested, &kid[i]);
    }
    for (int i = 0; i < 3; i++)
        pool_wait(n->p, &j[i]);
}

static void test_nested(void **state)
{
    (void)state;
    for (int workers = 0; workers <= 2; workers++) {
        pool *p = pool_new(workers);
        atomic_int leaves = 0;
        nest top = {p, 5, &leaves};
        pool_job j;
        pool_submit(p, &j, nested, &top);
        pool_wait(p, &j);
        assert_int_equal(leaves, 243);
        pool_free(p);
    }
}

/* Several threads submit and wait on one pool at once (the daemon's
 * connections). */
typedef struct submitter {
    pool *p;
    atomic_int *total;
} submitter;

static void *submit_many(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < 500; i++) {
        pool_job j[2];
        counter c[2] = {{0}, {0}};
        for (int k = 0; k < 2; k++) {
            c[k].total = s->total;
            pool_submit(s->p, &j[k], count, &c[k]);
        }
        for (int k = 0; k < 2; k++)
            pool_wait(s->p, &j[k]);
        if (c[0].runs != 1 || c[1].runs != 1)
            atomic_fetch_add(s->total, 1000000);
    }
    return NULL;
}

static void test_concurrent_submitters(void **state)
{
    (void)state;
    pool *p = pool_new(2);
    atomic_int total = 0;
    submitter s = {p, &total};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, submit_many, &s), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(total, 4 * 500 * 2);
    pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_stop),
        cmocka_unit_test(test_many_jobs),
        cmocka_unit_test(test_no_workers),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_concurrent_submitters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
