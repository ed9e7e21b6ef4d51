/* vec: quantisation, the int8 kernels (AVX2 and portable agree exactly),
 * and the top-k scan against a brute-force reference: one result per note,
 * filters before the top-k, dead entries, threads, k = 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "vec/vec.h"

#include "testutil.h"

static tu_rng rng = {88172645463325252ull};

static void random_i8(int8_t *q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        q[i] = (int8_t)((int)(tu_rng_u32(&rng) % 255) - 127);
}

static void test_quantize(void **state)
{
    (void)state;
    float x[5] = {0.5f, -1.0f, 0.25f, 0.0f, 1e-3f};
    int8_t q[5];
    float s;
    vec_quantize(x, 5, q, &s);
    assert_int_equal(q[1], -127);
    assert_int_equal(q[0], 64);
    assert_int_equal(q[3], 0);
    assert_true(fabsf(s - 1.0f / 127) < 1e-7f);
    float z[3] = {0, 0, 0};
    vec_quantize(z, 3, q, &s);
    assert_true(s == 0 && q[0] == 0 && q[2] == 0);
    float bad[3] = {NAN, 2.0f, INFINITY};
    vec_quantize(bad, 3, q, &s);
    assert_int_equal(q[0], 0);
    assert_int_equal(q[1], 127);
    assert_int_equal(q[2], 0);
}

/* Every width from 1 to 200 and the extremes: AVX2 == portable == plain. */
static void test_kernels_agree(void **state)
{
    (void)state;
    int8_t a[520], b[520];
    for (int dim = 1; dim <= 520; dim += (dim < 200 ? 1 : 37)) {
        random_i8(a, (size_t)dim);
        random_i8(b, (size_t)dim);
        int32_t ref = 0;
        for (int i = 0; i < dim; i++)
            ref += a[i] * b[i];
        vec_force_portable(1);
        assert_int_equal(vec_dot_i8(a, b, dim), ref);
        vec_force_portable(0);
        assert_int_equal(vec_dot_i8(a, b, dim), ref);
    }
    memset(a, 127, sizeof a);
    memset(b, -127, sizeof b);
    assert_int_equal(vec_dot_i8(a, b, 512), -127 * 127 * 512);
    memset(b, 127, sizeof b);
    assert_int_equal(vec_dot_i8(a, b, 512), 127 * 127 * 512);
}

typedef struct fixture {
    int dim;
    size_t n;
    int8_t *data;
    float *scale;
    int64_t *chunk, *doc;
    uint8_t *dead;
} fixture;

static void fixture_make(fixture *f, size_t n, int dim, int64_t n_docs)
{
    f->dim = dim;
    f->n = n;
    f->data = xmalloc(n * (size_t)dim);
    random_i8(f->data, n * (size_t)dim);
    f->scale = xmalloc(n * sizeof *f->scale);
    f->chunk = xmalloc(n * sizeof *f->chunk);
    f->doc = xmalloc(n * sizeof *f->doc);
    f->dead = xcalloc((n + 7) / 8, 1);
    for (size_t i = 0; i < n; i++) {
        f->scale[i] = 0.001f * (float)(1 + tu_rng_u32(&rng) % 7);
        f->chunk[i] = (int64_t)i + 1;
        f->doc[i] = 1 + (int64_t)(tu_rng_u32(&rng) % (uint32_t)n_docs);
    }
}

static void fixture_free(fixture *f)
{
    free(f->data);
    free(f->scale);
    free(f->chunk);
    free(f->doc);
    free(f->dead);
}

static vec_block block_of(const fixture *f, size_t from, size_t to)
{
    return (vec_block){f->data + from * (size_t)f->dim, f->scale + from, f->chunk + from,
                       f->doc + from, NULL, to - from, NULL, NULL, NULL};
}

