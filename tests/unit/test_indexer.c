/* indexer: what one update does to a collection folder — new, unchanged,
 * changed, renamed and removed notes, files over the size limit, and the
 * read-only freshness check that must agree with it. */
#include <sqlite3.h>
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
    tbuf warned;    /* every warning, one a line */
} fx;

static void on_warn(void *ctx, const char *message)
{
    fx *f = ctx;
    f->warnings++;
    tbuf_printf(&f->warned, "%s\n", message);
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
    tbuf_free(&f->warned);
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

/* Every row of every table but the snapshots' times, in rowid order. */
static void dump_db(store *st, tbuf *out)
{
    sqlite3 *db = store_db(st);
    sqlite3_stmt *tables, *rows;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table'"
                                        " AND name NOT IN ('snapshots', 'meta') ORDER BY name",
                                        -1, &tables, NULL), SQLITE_OK);
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(tables, 0);
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT * FROM \"%s\"", name);
        if (sqlite3_prepare_v2(db, sql, -1, &rows, NULL) != SQLITE_OK)
            continue;   /* a virtual table's module may refuse a plain scan */
        tbuf_printf(out, "== %s\n", name);
        while (sqlite3_step(rows) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(rows); c++) {
                const void *b = sqlite3_column_blob(rows, c);
                int n = sqlite3_column_bytes(rows, c);
                tbuf_printf(out, "%d:", n);
                if (b)
                    tbuf_append(out, b, (size_t)n);
                tbuf_putc(out, '|');
            }
            tbuf_putc(out, '\n');
        }
        sqlite3_finalize(rows);
    }
    sqlite3_finalize(tables);
}

/* A vault with what makes the indexer take each of its paths: plain,
 * Chinese, Japanese and Korean notes, frontmatter aliases and tags, links,
 * an over-long file, a binary one, invalid UTF-8 and an empty note. */
static void put_vault(fx *f, int round)
{
    static const char *const bodies[] = {
        "# Alpha %d\n\nrunning foxes jump over %d lazy dogs [[beta-%d]]\n",
        "---\ntitle: Beta %d\naliases: [b%d, Bee]\ntags: [x, y%d]\n---\nbody text\n",
        "# 中文 %d\n\n我们在北京学习中文，第%d课。[link](alpha-%d.md)\n",
        "# 日本語 %d\n\n東京で日本語を勉強しています %d 回目 %d\n",
        "# 한국어 %d\n\n서울에서 한국어를 공부합니다 %d %d\n",
        "bad \xff\xfe bytes %d %d %d\n",
        "",
    };
    const size_t nb = sizeof bodies / sizeof *bodies;
    for (int i = 0; i < 70; i++) {
        char name[64], text[512];
        snprintf(name, sizeof name, "n%02d.md", i);
        if (round && i % 5 == 0)
            continue;               /* unchanged in round 2 */
        if (round && i % 7 == 0) {  /* removed, its text under a new name */
            char old[320];
            snprintf(old, sizeof old, "%s/%s", f->notes, name);
            unlink(old);
            snprintf(name, sizeof name, "moved%02d.md", i);
        }
        snprintf(text, sizeof text, bodies[(size_t)i % nb], i, i + round * (i % 3 == 0), i);
        put(f, name, text, 1000 + round * 10);
    }
    char big[300];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    put(f, "big.md", big, 1000);
    char path[320];
    snprintf(path, sizeof path, "%s/bin.md", f->notes);
    FILE *o = fopen(path, "wb");
    assert_non_null(o);
    fwrite("a\0b", 1, 3, o);
    fclose(o);
}

/* Workers that prepare files ahead of the writer, with the smallest queue
 * and more threads than files in hand, write what one thread writes: the
 * same rows, byte for byte, the same counts and the same warnings in the
 * same order, on a fresh index and on an update (changed, unchanged,
 * renamed and removed notes). */
static void test_workers_write_what_one_thread_writes(void **state)
{
    fx *f = *state;
    f->opts.max_file_bytes = 256;
    fx g = *f;      /* a second index of the same folder */
    memset(&g.warned, 0, sizeof g.warned);
    g.warnings = 0;
    char db[192];
    snprintf(db, sizeof db, "%s/index2.sqlite", f->dir);
    assert_int_equal(store_open(db, 0, &g.st), TROVE_OK);
    g.opts.warn_ctx = &g;
    f->opts.workers = 0;
    g.opts.workers = 3;
    g.opts.queue = 1;
    for (int round = 0; round < 2; round++) {
        put_vault(f, round);
        tbuf_reset(&f->warned);
        tbuf_reset(&g.warned);
        index_stats a = run(f), b = run(&g);
        assert_memory_equal(&a, &b, sizeof a);
        assert_true(a.added + a.updated > 10);
        assert_int_equal(a.skipped, 2);
        assert_true(round == 0 || (a.renamed > 0 && a.unchanged > 0 && a.updated > 0));
        assert_string_equal(tbuf_cstr(&f->warned), tbuf_cstr(&g.warned));
        assert_non_null(strstr(tbuf_cstr(&g.warned), "invalid UTF-8"));
        tbuf x = {0}, y = {0};
        dump_db(f->st, &x);
        dump_db(g.st, &y);
        assert_true(x.len > 1000);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.data, y.data, x.len);
        tbuf_free(&x);
        tbuf_free(&y);
        g.opts.queue = 2;
    }
    store_close(g.st);
    tbuf_free(&g.warned);
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
        cmocka_unit_test_setup_teardown(test_workers_write_what_one_thread_writes, setup,
                                        teardown),
        cmocka_unit_test(test_vembed_text_keeps_heading_and_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
