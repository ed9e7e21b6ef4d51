/* api: the read/update API every front end calls — update, get (paths,
 * docids, line ranges), multi-get with a byte budget, ls, status with
 * freshness, search bodies — on a small vault in a temporary folder, plus
 * the util helpers the front ends share (numbers, XDG paths, the clock). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "testutil.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/str.h"

static char dir[160];          /* real path of the temporary folder */
static char vault[PATH_MAX + 16];
static char index_path[PATH_MAX + 32];

static void write_file(const char *rel, const char *text)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", vault, rel);
    assert_int_equal(fs_mkdir_parents(path), 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char five_lines[] = "# Alpha\n\nline three\nline four\nline five";

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/trove-test-api.XXXXXX", real[PATH_MAX];
    if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof dir - 1)
        return -1;
    snprintf(dir, sizeof dir, "%s", real);
    snprintf(vault, sizeof vault, "%s/vault", dir);
    snprintf(index_path, sizeof index_path, "%s/state/index.db", dir);
    write_file("alpha.md", five_lines);
    write_file("notes/beta.md", "# Beta\n\nLinks to [[alpha]] about zebrafinch.\n");
    write_file("notes/gamma.md", "# Gamma\n\nAlso [[alpha]]; a long note about zebrafinch songs "
                                 "and more text to make it bigger than the budget.\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_rf(dir);
}

/* A handle over `vault` as collection "v" (plus `extra` as "w" if given). */
static api *open_api(const char *extra)
{
    config cfg = {0};
    config_add_collection(&cfg, "v", vault, NULL, 0, NULL, 0);
    if (extra)
        config_add_collection(&cfg, "w", extra, NULL, 0, NULL, 0);
    api *a;
    assert_int_equal(api_open_config(index_path, &cfg, &a), TROVE_OK);
    return a;
}

static void update(api *a, index_update_result *res)
{
    api_update_opts o;
    api_update_opts_init(&o);
    assert_int_equal(api_update(a, &o, res), TROVE_OK);
}

static void test_no_index_yet(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    assert_false(api_index_exists(a));
    store *st;
    assert_int_equal(api_reader(a, &st), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "trove update"));
    /* get by COLLECTION/PATH reads the disk without an index */
    api_note n;
    assert_int_equal(api_get(a, "v/alpha.md:3", 0, 1, &n), TROVE_OK);
    assert_string_equal(n.text, "line three\n");
    assert_string_equal(n.docid, "");
    assert_null(n.title);
    api_note_free(&n);
    api_status s;
    assert_int_equal(api_status_get(a, &s), TROVE_OK);
    assert_false(s.index_exists);
    assert_int_equal(s.n_collections, 1);
    assert_false(s.collections[0].fresh_known);
    api_status_free(&s);
    api_close(a);
}

static void test_update_and_status(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    index_update_result res;
    update(a, &res);
    assert_int_equal(res.n_collections, 1);
    assert_string_equal(res.collections[0].name, "v");
    assert_int_equal(res.collections[0].stats.added, 3);
    assert_null(res.collections[0].missing);
    assert_true(res.changed);
    index_update_result_free(&res);

    api_status s;
    assert_int_equal(api_status_get(a, &s), TROVE_OK);
    assert_true(s.index_exists);
    assert_true(s.index_bytes > 0);
    assert_true(s.last_update > 0);
    assert_int_equal(s.counts.docs, 3);
    assert_int_equal(s.counts.links, 2);
    assert_int_equal(s.counts.dangling, 0);
    assert_int_equal(s.collections[0].notes, 3);
    assert_true(s.collections[0].fresh_known);
    assert_int_equal(s.collections[0].fresh.fresh, 3);
    api_status_free(&s);

    /* a new file shows up as new before the next update, then is indexed */
    write_file("notes/delta.md", "# Delta\n");
    assert_int_equal(api_status_get(a, &s), TROVE_OK);
    assert_int_equal(s.collections[0].fresh.added, 1);
    api_status_free(&s);
    update(a, &res);
    assert_int_equal(res.collections[0].stats.added, 1);
    assert_int_equal(res.collections[0].stats.unchanged, 3);
    index_update_result_free(&res);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/notes/delta.md", vault);
    unlink(path);
    update(a, &res);
    assert_int_equal(res.collections[0].stats.removed, 1);
    index_update_result_free(&res);
    api_close(a);
}

