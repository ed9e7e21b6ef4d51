/* store: schema, document insert/delete, Obsidian link resolution and
 * in-degrees, on a temporary index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunk/chunk.h"
#include "md/md.h"
#include "store/store.h"
#include "store/store_lock.h"
#include "util/mem.h"
#include "testutil.h"

static char dir[64];
static store *st;
static int64_t coll_a, coll_b;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-store.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/sub/index.db", dir);
    if (store_open(path, 0, &st) != TROVE_OK)
        return -1;
    return store_collection_ensure(st, "a", "/vault/a", &coll_a) ||
           store_collection_ensure(st, "b", "/vault/b", &coll_b);
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    return tu_rm_rf(dir);
}

static int64_t add(int64_t coll, const char *path, const char *text)
{
    chunk_opts co = CHUNK_OPTS_DEFAULT;
    return tu_index_note(st, coll, coll == coll_a ? "a" : "b", path, text, &co);
}

static int64_t one_int(const char *sql, int64_t arg)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, arg);
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

/* dst_doc of the link of `src` whose target is written `target` (-1: none,
 * 0: dangling). */
static int64_t dst(int64_t src, const char *target)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT coalesce(dst_doc, 0) FROM links"
                                        " WHERE src_doc = ? AND target = ?", -1, &s, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(s, 1, src);
    sqlite3_bind_text(s, 2, target, -1, SQLITE_STATIC);
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

static void test_resolution_rules(void **state)
{
    (void)state;
    assert_int_equal(store_begin(st), TROVE_OK);
    int64_t deep = add(coll_a, "x/y/Target.md", "# Deep target\n");
    int64_t near = add(coll_a, "Target.md", "# Near target\n");
    int64_t other = add(coll_b, "Target.md", "# Other collection\n");
    int64_t alias = add(coll_a, "people/Ada Lovelace.md",
                        "---\naliases: [Countess of Lovelace]\n---\n# Ada\n");
    int64_t rel = add(coll_a, "x/y/sibling.md", "# Sibling\n");
    int64_t src = add(coll_a, "notes/src.md",
                      "# Src\n[[target]] [[x/y/Target|deep]] [[countess of LOVELACE]]\n"
                      "[md](../x/y/sibling.md) [[Missing Note]] ![[pic.png]] [[#local]]\n"
                      "```\n[[in code]]\n```\n");
    int64_t from_b = add(coll_b, "src.md", "# From b\n[[Target]]\n");
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);

    assert_int_equal(dst(src, "target"), near);       /* shortest path, case-insensitive */
    assert_int_equal(dst(src, "x/y/Target"), deep);   /* exact path */
    assert_int_equal(dst(src, "countess of LOVELACE"), alias);
    assert_int_equal(dst(src, "../x/y/sibling.md"), rel);  /* relative markdown link */
    assert_int_equal(dst(src, "Missing Note"), 0);    /* dangling, kept */
    assert_int_equal(dst(src, "pic.png"), 0);
    assert_int_equal(dst(src, "in code"), -1);        /* not a link */
    assert_int_equal(dst(from_b, "Target"), other);   /* own collection first */
    assert_int_equal(one_int("SELECT count(*) FROM links WHERE src_doc = ? AND target = ''", src), 0);

    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", near), 1);
    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", other), 1);
    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", src), 0);
}

static void test_dangling_resolves_and_delete_unresolves(void **state)
{
    (void)state;
    int64_t src = one_int("SELECT id FROM docs WHERE path = 'notes/src.md' AND collection_id = ?",
                          coll_a);
    assert_int_equal(store_begin(st), TROVE_OK);
    int64_t missing = add(coll_a, "Missing Note.md", "# Now it exists\n");
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(dst(src, "Missing Note"), missing);
    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", missing), 1);

    assert_int_equal(store_doc_delete(st, missing), TROVE_OK);
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(dst(src, "Missing Note"), 0);
    assert_int_equal(store_commit(st), TROVE_OK);
    /* nothing of the deleted note is left behind */
    assert_int_equal(one_int("SELECT count(*) FROM chunks WHERE doc_id = ?", missing), 0);
    assert_int_equal(one_int("SELECT count(*) FROM titles_fts WHERE rowid = ?", missing), 0);
}

