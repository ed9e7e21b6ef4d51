/* Fuzz target: config round trip. Whatever config.yaml loads must be saved
 * as YAML that loads back to the same config (load -> save -> load), and a
 * second save must write the same bytes. Strings can hold any bytes once
 * loaded (!bytes scalars), so this also checks the writer's escaping. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "util/fsutil.h"

static char dir[64];

static void remove_dir(void)
{
    char path[96];
    snprintf(path, sizeof path, "%s/in.yaml", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/out.yaml", dir);
    unlink(path);
    rmdir(dir);
}

static void write_all(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
}

static void same_list(char **a, size_t na, char **b, size_t nb)
{
    if (na != nb)
        abort();
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            abort();
}

static void same_config(const config *a, const config *b)
{
    if (a->n_collections != b->n_collections || a->n_contexts != b->n_contexts)
        abort();
    for (int i = 0; i < CONFIG_N_WEIGHTS; i++)
        if (a->has_weight[i] != b->has_weight[i] ||
            (a->has_weight[i] && memcmp(&a->weights[i], &b->weights[i], sizeof a->weights[i]) != 0))
            abort();
    for (size_t i = 0; i < a->n_collections; i++) {
        const config_collection *x = &a->collections[i], *y = &b->collections[i];
        if (strcmp(x->name, y->name) != 0 || strcmp(x->path, y->path) != 0)
            abort();
        same_list(x->masks, x->n_masks, y->masks, y->n_masks);
        same_list(x->excludes, x->n_excludes, y->excludes, y->n_excludes);
    }
    for (size_t i = 0; i < a->n_contexts; i++)
        if (strcmp(a->contexts[i].target, b->contexts[i].target) != 0 ||
            strcmp(a->contexts[i].text, b->contexts[i].text) != 0)
            abort();
    if (!a->mcp.token != !b->mcp.token || (a->mcp.token && strcmp(a->mcp.token, b->mcp.token)))
        abort();
    same_list(a->mcp.origins, a->mcp.n_origins, b->mcp.origins, b->mcp.n_origins);
}

static char *slurp(const char *path, size_t *len)
{
    char *text = NULL;
    if (fs_read_file(path, 0, &text, len) != TROVE_OK)
        abort();
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/trove-fuzz-config.XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    char in[96], out[96];
    snprintf(in, sizeof in, "%s/in.yaml", dir);
    snprintf(out, sizeof out, "%s/out.yaml", dir);
    write_all(in, data, size);
    config first, second;
    if (config_load_file(&first, in) != TROVE_OK) {
        config_free(&first);
        unlink(in);
        return 0;
    }
    free(first.file);
    first.file = strdup(out);
    if (config_save(&first) != TROVE_OK)
        abort();
    size_t len1, len2;
    char *saved1 = slurp(out, &len1);
    if (config_load_file(&second, out) != TROVE_OK) {
        fprintf(stderr, "saved config does not load: %s\n%s\n", trove_errmsg(), saved1);
        abort();
    }
    same_config(&first, &second);
    if (config_save(&second) != TROVE_OK)
        abort();
    char *saved2 = slurp(out, &len2);
    if (len1 != len2 || memcmp(saved1, saved2, len1) != 0)
        abort();
    free(saved1);
    free(saved2);
    config_free(&first);
    config_free(&second);
    unlink(in);
    unlink(out);
    return 0;
}
