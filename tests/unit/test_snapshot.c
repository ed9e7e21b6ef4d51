/* store snapshots: the undo log written by real `update` runs (index_update
 * over folders on disk), rollback back to every table's earlier content
 * (full-text matches and vectors included), rollback of a rollback,
 * retention, the v3 upgrade, and that a one-note change records one note. */
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
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "index/indexer.h"
#include "store/store.h"
#include "store/store_vec.h"
#include "util/buf.h"
#include "testutil.h"

static char dir[64];
static char idx[128];
static store *st;
static config cfg;

static void write_file(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    assert_int_equal(system(cmd), 0);
    *slash = '/';
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_file(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    assert_int_equal(unlink(path), 0);
}

/* A later mtime, so update re-reads (and, same bytes, only touches). */
static void bump_mtime(const char *rel, int secs)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct timeval tv[2] = {{1700000000 + secs, 0}, {1700000000 + secs, 0}};
    assert_int_equal(utimes(path, tv), 0);
}

static void add_collection(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    config_add_collection(&cfg, name, path, NULL, 0, NULL, 0);
}

static void update(void)
{
    index_opts o;
    index_opts_init(&o);
    index_update_result r;
    assert_int_equal(index_update(st, &cfg, NULL, 0, &o, &r), TROVE_OK);
    index_update_result_free(&r);
}

static int64_t one_int(const char *sql)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

static int64_t current(void)
{
    store_snapshot s;
    assert_int_equal(store_snapshot_current(st, &s), TROVE_OK);
    int64_t id = s.id;
    store_snapshot_clear(&s);
    return id;
}

static void assert_healthy(void)
{
    char **problems;
    size_t n;
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "problem: %s\n", problems[i]);
    store_problems_free(problems, n);
    assert_int_equal(n, 0);
}

/* Every row of every content table, ids included, as text. */
static void dump_sql(tbuf *b, const char *sql)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), sql, -1, &s, NULL), SQLITE_OK);
    tbuf_printf(b, "## %s\n", sql);
    while (sqlite3_step(s) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(s); i++) {
            const char *v = (const char *)sqlite3_column_text(s, i);
            tbuf_printf(b, "%s%s", i ? "|" : "", v ? v : "NULL");
        }
        tbuf_putc(b, '\n');
    }
    sqlite3_finalize(s);
}

static char *dump(void)
{
    static const char *const sqls[] = {
        "SELECT id, name, root FROM collections ORDER BY id",
        /* not mtime_ns: file times are not history (a touch is no
         * snapshot, and a rollback leaves a note's time as last seen) */
        "SELECT id, collection_id, path, path_key, stem, docid, title, size, hash, meta,"
        " n_lines, in_degree, lang FROM docs ORDER BY id",
        "SELECT id, doc_id, seq, heading, start_byte, end_byte, line_start, line_end FROM chunks"
        " ORDER BY id",
        "SELECT rowid, heading, body FROM chunks_fts ORDER BY rowid",
        "SELECT rowid, title, aliases, filename FROM titles_fts ORDER BY rowid",
        "SELECT doc_id, name FROM names ORDER BY doc_id, name",
        "SELECT tag, doc_id FROM tags ORDER BY tag, doc_id",
        "SELECT id, src_doc, kind, target, target_key, fragment, line, dst_doc FROM links ORDER BY id",
        /* the full-text indexes answer as before, not only the stored text */
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'alpha OR beta OR gamma OR delta OR"
        " epsilon OR zeta OR omega' ORDER BY rowid",
        "SELECT rowid FROM titles_fts WHERE titles_fts MATCH 'one OR two OR three OR deux OR four'"
        " ORDER BY rowid",
        "SELECT coalesce(sum(n - n_dead), 0) FROM vec_segs",
    };
    tbuf b = {0};
    for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++)
        dump_sql(&b, sqls[i]);
    /* Vectors by chunk, read back through vec_map as search would. */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT m.chunk_id, m.model_id, m.seg_id,"
                                        " m.slot, vm.dim FROM vec_map m JOIN vec_models vm"
                                        " ON vm.id = m.model_id ORDER BY 1, 2", -1, &s, NULL),
                     SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        int dim = sqlite3_column_int(s, 4);
        int8_t q[64];
        float scale;
        uint64_t hash;
        assert_int_equal(store_vec_read(st, sqlite3_column_int64(s, 2),
                                        (uint32_t)sqlite3_column_int64(s, 3), dim, q, &scale, &hash),
                         TROVE_OK);
        tbuf_printf(&b, "vec %lld/%lld %g %llx", (long long)sqlite3_column_int64(s, 0),
                    (long long)sqlite3_column_int64(s, 1), scale, (unsigned long long)hash);
        for (int i = 0; i < dim; i++)
            tbuf_printf(&b, " %d", q[i]);
        tbuf_putc(&b, '\n');
    }
    sqlite3_finalize(s);
    return tbuf_detach(&b);
}

