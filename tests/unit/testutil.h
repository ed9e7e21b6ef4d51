/* testutil — helpers shared by the unit tests (header-only, static).
 *
 * tu_slurp() reads a whole file (caller frees); tu_each_note() visits every
 * .md file of a shared corpus through the project's own walker and hands the
 * callback its bytes (owned by tu_each_note); tu_corpus_dir() resolves a
 * corpus under $TROVE_SHARED_DIR and skips the test when it is missing. */
#ifndef TROVE_TESTUTIL_H
#define TROVE_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "fs/walk.h"
#include "util/mem.h"

static char *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = xmalloc((size_t)(n > 0 ? n : 0) + 1);
    *len = fread(b, 1, (size_t)(n > 0 ? n : 0), f);
    b[*len] = '\0';
    fclose(f);
    return b;
}

typedef void (*tu_note_fn)(void *ctx, const char *path, const char *text, size_t len);

typedef struct tu_walk {
    const char *root;
    tu_note_fn fn;
    void *ctx;
} tu_walk;

static int tu_on_file(void *ctx, const char *relpath, const struct stat *st)
{
    (void)st;
    tu_walk *w = ctx;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", w->root, relpath);
    size_t n;
    char *s = tu_slurp(path, &n);
    if (s)
        w->fn(w->ctx, path, s, n);
    free(s);
    return 0;
}

static void tu_each_note(const char *root, tu_note_fn fn, void *ctx)
{
    tu_walk w = {root, fn, ctx};
    walk_opts opts = {.root = root};
    walk_callbacks cb = {.ctx = &w, .on_file = tu_on_file};
    walk_tree(&opts, &cb);
}

/* $TROVE_SHARED_DIR/corpora/SUB into buf; 0 when it does not exist. */
static int tu_corpus_dir(const char *sub, char *buf, size_t cap)
{
    const char *shared = getenv("TROVE_SHARED_DIR");
    snprintf(buf, cap, "%s/corpora/%s", shared ? shared : "../shared", sub);
    struct stat sb;
    return stat(buf, &sb) == 0;
}

#endif
