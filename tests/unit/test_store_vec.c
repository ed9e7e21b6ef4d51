/* store_vec: vectors in the index — segments, dead bits folded at commit,
 * merging, pending chunks, reuse by text hash, counts, the version-1
 * upgrade, damaged segments; the segment cache of resident processes
 * (search/vcache.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include "search/vcache.h"
#include "store/store_vec.h"
#include "testutil.h"

#define DIM 16

static char dir[64];
static char dbpath[128];
static store *st;
static int64_t coll_a, coll_b;

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-svec.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(dbpath, sizeof dbpath, "%s/index.db", dir);
    if (store_open(dbpath, 0, &st) != TROVE_OK)
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

static int64_t add_note(int64_t coll, const char *path, const char *text)
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

/* A vector that points at chunk c: component c % DIM is large. */
static void vec_for(int64_t c, int8_t *q)
{
    memset(q, 1, DIM);
    q[c % DIM] = 127;
}

/* Embed every pending chunk of the model with vec_for(). */
static size_t embed_pending(int64_t model)
{
    store_vec_todo *todo;
    size_t n, added = 0;
    assert_int_equal(store_vec_pending(st, model, 0, 100000, &todo, &n), TROVE_OK);
    int8_t *qs = xmalloc((n ? n : 1) * DIM);
    store_vec_entry *e = xmalloc((n ? n : 1) * sizeof *e);
    for (size_t i = 0; i < n; i++) {
        vec_for(todo[i].chunk_id, qs + i * DIM);
        e[i] = (store_vec_entry){todo[i].chunk_id, str_hash(todo[i].body, strlen(todo[i].body)),
                                 0.01f, qs + i * DIM};
    }
    if (n)
        assert_int_equal(store_vec_add(st, model, DIM, e, n, &added), TROVE_OK);
    free(e);
    free(qs);
    store_vec_todo_free(todo, n);
    return added;
}

/* Scan every segment of the model for the vector of chunk c: best note. */
static size_t search(int64_t model, int64_t c, size_t k, vec_hit *out)
{
    int8_t q[DIM];
    vec_for(c, q);
    int64_t *ids;
    size_t n_ids;
    assert_int_equal(store_vec_segments(st, model, &ids, &n_ids), TROVE_OK);
    vec_topk *t = vec_topk_new(k, DIM, q, 0.01f, NULL, 1);
    for (size_t i = 0; i < n_ids; i++) {
        store_vec_seg seg;
        assert_int_equal(store_vec_segment_load(st, ids[i], DIM, &seg), TROVE_OK);
        vec_topk_scan(t, &seg.blk);
        store_vec_segment_free(&seg);
    }
    size_t n;
    const vec_hit *h = vec_topk_results(t, &n);
    memcpy(out, h, n * sizeof *h);
    vec_topk_free(t);
    free(ids);
    return n;
}

static int64_t first_chunk(int64_t doc)
{
    return one_int("SELECT min(id) FROM chunks WHERE doc_id = ?", doc);
}

static void test_add_search_delete(void **state)
{
    (void)state;
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-a", DIM, "model a", &model), TROVE_OK);
    int64_t d1 = add_note(coll_a, "one.md", "# One\n\nfirst note\n\n## Part\n\nmore text\n");
    int64_t d2 = add_note(coll_a, "two.md", "# Two\n\nsecond note\n");
    int64_t d3 = add_note(coll_b, "three.md", "# Three\n\nthird note\n");
    int64_t pending;
    assert_int_equal(store_vec_pending_count(st, model, &pending), TROVE_OK);
    assert_int_equal(pending, one_int("SELECT count(*) FROM chunks WHERE ? > 0", 1));
    assert_int_equal(embed_pending(model), pending);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(store_vec_pending_count(st, model, &pending), TROVE_OK);
    assert_int_equal(pending, 0);

    vec_hit h[10];
    int64_t c2 = first_chunk(d2);
    size_t n = search(model, c2, 1, h);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].doc_id, d2);
    assert_int_equal(h[0].chunk_id, c2);
    /* one result per note however many chunks match */
    n = search(model, first_chunk(d1), 10, h);
    assert_int_equal(n, 3);

    /* deleting a note kills its vectors at commit */
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_delete(st, d2), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    n = search(model, c2, 10, h);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        assert_true(h[i].doc_id != d2);
    assert_int_equal(one_int("SELECT count(*) FROM vec_map WHERE chunk_id = ?", c2), 0);

    /* a rolled-back delete leaves the vectors alone */
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_delete(st, d3), TROVE_OK);
    store_rollback(st);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    n = search(model, first_chunk(d3), 10, h);
    assert_int_equal(n, 2);
    assert_int_equal(h[0].doc_id, d3);

    /* another width under the same fingerprint is refused */
    int64_t again;
    assert_int_equal(store_vec_model_ensure(st, "fp-a", DIM + 1, "x", &again), TROVE_ECORRUPT);
    assert_int_equal(store_vec_model_ensure(st, "fp-a", DIM, "x", &again), TROVE_OK);
    assert_int_equal(again, model);
}