/* Give every chunk without one a vector of model "m" (8 dimensions) made
 * from its id: a vector-only transaction, like `trove embed`. */
static void embed_all(void)
{
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-m", 8, "m", &model), TROVE_OK);
    store_vec_todo *todo;
    size_t n;
    assert_int_equal(store_vec_pending(st, model, 0, 10000, &todo, &n), TROVE_OK);
    store_vec_entry *e = xcalloc(n + 1, sizeof *e);
    int8_t (*q)[8] = xcalloc(n + 1, sizeof *q);
    for (size_t i = 0; i < n; i++) {
        for (int d = 0; d < 8; d++)
            q[i][d] = (int8_t)((todo[i].chunk_id * 7 + d * 13) % 255 - 127);
        e[i] = (store_vec_entry){todo[i].chunk_id, (uint64_t)todo[i].chunk_id * 1000003u,
                                 0.01f * (float)(todo[i].chunk_id % 50 + 1), q[i]};
    }
    size_t added;
    assert_int_equal(store_vec_add(st, model, 8, e, n, &added), TROVE_OK);
    assert_int_equal(added, n);
    assert_int_equal(store_commit(st), TROVE_OK);
    store_vec_todo_free(todo, n);
    free(e);
    free(q);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-snap.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(idx, sizeof idx, "%s/index.db", dir);
    memset(&cfg, 0, sizeof cfg);
    cfg.file = xstrdup("/nonexistent/config.yaml");
    return store_open(idx, 0, &st) != TROVE_OK;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    st = NULL;
    config_free(&cfg);
    return tu_rm_rf(dir);
}

/* Fixture A: two collections, aliases, tags, links across notes and
 * collections (one dangling), vectors for every chunk; and a link whose
 * target depends on history: [[shared]] in a/seven resolved to b/shared
 * while it was the only candidate and stays there after a/shared (a better
 * one) appears. Two updates: A is snapshot 2. */
static void fixture_a(void)
{
    write_file("a/seven.md", "# Seven\n\nlinks to [[shared]] and [[note]]\n");
    write_file("b/shared.md", "# Shared in b\n\nfrom b\n");
    write_file("a/zz/long/note.md", "# Deep note\n\nfar away\n");
    add_collection("a");
    add_collection("b");
    update();
    write_file("a/shared.md", "# Shared in a\n\nfrom a\n");
    write_file("a/note.md", "# Near note\n\nclose by\n");

    write_file("a/one.md", "---\ntitle: One\ntags: [first]\n---\n# One\n\nalpha words [[two]] and "
               "[[Deux]] #inline\n\n## Second part\n\nmore alpha [[nowhere]]\n");
    write_file("a/two.md", "---\naliases: [Deux, Zwei]\n---\n# Two\n\nbeta text [[one]] [[three]]\n");
    write_file("a/three.md", "# Three\n\ngamma [[two]] [link](sub/four.md)\n");
    write_file("a/sub/four.md", "# Four\n\ndelta [[three]]\n");
    write_file("b/five.md", "# Five\n\nepsilon [[one]] [[three]]\n");
    for (int i = 0; i < 5; i++) {
        static const char *const f[] = {"a/one.md", "a/two.md", "a/three.md", "a/sub/four.md",
                                        "b/five.md"};
        bump_mtime(f[i], i);
    }
    update();
    embed_all();
}

/* A to B: edit one, delete three, add six (which takes over the links to
 * "three" through its alias), rename four, touch two and seven, drop
 * collection b (and so b/shared, the target of seven's link). */
static void change_to_b(void)
{
    write_file("a/one.md", "# One\n\nzeta replaces alpha [[two]]\n");
    bump_mtime("a/one.md", 100);
    remove_file("a/three.md");
    write_file("a/six.md", "---\naliases: [three]\n---\n# Six\n\nomega [[one]]\n");
    bump_mtime("a/six.md", 101);
    write_file("a/sub/four-renamed.md", "# Four\n\ndelta [[three]]\n");
    bump_mtime("a/sub/four-renamed.md", 3);
    remove_file("a/sub/four.md");
    bump_mtime("a/two.md", 102);
    /* touched only (before the walk's deletions), and the targets of its
     * links go: b/shared with collection b, zz/long/note */
    bump_mtime("a/seven.md", 103);
    remove_file("a/zz/long/note.md");
    config_remove_collection(&cfg, "b");
    update();
    embed_all();
}

