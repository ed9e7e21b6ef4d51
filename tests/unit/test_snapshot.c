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
        "SELECT id, collection_id, path, path_key, stem, docid, title, size, mtime_ns, hash, meta,"
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
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop), TROVE_OK);
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
    assert_int_equal(store_snapshot_rollback(st, 3, &made, &noop), TROVE_OK);
    assert_int_equal(made.id, 5);
    store_snapshot_clear(&made);
    assert_healthy();
    char *b2 = dump();
    assert_string_equal(b, b2);

    /* And back to A again, across both rollbacks (5 -> 4 -> 3 -> 2 is
     * three undos in one transaction). */
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop), TROVE_OK);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a3 = dump();
    assert_string_equal(a, a3);

    /* The current one: nothing to do. */
    assert_int_equal(store_snapshot_rollback(st, 6, &made, &noop), TROVE_OK);
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
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop), TROVE_OK);
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
    store_snapshot_keep(st, 2);
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
    assert_int_equal(store_snapshot_rollback(st, 4, &made, &noop), TROVE_ENOENT);
    assert_non_null(strstr(trove_errmsg(), "no snapshot 4"));
    assert_non_null(strstr(trove_errmsg(), "snapshots 5, 6"));
    assert_int_equal(store_snapshot_rollback(st, 7, &made, &noop), TROVE_ENOENT);
    assert_int_equal(current(), 6);   /* refused: nothing changed */
    assert_int_equal(store_snapshot_rollback(st, 5, &made, &noop), TROVE_OK);
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
    assert_int_equal(store_snapshot_rollback(st, 1, &made, &noop), TROVE_OK);
    store_snapshot_clear(&made);
    char *a2 = dump();
    assert_string_equal(a, a2);
    free(a);
    free(a2);
}

/* A note whose file time alone changed costs its docs row; touched and
 * then deleted in one transaction, it is saved whole (from the touched
 * row's time and the untouched rest). Both roll back exactly. */
static void test_touch_records_little_and_rolls_back(void **state)
{
    (void)state;
    fixture_a();
    char *a = dump();
    bump_mtime("a/two.md", 500);
    update();
    assert_int_equal(current(), 3);
    assert_int_equal(one_int("SELECT count(*) FROM undo_docs WHERE snap = 3"), 1);
    assert_int_equal(one_int("SELECT kind FROM undo_docs WHERE snap = 3"), 2);
    assert_int_equal(one_int("SELECT count(*) FROM undo_chunks WHERE snap = 3"), 0);
    assert_int_equal(one_int("SELECT count(*) FROM undo_vecs WHERE snap = 3"), 0);
    assert_healthy();
    int64_t two = one_int("SELECT id FROM docs WHERE path = 'two.md'");
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_touch(st, two, 1, 1), TROVE_OK);
    assert_int_equal(store_doc_delete(st, two), TROVE_OK);
    assert_int_equal(store_links_resolve(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT kind FROM undo_docs WHERE snap = 4"), 1);
    assert_true(one_int("SELECT count(*) FROM undo_chunks WHERE snap = 4") > 0);
    assert_healthy();
    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop), TROVE_OK);
    store_snapshot_clear(&made);
    assert_healthy();
    char *a2 = dump();
    assert_string_equal(a, a2);
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
    assert_int_equal(store_snapshot_rollback(st, 2, &made, &noop), TROVE_OK);
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
        cmocka_unit_test_setup_teardown(test_touch_records_little_and_rolls_back, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