static void test_update_errors_and_orphans(void **state)
{
    (void)state;
    config empty = {0};
    api *a;
    assert_int_equal(api_open_config(index_path, &empty, &a), TROVE_OK);
    api_update_opts o;
    api_update_opts_init(&o);
    index_update_result res;
    assert_int_equal(api_update(a, &o, &res), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "collection add"));
    api_close(a);

    /* a second collection, then dropped from the config: its notes go */
    char other[200];
    snprintf(other, sizeof other, "%.150s/other", dir);
    assert_int_equal(fs_mkdir_p(other), 0);
    a = open_api(other);
    const char *names[] = {"nope"};
    o.collections = names;
    o.n_collections = 1;
    assert_int_equal(api_update(a, &o, &res), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "'nope'"));
    update(a, &res);
    assert_int_equal(res.n_collections, 2);
    index_update_result_free(&res);
    api_listing l;
    assert_int_equal(api_ls(a, NULL, &l), TROVE_OK);
    assert_int_equal(l.n_collections, 2);
    api_listing_free(&l);
    api_close(a);

    a = open_api(NULL);
    update(a, &res);
    assert_int_equal(res.dropped, 1);
    index_update_result_free(&res);
    assert_int_equal(api_ls(a, NULL, &l), TROVE_OK);
    assert_int_equal(l.n_collections, 1);
    assert_string_equal(l.collections[0].name, "v");
    assert_int_equal(l.collections[0].n_docs, 3);
    api_listing_free(&l);

    /* a collection whose folder vanished is reported, not an error */
    tu_rm_rf(other);
    api_close(a);
    a = open_api(other);
    update(a, &res);
    assert_int_equal(res.n_collections, 2);
    assert_non_null(res.collections[1].missing);
    assert_non_null(strstr(res.collections[1].missing, other));
    index_update_result_free(&res);
    api_close(a);
}

static void test_get(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    api_note n;
    /* by collection/path, with a line range */
    assert_int_equal(api_get(a, "v/alpha.md:3", 0, 2, &n), TROVE_OK);
    assert_string_equal(n.text, "line three\nline four\n");
    assert_int_equal(n.line_start, 3);
    assert_int_equal(n.line_end, 4);
    assert_int_equal(n.n_lines, 5);
    assert_string_equal(n.title, "Alpha");
    assert_int_equal(strlen(n.docid), 8);
    char docid[16];
    snprintf(docid, sizeof docid, "#%.6s", n.docid);
    api_note_free(&n);
    /* the last line has no newline; count 0 = to the end */
    assert_int_equal(api_get(a, "alpha.md", 4, 0, &n), TROVE_OK);
    assert_string_equal(n.text, "line four\nline five");
    assert_int_equal(n.line_end, 5);
    api_note_free(&n);
    /* past the end: nothing to show is an error, as for a missing note */
    assert_int_equal(api_get(a, "v/alpha.md:40", 0, 5, &n), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "has 5 lines; line 40 is past the end"));
    assert_null(n.text);
    assert_int_equal(api_get(a, "v/alpha.md:5", 0, 5, &n), TROVE_OK);   /* the last line */
    assert_string_equal(n.text, "line five");
    api_note_free(&n);
    /* by docid prefix, upper case too */
    for (char *p = docid; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    assert_int_equal(api_get(a, docid, 0, 0, &n), TROVE_OK);
    assert_string_equal(n.path, "alpha.md");
    assert_string_equal(n.text, five_lines);
    api_note_free(&n);
    /* a path on disk inside the collection */
    char disk[PATH_MAX + 32];
    snprintf(disk, sizeof disk, "%s/notes/beta.md", vault);
    assert_int_equal(api_get(a, disk, 0, 1, &n), TROVE_OK);
    assert_string_equal(n.collection, "v");
    assert_string_equal(n.path, "notes/beta.md");
    assert_string_equal(n.text, "# Beta\n");
    api_note_free(&n);

    assert_int_equal(api_get(a, "#ab", 0, 0, &n), TROVE_EINVAL);
    assert_int_equal(api_get(a, "#zzzzzz", 0, 0, &n), TROVE_EINVAL);
    assert_int_equal(api_get(a, "#00000000", 0, 0, &n), TROVE_ENOENT);
    assert_int_equal(api_get(a, "v/nowhere.md", 0, 0, &n), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "nowhere.md"));
    assert_int_equal(api_get(a, "v/notes", 0, 0, &n), TROVE_EINVAL);
    assert_int_equal(api_get(a, "elsewhere/x.md", 0, 0, &n), TROVE_ENOENT);
    /* nothing outside the collection, by ../ or by symlink */
    assert_int_equal(api_get(a, "v/../state/index.db", 0, 0, &n), TROVE_EACCES);
    char link[PATH_MAX + 32], secret[PATH_MAX + 32];
    snprintf(secret, sizeof secret, "%s/secret.txt", dir);
    FILE *f = fopen(secret, "w");
    fputs("wobblefrotz\n", f);
    fclose(f);
    snprintf(link, sizeof link, "%s/sneaky.md", vault);
    assert_int_equal(symlink(secret, link), 0);
    assert_int_equal(api_get(a, "v/sneaky.md", 0, 0, &n), TROVE_EACCES);
    assert_non_null(strstr(trove_errmsg(), "outside"));
    unlink(link);
    api_close(a);
}

