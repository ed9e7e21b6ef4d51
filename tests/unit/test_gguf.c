/* Tests for the GGUF reader: a file from the Python writer with every value
 * type and tensor type, and hand-built byte images (written here in C) for
 * every way a file can be broken: each truncation, bad magic and version,
 * absurd counts and lengths, deep nesting, bad types, misaligned and
 * out-of-range tensor data. Each broken file must fail with the right code
 * and a message naming the file, never crash (this runs under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed/formats/gguf.h"
#include "util/buf.h"
#include "util/mem.h"

/* ---- a little GGUF image builder ---- */

static void put(tbuf *b, const void *p, size_t n) { tbuf_append(b, p, n); }
static void put_u32(tbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(tbuf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(tbuf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void put_header(tbuf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}
static void put_kv_u32(tbuf *b, const char *key, uint32_t v)
{
    put_str(b, key);
    put_u32(b, GGUF_TYPE_UINT32);
    put_u32(b, v);
}
static void put_tinfo(tbuf *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, uint64_t off)
{
    put_str(b, name);
    put_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        put_u64(b, ne[i]);
    put_u32(b, type);
    put_u64(b, off);
}
static void pad_to(tbuf *b, size_t align)
{
    while (b->len % align)
        tbuf_putc(b, 0);
}

/* A valid image: 3 kvs (incl. a string array and a nested array), two F32
 * tensors and one Q8_0 tensor, no trailing padding so that every strict
 * prefix is truncated. */
static void build_valid(tbuf *b)
{
    put_header(b, 3, 3, 3);
    put_kv_u32(b, "a.count", 7);
    put_str(b, "a.words");
    put_u32(b, GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, 2);
    put_str(b, "hello");
    put_str(b, "w\xc3\xb6rld");
    put_str(b, "a.nested");
    put_u32(b, GGUF_TYPE_ARRAY);
    put_u32(b, GGUF_TYPE_ARRAY);
    put_u64(b, 2);
    put_u32(b, GGUF_TYPE_INT16);
    put_u64(b, 2);
    int16_t v[2] = {-5, 9};
    put(b, v, 4);
    put_u32(b, GGUF_TYPE_FLOAT64);
    put_u64(b, 1);
    double d = 0.125;
    put(b, &d, 8);
    uint64_t ne1[1] = {4}, ne2[2] = {8, 2}, ne3[1] = {32};
    put_tinfo(b, "w1", 1, ne1, GGML_TYPE_F32, 0);
    put_tinfo(b, "w2", 2, ne2, GGML_TYPE_F32, 32);
    put_tinfo(b, "q", 1, ne3, GGML_TYPE_Q8_0, 96);
    pad_to(b, 32);
    for (int i = 0; i < 4; i++) {
        float f = (float)i + 0.5f;
        put(b, &f, 4);
    }
    pad_to(b, 32);
    for (int i = 0; i < 16; i++) {
        float f = (float)-i;
        put(b, &f, 4);
    }
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) / 4.0f;
    uint8_t blk[34];
    quant_quantize_row(GGML_TYPE_Q8_0, x, blk, 32);
    put(b, blk, 34);
}

static trove_err open_mem(const tbuf *b, gguf_file **f)
{
    return gguf_open_memory(b->data, b->len, f);
}

static void expect_fail(const tbuf *b, trove_err code, const char *needle)
{
    gguf_file *f = (gguf_file *)1;
    trove_errclear();
    trove_err e = open_mem(b, &f);
    if (e != code)
        fail_msg("expected %s, got %s: %s", trove_strerror(code), trove_strerror(e),
                 trove_errmsg());
    assert_null(f);
    assert_non_null(strstr(trove_errmsg(), "<memory>"));
    if (needle && !strstr(trove_errmsg(), needle))
        fail_msg("message '%s' lacks '%s'", trove_errmsg(), needle);
}

/* ---- valid images ---- */

static void test_valid_image(void **state)
{
    (void)state;
    tbuf b = {0};
    build_valid(&b);
    /* copy into an aligned buffer so tensor data is aligned */
    void *mem = aligned_alloc(64, (b.len + 63) & ~(size_t)63);
    memcpy(mem, b.data, b.len);
    gguf_file *f;
    assert_int_equal(gguf_open_memory(mem, b.len, &f), TROVE_OK);
    assert_int_equal(gguf_version(f), 3);
    assert_int_equal(gguf_n_kv(f), 3);
    assert_int_equal(gguf_alignment(f), 32);
    assert_int_equal(gguf_data_offset(f) % 32, 0);
    assert_int_equal(gguf_u32_or(f, "a.count", 0), 7);
    int idx = gguf_find_key(f, "a.words");
    assert_true(idx >= 0);
    assert_string_equal(gguf_key_name(f, idx), "a.words");
    assert_int_equal(gguf_arr_len(f, idx), 2);
    assert_int_equal(gguf_arr_type(f, idx), GGUF_TYPE_STRING);
    size_t len;
    assert_string_equal(gguf_arr_str(f, idx, 1, &len), "w\xc3\xb6rld");
    assert_int_equal(len, 6);
    assert_null(gguf_arr_str(f, idx, 2, &len));
    assert_null(gguf_arr_data(f, idx));
    const gguf_value *n = gguf_get(f, "a.nested");
    assert_non_null(n);
    assert_int_equal(n->type, GGUF_TYPE_ARRAY);
    assert_int_equal(n->elem, GGUF_TYPE_ARRAY);
    assert_int_equal(n->n, 2);
    assert_int_equal(n->v.vals[0].elem, GGUF_TYPE_INT16);
    assert_int_equal(((const int16_t *)n->v.vals[0].v.data)[0], -5);
    assert_int_equal(((const int16_t *)n->v.vals[0].v.data)[1], 9);
    assert_true(((const double *)n->v.vals[1].v.data)[0] == 0.125);
    assert_int_equal(gguf_find_key(f, "nope"), -1);

    assert_int_equal(gguf_n_tensors(f), 3);
    const gguf_tensor *w2 = gguf_tensor_by_name(f, "w2");
    assert_non_null(w2);
    assert_ptr_equal(w2, gguf_tensor_at(f, 1));
    assert_int_equal(w2->n_dims, 2);
    assert_int_equal(w2->ne[0], 8);
    assert_int_equal(w2->ne[1], 2);
    assert_int_equal(w2->ne[2], 1);
    assert_int_equal(gguf_tensor_nelements(w2), 16);
    assert_int_equal(w2->nbytes, 64);
    assert_true(((const float *)w2->data)[5] == -5.0f);
    assert_int_equal(((uintptr_t)w2->data) % 32, 0);
    const gguf_tensor *q = gguf_tensor_by_name(f, "q");
    assert_int_equal(q->type, GGML_TYPE_Q8_0);
    assert_int_equal(q->nbytes, 34);
    float y[32];
    quant_dequantize_row(q->type, q->data, y, 32);
    assert_float_equal(y[0], -4.0f, 0.05f);
    assert_float_equal(y[31], 3.75f, 0.05f);
    assert_null(gguf_tensor_by_name(f, "w3"));
    assert_null(gguf_tensor_at(f, 3));
    gguf_close(f);
    /* the same image one byte off: F32 data would be misaligned */
    unsigned char *odd = aligned_alloc(64, (b.len + 64) & ~(size_t)63);
    memcpy(odd + 1, b.data, b.len);
    assert_int_equal(gguf_open_memory(odd + 1, b.len, &f), TROVE_EUNSUPPORTED);
    assert_non_null(strstr(trove_errmsg(), "aligned"));
    free(odd);
    free(mem);
    tbuf_free(&b);
}

static void test_every_truncation(void **state)
{
    (void)state;
    tbuf b = {0};
    build_valid(&b);
    for (size_t len = 0; len < b.len; len++) {
        gguf_file *f = NULL;
        trove_err e = gguf_open_memory(b.data, len, &f);
        if (e != TROVE_ECORRUPT)
            fail_msg("prefix of %zu/%zu bytes: got %s (%s)", len, b.len, trove_strerror(e),
                     trove_errmsg());
        assert_null(f);
        assert_non_null(strstr(trove_errmsg(), "<memory>"));
    }
    gguf_file *f;
    assert_int_equal(gguf_open_memory(b.data, b.len, &f), TROVE_OK);
    gguf_close(f);
    tbuf_free(&b);
}

/* Truncated copies on disk go through gguf_open's mmap path. */
static void test_truncated_files(void **state)
{
    (void)state;
    tbuf b = {0};
    build_valid(&b);
    char path[] = "/tmp/trove_gguf_trunc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    size_t cuts[] = {0, 3, 10, 23, 24, 40, 100, b.len / 2, b.len - 35, b.len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        FILE *fp = fopen(path, "wb");
        fwrite(b.data, 1, cuts[i], fp);
        fclose(fp);
        gguf_file *f = NULL;
        assert_int_equal(gguf_open(path, &f), TROVE_ECORRUPT);
        assert_null(f);
        assert_non_null(strstr(trove_errmsg(), path));
    }
    FILE *fp = fopen(path, "wb");
    fwrite(b.data, 1, b.len, fp);
    fclose(fp);
    gguf_file *f;
    assert_int_equal(gguf_open(path, &f), TROVE_OK);
    assert_string_equal(gguf_path(f), path);
    assert_int_equal(gguf_file_size(f), b.len);
    const gguf_tensor *t = gguf_tensor_by_name(f, "w1");
    assert_true(((const float *)t->data)[3] == 3.5f);
    gguf_close(f);
    unlink(path);
    assert_int_equal(gguf_open(path, &f), TROVE_ENOENT);
    assert_null(f);
    assert_non_null(strstr(trove_errmsg(), path));
    tbuf_free(&b);
}

/* ---- broken headers ---- */

static void test_bad_magic_and_version(void **state)
{
    (void)state;
    tbuf b = {0};
    build_valid(&b);
    b.data[0] = 'X';
    expect_fail(&b, TROVE_ECORRUPT, "magic");
    b.data[0] = 'G';
    uint32_t versions[] = {0, 1, 4, 0x03000000};
    trove_err codes[] = {TROVE_EUNSUPPORTED, TROVE_EUNSUPPORTED, TROVE_EUNSUPPORTED,
                         TROVE_EUNSUPPORTED};
    for (int i = 0; i < 4; i++) {
        memcpy(b.data + 4, &versions[i], 4);
        expect_fail(&b, codes[i], "version");
    }
    tbuf_free(&b);

    /* version 2 has the same layout */
    build_valid(&b);
    uint32_t v2 = 2;
    memcpy(b.data + 4, &v2, 4);
    gguf_file *f;
    assert_int_equal(open_mem(&b, &f), TROVE_OK);
    assert_int_equal(gguf_version(f), 2);
    gguf_close(f);
    tbuf_free(&b);
}

static void test_huge_counts(void **state)
{
    (void)state;
    tbuf b = {0};
    put_header(&b, 3, 0, (uint64_t)1 << 62);
    put_kv_u32(&b, "k", 1);
    expect_fail(&b, TROVE_ECORRUPT, "metadata entries");
    tbuf_free(&b);

    put_header(&b, 3, UINT64_MAX, 0);
    put_u64(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "tensors");
    tbuf_free(&b);

    /* array claiming 2^60 int32 elements */
    put_header(&b, 3, 0, 1);
    put_str(&b, "arr");
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, GGUF_TYPE_INT32);
    put_u64(&b, (uint64_t)1 << 60);
    put_u32(&b, 5);
    expect_fail(&b, TROVE_ECORRUPT, "arr");
    tbuf_free(&b);

    /* array of strings whose count overflows count * 8 */
    put_header(&b, 3, 0, 1);
    put_str(&b, "arr");
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, GGUF_TYPE_STRING);
    put_u64(&b, UINT64_MAX / 4);
    put_u64(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, NULL);
    tbuf_free(&b);

    /* string length past the end, and 2^64-1 */
    put_header(&b, 3, 0, 1);
    put_u64(&b, 1000);
    put(&b, "key", 3);
    expect_fail(&b, TROVE_ECORRUPT, NULL);
    tbuf_free(&b);
    put_header(&b, 3, 0, 1);
    put_u64(&b, UINT64_MAX);
    put(&b, "key", 3);
    expect_fail(&b, TROVE_ECORRUPT, NULL);
    tbuf_free(&b);
}

