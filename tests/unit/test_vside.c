/* store_vside: vector segments' sidecar files — written after a commit and
 * read in place; a damaged, truncated, stale or foreign one is ignored with
 * the same results; orphans go at the next commit; a rollback, a crash
 * between commit and sidecar, a read-only open and `trove check` all keep
 * the results those of the blobs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search/vcache.h"
#include "util/buf.h"
#include "util/str.h"
#include "store/store_vec.h"
#include "store/store_vside.h"
#include "testutil.h"

#define DIM 24
#define NOTES 40
#define K 10

static char dir[64];
static char dbpath[128];
static char sidedir[160];
static store *st;
static int64_t coll, model;

static char *note_text(int i, int version)
{
    tbuf b = {0};
    tbuf_printf(&b, "# Note %d\n\nFirst part of note %d, version %d.\n\n## More\n\n"
                "Second part %d about topic %d.\n", i, i, version, i, i % 7);
    return tbuf_detach(&b);
}

static int64_t doc_of(const char *path)
{
    int64_t id = 0;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT id FROM docs WHERE path = ?", -1, &s,
                                        NULL), SQLITE_OK);
    sqlite3_bind_text(s, 1, path, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return id;
}

/* Index note i as it is at `version` (replacing the one there). */
static void index_note(int i, int version)
{
    char path[32];
    snprintf(path, sizeof path, "n%02d.md", i);
    int64_t old = doc_of(path);
    if (old)
        assert_int_equal(store_doc_delete(st, old), TROVE_OK);
    char *text = note_text(i, version);
    chunk_opts co = CHUNK_OPTS_DEFAULT;
    tu_index_note(st, coll, "a", path, text, &co);
    free(text);
}

/* A pseudo-random vector made from the chunk's text hash. */
static void vec_of(uint64_t h, int8_t *q)
{
    tu_rng r = {h | 1};
    for (int i = 0; i < DIM; i++)
        q[i] = (int8_t)(tu_rng_u32(&r) % 255 - 127);
}

/* Embed every pending chunk, in batches: several segments. */
static void embed_all(void)
{
    for (;;) {
        store_vec_todo *todo;
        size_t n, added;
        assert_int_equal(store_vec_pending(st, model, 0, 17, &todo, &n), TROVE_OK);
        if (n == 0) {
            store_vec_todo_free(todo, n);
            return;
        }
        int8_t *qs = xmalloc(n * DIM);
        store_vec_entry *e = xmalloc(n * sizeof *e);
        for (size_t i = 0; i < n; i++) {
            uint64_t h = str_hash(todo[i].body, strlen(todo[i].body));
            vec_of(h, qs + i * DIM);
            e[i] = (store_vec_entry){todo[i].chunk_id, h, 0.01f, qs + i * DIM};
        }
        assert_int_equal(store_vec_add(st, model, DIM, e, n, &added), TROVE_OK);
        free(e);
        free(qs);
        store_vec_todo_free(todo, n);
    }
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trove-test-vside.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(dbpath, sizeof dbpath, "%s/index.db", dir);
    snprintf(sidedir, sizeof sidedir, "%s-vec", dbpath);
    if (store_open(dbpath, 0, &st) != TROVE_OK)
        return -1;
    if (store_begin(st) || store_collection_ensure(st, "a", "/vault/a", &coll))
        return -1;
    for (int i = 0; i < NOTES; i++)
        index_note(i, 1);
    if (store_vec_model_ensure(st, "fp-side", DIM, "m", &model) || store_commit(st))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    return tu_rm_rf(dir);
}

/* Every test starts from all notes at version 1, embedded, committed. */
static int each(void **state)
{
    (void)state;
    assert_int_equal(store_begin(st), TROVE_OK);
    embed_all();
    assert_int_equal(store_commit(st), TROVE_OK);
    return 0;
}

/* The top K for a query vector made from `seed`, scanning every segment as
 * a cold search does; *mapped counts segments read from sidecars. Each
 * segment is read both ways a reader may (mapped whole, and streamed: its
 * vectors by pread), which must agree on the results and on whether the
 * sidecar was used. */
typedef struct hits {
    vec_hit h[K];
    size_t n;
    size_t mapped, segs;
} hits;

