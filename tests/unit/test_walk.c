/* walk_tree: builds a tree under mkdtemp with every case the walker must
 * get right (dot-folders, node_modules, nested .gitignore with negation and
 * anchors, excludes, masks, symlink loops and duplicates, dangling links,
 * unreadable folders) and asserts the exact list of reported paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/walk.h"
#include "testutil.h"
#include "util/buf.h"
#include "util/mem.h"

static char root[PATH_MAX];
static char outside[PATH_MAX];

static void path_in(char *out, const char *base, const char *rel)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", base, rel);
    assert_true(n > 0 && n < PATH_MAX);
}

static void mkdirs_in(const char *base, const char *rel)
{
    char p[PATH_MAX];
    path_in(p, base, rel);
    for (char *s = p + strlen(base) + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", p, strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        fail_msg("mkdir %s: %s", p, strerror(errno));
}

/* Write a file, creating its parent folders. */
static void put_in(const char *base, const char *rel, const char *content)
{
    char p[PATH_MAX];
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - rel), rel);
        mkdirs_in(base, dir);
    }
    path_in(p, base, rel);
    FILE *f = fopen(p, "wb");
    if (!f)
        fail_msg("fopen %s: %s", p, strerror(errno));
    fputs(content, f);
    fclose(f);
}

static void put(const char *rel, const char *content) { put_in(root, rel, content); }

static void lnk(const char *target, const char *rel)
{
    char p[PATH_MAX];
    path_in(p, root, rel);
    if (symlink(target, p) != 0)
        fail_msg("symlink %s: %s", p, strerror(errno));
}

typedef struct collect {
    tbuf list;       /* reported paths, one per line */
    tbuf warnings;
    int nwarn;
    int nfiles;
    int stop_after;  /* 0: never stop */
    off_t filelink_size;
} collect;

static int on_file(void *ctx, const char *rel, const struct stat *st)
{
    collect *c = ctx;
    assert_true(S_ISREG(st->st_mode));
    tbuf_puts(&c->list, rel);
    tbuf_putc(&c->list, '\n');
    if (strcmp(rel, "filelink.md") == 0)
        c->filelink_size = st->st_size;
    c->nfiles++;
    return c->stop_after && c->nfiles >= c->stop_after;
}

static void on_warning(void *ctx, const char *msg)
{
    collect *c = ctx;
    tbuf_puts(&c->warnings, msg);
    tbuf_putc(&c->warnings, '\n');
    c->nwarn++;
}

/* The order and loop tests walk through a linked folder outside the root
 * on purpose; test_stays_inside checks the default, which refuses it. */
static int follow_outside = 1;
static int walk_helpers;   /* walk_opts.helpers of every walk (main runs both) */
static const char *const *skip_dirs;
static size_t n_skip_dirs;

static trove_err walk_into(collect *c, const char *dir, const char *const *masks, size_t nm,
                           const char *const *excl, size_t ne)
{
    memset(c, 0, sizeof *c);
    walk_opts o = {.root = dir, .masks = masks, .n_masks = nm, .excludes = excl, .n_excludes = ne,
                   .follow_outside = follow_outside, .skip_dirs = skip_dirs,
                   .n_skip_dirs = n_skip_dirs, .helpers = walk_helpers};
    walk_callbacks cb = {.ctx = c, .on_file = on_file, .on_warning = on_warning};
    return walk_tree(&o, &cb);
}

static void collect_free(collect *c)
{
    tbuf_free(&c->list);
    tbuf_free(&c->warnings);
}

static void expect_walk(const char *const *masks, size_t nm, const char *const *excl, size_t ne,
                        const char *want)
{
    collect c;
    assert_int_equal(walk_into(&c, root, masks, nm, excl, ne), TROVE_OK);
    assert_string_equal(tbuf_cstr(&c.list), want);
    collect_free(&c);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)ftw;
    if (flag == FTW_DP)
        return rmdir(p);
    return unlink(p);
}

