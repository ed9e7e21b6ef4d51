/* model — transformer encoders of GGUF embedding and reranking models:
 * hyperparameters and weights from a gguf_file, and the forward pass from
 * token ids to pooled vectors (or cross-encoder scores).
 *
 * Architectures (general.architecture):
 *   "bert"             BERT / XLM-RoBERTa encoders (bert.c): learned
 *                      positions, token types, post-norm LayerNorm, GELU;
 *                      with cls.* tensors and pooling "rank" a cross-encoder.
 *   "gemma-embedding"  EmbeddingGemma (gemma.c): RMSNorm sandwich, q/k norm,
 *                      GQA, NeoX RoPE with a per-layer base, symmetric
 *                      sliding window on local layers, GELU-tanh gated FFN,
 *                      then the optional dense_2 / dense_3 projections.
 *   "qwen3"            Qwen3 decoders (qwen3.c): pre-norm RMSNorm, q/k norm,
 *                      GQA, NeoX RoPE, causal attention, SwiGLU; pooling
 *                      last (Qwen3-Embedding) or rank: the last token's
 *                      yes/no logits (Qwen3-Reranker). A decoder can keep the
 *                      keys and values of a shared prompt prefix (emodel_kv)
 *                      and run many continuations of it.
 * docs/embedding.md lists the exact metadata keys and tensor names.
 *
 * Memory: an emodel borrows the gguf_file (weights stay in the mapping;
 * the file must outlive the model) and owns small float copies of the
 * norm/bias vectors plus a workspace that grows to the largest chunk seen
 * and is reused, so steady-state forwards do not allocate. One emodel must
 * not run two forwards at once (the workspace is shared); separate emodels
 * over one gguf_file may.
 *
 * Internal to src/embed/: the rest of trove reaches the engine only through
 * embed/embed.h (the engine's unit tests and fuzz targets may include it).
 */
#ifndef TROVE_EMBED_MODEL_H
#define TROVE_EMBED_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/formats/gguf.h"
#include "embed/kernels/kernels.h"
#include "util/err.h"

typedef enum emodel_arch { EMODEL_BERT = 1, EMODEL_GEMMA = 2, EMODEL_QWEN3 = 3 } emodel_arch;

/* Numbered as llama.cpp's LLAMA_POOLING_TYPE_* (stored in <arch>.pooling_type). */
typedef enum emodel_pool {
    EMODEL_POOL_NONE = 0,
    EMODEL_POOL_MEAN = 1,
    EMODEL_POOL_CLS = 2,
    EMODEL_POOL_LAST = 3,
    EMODEL_POOL_RANK = 4,
} emodel_pool;

typedef struct emodel_hparams {
    emodel_arch arch;
    const char *arch_name;  /* general.architecture */
    int64_t n_vocab;        /* rows of token_embd */
    int64_t n_embd;         /* hidden size */
    int64_t n_layer;
    int64_t n_head, n_head_kv, head_dim;
    int64_t n_ff;
    int64_t n_ctx;          /* longest sequence the model accepts */
    int64_t n_types;        /* token types (bert), 0 if none */
    float eps;              /* layer_norm_epsilon or layer_norm_rms_epsilon */
    emodel_pool pool;       /* from the file; MEAN when absent (qwen3: LAST) */
    bool causal;            /* decoder: token i sees tokens <= i; the rank
                               head reads the last token */
    /* gemma-embedding */
    double rope_base, rope_base_swa;
    int64_t swa_window;     /* 0: no sliding window */
    /* outputs */
    int64_t n_out;          /* width of a pooled vector (after dense_2/3) */
    int64_t n_cls_out;      /* labels of the rank head (usually 1), 0 if none */
} emodel_hparams;

typedef struct emodel emodel;

/* Keys and values of every layer for a token prefix (decoder models): the
 * shared part of many inputs, computed once. Owned by the caller; valid
 * only with the model that built it. */
typedef struct emodel_kv emodel_kv;

/* Read hyperparameters, map and check every tensor. Failures:
 * TROVE_EUNSUPPORTED (architecture, tensor type), TROVE_ECORRUPT (missing
 * tensor or key, shape that disagrees with the hyperparameters — the
 * message names the tensor with expected and actual shape). */
trove_err emodel_load(const gguf_file *f, emodel **out);
void emodel_free(emodel *m); /* NULL is fine */

const emodel_hparams *emodel_hp(const emodel *m);

/* Name of a pooling type: "none", "mean", "cls", "last", "rank". */
const char *emodel_pool_name(emodel_pool p);

/* A batch of token sequences, packed: sequence s is ids[start[s] ..
 * start[s] + len[s]). types (BERT token types) may be NULL (all 0). */
typedef struct emodel_batch {
    const int32_t *ids;
    const uint8_t *types;
    const int64_t *start, *len;
    int64_t n_seq;
    const emodel_kv *prefix; /* decoders: every sequence continues this
                                prefix (positions start after it); NULL:
                                none */
} emodel_batch;

