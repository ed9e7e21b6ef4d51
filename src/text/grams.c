/* grams — see grams.h.
 *
 * The tokens of the current sequence are kept folded, back to back, in one
 * buffer with the byte offset of every character, so a bigram is a slice of
 * it. Tokens are reported by tok_run in text order; a token that starts
 * before the previous one ended overlaps it, which only a bigram
 * segmentation does: both are dropped and the sequence ends there. */
#include "text/grams.h"

#include <stdlib.h>
#include <string.h>

#include "text/tok.h"
#include "text/tok_int.h"
#include "util/buf.h"
#include "util/mem.h"

typedef struct gstate {
    const grams_cb *cb;
    tbuf seq;              /* folded characters of the current sequence */
    size_t *coff;          /* byte offset in seq of each character */
    size_t *cword;         /* token (within the sequence) of each character */
    size_t n_chars, cap_coff, cap_cword;
    size_t *tok_c0;        /* first character of each token */
    size_t n_toks, cap_toks;
    size_t last_end;       /* end offset (in the text) of the last CJK token */
    int have_last, last_in_seq;
    size_t next_idx;       /* words reported so far */
} gstate;

static size_t char_end(const gstate *g, size_t i)
{
    return i + 1 < g->n_chars ? g->coff[i + 1] : g->seq.len;
}

static void flush(gstate *g)
{
    size_t base = g->next_idx;
    for (size_t k = 0; k < g->n_toks; k++) {
        size_t c0 = g->tok_c0[k];
        size_t end = k + 1 < g->n_toks ? g->coff[g->tok_c0[k + 1]] : g->seq.len;
        if (g->cb->word)
            g->cb->word(g->cb->ctx, base + k, g->seq.data + g->coff[c0], end - g->coff[c0]);
    }
    for (size_t i = 0; g->cb->gram && i + 1 < g->n_chars; i++)
        g->cb->gram(g->cb->ctx, g->seq.data + g->coff[i], char_end(g, i + 1) - g->coff[i],
                    base + g->cword[i], base + g->cword[i + 1]);
    g->next_idx += g->n_toks;
    g->n_toks = g->n_chars = 0;
    tbuf_reset(&g->seq);
}

/* Take back the last token of the sequence (it overlaps the next one). */
static void drop_last(gstate *g)
{
    if (!g->n_toks)
        return;
    /* Every token has a character, so coff[] holds its first one. */
    g->n_chars = g->tok_c0[--g->n_toks];
    g->seq.len = g->coff[g->n_chars];
    g->seq.data[g->seq.len] = '\0';
}

static void append(gstate *g, const char *t, size_t len)
{
    xgrow(&g->tok_c0, &g->cap_toks, g->n_toks + 1, sizeof *g->tok_c0);
    g->tok_c0[g->n_toks] = g->n_chars;
    size_t first = g->n_chars;
    for (size_t i = 0; i < len;) {
        size_t at = i;
        int cp = tok_utf8_next(t, len, &i);
        /* A combining mark belongs to the character before it. */
        if (g->n_chars > first && tok_is_mark(cp))
            continue;
        xgrow(&g->coff, &g->cap_coff, g->n_chars + 1, sizeof *g->coff);
        xgrow(&g->cword, &g->cap_cword, g->n_chars + 1, sizeof *g->cword);
        g->coff[g->n_chars] = g->seq.len + at;
        g->cword[g->n_chars] = g->n_toks;
        g->n_chars++;
    }
    g->n_toks++;
    tbuf_append(&g->seq, t, len);
}

static int on_token(void *ctx, const char *t, size_t len, size_t start, size_t end)
{
    gstate *g = ctx;
    size_t p = 0;
    if (len == 0 || !tok_cjk_char(tok_utf8_next(t, len, &p))) {
        flush(g);
        g->have_last = 0;
        return 0;
    }
    if (g->have_last && start < g->last_end) {
        /* Overlapping tokens: a bigram segmentation, not words. */
        if (g->last_in_seq)
            drop_last(g);
        flush(g);
        g->last_in_seq = 0;
        if (end > g->last_end)
            g->last_end = end;
        return 0;
    }
    if (!(g->have_last && g->last_in_seq && start == g->last_end))
        flush(g);
    append(g, t, len);
    g->have_last = 1;
    g->last_in_seq = 1;
    g->last_end = end;
    return 0;
}

size_t grams_run(const char *text, size_t len, const grams_cb *cb)
{
    static const tok_opts opts = {.query = 1};
    gstate g = {.cb = cb};
    tok_run(&opts, text, len, &g, on_token);
    flush(&g);
    tbuf_free(&g.seq);
    free(g.coff);
    free(g.cword);
    free(g.tok_c0);
    return g.next_idx;
}
