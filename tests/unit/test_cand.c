/* cand: search_cand_front leaves the candidate set as had the front
 * channel (the vector scan, run meanwhile on a worker) added its notes
 * first: the same notes in the same order with the same fields, and every
 * note found again by its id. Random sets, overlapping or not, small and
 * past the table's growth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "search/search_int.h"
#include "testutil.h"

/* the vector channel's fields of note `doc` at rank r */
static void add_vector(cand_set *cs, int64_t doc, int r)
{
    cand *c = search_cand_get(cs, doc, 1);
    c->ch[SEARCH_CH_VECTOR].rank = r;
    c->ch[SEARCH_CH_VECTOR].score = 1.0 / r;
    c->vec_chunk_id = doc * 10 + 1;
}

/* a keyword channel's */
static void add_keyword(cand_set *cs, int64_t doc, int r)
{
    cand *c = search_cand_get(cs, doc, 1);
    if (c->has_bm25)
        return;
    c->has_bm25 = 1;
    c->ch[SEARCH_CH_BM25].score = 2.0 / r;
    c->ch[SEARCH_CH_TITLE].rank = r;
    c->chunk_id = doc * 10 + 2;
}

static void check_same(const cand_set *a, const cand_set *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const cand *x = &a->items[i], *y = &b->items[i];
        assert_int_equal(x->doc_id, y->doc_id);
        assert_int_equal(x->chunk_id, y->chunk_id);
        assert_int_equal(x->vec_chunk_id, y->vec_chunk_id);
        assert_int_equal(x->has_bm25, y->has_bm25);
        assert_memory_equal(x->ch, y->ch, sizeof x->ch);
    }
    for (size_t i = 0; i < b->n; i++)
        assert_ptr_equal(search_cand_get((cand_set *)b, a->items[i].doc_id, 0), &b->items[i]);
}

static void one_case(tu_rng *r, size_t n_vec, size_t n_kw, uint32_t ids)
{
    int64_t *vec = xmalloc((n_vec + 1) * sizeof *vec), *kw = xmalloc((n_kw + 1) * sizeof *kw);
    for (size_t i = 0; i < n_vec; i++)
        vec[i] = 1 + tu_rng_u32(r) % ids;
    for (size_t i = 0; i < n_kw; i++)
        kw[i] = 1 + tu_rng_u32(r) % ids;
    cand_set seq = {0}, cs = {0}, front = {0};
    for (size_t i = 0; i < n_vec; i++)   /* one after the other: the vector first */
        add_vector(&seq, vec[i], (int)i + 1);
    for (size_t i = 0; i < n_kw; i++)
        add_keyword(&seq, kw[i], (int)i + 1);
    for (size_t i = 0; i < n_kw; i++)    /* side by side: the keywords' set first */
        add_keyword(&cs, kw[i], (int)i + 1);
    for (size_t i = 0; i < n_vec; i++)
        add_vector(&front, vec[i], (int)i + 1);
    search_cand_front(&cs, &front);
    assert_int_equal(front.n, 0);
    assert_null(front.items);
    check_same(&seq, &cs);
    free(seq.items);
    free(seq.slots);
    free(cs.items);
    free(cs.slots);
    free(vec);
    free(kw);
}

static void test_front_as_if_first(void **state)
{
    (void)state;
    tu_rng r = {7};
    one_case(&r, 0, 0, 10);
    one_case(&r, 5, 0, 10);
    one_case(&r, 0, 5, 10);
    for (int k = 0; k < 200; k++) {
        size_t n_vec = tu_rng_u32(&r) % 700, n_kw = tu_rng_u32(&r) % 700;
        one_case(&r, n_vec, n_kw, 1 + tu_rng_u32(&r) % 2000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_front_as_if_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
