#include "util/testhold.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void test_hold(const char *point)
{
    const char *dir = getenv("TROVE_TEST_HOLD");
    if (!dir || !*dir)
        return;
    char path[4096], waiting[4200];
    snprintf(path, sizeof path, "%s/%s", dir, point);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return;
    snprintf(waiting, sizeof waiting, "%s.waiting", path);
    int fd = open(waiting, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 120 * 200 && stat(path, &sb) == 0; i++)
        nanosleep(&tick, NULL);
}