static void test_multi_get_and_ls(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    api_notes ns;
    assert_int_equal(api_multi_get(a, "v/notes/*.md", 60, &ns), TROVE_OK);
    assert_int_equal(ns.n, 2);
    assert_string_equal(ns.items[0].path, "notes/beta.md");
    assert_non_null(ns.items[0].text);
    assert_null(ns.items[0].skipped);
    assert_string_equal(ns.items[1].path, "notes/gamma.md");
    assert_null(ns.items[1].text);
    assert_string_equal(ns.items[1].skipped, "over --max-bytes");
    api_notes_free(&ns);
    assert_int_equal(api_multi_get(a, "*.md", 1 << 20, &ns), TROVE_OK);
    assert_int_equal(ns.n, 1);   /* PATH matches too: "alpha.md" */
    api_notes_free(&ns);
    assert_int_equal(api_multi_get(a, "nothing/*", 100, &ns), TROVE_OK);
    assert_int_equal(ns.n, 0);
    api_notes_free(&ns);

    api_listing l;
    assert_int_equal(api_ls(a, "v/notes/", &l), TROVE_OK);
    assert_int_equal(l.n_docs, 2);
    assert_string_equal(l.docs[1].title, "Gamma");
    api_listing_free(&l);
    /* a folder, not a prefix: no notes under "note" is an error */
    assert_int_equal(api_ls(a, "v/note", &l), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "no notes under 'note' in collection 'v'"));
    assert_int_equal(l.n_docs, 0);
    assert_int_equal(api_ls(a, "v", &l), TROVE_OK);
    assert_int_equal(l.n_docs, 3);
    api_listing_free(&l);
    assert_int_equal(api_ls(a, "nope", &l), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "'nope'"));
    api_close(a);
}

static void test_search(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    api_search_opts o;
    api_search_opts_init(&o);
    o.search.query = "zebrafinch";
    o.with_body = 1;
    search_results r;
    assert_int_equal(api_search(a, &o, &r), TROVE_OK);
    assert_int_equal(r.n, 2);
    for (size_t i = 0; i < r.n; i++) {
        assert_non_null(r.items[i].body);
        assert_non_null(strstr(r.items[i].body, "zebrafinch"));
        assert_int_equal(strlen(r.items[i].body), r.items[i].body_len);
    }
    search_results_free(&r);
    o.with_body = 0;
    assert_int_equal(api_search(a, &o, &r), TROVE_OK);
    assert_null(r.items[0].body);
    search_results_free(&r);
    const char *colls[] = {"typo"};
    o.search.collections = colls;
    o.search.n_collections = 1;
    assert_int_equal(api_search(a, &o, &r), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "'typo'"));
    api_close(a);
}

