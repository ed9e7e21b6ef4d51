/* embed — the embedding and reranking engine as the rest of trove sees it:
 * open a GGUF model file, turn texts into vectors (with the model family's
 * query/document prompts), score (query, document) pairs with a
 * cross-encoder.
 *
 * Everything runs on the CPU inside this process: GGUF reader (gguf.h),
 * tokenizers (etok.h; tokjson.h for GPT-2-style BPE), transformer
 * (model.h), kernels (kernels.h).
 *
 * Memory and threads: an embed_model owns the mapped file, the tokenizer,
 * the weights' small float copies, a thread pool and a workspace reused
 * across calls. Callers own `out`/`scores` arrays. One embed_model serves
 * one call at a time (calls from several threads must be serialised by the
 * caller); open one model per thread for parallel callers. Results are
 * bit-identical across runs and thread counts. */
#ifndef TROVE_EMBED_H
#define TROVE_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct embed_model embed_model;

typedef enum embed_kind {
    EMBED_QUERY = 0,    /* a search query: query prompt/instruction */
    EMBED_DOCUMENT = 1, /* a passage to index: document prompt */
} embed_kind;

/* All fields optional: a zeroed struct (or NULL) gives the defaults. */
typedef struct embed_opts {
    int threads;              /* worker threads; <= 0: every online CPU */
    int max_tokens;           /* truncate inputs to this many tokens (framing
                                 included); <= 0 or above the model's
                                 context: the model's context length */
    int dim;                  /* Matryoshka: keep the first dim components
                                 (then renormalise); <= 0: full width */
    const char *query_prompt; /* prefix for EMBED_QUERY texts; NULL: preset */
    const char *doc_prompt;   /* prefix for EMBED_DOCUMENT texts; NULL: preset */
    int no_normalize;         /* nonzero: skip L2 normalisation */
    /* embed_rerank: tokens of each document kept (the rest is cut; the
     * caller picks the window of text worth scoring); <= 0: 256 for
     * encoder cross-encoders, 128 for decoder rerankers (Qwen3-Reranker:
     * 20 candidates at 256 tokens cost ~21 s of CPU; embed_info's
     * rerank_tokens says which applies) */
    int rerank_tokens;
    /* decoder rerankers (Qwen3-Reranker): the <Instruct> line of the
     * prompt; NULL: the model card's "Given a web search query, retrieve
     * relevant passages that answer the query" */
    const char *rerank_instruction;
    /* decoder rerankers: nonzero runs the whole prompt for every document
     * instead of computing the shared prefix (instruction + query) once and
     * reusing its keys and values; same scores, for measurements */
    int rerank_no_prefix_cache;
} embed_opts;

/* Open a model. On failure returns NULL and stores the code in *err (if
 * err is not NULL); trove_errmsg() has the detail (file, key or tensor at
 * fault). */
embed_model *embed_open(const char *path, const embed_opts *opts, trove_err *err);
void embed_close(embed_model *m); /* NULL is fine */

/* Width of the vectors embed_texts() writes (after any Matryoshka cut). */
int embed_dim(const embed_model *m);

/* Embed n texts (NUL-terminated UTF-8) as queries or documents:
 * out[i * embed_dim(m) ..] receives text i's vector, L2-normalised unless
 * opts.no_normalize. Texts longer than max_tokens are truncated. Fails with
 * TROVE_EINVAL for a reranker-only model. */
trove_err embed_texts(embed_model *m, const char *const *texts, size_t n, embed_kind kind,
                      float *out);

/* Same for already tokenised sequences (ids of sequence i are
 * ids[start[i] .. start[i] + len[i]), framing included, no prompt added).
 * For tests and benchmarks. */
trove_err embed_tokens(embed_model *m, const int32_t *ids, const int64_t *start,
                       const int64_t *len, size_t n, float *out);

/* Cross-encoder relevance of each document to the query; higher is more
 * relevant. Each document is cut to opts.rerank_tokens tokens first.
 *   encoder cross-encoders (bert, XLM-R with cls.* tensors): scores[i] is
 *     the raw logit of pair (query, docs[i]);
 *   decoder rerankers (Qwen3-Reranker): scores[i] = P("yes") in [0, 1],
 *     the softmax of the yes/no logits after the model card's chat prompt
 *     (system, <Instruct>, <Query>, <Document>, empty <think> block); the
 *     prompt up to the document is run once and its keys/values reused.
 * TROVE_EINVAL for a model that cannot rerank (an embedding model, a
 * decoder without a yes/no head), naming the reason. */
trove_err embed_rerank(embed_model *m, const char *query, const char *const *docs, size_t n,
                       float *scores);

/* ---- generation (decoder models: qwen3) ---- */

/* All fields optional: zeroed gives greedy decoding of up to 256 tokens
 * that stops at the model's end-of-turn / end-of-text tokens. */
typedef struct embed_gen_opts {
    int max_tokens;           /* budget of generated tokens; <= 0: 256 */
    float temperature;        /* <= 0: greedy (the likeliest token, the
                                 lowest id on a tie); > 0: seeded sampling */
    int top_k;                /* sampling draws among the k likeliest; <= 0: 40 */
    uint64_t seed;            /* sampling: the same seed gives the same tokens */
    const char *const *stop;  /* stop strings: generation ends when the text
                                 holds one; the text is cut before it */
    size_t n_stop;
    int ignore_eos;           /* nonzero: end-of-text tokens do not stop it
                                 (parity tests that need a fixed length) */
} embed_gen_opts;

