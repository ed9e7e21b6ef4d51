/* What a resident reader's store keeps across read transactions: the note
 * map's rows (store_nmap_keep), titles_fts rows' lengths
 * (store_lens_keep), keyword phrases' walks (store_posts_keep) and the
 * rows per phrase store_rank_rows counted (store_rank_keep). A read-only
 * store answers as a fresh reader would,
 * before and after another connection's commits changed them, and a
 * store that writes keeps nothing it could answer stale from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "chunk/chunk.h"
#include "md/md.h"
#include "store/store_lens.h"
#include "store/store_nmap.h"
#include "store/store_posts.h"
#include "store/store_rank.h"
#include "text/lang.h"
#include "text/query.h"
#include "util/str.h"
#include "testutil.h"

static char dir[64], path[128];
static store *wr;     /* the writer */
static int64_t coll;

static int setup(void **state)
{
    (void)state;
    if (tu_mkdtemp("nmap-keep", dir, sizeof dir) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/index.db", dir);
    return store_open(path, 0, &wr) == TROVE_OK &&
                   store_collection_ensure(wr, "v", "/vault/v", &coll) == TROVE_OK
               ? 0
               : -1;
}

static int teardown(void **state)
{
    (void)state;
    store_close(wr);
    return tu_rm_rf(dir);
}

/* Notes first..first+n, committed; their ids into ids[]. `longer`: their
 * titles have more words. */
static void add_notes_titled(int first, int n, int64_t *ids, int longer)
{
    chunk_opts co = CHUNK_OPTS_DEFAULT;
    assert_int_equal(store_begin(wr), TROVE_OK);
    for (int i = 0; i < n; i++) {
        char name[32], text[200];
        snprintf(name, sizeof name, "n%04d.md", first + i);
        snprintf(text, sizeof text, "# Note mango %d%s\n\nmango kiwi %d\n\n## More\n\nguava %d lychee\n",
                 first + i, longer ? " kiwi guava lychee quince" : "", first + i, first + i);
        ids[i] = tu_index_note(wr, coll, "v", name, text, &co);
    }
    assert_int_equal(store_commit(wr), TROVE_OK);
}

static void add_notes(int first, int n, int64_t *ids)
{
    add_notes_titled(first, n, ids, 0);
}

/* Every chunk id up to the largest one (and past it) answered by a reader
 * of `st` in one read transaction as the chunks table says, and every
 * note's link inputs as the docs row says. */
static void assert_map_is_tables(store *st)
{
    assert_int_equal(store_read_begin(st), TROVE_OK);
    store_nmap_reader *r = store_nmap_reader_new(st);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT max(id) FROM chunks", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t max = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT doc_id FROM chunks WHERE id = ?1",
                                        -1, &s, NULL), SQLITE_OK);
    for (int64_t c = 1; c <= max + 3; c++) {
        sqlite3_bind_int64(s, 1, c);
        int64_t want = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
        sqlite3_reset(s);
        int64_t got = 0;
        trove_err rc = TROVE_OK;
        int said = store_nmap_chunk_note(r, c, &got, &rc);
        assert_int_equal(rc, TROVE_OK);
        assert_int_equal(said, want != 0);
        assert_int_equal(got, want);
    }
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT id, in_degree FROM docs", -1, &s,
                                        NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        int deg = -1;
        char lang[3];
        trove_err rc = TROVE_OK;
        assert_int_equal(store_nmap_note_links(r, sqlite3_column_int64(s, 0), &deg, lang, &rc), 1);
        assert_int_equal(deg, sqlite3_column_int(s, 1));
    }
    sqlite3_finalize(s);
    store_nmap_reader_free(r);
    store_read_end(st);
}