static hits search_in(store *s, uint64_t seed)
{
    hits out = {0};
    int8_t q[DIM];
    vec_of(seed, q);
    int64_t *ids;
    size_t n_ids;
    assert_int_equal(store_read_begin(s), TROVE_OK);
    assert_int_equal(store_vec_segments(s, model, &ids, &n_ids), TROVE_OK);
    vec_topk *t = vec_topk_new(K, DIM, q, 0.01f, NULL, 1);
    vec_topk *ts = vec_topk_new(K, DIM, q, 0.01f, NULL, 2);
    for (size_t i = 0; i < n_ids; i++) {
        store_vec_seg seg, sseg;
        assert_int_equal(store_vec_segment_load(s, ids[i], DIM, &seg), TROVE_OK);
        out.mapped += seg.map != NULL;
        vec_topk_scan(t, &seg.blk);
        assert_int_equal(store_vec_segment_stream(s, ids[i], DIM, &sseg), TROVE_OK);
        assert_int_equal(sseg.stream != NULL, seg.map != NULL);
        assert_int_equal(sseg.blk.data == NULL, seg.map != NULL);
        vec_topk_scan(ts, &sseg.blk);
        store_vec_segment_free(&sseg);
        store_vec_segment_free(&seg);
    }
    store_read_end(s);
    assert_false(vec_topk_failed(ts));
    out.segs = n_ids;
    size_t ns;
    const vec_hit *h = vec_topk_results(t, &out.n), *hs = vec_topk_results(ts, &ns);
    assert_int_equal(ns, out.n);
    for (size_t i = 0; i < ns; i++) {
        assert_int_equal(h[i].chunk_id, hs[i].chunk_id);
        assert_int_equal(h[i].doc_id, hs[i].doc_id);
        assert_true(h[i].score == hs[i].score);
    }
    memcpy(out.h, h, out.n * sizeof *h);
    vec_topk_free(t);
    vec_topk_free(ts);
    free(ids);
    return out;
}

static hits search(uint64_t seed)
{
    return search_in(st, seed);
}

static void assert_same(const hits *a, const hits *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->h[i].chunk_id, b->h[i].chunk_id);
        assert_int_equal(a->h[i].doc_id, b->h[i].doc_id);
        assert_true(a->h[i].score == b->h[i].score);
    }
}

/* Sidecar files (*.seg) in the folder, and other files. */
static size_t count_files(size_t *others)
{
    size_t n = 0;
    *others = 0;
    DIR *d = opendir(sidedir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".seg") == 0)
            n++;
        else
            (*others)++;
    }
    closedir(d);
    return n;
}

static void remove_all_sidecars(void)
{
    tu_rm_rf(sidedir);
}

static void empty_commit(void)
{
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
}

static int64_t first_seg(void)
{
    int64_t *ids;
    size_t n;
    assert_int_equal(store_vec_segments(st, model, &ids, &n), TROVE_OK);
    assert_true(n > 0);
    int64_t id = ids[0];
    free(ids);
    return id;
}

static char *side_path(int64_t seg)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%lld.seg", sidedir, (long long)seg);
    return tbuf_detach(&b);
}

/* Results with sidecars equal results from the blobs alone. */
static void assert_blob_equal(const hits *with)
{
    char *keep = NULL;
    tbuf b = {0};
    tbuf_printf(&b, "%s.away", sidedir);
    keep = tbuf_detach(&b);
    assert_int_equal(rename(sidedir, keep), 0);
    hits blob = search(7);
    assert_int_equal(blob.mapped, 0);
    assert_same(with, &blob);
    assert_int_equal(rename(keep, sidedir), 0);
    free(keep);
}

/* ---- tests ---- */

