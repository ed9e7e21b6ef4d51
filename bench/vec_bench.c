/* vec_bench — time the exact int8 top-k scan (built by bench/vec_bench.sh).
 *
 *   vec_bench mem N DIM THREADS [RUNS]     scan N random vectors in memory,
 *                                          in blocks of STORE_VEC_SEG_MAX
 *   vec_bench store N DIM THREADS [RUNS]   the same N vectors written to a
 *                                          temporary index, then read back
 *                                          segment by segment and scanned
 *                                          (what `trove vsearch` does): from
 *                                          a resident segment cache (the
 *                                          daemon's), from the segments'
 *                                          sidecar files (mapped whole, then
 *                                          read by pread), and from the
 *                                          blobs (sidecars removed)
 *   vec_bench make N DIM DIR               write that index to DIR/index.db
 *                                          and keep it
 *   vec_bench floor N DIM [RUNS [MULT]]   the floor of a resident scan: N
 *                                          random vectors in huge pages, read
 *                                          once with no arithmetic (memory
 *                                          bandwidth), the exact top-600 scan,
 *                                          and the two-stage scan (sign
 *                                          sketches, MULT x 600 candidates,
 *                                          default 16), on 1 and 2 threads,
 *                                          with GB/s of the vectors' bytes
 *   vec_bench once DIR DIM THREADS [map]   one top-10 query read the way a
 *                                          cold `trove vsearch` reads it
 *                                          (sidecars by pread; `map`: mapped
 *                                          whole, as before), in this fresh
 *                                          process: run it as many processes
 *                                          to time a cold reader
 *
 * Prints best and median milliseconds (wall; and the median CPU time, user
 * + sys of the process) for one top-10 query over RUNS (default 20) random
 * queries, and the kernel in use. */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#include "search/vcache.h"
#include "store/store_vec.h"
#include "store/store_vside.h"
#include "util/mem.h"
#include "vec/vec.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void random_unit(float *x, int dim)
{
    double norm = 0;
    for (int i = 0; i < dim; i++) {
        x[i] = (float)((double)(rnd() % 20001) / 10000.0 - 1.0);
        norm += (double)x[i] * x[i];
    }
    for (int i = 0; i < dim; i++)
        x[i] = (float)(x[i] / sqrt(norm));
}

static void report(const char *what, size_t n, int dim, int threads, double *ms, int runs)
{
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    printf("%s %zu x %d, %d thread(s), kernel %s: top-10 best %.2f ms, median %.2f ms\n", what, n,
           dim, threads, vec_impl_name(), ms[0], ms[runs / 2]);
}

/* n random unit vectors, quantised; chunk i + 1 of note i / per_note + 1. */
static void fill_random(int8_t *data, float *scale, int64_t *chunk, int64_t *doc, size_t n,
                        int dim, size_t per_note)
{
    float *x = xmalloc((size_t)dim * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        random_unit(x, dim);
        vec_quantize(x, dim, data + i * (size_t)dim, &scale[i]);
        chunk[i] = (int64_t)i + 1;
        doc[i] = (int64_t)(i / per_note) + 1;
    }
    free(x);
}

static int bench_mem(size_t n, int dim, int threads, int runs)
{
    int8_t *data = xmalloc(n * (size_t)dim);
    float *scale = xmalloc(n * sizeof *scale);
    int64_t *chunk = xmalloc(n * sizeof *chunk), *doc = xmalloc(n * sizeof *doc);
    float *x = xmalloc((size_t)dim * sizeof *x);
    fill_random(data, scale, chunk, doc, n, dim, 3);   /* three chunks a note */
    double *ms = xmalloc((size_t)runs * sizeof *ms);
    int8_t *q = xmalloc((size_t)dim);
    for (int r = 0; r < runs; r++) {
        float qs;
        random_unit(x, dim);
        vec_quantize(x, dim, q, &qs);
        double t0 = now_ms();
        vec_topk *t = vec_topk_new(10, dim, q, qs, NULL, threads);
        for (size_t off = 0; off < n; off += STORE_VEC_SEG_MAX) {
            size_t cnt = n - off < STORE_VEC_SEG_MAX ? n - off : STORE_VEC_SEG_MAX;
            vec_block b = {data + off * (size_t)dim, scale + off, chunk + off, doc + off, NULL, cnt, NULL, NULL, NULL};
            vec_topk_scan(t, &b);
        }
        size_t k;
        vec_topk_results(t, &k);
        vec_topk_free(t);
        ms[r] = now_ms() - t0;
    }
    report("mem", n, dim, threads, ms, runs);
    free(ms), free(q), free(x), free(data), free(scale), free(chunk), free(doc);
    return 0;
}

