/* indexer: what one update does to a collection folder — new, unchanged,
 * changed, renamed and removed notes, files over the size limit, and the
 * read-only freshness check that must agree with it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "index/indexer.h"
#include "index/vembed.h"
#include "util/buf.h"

#include "testutil.h"

typedef struct fx {
    char dir[128];
    char notes[160];
    store *st;
    config_collection coll;
    index_opts opts;
    int warnings;
} fx;

static void on_warn(void *ctx, const char *message)
{
    (void)message;
    ((fx *)ctx)->warnings++;
}

static void put(fx *f, const char *name, const char *text, long mtime)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s", f->notes, name);
    FILE *o = fopen(path, "wb");
    assert_non_null(o);
    fputs(text, o);
    fclose(o);
    /* a distinct mtime per write: the indexer's first test is (size, mtime) */
    struct timeval tv[2] = {{mtime, 0}, {mtime, 0}};
    assert_int_equal(utimes(path, tv), 0);
}

static int setup(void **state)
{
    fx *f = xcalloc(1, sizeof *f);
    if (tu_mkdtemp("indexer", f->dir, sizeof f->dir) != 0)
        return -1;
    snprintf(f->notes, sizeof f->notes, "%s/notes", f->dir);
    mkdir(f->notes, 0700);
    char db[192];
    snprintf(db, sizeof db, "%s/index.sqlite", f->dir);
    if (store_open(db, 0, &f->st) != TROVE_OK)
        return -1;
    f->coll = (config_collection){.name = "notes", .path = f->notes};
    index_opts_init(&f->opts);
    f->opts.warn = on_warn;
    f->opts.warn_ctx = f;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    store_close(f->st);
    tu_rm_rf(f->dir);
    free(f);
    return 0;
}

static index_stats run(fx *f)
{
    index_stats s;
    assert_int_equal(store_begin(f->st), TROVE_OK);
    assert_int_equal(index_collection(f->st, NULL, &f->coll, &f->opts, &s), TROVE_OK);
    assert_int_equal(store_commit(f->st), TROVE_OK);
    return s;
}

static index_freshness fresh(fx *f)
{
    index_freshness r;
    assert_int_equal(index_check_freshness(f->st, NULL, &f->coll, &r), TROVE_OK);
    return r;
}

static void test_add_change_rename_remove(void **state)
{
    fx *f = *state;
    put(f, "a.md", "# Alpha\n\nfirst note about apples\n", 1000);
    put(f, "b.md", "# Beta\n\nsecond note about bananas\n", 1000);
    put(f, "skip.txt", "not markdown\n", 1000);

    index_freshness fr = fresh(f);
    assert_int_equal(fr.added, 2);
    index_stats s = run(f);
    assert_int_equal(s.files, 2);
    assert_int_equal(s.added, 2);

    s = run(f); /* nothing moved */
    assert_int_equal(s.unchanged, 2);
    assert_int_equal(s.added + s.updated + s.removed + s.renamed, 0);
    fr = fresh(f);
    assert_int_equal(fr.fresh, 2);
    assert_int_equal(fr.added + fr.changed + fr.deleted, 0);

    /* same size, new mtime, same bytes: confirmed unchanged by the hash */
    put(f, "a.md", "# Alpha\n\nfirst note about apples\n", 2000);
    s = run(f);
    assert_int_equal(s.unchanged, 2);
    assert_int_equal(s.updated, 0);

    put(f, "a.md", "# Alpha\n\nfirst note about pears now\n", 3000);
    assert_int_equal(fresh(f).changed, 1);
    s = run(f);
    assert_int_equal(s.updated, 1);

    /* b.md's content under a new name: a rename, not a remove + add */
    char from[320], to[320];
    snprintf(from, sizeof from, "%s/b.md", f->notes);
    snprintf(to, sizeof to, "%s/c.md", f->notes);
    assert_int_equal(rename(from, to), 0);
    s = run(f);
    assert_int_equal(s.renamed, 1);
    assert_int_equal(s.added, 0);
    assert_int_equal(s.removed, 0);

    assert_int_equal(unlink(to), 0);
    assert_int_equal(fresh(f).deleted, 1);
    s = run(f);
    assert_int_equal(s.removed, 1);
    assert_int_equal(f->warnings, 0);
}

static void test_large_file_skipped_with_warning(void **state)
{
    fx *f = *state;
    f->opts.max_file_bytes = 64;
    put(f, "small.md", "# Small\n\nshort\n", 1000);
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    put(f, "big.md", big, 1000);
    index_stats s = run(f);
    assert_int_equal(s.added, 1);
    assert_int_equal(s.skipped, 1);
    assert_int_equal(f->warnings, 1);
}

static void test_vembed_text_keeps_heading_and_body(void **state)
{
    (void)state;
    char *t = vembed_text("Guide > Install", "run make");
    assert_non_null(strstr(t, "Guide > Install"));
    assert_non_null(strstr(t, "run make"));
    assert_true(strstr(t, "Guide") < strstr(t, "run make"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_change_rename_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_file_skipped_with_warning, setup, teardown),
        cmocka_unit_test(test_vembed_text_keeps_heading_and_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