static void rm_tree(const char *p)
{
    if (p[0])
        nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup_tree(void **state)
{
    (void)state;
    strcpy(root, "/tmp/trove-walk-XXXXXX");
    strcpy(outside, "/tmp/trove-walk-out-XXXXXX");
    if (!mkdtemp(root) || !mkdtemp(outside))
        return -1;

    put(".gitignore",
        "# comment line\n"
        "\n"
        "build/\n"
        "*.tmp.md\n"
        "/rootonly.md\n"
        "\\#hash.md\n"
        "\\!bang.md\n"
        "trail.md   \n"
        "docs/internal\n"
        "g/**/z.md\n"
        "dironly.md/\n");
    put("!bang.md", "x");
    put("#hash.md", "x");
    put("a.md", "x");
    put("a/a1.md", "x");
    lnk("..", "a/loop");
    put("b.txt", "x");
    put(".hidden.md", "x");
    put(".obsidian/app.md", "x");
    put(".git/HEAD.md", "x");
    put(".trash/t.md", "x");
    put("node_modules/pkg/readme.md", "x");
    put("build/out.md", "x");
    put("x/build/out2.md", "x");
    put("a.tmp.md", "x");
    put("notes/b.tmp.md", "x");
    put("rootonly.md", "x");
    put("notes/rootonly.md", "x");
    put("trail.md", "x");
    put("docs/internal/i.md", "x");
    put("docs/pub.md", "x");
    put("x/docs/internal/j.md", "x");
    put("g/z.md", "x");
    put("g/m/n/z.md", "x");
    put("g/y.md", "x");
    put("dironly.md/inner.md", "x");
    put("notes/dironly.md", "x");
    put("notes/n1.md", "hello world\n");
    put("notes/n2.markdown", "x");
    put("notes/.dot.md", "x");
    put("notes/sub/deep.md", "x");
    put("proj/.gitignore", "*.md\n!keep.md\n/anch/\n");
    put("proj/a.md", "x");
    put("proj/keep.md", "x");
    put("proj/x/keep.md", "x");
    put("proj/anch/keep.md", "x");
    put("proj/x/anch/keep.md", "x");
    put("proj2/.gitignore", "!keep.tmp.md\n");
    put("proj2/keep.tmp.md", "x");
    put("proj2/other.tmp.md", "x");
    /* CRLF lines, a middle slash anchoring to this folder, an escaped
     * trailing space. */
    put("proj3/.gitignore", "sub/hid.md\r\n**/deep/\r\nsp\\ \r\n");
    put("proj3/sub/hid.md", "x");
    put("proj3/x/sub/hid.md", "x");
    put("proj3/a/deep/f.md", "x");
    put("proj3/sp ", "x");
    put("proj3/sp", "x");
    put("proj3/keep3.md", "x");
    put("drafts/d1.md", "x");
    lnk("notes/n1.md", "filelink.md");
    lnk("nowhere.md", "dangling.md");
    lnk("nowhere.md", "build/dangling-ignored.md");
    lnk("nowhere.md", "notes/dangling.tmp.md");
    lnk("notes", "linked");
    /* A folder outside the root, reached only through a link, with a link
     * back to the root inside it. */
    put_in(outside, "e1.md", "x");
    char p[PATH_MAX];
    path_in(p, outside, "back");
    if (symlink(root, p) != 0)
        return -1;
    lnk(outside, "ext");
    return 0;
}

static int teardown_tree(void **state)
{
    (void)state;
    rm_tree(root);
    rm_tree(outside);
    return 0;
}

#define REAL_TREE                                                                          \
    "a.md\n"                                                                               \
    "a/a1.md\n"                                                                            \
    "docs/pub.md\n"                                                                        \
    "drafts/d1.md\n"                                                                       \
    "filelink.md\n"                                                                        \
    "g/y.md\n"                                                                             \
    "notes/dironly.md\n"                                                                   \
    "notes/n1.md\n"                                                                        \
    "notes/rootonly.md\n"                                                                  \
    "notes/sub/deep.md\n"                                                                  \
    "proj/keep.md\n"                                                                       \
    "proj/x/anch/keep.md\n"                                                                \
    "proj/x/keep.md\n"                                                                     \
    "proj2/keep.tmp.md\n"                                                                  \
    "proj3/keep3.md\n"                                                                     \
    "proj3/x/sub/hid.md\n"                                                                 \
    "x/docs/internal/j.md\n"

static void test_default_walk(void **state)
{
    (void)state;
    collect c;
    assert_int_equal(walk_into(&c, root, NULL, 0, NULL, 0), TROVE_OK);
    /* Real tree in strcmp order, then the one linked folder that leads
     * somewhere new; a/loop, linked and ext/back are already visited. */
    assert_string_equal(tbuf_cstr(&c.list), REAL_TREE "ext/e1.md\n");
    /* A file symlink reports its target's stat. */
    assert_int_equal(c.filelink_size, 12);
    assert_int_equal(c.nwarn, 1);
    assert_non_null(strstr(tbuf_cstr(&c.warnings), "dangling.md"));
    collect_free(&c);
}

/* By default nothing outside the root is walked: the linked folder "ext"
 * (outside) is skipped with a warning naming it and its target, as is a
 * file symlink leading outside; links that stay inside still work. */
static void test_stays_inside(void **state)
{
    (void)state;
    char p[PATH_MAX];
    path_in(p, outside, "secret.md");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("secret", f);
    fclose(f);
    lnk(p, "notes/leak.md");
    follow_outside = 0;
    collect c;
    assert_int_equal(walk_into(&c, root, NULL, 0, NULL, 0), TROVE_OK);
    follow_outside = 1;
    assert_string_equal(tbuf_cstr(&c.list), REAL_TREE);
    assert_int_equal(c.nwarn, 3);   /* dangling.md, ext, notes/leak.md */
    const char *w = tbuf_cstr(&c.warnings);
    assert_non_null(strstr(w, "/ext: skipped, a symlink to "));
    assert_non_null(strstr(w, "/notes/leak.md: skipped, a symlink to "));
    assert_non_null(strstr(w, outside));
    collect_free(&c);
    path_in(p, root, "notes/leak.md");
    unlink(p);
    path_in(p, outside, "secret.md");
    unlink(p);

    /* skip_dirs: a nested collection's folder is not entered */
    static const char *const skip[] = {"notes", "proj/x"};
    skip_dirs = skip;
    n_skip_dirs = 2;
    assert_int_equal(walk_into(&c, root, NULL, 0, NULL, 0), TROVE_OK);
    skip_dirs = NULL;
    n_skip_dirs = 0;
    const char *list = tbuf_cstr(&c.list);
    assert_null(strstr(list, "\nnotes/"));
    assert_null(strstr(list, "proj/x/"));
    assert_non_null(strstr(list, "proj/keep.md\n"));
    assert_non_null(strstr(list, "x/docs/internal/j.md\n"));
    collect_free(&c);
}

/* The same list comes back on every walk. */
static void test_stable(void **state)
{
    (void)state;
    collect a, b;
    assert_int_equal(walk_into(&a, root, NULL, 0, NULL, 0), TROVE_OK);
    assert_int_equal(walk_into(&b, root, NULL, 0, NULL, 0), TROVE_OK);
    assert_string_equal(tbuf_cstr(&a.list), tbuf_cstr(&b.list));
    collect_free(&a);
    collect_free(&b);
}

static void test_masks(void **state)
{
    (void)state;
    static const char *const md_markdown[] = {"**/*.{md,markdown}"};
    expect_walk(md_markdown, 1, NULL, 0,
                "a.md\n"
                "a/a1.md\n"
                "docs/pub.md\n"
                "drafts/d1.md\n"
                "filelink.md\n"
                "g/y.md\n"
                "notes/dironly.md\n"
                "notes/n1.md\n"
                "notes/n2.markdown\n"
                "notes/rootonly.md\n"
                "notes/sub/deep.md\n"
                "proj/keep.md\n"
                "proj/x/anch/keep.md\n"
                "proj/x/keep.md\n"
                "proj2/keep.tmp.md\n"
                "proj3/keep3.md\n"
                "proj3/x/sub/hid.md\n"
                "x/docs/internal/j.md\n"
                "ext/e1.md\n");
    static const char *const notes[] = {"notes/**"};
    expect_walk(notes, 1, NULL, 0,
                "notes/dironly.md\n"
                "notes/n1.md\n"
                "notes/n2.markdown\n"
                "notes/rootonly.md\n"
                "notes/sub/deep.md\n");
    static const char *const top[] = {"*.md", "*.txt"};
    expect_walk(top, 2, NULL, 0, "a.md\nb.txt\nfilelink.md\n");
    static const char *const proj3[] = {"proj3/**"};
    expect_walk(proj3, 1, NULL, 0, "proj3/keep3.md\nproj3/sp\nproj3/x/sub/hid.md\n");
    static const char *const none[] = {"*.pdf"};
    expect_walk(none, 1, NULL, 0, "");
}

static void test_excludes(void **state)
{
    (void)state;
    const char *want_nodrafts =
        "a.md\n"
        "a/a1.md\n"
        "docs/pub.md\n"
        "filelink.md\n"
        "g/y.md\n"
        "notes/dironly.md\n"
        "notes/n1.md\n"
        "notes/rootonly.md\n"
        "notes/sub/deep.md\n"
        "proj/keep.md\n"
        "proj/x/anch/keep.md\n"
        "proj/x/keep.md\n"
        "proj2/keep.tmp.md\n"
        "proj3/keep3.md\n"
        "proj3/x/sub/hid.md\n"
        "x/docs/internal/j.md\n"
        "ext/e1.md\n";
    static const char *const e1[] = {"drafts/"}, *const e2[] = {"drafts/**"}, *const e3[] = {"drafts"},
                             *const e3b[] = {"./drafts"}, *const e3c[] = {"/drafts/"};
    expect_walk(NULL, 0, e1, 1, want_nodrafts);
    expect_walk(NULL, 0, e2, 1, want_nodrafts);
    expect_walk(NULL, 0, e3, 1, want_nodrafts);
    expect_walk(NULL, 0, e3b, 1, want_nodrafts);
    expect_walk(NULL, 0, e3c, 1, want_nodrafts);
    /* A pattern naming only the directory prunes everything below it. */
    static const char *const e4[] = {"notes/sub", "proj*", "**/keep.md", "ext"};
    expect_walk(NULL, 0, e4, 4,
                "a.md\n"
                "a/a1.md\n"
                "docs/pub.md\n"
                "drafts/d1.md\n"
                "filelink.md\n"
                "g/y.md\n"
                "notes/dironly.md\n"
                "notes/n1.md\n"
                "notes/rootonly.md\n"
                "x/docs/internal/j.md\n");
    static const char *const e5[] = {"**/*.md"};
    expect_walk(NULL, 0, e5, 1, "");
}

static int stop_cb(void *ctx, const char *rel, const struct stat *st)
{
    return on_file(ctx, rel, st);
}

static void test_stop(void **state)
{
    (void)state;
    collect c;
    memset(&c, 0, sizeof c);
    c.stop_after = 3;
    walk_opts o = {.root = root, .helpers = walk_helpers};
    walk_callbacks cb = {.ctx = &c, .on_file = stop_cb};
    assert_int_equal(walk_tree(&o, &cb), TROVE_OK);
    assert_int_equal(c.nfiles, 3);
    assert_string_equal(tbuf_cstr(&c.list), "a.md\na/a1.md\ndocs/pub.md\n");
    collect_free(&c);
}

static void test_root_errors(void **state)
{
    (void)state;
    collect c;
    char missing[PATH_MAX];
    path_in(missing, root, "no-such-folder");
    assert_int_equal(walk_into(&c, missing, NULL, 0, NULL, 0), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), missing));
    assert_int_equal(c.nfiles, 0);
    char file[PATH_MAX];
    path_in(file, root, "a.md");
    assert_int_equal(walk_into(&c, file, NULL, 0, NULL, 0), TROVE_EINVAL);
    assert_non_null(strstr(trove_errmsg(), file));
    collect_free(&c);
}