/* One top-10 query: every segment read the way a one-shot search reads
 * it (vc NULL), or through a resident segment cache. *mapped counts the
 * segments read from sidecars. */
/* How a one-shot scan reads a segment: mapped whole, or streamed. */
static int stream_reads = 1;

static int scan_once(store *st, int64_t model, int dim, int threads, const int8_t *qq, float qs,
                     vcache *vc, size_t *mapped, size_t *segs)
{
    sqlite3_exec(store_db(st), "BEGIN", NULL, NULL, NULL);
    vec_topk *t = vec_topk_new(10, dim, qq, qs, NULL, threads);
    trove_err rc = TROVE_OK;
    if (vc) {
        rc = vcache_scan(vc, st, model, dim, t);
    } else {
        int64_t *ids;
        size_t n_ids;
        rc = store_vec_segments(st, model, &ids, &n_ids);
        for (size_t i = 0; rc == TROVE_OK && i < n_ids; i++) {
            store_vec_seg seg;
            rc = stream_reads ? store_vec_segment_stream(st, ids[i], dim, &seg)
                              : store_vec_segment_load(st, ids[i], dim, &seg);
            if (rc != TROVE_OK)
                break;
            *mapped += seg.map != NULL;
            (*segs)++;
            vec_topk_scan(t, &seg.blk);
            if (vec_topk_failed(t))
                rc = TROVE_EIO;
            store_vec_segment_free(&seg);
        }
        if (rc == TROVE_OK)
            free(ids);
    }
    size_t k;
    vec_topk_results(t, &k);
    vec_topk_free(t);
    sqlite3_exec(store_db(st), "COMMIT", NULL, NULL, NULL);
    if (rc)
        fprintf(stderr, "%s\n", trove_errmsg());
    return rc != TROVE_OK;
}

/* RUNS random queries against the index at path. */
static int scan_runs(const char *what, const char *path, int64_t model, size_t n, int dim,
                     int threads, int runs, vcache *vc)
{
    store *st;
    if (store_open(path, STORE_READONLY, &st) != TROVE_OK)
        return 1;
    double *ms = xmalloc((size_t)runs * sizeof *ms), *cpu = xmalloc((size_t)runs * sizeof *cpu);
    int8_t *qq = xmalloc((size_t)dim);
    float *x = xmalloc((size_t)dim * sizeof *x);
    size_t mapped = 0, segs = 0;
    float qs;
    int rc = 0;
    if (vc) {   /* warm-up: the cache loads (maps) every segment */
        random_unit(x, dim);
        vec_quantize(x, dim, qq, &qs);
        rc = scan_once(st, model, dim, threads, qq, qs, vc, &mapped, &segs);
    }
    for (int r = 0; rc == 0 && r < runs; r++) {
        random_unit(x, dim);
        vec_quantize(x, dim, qq, &qs);
        double t0 = now_ms(), c0 = cpu_ms();
        rc = scan_once(st, model, dim, threads, qq, qs, vc, &mapped, &segs);
        ms[r] = now_ms() - t0;
        cpu[r] = cpu_ms() - c0;
    }
    if (rc == 0) {
        char label[96];
        if (vc)
            snprintf(label, sizeof label, "%s", what);
        else
            snprintf(label, sizeof label, "%s (%zu of %zu segment reads mapped)", what, mapped, segs);
        report(label, n, dim, threads, ms, runs);
        qsort(cpu, (size_t)runs, sizeof *cpu, cmp_double);
        printf("  cpu (user+sys) median %.2f ms\n", cpu[runs / 2]);
    }
    store_close(st);
    free(ms), free(cpu), free(qq), free(x);
    return rc;
}