static void test_check_and_rebuild(void **state)
{
    (void)state;
    api *a = open_api(NULL);
    api_check_result c;
    assert_int_equal(api_check(a, &c), TROVE_OK);
    assert_int_equal(c.n, 0);
    assert_int_equal(c.counts.docs, 3);
    api_check_result_free(&c);
    /* a stamp beside the index, written by the last writer */
    char stamp[PATH_MAX + 48];
    snprintf(stamp, sizeof stamp, "%s-verified", index_path);
    struct stat sb;
    assert_int_equal(stat(stamp, &sb), 0);
    api_update_opts o;
    api_update_opts_init(&o);
    o.rebuild = 1;
    index_update_result res;
    assert_int_equal(api_update(a, &o, &res), TROVE_OK);
    assert_int_equal(res.collections[0].stats.added, 3);   /* from scratch */
    index_update_result_free(&res);
    char tmp[PATH_MAX + 48];
    snprintf(tmp, sizeof tmp, "%s.rebuild", index_path);
    assert_int_not_equal(stat(tmp, &sb), 0);
    assert_int_equal(api_check(a, &c), TROVE_OK);
    assert_int_equal(c.n, 0);
    api_check_result_free(&c);
    api_close(a);
}

static void test_util_helpers(void **state)
{
    (void)state;
    assert_string_equal(fs_path_below("/a/b", "/a/b/c/d"), "c/d");
    assert_null(fs_path_below("/a/b", "/a/bc"));
    assert_null(fs_path_below("/a/b", "/a/b"));
    assert_null(fs_path_below("/a/b", "/a"));
    assert_string_equal(fs_path_below("/", "/x"), "x");
    assert_null(fs_path_below("/", "/"));
    long v;
    assert_true(str_to_long("42", 1, 100, &v));
    assert_int_equal(v, 42);
    assert_false(str_to_long("0", 1, 100, &v));
    assert_false(str_to_long("101", 1, 100, &v));
    assert_false(str_to_long("4x", 1, 100, &v));
    assert_false(str_to_long("", 1, 100, &v));
    assert_false(str_to_long(NULL, 1, 100, &v));
    assert_false(str_to_long(" 4", 1, 100, &v));
    assert_false(str_to_long("99999999999999999999999", 1, LONG_MAX, &v));
    double d;
    assert_true(str_to_double("0.25", &d));
    assert_true(d == 0.25);
    assert_false(str_to_double("nan", &d));
    assert_false(str_to_double("inf", &d));
    assert_false(str_to_double("1e", &d));

    setenv("TROVE_X_OVERRIDE", "/o/x.db", 1);
    char *p = fs_xdg_path("TROVE_X_OVERRIDE", "XDG_CACHE_HOME", ".cache", "trove/x.db");
    assert_string_equal(p, "/o/x.db");
    free(p);
    unsetenv("TROVE_X_OVERRIDE");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    p = fs_xdg_path("TROVE_X_OVERRIDE", "XDG_CACHE_HOME", ".cache", "trove/x.db");
    assert_string_equal(p, "/xdg/trove/x.db");
    free(p);
    setenv("XDG_CACHE_HOME", "", 1);
    setenv("HOME", "/home/u", 1);
    p = fs_xdg_path(NULL, "XDG_CACHE_HOME", ".cache", "trove/x.db");
    assert_string_equal(p, "/home/u/.cache/trove/x.db");
    free(p);

    double t0 = clock_seconds();
    assert_true(clock_seconds() >= t0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_index_yet),
        cmocka_unit_test(test_update_and_status),
        cmocka_unit_test(test_update_errors_and_orphans),
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_multi_get_and_ls),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_check_and_rebuild),
        cmocka_unit_test(test_util_helpers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
