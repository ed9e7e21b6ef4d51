/* llama_cpp_embed — the llama.cpp side of bench/llama_cpp_bench.sh: runs
 * token sequences through a GGUF model with llama.cpp's library (libllama)
 * and reports the time of the forward passes alone, so trove's engine can
 * be compared with llama.cpp on the same file, the same tokens and the same
 * thread count.
 *
 *   llama_cpp_embed MODEL IDS_FILE [--threads N] [--batch T] [--seqs S]
 *                   [--out VECTORS_FILE] [--backends DIR]
 *
 * IDS_FILE: one sequence per line, token ids separated by commas (already
 * framed: [CLS] ... [SEP] for BERT, the whole prompt for a reranker).
 * Sequences are packed into batches of at most T tokens and S sequences
 * (default 2048 and 64), as llama.cpp's own llama-embedding does; every
 * batch starts from an empty memory. Pooling is the model's (GGUF
 * pooling_type): mean/cls vectors, or rank scores for cross-encoders.
 *
 * Prints one JSON line: sequences, tokens, load_ms, run_ms (wall time of
 * the decode calls), cpu_ms (user + system time of the process during
 * them), tokens_per_s (tokens / run_ms). --out writes the pooled outputs,
 * one sequence per line, floats separated by spaces.
 *
 * Built by the bench script against the headers of the llama.cpp release
 * that the prebuilt libraries came from (node-llama-cpp ships both). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

#include "bench_clock.h"

/* errors only, unless LLAMA_CPP_EMBED_VERBOSE is set (then everything,
 * e.g. which CPU variant of the backend was loaded) */
static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_CPP_EMBED_VERBOSE"))
        fputs(text, stderr);
}

typedef struct {
    llama_token *ids; /* all sequences back to back */
    size_t *start, *len;
    size_t n, n_ids;
} seqs;

/* Reads "1,2,3\n4,5\n...". Exits on anything else. */
static void read_ids(const char *path, seqs *s)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    size_t cap_ids = 1 << 16, cap_seq = 256;
    s->ids = malloc(cap_ids * sizeof *s->ids);
    s->start = malloc(cap_seq * sizeof *s->start);
    s->len = malloc(cap_seq * sizeof *s->len);
    s->n = s->n_ids = 0;
    long v = 0;
    int in_num = 0, c;
    size_t line_start = 0;
    while ((c = fgetc(f)) != EOF || in_num || s->n_ids > line_start) {
        if (c >= '0' && c <= '9') {
            v = v * 10 + (c - '0');
            in_num = 1;
            if (v > 0x7fffffff) {
                fprintf(stderr, "%s: token id too large\n", path);
                exit(2);
            }
            continue;
        }
        if (c != ',' && c != '\n' && c != EOF) {
            fprintf(stderr, "%s: unexpected byte 0x%02x\n", path, c & 0xff);
            exit(2);
        }
        if (in_num) {
            if (s->n_ids == cap_ids)
                s->ids = realloc(s->ids, (cap_ids *= 2) * sizeof *s->ids);
            s->ids[s->n_ids++] = (llama_token)v;
            v = 0;
            in_num = 0;
        }
        if ((c == '\n' || c == EOF) && s->n_ids > line_start) {
            if (s->n == cap_seq) {
                cap_seq *= 2;
                s->start = realloc(s->start, cap_seq * sizeof *s->start);
                s->len = realloc(s->len, cap_seq * sizeof *s->len);
            }
            s->start[s->n] = line_start;
            s->len[s->n] = s->n_ids - line_start;
            s->n++;
            line_start = s->n_ids;
        }
        if (c == EOF)
            break;
    }
    fclose(f);
    if (!s->n) {
        fprintf(stderr, "%s: no sequences\n", path);
        exit(2);
    }
}