/* Write n random vectors of dim components to a new index at path: the
 * model "bench" (*model), one chunk row per vector, three chunks a note. */
static int write_store(const char *path, size_t n, int dim, int64_t *model_out)
{
    store *st;
    if (store_open(path, 0, &st) != TROVE_OK) {
        fprintf(stderr, "%s\n", trove_errmsg());
        return 1;
    }
    int64_t model;
    store_begin(st);
    store_vec_model_ensure(st, "bench", dim, "bench", &model);
    /* Chunk rows must exist for vectors to be stored. */
    char sql[256];
    snprintf(sql, sizeof sql, "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k"
             " WHERE i < %zu) INSERT INTO chunks(id, doc_id, seq, heading, start_byte, end_byte,"
             " line_start, line_end) SELECT i, (i + 2) / 3, 0, '', 0, 0, 1, 1 FROM k", n);
    sqlite3_exec(store_db(st), sql, NULL, NULL, NULL);
    size_t batch = STORE_VEC_SEG_MAX;
    int8_t *q = xmalloc(batch * (size_t)dim);
    store_vec_entry *e = xmalloc(batch * sizeof *e);
    float *x = xmalloc((size_t)dim * sizeof *x);
    for (size_t off = 0; off < n; off += batch) {
        size_t cnt = n - off < batch ? n - off : batch;
        for (size_t i = 0; i < cnt; i++) {
            random_unit(x, dim);
            e[i].chunk_id = (int64_t)(off + i) + 1;
            e[i].text_hash = off + i;
            e[i].q = q + i * (size_t)dim;
            vec_quantize(x, dim, q + i * (size_t)dim, &e[i].scale);
        }
        size_t added;
        if (store_vec_add(st, model, dim, e, cnt, &added) != TROVE_OK) {
            fprintf(stderr, "%s\n", trove_errmsg());
            return 1;
        }
    }
    store_commit(st);
    store_close(st);
    free(e);
    free(q);
    free(x);
    *model_out = model;
    return 0;
}

static int bench_store(size_t n, int dim, int threads, int runs)
{
    char dir[] = "/tmp/trove-vec-bench.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[128];
    snprintf(path, sizeof path, "%s/index.db", dir);
    int64_t model;
    if (write_store(path, n, dim, &model))
        return 1;
    /* a resident cache first (it keeps the mappings; one warm-up run), then
     * one-shot reads from the sidecars, then from the blobs alone */
    vcache *vc = vcache_new((size_t)4 << 30);
    int rc = scan_runs("resident", path, model, n, dim, threads, runs, vc);
    vcache_free(vc);
    stream_reads = 0;
    if (rc == 0)
        rc = scan_runs("sidecar, mapped", path, model, n, dim, threads, runs, NULL);
    stream_reads = 1;
    if (rc == 0)
        rc = scan_runs("sidecar, read by pread", path, model, n, dim, threads, runs, NULL);
    store_vside_drop(path);
    if (rc == 0)
        rc = scan_runs("blob", path, model, n, dim, threads, runs, NULL);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) != 0 || rc;
}

/* One cold query in this process: every segment of the index at DIR
 * loaded (sidecar or blob) and scanned; prints wall and CPU ms. */