/* chmod 000 keeps a folder out for ordinary users; root bypasses the
 * permission check, so there only the rest of the walk is checked. */
static void test_unreadable(void **state)
{
    (void)state;
    char dir[PATH_MAX] = "/tmp/trove-walk-perm-XXXXXX";
    assert_non_null(mkdtemp(dir));
    put_in(dir, "ok.md", "x");
    put_in(dir, "locked/l.md", "x");
    put_in(dir, "zz.md", "x");
    char locked[PATH_MAX];
    path_in(locked, dir, "locked");
    assert_int_equal(chmod(locked, 0), 0);
    collect c;
    assert_int_equal(walk_into(&c, dir, NULL, 0, NULL, 0), TROVE_OK);
    if (geteuid() != 0) {
        assert_string_equal(tbuf_cstr(&c.list), "ok.md\nzz.md\n");
        assert_int_equal(c.nwarn, 1);
        assert_non_null(strstr(tbuf_cstr(&c.warnings), "locked"));
    } else {
        assert_string_equal(tbuf_cstr(&c.list), "locked/l.md\nok.md\nzz.md\n");
    }
    collect_free(&c);
    chmod(locked, 0755);
    rm_tree(dir);
}

/* Folder names of every length from 1 to 250, so that some relative path
 * ends exactly where the walker's path buffer must grow. */