static void test_rollback_restores_every_table(void **state)
{
    (void)state;
    fixture_a();
    assert_int_equal(current(), 2);   /* the embed commit is no snapshot */
    assert_healthy();
    char *a = dump();
    char want_b[64], want_a[64];
    snprintf(want_b, sizeof want_b, "|shared|shared|NULL|3|%lld\n",
             (long long)one_int("SELECT id FROM docs WHERE path = 'shared.md' AND collection_id ="
                                " (SELECT id FROM collections WHERE name = 'b')"));
    snprintf(want_a, sizeof want_a, "|shared|shared|NULL|3|%lld\n",
             (long long)one_int("SELECT id FROM docs WHERE path = 'shared.md' AND collection_id ="
                                " (SELECT id FROM collections WHERE name = 'a')"));
    assert_non_null(strstr(a, want_b));   /* to b/shared, though a/shared is closer */
    assert_int_equal(one_int("SELECT d.path = 'zz/long/note.md' FROM links l JOIN docs d"
                             " ON d.id = l.dst_doc WHERE l.target = 'note'"), 1);

    change_to_b();
    assert_int_equal(current(), 3);
    assert_healthy();
    char *b = dump();
    assert_string_not_equal(a, b);
    assert_non_null(strstr(b, want_a));   /* b/shared went */
    assert_int_equal(one_int("SELECT d.path = 'note.md' FROM links l JOIN docs d"
                             " ON d.id = l.dst_doc WHERE l.target = 'note'"), 1);
    store_snapshot *list;
    size_t n;
    assert_int_equal(store_snapshots(st, 0, &list, &n), TROVE_OK);
    assert_int_equal(n, 3);
    assert_int_equal(list[0].id, 3);
    assert_string_equal(list[0].kind, "update");
    assert_int_equal(list[0].added, 2);      /* six, four-renamed */
    assert_int_equal(list[0].removed, 5);    /* three, four, five, b/shared, zz/long/note */
    assert_int_equal(list[0].modified, 1);   /* one (two and seven were only touched) */
    assert_int_equal(list[0].docs, 7);
    assert_int_equal(list[1].id, 2);
    assert_int_equal(list[1].docs, 10);
    store_snapshots_free(list, n);

    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_OK);
    assert_int_equal(noop, 0);
    assert_int_equal(made.id, 4);
    assert_string_equal(made.kind, "rollback");
    assert_string_equal(made.note, "rollback to 2");
    assert_int_equal(made.docs, 10);
    assert_int_equal(made.added, 5);
    assert_int_equal(made.removed, 2);
    assert_int_equal(made.modified, 1);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a2 = dump();
    assert_string_equal(a, a2);

    /* The rollback is a snapshot like any other: roll it back. */
    assert_int_equal(store_snapshot_rollback(st, 3, &made, &noop, NULL, NULL), TROVE_OK);
    assert_int_equal(made.id, 5);
    store_snapshot_clear(&made);
    assert_healthy();
    char *b2 = dump();
    assert_string_equal(b, b2);

    /* And back to A again, across both rollbacks (5 -> 4 -> 3 -> 2 is
     * three undos in one transaction). */
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_OK);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a3 = dump();
    assert_string_equal(a, a3);

    /* The current one: nothing to do. */
    assert_int_equal(store_snapshot_rollback(st, 6, &made, &noop, NULL, NULL), TROVE_OK);
    assert_int_equal(noop, 1);
    assert_int_equal(made.id, 6);
    store_snapshot_clear(&made);
    free(a);
    free(b);
    free(a2);
    free(b2);
    free(a3);
}

static void test_collection_rename_rolls_back(void **state)
{
    (void)state;
    fixture_a();
    char *a = dump();
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_rename(st, "a", "renamed"), TROVE_OK);
    store_snapshot_label(st, "collection", "rename a to renamed");
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(current(), 3);
    /* one collection row recorded, no note */
    assert_int_equal(one_int("SELECT count(*) FROM undo_colls WHERE snap = 3"), 1);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 3"), 0);
    assert_healthy();
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_OK);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a2 = dump();
    assert_string_equal(a, a2);
    free(a);
    free(a2);
}