/* Vectors for a chunk deleted meanwhile are dropped, not stored. */
/* The pending count is exact whatever vec_map holds beside the model's
 * vectors of live chunks: another model's vectors, a row of a chunk that
 * is gone (not counted), a chunk without one (counted); it agrees with the
 * chunks store_vec_pending lists. */
static void test_pending_count_exact(void **state)
{
    (void)state;
    int64_t m1, m2, pending;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-p1", DIM, "p1", &m1), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-p2", DIM, "p2", &m2), TROVE_OK);
    add_note(coll_a, "p1.md", "# P1\n\nfirst\n\n## Two\n\nsecond\n");
    add_note(coll_b, "p2.md", "# P2\n\nthird\n");
    embed_pending(m1);
    assert_int_equal(store_vec_pending_count(st, m1, &pending), TROVE_OK);
    assert_int_equal(pending, 0);
    int64_t chunks = one_int("SELECT count(*) FROM chunks WHERE ? > 0", 1);
    assert_int_equal(store_vec_pending_count(st, m2, &pending), TROVE_OK);
    assert_int_equal(pending, chunks);
    int64_t gone = one_int("SELECT max(id) + 1000 FROM chunks WHERE ? > 0", 1);
    int64_t c = one_int("SELECT max(id) FROM chunks WHERE ? > 0", 1);
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO vec_map VALUES(%lld, %lld, 1, 0);"
             "DELETE FROM vec_map WHERE chunk_id = %lld AND model_id = %lld",
             (long long)gone, (long long)m1, (long long)c, (long long)m1);
    assert_int_equal(sqlite3_exec(store_db(st), sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(store_vec_pending_count(st, m1, &pending), TROVE_OK);
    assert_int_equal(pending, 1);
    store_vec_todo *todo;
    size_t n;
    assert_int_equal(store_vec_pending(st, m1, 0, 1000, &todo, &n), TROVE_OK);
    assert_int_equal(n, 1);
    assert_int_equal(todo[0].chunk_id, c);
    store_vec_todo_free(todo, n);
    store_rollback(st);
}

static void test_add_skips_gone_chunks(void **state)
{
    (void)state;
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-gone", DIM, "m", &model), TROVE_OK);
    int64_t d = add_note(coll_a, "gone.md", "# Gone\n\nsoon deleted\n");
    int64_t c = first_chunk(d);
    assert_int_equal(store_doc_delete(st, d), TROVE_OK);
    int8_t q[DIM];
    vec_for(c, q);
    store_vec_entry e = {c, 1, 0.01f, q};
    size_t added = 99;
    assert_int_equal(store_vec_add(st, model, DIM, &e, 1, &added), TROVE_OK);
    assert_int_equal(added, 0);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM vec_segs WHERE model_id = ?", model), 0);
}

/* Many small batches: segments merge in tiers, nothing is lost, every
 * vec_map row points at its chunk's entry; a mostly-dead segment is
 * rewritten. */
static void test_merge_and_compaction(void **state)
{
    (void)state;
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-merge", DIM, "m", &model), TROVE_OK);
    int64_t docs[40];
    for (int i = 0; i < 40; i++) {
        char path[32], text[64];
        snprintf(path, sizeof path, "m/%02d.md", i);
        snprintf(text, sizeof text, "# Note %d\n\nbody %d\n", i, i);
        docs[i] = add_note(coll_b, path, text);
        if (i % 2 == 1)
            embed_pending(model);   /* a segment per two notes */
    }
    assert_int_equal(store_commit(st), TROVE_OK);
    int64_t segs = one_int("SELECT count(*) FROM vec_segs WHERE model_id = ?", model);
    assert_true(segs < 8);
    assert_int_equal(one_int("SELECT sum(n - n_dead) FROM vec_segs WHERE model_id = ?", model),
                     one_int("SELECT count(*) FROM vec_map WHERE model_id = ?", model));
    vec_hit h[64];
    for (int i = 0; i < 40; i += 7) {
        size_t n = search(model, first_chunk(docs[i]), 64, h);
        assert_int_equal(n, one_int("SELECT count(*) FROM docs WHERE ? > 0", 1));
        int found = 0;
        for (size_t j = 0; j < n; j++)
            found |= h[j].doc_id == docs[i] && h[j].chunk_id == first_chunk(docs[i]);
        assert_true(found);
    }
    /* delete 30 of 40: segments more than half dead are rewritten */
    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < 30; i++)
        assert_int_equal(store_doc_delete(st, docs[i]), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM vec_segs WHERE model_id = ? AND n_dead * 2 > n",
                             model), 0);
    int64_t left = one_int("SELECT count(*) FROM chunks WHERE ? > 0", 1);
    assert_int_equal(one_int("SELECT sum(n - n_dead) FROM vec_segs WHERE model_id = ?", model), left);
    assert_int_equal(search(model, first_chunk(docs[35]), 64, h),
                     one_int("SELECT count(*) FROM docs WHERE ? > 0", 1));
}