static void test_rollback_keeps_previous_state(void **state)
{
    (void)state;
    int64_t before = one_int("SELECT count(*) FROM docs WHERE ? = ?", 0);
    assert_int_equal(store_begin(st), TROVE_OK);
    add(coll_a, "temp.md", "# Temp\n");
    store_rollback(st);
    assert_int_equal(one_int("SELECT count(*) FROM docs WHERE ? = ?", 0), before);
}

static void test_collection_rename_and_delete(void **state)
{
    (void)state;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_rename(st, "b", "bee"), TROVE_OK);
    char want[9];
    store_docid("bee", "Target.md", want);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT docid FROM docs WHERE"
                                        " collection_id = ? AND path = 'Target.md'", -1, &s, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(s, 1, coll_b);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), want);
    sqlite3_finalize(s);
    assert_int_equal(store_collection_delete(st, "bee"), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM docs WHERE collection_id = ?", coll_b), 0);
}

static void test_foreign_database_refused(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/foreign.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE precious(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    store *other;
    assert_int_equal(store_open(path, 0, &other), TROVE_ECORRUPT);
    assert_non_null(strstr(trove_errmsg(), "not a trove index"));
}

/* The statement cache of search/: one compiled statement per SQL text,
 * handed back reset and unbound; nested use of one text gets a second,
 * uncached statement; a full cache compiles fresh ones. */
static void test_statement_cache(void **state)
{
    (void)state;
    add(coll_a, "cache.md", "# Cache\n\nbody\n");
    const char *sql = "SELECT count(*) FROM docs WHERE id > ?";
    sqlite3_stmt *s1 = store_stmt_get(st, sql);
    assert_non_null(s1);
    sqlite3_bind_int64(s1, 1, -1);
    assert_int_equal(sqlite3_step(s1), SQLITE_ROW);   /* mid-read: holds a snapshot */
    sqlite3_stmt *nested = store_stmt_get(st, sql);
    assert_non_null(nested);
    assert_ptr_not_equal(nested, s1);
    store_stmt_put(st, nested);                        /* uncached: finalized */
    store_stmt_put(st, s1);
    assert_int_equal(sqlite3_stmt_busy(s1), 0);        /* reset: no read left open */
    sqlite3_stmt *again = store_stmt_get(st, sql);
    assert_ptr_equal(again, s1);
    /* bindings were cleared: NULL > anything is NULL, count(*) is 0 */
    assert_int_equal(sqlite3_step(again), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(again, 0), 0);
    store_stmt_put(st, again);
    /* Past STORE_STMT_CACHE texts, statements still work (the least recently
     * used ones not checked out make room). */
    for (int i = 0; i < STORE_STMT_CACHE + 5; i++) {
        char q[64];
        snprintf(q, sizeof q, "SELECT %d", i);
        sqlite3_stmt *s = store_stmt_get(st, q);
        assert_non_null(s);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        assert_int_equal(sqlite3_column_int(s, 0), i);
        store_stmt_put(st, s);
    }
    assert_null(store_stmt_get(st, "SELECT FROM nowhere"));
    store_stmt_put(st, NULL);
}

/* A new index is private (0600 in a 0700 folder, whatever the umask) and
 * made to shrink: incremental auto-vacuum, free pages reclaimed once they
 * are worth it (issue 15). */
static void test_private_and_shrinking(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/priv/deep/index.db", dir);
    mode_t old = umask(0);
    store *s2;
    assert_int_equal(store_open(path, 0, &s2), TROVE_OK);
    umask(old);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char folder[160];
    snprintf(folder, sizeof folder, "%s/priv/deep", dir);
    assert_int_equal(stat(folder, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
    sqlite3 *db = store_db(s2);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA auto_vacuum", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), 2);
    sqlite3_finalize(q);
    /* fill, empty, commit: the free pages go back */
    assert_int_equal(store_exec(s2, "CREATE TABLE filler(x BLOB)"), TROVE_OK);
    assert_int_equal(store_begin(s2), TROVE_OK);
    assert_int_equal(store_exec(s2, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                                    "FROM n WHERE i < 2000) INSERT INTO filler SELECT "
                                    "randomblob(3000) FROM n"), TROVE_OK);
    assert_int_equal(store_commit(s2), TROVE_OK);
    db = store_db(s2);   /* the first transaction's file was written beside it */
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t full = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    assert_int_equal(store_begin(s2), TROVE_OK);
    assert_int_equal(store_exec(s2, "DELETE FROM filler"), TROVE_OK);
    assert_int_equal(store_commit(s2), TROVE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT (SELECT freelist_count FROM "
                                            "pragma_freelist_count), (SELECT page_count FROM "
                                            "pragma_page_count)", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int64_t free_pages = sqlite3_column_int64(q, 0), pages = sqlite3_column_int64(q, 1);
    sqlite3_finalize(q);
    assert_true(free_pages < STORE_RECLAIM_MIN_PAGES);
    assert_true(pages * 4 < full);
    store_close(s2);
}

/* One daemon per index: the lock beside the index names its holder. */
static void test_index_lock(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/sub/index.db", dir);
    long pid;
    char *sock;
    assert_int_equal(store_lock_holder(path, &pid, &sock), 0);
    store_lock *l;
    assert_int_equal(store_lock_take(path, "/run/x/trove.sock", &l), TROVE_OK);
    assert_int_equal(store_lock_holder(path, &pid, &sock), 1);
    assert_int_equal(pid, (long)getpid());
    assert_string_equal(sock, "/run/x/trove.sock");
    free(sock);
    store_lock *l2;
    assert_int_equal(store_lock_take(path, NULL, &l2), TROVE_EEXIST);
    assert_null(l2);
    char want[64];
    snprintf(want, sizeof want, "process %ld", (long)getpid());
    assert_non_null(strstr(trove_errmsg(), want));
    assert_non_null(strstr(trove_errmsg(), "/run/x/trove.sock"));
    char *lp = store_lock_path(path);
    struct stat sb;
    assert_int_equal(stat(lp, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    free(lp);
    store_lock_release(l);
    assert_int_equal(store_lock_holder(path, &pid, &sock), 0);
    assert_int_equal(store_lock_take(path, NULL, &l2), TROVE_OK);
    store_lock_release(l2);
}

/* Keyset pages: every note once, in (collection, path) order, across the
 * collection boundary, whatever the page size; a key between rows or past
 * a removed note starts at the next one. */
/* The agent boundary's globs: COLLECTION/PATH, PATH, and every folder of
 * either. */
static void test_hide_globs(void **state)
{
    (void)state;
    assert_null(store_hide_globs_new(NULL, 0));
    assert_int_equal(store_hide_globs_match(NULL, "v", "a.md"), 0);
    const char *globs[] = {"journal/", "v/clients/**", "**/pw-*.md", "w"};
    store_hide_globs *h = store_hide_globs_new(globs, 4);
    assert_true(store_hide_globs_match(h, "v", "journal/2024/x.md"));
    assert_true(store_hide_globs_match(h, "v", "a/journal/x.md") == 0);
    assert_true(store_hide_globs_match(h, "v", "clients/acme/notes.md"));
    assert_false(store_hide_globs_match(h, "u", "clients/acme/notes.md"));
    assert_true(store_hide_globs_match(h, "u", "deep/down/pw-bank.md"));
    assert_true(store_hide_globs_match(h, "w", "anything.md"));   /* the whole collection */
    assert_false(store_hide_globs_match(h, "v", "journalism.md"));
    assert_false(store_hide_globs_match(h, "v", "public/a.md"));
    store_hide_globs_free(h);
}

static void test_docs_after_pages(void **state)
{
    (void)state;
    int64_t pa, pb;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_ensure(st, "pa", "/vault/pa", &pa), TROVE_OK);
    assert_int_equal(store_collection_ensure(st, "pb", "/vault/pb", &pb), TROVE_OK);
    char path[32];
    for (int i = 0; i < 7; i++) {
        snprintf(path, sizeof path, "pg/k%d.md", i);
        chunk_opts co = CHUNK_OPTS_DEFAULT;
        assert_true(tu_index_note(st, i < 4 ? pa : pb, i < 4 ? "pa" : "pb", path, "# x\n", &co) > 0);
    }
    assert_int_equal(store_commit(st), TROVE_OK);
    for (size_t limit = 1; limit <= 8; limit++) {
        char *coll = NULL, *key = NULL;
        int seen = 0;
        for (;;) {
            store_doc *d;
            size_t n;
            assert_int_equal(store_docs_after(st, coll ? coll : "pa", key ? key : "", limit,
                                              &d, &n), TROVE_OK);
            assert_true(n <= limit);
            for (size_t i = 0; i < n; i++, seen++) {
                snprintf(path, sizeof path, "pg/k%d.md", seen);
                assert_string_equal(d[i].collection, seen < 4 ? "pa" : "pb");
                assert_string_equal(d[i].path, path);
            }
            if (n) {
                free(coll);
                free(key);
                coll = xstrdup(d[n - 1].collection);
                key = xstrdup(d[n - 1].path);
            }
            store_docs_free(d, n);
            if (n < limit)
                break;
        }
        assert_int_equal(seen, 7);
        free(coll);
        free(key);
    }
    /* a key no note has: the next note after it */
    store_doc *d;
    size_t n;
    assert_int_equal(store_docs_after(st, "pa", "pg/k1.mdz", 2, &d, &n), TROVE_OK);
    assert_int_equal(n, 2);
    assert_string_equal(d[0].path, "pg/k2.md");
    store_docs_free(d, n);
    assert_int_equal(store_docs_after(st, "pb", "pg/k6.md", 5, &d, &n), TROVE_OK);
    assert_int_equal(n, 0);
    store_docs_free(d, n);
}

/* How many leaf pages chunks_fts has flushed in its life (FTS5's write
 * counter; merges do not count). Its structure record, row 10 of
 * chunks_fts_data, is a 4-byte cookie, a 4-byte marker in its second
 * version, then SQLite varints: levels, segments, the write counter. */
static int64_t fts_pages_flushed(void)
{
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT block FROM chunks_fts_data"
                                        " WHERE id = 10", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    const unsigned char *b = sqlite3_column_blob(q, 0);
    int n = sqlite3_column_bytes(q, 0), at = 4;
    if (n >= 8 && memcmp(b + 4, "\xff\x00\x00\x01", 4) == 0)
        at = 8;
    int64_t v[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 9; i++) {
            assert_true(at < n);
            unsigned char c = b[at++];
            v[k] = i == 8 ? (v[k] << 8) | c : (v[k] << 7) | (c & 0x7f);
            if (i == 8 || !(c & 0x80))
                break;
        }
    sqlite3_finalize(q);
    return v[2];
}

static void assert_checks_clean(void)
{
    char **problems;
    size_t n;
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    for (size_t i = 0; i < n; i++) {
        print_message("check: %s\n", problems[i]);
        free(problems[i]);
    }
    free(problems);
    assert_int_equal(n, 0);
}

/* One transaction of many notes is one full-text flush. FTS5 flushes its
 * pending terms into a new segment at every statement savepoint: when the
 * fields table was kept by triggers on docs, each note's insert opened one,
 * so a transaction left a segment per note; merges never folded them back
 * fully and the tombstones of deleted notes stayed (the index did not
 * shrink after mass deletions, schema 6 before the fix).
 * The fields are still written and removed with their notes, and an index
 * that has those triggers loses them at its next writable open. */
static void test_one_fts_flush_per_transaction(void **state)
{
    (void)state;
    int64_t before = fts_pages_flushed();
    int64_t ids[12];
    char path[32], text[128];
    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < 12; i++) {
        snprintf(path, sizeof path, "batch/2024-05-%02d.md", i + 1);
        snprintf(text, sizeof text, "---\nstatus: s%d\nkeys: [k1, 3]\n---\n# Batch %d\nbatchword%d\n",
                 i, i, i);
        ids[i] = add(coll_a, path, text);
    }
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_true(fts_pages_flushed() - before <= 2);   /* 12 tiny notes: a page, not 12 */
    /* status, two list elements, the file-name date */
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id >= ?", ids[0]), 12 * 4);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ? AND key = 'keys'"
                             " AND type = 2 AND num = 3", ids[5]), 1);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ? AND key = ''"
                             " AND type = 4", ids[5]), 1);
    assert_checks_clean();

    /* what a schema-6 trove before the fix made: a trigger on docs */
    assert_int_equal(store_exec(st, "CREATE TRIGGER docs_fields_add AFTER INSERT ON docs BEGIN"
                                    " INSERT INTO fields VALUES (new.id, 'x', 1, NULL, 'x'); END"),
                     TROVE_OK);
    char db_path[128];
    snprintf(db_path, sizeof db_path, "%s/sub/index.db", dir);
    store_close(st);
    assert_int_equal(store_open(db_path, 0, &st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'", 0), 0);

    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < 12; i += 2)
        assert_int_equal(store_doc_delete(st, ids[i]), TROVE_OK);
    int64_t again = add(coll_a, "batch/again.md", "---\nstatus: back\n---\n# Again\n");
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id >= ?", ids[0]), 6 * 4 + 1);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ? AND txt = 'back'", again),
                     1);
    assert_checks_clean();
}