static void test_long_names(void **state)
{
    (void)state;
    char dir[PATH_MAX] = "/tmp/trove-walk-long-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char rel[512];
    /* A chain c/c/c/... with a .gitignore in force: the path buffer grows
     * while a folder name is being checked against it. */
    put_in(dir, ".gitignore", "z\n");
    for (int k = 0; k < 60; k++)
        memcpy(rel + 2 * k, "c/", 2);
    memcpy(rel + 120, "n.md", 5);
    put_in(dir, rel, "x");
    for (int k = 1; k <= 250; k++) {
        memset(rel, 'd', (size_t)k);
        snprintf(rel + k, sizeof rel - (size_t)k, "/n.md");
        put_in(dir, rel, "x");
    }
    collect c;
    assert_int_equal(walk_into(&c, dir, NULL, 0, NULL, 0), TROVE_OK);
    assert_int_equal(c.nfiles, 251);
    assert_int_equal(c.nwarn, 0);
    const char *d = strstr(tbuf_cstr(&c.list), "\nd/n.md\ndd/n.md\n");
    assert_non_null(d);
    assert_int_equal(d - tbuf_cstr(&c.list), 124);
    collect_free(&c);
    rm_tree(dir);
}

/* Thousands of entries in one folder, names that share their first 8 bytes
 * or more (the sort's integer key), files and folders named alike ("x.md",
 * "x/", "x-y.md"), bytes above 0x7f: the reported paths must come out in
 * strcmp order, each once. */