/* Locations by text hash find an entry, and store_vec_read returns it. */
static void test_locations_and_read(void **state)
{
    (void)state;
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-loc", DIM, "m", &model), TROVE_OK);
    int64_t d = add_note(coll_a, "loc.md", "# Loc\n\nlocation text\n");
    embed_pending(model);
    assert_int_equal(store_commit(st), TROVE_OK);
    store_vec_loc *loc;
    size_t n;
    assert_int_equal(store_vec_locations(st, model, &loc, &n), TROVE_OK);
    assert_true(n >= 1);
    for (size_t i = 1; i < n; i++)
        assert_true(loc[i - 1].text_hash <= loc[i].text_hash);
    int64_t c = first_chunk(d);
    int64_t seg = one_int("SELECT seg_id FROM vec_map WHERE chunk_id = ?", c);
    uint32_t slot = (uint32_t)one_int("SELECT slot FROM vec_map WHERE chunk_id = ?", c);
    int8_t q[DIM], want[DIM];
    float s;
    uint64_t h;
    assert_int_equal(store_vec_read(st, seg, slot, DIM, q, &s, &h), TROVE_OK);
    sqlite3_stmt *b;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT body FROM chunks_fts WHERE rowid = ?",
                                        -1, &b, NULL), SQLITE_OK);
    sqlite3_bind_int64(b, 1, c);
    assert_int_equal(sqlite3_step(b), SQLITE_ROW);
    const char *body = (const char *)sqlite3_column_text(b, 0);
    assert_true(h == str_hash(body, strlen(body)));
    sqlite3_finalize(b);
    vec_for(c, want);
    assert_memory_equal(q, want, DIM);
    assert_true(s == 0.01f);
    assert_int_equal(store_vec_read(st, seg, 99999, DIM, q, &s, &h), TROVE_ECORRUPT);
    free(loc);
}