static void test_header_parse(void **state)
{
    (void)state;
    vside_header h = {.seg_id = 42, .dim = 384, .n = 1000, .elem = VSIDE_ELEM_INT8,
                      .payload_len = store_vec_seg_size(1000, 384), .payload_hash = 0x1234};
    snprintf(h.index_id, sizeof h.index_id, "0123456789abcdef0123456789abcdef");
    uint8_t raw[VSIDE_HEADER];
    vside_header_build(&h, raw);
    vside_header got;
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 1);
    assert_int_equal(got.seg_id, 42);
    assert_int_equal(got.dim, 384);
    assert_int_equal(got.n, 1000);
    assert_int_equal(got.payload_hash, 0x1234);
    assert_string_equal(got.index_id, h.index_id);
    /* any changed byte, and any short read, is no header */
    for (size_t i = 0; i < VSIDE_HEADER; i++) {
        raw[i] ^= 0x40;
        assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 0);
        raw[i] ^= 0x40;
    }
    for (size_t len = 0; len < VSIDE_HEADER; len++)
        assert_int_equal(vside_header_parse(raw, len, &got), 0);
    /* a size that is not the one of n x dim */
    h.payload_len++;
    vside_header_build(&h, raw);
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 0);
    h.payload_len--;

    /* version 2 (the current one) with sketches, version 1 without */
    h.sketch = VEC_SKETCH_VERSION;
    vside_header_build(&h, raw);
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 1);
    assert_int_equal(got.version, 2);
    assert_int_equal(got.sketch, VEC_SKETCH_VERSION);
    assert_int_equal(vside_sketch_len(&got), vec_sketch_size(1000, 384));
    h.version = 1;
    vside_header_build(&h, raw);   /* version 1 had none */
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 0);
    h.sketch = 0;
    vside_header_build(&h, raw);
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 1);
    assert_int_equal(got.version, 1);
    assert_int_equal(vside_sketch_len(&got), 0);
    /* sketches of another format, and a later version, are not read */
    h.version = 2;
    h.sketch = VEC_SKETCH_VERSION + 1;
    vside_header_build(&h, raw);
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 0);
    h.version = 3;
    h.sketch = 0;
    vside_header_build(&h, raw);
    assert_int_equal(vside_header_parse(raw, sizeof raw, &got), 0);
}