/* Reference: best (score, lowest chunk) per allowed note, sorted. */
static size_t brute(const fixture *f, const int8_t *q, float qs, const vec_filter *flt, size_t k,
                    vec_hit *out, int64_t n_docs)
{
    vec_hit *best = xcalloc((size_t)n_docs + 1, sizeof *best);
    for (int64_t d = 0; d <= n_docs; d++)
        best[d].doc_id = -1;
    for (size_t i = 0; i < f->n; i++) {
        if (f->dead[i >> 3] >> (i & 7) & 1)
            continue;
        int64_t d = f->doc[i];
        if (flt && flt->doc_allow && !(flt->doc_allow[d >> 3] >> (d & 7) & 1))
            continue;
        int32_t dot = 0;
        for (int j = 0; j < f->dim; j++)
            dot += q[j] * f->data[i * (size_t)f->dim + (size_t)j];
        float s = (float)dot * qs * f->scale[i];
        if (flt && !(s >= flt->min_score))
            continue;
        if (best[d].doc_id < 0 || s > best[d].score ||
            (s == best[d].score && f->chunk[i] < best[d].chunk_id))
            best[d] = (vec_hit){d, f->chunk[i], s};
    }
    size_t n = 0;
    for (int64_t d = 0; d <= n_docs; d++)
        if (best[d].doc_id >= 0)
            out[n++] = best[d];
    /* selection sort is fine at test sizes */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (out[j].score > out[i].score ||
                (out[j].score == out[i].score && out[j].doc_id < out[i].doc_id)) {
                vec_hit t = out[i];
                out[i] = out[j];
                out[j] = t;
            }
    free(best);
    return k && n > k ? k : n;
}

static void check_same(const vec_hit *got, size_t n_got, const vec_hit *want, size_t n_want)
{
    assert_int_equal(n_got, n_want);
    for (size_t i = 0; i < n_got; i++) {
        assert_int_equal(got[i].doc_id, want[i].doc_id);
        assert_int_equal(got[i].chunk_id, want[i].chunk_id);
        assert_true(got[i].score == want[i].score);
    }
}

/* Blocks whose vectors are read on demand (vec_block.read), as a cold
 * search reads a sidecar: rows of the fixture from `from` on. */
typedef struct rows_src {
    const fixture *f;
    size_t from;
    size_t fail_from;   /* a read reaching this row fails; SIZE_MAX: none */
    size_t reads;
} rows_src;

static int rows_read(void *ctx, size_t from, size_t n, int8_t *dst)
{
    rows_src *s = ctx;
    if (from + n > s->fail_from)
        return -1;
    __atomic_add_fetch(&s->reads, 1, __ATOMIC_RELAXED);
    memcpy(dst, s->f->data + (s->from + from) * (size_t)s->f->dim, n * (size_t)s->f->dim);
    return 0;
}

static void streamed(vec_block *b, rows_src *src)
{
    b->data = NULL;
    b->read = rows_read;
    b->read_ctx = src;
}

static int stream_mode;   /* run_case reads its blocks on demand */
static int sketch_mode;   /* run_case's blocks carry sketches, scanned in two stages with
                             every live row a candidate (the fixtures kill every 5th) */
static int all_mode;      /* run_case scans its blocks as one (vec_topk_scan_all) */
static pool *scan_pool;   /* run_case's shares run on its workers (NULL: threads started) */

static void run_case(const fixture *f, const vec_filter *flt, size_t k, int threads, int split,
                     int64_t n_docs)
{
    int8_t q[96];
    random_i8(q, (size_t)f->dim);
    vec_hit *want = xmalloc((size_t)n_docs * sizeof *want + sizeof *want);
    size_t n_want = brute(f, q, 0.01f, flt, k, want, n_docs);
    vec_topk *t = vec_topk_new(k, f->dim, q, 0.01f, flt, threads);
    vec_topk_use_pool(t, scan_pool);
    uint8_t *sk = NULL, *sk2 = NULL;
    /* Several blocks, as segments arrive, must give the same answer. */
    size_t cut = split ? f->n / 3 : f->n;
    if (sketch_mode) {   /* each block its own sketch */
        sk = xmalloc(vec_sketch_size(cut, f->dim) + 1);
        vec_sketch_rows(f->data, f->scale, cut, f->dim, sk);
        sk2 = xmalloc(vec_sketch_size(f->n - cut, f->dim) + 1);
        vec_sketch_rows(f->data + cut * (size_t)f->dim, f->scale + cut, f->n - cut, f->dim, sk2);
        vec_topk_two_stage(t, f->n - f->n / 5, 0);
    }
    vec_block b1 = block_of(f, 0, cut), b2 = block_of(f, cut, f->n);
    b1.dead = f->dead;
    uint8_t *dead2 = xcalloc((f->n - cut + 7) / 8 + 1, 1);
    for (size_t i = cut; i < f->n; i++)
        if (f->dead[i >> 3] >> (i & 7) & 1)
            dead2[(i - cut) >> 3] |= (uint8_t)(1u << ((i - cut) & 7));
    b2.dead = dead2;
    if (sk) {
        b1.sketch = sk;
        b2.sketch = sk2;
    }
    rows_src s1 = {f, 0, SIZE_MAX, 0}, s2 = {f, cut, SIZE_MAX, 0};
    if (stream_mode) {
        streamed(&b1, &s1);
        if (stream_mode == 1)   /* 2: the first block read, the second in memory */
            streamed(&b2, &s2);
    }
    if (all_mode) {
        /* threads' shares then cross the blocks' boundary */
        const vec_block *both[] = {&b1, &b2};
        vec_topk_scan_all(t, both, b2.n ? 2 : 1);
    } else {
        vec_topk_scan(t, &b1);
        if (b2.n)
            vec_topk_scan(t, &b2);
    }
    assert_false(vec_topk_failed(t));
    if (stream_mode == 1)   /* in windows of tens of KiB, not one read per block */
        assert_true(s1.reads >= 1u + (cut * (size_t)f->dim > ((size_t)512 << 10)));
    size_t n_got;
    const vec_hit *got = vec_topk_results(t, &n_got);
    check_same(got, n_got, want, n_want);
    vec_topk_free(t);
    free(sk);
    free(sk2);
    free(dead2);
    free(want);
}

