/* ja — see ja.h. */
#include "cjk/ja.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

typedef struct mecab_t mecab_t;   /* opaque: only pointers cross */

static struct {
    mecab_t *(*new2)(const char *arg);
    const char *(*tostr2)(mecab_t *m, const char *s, size_t len);
    void (*destroy)(mecab_t *m);
    const char *(*version)(void);
    char args[128];
    char ver[64];
    int ok;
} M;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t tagger_key;

typedef struct tagger {
    mecab_t *m;
    size_t *spans;       /* start, end of each word of the current run */
    size_t cap;
} tagger;

static void tagger_free(void *p)
{
    tagger *t = p;
    if (t->m)
        M.destroy(t->m);
    free(t->spans);
    free(t);
}

static _Thread_local tagger *tl;

/* This thread's tagger, created on first use; NULL if MeCab fails. */
static tagger *tagger_get(void)
{
    if (tl)
        return tl->m ? tl : NULL;
    tl = xcalloc(1, sizeof *tl);
    tl->m = M.new2(M.args);
    pthread_setspecific(tagger_key, tl);
    return tl->m ? tl : NULL;
}

static int mecab_off(void)
{
    const char *off = getenv("TROVE_NO_MECAB");
    return off && *off && strcmp(off, "0") != 0;
}

static void load(void)
{
    if (mecab_off())
        return;
    void *h = dlopen("libmecab.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    M.new2 = (mecab_t *(*)(const char *))dlsym(h, "mecab_new2");
    M.tostr2 = (const char *(*)(mecab_t *, const char *, size_t))dlsym(h, "mecab_sparse_tostr2");
    M.destroy = (void (*)(mecab_t *))dlsym(h, "mecab_destroy");
    M.version = (const char *(*)(void))dlsym(h, "mecab_version");
    if (!M.new2 || !M.tostr2 || !M.destroy || !M.version) {
        dlclose(h);
        return;
    }
    int ipadic = access(JA_IPADIC_DIR "/sys.dic", R_OK) == 0;
    snprintf(M.args, sizeof M.args, "-Owakati%s", ipadic ? " -d " JA_IPADIC_DIR : "");
    pthread_key_create(&tagger_key, tagger_free);
    M.ok = 1;
    /* A tagger that cannot open its dictionary means no MeCab at all. */
    if (!tagger_get()) {
        M.ok = 0;
        return;
    }
    const char *v = M.version();
    snprintf(M.ver, sizeof M.ver, "mecab-%s-%s", v ? v : "?", ipadic ? "ipadic" : "default");
}

const char *ja_version(void)
{
    pthread_once(&once, load);
    return M.ok ? M.ver : NULL;
}

void ja_stamp(tbuf *b)
{
    if (mecab_off()) {
        tbuf_puts(b, "mecab=off;");
        return;
    }
    const char *lp = getenv("LD_LIBRARY_PATH");
    tbuf_printf(b, "LD_LIBRARY_PATH=%s;", lp ? lp : "");
    /* a library dropped into one of its folders changes the folder */
    for (const char *p = lp; p && *p;) {
        size_t n = strcspn(p, ":;");
        char dir[4096];
        if (n && n < sizeof dir) {
            memcpy(dir, p, n);
            dir[n] = '\0';
            fs_stamp_append(b, dir);
        }
        p += n + (p[n] != '\0');
    }
    fs_stamp_append(b, "/etc/ld.so.cache");
    fs_stamp_append(b, JA_IPADIC_DIR "/sys.dic");
    fs_stamp_append(b, "/etc/mecabrc");
    const char *rc = getenv("MECABRC");
    if (rc)
        fs_stamp_append(b, rc);
    const char *home = getenv("HOME");
    if (home) {
        tbuf h = {0};
        tbuf_printf(&h, "%s/.mecabrc", home);
        fs_stamp_append(b, h.data);
        tbuf_free(&h);
    }
}

/* Find MeCab's space-separated words back in the run, in order, covering
 * it exactly; their spans go to t->spans. Returns the number of words, or
 * 0 when the output does not line up with the input. */
static size_t align(tagger *t, const char *run, size_t len, const char *out)
{
    size_t pos = 0, n = 0;
    for (const char *p = out; *p;) {
        if (*p == ' ' || *p == '\n' || *p == '\r') {
            p++;
            continue;
        }
        size_t wl = strcspn(p, " \r\n");
        if (wl > len - pos || memcmp(run + pos, p, wl) != 0)
            return 0;
        xgrow(&t->spans, &t->cap, 2 * (n + 1), sizeof *t->spans);
        t->spans[2 * n] = pos;
        t->spans[2 * n + 1] = pos + wl;
        n++;
        pos += wl;
        p += wl;
    }
    return pos == len ? n : 0;
}

int ja_cut(const char *run, size_t len, void *emit_ctx, tok_emit_fn emit, int *rc)
{
    *rc = 0;
    if (!ja_version() || len == 0)
        return 0;
    tagger *t = tagger_get();
    if (!t)
        return 0;
    const char *out = M.tostr2(t->m, run, len);
    size_t n = out ? align(t, run, len, out) : 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n && *rc == 0; i++) {
        size_t s = t->spans[2 * i], e = t->spans[2 * i + 1];
        *rc = emit(emit_ctx, run + s, e - s, s, e, 0);
    }
    return 1;
}