static void test_sidecar_used(void **state)
{
    (void)state;
    size_t others;
    hits a = search(7);
    assert_true(a.segs > 1);
    assert_int_equal(a.mapped, a.segs);
    assert_int_equal(count_files(&others), a.segs);
    assert_int_equal(others, 0);
    assert_true(a.n == K);
    assert_blob_equal(&a);

    /* a resident reader maps them too, and finds the same */
    vcache *vc = vcache_new(64 << 20);
    int8_t q[DIM];
    vec_of(7, q);
    vec_topk *t = vec_topk_new(K, DIM, q, 0.01f, NULL, 1);
    assert_int_equal(store_read_begin(st), TROVE_OK);
    assert_int_equal(vcache_scan(vc, st, model, DIM, t), TROVE_OK);
    store_read_end(st);
    size_t n;
    const vec_hit *h = vec_topk_results(t, &n);
    assert_int_equal(n, a.n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(h[i].chunk_id, a.h[i].chunk_id);
    vec_topk_free(t);
    vcache_free(vc);

    /* a read-only open reads them, and never writes any */
    store *ro;
    assert_int_equal(store_open(dbpath, STORE_READONLY, &ro), TROVE_OK);
    hits b = search_in(ro, 7);
    assert_int_equal(b.mapped, b.segs);
    assert_same(&a, &b);
    remove_all_sidecars();
    b = search_in(ro, 7);
    assert_int_equal(b.mapped, 0);
    assert_same(&a, &b);
    store_close(ro);
    struct stat sb;
    assert_int_not_equal(stat(sidedir, &sb), 0);
    empty_commit();   /* a writer's commit puts them back */
    assert_int_equal(count_files(&others), a.segs);
}

/* Every segment's sidecar carries sketches (want 1: those its blob makes,
 * read both ways) or none (0). */
static void assert_sketches(int want)
{
    int64_t *ids;
    size_t n_ids;
    assert_int_equal(store_read_begin(st), TROVE_OK);
    assert_int_equal(store_vec_segments(st, model, &ids, &n_ids), TROVE_OK);
    for (size_t i = 0; i < n_ids; i++) {
        store_vec_seg seg, sseg;
        assert_int_equal(store_vec_segment_load(st, ids[i], DIM, &seg), TROVE_OK);
        assert_int_equal(store_vec_segment_stream(st, ids[i], DIM, &sseg), TROVE_OK);
        assert_non_null(seg.map);
        assert_int_equal(seg.blk.sketch != NULL, want);
        assert_int_equal(sseg.blk.sketch != NULL, want);
        if (want) {
            size_t len = vec_sketch_size(seg.blk.n, DIM);
            uint8_t *sk = xmalloc(len);
            vec_sketch_rows(seg.blk.data, seg.blk.scale, seg.blk.n, DIM, sk);
            assert_memory_equal(sk, seg.blk.sketch, len);
            assert_memory_equal(sk, sseg.blk.sketch, len);
            free(sk);
        }
        store_vec_segment_free(&sseg);
        store_vec_segment_free(&seg);
    }
    store_read_end(st);
    free(ids);
}

/* The top K in two stages (few candidates) over every segment: read as a
 * cold search reads them (stream 1) or mapped whole (0), or through a
 * resident process's cache (vc; make: it makes sketches the sidecars lack,
 * vcache_take). */
static hits two_stage_in(int stream, vcache *vc, int make)
{
    hits out = {0};
    int8_t q[DIM];
    vec_of(7, q);
    int64_t *ids;
    size_t n_ids;
    assert_int_equal(store_read_begin(st), TROVE_OK);
    assert_int_equal(store_vec_segments(st, model, &ids, &n_ids), TROVE_OK);
    vec_topk *t = vec_topk_new(K, DIM, q, 0.01f, NULL, 2);
    vec_topk_two_stage(t, 2 * K, 0);
    store_vec_seg *seg = xcalloc(n_ids, sizeof *seg);
    const vec_block **b = xcalloc(n_ids, sizeof *b);
    if (vc) {
        vcache_taken *h;
        assert_int_equal(vcache_take(vc, st, model, DIM, t, make, &h), TROVE_OK);
        size_t nb;
        const vec_block *const *held = vcache_taken_blocks(h, &nb);
        vec_topk_scan_all(t, held, nb);
        vcache_give(vc, h);
    } else {
        for (size_t i = 0; i < n_ids; i++) {
            assert_int_equal((stream ? store_vec_segment_stream : store_vec_segment_load)(
                                 st, ids[i], DIM, &seg[i]), TROVE_OK);
            b[i] = &seg[i].blk;
        }
        vec_topk_scan_all(t, b, n_ids);
    }
    store_read_end(st);
    assert_false(vec_topk_failed(t));
    const vec_hit *h = vec_topk_results(t, &out.n);
    memcpy(out.h, h, out.n * sizeof *h);
    out.segs = n_ids;
    vec_topk_free(t);
    for (size_t i = 0; i < n_ids && !vc; i++)
        store_vec_segment_free(&seg[i]);
    free(seg);
    free(b);
    free(ids);
    return out;
}

/* Rewrite a sidecar file with fn applied to its bytes. */
static void mangle(int64_t seg, void (*fn)(uint8_t *buf, size_t *len))
{
    char *p = side_path(seg);
    size_t len = 0;
    char *buf = tu_slurp(p, &len);
    assert_non_null(buf);
    fn((uint8_t *)buf, &len);
    unlink(p);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
    free(p);
}

static void flip_header(uint8_t *b, size_t *len)
{
    (void)len;
    b[50] ^= 1;   /* dim */
}

static void truncate_end(uint8_t *b, size_t *len)
{
    (void)b;
    *len -= 9;
}

static void other_index(uint8_t *b, size_t *len)
{
    (void)len;
    vside_header h;
    assert_int_equal(vside_header_parse(b, VSIDE_HEADER, &h), 1);
    h.index_id[0] = h.index_id[0] == 'f' ? 'e' : 'f';
    vside_header_build(&h, b);
}

/* Another copy of the index wrote another segment under the same id: its
 * content hash (in the blob's header) differs. */
static void other_content(uint8_t *b, size_t *len)
{
    (void)len;
    b[VSIDE_HEADER + 16] ^= 0xff;
    b[VSIDE_HEADER + 32] ^= 0x7f;
}

/* A sidecar of before sketches (version 1): its header says so, its
 * payload ends the file. */
static void to_version1(uint8_t *b, size_t *len)
{
    vside_header h;
    assert_int_equal(vside_header_parse(b, VSIDE_HEADER, &h), 1);
    assert_int_equal(h.sketch, VEC_SKETCH_VERSION);
    h.version = 1;
    h.sketch = 0;
    vside_header_build(&h, b);
    *len = VSIDE_HEADER + h.payload_len;
}

/* The writer stores each segment's sketches in its sidecar; a cold
 * reader's two stages (stage two reading rows by pread) find what a
 * mapped reader's and a resident cache's do. An index whose sidecars
 * predate sketches (version 1) is still read in place, its sketches made
 * by the cache on first use (the same bytes: the same results), and the
 * next commit writes them in. */
static void test_sketches_stored(void **state)
{
    (void)state;
    assert_sketches(1);
    hits whole = two_stage_in(0, NULL, 0), cold = two_stage_in(1, NULL, 0);
    assert_true(whole.n == K);
    assert_same(&whole, &cold);
    vcache *vc = vcache_new(64 << 20);
    hits res = two_stage_in(0, vc, 0);
    assert_same(&whole, &res);
    vcache_free(vc);

    hits exact = search(7);
    int64_t *ids;
    size_t n_ids;
    assert_int_equal(store_vec_segments(st, model, &ids, &n_ids), TROVE_OK);
    for (size_t i = 0; i < n_ids; i++)
        mangle(ids[i], to_version1);
    free(ids);
    hits old = search(7);
    assert_int_equal(old.mapped, old.segs);   /* still read in place */
    assert_same(&exact, &old);
    assert_sketches(0);
    cold = two_stage_in(1, NULL, 0);   /* no sketches: exact */
    assert_same(&exact, &cold);
    vc = vcache_new(64 << 20);
    res = two_stage_in(0, vc, 0);   /* auto: the stored ones alone, as cold */
    assert_same(&exact, &res);
    res = two_stage_in(0, vc, 1);   /* two-stage: made by the cache */
    assert_same(&whole, &res);
    res = two_stage_in(0, vc, 0);   /* and kept */
    assert_same(&whole, &res);
    vcache_free(vc);
    empty_commit();
    assert_sketches(1);
    cold = two_stage_in(1, NULL, 0);
    assert_same(&whole, &cold);
}

/* Damaged sketches behind a good header: `trove check` makes them again
 * from the blob, reports the sidecar and removes it. */
static void test_check_finds_sketch_damage(void **state)
{
    (void)state;
    int64_t seg = first_seg();
    char *p = side_path(seg);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    off_t at = sb.st_size - 200;   /* in the sketches */
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x11;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    char **problems;
    size_t n;
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    assert_int_equal(n, 1);
    assert_non_null(strstr(problems[0], "vector sidecar"));
    store_problems_free(problems, n);
    assert_int_not_equal(stat(p, &sb), 0);
    empty_commit();
    assert_int_equal(stat(p, &sb), 0);
    free(p);
    assert_sketches(1);
}

static void test_bad_sidecars_ignored(void **state)
{
    (void)state;
    void (*how[])(uint8_t *, size_t *) = {flip_header, truncate_end, other_index, other_content};
    hits a = search(7);
    assert_int_equal(a.mapped, a.segs);
    int64_t seg = first_seg();
    for (size_t i = 0; i < sizeof how / sizeof *how; i++) {
        mangle(seg, how[i]);
        hits b = search(7);
        assert_int_equal(b.mapped, a.segs - 1);
        assert_same(&a, &b);
        empty_commit();   /* the writer's next commit replaces it */
        b = search(7);
        assert_int_equal(b.mapped, a.segs);
    }

    /* a stale one: another segment's file under this segment's name */
    int64_t *ids;
    size_t n;
    assert_int_equal(store_vec_segments(st, model, &ids, &n), TROVE_OK);
    assert_true(n > 1);
    char *p0 = side_path(ids[0]), *p1 = side_path(ids[1]);
    size_t len = 0;
    char *buf = tu_slurp(p1, &len);
    assert_non_null(buf);
    FILE *f = fopen(p0, "wb");
    assert_non_null(f);
    fwrite(buf, 1, len, f);
    fclose(f);
    hits b = search(7);
    assert_int_equal(b.mapped, a.segs - 1);
    assert_same(&a, &b);
    free(buf);
    free(p0);
    free(p1);
    free(ids);
}

static void test_check_finds_payload_damage(void **state)
{
    (void)state;
    char **problems;
    size_t n;
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    assert_int_equal(n, 0);
    store_problems_free(problems, n);

    /* a changed vector behind a good header: readers cannot tell, check can */
    int64_t seg = first_seg();
    char *p = side_path(seg);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    off_t at = VSIDE_HEADER + 32 + 3;
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x55;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    assert_int_equal(n, 1);
    assert_non_null(strstr(problems[0], "vector sidecar"));
    store_problems_free(problems, n);
    struct stat sb;
    assert_int_not_equal(stat(p, &sb), 0);   /* removed */
    assert_int_equal(store_check(st, &problems, &n), TROVE_OK);
    assert_int_equal(n, 0);
    store_problems_free(problems, n);
    empty_commit();
    assert_int_equal(stat(p, &sb), 0);       /* and written again */
    free(p);
    hits a = search(7);
    assert_int_equal(a.mapped, a.segs);
    assert_blob_equal(&a);
}

static void test_orphans_removed(void **state)
{
    (void)state;
    size_t others;
    /* a crash's leftovers: a temporary file of a gone process, a sidecar
     * of a segment that no longer exists */
    tbuf b = {0};
    tbuf_printf(&b, "%s/.5.999999999.tmp", sidedir);
    FILE *f = fopen(b.data, "wb");
    assert_non_null(f);
    fputs("half", f);
    fclose(f);
    tbuf_reset(&b);
    tbuf_printf(&b, "%s/999999.seg", sidedir);
    f = fopen(b.data, "wb");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    tbuf_free(&b);
    size_t before = count_files(&others);
    assert_int_equal(others, 1);

    /* deleting notes kills vectors; merging rewrites segments */
    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < NOTES; i += 2) {
        char path[32];
        snprintf(path, sizeof path, "n%02d.md", i);
        int64_t id = doc_of(path);
        assert_true(id > 0);
        assert_int_equal(store_doc_delete(st, id), TROVE_OK);
    }
    assert_int_equal(store_commit(st), TROVE_OK);
    hits a = search(7);
    assert_int_equal(a.mapped, a.segs);
    assert_int_equal(count_files(&others), a.segs);   /* just the index's segments */
    assert_int_equal(others, 0);
    assert_true(before > a.segs);
    assert_blob_equal(&a);

    /* a model dropped: all of its sidecars go */
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_vec_model_drop(st, model), TROVE_OK);
    assert_int_equal(store_vec_model_ensure(st, "fp-side", DIM, "m", &model), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(count_files(&others), 0);
    /* put the notes back for the next tests */
    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < NOTES; i += 2)
        index_note(i, 1);
    assert_int_equal(store_commit(st), TROVE_OK);
}