/* Run the encoder and pool. pool selects the output:
 *   MEAN/CLS/LAST: out[s * n_out ..] = pooled vector of sequence s, after
 *                  the model's dense projections; not normalised.
 *   RANK:          out[s * n_cls_out ..] = rank head scores (needs cls.*).
 *   NONE:          out[(start[s] + t) * n_embd ..] = final hidden state of
 *                  every token.
 * Sequences must be non-empty, at most n_ctx long, with ids < n_vocab
 * (TROVE_EINVAL otherwise). Long batches run in chunks of a few thousand
 * tokens so the workspace stays small. */
trove_err emodel_forward(emodel *m, kpool *p, const emodel_batch *b, emodel_pool pool,
                         float *out);

/* Run ids[0..n) through a decoder model and keep its keys and values for
 * batches that continue it (emodel_batch.prefix) or for emodel_kv_extend
 * (n 0: an empty cache, for generation from one token). TROVE_EINVAL for
 * an encoder model, a too long prefix, ids outside the vocabulary. */
trove_err emodel_kv_new(emodel *m, kpool *p, const int32_t *ids, int64_t n, emodel_kv **out);
void emodel_kv_free(emodel_kv *kv); /* NULL is fine */

/* Rows of the language-model head (output.weight, else token_embd): the
 * length of the logits emodel_kv_extend writes. */
int64_t emodel_lm_rows(const emodel *m);

/* Generation: run ids[0..n) continuing kv (built by emodel_kv_new), append
 * their keys and values to it, and write the language-model logits of the
 * last of them to logits (emodel_lm_rows floats; NULL: not computed). The cache
 * grows as needed; TROVE_EINVAL when kv would pass n_ctx, for an id outside
 * the vocabulary, or a kv of another model. */
trove_err emodel_kv_extend(emodel *m, kpool *p, emodel_kv *kv, const int32_t *ids, int64_t n,
                           float *logits);
int64_t emodel_kv_len(const emodel_kv *kv);

/* Give a decoder model a rank head made of its language-model head rows
 * for the tokens ids[0..n) (output.weight, or token_embd when tied): RANK
 * pooling then gives those tokens' logits at the last position (n_cls_out
 * = n). Replaces a cls.output head. TROVE_EINVAL for an id outside the
 * head. */
trove_err emodel_token_head(emodel *m, const int32_t *ids, int n);

/* ---- shared between model.c and the architectures ---- */
#ifdef EMODEL_INTERNAL

#define EMODEL_MAX_LAYERS 256

/* Workspace buffers, grown on demand (floats). */
typedef struct emodel_ws {
    float *buf[8];
    size_t cap[8];
    float *rope[2]; /* tables for the two RoPE bases */
    size_t rope_cap[2];
    int64_t rope_len[2];
    int32_t *pos;           /* position of each token in its sequence */
    size_t pos_cap;
    int64_t *lstart, *llen; /* chunk-relative sequence starts and lengths */
    size_t lcap;
    int64_t max_len;        /* longest sequence of the chunk */
    /* Set by emodel_forward: only each sequence's last row of the final
     * hidden states is read (last-token pooling of a decoder), so an
     * architecture may run its last layer after attention on those rows
     * alone and leave the others stale. */
    bool last_only;
    /* Set by emodel_forward: only each sequence's first row is read (CLS
     * or rank pooling of an encoder), so an architecture may run its last
     * layer after attention on those rows alone, the same way. */
    bool first_only;
} emodel_ws;

struct emodel;

struct emodel_kv {
    const struct emodel *m; /* the model it belongs to */
    int64_t n;              /* tokens held */
    int64_t cap;            /* tokens each layer's slab has room for */
    int64_t width;          /* n_head_kv * head_dim */
    float *k, *v;           /* n_layer x cap x width each (rows >= n unused) */
};

typedef struct emodel_arch_ops {
    trove_err (*load)(struct emodel *m, const gguf_file *f);
    /* Fill x (T x n_embd, T = sum of len) with final hidden states of the
     * chunk [s0, s0 + ns) of the batch. */
    void (*forward)(struct emodel *m, kpool *p, const emodel_batch *b, int64_t s0, int64_t ns,
                    int64_t T, float *x);
    /* Decoders only (NULL otherwise): run one sequence of n ids that
     * continues kv's kv->n tokens, store its keys and values after them
     * (room for n more is there; the caller then adds n to kv->n), and
     * return the final hidden state of its last token (workspace). */
    float *(*prefill)(struct emodel *m, kpool *p, const int32_t *ids, int64_t n,
                      struct emodel_kv *kv);
    void (*free)(struct emodel *m);
} emodel_arch_ops;

