/* testutil — helpers shared by the unit tests (header-only, static).
 *
 * tu_slurp() reads a whole file (caller frees); tu_each_note() visits every
 * .md file of a shared corpus through the project's own walker and hands the
 * callback its bytes (owned by tu_each_note); tu_corpus_dir() resolves a
 * corpus under $TROVE_SHARED_DIR and skips the test when it is missing;
 * tu_index_note() parses, chunks and stores one note (asserting success,
 * so include it after cmocka.h) and returns its id; tu_rm_rf() removes a
 * temporary folder; tu_mkdtemp() makes one under /tmp. tu_rng is the one
 * seeded random generator of the tests (xorshift64: the same sequence on
 * every machine, so a failure reproduces). */
#ifndef TROVE_TESTUTIL_H
#define TROVE_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string.h>

#include "chunk/chunk.h"
#include "fs/walk.h"
#include "md/md.h"
#include "store/store.h"
#include "text/lang.h"
#include "util/mem.h"
#include "util/str.h"

static inline char *tu_slurp(const char *path, size_t *len)
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

static inline int tu_on_file(void *ctx, const char *relpath, const struct stat *st)
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

static inline void tu_each_note(const char *root, tu_note_fn fn, void *ctx)
{
    tu_walk w = {root, fn, ctx};
    walk_opts opts = {.root = root};
    walk_callbacks cb = {.ctx = &w, .on_file = tu_on_file};
    walk_tree(&opts, &cb);
}

/* Where a corpus SUB (e.g. "obsidian-help/en") lives: $TROVE_SHARED_DIR
 * (default ../shared) when it has it, else the excerpt kept in the repo
 * ($TROVE_SOURCE_DIR/fixtures/shared-mini, same layout). Writes the folder
 * into buf and returns TU_CORPUS_FULL, TU_CORPUS_MINI or 0 (neither: the
 * caller skips). Tests size their expectations by the answer. */
enum { TU_CORPUS_MINI = 1, TU_CORPUS_FULL = 2 };

static inline int tu_corpus_dir(const char *sub, char *buf, size_t cap)
{
    const char *shared = getenv("TROVE_SHARED_DIR");
    const char *src = getenv("TROVE_SOURCE_DIR");
    struct stat sb;
    snprintf(buf, cap, "%s/corpora/%s", shared ? shared : "../shared", sub);
    if (stat(buf, &sb) == 0)
        return TU_CORPUS_FULL;
    snprintf(buf, cap, "%s/fixtures/shared-mini/corpora/%s", src ? src : ".", sub);
    if (stat(buf, &sb) == 0)
        return TU_CORPUS_MINI;
    return 0;
}

/* Skip the current cmocka test, saying why on stderr (cmocka's skip() alone
 * reports no reason). */
#define tu_skip(...)                                   \
    do {                                               \
        fprintf(stderr, "[  SKIP    ] " __VA_ARGS__);  \
        fputc('\n', stderr);                           \
        skip();                                        \
    } while (0)

/* 1-based line of byte `pos`, by recounting newlines. */
static inline int tu_line_at(const char *s, size_t pos)
{
    int n = 1;
    for (size_t i = 0; i < pos; i++)
        n += s[i] == '\n';
    return n;
}

static inline int64_t tu_index_note(store *st, int64_t coll, const char *coll_name, const char *path,
                             const char *text, const chunk_opts *co)
{
    md_doc md;
    chunk_list chunks = {0};
    size_t len = strlen(text);
    assert_int_equal(md_parse(text, len, &md), TROVE_OK);
    assert_int_equal(chunk_note(text, len, &md, co, &chunks), TROVE_OK);
    store_note note = {
        .collection_id = coll, .collection = coll_name, .path = path, .text = text,
        .len = len, .mtime_ns = 1, .hash = str_hash(text, len), .md = &md, .chunks = &chunks,
        .lang = lang_code(lang_detect(text + md.body_start, len - md.body_start)),
    };
    int64_t id = 0;
    assert_int_equal(store_doc_insert(st, &note, &id), TROVE_OK);
    chunk_list_free(&chunks);
    md_doc_free(&md);
    return id;
}

/* ---- seeded random numbers ---- */

typedef struct tu_rng {
    uint64_t s; /* any non-zero seed */
} tu_rng;

static inline uint64_t tu_rng_next(tu_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* 32 random bits (the high-middle bits of the state). */
static inline uint32_t tu_rng_u32(tu_rng *r)
{
    return (uint32_t)(tu_rng_next(r) >> 16);
}

/* Uniform in [-1, 1), 53 bits. */
static inline float tu_rng_sym(tu_rng *r)
{
    return (float)((double)(tu_rng_next(r) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Roughly normal, mean 0, sd 1 (sum of 12 uniforms). */
static inline float tu_rng_gauss(tu_rng *r)
{
    float s = 0;
    for (int i = 0; i < 12; i++)
        s += (float)(tu_rng_u32(r) & 0xFFFF) / 65536.0f;
    return s - 6.0f;
}

/* A fresh folder /tmp/trove-test-<tag>.XXXXXX into buf; 0 or -1. */
static inline int tu_mkdtemp(const char *tag, char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/trove-test-%s.XXXXXX", tag);
    return mkdtemp(buf) ? 0 : -1;
}

static inline int tu_rm_rf(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

#endif