/* A note without frontmatter fields (docs.meta NULL) has its fields row
 * (the file name's date) and its metadata record written from what the
 * insert knows, not read back through SQL: they must be the rows and the
 * bytes the SQL definitions give (trove check rebuilds both and compares),
 * with tags in the table's order and without repeats, aliases in order. */
static void test_plain_note_rows_match_their_sql(void **state)
{
    (void)state;
    assert_int_equal(store_begin(st), TROVE_OK);
    int64_t dated = add(coll_a, "plain/2024-05-03 log.md", "# Log\nbody #zeta #Alpha #zeta #b/c\n");
    int64_t named = add(coll_a, "plain/named.md",
                        "---\naliases: [Zed, alpha, Zed]\ntags: [q, a, q]\n---\n# N\n#a #z\n");
    int64_t bare = add(coll_a, "plain/bare.md", "no heading, no tags\n");
    int64_t week = add(coll_a, "plain/2026-W14.md", "---\ntags: w\n---\n[[plain/bare]]\n");
    int64_t typed = add(coll_a, "plain/2024-06-01 typed.md", "---\nstatus: done\n---\n# T\n");
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM docs WHERE id IN (?1, ?1 + 1, ?1 + 2, ?1 + 3)"
                             " AND meta IS NULL", dated), 4);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ? AND key = ''"
                             " AND type = 4 AND txt IS NULL", dated), 1);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ?", named), 0);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ?", bare), 0);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ?", week), 1);
    assert_int_equal(one_int("SELECT count(*) FROM fields WHERE doc_id = ?", typed), 2);
    assert_int_equal(one_int("SELECT count(*) FROM tags WHERE doc_id = ?", dated), 3);
    assert_int_equal(one_int("SELECT count(*) FROM names WHERE doc_id = ?", named), 2);   /* md drops the repeat */
    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", bare), 1);
    assert_checks_clean();

    /* the link goes: the in-degree goes back to 0 (only changed rows are
     * written, so a stale count would stay) */
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_delete(st, week), TROVE_OK);
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT in_degree FROM docs WHERE id = ?", bare), 0);
    assert_checks_clean();
}