static int arg_int(const char *opt, const char *v, int lo, int hi)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < lo || x > hi) {
        fprintf(stderr, "%s needs an integer in [%d, %d]\n", opt, lo, hi);
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *ids_path = NULL, *out_path = NULL, *backends = NULL;
    int threads = 2, n_batch = 2048, n_seq = 64;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--threads"))
            threads = arg_int(argv[i], v, 1, 256), i++;
        else if (!strcmp(argv[i], "--batch"))
            n_batch = arg_int(argv[i], v, 8, 1 << 16), i++;
        else if (!strcmp(argv[i], "--seqs"))
            n_seq = arg_int(argv[i], v, 1, 256), i++;
        else if (!strcmp(argv[i], "--out") && v)
            out_path = v, i++;
        else if (!strcmp(argv[i], "--backends") && v)
            backends = v, i++;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        } else if (!model_path)
            model_path = argv[i];
        else if (!ids_path)
            ids_path = argv[i];
        else {
            fprintf(stderr, "usage: llama_cpp_embed MODEL IDS_FILE [options]\n");
            return 2;
        }
    }
    if (!model_path || !ids_path) {
        fprintf(stderr, "usage: llama_cpp_embed MODEL IDS_FILE [--threads N] [--batch T] "
                        "[--seqs S] [--out FILE] [--backends DIR]\n");
        return 2;
    }
    seqs s;
    read_ids(ids_path, &s);
    for (size_t i = 0; i < s.n; i++)
        if (s.len[i] > (size_t)n_batch) {
            fprintf(stderr, "sequence %zu has %zu tokens, more than --batch %d\n", i, s.len[i],
                    n_batch);
            return 2;
        }

    llama_log_set(quiet_log, NULL);
    ggml_log_set(quiet_log, NULL);
    double t0 = now_ms();
    /* the prebuilt libraries pick their CPU variant (AVX2, AVX-512, ...) at
     * run time from the libggml-cpu-*.so files beside them */
    if (backends)
        ggml_backend_load_all_from_path(backends);
    else
        ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) {
        fprintf(stderr, "%s: llama.cpp cannot load the model\n", model_path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_batch;
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_batch; /* non-causal models need a sequence in one ubatch */
    cp.n_seq_max = (uint32_t)n_seq;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.embeddings = true;
    cp.kv_unified = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "%s: llama.cpp cannot create a context\n", model_path);
        return 1;
    }
    double load_ms = now_ms() - t0;
    enum llama_pooling_type pool = llama_pooling_type(ctx);
    if (pool == LLAMA_POOLING_TYPE_NONE) {
        fprintf(stderr, "%s: the model has no pooling; nothing to compare\n", model_path);
        return 1;
    }
    int dim = pool == LLAMA_POOLING_TYPE_RANK ? (int)llama_model_n_cls_out(model)
                                              : llama_model_n_embd_out(model);
    if (dim <= 0)
        dim = 1;
    float *outv = calloc(s.n * (size_t)dim, sizeof *outv);
    struct llama_batch b = llama_batch_init(n_batch, 0, 1);
    llama_memory_t mem = llama_get_memory(ctx);

    double w0 = now_ms(), c0 = cpu_ms();
    size_t i = 0;
    while (i < s.n) {
        size_t first = i;
        b.n_tokens = 0;
        while (i < s.n && (int)(i - first) < n_seq && b.n_tokens + (int)s.len[i] <= n_batch) {
            for (size_t k = 0; k < s.len[i]; k++) {
                int t = b.n_tokens++;
                b.token[t] = s.ids[s.start[i] + k];
                b.pos[t] = (llama_pos)k;
                b.n_seq_id[t] = 1;
                b.seq_id[t][0] = (llama_seq_id)(i - first);
                b.logits[t] = 1; /* pooling reads what it needs */
            }
            i++;
        }
        if (mem)
            llama_memory_clear(mem, true);
        if (llama_decode(ctx, b) != 0) {
            fprintf(stderr, "llama_decode failed\n");
            return 1;
        }
        for (size_t q = first; q < i; q++) {
            const float *e = llama_get_embeddings_seq(ctx, (llama_seq_id)(q - first));
            if (!e) {
                fprintf(stderr, "no pooled output for sequence %zu\n", q);
                return 1;
            }
            memcpy(outv + q * (size_t)dim, e, (size_t)dim * sizeof *e);
        }
    }
    double run_ms = now_ms() - w0, run_cpu = cpu_ms() - c0;

    if (out_path) {
        FILE *o = fopen(out_path, "w");
        if (!o) {
            perror(out_path);
            return 1;
        }
        for (size_t q = 0; q < s.n; q++)
            for (int d = 0; d < dim; d++)
                fprintf(o, "%.9g%c", (double)outv[q * (size_t)dim + d], d + 1 < dim ? ' ' : '\n');
        fclose(o);
    }
    printf("{\"sequences\":%zu,\"tokens\":%zu,\"threads\":%d,\"batch\":%d,\"load_ms\":%.1f,"
           "\"run_ms\":%.1f,\"cpu_ms\":%.1f,\"tokens_per_s\":%.0f,\"dim\":%d}\n",
           s.n, s.n_ids, threads, n_batch, load_ms, run_ms, run_cpu,
           (double)s.n_ids / (run_ms / 1e3), dim);
    llama_batch_free(b);
    free(outv);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(s.ids);
    free(s.start);
    free(s.len);
    return 0;
}
