/* thread — threads that leave the process's asynchronous signals to the
 * thread that started them.
 *
 * A handler for Ctrl-C (SIGINT, SIGTERM and the like) sets a flag that the
 * starting thread checks, and a signal interrupts the system call of
 * whichever thread it is delivered to: a helper thread started with
 * thread_start() has those signals blocked, so they go to the caller's
 * thread as if there were no helper. Faults (SIGSEGV, SIGBUS, ...) stay
 * unblocked, so a crash handler still runs. */
#ifndef TROVE_THREAD_H
#define TROVE_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) with the asynchronous signals blocked
 * in the new thread; its result (0: started). */
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
