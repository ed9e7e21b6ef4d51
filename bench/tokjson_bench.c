/* tokjson_bench — load time and encode throughput of a tokenizer.json
 * (not part of the build; link against a release build's library):
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -Isrc bench/tokjson_bench.c build/libtrovecore.a \
 *      $(pkg-config --libs jansson libutf8proc sqlite3 yaml-0.1 libxxhash) -lstemmer -lm \
 *      -o /tmp/tokjson_bench
 *   /tmp/tokjson_bench TOKENIZER_JSON [TEXT_FILE ...]
 *
 * Prints the best of 5 loads of the JSON, the size of the binary cache and
 * the best of 5 loads of it, then the encode throughput (MB/s of input,
 * best of 3 passes) over the text files. Times are CPU time of the process
 * (steadier than wall time on a loaded machine) (each file encoded whole, in
 * 4 KiB pieces cut at line ends, as a chunker would hand them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "embed/tokenizers/tokjson.h"

/* CPU time of this process: steadier than wall time on a shared machine */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    fclose(f);
    return b;
}

static double best_load(const char *path, tokjson **keep) {
    double best = 1e18;
    for (int r = 0; r < 5; r++) {
        tokjson *t = NULL;
        double t0 = now_ms();
        if (tokjson_open(path, &t)) {
            fprintf(stderr, "%s: %s\n", path, trove_errmsg());
            exit(1);
        }
        double dt = now_ms() - t0;
        if (dt < best) best = dt;
        if (keep && !*keep) *keep = t;
        else tokjson_free(t);
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: tokjson_bench TOKENIZER_JSON [TEXT_FILE ...]\n");
        return 2;
    }
    tokjson *t = NULL;
    double json_ms = best_load(argv[1], &t);
    char bin[] = "/tmp/tokjson_bench_XXXXXX";
    int fd = mkstemp(bin);
    if (fd < 0) return 1;
    if (tokjson_save(t, bin)) {
        fprintf(stderr, "save: %s\n", trove_errmsg());
        return 1;
    }
    struct stat st;
    stat(bin, &st);
    double bin_ms = best_load(bin, NULL);
    remove(bin);
    printf("%s: %s, %zu ids; load json %.1f ms, binary cache %.1f MB loads in %.1f ms\n", argv[1],
           tokjson_model_type(t), tokjson_vocab_size(t), json_ms, st.st_size / 1e6, bin_ms);
    size_t total = 0, tokens = 0;
    double best = 1e18;
    tokjson_enc e = {0};
    for (int pass = 0; pass < 3; pass++) {
        double t0 = now_ms();
        total = tokens = 0;
        for (int i = 2; i < argc; i++) {
            size_t len;
            char *s = slurp(argv[i], &len);
            if (!s) continue;
            for (size_t at = 0; at < len;) {
                size_t n = len - at < 4096 ? len - at : 4096;
                while (at + n < len && n > 1 && s[at + n - 1] != '\n') n--;
                tokjson_encode(t, s + at, n, TOKJSON_ADD_SPECIAL, &e);
                tokens += e.n;
                at += n;
            }
            total += len;
            free(s);
        }
        double dt = now_ms() - t0;
        if (dt < best) best = dt;
    }
    if (total)
        printf("encode: %.1f MB in %.0f ms = %.1f MB/s, %zu tokens\n", total / 1e6, best,
               total / 1e3 / best, tokens);
    tokjson_enc_free(&e);
    tokjson_free(t);
    return 0;
}