static void test_topk_matches_brute_force(void **state)
{
    (void)state;
    fixture f;
    int64_t n_docs = 700;
    fixture_make(&f, 20000, 96, n_docs);   /* ~29 chunks a note */
    for (size_t i = 0; i < f.n; i += 5)
        f.dead[i >> 3] |= (uint8_t)(1u << (i & 7));
    vec_filter none = {.min_score = -INFINITY};
    for (int threads = 1; threads <= 4; threads += 3) {
        for (int split = 0; split < 2; split++) {
            run_case(&f, &none, 10, threads, split, n_docs);
            run_case(&f, &none, 1, threads, split, n_docs);
            run_case(&f, &none, 0, threads, split, n_docs);
            run_case(&f, NULL, 50, threads, split, n_docs);
            /* the search channel's depth: hundreds of notes kept, each
             * found again by its note id as its chunks come */
            run_case(&f, &none, 300, threads, split, n_docs);
            run_case(&f, &none, 699, threads, split, n_docs);
            run_case(&f, &none, 1000, threads, split, n_docs);
        }
    }
    vec_force_portable(1);
    run_case(&f, &none, 10, 1, 1, n_docs);
    vec_force_portable(0);
    /* Ties everywhere: every vector alike, so seven scores in all (one per
     * scale); the note id, then the chunk id, decide. */
    memset(f.data, 3, f.n * (size_t)f.dim);
    for (int threads = 1; threads <= 4; threads += 3)
        for (size_t k = 1; k <= 1000; k = k * 5 + 3)
            run_case(&f, &none, k, threads, 1, n_docs);
    fixture_free(&f);
}

/* A filter keeping a few notes still yields k of them (never starved),
 * and min_score drops entries before they take a place. */
static void test_filters_before_topk(void **state)
{
    (void)state;
    fixture f;
    int64_t n_docs = 500;
    fixture_make(&f, 8000, 64, n_docs);
    uint8_t allow[(500 + 8) / 8 + 1] = {0};
    for (int64_t d = 3; d <= n_docs; d += 40)
        allow[d >> 3] |= (uint8_t)(1u << (d & 7));
    vec_filter flt = {.doc_allow = allow, .n_doc_allow = n_docs + 1, .min_score = -INFINITY};
    run_case(&f, &flt, 10, 1, 0, n_docs);
    run_case(&f, &flt, 10, 2, 1, n_docs);
    flt.doc_allow = NULL;
    flt.min_score = 0.5f;
    run_case(&f, &flt, 10, 1, 1, n_docs);
    run_case(&f, &flt, 0, 2, 0, n_docs);
    /* a note id beyond the bitmap is refused */
    flt = (vec_filter){.doc_allow = allow, .n_doc_allow = 8, .min_score = -INFINITY};
    int8_t q[64];
    random_i8(q, 64);
    vec_topk *t = vec_topk_new(5, 64, q, 1, &flt, 1);
    vec_block b = block_of(&f, 0, f.n);
    vec_topk_scan(t, &b);
    size_t n;
    const vec_hit *h = vec_topk_results(t, &n);
    for (size_t i = 0; i < n; i++)
        assert_true(h[i].doc_id < 8);
    vec_topk_free(t);
    fixture_free(&f);
}

/* The same cases with every block's vectors read on demand, in windows,
 * by one thread and by several. */
static void test_blocks_read_on_demand(void **state)
{
    stream_mode = 1;
    test_topk_matches_brute_force(state);
    test_filters_before_topk(state);
    stream_mode = 0;
}

/* The blocks as one scan, in memory, read on demand and mixed: the same
 * answers whatever share of which block each thread gets. */
