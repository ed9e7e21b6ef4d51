/* fetch and sha256: digest test vectors, Content-Range parsing, progress
 * lines. (Downloads themselves are tested end to end against a local server
 * in tests/e2e/test_model_pull.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/fetch.h"
#include "util/sha256.h"

static void hex_of(const void *data, size_t len, char hex[65])
{
    sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, d);
    sha256_hex(d, hex);
}

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    hex_of("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";  /* 448 bits */
    hex_of(m, strlen(m), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces across block boundaries */
    sha256_ctx c;
    uint8_t d[32];
    char a[1000];
    memset(a, 'a', sizeof a);
    sha256_init(&c);
    size_t left = 1000000, step = 1;
    while (left) {
        size_t n = step < left ? step : left;
        sha256_update(&c, a, n);
        left -= n;
        step = step % 987 + 13;  /* 13..999: within a[] */
    }
    sha256_final(&c, d);
    sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* lengths around the padding boundary (55, 56, 63, 64 bytes) agree
     * between one update and byte-by-byte updates */
    for (size_t len = 50; len < 70; len++) {
        char one[65], bytes[65];
        hex_of(a, len, one);
        sha256_init(&c);
        for (size_t i = 0; i < len; i++)
            sha256_update(&c, a + i, 1);
        sha256_final(&c, d);
        sha256_hex(d, bytes);
        assert_string_equal(one, bytes);
    }
}

static void test_sha256_file(void **state)
{
    (void)state;
    char path[] = "/tmp/trove-test-sha.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "abc", 3), 3);
    close(fd);
    char hex[65];
    assert_int_equal(sha256_file(path, hex), TROVE_OK);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    assert_int_equal(sha256_file(path, hex), TROVE_EIO);
}

static int cr(const char *s, int64_t *a, int64_t *b, int64_t *t)
{
    return fetch_parse_content_range(s, strlen(s), a, b, t);
}

static void test_content_range(void **state)
{
    (void)state;
    int64_t a, b, t;
    assert_int_equal(cr(" bytes 100-199/1000\r\n", &a, &b, &t), 0);
    assert_true(a == 100 && b == 199 && t == 1000);
    assert_int_equal(cr("bytes 0-0/*", &a, &b, &t), 0);
    assert_true(a == 0 && b == 0 && t == -1);
    assert_int_equal(cr("BYTES 5-9/10", &a, &b, &t), 0);
    const char *bad[] = {"", "bytes", "bytes */1000", "bytes 10-5/100", "bytes 0-100/100",
                         "bytes -1-5/10", "items 0-1/2", "bytes 0-1/2x", "bytes 0-1",
                         "bytes 99999999999999999999-1/2", "bytes0-1/2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(cr(bad[i], &a, &b, &t), -1);
    /* only len bytes are read */
    assert_int_equal(fetch_parse_content_range("bytes 1-2/30", 11, &a, &b, &t), 0);
    assert_true(t == 3);
}

static void test_progress_line(void **state)
{
    (void)state;
    char buf[256];
    fetch_format_progress(buf, sizeof buf, "m.gguf", 25000000, 100000000, 5e6);
    assert_string_equal(buf, "m.gguf  25.0 MB / 100.0 MB   25%  5.0 MB/s  ETA 0:15");
    fetch_format_progress(buf, sizeof buf, "x", 1500, -1, 0);
    assert_string_equal(buf, "x  1.5 kB  -- B/s");
    fetch_format_progress(buf, sizeof buf, "big", 1000000000, 4000000000, 1e6);
    assert_string_equal(buf, "big  1.00 GB / 4.00 GB   25%  1.0 MB/s  ETA 50:00");
    fetch_format_progress(buf, sizeof buf, "big", 0, 4000000000, 1e6);
    assert_string_equal(buf, "big  0 B / 4.00 GB    0%  1.0 MB/s  ETA 1:06:40");
    fetch_format_progress(buf, sizeof buf, "y", 10, 100, 0);
    assert_string_equal(buf, "y  10 B / 100 B   10%  -- B/s  ETA --:--");
}

/* A part file that is already complete (copied by hand, per the offline
 * instructions) is checked and renamed without any request: the URL here
 * points at a port nothing listens on. */
static void test_complete_part_needs_no_network(void **state)
{
    (void)state;
    char dir[] = "/tmp/trove-test-fetch.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char dest[128], part[140];
    snprintf(dest, sizeof dest, "%s/m.gguf", dir);
    snprintf(part, sizeof part, "%s.part", dest);
    FILE *f = fopen(part, "wb");
    fputs("abc", f);
    fclose(f);
    fetch_opts o = {.size = 3, .retries = -1,
                    .sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"};
    assert_int_equal(fetch_file("http://127.0.0.1:1/m.gguf", dest, &o), TROVE_OK);
    assert_int_equal(access(part, F_OK), -1);
    char hex[65];
    assert_int_equal(sha256_file(dest, hex), TROVE_OK);
    assert_string_equal(hex, o.sha256);
    /* without the part file it has to ask, and fails at once */
    unlink(dest);
    assert_int_equal(fetch_file("http://127.0.0.1:1/m.gguf", dest, &o), TROVE_EIO);
    assert_non_null(strstr(trove_errmsg(), "offline?"));
    assert_non_null(strstr(trove_errmsg(), dest));
    assert_int_equal(access(part, F_OK), -1);   /* no empty part left behind */
    rmdir(dir);
}

static void test_libcurl_loads(void **state)
{
    (void)state;
    /* scripts/install-deps.sh installs libcurl4 */
    assert_int_equal(fetch_load(), TROVE_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_sha256_file),
        cmocka_unit_test(test_content_range),
        cmocka_unit_test(test_progress_line),
        cmocka_unit_test(test_libcurl_loads),
        cmocka_unit_test(test_complete_part_needs_no_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