static ino_t inode_of(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return sb.st_ino;
}

static int exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* One transaction on an index (store_beside.c): `note` added, or (roll)
 * added and rolled back; returns how many notes the file holds after. */
static int64_t fresh_transaction(const char *path, const char *note, int roll)
{
    store *s;
    int64_t c, n = -1;
    assert_int_equal(store_open(path, 0, &s), TROVE_OK);
    assert_int_equal(store_collection_ensure(s, "f", "/vault/f", &c), TROVE_OK);
    assert_int_equal(store_begin(s), TROVE_OK);
    chunk_opts co = CHUNK_OPTS_DEFAULT;
    tu_index_note(s, c, "f", note, "# Fresh\n\nA fresh note about sourdough.\n", &co);
    if (roll)
        store_rollback(s);
    else
        assert_int_equal(store_commit(s), TROVE_OK);
    /* the store goes on with the file at path, whichever way it went */
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(store_db(s), "SELECT count(*) FROM docs", -1, &q, NULL),
                     SQLITE_OK);
    if (sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    store_close(s);
    return n;
}

/* The indexes of the file at path: each table's in the order SQLite plans
 * with (index_list), then every CREATE statement, sorted. */
static char *indexes_of(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
        "SELECT (SELECT group_concat(x, ' ') FROM (SELECT t.name || ':' || l.name AS x"
        "  FROM sqlite_schema t, pragma_index_list(t.name) l WHERE t.type = 'table'"
        "  ORDER BY t.name, l.seq)) || ' | ' ||"
        " (SELECT group_concat(sql, ' ') FROM (SELECT sql FROM sqlite_schema"
        "  WHERE type = 'index' AND sql IS NOT NULL ORDER BY sql))", -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    char *out = xstrdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

static void test_fresh_index_written_beside(void **state)
{
    (void)state;
    char path[128], build[160], wal[160];
    snprintf(path, sizeof path, "%s/fresh/index.db", dir);
    snprintf(build, sizeof build, "%s.build", path);
    snprintf(wal, sizeof wal, "%s-wal", path);
    store *s;
    assert_int_equal(store_open(path, 0, &s), TROVE_OK);
    store_close(s);
    /* rolled back: the file is the one it was, nothing left beside it */
    ino_t ino = inode_of(path);
    assert_int_equal(fresh_transaction(path, "n.md", 1), 0);
    assert_true(inode_of(path) == ino);
    assert_false(exists(build));
    /* beside another open connection: written in place through the WAL */
    sqlite3 *reader;
    assert_int_equal(sqlite3_open_v2(path, &reader, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(reader, "SELECT count(*) FROM docs", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(fresh_transaction(path, "n.md", 0), 1);
    assert_true(inode_of(path) == ino);
    sqlite3_close(reader);
    /* alone: written beside and renamed in, in WAL mode, no WAL left */
    char path2[128];
    snprintf(path2, sizeof path2, "%s/fresh2/index.db", dir);
    snprintf(build, sizeof build, "%s.build", path2);
    snprintf(wal, sizeof wal, "%s-wal", path2);
    assert_int_equal(store_open(path2, 0, &s), TROVE_OK);
    store_close(s);
    ino = inode_of(path2);
    assert_int_equal(fresh_transaction(path2, "n.md", 0), 1);
    assert_true(inode_of(path2) != ino);
    assert_false(exists(build));
    assert_false(exists(wal));
    /* the indexes the build dropped for its load are back, each in its
     * place among its table's (an update in place wrote path) */
    char *in_place = indexes_of(path), *built = indexes_of(path2);
    assert_string_equal(built, in_place);
    assert_non_null(strstr(built, "docs:docs_stem"));
    free(in_place);
    free(built);
    FILE *f = fopen(path2, "rb");
    unsigned char head[20];
    assert_non_null(f);
    assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
    fclose(f);
    assert_int_equal(head[18], 2);   /* WAL mode */
    assert_int_equal(head[19], 2);
    /* a note in it now: the next update writes in place */
    ino = inode_of(path2);
    assert_int_equal(fresh_transaction(path2, "m.md", 0), 2);
    assert_true(inode_of(path2) == ino);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolution_rules),
        cmocka_unit_test(test_dangling_resolves_and_delete_unresolves),
        cmocka_unit_test(test_rollback_keeps_previous_state),
        cmocka_unit_test(test_collection_rename_and_delete),
        cmocka_unit_test(test_foreign_database_refused),
        cmocka_unit_test(test_statement_cache),
        cmocka_unit_test(test_private_and_shrinking),
        cmocka_unit_test(test_index_lock),
        cmocka_unit_test(test_docs_after_pages),
        cmocka_unit_test(test_hide_globs),
        cmocka_unit_test(test_one_fts_flush_per_transaction),
        cmocka_unit_test(test_plain_note_rows_match_their_sql),
        cmocka_unit_test(test_fresh_index_written_beside),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
