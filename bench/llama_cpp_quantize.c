/* llama_cpp_quantize — llama.cpp's own quantiser (llama_model_quantize, the
 * library call behind llama-quantize) on a GGUF file, so the bench can
 * measure files mixed the way users get them: a Q4_K_M or Q5_K_M of a
 * 384-wide model holds Q5_0 / Q5_1 wherever rows are not a multiple of 256.
 *
 *   llama_cpp_quantize IN OUT TYPE [--backends DIR]
 *
 * TYPE: Q4_K_M, Q5_K_M, Q5_K_S, Q5_0 or Q5_1 (llama_ftype names without
 * LLAMA_FTYPE_MOSTLY_). Errors only on stderr unless LLAMA_CPP_VERBOSE is
 * set (then llama.cpp's log, which names every fallback). Built by
 * bench/llama_cpp_bench.py beside llama_cpp_embed.c, against the headers of
 * the same release. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_CPP_VERBOSE"))
        fputs(text, stderr);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; enum llama_ftype ftype; } types[] = {
        {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
        {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
        {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
    };
    if (argc != 4 && !(argc == 6 && !strcmp(argv[4], "--backends"))) {
        fprintf(stderr, "usage: llama_cpp_quantize IN OUT TYPE [--backends DIR]\n");
        return 2;
    }
    int t = -1;
    for (int i = 0; i < (int)(sizeof types / sizeof types[0]); i++)
        if (!strcmp(argv[3], types[i].name))
            t = i;
    if (t < 0) {
        fprintf(stderr, "llama_cpp_quantize: unknown type %s\n", argv[3]);
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    if (argc == 6)
        ggml_backend_load_all_from_path(argv[5]);
    else
        ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = types[t].ftype;
    p.nthread = 2;
    uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    llama_backend_free();
    if (rc != 0) {
        fprintf(stderr, "llama_cpp_quantize: %s -> %s as %s failed (%u)\n", argv[1], argv[2],
                argv[3], rc);
        return 1;
    }
    return 0;
}