static void test_retention_prunes_undo_rows(void **state)
{
    (void)state;
    fixture_a();
    store_snapshot_retention(st, &(store_retention){2, 0, 0, 0});
    for (int i = 0; i < 4; i++) {
        char text[64];
        snprintf(text, sizeof text, "# Two\n\nbeta version %d\n", i);
        write_file("a/two.md", text);
        bump_mtime("a/two.md", 200 + i);
        update();
        embed_all();
    }
    assert_int_equal(current(), 6);
    store_snapshot *list;
    size_t n;
    assert_int_equal(store_snapshots(st, 0, &list, &n), TROVE_OK);
    assert_int_equal(n, 2);
    assert_int_equal(list[0].id, 6);
    assert_int_equal(list[1].id, 5);
    store_snapshots_free(list, n);
    /* Only snapshot 6's undo rows are needed (to go back to 5). */
    assert_int_equal(one_int("SELECT count(*) FROM snapshots"), 2);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap != 6"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_chunks WHERE snap != 6"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_vecs WHERE snap != 6"), 0);
    assert_true(one_int("SELECT count(*) FROM undo_vecs WHERE snap = 6") > 0);
    assert_healthy();

    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 4, &made, &noop, NULL, NULL), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "no snapshot 4"));
    assert_non_null(strstr(trove_errmsg(), "snapshots 5, 6"));
    assert_int_equal(store_snapshot_rollback(st, 7, &made, &noop, NULL, NULL), TROVE_ENOENT);
    assert_int_equal(current(), 6);   /* refused: nothing changed */
    assert_int_equal(store_snapshot_rollback(st, 5, &made, &noop, NULL, NULL), TROVE_OK);
    assert_int_equal(made.id, 7);
    store_snapshot_clear(&made);
    assert_healthy();
}

/* A one-note edit on an index of 300 notes records that note only. */
static void test_one_note_change_records_one_note(void **state)
{
    (void)state;
    for (int i = 0; i < 300; i++) {
        char rel[64], text[128];
        snprintf(rel, sizeof rel, "a/n%03d.md", i);
        snprintf(text, sizeof text, "# Note %d\n\nbody %d [[n%03d]]\n\n## Part\n\nmore\n", i, i,
                 (i + 1) % 300);
        write_file(rel, text);
    }
    add_collection("a");
    update();
    embed_all();
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs"), 0);   /* first snapshot: bare */
    write_file("a/n150.md", "# Note 150\n\nedited [[n151]]\n");
    bump_mtime("a/n150.md", 999);
    update();
    assert_int_equal(current(), 2);
    /* the old note (before-image) and the new one (created) */
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 2"), 2);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 2 AND kind = 1"), 1);
    /* its chunks and their vectors: as many as a note like it has */
    int64_t per_note = one_int("SELECT count(*) FROM chunks c JOIN docs d ON d.id = c.doc_id"
                               " WHERE d.path = 'n149.md'");
    assert_true(per_note >= 1);
    assert_int_equal(one_int("SELECT count(*) FROM undo_chunks WHERE snap = 2"), per_note);
    assert_int_equal(one_int("SELECT count(*) FROM undo_vecs WHERE snap = 2"), per_note);
    assert_int_equal(one_int("SELECT count(*) FROM undo_links WHERE snap = 2"), 1);
    /* the one link of an untouched note that pointed at it */
    assert_int_equal(one_int("SELECT count(*) FROM undo_dst WHERE snap = 2"), 1);
    assert_healthy();
}

/* An index of schema version 3 becomes snapshot 1 when opened writable. */
static void test_upgrade_from_v3(void **state)
{
    (void)state;
    fixture_a();
    assert_int_equal(store_exec(st, "DROP TABLE snapshots; DROP TABLE undo_docs; DROP TABLE undo_chunks;"
                                    " DROP TABLE undo_names; DROP TABLE undo_tags; DROP TABLE undo_links;"
                                    " DROP TABLE undo_dst; DROP TABLE undo_vecs; DROP TABLE undo_colls;"
                                    " DELETE FROM meta WHERE key = 'snapshot';"
                                    " UPDATE meta SET value = '3' WHERE key = 'schema_version'"),
                     TROVE_OK);
    store_close(st);
    assert_int_equal(store_open(idx, STORE_READONLY, &st), TROVE_ECORRUPT);
    assert_int_equal(store_open(idx, 0, &st), TROVE_OK);
    store_snapshot s;
    assert_int_equal(store_snapshot_current(st, &s), TROVE_OK);
    assert_int_equal(s.id, 1);
    assert_string_equal(s.kind, "upgrade");
    assert_int_equal(s.docs, 10);
    store_snapshot_clear(&s);
    assert_healthy();
    char *a = dump();
    write_file("a/two.md", "# Two\n\nrewritten\n");
    bump_mtime("a/two.md", 300);
    update();
    assert_int_equal(current(), 2);
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 1, &made, &noop, NULL, NULL), TROVE_OK);
    store_snapshot_clear(&made);
    char *a2 = dump();
    assert_string_equal(a, a2);
    free(a);
    free(a2);
}