static int bench_once(const char *dir, int dim, int threads)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/index.db", dir);
    double t0 = now_ms(), c0 = cpu_ms();
    store *st;
    if (store_open(path, STORE_READONLY, &st) != TROVE_OK) {
        fprintf(stderr, "%s\n", trove_errmsg());
        return 1;
    }
    int8_t *qq = xmalloc((size_t)dim);
    float *x = xmalloc((size_t)dim * sizeof *x), qs;
    rng ^= (uint64_t)getpid() << 20;   /* a query of its own */
    random_unit(x, dim);
    vec_quantize(x, dim, qq, &qs);
    size_t mapped = 0, segs = 0;
    int64_t model = 0;
    int have_dim = 0;
    int rc = store_vec_model_find(st, "bench", &model, &have_dim) != TROVE_OK || !model ||
             have_dim != dim;
    if (rc)
        fprintf(stderr, "vec_bench once: no %d-d model \"bench\" in %s\n", dim, path);
    else
        rc = scan_once(st, model, dim, threads, qq, qs, NULL, &mapped, &segs);
    store_close(st);
    if (rc == 0)
        printf("once: %zu segments (%zu mapped), wall %.2f ms, cpu %.2f ms\n", segs, mapped,
               now_ms() - t0, cpu_ms() - c0);
    free(qq), free(x);
    return rc;
}


/* ---- floor: what one pass over resident vectors costs ---- */

typedef struct touch_job {
    const uint8_t *p;
    size_t len;
    uint64_t sum;
} touch_job;

/* Every byte loaded once, summed with one cheap op (vpsadbw) so the loads
 * cannot be dropped: the memory bandwidth a scan cannot beat. */
__attribute__((target("avx2"))) static void *touch(void *arg)
{
    touch_job *j = arg;
    __m256i acc = _mm256_setzero_si256(), z = acc;
    for (size_t off = 0; off + 128 <= j->len; off += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(j->p + off));
        __m256i b = _mm256_loadu_si256((const __m256i *)(j->p + off + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(j->p + off + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *)(j->p + off + 96));
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(_mm256_xor_si256(a, b),
                                                                     _mm256_xor_si256(c, d)), z));
    }
    j->sum = (uint64_t)_mm256_extract_epi64(acc, 0) + (uint64_t)_mm256_extract_epi64(acc, 3);
    return NULL;
}

static double touch_ms(const uint8_t *p, size_t len, int threads)
{
    touch_job j[2] = {{p, len / 2, 0}, {p + len / 2, len - len / 2, 0}};
    double t0 = now_ms();
    if (threads == 1) {
        j[0].len = len;
        touch(&j[0]);
    } else {
        pthread_t tid;
        pthread_create(&tid, NULL, touch, &j[1]);
        touch(&j[0]);
        pthread_join(tid, NULL);
    }
    double ms = now_ms() - t0;
    if (j[0].sum == 42)
        printf(" ");   /* keep the sum alive */
    return ms;
}

