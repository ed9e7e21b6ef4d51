/* pool — a few worker threads started once and parked until there is
 * work, for a resident process (the daemon) that splits each request
 * into parts run side by side: a thread started and ended per request
 * cost ~5% of the daemon's time (docs/performance.md, session 33).
 *
 * A job is submitted, then waited for by its submitter. Waiting for a job
 * no worker has taken yet takes it back and runs it on the waiting thread,
 * so a job never waits for a busy pool, a pool without workers (NULL, or
 * one whose threads could not start) runs every job in pool_wait, and a
 * job may submit and wait for jobs of its own without deadlock.
 *
 * Jobs report their errors through what their argument points to; the
 * pool only runs them. Every job submitted must be waited for.
 *
 * Ownership: the caller owns each pool_job (on its stack, typically) from
 * pool_submit until pool_wait returns, and the argument as long. The
 * creator frees the pool once no job of it is pending. */
#ifndef TROVE_POOL_H
#define TROVE_POOL_H

typedef struct pool pool;

typedef struct pool_job {
    void (*fn)(void *arg);
    void *arg;
    /* the pool's own: */
    int state;                /* queued, running, done */
    struct pool_job *next;    /* the queue's */
} pool_job;

/* Up to `workers` threads (at most 64; fewer when one cannot start:
 * pool_workers() says how many). */
pool *pool_new(int workers);
/* Stops the workers and joins them: no job may be pending. NULL is fine. */
void pool_free(pool *p);
int pool_workers(const pool *p);

/* fn(arg) queued for a worker; p NULL: run when waited for. */
void pool_submit(pool *p, pool_job *j, void (*fn)(void *arg), void *arg);
/* Returns once j ran: on this thread when no worker had taken it. */
void pool_wait(pool *p, pool_job *j);

typedef struct pool_stats {
    long by_worker;           /* jobs a worker ran */
    long by_waiter;           /* jobs their waiter took back and ran */
} pool_stats;
void pool_stats_get(pool *p, pool_stats *out);

#endif