static void test_blocks_as_one_scan(void **state)
{
    all_mode = 1;
    for (stream_mode = 0; stream_mode <= 2; stream_mode++) {
        test_topk_matches_brute_force(state);
        test_filters_before_topk(state);
    }
    stream_mode = 0;
    all_mode = 0;
}

/* The shares on a pool's workers (the daemon's): the same answers, with
 * workers to spare, fewer workers than shares, and none. */
static void test_scan_on_a_pool(void **state)
{
    for (int workers = 0; workers <= 3; workers += 1) {
        scan_pool = pool_new(workers);
        all_mode = 1;
        for (stream_mode = 0; stream_mode <= 2; stream_mode += 2)
            test_topk_matches_brute_force(state);
        stream_mode = 0;
        all_mode = 0;
        test_filters_before_topk(state);
        pool_free(scan_pool);
        scan_pool = NULL;
    }
}

/* Sketches: the same bytes whichever kernels are picked, as long as
 * vec_sketch_size says (blocks of 32 rows: P / 4 bytes of codes a row for
 * P the next power of two >= dim, at least 64, and a float factor), every
 * byte written; a row's factor positive when it has any non-zero
 * component, 0 for a zero row; and in two stages with one candidate a row
 * beats its own negation as the answer to itself. */
static void test_sketches(void **state)
{
    (void)state;
    int8_t v[520], rows[2 * 520];
    uint8_t a[1024 / 4 * 32 + 128], b[sizeof a];
    for (int dim = 1; dim <= 520; dim += (dim < 200 ? 1 : 37)) {
        random_i8(v, (size_t)dim);
        v[0] = 0;
        size_t len = vec_sketch_size(1, dim), pad = 64;
        while (pad < (size_t)dim)
            pad *= 2;
        assert_int_equal(len, pad / 4 * 32 + 32 * sizeof(float));
        assert_int_equal(vec_sketch_size(33, dim), 2 * len);
        memset(a, 0xAA, sizeof a);
        memset(b, 0x55, sizeof b);
        float scale = 0.5f;
        vec_force_portable(1);
        vec_sketch_rows(v, &scale, 1, dim, a);
        vec_force_portable(0);
        vec_sketch_rows(v, &scale, 1, dim, b);
        assert_memory_equal(a, b, len);
        float f;
        memcpy(&f, a + pad / 4 * 32, sizeof f);
        int any = 0;
        for (int i = 0; i < dim; i++)
            any |= v[i] != 0;
        assert_true(any ? f > 0 : f == 0);
        if (!any)
            continue;
        memcpy(rows, v, (size_t)dim);
        for (int i = 0; i < dim; i++)
            rows[dim + i] = (int8_t)-v[i];
        float sc[2] = {1, 1};
        int64_t chunk[2] = {1, 2}, doc[2] = {1, 2};
        vec_sketch_rows(rows, sc, 2, dim, a);
        vec_block blk = {rows, sc, chunk, doc, NULL, 2, NULL, NULL, a};
        for (int portable = 0; portable <= 1; portable++) {
            vec_force_portable(portable);
            vec_topk *t = vec_topk_new(1, dim, v, 1, NULL, 1);
            vec_topk_two_stage(t, 1, 0);
            vec_topk_scan(t, &blk);
            size_t n;
            const vec_hit *h = vec_topk_results(t, &n);
            assert_int_equal(n, 1);
            assert_int_equal(h[0].doc_id, 1);
            vec_topk_free(t);
        }
        vec_force_portable(0);
    }
}

/* Two stages with every live row a candidate: the exact answers (the
 * brute-force reference), on one thread and several, blocks scanned one
 * by one and as one, on a pool, in memory and read on demand (a cold
 * search's sidecars: stage two reads each candidate row). */
static void test_two_stage_all_candidates(void **state)
{
    sketch_mode = 1;
    test_topk_matches_brute_force(state);
    stream_mode = 1;
    test_topk_matches_brute_force(state);
    stream_mode = 2;
    test_topk_matches_brute_force(state);
    stream_mode = 0;
    all_mode = 1;
    test_topk_matches_brute_force(state);
    scan_pool = pool_new(2);
    test_topk_matches_brute_force(state);
    pool_free(scan_pool);
    scan_pool = NULL;
    all_mode = 0;
    sketch_mode = 0;
}

/* Two stages with few candidates: k notes come back, each with its exact
 * score (that of its best chunk among the rows scored), best first; the
 * same whichever kernels, threads or blocks; and a query equal to a row
 * finds that row's note (its estimate is the highest there is). */