static void test_rollback(void **state)
{
    (void)state;
    hits before = search(7);
    int64_t snap = 0;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(store_db(st), "SELECT max(id) FROM snapshots", -1, &s,
                                        NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    snap = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);

    /* change every note, embed the new text */
    assert_int_equal(store_begin(st), TROVE_OK);
    for (int i = 0; i < NOTES; i++)
        index_note(i, 2);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(store_begin(st), TROVE_OK);
    embed_all();
    assert_int_equal(store_commit(st), TROVE_OK);
    hits changed = search(7);
    assert_int_equal(changed.mapped, changed.segs);

    store_snapshot made;
    int noop;
    assert_int_equal(store_snapshot_rollback(st, snap, &made, &noop, NULL, NULL), TROVE_OK);
    assert_int_equal(noop, 0);
    store_snapshot_clear(&made);
    hits after = search(7);
    assert_int_equal(after.mapped, after.segs);
    /* the vectors of the old text came back: the same notes, same scores */
    assert_int_equal(after.n, before.n);
    for (size_t i = 0; i < after.n; i++) {
        assert_int_equal(after.h[i].doc_id, before.h[i].doc_id);
        assert_true(after.h[i].score == before.h[i].score);
    }
    assert_blob_equal(&after);
    size_t others;
    assert_int_equal(count_files(&others), after.segs);
}

