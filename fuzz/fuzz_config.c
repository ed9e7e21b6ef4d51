/* Fuzz target: the config.yaml reader (libyaml + our tree walk). Loads the
 * input as a config file and queries contexts of every collection. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trove-config", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    config cfg;
    if (config_load_file(&cfg, path) == TROVE_OK) {
        for (size_t i = 0; i < cfg.n_collections; i++) {
            size_t n;
            const char **ctx = config_contexts_for(&cfg, cfg.collections[i].name, "a/b.md", &n);
            free(ctx);
        }
    }
    config_free(&cfg);
    close(fd);
    return 0;
}