static void test_bad_values(void **state)
{
    (void)state;
    tbuf b = {0};
    /* unknown value type */
    put_header(&b, 3, 0, 1);
    put_str(&b, "k");
    put_u32(&b, 13);
    put_u32(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "'k'");
    tbuf_free(&b);
    /* unknown array element type */
    put_header(&b, 3, 0, 1);
    put_str(&b, "k");
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, 99);
    put_u64(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "'k'");
    tbuf_free(&b);
    /* arrays nested 9 deep */
    put_header(&b, 3, 0, 1);
    put_str(&b, "deep");
    put_u32(&b, GGUF_TYPE_ARRAY);
    for (int i = 0; i < 9; i++) {
        put_u32(&b, GGUF_TYPE_ARRAY);
        put_u64(&b, 1);
    }
    put_u32(&b, GGUF_TYPE_UINT8);
    put_u64(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "nested");
    tbuf_free(&b);
    /* 8 deep is fine */
    put_header(&b, 3, 0, 1);
    put_str(&b, "deep");
    put_u32(&b, GGUF_TYPE_ARRAY);
    for (int i = 0; i < 8; i++) {
        put_u32(&b, GGUF_TYPE_ARRAY);
        put_u64(&b, 1);
    }
    put_u32(&b, GGUF_TYPE_UINT8);
    put_u64(&b, 1);
    tbuf_putc(&b, 42);
    gguf_file *f;
    assert_int_equal(open_mem(&b, &f), TROVE_OK);
    const gguf_value *v = gguf_get(f, "deep");
    for (int i = 0; i < 8; i++) {
        assert_int_equal(v->type, GGUF_TYPE_ARRAY);
        assert_int_equal(v->n, 1);
        v = &v->v.vals[0];
    }
    assert_int_equal(v->elem, GGUF_TYPE_UINT8);
    assert_int_equal(((const uint8_t *)v->v.data)[0], 42);
    gguf_close(f);
    tbuf_free(&b);
    /* duplicate key */
    put_header(&b, 3, 0, 2);
    put_kv_u32(&b, "same", 1);
    put_kv_u32(&b, "same", 2);
    expect_fail(&b, TROVE_ECORRUPT, "duplicate");
    tbuf_free(&b);
    /* key with a NUL byte */
    put_header(&b, 3, 0, 1);
    put_u64(&b, 3);
    put(&b, "a\0b", 3);
    put_u32(&b, GGUF_TYPE_UINT8);
    tbuf_putc(&b, 1);
    expect_fail(&b, TROVE_ECORRUPT, "NUL");
    tbuf_free(&b);
}