/* A note whose file time alone changed gets its stored time updated and
 * is no snapshot: three touches in a row leave the history as it was.
 * Touched and then edited in one transaction, it is saved whole, with the
 * time it had when it was deleted (times are not history), and rolls back
 * exactly. */
static void test_touch_is_no_snapshot(void **state)
{
    (void)state;
    fixture_a();
    char *a = dump();
    for (int i = 0; i < 3; i++) {
        bump_mtime("a/two.md", 500 + i);
        update();
        assert_int_equal(current(), 2);
        assert_int_equal(one_int("SELECT mtime_ns FROM docs WHERE path = 'two.md'"),
                         (1700000000LL + 500 + i) * 1000000000LL);
    }
    assert_int_equal(one_int("SELECT count(*) FROM snapshots"), 2);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap > 2"), 0);
    assert_healthy();
    int64_t two = one_int("SELECT id FROM docs WHERE path = 'two.md'");
    int64_t size = one_int("SELECT size FROM docs WHERE path = 'two.md'");
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_touch(st, two, size, 1), TROVE_OK);
    assert_int_equal(store_doc_delete(st, two), TROVE_OK);
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(current(), 3);
    assert_int_equal(one_int("SELECT kind FROM undo_docs WHERE snap = 3"), 1);
    assert_true(one_int("SELECT count(*) FROM undo_chunks WHERE snap = 3") > 0);
    assert_healthy();
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_OK);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a2 = dump();
    assert_string_equal(a, a2);
    assert_int_equal(one_int("SELECT mtime_ns FROM docs WHERE path = 'two.md'"), 1);
    free(a);
    free(a2);
}

/* Vectors saved by a snapshot belong to their model: once it is dropped
 * (`embed --prune`), a rollback brings no vector back, even for a new
 * model that reuses its id. */
static void test_dropped_model_vectors_stay_dropped(void **state)
{
    (void)state;
    fixture_a();
    change_to_b();
    int64_t old_model = one_int("SELECT id FROM vec_models WHERE fingerprint = 'fp-m'");
    assert_true(one_int("SELECT count(*) FROM undo_vecs") > 0);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_drop(st, old_model), TROVE_OK);
    int64_t other;
    assert_int_equal(store_vec_model_ensure(st, "fp-other", 8, "other", &other), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(other, old_model);   /* the id is reused */
    assert_int_equal(one_int("SELECT count(*) FROM undo_vecs"), 0);
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_OK);
    store_snapshot_clear(&made);
    assert_int_equal(one_int("SELECT count(*) FROM vec_map"), 0);
    assert_healthy();
}

/* An update that changes nothing is no snapshot; a failed transaction
 * leaves none either. */
static void test_no_change_no_snapshot(void **state)
{
    (void)state;
    fixture_a();
    update();
    update();
    assert_int_equal(current(), 2);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_rename(st, "a", "x"), TROVE_OK);
    store_rollback(st);
    assert_int_equal(current(), 2);
    assert_int_equal(one_int("SELECT count(*) FROM undo_colls"), 0);
    update();
    assert_int_equal(current(), 2);
}

/* ---- retention: merging kept history ---- */

static int64_t mtime_seq = 10000;

/* Write a note with a fresh file time (so update re-reads it). */
static void put(const char *rel, const char *text)
{
    write_file(rel, text);
    bump_mtime(rel, (int)++mtime_seq);
}

/* The notes of the index as "collection|path|hash" lines, for counting
 * changes between two states independently of the store. */