static void test_counts_and_models(void **state)
{
    (void)state;
    int64_t m1, m2;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-c1", DIM, "one", &m1), TROVE_OK);
    embed_pending(m1);
    assert_int_equal(store_vec_model_ensure(st, "fp-c2", DIM, "two", &m2), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    store_vec_count *c;
    size_t n;
    assert_int_equal(store_vec_counts(st, m2, &c, &n), TROVE_OK);
    assert_int_equal(n, 2);
    assert_string_equal(c[0].collection, "a");
    assert_true(c[0].chunks > 0);
    assert_int_equal(c[0].embedded, 0);
    assert_int_equal(c[0].stale, c[0].chunks);
    store_vec_counts_free(c, n);
    assert_int_equal(store_vec_counts(st, m1, &c, &n), TROVE_OK);
    assert_int_equal(c[1].embedded, c[1].chunks);
    assert_int_equal(c[1].stale, 0);
    store_vec_counts_free(c, n);
    int has;
    assert_int_equal(store_vec_collection_has(st, m1, "b", &has), TROVE_OK);
    assert_true(has);
    assert_int_equal(store_vec_collection_has(st, m2, "b", &has), TROVE_OK);
    assert_false(has);
    store_vec_model *models;
    assert_int_equal(store_vec_models(st, &models, &n), TROVE_OK);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (models[i].id == m1)
            found = 1, assert_true(models[i].vectors > 0), assert_string_equal(models[i].name, "one");
    assert_true(found);
    store_vec_models_free(models, n);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_drop(st, m1), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM vec_map WHERE model_id = ?", m1), 0);
    assert_int_equal(one_int("SELECT count(*) FROM vec_segs WHERE model_id = ?", m1), 0);
}

/* The noise floor: stored per model in meta, read back, values trove did
 * not write ignored, and dropped with its model. */
static void test_noise_floor(void **state)
{
    (void)state;
    int64_t model, vectors;
    double floor;
    int have;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-floor", DIM, "f", &model), TROVE_OK);
    assert_int_equal(store_vec_floor_get(st, model, &floor, &vectors, &have), TROVE_OK);
    assert_false(have);
    assert_true(floor == -1 && vectors == 0);
    assert_int_equal(store_vec_floor_set(st, model, 0.4321, 77), TROVE_OK);
    assert_int_equal(store_vec_floor_set(st, model, 1.5, 77), TROVE_ERANGE);
    assert_int_equal(store_vec_floor_set(st, model, NAN, 77), TROVE_ERANGE);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(store_vec_floor_get(st, model, &floor, &vectors, &have), TROVE_OK);
    assert_true(have && vectors == 77 && fabs(floor - 0.4321) < 1e-9);
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = 'x' WHERE key = 'vec_floor:%lld'",
             (long long)model);
    assert_int_equal(sqlite3_exec(store_db(st), sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(store_vec_floor_get(st, model, &floor, &vectors, &have), TROVE_OK);
    assert_false(have);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_floor_set(st, model, -0.25, 3), TROVE_OK);
    assert_int_equal(store_vec_model_drop(st, model), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(one_int("SELECT count(*) FROM meta WHERE key = 'vec_floor:' || ?", model), 0);
}

/* A damaged segment blob is reported, not read past its end. */
static void test_damaged_segment(void **state)
{
    (void)state;
    int64_t model;
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-bad", DIM, "m", &model), TROVE_OK);
    embed_pending(model);
    assert_int_equal(store_commit(st), TROVE_OK);
    int64_t seg = one_int("SELECT min(id) FROM vec_segs WHERE model_id = ?", model);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "UPDATE vec_segs SET data = substr(data, 1, 40)"
                                        " WHERE id = ?", -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, seg);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    store_vec_seg sg;
    assert_int_equal(store_vec_segment_load(st, seg, DIM, &sg), TROVE_ECORRUPT);
    assert_non_null(strstr(trove_errmsg(), "embed -f"));
    assert_int_equal(store_vec_segment_load(st, seg, DIM + 1, &sg), TROVE_ECORRUPT);
}

/* An index of schema version 2 (no vector tables) is upgraded by a
 * writable open and refused, with the way out, by a read-only one. */
static void test_upgrade_from_v2(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/old.db", dir);
    store *o;
    assert_int_equal(store_open(path, 0, &o), TROVE_OK);
    assert_int_equal(store_exec(o, "DROP TABLE vec_map; DROP TABLE vec_segs; DROP TABLE vec_models;"
                                   "UPDATE meta SET value = '2' WHERE key = 'schema_version'"), TROVE_OK);
    store_close(o);
    assert_int_equal(store_open(path, STORE_READONLY, &o), TROVE_ECORRUPT);
    assert_non_null(strstr(trove_errmsg(), "trove update"));
    assert_int_equal(store_open(path, 0, &o), TROVE_OK);
    int64_t id;
    assert_int_equal(store_vec_model_find(o, "x", &id, NULL), TROVE_OK);
    store_close(o);
    assert_int_equal(store_open(path, STORE_READONLY, &o), TROVE_OK);
    store_close(o);
}

/* The same scan through a vcache on connection `on`. */
static size_t cached_search(vcache *vc, store *on, int64_t model, int64_t c, size_t k, vec_hit *out)
{
    int8_t q[DIM];
    vec_for(c, q);
    vec_topk *t = vec_topk_new(k, DIM, q, 0.01f, NULL, 1);
    assert_int_equal(store_read_begin(on), TROVE_OK);
    assert_int_equal(vcache_scan(vc, on, model, DIM, t), TROVE_OK);
    store_read_end(on);
    size_t n;
    const vec_hit *h = vec_topk_results(t, &n);
    memcpy(out, h, n * sizeof *h);
    vec_topk_free(t);
    return n;
}

static void same_as_cold(vcache *vc, int64_t model, int64_t c)
{
    vec_hit a[64], b[64];
    size_t na = search(model, c, 64, a), nb = cached_search(vc, st, model, c, 64, b);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].doc_id, b[i].doc_id);
        assert_int_equal(a[i].chunk_id, b[i].chunk_id);
        assert_true(a[i].score == b[i].score);
    }
}