static void test_alignment(void **state)
{
    (void)state;
    tbuf b = {0};
    uint64_t ne[1] = {2};
    /* alignment 64: valid */
    put_header(&b, 3, 2, 1);
    put_kv_u32(&b, "general.alignment", 64);
    put_tinfo(&b, "a", 1, ne, GGML_TYPE_F32, 0);
    put_tinfo(&b, "b", 1, ne, GGML_TYPE_F32, 64);
    pad_to(&b, 64);
    size_t data_off = b.len;
    for (int i = 0; i < 18; i++)
        put_u32(&b, 0);
    gguf_file *f;
    assert_int_equal(open_mem(&b, &f), TROVE_OK);
    assert_int_equal(gguf_alignment(f), 64);
    assert_int_equal(gguf_data_offset(f), data_off);
    gguf_close(f);
    tbuf_free(&b);
    /* offset 32 is misaligned for alignment 64 */
    put_header(&b, 3, 1, 1);
    put_kv_u32(&b, "general.alignment", 64);
    put_tinfo(&b, "a", 1, ne, GGML_TYPE_F32, 32);
    pad_to(&b, 64);
    for (int i = 0; i < 20; i++)
        put_u32(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "alignment");
    tbuf_free(&b);
    /* default alignment 32: offset 4 is misaligned */
    put_header(&b, 3, 1, 0);
    put_tinfo(&b, "a", 1, ne, GGML_TYPE_F32, 4);
    pad_to(&b, 32);
    for (int i = 0; i < 8; i++)
        put_u32(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "'a'");
    tbuf_free(&b);
    /* alignment not a power of two, zero, or of the wrong type */
    uint32_t bad[] = {0, 48};
    for (int i = 0; i < 2; i++) {
        put_header(&b, 3, 0, 1);
        put_kv_u32(&b, "general.alignment", bad[i]);
        expect_fail(&b, TROVE_ECORRUPT, "general.alignment");
        tbuf_free(&b);
    }
    put_header(&b, 3, 0, 1);
    put_str(&b, "general.alignment");
    put_u32(&b, GGUF_TYPE_UINT64);
    put_u64(&b, 32);
    expect_fail(&b, TROVE_ECORRUPT, "general.alignment");
    tbuf_free(&b);
}