static void test_kept_rows_follow_commits(void **state)
{
    (void)state;
    int64_t ids[40];
    add_notes(0, 20, ids);
    store *rd;
    assert_int_equal(store_open(path, STORE_READONLY, &rd), TROVE_OK);
    store_nmap_keep(rd);
    assert_map_is_tables(rd);
    assert_map_is_tables(rd);   /* from the kept rows */
    /* another connection deletes notes and adds others: chunk ids gone,
     * new ones, rows rewritten in place */
    assert_int_equal(store_begin(wr), TROVE_OK);
    for (int i = 0; i < 20; i += 3)
        assert_int_equal(store_doc_delete(wr, ids[i]), TROVE_OK);
    assert_int_equal(store_commit(wr), TROVE_OK);
    assert_map_is_tables(rd);
    add_notes(100, 30, ids);
    assert_map_is_tables(rd);
    assert_map_is_tables(rd);
    store_close(rd);
}

/* Two store_rank_rows answers: the same rows, the same bits (both freed). */
static void assert_same_rows(store_rank *a, store_rank *b)
{
    assert_int_equal(a->n_rows, b->n_rows);
    for (size_t i = 0; i < a->n_rows; i++) {
        assert_int_equal(a->row_id[i], b->row_id[i]);
        assert_memory_equal(&a->row_score[i], &b->row_score[i], sizeof(double));
    }
    store_rank_free(a);
    store_rank_free(b);
}

/* The title channel's ranking (store_rank_rows over titles_fts) with the
 * lengths a keeping store lends, in one read transaction of st, against
 * FTS5's own lengths: the same rows, the same bits. */
static void assert_titles_ranked_as_fts5(store *st)
{
    static const char *const queries[] = {"\"mango\"", "\"note\" OR \"kiwi\"", "\"quince\""};
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        assert_int_equal(store_read_begin(st), TROVE_OK);
        store_rank kept = {.weight = {3.0, 2.0}, .lens = store_lens_current(st)};
        store_rank fts5 = {.weight = {3.0, 2.0}};
        assert_int_equal(store_rank_rows(st, STORE_RANK_TITLES, queries[q], &kept), TROVE_OK);
        assert_int_equal(store_rank_rows(st, STORE_RANK_TITLES, queries[q], &fts5), TROVE_OK);
        store_read_end(st);
        assert_same_rows(&kept, &fts5);
    }
}

static void test_kept_title_lengths_follow_commits(void **state)
{
    (void)state;
    int64_t ids[20];
    add_notes_titled(300, 20, ids, 0);
    store *rd;
    assert_int_equal(store_open(path, STORE_READONLY, &rd), TROVE_OK);
    store_lens_keep(rd);
    assert_non_null(store_lens_current(rd));
    assert_titles_ranked_as_fts5(rd);
    assert_titles_ranked_as_fts5(rd);   /* from the kept lengths */
    /* the last note (the largest id) again with a longer title: SQLite
     * gives the new row the id the old one had, so a length kept for
     * that id would be stale */
    for (int longer = 1; longer >= 0; longer--) {
        int64_t last = ids[19];
        assert_int_equal(store_begin(wr), TROVE_OK);
        assert_int_equal(store_doc_delete(wr, last), TROVE_OK);
        assert_int_equal(store_commit(wr), TROVE_OK);
        add_notes_titled(319, 1, &ids[19], longer);
        assert_int_equal(ids[19], last);
        assert_titles_ranked_as_fts5(rd);
        assert_titles_ranked_as_fts5(rd);
    }
    store_close(rd);
    store_lens_keep(wr);   /* a writer: keeps none */
    assert_null(store_lens_current(wr));
}

/* store_rank_rows on st (keeping walks) and on a reader keeping nothing,
 * each in its own read transaction: the same rows, the same bits, for
 * chunks and titles, every row and with a cap (pruned, lengths read
 * late). `kept`: st's walks of the queries are kept after the first. */