static void test_sorted_order(void **state)
{
    (void)state;
    char dir[PATH_MAX] = "/tmp/trove-walk-sort-XXXXXX";
    assert_non_null(mkdtemp(dir));
    static const char *const stems[] = {"abcdefgh", "abcdefg", "abcdefghi", "abcdefgh-",
                                        "abcdefgh.", "a", "ab", "\xc3\xa9t\xc3\xa9", "z z", "0"};
    size_t want = 0;
    char rel[256];
    for (size_t s = 0; s < sizeof stems / sizeof *stems; s++) {
        for (int k = 0; k < 230; k++) {
            snprintf(rel, sizeof rel, "%s%d.md", stems[s], k);
            put_in(dir, rel, "x");
            want++;
        }
        snprintf(rel, sizeof rel, "%s.md", stems[s]);
        put_in(dir, rel, "x");
        snprintf(rel, sizeof rel, "%s/in.md", stems[s]);
        put_in(dir, rel, "x");
        snprintf(rel, sizeof rel, "%s/%s/in.md", stems[s], stems[s]);
        put_in(dir, rel, "x");
        want += 3;
    }
    collect c;
    assert_int_equal(walk_into(&c, dir, NULL, 0, NULL, 0), TROVE_OK);
    assert_int_equal(c.nwarn, 0);
    assert_int_equal((size_t)c.nfiles, want);
    char *list = xstrdup(tbuf_cstr(&c.list)), *save = NULL;
    const char *prev = NULL;
    for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (prev && strcmp(prev, line) >= 0)
            fail_msg("out of order: '%s' then '%s'", prev, line);
        prev = line;
    }
    free(list);
    collect_free(&c);
    rm_tree(dir);
}

/* Rules that end in a wildcard, a class or a literal byte; a .gitignore
 * whose rules can end in no note's last byte is skipped as a whole, and
 * one rule that may end in any byte keeps its file in play. */