static char *note_set(void)
{
    tbuf b = {0};
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT c.name, d.path, d.hash FROM docs d"
                                        " JOIN collections c ON c.id = d.collection_id ORDER BY 1, 2",
                                        -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW)
        tbuf_printf(&b, "%s|%s|%s\n", sqlite3_column_text(s, 0), sqlite3_column_text(s, 1),
                    sqlite3_column_text(s, 2));
    sqlite3_finalize(s);
    return tbuf_detach(&b);
}

/* The last '|' in [p, end). */
static const char *strrchr_n(const char *p, const char *end)
{
    const char *last = p;
    for (; p < end; p++)
        if (*p == '|')
            last = p;
    return last;
}

/* Notes added, removed and modified (same collection|path, other hash)
 * from one note_set() to another. */
static int find_key(const char *set, const char *line, size_t key, size_t len, int *same)
{
    for (const char *m = set; *m;) {
        const char *mn = strchr(m, '\n');
        size_t mkey = (size_t)(strrchr_n(m, mn) - m) + 1;
        if (mkey == key && strncmp(m, line, key) == 0) {
            *same = (size_t)(mn - m) + 1 == len && strncmp(m, line, len) == 0;
            return 1;
        }
        m = mn + 1;
    }
    return 0;
}

static void diff_notes(const char *from, const char *to, int64_t *added, int64_t *removed,
                       int64_t *modified)
{
    *added = *removed = *modified = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *a = pass ? to : from, *b = pass ? from : to;
        for (const char *l = a; *l;) {
            const char *nl = strchr(l, '\n');
            size_t key = (size_t)(strrchr_n(l, nl) - l) + 1, len = (size_t)(nl - l) + 1;
            int same = 0;
            if (!find_key(b, l, key, len, &same))
                (*(pass ? added : removed))++;
            else if (!same && pass)
                (*modified)++;
            l = nl + 1;
        }
    }
}

#define N_STEPS 13

/* The day of the test (UTC, TZ set by the test): midnight D, "now" 08:30. */
#define DAY0 1799971200LL
static const int64_t step_time[N_STEPS + 1] = {
    0,
    DAY0 - 40 * 86400 + 12 * 3600,       /* 1: out of the daily window at 2 */
    DAY0 - 3 * 86400 + 10 * 3600,        /* 2: its hour goes at 4: the oldest, dropped */
    DAY0 - 3 * 86400 + 11 * 3600,        /* 3: the newest of day D-3: kept */
    DAY0 - 2 * 86400 + 9 * 3600,         /* 4: merged into 5 */
    DAY0 - 2 * 86400 + 10 * 3600,        /* 5: the newest of day D-2 */
    DAY0 + 2 * 3600 + 10 * 60,           /* 6, 7: merged into 8 */
    DAY0 + 2 * 3600 + 20 * 60,
    DAY0 + 2 * 3600 + 30 * 60,           /* 8: the newest of hour 02 */
    DAY0 + 6 * 3600,                     /* 9: hour 06 */
    DAY0 + 7 * 3600 + 5 * 60,            /* 10, 11: merged into 12 */
    DAY0 + 7 * 3600 + 6 * 60,
    DAY0 + 7 * 3600 + 58 * 60,           /* 12: the newest of hour 07, and of the last hour */
    DAY0 + 8 * 3600 + 30 * 60,           /* 13: now */
};

static void at(int64_t t)
{
    char v[32];
    snprintf(v, sizeof v, "%lld", (long long)t);
    setenv("TROVE_NOW", v, 1);
}

/* One day of edits: every kind of change that undo rows must get right
 * when snapshots are merged: edits, creates, deletes, renames, a note id
 * reused after the newest note was deleted, a link that resolves from
 * dangling, goes dangling and resolves elsewhere (by alias), a collection
 * dropped and added back, touches. */