/* A crash after the commit, before (or while) the sidecars were written:
 * readers use the blobs; the next writer's commit writes them. */
static void test_crash_after_commit(void **state)
{
    (void)state;
    hits a = search(7);
    remove_all_sidecars();
    assert_int_equal(mkdir(sidedir, 0700), 0);
    tbuf b = {0};
    tbuf_printf(&b, "%s/.%lld.999999998.tmp", sidedir, (long long)first_seg());
    FILE *f = fopen(b.data, "wb");
    assert_non_null(f);
    fputs("TVSC", f);   /* cut off mid-write */
    fclose(f);
    tbuf_free(&b);
    store_close(st);

    assert_int_equal(store_open(dbpath, STORE_READONLY, &st), TROVE_OK);
    hits r = search(7);
    assert_int_equal(r.mapped, 0);
    assert_same(&a, &r);
    store_close(st);

    assert_int_equal(store_open(dbpath, 0, &st), TROVE_OK);
    empty_commit();
    size_t others;
    r = search(7);
    assert_int_equal(r.mapped, r.segs);
    assert_int_equal(count_files(&others), r.segs);
    assert_int_equal(others, 0);
    assert_same(&a, &r);
}

/* `update --rebuild`: the fresh index's sidecars (written beside its
 * temporary file) replace the old index's when it replaces the index; an
 * aborted rebuild leaves none behind. */