static void test_two_stage_few_candidates(void **state)
{
    (void)state;
    fixture f;
    int64_t n_docs = 3000;
    fixture_make(&f, 20000, 96, n_docs);
    uint8_t *sk = xmalloc(vec_sketch_size(f.n, f.dim));
    int8_t q[96];
    memcpy(q, f.data + 777 * (size_t)f.dim, (size_t)f.dim);
    for (int i = 0; i < f.dim; i++)   /* no zero: the row is the query */
        if (q[i] == 0)
            q[i] = f.data[777 * (size_t)f.dim + (size_t)i] = 1;
    uint8_t *sk1 = xmalloc(vec_sketch_size(5000, f.dim)), *sk2 = xmalloc(vec_sketch_size(f.n - 5000, f.dim));
    vec_sketch_rows(f.data, f.scale, f.n, f.dim, sk);
    vec_sketch_rows(f.data, f.scale, 5000, f.dim, sk1);
    vec_sketch_rows(f.data + 5000 * (size_t)f.dim, f.scale + 5000, f.n - 5000, f.dim, sk2);
    const vec_hit *first = NULL;
    vec_hit keep[20];
    for (int run = 0; run < 5; run++) {
        vec_force_portable(run == 3);
        vec_topk *t = vec_topk_new(20, f.dim, q, 0.01f, NULL, run == 0 ? 1 : 3);
        vec_topk_two_stage(t, 200, 0);
        size_t cut = run == 2 ? 5000 : f.n;
        vec_block b1 = block_of(&f, 0, cut), b2 = block_of(&f, cut, f.n);
        b1.sketch = cut == f.n ? sk : sk1;   /* each block its own sketch */
        b2.sketch = sk2;
        rows_src src = {&f, 0, SIZE_MAX, 0};
        if (run == 4)   /* read on demand, as a cold search reads a sidecar */
            streamed(&b1, &src);
        const vec_block *both[] = {&b1, &b2};
        vec_topk_scan_all(t, both, b2.n ? 2 : 1);
        assert_false(vec_topk_failed(t));
        size_t n;
        const vec_hit *h = vec_topk_results(t, &n);
        assert_int_equal(n, 20);
        for (size_t i = 0; i < n; i++) {
            size_t r = (size_t)(h[i].chunk_id - 1);
            assert_int_equal(f.doc[r], h[i].doc_id);
            float want = (float)vec_dot_i8(q, f.data + r * (size_t)f.dim, f.dim) * 0.01f * f.scale[r];
            assert_true(h[i].score == want);
            if (i)
                assert_true(h[i].score <= h[i - 1].score);
        }
        int found = 0;
        for (size_t i = 0; i < n; i++)
            found |= h[i].doc_id == f.doc[777];
        assert_true(found);
        if (!first) {
            memcpy(keep, h, sizeof keep);
            first = keep;
        } else {   /* field by field: a hit's padding bytes are undefined */
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(first[i].doc_id, h[i].doc_id);
                assert_int_equal(first[i].chunk_id, h[i].chunk_id);
                assert_true(first[i].score == h[i].score);
            }
        }
        vec_topk_free(t);
    }
    vec_force_portable(0);
    free(sk);
    free(sk1);
    free(sk2);
    fixture_free(&f);
}

/* A read that fails stops the scan and says so; results then lack rows. */
static void test_failed_read_is_reported(void **state)
{
    (void)state;
    fixture f;
    fixture_make(&f, 20000, 96, 700);
    int8_t q[96];
    random_i8(q, 96);
    for (int threads = 1; threads <= 2; threads++) {
        vec_topk *t = vec_topk_new(10, 96, q, 0.01f, NULL, threads);
        vec_block b = block_of(&f, 0, f.n);
        rows_src src = {&f, 0, 15000, 0};
        streamed(&b, &src);
        vec_topk_scan(t, &b);
        assert_true(vec_topk_failed(t));
        vec_topk_free(t);
        t = vec_topk_new(10, 96, q, 0.01f, NULL, threads);
        b = block_of(&f, 0, f.n);
        vec_topk_scan(t, &b);
        assert_false(vec_topk_failed(t));
        vec_topk_free(t);
    }
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize),
        cmocka_unit_test(test_kernels_agree),
        cmocka_unit_test(test_topk_matches_brute_force),
        cmocka_unit_test(test_filters_before_topk),
        cmocka_unit_test(test_blocks_read_on_demand),
        cmocka_unit_test(test_blocks_as_one_scan),
        cmocka_unit_test(test_scan_on_a_pool),
        cmocka_unit_test(test_failed_read_is_reported),
        cmocka_unit_test(test_sketches),
        cmocka_unit_test(test_two_stage_all_candidates),
        cmocka_unit_test(test_two_stage_few_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
