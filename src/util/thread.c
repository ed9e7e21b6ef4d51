/* thread — see thread.h. */
#include "util/thread.h"

#include <signal.h>
#include <stddef.h>

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    static const int async_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM,
                                        SIGCHLD, SIGUSR1, SIGUSR2, SIGWINCH};
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof async_signals / sizeof *async_signals; i++)
        sigaddset(&block, async_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
