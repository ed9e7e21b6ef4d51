/* generate — token-by-token generation for decoder models (the work behind
 * embed_generate, see embed.h): the prompt runs once into a key/value
 * cache, then each step runs one token over it, reads the language-model
 * logits and picks the next token (greedy or seeded top-k sampling), until
 * an end-of-text token, a stop string, the token budget or the context.
 *
 * The caller (embed.c) owns the model, pool and tokenizer; the result's
 * arrays are owned by the result. Internal to src/embed/. */
#ifndef TROVE_EMBED_GENERATE_H
#define TROVE_EMBED_GENERATE_H

#include "embed/arch/model.h"
#include "embed/embed.h"
#include "embed/tokenizers/tokjson.h"

typedef struct egen_model {
    emodel *m;
    kpool *pool;
    const tokjson *tj;
    const int32_t *eos;   /* ids that end a turn */
    size_t n_eos;
} egen_model;

trove_err egen_run(const egen_model *g, const int32_t *prompt, size_t n_prompt,
                   const embed_gen_opts *o, embed_gen_result *out);

/* The next token from logits (n entries): argmax when temperature <= 0
 * (lowest id on a tie), else a draw among the top_k by softmax(l / T) with
 * the xorshift state *rng. Exposed for the unit tests. */
int32_t egen_pick(const float *logits, int64_t n, float temperature, int top_k, uint64_t *rng);

#endif