static void test_bad_tensors(void **state)
{
    (void)state;
    tbuf b = {0};
    uint64_t ne[5] = {32, 2, 1, 1, 1};
    struct { uint32_t n_dims, type; uint64_t off, ne0; trove_err code; const char *needle; } cases[] = {
        {5, GGML_TYPE_F32, 0, 32, TROVE_ECORRUPT, "dimensions"},
        {0, GGML_TYPE_F32, 0, 32, TROVE_ECORRUPT, "dimensions"},
        {2, 3, 0, 32, TROVE_EUNSUPPORTED, "Q4_1"},
        {2, 99, 0, 32, TROVE_EUNSUPPORTED, "99"},
        {2, GGML_TYPE_Q8_K, 0, 256, TROVE_EUNSUPPORTED, "Q8_K"},
        {2, GGML_TYPE_Q8_0, 0, 48, TROVE_ECORRUPT, "block size"},
        {2, GGML_TYPE_Q4_K, 0, 32, TROVE_ECORRUPT, "block size"},
        {2, GGML_TYPE_F32, 0, (uint64_t)1 << 62, TROVE_ECORRUPT, "elements"},
        {2, GGML_TYPE_F32, 0, (uint64_t)1 << 63, TROVE_ECORRUPT, "elements"},
        {2, GGML_TYPE_F32, 0, (uint64_t)1 << 40, TROVE_ECORRUPT, "past the end"},
        {1, GGML_TYPE_F32, 0, ((uint64_t)1 << 62) + 4, TROVE_ECORRUPT, "too large"},
        {1, GGML_TYPE_F16, 0, ((uint64_t)1 << 63) - 1, TROVE_ECORRUPT, "past the end"},
        {2, GGML_TYPE_F32, 32, 32, TROVE_ECORRUPT, "past the end"},
        {2, GGML_TYPE_F32, (uint64_t)-32, 32, TROVE_ECORRUPT, "past the end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        put_header(&b, 3, 1, 0);
        ne[0] = cases[i].ne0;
        put_tinfo(&b, "t", cases[i].n_dims, ne, cases[i].type, cases[i].off);
        pad_to(&b, 32);
        for (int k = 0; k < 64; k++)
            put_u32(&b, 0); /* 256 bytes: room for 32x2 f32 at offset 0 */
        expect_fail(&b, cases[i].code, cases[i].needle);
        tbuf_free(&b);
    }
    /* an empty dimension */
    uint64_t ne0[2] = {32, 0};
    put_header(&b, 3, 1, 0);
    put_tinfo(&b, "t", 2, ne0, GGML_TYPE_F32, 0);
    pad_to(&b, 32);
    put_u64(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "empty dimension");
    tbuf_free(&b);
    /* duplicate tensor names */
    put_header(&b, 3, 2, 0);
    put_tinfo(&b, "t", 1, ne, GGML_TYPE_F32, 0);
    put_tinfo(&b, "t", 1, ne, GGML_TYPE_F32, 128);
    pad_to(&b, 32);
    for (int k = 0; k < 64; k++)
        put_u32(&b, 0);
    expect_fail(&b, TROVE_ECORRUPT, "duplicate");
    tbuf_free(&b);
    /* header ends exactly at the tensor infos; data section past EOF */
    put_header(&b, 3, 1, 0);
    put_tinfo(&b, "t", 1, ne, GGML_TYPE_F32, 0);
    expect_fail(&b, TROVE_ECORRUPT, NULL);
    tbuf_free(&b);
    /* no tensors, no padding: valid */
    put_header(&b, 3, 0, 1);
    put_kv_u32(&b, "k", 5);
    gguf_file *f;
    assert_int_equal(open_mem(&b, &f), TROVE_OK);
    assert_int_equal(gguf_n_tensors(f), 0);
    assert_null(gguf_tensor_by_name(f, "t"));
    gguf_close(f);
    tbuf_free(&b);
}

/* ---- typed getters ---- */

static void put_kv_scalar(tbuf *b, const char *key, uint32_t type, const void *v, size_t n)
{
    put_str(b, key);
    put_u32(b, type);
    put(b, v, n);
}

static void test_getters(void **state)
{
    (void)state;
    tbuf b = {0};
    put_header(&b, 3, 0, 8);
    int8_t i8 = -3;
    uint64_t big = (uint64_t)1 << 40;
    int64_t neg = -((int64_t)1 << 40);
    float fl = 2.5f;
    uint8_t tr = 1;
    uint32_t u = 4000000000u;
    put_kv_scalar(&b, "i8", GGUF_TYPE_INT8, &i8, 1);
    put_kv_scalar(&b, "big", GGUF_TYPE_UINT64, &big, 8);
    put_kv_scalar(&b, "neg", GGUF_TYPE_INT64, &neg, 8);
    put_kv_scalar(&b, "fl", GGUF_TYPE_FLOAT32, &fl, 4);
    put_kv_scalar(&b, "tr", GGUF_TYPE_BOOL, &tr, 1);
    put_kv_scalar(&b, "u", GGUF_TYPE_UINT32, &u, 4);
    put_str(&b, "s");
    put_u32(&b, GGUF_TYPE_STRING);
    put_str(&b, "text");
    put_str(&b, "ids");
    put_u32(&b, GGUF_TYPE_ARRAY);
    put_u32(&b, GGUF_TYPE_UINT16);
    put_u64(&b, 3);
    uint16_t ids[3] = {1, 65535, 7};
    put(&b, ids, 6);
    gguf_file *f;
    assert_int_equal(open_mem(&b, &f), TROVE_OK);

    int32_t i32;
    int64_t i64;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
    bool bl;
    const char *str;
    size_t len;
    assert_int_equal(gguf_get_i32(f, "i8", &i32), TROVE_OK);
    assert_int_equal(i32, -3);
    assert_int_equal(gguf_get_u32(f, "i8", &u32), TROVE_ECORRUPT);
    assert_non_null(strstr(trove_errmsg(), "'i8'"));
    assert_int_equal(gguf_get_u64(f, "big", &u64), TROVE_OK);
    assert_true(u64 == big);
    assert_int_equal(gguf_get_u32(f, "big", &u32), TROVE_ECORRUPT);
    assert_int_equal(gguf_get_i32(f, "u", &i32), TROVE_ECORRUPT);
    assert_int_equal(gguf_get_u32(f, "u", &u32), TROVE_OK);
    assert_true(u32 == 4000000000u);
    assert_int_equal(gguf_get_i64(f, "neg", &i64), TROVE_OK);
    assert_true(i64 == neg);
    assert_int_equal(gguf_get_u64(f, "neg", &u64), TROVE_ECORRUPT);
    assert_int_equal(gguf_get_f32(f, "fl", &f32), TROVE_OK);
    assert_true(f32 == 2.5f);
    assert_int_equal(gguf_get_f64(f, "i8", &f64), TROVE_OK);
    assert_true(f64 == -3.0);
    assert_int_equal(gguf_get_i32(f, "fl", &i32), TROVE_ECORRUPT);
    assert_int_equal(gguf_get_bool(f, "tr", &bl), TROVE_OK);
    assert_true(bl);
    assert_int_equal(gguf_get_bool(f, "fl", &bl), TROVE_ECORRUPT);
    assert_int_equal(gguf_get_str(f, "s", &str, &len), TROVE_OK);
    assert_string_equal(str, "text");
    assert_int_equal(len, 4);
    assert_int_equal(gguf_get_str(f, "u", &str, &len), TROVE_ECORRUPT);
    i32 = 77;
    assert_int_equal(gguf_get_i32(f, "missing", &i32), TROVE_ENOENT);
    assert_int_equal(i32, 77);
    assert_non_null(strstr(trove_errmsg(), "missing"));

    assert_int_equal(gguf_u32_or(f, "missing", 9), 9);
    assert_int_equal(gguf_u32_or(f, "big", 9), 9);
    assert_int_equal(gguf_u32_or(f, "u", 9), 4000000000u);
    assert_true(gguf_i64_or(f, "neg", 0) == neg);
    assert_true(gguf_f32_or(f, "fl", 0) == 2.5f);
    assert_true(gguf_bool_or(f, "nope", true));
    assert_string_equal(gguf_str_or(f, "s", "d"), "text");
    assert_string_equal(gguf_str_or(f, "u", "d"), "d");

    int idx = gguf_find_key(f, "ids");
    assert_int_equal(gguf_key_type(f, idx), GGUF_TYPE_ARRAY);
    assert_int_equal(gguf_arr_type(f, idx), GGUF_TYPE_UINT16);
    assert_int_equal(gguf_arr_len(f, idx), 3);
    assert_int_equal(((const uint16_t *)gguf_arr_data(f, idx))[1], 65535);
    assert_true(gguf_arr_i64(f, idx, 2, &i64));
    assert_int_equal(i64, 7);
    assert_true(gguf_arr_f64(f, idx, 1, &f64));
    assert_true(f64 == 65535.0);
    assert_false(gguf_arr_i64(f, idx, 3, &i64));
    assert_false(gguf_arr_i64(f, gguf_find_key(f, "u"), 0, &i64));
    assert_int_equal(gguf_arr_len(f, gguf_find_key(f, "u")), 0);
    assert_int_equal(gguf_arr_type(f, -1), -1);
    assert_null(gguf_arr_str(f, idx, 0, NULL));
    gguf_close(f);
    tbuf_free(&b);
}

/* ---- the Python writer's file: every kv type and tensor type ---- */

static char tmpdir[64];

static int make_python_file(void **state)
{
    (void)state;
    const char *src = getenv("TROVE_SOURCE_DIR");
    if (!src)
        src = ".";
    strcpy(tmpdir, "/tmp/trove_gguf_py_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    tbuf cmd = {0};
    tbuf_printf(&cmd, "/usr/bin/python3 %s/tests/tools/gguf_writer.py testfile %s/t.gguf %s/t.f32",
                src, tmpdir, tmpdir);
    int rc = system(cmd.data);
    tbuf_free(&cmd);
    return rc == 0 ? 0 : -1;
}

static int remove_python_file(void **state)
{
    (void)state;
    tbuf p = {0};
    tbuf_printf(&p, "%s/t.gguf", tmpdir);
    unlink(p.data);
    tbuf_reset(&p);
    tbuf_printf(&p, "%s/t.f32", tmpdir);
    unlink(p.data);
    tbuf_free(&p);
    rmdir(tmpdir);
    return 0;
}

static float *read_f32_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long sz = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    float *v = xmalloc((size_t)sz);
    assert_int_equal(fread(v, 1, (size_t)sz, fp), (size_t)sz);
    fclose(fp);
    *n = (size_t)sz / 4;
    return v;
}

static void test_python_file(void **state)
{
    (void)state;
    tbuf p = {0};
    tbuf_printf(&p, "%s/t.gguf", tmpdir);
    gguf_file *f;
    assert_int_equal(gguf_open(p.data, &f), TROVE_OK);
    assert_int_equal(gguf_version(f), 3);

    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    float f32;
    double f64;
    bool bl;
    const char *s;
    size_t len;
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.u8")), GGUF_TYPE_UINT8);
    assert_int_equal(gguf_u32_or(f, "t.u8", 0), 200);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.i8")), GGUF_TYPE_INT8);
    assert_int_equal(gguf_get_i32(f, "t.i8", &i32), TROVE_OK);
    assert_int_equal(i32, -100);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.u16")), GGUF_TYPE_UINT16);
    assert_int_equal(gguf_u32_or(f, "t.u16", 0), 60000);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.i16")), GGUF_TYPE_INT16);
    assert_int_equal(gguf_get_i32(f, "t.i16", &i32), TROVE_OK);
    assert_int_equal(i32, -30000);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.u32")), GGUF_TYPE_UINT32);
    assert_int_equal(gguf_get_u32(f, "t.u32", &u32), TROVE_OK);
    assert_true(u32 == 4000000000u);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.i32")), GGUF_TYPE_INT32);
    assert_int_equal(gguf_get_i32(f, "t.i32", &i32), TROVE_OK);
    assert_int_equal(i32, -2000000000);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.f32")), GGUF_TYPE_FLOAT32);
    assert_int_equal(gguf_get_f32(f, "t.f32", &f32), TROVE_OK);
    assert_true(f32 == 1.5f);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.bool")), GGUF_TYPE_BOOL);
    assert_int_equal(gguf_get_bool(f, "t.bool", &bl), TROVE_OK);
    assert_true(bl);
    assert_int_equal(gguf_get_str(f, "t.str", &s, &len), TROVE_OK);
    assert_string_equal(s, "h\xc3\xa9llo w\xc3\xb6rld");
    assert_int_equal(len, 13);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.u64")), GGUF_TYPE_UINT64);
    assert_int_equal(gguf_get_u64(f, "t.u64", &u64), TROVE_OK);
    assert_true(u64 == ((uint64_t)1 << 63) + 5);
    assert_int_equal(gguf_get_i64(f, "t.u64", &i64), TROVE_ECORRUPT);
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.i64")), GGUF_TYPE_INT64);
    assert_int_equal(gguf_get_i64(f, "t.i64", &i64), TROVE_OK);
    assert_true(i64 == -((int64_t)1 << 62));
    assert_int_equal(gguf_key_type(f, gguf_find_key(f, "t.f64")), GGUF_TYPE_FLOAT64);
    assert_int_equal(gguf_get_f64(f, "t.f64", &f64), TROVE_OK);
    assert_true(f64 == 2.25);

    int k = gguf_find_key(f, "t.arr_str");
    assert_int_equal(gguf_arr_len(f, k), 4);
    assert_string_equal(gguf_arr_str(f, k, 0, &len), "a");
    assert_string_equal(gguf_arr_str(f, k, 1, &len), "");
    assert_int_equal(len, 0);
    assert_string_equal(gguf_arr_str(f, k, 2, &len), "\xe4\xb8\xad\xe6\x96\x87");
    s = gguf_arr_str(f, k, 3, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(s, "x\0y", 4);
    k = gguf_find_key(f, "t.arr_f32");
    assert_int_equal(gguf_arr_type(f, k), GGUF_TYPE_FLOAT32);
    const float *fa = gguf_arr_data(f, k);
    assert_true(fa[0] == 0.5f && fa[1] == -1.25f && fa[2] == 3.0f);
    k = gguf_find_key(f, "t.arr_i32");
    assert_true(gguf_arr_i64(f, k, 3, &i64));
    assert_int_equal(i64, -4);
    k = gguf_find_key(f, "t.arr_u8");
    assert_int_equal(gguf_arr_type(f, k), GGUF_TYPE_UINT8);
    assert_memory_equal(gguf_arr_data(f, k), "\x00\x01\xff", 3);
    k = gguf_find_key(f, "t.arr_bool");
    assert_int_equal(gguf_arr_type(f, k), GGUF_TYPE_BOOL);
    assert_memory_equal(gguf_arr_data(f, k), "\x01\x00\x01", 3);
    const gguf_value *nv = gguf_get(f, "t.arr_nested");
    assert_int_equal(nv->elem, GGUF_TYPE_ARRAY);
    assert_int_equal(nv->n, 3);
    assert_int_equal(nv->v.vals[0].elem, GGUF_TYPE_INT32);
    assert_int_equal(((const int32_t *)nv->v.vals[0].v.data)[2], 3);
    assert_int_equal(nv->v.vals[1].elem, GGUF_TYPE_STRING);
    assert_string_equal(nv->v.vals[1].v.strs[1].s, "q");
    assert_int_equal(nv->v.vals[2].elem, GGUF_TYPE_ARRAY);
    assert_int_equal(nv->v.vals[2].v.vals[0].n, 1);
    assert_int_equal(((const int32_t *)nv->v.vals[2].v.vals[0].v.data)[0], 7);
    assert_int_equal(nv->v.vals[2].v.vals[1].n, 0);
    k = gguf_find_key(f, "t.arr_empty");
    assert_int_equal(gguf_arr_len(f, k), 0);
    assert_int_equal(gguf_arr_type(f, k), GGUF_TYPE_INT32);

    /* tensors: dequantised in C == dequantised in numpy, bit for bit */
    tbuf fp = {0};
    tbuf_printf(&fp, "%s/t.f32", tmpdir);
    size_t nref;
    float *ref = read_f32_file(fp.data, &nref);
    const char *names[] = {"t.F32", "t.F16", "t.BF16", "t.Q8_0", "t.Q4_0", "t.Q4_K", "t.Q5_K",
                           "t.Q6_K", "r.Q8_0", "r.Q4_0", "r.Q4_K", "r.Q5_K", "r.Q6_K",
                           "t.Q5_0", "t.Q5_1", "r.Q5_0", "r.Q5_1"};
    ggml_type types[] = {GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                         GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                         GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                         GGML_TYPE_Q6_K, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q5_0,
                         GGML_TYPE_Q5_1};
    enum { NT = sizeof names / sizeof names[0] };
    assert_int_equal(gguf_n_tensors(f), NT);
    size_t pos = 0;
    for (int i = 0; i < NT; i++) {
        const gguf_tensor *t = gguf_tensor_by_name(f, names[i]);
        assert_non_null(t);
        assert_ptr_equal(t, gguf_tensor_at(f, (size_t)i));
        assert_int_equal(t->type, types[i]);
        assert_int_equal(t->n_dims, 2);
        int64_t bs = (int64_t)quant_block_size(types[i]);
        if (names[i][0] == 't') {
            assert_int_equal(t->ne[1], 3);
            assert_int_equal(t->ne[0], bs == 256 ? 512 : 64);
        } else {
            assert_int_equal(t->ne[1], 2);
            assert_int_equal(t->ne[0], 4 * bs);
        }
        assert_int_equal(t->nbytes, t->ne[1] * quant_row_size(t->type, t->ne[0]));
        assert_int_equal((uintptr_t)t->data % 32, 0);
        int64_t nel = gguf_tensor_nelements(t);
        float *y = xmalloc((size_t)nel * sizeof *y);
        size_t row = quant_row_size(t->type, t->ne[0]);
        for (int64_t r = 0; r < t->ne[1]; r++)
            quant_dequantize_row(t->type, (const uint8_t *)t->data + r * row, y + r * t->ne[0],
                                 t->ne[0]);
        assert_true(pos + (size_t)nel <= nref);
        for (int64_t e = 0; e < nel; e++)
            if (y[e] != ref[pos + e])
                fail_msg("%s element %lld: C %.9g, numpy %.9g", names[i], (long long)e,
                         (double)y[e], (double)ref[pos + e]);
        pos += (size_t)nel;
        free(y);
    }
    assert_int_equal(pos, nref);
    free(ref);
    tbuf_free(&fp);
    gguf_close(f);
    tbuf_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_image),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_truncated_files),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_huge_counts),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_bad_tensors),
        cmocka_unit_test(test_getters),
        cmocka_unit_test_setup_teardown(test_python_file, make_python_file, remove_python_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