static void test_rebuild_moves_them(void **state)
{
    (void)state;
    char *tmp;
    assert_int_equal(store_rebuild_begin(dbpath, &tmp), TROVE_OK);
    store_close(st);
    assert_int_equal(store_open(tmp, 0, &st), TROVE_OK);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_ensure(st, "a", "/vault/a", &coll), TROVE_OK);
    for (int i = 0; i < NOTES; i++)
        index_note(i, 3);
    assert_int_equal(store_vec_model_ensure(st, "fp-side", DIM, "m", &model), TROVE_OK);
    assert_int_equal(store_commit(st), TROVE_OK);
    assert_int_equal(store_begin(st), TROVE_OK);
    embed_all();
    assert_int_equal(store_commit(st), TROVE_OK);
    hits fresh = search(7);
    assert_int_equal(fresh.mapped, fresh.segs);
    store_close(st);
    assert_int_equal(store_rebuild_finish(tmp, dbpath), TROVE_OK);
    tbuf b = {0};
    tbuf_printf(&b, "%s-vec", tmp);
    struct stat sb;
    assert_int_not_equal(stat(b.data, &sb), 0);   /* moved */
    assert_int_equal(store_open(dbpath, 0, &st), TROVE_OK);
    hits r = search(7);
    assert_int_equal(r.mapped, r.segs);
    assert_same(&fresh, &r);
    size_t others;
    assert_int_equal(count_files(&others), r.segs);   /* the old index's went */
    assert_int_equal(others, 0);

    /* an aborted one removes what it wrote */
    store_close(st);
    assert_int_equal(store_open(tmp, 0, &st), TROVE_OK);
    assert_int_equal(store_begin(st), TROVE_OK);
    assert_int_equal(store_collection_ensure(st, "a", "/vault/a", &coll), TROVE_OK);
    index_note(0, 1);
    assert_int_equal(store_vec_model_ensure(st, "fp-side", DIM, "m", &model), TROVE_OK);
    embed_all();
    assert_int_equal(store_commit(st), TROVE_OK);
    store_close(st);
    assert_int_equal(stat(b.data, &sb), 0);
    store_rebuild_abort(tmp);
    assert_int_not_equal(stat(b.data, &sb), 0);
    tbuf_free(&b);
    free(tmp);
    assert_int_equal(store_open(dbpath, 0, &st), TROVE_OK);
    assert_int_equal(store_vec_model_find(st, "fp-side", &model, NULL), TROVE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_parse),
        cmocka_unit_test_setup(test_sidecar_used, each),
        cmocka_unit_test_setup(test_bad_sidecars_ignored, each),
        cmocka_unit_test_setup(test_check_finds_payload_damage, each),
        cmocka_unit_test_setup(test_sketches_stored, each),
        cmocka_unit_test_setup(test_check_finds_sketch_damage, each),
        cmocka_unit_test_setup(test_orphans_removed, each),
        cmocka_unit_test_setup(test_rollback, each),
        cmocka_unit_test_setup(test_crash_after_commit, each),
        cmocka_unit_test_setup(test_rebuild_moves_them, each),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