static int bench_floor(size_t n, int dim, int runs, int mult)
{
    size_t len = n * (size_t)dim, sk_len = vec_sketch_size(n, dim);
    int8_t *data = mem_huge_map(len);
    uint8_t *sk = mem_huge_map(sk_len);
    if (!data || !sk)
        return 1;
    float *scale = xmalloc(n * sizeof *scale);
    int64_t *chunk = xmalloc(n * sizeof *chunk), *doc = xmalloc(n * sizeof *doc);
    float *x = xmalloc((size_t)dim * sizeof *x);
    fill_random(data, scale, chunk, doc, n, dim, 1);
    double t0 = now_ms();
    vec_sketch_rows(data, scale, n, dim, sk);
    printf("floor %zu x %d (%.0f MB of vectors, %.0f MB of sketches), kernel %s; sketches "
           "built in %.1f ms\n", n, dim, len / 1e6, sk_len / 1e6, vec_impl_name(), now_ms() - t0);
    size_t nb = (n + STORE_VEC_SEG_MAX - 1) / STORE_VEC_SEG_MAX;
    vec_block *blk = xcalloc(nb, sizeof *blk);
    const vec_block **bp = xcalloc(nb, sizeof *bp);
    for (size_t i = 0; i < nb; i++) {
        size_t off = i * STORE_VEC_SEG_MAX, cnt = n - off < STORE_VEC_SEG_MAX ? n - off : STORE_VEC_SEG_MAX;
        blk[i] = (vec_block){data + off * (size_t)dim, scale + off, chunk + off, doc + off, NULL,
                             cnt, NULL, NULL, sk + vec_sketch_size(off, dim)};
        bp[i] = &blk[i];
    }
    double *ms = xmalloc((size_t)runs * sizeof *ms);
    int8_t *q = xmalloc((size_t)dim);
    for (int threads = 1; threads <= 2; threads++) {
        for (int r = 0; r < runs; r++)
            ms[r] = touch_ms((const uint8_t *)data, len, threads);
        qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
        printf("  read only, %d thread(s): median %.2f ms, %.1f GB/s\n", threads, ms[runs / 2],
               len / ms[runs / 2] / 1e6);
        for (int two = 0; two <= 1; two++) {
            size_t recall_hit = 0, recall_all = 0;
            for (int r = 0; r < runs; r++) {
                float qs;
                random_unit(x, dim);
                vec_quantize(x, dim, q, &qs);
                double t1 = now_ms();
                vec_topk *t = vec_topk_new(600, dim, q, qs, NULL, threads);
                if (two)
                    vec_topk_two_stage(t, (size_t)mult * 600, 0);
                vec_topk_scan_all(t, bp, nb);
                size_t k;
                const vec_hit *h = vec_topk_results(t, &k);
                ms[r] = now_ms() - t1;
                if (two) {   /* the exact scan's top-600 among these? */
                    vec_topk *e = vec_topk_new(600, dim, q, qs, NULL, threads);
                    vec_topk_scan_all(e, bp, nb);
                    size_t ke;
                    const vec_hit *he = vec_topk_results(e, &ke);
                    for (size_t a = 0; a < ke; a++)
                        for (size_t b = 0; b < k; b++)
                            if (h[b].doc_id == he[a].doc_id) {
                                recall_hit++;
                                break;
                            }
                    recall_all += ke;
                    vec_topk_free(e);
                }
                vec_topk_free(t);
            }
            qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
            printf("  %s top-600, %d thread(s): median %.2f ms, %.1f GB/s of vectors", two ?
                   "two-stage" : "exact", threads, ms[runs / 2], len / ms[runs / 2] / 1e6);
            if (two)
                printf(" (%d x 600 candidates; random vectors: recall of the exact top-600 %.3f)",
                       mult, recall_all ? (double)recall_hit / (double)recall_all : 0);
            printf("\n");
        }
    }
    mem_huge_unmap(data, len);
    mem_huge_unmap(sk, sk_len);
    free(blk), free(bp), free(ms), free(q), free(x), free(scale), free(chunk), free(doc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "floor") == 0)
        return bench_floor((size_t)strtoull(argv[2], NULL, 10), atoi(argv[3]),
                           argc > 4 ? atoi(argv[4]) : 10, argc > 5 ? atoi(argv[5]) : 16);
    if (argc == 5 && strcmp(argv[1], "make") == 0) {
        char path[4096];
        int64_t model;
        snprintf(path, sizeof path, "%s/index.db", argv[4]);
        return write_store(path, (size_t)strtoull(argv[2], NULL, 10), atoi(argv[3]), &model);
    }
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "once") == 0) {
        stream_reads = !(argc == 6 && strcmp(argv[5], "map") == 0);
        return bench_once(argv[2], atoi(argv[3]), atoi(argv[4]));
    }
    if (argc < 5) {
        fprintf(stderr, "usage: vec_bench mem|store N DIM THREADS [RUNS] | floor N DIM [RUNS [MULT]] | make N DIM DIR | "
                "once DIR DIM THREADS [map]\n");
        return 2;
    }
    size_t n = (size_t)strtoull(argv[2], NULL, 10);
    int dim = atoi(argv[3]), threads = atoi(argv[4]);
    int runs = argc > 5 ? atoi(argv[5]) : 20;
    if (n == 0 || dim <= 0 || dim > VEC_MAX_DIM || runs <= 0)
        return 2;
    if (strcmp(argv[1], "mem") == 0)
        return bench_mem(n, dim, threads, runs);
    if (strcmp(argv[1], "store") == 0)
        return bench_store(n, dim, threads, runs);
    return 2;
}