static void test_gitignore_last_byte(void **state)
{
    (void)state;
    char dir[PATH_MAX] = "/tmp/trove-walk-gi-XXXXXX";
    assert_non_null(mkdtemp(dir));
    put_in(dir, ".gitignore", "*.log\nvenv\n");
    put_in(dir, "q/.gitignore", "a.m?\nb.m[d]\nc.md\nsub\ne.m\\d\n");
    put_in(dir, "r/.gitignore", "*\n!keep.md\n");
    static const char *const files[] = {"top.md", "q/a.md", "q/b.md", "q/c.md", "q/d.md",
                                        "q/e.md", "q/sub/e.md", "q/subx/f.md", "q/venv/g.md",
                                        "r/keep.md", "r/drop.md"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        put_in(dir, files[i], "x");
    collect c;
    assert_int_equal(walk_into(&c, dir, NULL, 0, NULL, 0), TROVE_OK);
    assert_string_equal(tbuf_cstr(&c.list), "q/d.md\nq/subx/f.md\nr/keep.md\ntop.md\n");
    collect_free(&c);
    rm_tree(dir);
}

/* The walk with a helper thread for its stats reports the same files,
 * warnings and order as without: the shared tree (links, loops, dangling
 * links, .gitignore rules) and one of 1,200 folders holding 4,800 notes, a
 * FIFO and files refused by a .gitignore among them. */
static void test_helpers_agree(void **state)
{
    (void)state;
    char dir[PATH_MAX] = "/tmp/trove-walk-help-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char rel[256];
    put_in(dir, ".gitignore", "*-2.md\nskip*/\n");
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 100; b++)
            for (int f = 0; f < 4; f++) {
                snprintf(rel, sizeof rel, "%s%02d/d%03d/note-%d.md", a % 5 ? "top" : "skip", a, b, f);
                put_in(dir, rel, "x");
            }
    char fifo[PATH_MAX];
    path_in(fifo, dir, "top01/d000/fifo.md");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    char p[PATH_MAX];
    path_in(p, dir, "top01/d001/dangling.md");
    assert_int_equal(symlink("nowhere.md", p), 0);
    const char *roots[] = {root, dir};
    for (size_t r = 0; r < 2; r++) {
        collect one, two;
        int saved = walk_helpers;
        walk_helpers = 0;
        assert_int_equal(walk_into(&one, roots[r], NULL, 0, NULL, 0), TROVE_OK);
        walk_helpers = 1;
        assert_int_equal(walk_into(&two, roots[r], NULL, 0, NULL, 0), TROVE_OK);
        walk_helpers = saved;
        assert_true(one.nfiles > 0);
        assert_int_equal(one.nfiles, two.nfiles);
        assert_string_equal(tbuf_cstr(&one.list), tbuf_cstr(&two.list));
        assert_string_equal(tbuf_cstr(&one.warnings), tbuf_cstr(&two.warnings));
        if (r == 1)
            assert_int_equal(one.nfiles, 9 * 100 * 3);   /* top*, less each *-2.md */
        collect_free(&one);
        collect_free(&two);
    }
    rm_tree(dir);
}

static int count_find(const char *dir)
{
    char cmd[PATH_MAX + 128];
    /* Relative to the folder, so a ".." in $TROVE_SHARED_DIR is no dot-folder. */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && find . -mindepth 1 -name '.*' -prune -o -name '*.md' -type f -print | wc -l",
             dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int n = -1;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* A real vault: the count must agree with find(1) minus dot-folders. */
static void test_obsidian_help(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    if (tu_corpus_dir("obsidian-help", dir, sizeof dir) != TU_CORPUS_FULL)
        tu_skip("../shared/corpora/obsidian-help is not here (TROVE_SHARED_DIR)");
    collect c;
    assert_int_equal(walk_into(&c, dir, NULL, 0, NULL, 0), TROVE_OK);
    int want = count_find(dir);
    assert_true(want > 100);
    assert_int_equal(c.nfiles, want);
    assert_int_equal(c.nwarn, 0);
    /* And the list is strcmp-sorted with no duplicates. */
    char *prev = NULL, *s = c.list.data;
    for (char *nl; (nl = strchr(s, '\n')); s = nl + 1) {
        *nl = '\0';
        if (prev)
            assert_true(strcmp(prev, s) < 0);
        prev = s;
    }
    collect_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_walk),
        cmocka_unit_test(test_stable),
        cmocka_unit_test(test_stays_inside),
        cmocka_unit_test(test_masks),
        cmocka_unit_test(test_excludes),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_root_errors),
        cmocka_unit_test(test_unreadable),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_sorted_order),
        cmocka_unit_test(test_gitignore_last_byte),
        cmocka_unit_test(test_helpers_agree),
        cmocka_unit_test(test_obsidian_help),
    };
    /* Every test twice: the walk's own thread statting, then a helper. */
    int failed = cmocka_run_group_tests(tests, setup_tree, teardown_tree);
    walk_helpers = 1;
    return failed + cmocka_run_group_tests(tests, setup_tree, teardown_tree);
}
