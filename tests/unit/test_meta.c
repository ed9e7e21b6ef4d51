/* Unit tests for note dates (text/date), the --where parser (search/where)
 * and typed frontmatter values (md_meta_retype and md_parse's meta_json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "md/md.h"
#include "search/where.h"
#include "store/nmapcol.h"
#include "store/noterec.h"
#include "store/store.h"
#include "util/buf.h"
#include "text/date.h"

static int64_t day(int y, int m, int d)
{
    int64_t x;
    assert_true(date_civil(y, m, d, &x));
    return x;
}

static void expect_name(const char *name, int64_t want)
{
    int64_t got = -1;
    int found = date_from_name(name, strlen(name), &got);
    if (want < 0) {
        assert_false(found);
        return;
    }
    assert_true(found);
    assert_int_equal(got, want);
}

static void test_civil(void **state)
{
    (void)state;
    assert_int_equal(day(1970, 1, 1), 0);
    assert_int_equal(day(2024, 3, 1) - day(2024, 2, 28), 2);   /* leap year */
    int64_t x;
    assert_false(date_civil(2023, 2, 29, &x));
    assert_false(date_civil(2024, 13, 1, &x));
    char out[11];
    date_format((double)day(2026, 5, 28) + 0.75, out);
    assert_string_equal(out, "2026-05-28");
}

static void test_names(void **state)
{
    (void)state;
    expect_name("2024-05-01.md", day(2024, 5, 1));
    expect_name("2024-05-01 Meeting.md", day(2024, 5, 1));
    expect_name("Notes 2024-05-01.md", day(2024, 5, 1));
    expect_name("20240501.md", day(2024, 5, 1));
    expect_name("2026-W14.md", day(2026, 3, 30));     /* Monday of ISO week 14 */
    expect_name("2021-W01.md", day(2021, 1, 4));
    expect_name("2020-W53.md", day(2020, 12, 28));    /* 2020 has 53 ISO weeks */
    expect_name("2021-W53.md", -1);                   /* 2021 has not */
    expect_name("2024-02-30.md", -1);
    expect_name("120240501.md", -1);                  /* part of a longer number */
    expect_name("202405011.md", -1);
    expect_name("tar.md", -1);
    expect_name("v1.2.3.md", -1);
}