static void assert_walks_ranked_as_fts5(store *st, store *plain, int kept)
{
    static const char *const queries[] = {"\"mango\"", "\"note\" OR \"kiwi\"",
                                          "\"quince\" OR \"guava\" OR \"lychee\"",
                                          "\"lych\" * OR \"mango kiwi\"", "\"nothing\""};
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++)
        for (int table = 0; table < 2; table++)
            for (size_t top = 0; top <= 4; top += 4) {
                store_rank r[2] = {{.top = top, .prune_small = 1}, {.top = top, .prune_small = 1}};
                store *on[2] = {st, plain};
                for (int k = 0; k < 2; k++) {
                    r[k].weight[0] = table ? 3.0 : 5.0;
                    r[k].weight[1] = table ? 2.0 : 1.0;
                    assert_int_equal(store_read_begin(on[k]), TROVE_OK);
                    assert_int_equal(store_rank_rows(on[k], table, queries[q], &r[k]), TROVE_OK);
                    if (k == 0) {
                        store_posts *p = store_posts_current(st);
                        const store_post *rows;
                        size_t n;
                        assert_non_null(p);
                        assert_int_equal(store_posts_find(p, table, r[0].weight,
                                                          queries[q] + 1, 1, &rows, &n), 0);
                        if (kept && !top && r[0].n_rows && !strchr(queries[q], '*'))
                            assert_int_equal(store_posts_find(p, table, r[0].weight,
                                                              queries[q], strcspn(queries[q] + 1, "\"") + 2,
                                                              &rows, &n), 1);
                    }
                    store_read_end(on[k]);
                }
                assert_int_equal(r[0].n_rows, r[1].n_rows);
                assert_int_equal(r[0].cut, r[1].cut);
                for (size_t i = 0; i < r[0].n_rows; i++) {
                    assert_int_equal(r[0].row_id[i], r[1].row_id[i]);
                    assert_memory_equal(&r[0].row_score[i], &r[1].row_score[i], sizeof(double));
                }
                store_rank_free(&r[0]);
                store_rank_free(&r[1]);
            }
}

static void test_kept_walks_follow_commits(void **state)
{
    (void)state;
    int64_t ids[20];
    add_notes_titled(400, 20, ids, 0);
    store *rd, *plain;
    assert_int_equal(store_open(path, STORE_READONLY, &rd), TROVE_OK);
    assert_int_equal(store_open(path, STORE_READONLY, &plain), TROVE_OK);
    store_posts_keep(rd);
    assert_walks_ranked_as_fts5(rd, plain, 0);
    assert_walks_ranked_as_fts5(rd, plain, 1);   /* from the kept walks */
    /* notes deleted, one again with more words under the same row ids,
     * others added: the kept walks' rows, frequencies and lengths stale */
    for (int longer = 1; longer >= 0; longer--) {
        int64_t last = ids[19];
        assert_int_equal(store_begin(wr), TROVE_OK);
        for (int i = 0; i < 20; i += 7)
            assert_int_equal(store_doc_delete(wr, ids[i]), TROVE_OK);
        assert_int_equal(store_doc_delete(wr, last), TROVE_OK);
        assert_int_equal(store_commit(wr), TROVE_OK);
        add_notes_titled(419, 1, &ids[19], longer);
        assert_walks_ranked_as_fts5(rd, plain, 0);
        assert_walks_ranked_as_fts5(rd, plain, 1);
        add_notes_titled(500 + 10 * longer, 5, ids, longer);
        assert_walks_ranked_as_fts5(rd, plain, 0);
        assert_walks_ranked_as_fts5(rd, plain, 1);
    }
    store_close(plain);
    store_close(rd);
    store_posts_keep(wr);   /* a writer: keeps none */
    assert_null(store_posts_current(wr));
}

/* A writer asked to keep rows keeps none: its own commits leave its
 * data_version as it was. */
static void test_writer_keeps_nothing(void **state)
{
    (void)state;
    int64_t ids[10];
    store_nmap_keep(wr);
    assert_map_is_tables(wr);
    assert_int_equal(store_begin(wr), TROVE_OK);
    assert_int_equal(store_doc_delete(wr, 1), TROVE_OK);
    assert_int_equal(store_commit(wr), TROVE_OK);
    add_notes(200, 10, ids);
    assert_map_is_tables(wr);
}

