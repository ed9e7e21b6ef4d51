/* Fuzz target: the Chinese segmenter on arbitrary bytes. seg_cut (both
 * modes, with and without the ASCII-edge flags) must report in-bounds
 * offsets, words in order (starts increasing, ends never going back: words
 * do not overlap, bigrams overlap by one character), and colocated
 * sub-words inside the word before them; tok_run with the segmenter installed must keep its
 * own offset rules, and grams_run must number its words in order and make
 * bigrams within one word or across two neighbours. Inputs starting with "U:" are also loaded as a user
 * dictionary. Needs the compiled dictionary ($TROVE_ZH_DICT, set by CMake);
 * without it the target only checks that opening fails cleanly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cjk/seg.h"
#include "text/grams.h"
#include "text/tok.h"

static seg *g;
static int tried;

typedef struct chk {
    size_t len, word_start, word_end;
    int n_words;
} chk;

static int check_cb(void *ctx, const char *t, size_t len, size_t s, size_t e, int flags)
{
    chk *c = ctx;
    if (!t || len == 0 || s >= e || e > c->len)
        abort();
    if (flags & TOK_COLOCATED) {
        if (!c->n_words || s < c->word_start || e > c->word_end)
            abort();
    } else {
        if (c->n_words && (s <= c->word_start || e < c->word_end))
            abort();
        c->word_start = s;
        c->word_end = e;
        c->n_words++;
    }
    return 0;
}

static int tok_check_cb(void *ctx, const char *t, size_t len, size_t s, size_t e, int flags)
{
    (void)flags;
    size_t n = *(size_t *)ctx;
    if (!t || len == 0 || len > 64 || s >= e || e > n)
        abort();
    return 0;
}

/* grams: words numbered in order, bigrams of two characters within them. */
typedef struct gchk {
    size_t next_word;
} gchk;

static void gram_word(void *ctx, size_t idx, const char *w, size_t len)
{
    gchk *g = ctx;
    if (idx != g->next_word++ || !w || len == 0)
        abort();
}

static void gram_gram(void *ctx, const char *t, size_t len, size_t wa, size_t wb)
{
    gchk *g = ctx;
    if (!t || len < 2 || wa > wb || wb >= g->next_word || wb > wa + 1)
        abort();
}

static int segment(void *ud, const char *run, size_t len, int flags, void *ectx,
                   tok_emit_fn emit)
{
    return seg_cut(ud, run, len, flags, ectx, emit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tried) {
        tried = 1;
        const char *p = getenv("TROVE_ZH_DICT");
        if (seg_open(p && *p ? p : "/nonexistent/trove-zh.dict", NULL, &g) != TROVE_OK) {
            if (!*trove_errmsg())
                abort();
            g = NULL;
        }
        if (g) {
            tok_segmenter ts = {g, segment, NULL, NULL};
            tok_set_cjk_segmenter(&ts);
        }
    }
    if (!g)
        return 0;
    const char *text = (const char *)data;
    for (int flags = 0; flags < 8; flags++) {
        chk c = {.len = size};
        seg_cut(g, text, size, flags, &c, check_cb);
    }
    for (int q = 0; q <= 1; q++) {
        tok_opts o = {.stem = 1, .query = q};
        size_t n = size;
        tok_run_flags(&o, text, size, &n, tok_check_cb);
    }
    gchk gc = {0};
    grams_cb gcb = {&gc, gram_word, gram_gram};
    if (grams_run(text, size, &gcb) != gc.next_word)
        abort();
    if (size > 2 && data[0] == 'U' && data[1] == ':') {
        char path[] = "/tmp/trove-fuzz-seg-XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0) {
            if (write(fd, data + 2, size - 2) == (ssize_t)(size - 2)) {
                seg *u = NULL;
                if (seg_open(getenv("TROVE_ZH_DICT"), path, &u) == TROVE_OK) {
                    chk c = {.len = size};
                    seg_cut(u, text, size, 0, &c, check_cb);
                    seg_free(u);
                }
            }
            close(fd);
            unlink(path);
        }
    }
    return 0;
}