typedef struct vc_worker {
    vcache *vc;
    int64_t model, c;
    int bad;
} vc_worker;

static void *vc_thread(void *arg)
{
    vc_worker *w = arg;
    store *rd;
    if (store_open(dbpath, STORE_READONLY, &rd) != TROVE_OK) {
        w->bad = 1;
        return NULL;
    }
    vec_hit h[64];
    for (int i = 0; i < 50; i++)
        if (cached_search(w->vc, rd, w->model, w->c, 64, h) == 0)
            w->bad = 1;
    store_close(rd);
    return NULL;
}

static void test_vcache(void **state)
{
    (void)state;
    int64_t model, d[4];
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-vc", DIM, "cached", &model), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    /* three commits: three segments (the notes of the other tests too) */
    for (int i = 0; i < 3; i++) {
        char path[32], text[64];
        snprintf(path, sizeof path, "vc%d.md", i);
        snprintf(text, sizeof text, "# VC %d\n\ncached note %d\n", i, i);
        assert_int_equal(store_begin(st), TROVE_OK);
        d[i] = add_note(coll_a, path, text);
        assert_true(embed_pending(model) > 0);
        assert_int_equal(store_commit(st), TROVE_OK);
    }
    int64_t segs = one_int("SELECT count(*) FROM vec_segs WHERE model_id = ?", model);
    assert_true(segs >= 2);
    vcache *vc = vcache_new(VCACHE_DEFAULT_BYTES);
    vcache_stats s;
    same_as_cold(vc, model, first_chunk(d[1]));
    vcache_stats_get(vc, &s);
    assert_int_equal(s.loaded, segs);
    assert_int_equal(s.served, 0);
    assert_int_equal(s.segments, segs);
    same_as_cold(vc, model, first_chunk(d[0]));
    vcache_stats_get(vc, &s);
    assert_int_equal(s.loaded, segs);
    assert_int_equal(s.served, segs);

    /* a delete changes dead bits only: nothing is read again */
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_doc_delete(st, d[1]), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    same_as_cold(vc, model, first_chunk(d[2]));
    vcache_stats_get(vc, &s);
    assert_int_equal(s.loaded, segs);

    /* a new segment is read, merged-away ones let go */
    for (int i = 0; i < 4; i++) {
        char path[32];
        snprintf(path, sizeof path, "vcm%d.md", i);
        assert_int_equal(store_begin(st), TROVE_OK);
        d[3] = add_note(coll_a, path, "# Merge\n\nmerged note\n");
        assert_true(embed_pending(model) > 0);
        assert_int_equal(store_commit(st), TROVE_OK);
    }
    same_as_cold(vc, model, first_chunk(d[3]));
    vcache_stats_get(vc, &s);
    assert_true(s.loaded > segs);
    assert_true(s.dropped > 0);
    assert_int_equal((int64_t)s.segments,
                     one_int("SELECT count(*) FROM vec_segs WHERE model_id = ?", model));

    /* many scans at once on their own connections */
    pthread_t th[4];
    vc_worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (vc_worker){vc, model, first_chunk(i % 2 ? d[0] : d[3]), 0};
        assert_int_equal(pthread_create(&th[i], NULL, vc_thread, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }

    /* another index (a new identity): nothing held is used */
    long before = s.loaded;
    assert_int_equal(store_exec(st, "UPDATE meta SET value = 'another' WHERE key = 'index_id'"),
                     TROVE_OK);
    same_as_cold(vc, model, first_chunk(d[0]));
    vcache_stats_get(vc, &s);
    assert_int_equal(s.loaded, before + (long)s.segments);
    vcache_free(vc);

    /* no room: every scan reads, still right */
    vc = vcache_new(0);
    same_as_cold(vc, model, first_chunk(d[2]));
    same_as_cold(vc, model, first_chunk(d[2]));
    vcache_stats_get(vc, &s);
    assert_int_equal(s.segments, 0);
    assert_int_equal(s.served, 0);
    assert_true(s.loaded > 0);
    vcache_free(vc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_search_delete),
        cmocka_unit_test(test_add_skips_gone_chunks),
        cmocka_unit_test(test_pending_count_exact),
        cmocka_unit_test(test_merge_and_compaction),
        cmocka_unit_test(test_locations_and_read),
        cmocka_unit_test(test_counts_and_models),
        cmocka_unit_test(test_damaged_segment),
        cmocka_unit_test(test_noise_floor),
        cmocka_unit_test(test_upgrade_from_v2),
        cmocka_unit_test(test_vcache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