/* store_rank_rows of st (keeping its counts or not), with a cap and
 * pruning, against the writer's (a connection that keeps nothing) in a
 * read transaction each: the same rows and bits, and each phrase's rows
 * as count(*) of its MATCH on st now. With `kept`, st's first read
 * transaction already knows the rows of "mango" (counted in an earlier
 * one, data_version unchanged since). */
static void assert_counts_current(store *st, int kept)
{
    static const char *const queries[] = {"\"mango\" OR \"kiwi\"", "\"guava\" OR \"mango\"",
                                          "\"lychee\" OR \"note\" OR \"more\""};
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
        for (int t = 0; t < 2; t++) {
            store_rank_table table = t ? STORE_RANK_TITLES : STORE_RANK_CHUNKS;
            store_rank a = {.weight = {2.0, 1.0}, .top = 3, .prune_small = 1};
            store_rank b = a;
            assert_int_equal(store_read_begin(st), TROVE_OK);
            int64_t hits;
            if (q == 0 && t == 0)
                assert_int_equal(store_rank_hits(st, "mango", NULL, &hits), kept);
            assert_int_equal(store_rank_rows(st, table, queries[q], &a), TROVE_OK);
            sqlite3_stmt *s;
            assert_int_equal(sqlite3_prepare_v2(store_db(st), t ? "SELECT count(*) FROM titles_fts"
                                                                  " WHERE titles_fts MATCH ?1"
                                                                : "SELECT count(*) FROM chunks_fts"
                                                                  " WHERE chunks_fts MATCH ?1",
                                                -1, &s, NULL), SQLITE_OK);
            query_span sp[4];
            size_t n_neg, n = query_fts_phrases(queries[q], sp, 4, &n_neg);
            assert_int_equal(a.n_phrase, (int)n);
            for (size_t i = 0; i < n; i++) {
                sqlite3_bind_text(s, 1, queries[q] + sp[i].off, (int)sp[i].len, SQLITE_STATIC);
                assert_int_equal(sqlite3_step(s), SQLITE_ROW);
                assert_int_equal(a.hits[i], sqlite3_column_int64(s, 0));
                sqlite3_reset(s);
            }
            sqlite3_finalize(s);
            store_read_end(st);
            assert_int_equal(store_read_begin(wr), TROVE_OK);
            assert_int_equal(store_rank_rows(wr, table, queries[q], &b), TROVE_OK);
            store_read_end(wr);
            assert_same_rows(&a, &b);
        }
    }
}

static void test_kept_phrase_counts_follow_commits(void **state)
{
    (void)state;
    int64_t ids[20];
    add_notes(600, 20, ids);
    store *rd;
    assert_int_equal(store_open(path, STORE_READONLY, &rd), TROVE_OK);
    store_rank_keep(rd);
    assert_counts_current(rd, 0);
    assert_counts_current(rd, 1);   /* from the kept counts */
    /* another connection deletes notes, then adds more: every count changes */
    assert_int_equal(store_begin(wr), TROVE_OK);
    for (int i = 0; i < 20; i += 2)
        assert_int_equal(store_doc_delete(wr, ids[i]), TROVE_OK);
    assert_int_equal(store_commit(wr), TROVE_OK);
    assert_counts_current(rd, 0);
    assert_counts_current(rd, 1);
    add_notes(700, 7, ids);
    assert_counts_current(rd, 0);
    store_close(rd);
    /* a writer keeps none past its read transaction */
    store_rank_keep(wr);
    assert_counts_current(wr, 0);
    assert_counts_current(wr, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_rows_follow_commits),
        cmocka_unit_test(test_writer_keeps_nothing),
        cmocka_unit_test(test_kept_title_lengths_follow_commits),
        cmocka_unit_test(test_kept_walks_follow_commits),
        cmocka_unit_test(test_kept_phrase_counts_follow_commits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