static void step(int i)
{
    switch (i) {
    case 1:
        put("a/hub.md", "# Hub\n\nalpha [[target]] and [[n1]]\n");
        put("a/n1.md", "# N1\n\nalpha one\n");
        put("a/n2.md", "# N2\n\nbeta [[n1]]\n");
        put("b/other.md", "# Other\n\ndelta [[hub]]\n");
        add_collection("a");
        add_collection("b");
        break;
    case 2: put("a/n1.md", "# N1\n\ngamma one\n"); break;
    case 3: put("a/target.md", "# Target\n\nzeta\n"); break;
    case 4:
        remove_file("a/target.md");
        put("a/n3.md", "---\naliases: [target]\n---\n# N3\n\nepsilon [[n2]]\n");
        break;
    case 5:
        put("a/n2.md", "# N2\n\nbeta two [[n1]] [[n3]]\n");
        remove_file("a/n3.md");   /* the newest id: the next note reuses it */
        break;
    case 6:
        put("a/n5.md", "# N5\n\nomega [[n2]] [[target]]\n");
        put("a/target.md", "# Target\n\nzeta again\n");
        break;
    case 7:
        config_remove_collection(&cfg, "b");
        write_file("a/n1-renamed.md", "# N1\n\ngamma one\n");
        bump_mtime("a/n1-renamed.md", (int)++mtime_seq);
        remove_file("a/n1.md");
        /* created in 6, gone in 7: the links that resolved to it in 6
         * (hub's, unchanged) were dangling before 6 */
        remove_file("a/target.md");
        break;
    case 8:
        add_collection("b");
        put("b/other.md", "# Other\n\ndelta edited [[hub]] [[n5]]\n");
        put("a/hub.md", "# Hub\n\nalpha [[target]] and [[n1-renamed]]\n");
        /* keep's [[shared]] takes a/shared, the only candidate ... */
        put("a/shared.md", "# Shared in a\n\nfrom a\n");
        put("b/keep.md", "# Keep\n\nsee [[shared]]\n");
        break;
    case 9:
        put("a/target.md", "# Target\n\nthird time\n");
        /* ... and keeps it when a better one (its own collection) appears */
        put("b/shared.md", "# Shared in b\n\nfrom b\n");
        put("b/keep2.md", "# Keep2\n\nwaiting for [[later]]\n");   /* dangling */
        bump_mtime("a/n2.md", (int)++mtime_seq);   /* touched only */
        break;
    case 10:
        put("a/zeta.md", "# Zeta\n\nlinks [[n5]]\n");
        remove_file("a/n5.md");
        remove_file("a/target.md");
        remove_file("a/shared.md");   /* keep's link: saved in 10 (to a/shared) ... */
        put("a/later.md", "# Later\n\nlate\n");   /* keep2's link resolves */
        break;
    case 11:
        put("a/n5.md", "---\naliases: [target]\n---\n# N5\n\nback again\n");
        put("a/zeta.md", "# Zeta\n\nlinks [[n5]] edited\n");
        break;
    case 12:
        put("a/n2.md", "# N2\n\nbeta three\n");
        remove_file("b/shared.md");   /* ... and in 12 (to b/shared): 10's wins */
        /* hub's [[target]] took n5 (created in 11) by its alias: hub's
         * links as saved in 12 point at a note that was not there at 9 */
        put("a/hub.md", "# Hub\n\nalpha [[target]] and [[n1-renamed]] again\n");
        remove_file("a/n5.md");
        /* keep2's link as saved in 12 points at later, not there at 9 (and
         * no saved target of 10 corrects it) */
        put("b/keep2.md", "# Keep2\n\nwaiting for [[later]], edited\n");
        break;
    case 13:
        remove_file("a/n1-renamed.md");
        put("a/new.md", "# New\n\ngamma [[zeta]]\n");
        break;
    }
}