static void test_bounds(void **state)
{
    (void)state;
    double now = (double)day(2026, 5, 28) + 0.5, v;   /* a Thursday, noon */
    assert_int_equal(date_parse_bound("2024-05-01", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2024, 5, 1));
    assert_int_equal(date_parse_bound("2024-05-01", now, 1, &v), TROVE_OK);
    assert_true(v == (double)day(2024, 5, 2));
    assert_int_equal(date_parse_bound("2024-05", now, 1, &v), TROVE_OK);
    assert_true(v == (double)day(2024, 6, 1));
    assert_int_equal(date_parse_bound("2024", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2024, 1, 1));
    assert_int_equal(date_parse_bound("2026-W14", now, 1, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 4, 6));
    assert_int_equal(date_parse_bound("7d", now, 0, &v), TROVE_OK);
    assert_true(v == now - 7);
    assert_int_equal(date_parse_bound("3w", now, 1, &v), TROVE_OK);
    assert_true(v == now - 21);
    assert_int_equal(date_parse_bound("2m", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 3, 28) + 0.5);
    assert_int_equal(date_parse_bound("last-week", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 5, 18));
    assert_int_equal(date_parse_bound("last-week", now, 1, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 5, 25));
    assert_int_equal(date_parse_bound("last-month", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 4, 1));
    assert_int_equal(date_parse_bound("today", now, 0, &v), TROVE_OK);
    assert_true(v == (double)day(2026, 5, 28));
    const char *bad[] = {"", "2024-02-30", "7", "d", "-3d", "12345678d", "2024-5-1", "soon"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(date_parse_bound(bad[i], now, 0, &v), TROVE_EUSAGE);
    double span;
    assert_true(date_parse_span("90d", &span) && span == 90);
    assert_true(date_parse_span("2w", &span) && span == 14);
    assert_false(date_parse_span("0d", &span));
    assert_false(date_parse_span("90", &span));
}

static void test_where_ok(void **state)
{
    (void)state;
    where_cond w;
    assert_int_equal(where_parse("  Status = done ", &w), TROVE_OK);
    assert_string_equal(w.key, "status");
    assert_int_equal(w.op, WHERE_EQ);
    assert_int_equal(w.n_values, 1);
    assert_string_equal(w.values[0].text, "done");
    assert_false(w.values[0].is_number);
    where_cond_free(&w);

    assert_int_equal(where_parse("priority>=2.5", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_GE);
    assert_true(w.values[0].is_number && w.values[0].number == 2.5);
    where_cond_free(&w);

    assert_int_equal(where_parse("due<2026-01-01", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_LT);
    assert_true(w.values[0].is_date && w.values[0].date == (double)day(2026, 1, 1));
    where_cond_free(&w);

    assert_int_equal(where_parse("author in (ana, 'li, x', \"bo\")", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_IN);
    assert_int_equal(w.n_values, 3);
    assert_string_equal(w.values[1].text, "li, x");
    assert_true(w.values[1].quoted);
    where_cond_free(&w);

    assert_int_equal(where_parse("tags NOT IN (a)", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_NOT_IN);
    where_cond_free(&w);

    assert_int_equal(where_parse("tags~=proj/*", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_GLOB);
    assert_string_equal(w.values[0].text, "proj/*");
    where_cond_free(&w);

    assert_int_equal(where_parse("!exists( due )", &w), TROVE_OK);
    assert_int_equal(w.op, WHERE_MISSING);
    assert_string_equal(w.key, "due");
    assert_int_equal(w.n_values, 0);
    where_cond_free(&w);

    assert_int_equal(where_parse("done=true", &w), TROVE_OK);
    assert_true(w.values[0].is_bool && w.values[0].boolean == 1);
    where_cond_free(&w);

    assert_int_equal(where_parse("n='2'", &w), TROVE_OK);
    assert_false(w.values[0].is_number);
    where_cond_free(&w);
}

static void test_where_bad(void **state)
{
    (void)state;
    const char *bad[] = {"", "   ", "status", "=done", "status=", "priority>=high",
                         "due<'2026-01-01'", "a in b", "a in (", "a in ()", "a='x", "a='x'y'",
                         "exists()", "a=\x01"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        where_cond w;
        assert_int_equal(where_parse(bad[i], &w), TROVE_EUSAGE);
        assert_null(w.key);
    }
}

static void test_typed_frontmatter(void **state)
{
    (void)state;
    const char *src = "---\nn: 3\nq: '3'\nf: 1.5e2\nb: true\nB: False\nz: ~\nd: 2024-05-01\n"
                      "s: done\nl: [1, x, \"2\"]\nneg: -4\nver: 1.2.3\n---\nbody\n";
    md_doc d;
    assert_int_equal(md_parse(src, strlen(src), &d), TROVE_OK);
    assert_string_equal(d.meta_json, "{\"n\":3,\"q\":\"3\",\"f\":150.0,\"b\":true,\"B\":false,"
                                     "\"z\":null,\"d\":\"2024-05-01\",\"s\":\"done\","
                                     "\"l\":[1,\"x\",\"2\"],\"neg\":-4,\"ver\":\"1.2.3\"}");
    md_doc_free(&d);
    char *r = md_meta_retype("{\"n\":\"3\",\"l\":[\"true\",\"a\"],\"o\":{\"x\":\"2.5\"}}");
    assert_string_equal(r, "{\"n\":3,\"l\":[true,\"a\"],\"o\":{\"x\":2.5}}");
    free(r);
    assert_null(md_meta_retype("not json"));
}

static void add_field(tbuf *rec, const char *key, int type, int has_num, double num)
{
    noterec_entry e = {NOTEREC_FIELD, type, has_num, num, key, strlen(key), "x", 1};
    noterec_add(rec, &e);
}

/* A note's date from its record (the note map's rule, meta.h): the first
 * date key it has as a date, in the keys' order, the first value of a
 * list; else the file name's; else the file time. */
static void test_record_date(void **state)
{
    (void)state;
    static const char *const keys[] = {"date", "created"};
    tbuf rec = {0};
    double days = -1;
    noterec_begin(&rec, (int64_t)86400e9 * 3);   /* file time: day 3 */
    const uint8_t *p = (const uint8_t *)rec.data;
    assert_int_equal(noterec_date(p, rec.len, keys, 2, &days), 3);
    assert_true(days == 3.0);
    add_field(&rec, "", STORE_FIELD_DATE, 1, 5);          /* the file name's */
    add_field(&rec, "created", STORE_FIELD_TEXT, 0, 0);    /* not a date */
    p = (const uint8_t *)rec.data;
    assert_int_equal(noterec_date(p, rec.len, keys, 2, &days), 2);
    assert_true(days == 5.0);
    add_field(&rec, "created", STORE_FIELD_DATE, 1, 7);
    add_field(&rec, "created", STORE_FIELD_DATE, 1, 8);    /* a list: the first counts */
    p = (const uint8_t *)rec.data;
    assert_int_equal(noterec_date(p, rec.len, keys, 2, &days), 1);
    assert_true(days == 7.0);
    add_field(&rec, "date", STORE_FIELD_DATE, 1, 9);       /* the first key wins, wherever */
    p = (const uint8_t *)rec.data;
    assert_int_equal(noterec_date(p, rec.len, keys, 2, &days), 0);
    assert_true(days == 9.0);
    assert_int_equal(noterec_date(p, rec.len - 1, keys, 2, &days), -1);   /* cut short */
    assert_int_equal(noterec_date(p, 5, keys, 2, &days), -1);
    tbuf_free(&rec);
}

static void col_field(nmapcol_builder *b, const char *key, int type, int has_num, double num,
                      const char *txt)
{
    noterec_entry e = {NOTEREC_FIELD, type, has_num, num, key, strlen(key), txt,
                       txt ? strlen(txt) : 0};
    nmapcol_field(b, &e);
}

/* The key's column of row (NULL when not coded: *listed says whether the
 * directory names it). */
static int find_col(const tbuf *row, const char *key, nmapcol_col *c)
{
    const uint8_t *p = (const uint8_t *)row->data;
    nmapcol_dir_entry e;
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    assert_int_equal(nmapcol_header(p, row->len, &flags, &n_keys, &n_slots, &dir_end), 0);
    int found = nmapcol_dir_find(p, row->len, key, strlen(key), &e);
    assert_true(found >= 0);
    if (found <= 0 || !e.coded)
        return found;
    assert_true(e.off + e.len <= row->len);
    assert_int_equal(nmapcol_col_parse(p + e.off, e.len, n_slots, c), 0);
    return 2;
}

/* The note map's field columns (nmapcol.h): a dictionary of distinct
 * values, a code per note, lists as sets of codes, notes without a record
 * unknown; keys past the bounds listed but not coded (or, with a name too
 * long, not listed, and the row says so). */
static void test_field_columns(void **state)
{
    (void)state;
    nmapcol_builder *b = nmapcol_builder_new();
    tbuf row = {0};
    nmapcol_finish(b, &row);
    assert_int_equal(row.len, 0);   /* no note: no row */
    nmapcol_note(b, 0);
    col_field(b, "status", STORE_FIELD_TEXT, 0, 0, "done");
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "ana");
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "li");
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "ana");   /* a list with a repeat */
    nmapcol_note(b, 2);                                       /* slot 1: no record */
    col_field(b, "status", STORE_FIELD_TEXT, 0, 0, "done");
    col_field(b, "priority", STORE_FIELD_NUMBER, 1, 3, "3");
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "li");
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "ana");   /* the same set, other order */
    col_field(b, "nul", STORE_FIELD_TEXT, 0, 0, NULL);
    nmapcol_note(b, 3);
    col_field(b, "author", STORE_FIELD_TEXT, 0, 0, "li");
    char big[NMAPCOL_MAX_TEXT + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    col_field(b, "long", STORE_FIELD_TEXT, 0, 0, big);        /* past the text bound */
    nmapcol_note(b, 4);
    col_field(b, "status", STORE_FIELD_TEXT, 0, 0, "draft");
    nmapcol_note_unknown(b);                                  /* a malformed record */
    nmapcol_finish(b, &row);
    nmapcol_builder_free(b);

    const uint8_t *p = (const uint8_t *)row.data;
    nmapcol_col c;
    assert_int_equal(find_col(&row, "status", &c), 2);
    assert_int_equal(c.n_values, 2);   /* the malformed note's value stays in the dictionary */
    assert_string_equal(c.values[0].txt, "done");
    assert_int_equal(nmapcol_code(&c, 0), 1);
    assert_int_equal(nmapcol_code(&c, 1), NMAPCOL_UNKNOWN);  /* no record */
    assert_int_equal(nmapcol_code(&c, 2), 1);
    assert_int_equal(nmapcol_code(&c, 3), 0);                /* lacks the key */
    assert_int_equal(nmapcol_code(&c, 4), NMAPCOL_UNKNOWN);  /* malformed */
    assert_int_equal(nmapcol_code(&c, 5), NMAPCOL_UNKNOWN);  /* past the last slot */
    nmapcol_col_free(&c);
    assert_int_equal(find_col(&row, "author", &c), 2);
    assert_int_equal(c.n_values, 2);
    assert_int_equal(c.n_sets, 1);                           /* {ana, li} once */
    assert_int_equal(nmapcol_code(&c, 0), 3);
    assert_int_equal(nmapcol_code(&c, 2), 3);
    assert_int_equal(c.set_start[1] - c.set_start[0], 2);
    assert_string_equal(c.values[nmapcol_code(&c, 3) - 1].txt, "li");
    nmapcol_col_free(&c);
    assert_int_equal(find_col(&row, "priority", &c), 2);
    assert_true(c.values[0].has_num && c.values[0].num == 3.0 &&
                c.values[0].type == STORE_FIELD_NUMBER);
    nmapcol_col_free(&c);
    assert_int_equal(find_col(&row, "nul", &c), 2);
    assert_null(c.values[0].txt);                            /* NULL, not "" */
    nmapcol_col_free(&c);
    assert_int_equal(find_col(&row, "long", &c), 1);         /* listed, not coded */
    assert_int_equal(find_col(&row, "nosuch", &c), 0);       /* absent from every note */
    assert_int_equal(nmapcol_has_record(p, row.len, 0), 1);
    assert_int_equal(nmapcol_has_record(p, row.len, 1), 0);
    assert_int_equal(nmapcol_has_record(p, row.len, 4), 0);
    /* cut short anywhere: never decoded */
    for (size_t cut = 0; cut < row.len; cut++) {
        nmapcol_dir_entry e;
        if (nmapcol_dir_find(p, cut, "status", 6, &e) == 1 && e.off + e.len <= cut) {
            int flags;
            uint32_t n_keys, n_slots, dir_end;
            assert_int_equal(nmapcol_header(p, cut, &flags, &n_keys, &n_slots, &dir_end), 0);
            assert_int_equal(nmapcol_col_parse(p + e.off, e.len - 1, n_slots, &c), -1);
        }
    }

    /* more distinct values than the bound: not coded; a key name too long:
     * not listed, and the row says an unlisted key is unknown */
    b = nmapcol_builder_new();
    char key[NMAPCOL_MAX_KEY + 2];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    for (uint32_t i = 0; i < 4096; i++) {
        nmapcol_note(b, i);
        col_field(b, "n", STORE_FIELD_NUMBER, 1, i, "n");
        col_field(b, "few", STORE_FIELD_NUMBER, 1, i % 300, "f");   /* 2-byte codes */
    }
    col_field(b, key, STORE_FIELD_TEXT, 0, 0, "x");
    nmapcol_finish(b, &row);
    nmapcol_builder_free(b);
    assert_int_equal(find_col(&row, "n", &c), 1);
    assert_int_equal(find_col(&row, "few", &c), 2);
    assert_int_equal(c.width, 2);
    assert_int_equal(nmapcol_code(&c, 4095), 4095 % 300 + 1);
    nmapcol_col_free(&c);
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    assert_int_equal(nmapcol_header((const uint8_t *)row.data, row.len, &flags, &n_keys, &n_slots,
                                    &dir_end), 0);
    assert_int_equal(flags, 1);
    assert_int_equal(n_keys, 2);
    assert_int_equal(n_slots, 4096);
    tbuf_free(&row);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_civil),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_where_ok),
        cmocka_unit_test(test_where_bad),
        cmocka_unit_test(test_typed_frontmatter),
        cmocka_unit_test(test_record_date),
        cmocka_unit_test(test_field_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