typedef enum embed_gen_end {
    EMBED_GEN_EOS = 0,        /* the model ended its turn */
    EMBED_GEN_STOP = 1,       /* a stop string */
    EMBED_GEN_BUDGET = 2,     /* max_tokens generated */
    EMBED_GEN_CONTEXT = 3,    /* the model's context is full */
} embed_gen_end;

typedef struct embed_gen_result {
    char *text;               /* the generated text (bytes of the tokens,
                                 end-of-text tokens left out, cut at a stop
                                 string), NUL-terminated; owned */
    size_t len;
    int32_t *ids;             /* every generated id, the stopping one included; owned */
    size_t n_ids;
    size_t n_prompt;          /* prompt tokens */
    embed_gen_end end;
    double prefill_ms, decode_ms; /* wall time of the prompt and of the rest */
} embed_gen_result;

/* Continue prompt (UTF-8; special tokens written in it, such as
 * <|im_start|>, are read as those tokens; nothing is added) with the
 * model's language-model head (output.weight, or token_embd when tied),
 * one token at a time over a key/value cache. TROVE_EINVAL for a model
 * that cannot generate (an encoder, a static model, a reranker, a
 * tokenizer other than byte-level BPE) or an empty prompt; the prompt and
 * the budget must fit the context. out is zeroed first; free it with
 * embed_gen_result_free (also after an error). */
trove_err embed_generate(embed_model *m, const char *prompt, const embed_gen_opts *o,
                         embed_gen_result *out);
void embed_gen_result_free(embed_gen_result *r);
/* Name of an end: "eos", "stop", "budget", "context". */
const char *embed_gen_end_name(embed_gen_end e);

/* Token ids of text as the model would see it (framing added when
 * add_special; no prompt). Writes at most cap ids, returns the count. */
size_t embed_tokenize(const embed_model *m, const char *text, int add_special, int32_t *ids,
                      size_t cap);

/* Same for a (query, document) pair; types (may be NULL) gets the BERT
 * token type of each id. For a decoder reranker: the ids of the whole
 * prompt embed_rerank scores (document cut to rerank_tokens). */
size_t embed_tokenize_pair(const embed_model *m, const char *a, const char *b, int32_t *ids,
                           uint8_t *types, size_t cap);

/* Facts for `trove model info` and logs. Strings belong to the model. */
#define EMBED_MAX_TENSOR_TYPES 16
typedef struct embed_tensor_stat {
    const char *type; /* "F32", "F16", "Q8_0", ... */
    size_t count;     /* tensors of this type */
    uint64_t bytes;   /* their data bytes */
} embed_tensor_stat;

typedef struct embed_info {
    const char *format;       /* "gguf" (transformer) or "model2vec" (static) */
    uint32_t format_version;  /* GGUF version; 0 for model2vec */
    uint64_t file_size;       /* bytes of the weights file */
    const char *arch;         /* general.architecture; "static" for model2vec */
    const char *name;         /* general.name, or "" */
    const char *tokenizer;    /* "bert", "t5", "llama", "gpt2"; tokenizer.json model */
    const char *pooling;      /* "mean", "cls", "last", "rank", "none" */
    const char *query_prompt; /* prompts in use ("" for none) */
    const char *doc_prompt;
    /* Stable identity of what embed_texts() computes: model file contents
     * (size plus a hash of sampled bytes of every file the model reads),
     * prompts, dim, max_tokens and normalisation. Equal fingerprints mean
     * vectors are interchangeable; store it next to stored vectors and
     * treat vectors under another fingerprint as stale. Printable ASCII. */
    const char *fingerprint;
    int64_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx;
    int64_t dim_native;       /* width of a pooled vector before Matryoshka */
    int64_t dim;              /* embed_dim() */
    int64_t n_cls_out;        /* rank head outputs, 0 if not a reranker */
    int rerank_tokens;        /* document tokens embed_rerank keeps */
    int threads;
    int max_tokens;
    size_t n_tensor_types;    /* entries used in tensor_types, by type id */
    embed_tensor_stat tensor_types[EMBED_MAX_TENSOR_TYPES];
} embed_info;
void embed_get_info(const embed_model *m, embed_info *out);

/* ---- benchmark (`trove model bench`) ---- */

typedef enum embed_quant_path {
    EMBED_QUANT_AUTO = 0, /* the engine's choice by product shape */
    EMBED_QUANT_SGEMM,    /* dequantise blocks, then sgemm */
    EMBED_QUANT_INT8,     /* int8 dot kernels */
} embed_quant_path;

typedef struct embed_bench_opts {
    int batch;      /* passages per timed call (>= 1) */
    int tokens;     /* tokens per passage (>= 3; cut to the context) */
    int iters;      /* timed repetitions; the best counts (>= 1) */
    embed_quant_path quant_path; /* process-wide while the bench runs */
} embed_bench_opts;

typedef struct embed_bench_result {
    int batch, tokens;   /* as run */
    double tokens_per_s; /* best of iters */
    double gflops;       /* model matmul FLOP/s (0 for static models) */
    double sgemm_gflops; /* the machine's sgemm on an FFN-shaped product
                            with the model's thread count (0 for static) */
    double query16_ms;   /* median latency of one 16-token sequence */
} embed_bench_result;

/* Embed `batch` random `tokens`-token id sequences (after one warm-up
 * call), then 21 single 16-token queries. */
trove_err embed_bench(embed_model *m, const embed_bench_opts *o, embed_bench_result *r);

#endif
