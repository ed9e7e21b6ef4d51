#include "util/pool.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "util/mem.h"
#include "util/thread.h"

#define POOL_MAX_WORKERS 64

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct pool {
    pthread_mutex_t mu;
    pthread_cond_t work;      /* a job was queued, or stopping (under mu) */
    pthread_cond_t done;      /* a worker finished a job (under mu) */
    pool_job *head, *tail;    /* queued jobs, oldest first */
    int stopping;
    int n;
    pthread_t tid[POOL_MAX_WORKERS];
    pool_stats stats;
};

/* The oldest queued job, taken off the queue (under mu). */
static pool_job *take_first(pool *p)
{
    pool_job *j = p->head;
    if (j) {
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        j->next = NULL;
    }
    return j;
}

/* j off the queue, wherever it is (under mu; it is queued). */
static void unlink_job(pool *p, pool_job *j)
{
    pool_job *prev = NULL;
    for (pool_job *at = p->head; at; prev = at, at = at->next) {
        if (at != j)
            continue;
        if (prev)
            prev->next = j->next;
        else
            p->head = j->next;
        if (p->tail == j)
            p->tail = prev;
        j->next = NULL;
        return;
    }
}

static void *worker_main(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        pool_job *j = take_first(p);
        if (!j) {
            if (p->stopping)
                break;
            pthread_cond_wait(&p->work, &p->mu);
            continue;
        }
        j->state = JOB_RUNNING;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        pthread_mutex_lock(&p->mu);
        j->state = JOB_DONE;
        p->stats.by_worker++;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

pool *pool_new(int workers)
{
    pool *p = xcalloc(1, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    if (workers > POOL_MAX_WORKERS)
        workers = POOL_MAX_WORKERS;
    for (int i = 0; i < workers; i++) {
        /* Ctrl-C and the like stay with the threads that handle them */
        if (thread_start(&p->tid[p->n], worker_main, p) != 0)
            break;   /* as many as could start: pool_wait runs what none takes */
        p->n++;
    }
    return p;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int pool_workers(const pool *p)
{
    return p ? p->n : 0;
}

void pool_submit(pool *p, pool_job *j, void (*fn)(void *arg), void *arg)
{
    j->fn = fn;
    j->arg = arg;
    j->next = NULL;
    j->state = JOB_QUEUED;
    if (!p || !p->n)
        return;   /* pool_wait runs it */
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

void pool_wait(pool *p, pool_job *j)
{
    if (!p || !p->n) {
        if (j->state == JOB_QUEUED)
            j->fn(j->arg);
        j->state = JOB_DONE;
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (j->state == JOB_QUEUED) {
        /* no worker took it: run it here rather than wait for one */
        unlink_job(p, j);
        j->state = JOB_RUNNING;
        p->stats.by_waiter++;
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg);
        pthread_mutex_lock(&p->mu);
        j->state = JOB_DONE;
    }
    while (j->state != JOB_DONE)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void pool_stats_get(pool *p, pool_stats *out)
{
    if (!p) {
        *out = (pool_stats){0, 0};
        return;
    }
    pthread_mutex_lock(&p->mu);
    *out = p->stats;
    pthread_mutex_unlock(&p->mu);
}