struct emodel {
    emodel_hparams hp;
    const gguf_file *f;
    const emodel_arch_ops *ops;
    void *arch;          /* per-architecture weights */
    kmat tok_embd;
    size_t tok_row;      /* bytes per token_embd row */
    /* cross-encoder head (bert) */
    kmat cls, cls_out;
    float *cls_b, *cls_out_b;
    bool has_cls, has_cls_out;
    /* language-model head of a decoder (qwen3): output.weight, or
     * token_embd when tied (has_lm_head false) */
    kmat lm_head;
    bool has_lm_head;
    /* sentence-transformers dense projections (gemma) */
    kmat dense2, dense3;
    float *dense2_b, *dense3_b;
    bool has_dense2, has_dense3;
    /* owned float vectors, freed with the model */
    float **owned;
    size_t n_owned, cap_owned;
    /* packed copies of quantised layer matrices (kmat.pack), freed with it;
     * allocated at load, filled by the pool on the first forward pass
     * (pack_mats[i] is the matrix packs[i] belongs to) */
    q8pack **packs;
    kmat **pack_mats;
    size_t n_packs, cap_packs, cap_pack_mats;
    bool packed;
    emodel_ws ws;
    char prefix[48]; /* "<arch>." for metadata keys */
};

/* Workspace buffer i with room for n floats. */
float *emodel_buf(struct emodel *m, int i, size_t n);

/* Metadata key "<arch>.<suffix>". */
const char *emodel_key(struct emodel *m, const char *suffix, char *buf, size_t cap);

/* A 2-D weight `name` of shape {n_in, n_out} (ggml order). Absent and not
 * required: *out zeroed, *present false, TROVE_OK. */
trove_err emodel_mat(struct emodel *m, const char *name, int64_t n_in, int64_t n_out,
                     bool required, kmat *out, bool *present);
/* A 1-D vector of n elements, converted to f32 and owned by the model;
 * NULL when absent and not required. */
trove_err emodel_vec(struct emodel *m, const char *name, int64_t n, bool required, float **out);

/* Layer tensors as data: each architecture lists, per layer, the tensor
 * names after "blk.<il>.", their shapes in symbolic dimensions and where
 * they land in its layer struct; emodel_load_layers reads every layer of
 * the file through that one table (names and shapes live nowhere else). */
typedef enum emodel_dim {
    EMODEL_D_NONE = 0, /* as `out`: the tensor is a vector of `in` floats */
    EMODEL_D_EMBD,     /* n_embd */
    EMODEL_D_FF,       /* n_ff */
    EMODEL_D_HEAD,     /* head_dim */
    EMODEL_D_Q,        /* n_head * head_dim */
    EMODEL_D_KV,       /* n_head_kv * head_dim */
    EMODEL_D_3EMBD,    /* 3 * n_embd (fused q, k, v) */
} emodel_dim;

/* Struct offsets + 1, so that 0 means "none" in designated initialisers. */
#define EMODEL_AT(type, member) (offsetof(type, member) + 1)

typedef struct emodel_tensor {
    char name[32];     /* "attn_q.weight": read as "blk.<il>.attn_q.weight"; inline,
                          so the tables hold no pointer for the loader to
                          relocate at every process start */
    emodel_dim in, out; /* ggml order {in, out}; out NONE: a vector */
    bool required;
    size_t field;      /* EMODEL_AT the kmat (matrix) or float * (vector) */
    size_t present;    /* EMODEL_AT a bool set when the tensor exists; 0: none */
    size_t when;       /* EMODEL_AT a bool read first: the row applies only */
    bool when_is;      /* when that bool equals when_is; when 0: always */
} emodel_tensor;

/* Rows of a table: a matrix {in, out} or a vector of `in` floats. */
#define EMODEL_MAT(nm, i, o, req, fld)                                                     \
    {.name = (nm), .in = EMODEL_D_##i, .out = EMODEL_D_##o, .required = (req), .field = (fld)}
#define EMODEL_VEC(nm, i, req, fld)                                                        \
    {.name = (nm), .in = EMODEL_D_##i, .out = EMODEL_D_NONE, .required = (req), .field = (fld)}

/* Fill hp.n_layer zeroed layer structs of layer_size bytes each at layers
 * (allocated by the caller) from the table spec[0..n), row by row in
 * order. Errors name the tensor (missing, wrong shape, unsupported type). */
trove_err emodel_load_layers(struct emodel *m, const emodel_tensor *spec, size_t n,
                             size_t layer_size, void *layers);

/* Fill ws.pos, ws.lstart, ws.llen, ws.max_len for the chunk [s0, s0 + ns)
 * of b (T tokens). */
void emodel_layout(struct emodel *m, const emodel_batch *b, int64_t s0, int64_t ns, int64_t T);

/* Gather token embedding rows for ids into x (row stride n_embd). */
void emodel_embed_rows(struct emodel *m, const int32_t *ids, int64_t n, float *x);

/* RoPE table `which` (0 or 1) for base and at least len positions, grown
 * on demand (kern_rope_table layout, head_dim wide). */
const float *emodel_rope(struct emodel *m, int which, double base, int64_t len);

/* Float metadata "<arch>.<suffix>", dflt when absent. */
trove_err emodel_f64_or(struct emodel *m, const char *suffix, double dflt, double *out);

/* Head size from attention.key_length / value_length (default n_embd /
 * n_head) into hp.head_dim, and the RMS epsilon into hp.eps. */
trove_err emodel_head_dim_eps(struct emodel *m);

extern const emodel_arch_ops emodel_bert_ops;
extern const emodel_arch_ops emodel_gemma_ops;
extern const emodel_arch_ops emodel_qwen3_ops;

#endif /* EMODEL_INTERNAL */

#endif