static void test_retention_merges_exactly(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    store_snapshot_retention(st, &(store_retention){1, 60, 24, 30});
    char *dumps[N_STEPS + 1] = {0}, *sets[N_STEPS + 1] = {0};
    for (int i = 1; i <= N_STEPS; i++) {
        at(step_time[i]);
        step(i);
        update();
        embed_all();
        assert_int_equal(current(), i);
        dumps[i] = dump();
        sets[i] = note_set();
        assert_healthy();
    }
    static const int64_t kept[] = {13, 12, 9, 8, 5, 3};
    store_snapshot *list;
    size_t n;
    assert_int_equal(store_snapshots(st, 0, &list, &n), TROVE_OK);
    assert_int_equal(n, sizeof kept / sizeof *kept);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(list[i].id, kept[i]);
        assert_int_equal(list[i].created_at, step_time[kept[i]]);
        /* each kept snapshot's changes are against the kept one before it */
        if (i + 1 < n) {
            int64_t ad, rm, md;
            diff_notes(sets[kept[i + 1]], sets[kept[i]], &ad, &rm, &md);
            assert_int_equal(list[i].added, ad);
            assert_int_equal(list[i].removed, rm);
            assert_int_equal(list[i].modified, md);
        }
    }
    store_snapshots_free(list, n);
    /* no undo rows of snapshots that went, none of the oldest kept one */
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap NOT IN (13, 12, 9, 8, 5)"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_chunks WHERE snap NOT IN (13, 12, 9, 8, 5)"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_vecs WHERE snap NOT IN (13, 12, 9, 8, 5)"), 0);
    /* Proportional to what changed across a merged span, not to how often:
     * zeta, created in 10 and edited in 11, did not exist before 10, so the
     * merged snapshot 12 keeps no before-image of it (its "created" rows
     * only); n5, target, a/shared, b/shared, hub, keep2 and n2 (there at 9) are
     * saved once each. */
    assert_int_equal(one_int("SELECT count(*) FROM undo_chunks WHERE snap = 12 AND f_body LIKE"
                             " '%links%'"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 12 AND kind = 1"), 7);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 12 AND kind = 1 AND"
                             " path = 'n2.md'"), 1);

    /* Rolling back to every kept snapshot gives exactly its state, going
     * back and forth (each rollback is a snapshot of "now"). */
    static const int64_t order[] = {12, 9, 8, 5, 3, 13, 5, 8, 3, 9};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        store_snapshot made;
        int noop;
        assert_int_equal(store_snapshot_rollback(st, order[i], &made, &noop, NULL, NULL), TROVE_OK);
        store_snapshot_clear(&made);
        assert_healthy();
        char *now = dump();
        if (strcmp(now, dumps[order[i]]) != 0)
            fprintf(stderr, "rollback to %lld:\n--- want\n%s--- have\n%s", (long long)order[i],
                    dumps[order[i]], now);
        assert_string_equal(now, dumps[order[i]]);
        free(now);
        /* Notes created and gone again inside a merged span (zeta's first
         * id: created in 10, rewritten in 11) leave no "created" row in the
         * kept snapshot: every one it keeps is there in its state. */
        if (order[i] == 12)
            assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 12 AND kind = 0"
                                     " AND doc_id NOT IN (SELECT id FROM docs)"), 0);
    }
    /* 2 and 1 went */
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, NULL, NULL), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "snapshots 3, 5, 8, 9, 12, 13"));
    for (int i = 1; i <= N_STEPS; i++) {
        free(dumps[i]);
        free(sets[i]);
    }
    unsetenv("TROVE_NOW");
}

/* The old form `snapshots: N` keeps the newest N only, whatever their age. */
static void test_retention_count_form(void **state)
{
    (void)state;
    store_snapshot_retention(st, &(store_retention){3, 0, 0, 0});
    for (int i = 1; i <= 6; i++) {
        at(DAY0 + i);   /* all within a second: no window keeps more */
        if (i == 1)
            add_collection("a");
        char text[64];
        snprintf(text, sizeof text, "# Two\n\nversion %d\n", i);
        put("a/two.md", text);
        update();
    }
    assert_int_equal(one_int("SELECT count(*) FROM snapshots"), 3);
    assert_int_equal(one_int("SELECT min(id) FROM snapshots"), 4);
    assert_healthy();
    unsetenv("TROVE_NOW");
}

/* The settings recorded with a collection's removal come back with a
 * rollback past it; one dropped by an update (after a hand edit) comes
 * back without any. */
static void test_rollback_returns_removed_collections(void **state)
{
    (void)state;
    fixture_a();
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_snapshot_coll_conf(st, "b", "{\"mask\":[\"*.md\"]}"), TROVE_OK);
    assert_int_equal(store_collection_delete(st, "b"), TROVE_OK);
    store_snapshot_label(st, "collection", "remove b");
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(current(), 3);
    config_remove_collection(&cfg, "b");
    config_remove_collection(&cfg, "a");
    update();   /* drops a */
    assert_int_equal(current(), 4);
    assert_int_equal(one_int("SELECT count(*) FROM collections"), 0);
    store_snapshot made;
    int noop;
    store_restored_coll *c;
    size_t n;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop, &c, &n), TROVE_OK);
    store_snapshot_clear(&made);
    assert_int_equal(n, 2);
    assert_string_equal(c[0].name, "a");
    assert_null(c[0].conf);
    assert_string_equal(c[1].name, "b");
    assert_string_equal(c[1].conf, "{\"mask\":[\"*.md\"]}");
    assert_non_null(strstr(c[1].root, "/b"));
    store_restored_colls_free(c, n);
    assert_healthy();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rollback_restores_every_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collection_rename_rolls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_prunes_undo_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_note_change_records_one_note, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_change_no_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_model_vectors_stay_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touch_is_no_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_merges_exactly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_count_form, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_returns_removed_collections, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
