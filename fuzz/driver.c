/* Stand-alone fuzz driver for builds without libFuzzer.
 *
 * Usage: fuzz_X [SEED_DIR_OR_FILE ...]
 * Replays every seed file, then runs TROVE_FUZZ_ITERS (default 2000)
 * deterministic mutations of the seeds (bit flips, byte inserts, splices,
 * truncations) through LLVMFuzzerTestOneInput. Under ASan/UBSan this finds
 * the shallow bugs in CI; the libFuzzer build finds the deep ones. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct { uint8_t *data; size_t len; } seed;
static seed *seeds;
static size_t nseeds, capseeds;

static void add_seed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || n > (1 << 20)) {
        fclose(f);
        return;
    }
    uint8_t *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (nseeds == capseeds) {
        capseeds = capseeds ? capseeds * 2 : 16;
        seeds = realloc(seeds, capseeds * sizeof *seeds);
    }
    seeds[nseeds++] = (seed){buf, got};
}

static void add_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        add_seed(path);
        return;
    }
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        add_path(sub);
    }
    closedir(d);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        add_path(argv[i]);
    if (nseeds == 0)
        add_seed("/dev/null"), seeds[0].len = 0;
    for (size_t i = 0; i < nseeds; i++)
        LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].len);

    long iters = 2000;
    const char *env = getenv("TROVE_FUZZ_ITERS");
    if (env)
        iters = strtol(env, NULL, 10);
    size_t cap = 1 << 16;
    uint8_t *buf = malloc(cap);
    for (long it = 0; it < iters; it++) {
        seed *s = &seeds[next() % nseeds];
        size_t len = s->len < cap ? s->len : cap;
        memcpy(buf, s->data, len);
        int nmut = 1 + (int)(next() % 8);
        for (int m = 0; m < nmut; m++) {
            size_t pos = len ? next() % len : 0;
            switch (next() % 5) {
            case 0: if (len) buf[pos] ^= (uint8_t)(1u << (next() % 8)); break;
            case 1: if (len) buf[pos] = (uint8_t)next(); break;
            case 2: if (len < cap) { memmove(buf + pos + 1, buf + pos, len - pos); buf[pos] = (uint8_t)next(); len++; } break;
            case 3: len = pos; break;
            case 4: {
                seed *o = &seeds[next() % nseeds];
                if (o->len) {
                    size_t from = next() % o->len, n = next() % (o->len - from + 1);
                    if (pos + n > cap) n = cap - pos;
                    memcpy(buf + pos, o->data + from, n);
                    if (pos + n > len) len = pos + n;
                }
                break;
            }
            }
        }
        /* Hand the target an exact-size heap copy so ASan sees overreads. */
        uint8_t *exact = malloc(len ? len : 1);
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    free(buf);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].data);
    free(seeds);
    printf("fuzz: %zu seeds, %ld mutations, no crash\n", nseeds, iters);
    return 0;
}
