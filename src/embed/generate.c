/* generate — see generate.h. */
#include "embed/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/clock.h"
#include "util/mem.h"

#define EGEN_DEFAULT_BUDGET 256
#define EGEN_DEFAULT_TOP_K 40
#define EGEN_MAX_TOP_K 1024

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int32_t argmax(const float *l, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (l[i] > l[best])
            best = i;
    return (int32_t)best;
}

int32_t egen_pick(const float *logits, int64_t n, float temperature, int top_k, uint64_t *rng)
{
    if (!(temperature > 0) || n < 2)
        return argmax(logits, n);
    int k = top_k > 0 ? top_k : EGEN_DEFAULT_TOP_K;
    if (k > EGEN_MAX_TOP_K)
        k = EGEN_MAX_TOP_K;
    if (k > n)
        k = (int)n;
    /* the k likeliest by insertion into a sorted list (k is small) */
    int32_t top[EGEN_MAX_TOP_K];
    int have = 0;
    for (int64_t i = 0; i < n; i++) {
        if (have == k && !(logits[i] > logits[top[k - 1]]))
            continue;
        int at = have < k ? have++ : k - 1;
        while (at > 0 && logits[i] > logits[top[at - 1]]) {
            top[at] = top[at - 1];
            at--;
        }
        top[at] = (int32_t)i;
    }
    double w[EGEN_MAX_TOP_K], sum = 0, mx = logits[top[0]];
    for (int i = 0; i < have; i++)
        sum += w[i] = exp(((double)logits[top[i]] - mx) / temperature);
    /* 53 random bits, uniform in [0, sum) */
    double u = (double)(rng_next(rng) >> 11) / 9007199254740992.0 * sum;
    for (int i = 0; i < have; i++) {
        if (u < w[i])
            return top[i];
        u -= w[i];
    }
    return top[have - 1];
}

static int is_eos(const egen_model *g, int32_t id)
{
    for (size_t i = 0; i < g->n_eos; i++)
        if (g->eos[i] == id)
            return 1;
    return 0;
}

/* Where the first stop string starts in text, when one ends in the bytes
 * appended since `from` (earlier ones were checked before), else -1. */
static long find_stop(const tbuf *text, size_t from, const embed_gen_opts *o)
{
    long best = -1;
    for (size_t s = 0; s < o->n_stop; s++) {
        const char *st = o->stop[s];
        size_t n = st ? strlen(st) : 0;
        if (n == 0 || n > text->len)
            continue;
        size_t lo = from >= n ? from - n + 1 : 0;
        for (size_t at = lo; at + n <= text->len; at++)
            if (memcmp(text->data + at, st, n) == 0) {
                if (best < 0 || (long)at < best)
                    best = (long)at;
                break;
            }
    }
    return best;
}

static void finish(embed_gen_result *out, tbuf *text, int32_t *ids, size_t n_ids)
{
    tbuf_putc(text, '\0');
    out->len = text->len - 1;
    out->text = text->data;
    out->ids = ids;
    out->n_ids = n_ids;
}

trove_err egen_run(const egen_model *g, const int32_t *prompt, size_t n_prompt,
                   const embed_gen_opts *o, embed_gen_result *out)
{
    const emodel_hparams *hp = emodel_hp(g->m);
    int budget = o->max_tokens > 0 ? o->max_tokens : EGEN_DEFAULT_BUDGET;
    int64_t rows = emodel_lm_rows(g->m);
    float *logits = xmalloc((size_t)rows * sizeof *logits);
    int32_t *ids = xmalloc((size_t)budget * sizeof *ids);
    size_t n_ids = 0;
    tbuf text = {0};
    uint64_t rng = o->seed ? o->seed : 0x9E3779B97F4A7C15ull;
    out->n_prompt = n_prompt;

    double t0 = (clock_seconds() * 1000.0);
    emodel_kv *kv = NULL;
    trove_err e = TROVE_OK;
    e = emodel_kv_new(g->m, g->pool, prompt, (int64_t)n_prompt - 1, &kv);
    int32_t next = prompt[n_prompt - 1]; /* the prompt's last token makes the first logits */
    if (!e)
        e = emodel_kv_extend(g->m, g->pool, kv, &next, 1, logits);
    double t1 = (clock_seconds() * 1000.0);
    out->prefill_ms = t1 - t0;
    out->end = EMBED_GEN_BUDGET;
    while (!e) {
        next = egen_pick(logits, rows < hp->n_vocab ? rows : hp->n_vocab, o->temperature,
                         o->top_k, &rng);
        ids[n_ids++] = next;
        if (!o->ignore_eos && is_eos(g, next)) {
            out->end = EMBED_GEN_EOS;
            break;
        }
        size_t before = text.len;
        tokjson_decode_token(g->tj, next, &text);
        long at = find_stop(&text, before, o);
        if (at >= 0) {
            text.len = (size_t)at;
            out->end = EMBED_GEN_STOP;
            break;
        }
        if (n_ids == (size_t)budget)
            break;
        if (emodel_kv_len(kv) + 1 > hp->n_ctx) {
            out->end = EMBED_GEN_CONTEXT;
            break;
        }
        e = emodel_kv_extend(g->m, g->pool, kv, &next, 1, logits);
    }
    out->decode_ms = (clock_seconds() * 1000.0) - t1;
    emodel_kv_free(kv);
    free(logits);
    finish(out, &text, ids, n_ids);
    return e;
}
