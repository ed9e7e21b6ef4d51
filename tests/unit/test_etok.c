/* Tests for the GGUF tokenizers (src/embed/tokenizers/etok*).
 *
 * Hand-built vocabularies pin down each algorithm's rules (WordPiece
 * greediness and [UNK], unigram Viterbi choices, BPE merge order and tie
 * break, byte fallback, UNUSED resegmentation, user-defined pieces, the
 * normaliser's whitespace rules and a hand-assembled charsmap trie,
 * framing, truncation, pairs). The parity test then runs
 * tests/tools/tok_parity.py, which trains real sentencepiece unigram and
 * BPE models on the shared corpora and builds a WordPiece vocabulary, and
 * requires trove's ids to equal sentencepiece's / the reference's on every
 * one of ~4800 lines: English and Chinese held out from training, plus
 * Japanese, Korean, German and French the models never saw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "embed/tokenizers/etok.h"
#include "embed/tokenizers/etok_int.h"
#include "embed/formats/gguf.h"
#include "util/buf.h"
#include "util/mem.h"

#define M "\xE2\x96\x81" /* U+2581, the GGUF word-start / space mark */
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static size_t enc(const etok *t, const char *s, bool special, int32_t *ids, size_t max) {
    return etok_encode(t, s, strlen(s), special, ids, max, NULL);
}

static void expect_ids(const etok *t, const char *s, bool special, const int32_t *want, size_t n) {
    int32_t got[256];
    size_t k = enc(t, s, special, got, NELEM(got));
    if (k != n || memcmp(got, want, n * sizeof *got) != 0) {
        fprintf(stderr, "text \"%s\": got", s);
        for (size_t i = 0; i < k; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
        fail();
    }
}
#define EXPECT(t, s, special, ...)                                                               \
    do {                                                                                         \
        const int32_t want_[] = {__VA_ARGS__};                                                   \
        expect_ids(t, s, special, want_, NELEM(want_));                                          \
    } while (0)

static etok *build(etok_vocab *v, const char *const *pieces, size_t n, const float *scores,
                   const int32_t *types) {
    v->text = pieces;
    v->n = n;
    v->scores = scores;
    v->types = types;
    etok *t = NULL;
    trove_err e = etok_new(v, &t);
    if (e != TROVE_OK) fprintf(stderr, "etok_new: %s\n", trove_errmsg());
    assert_int_equal(e, TROVE_OK);
    return t;
}

/* ---- WordPiece ---- */

static const char *const wpm_pieces[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",      /* 0-4 */
    M "hello", M "world", M ",", M "!", M "un",         /* 5-9 */
    "aff", "able", M "\xE4\xBD\xA0", M "\xE5\xA5\xBD",  /* 10-13: aff able 你 好 */
    M "cafe", M "a", "a", M "unaff", M "x",             /* 14-18 */
};
static const int32_t wpm_types[] = {3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static etok *wpm_new(void) {
    etok_vocab v;
    etok_vocab_init(&v, ETOK_WPM);
    return build(&v, wpm_pieces, NELEM(wpm_pieces), NULL, wpm_types);
}

static void test_wpm_basic(void **state) {
    (void)state;
    etok *t = wpm_new();
    assert_int_equal(etok_kind_of(t), ETOK_WPM);
    assert_int_equal(etok_specials(t)->unk, 1);
    assert_int_equal(etok_specials(t)->cls, 2);
    assert_int_equal(etok_specials(t)->sep, 3);
    assert_int_equal(etok_specials(t)->pad, 0);
    assert_int_equal(etok_specials(t)->mask, 4);
    EXPECT(t, "Hello, World!", true, 2, 5, 7, 6, 8, 3);
    EXPECT(t, "  hello\t\n world  ", false, 5, 6);
    /* longest first: "unaff" beats "un"+"aff"; then "able" */
    EXPECT(t, "unaffable", false, 17, 11);
    EXPECT(t, "\xE4\xBD\xA0\xE5\xA5\xBD", false, 12, 13);       /* 你好: one word each */
    EXPECT(t, "hello\xE4\xBD\xA0world", false, 5, 12, 6);      /* CJK splits words */
    EXPECT(t, "Caf\xC3\xA9", false, 14);                        /* lower + strip accent */
    EXPECT(t, "Cafe\xCC\x81", false, 14);                       /* decomposed input too */
    EXPECT(t, "xyz hello", false, 1, 5);                        /* no piece for "yz" */
    EXPECT(t, "unaffablex", false, 1);                          /* whole word -> [UNK] */
    EXPECT(t, "hel\x01lo wor\xC2\xADld", false, 5, 6);          /* control, soft hyphen */
    EXPECT(t, "hel\xFFlo", false, 5);                           /* invalid byte dropped */
    EXPECT(t, "", true, 2, 3);
    etok_free(t);
}

static void test_wpm_long_word(void **state) {
    (void)state;
    etok *t = wpm_new();
    char word[102];
    memset(word, 'a', 101);
    word[101] = 0;
    EXPECT(t, word, false, 1); /* over 100 characters */
    word[100] = 0;
    int32_t ids[128];
    size_t n = enc(t, word, false, ids, 128);
    assert_int_equal(n, 100);
    assert_int_equal(ids[0], 15);
    for (size_t i = 1; i < n; i++) assert_int_equal(ids[i], 16);
    etok_free(t);
}

static void test_wpm_cased(void **state) {
    (void)state;
    static const char *const pieces[] = {"[UNK]", "[CLS]", "[SEP]", M "Hello", M "hello", M "caf\xC3\xA9"};
    static const int32_t types[] = {3, 3, 3, 1, 1, 1};
    etok_vocab v;
    etok_vocab_init(&v, ETOK_WPM);
    etok *t = build(&v, pieces, NELEM(pieces), NULL, types);
    EXPECT(t, "Hello hello caf\xC3\xA9", false, 3, 4, 5); /* no folding when cased */
    etok_free(t);

    /* an uncased vocabulary with one stray capitalised piece, and specials
     * typed NORMAL, still folds case */
    const char *many[64];
    char names[64][16];
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], sizeof names[i], M "w%c%c", 'a' + i % 26, 'a' + i / 26);
        many[i] = names[i];
    }
    many[0] = "[UNK]";
    many[1] = "[CLS]";
    many[2] = "[SEP]";
    many[3] = M "Stray";
    etok_vocab_init(&v, ETOK_WPM);
    t = build(&v, many, 64, NULL, NULL);
    char want_word[16];
    snprintf(want_word, sizeof want_word, "W%c%c", 'a' + 10 % 26, 'a' + 10 / 26);
    EXPECT(t, want_word, false, 10);
    etok_free(t);
}

static void test_wpm_truncate_pair(void **state) {
    (void)state;
    etok *t = wpm_new();
    int32_t ids[16];
    size_t full = 0;
    size_t n = etok_encode(t, "hello world hello world", 23, true, ids, 4, &full);
    assert_int_equal(full, 6);
    assert_int_equal(n, 4);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 5);
    assert_int_equal(ids[2], 6);
    assert_int_equal(ids[3], 3);
    n = etok_encode(t, "hello", 5, true, ids, 1, NULL);
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 2);
    n = etok_encode(t, "hello", 5, true, ids, 0, NULL);
    assert_int_equal(n, 0);

    uint8_t segs[16];
    n = etok_encode_pair(t, "hello", 5, "world!", 6, ids, segs, 16);
    const int32_t want[] = {2, 5, 3, 6, 8, 3};
    const uint8_t wseg[] = {0, 0, 0, 1, 1, 1};
    assert_int_equal(n, 6);
    assert_memory_equal(ids, want, sizeof want);
    assert_memory_equal(segs, wseg, sizeof wseg);
    /* longest first: a has 4 tokens, b 2; 7 ids leave room for 4 */
    n = etok_encode_pair(t, "hello world hello world", 23, "world!", 6, ids, segs, 7);
    const int32_t want2[] = {2, 5, 6, 3, 6, 8, 3};
    assert_int_equal(n, 7);
    assert_memory_equal(ids, want2, sizeof want2);
    etok_free(t);
}

static void test_decode_piece(void **state) {
    (void)state;
    etok *t = wpm_new();
    char buf[32];
    size_t n = etok_decode_piece(t, 5, buf, sizeof buf);
    assert_int_equal(n, 6);
    assert_memory_equal(buf, " hello", 6);
    n = etok_decode_piece(t, 10, buf, sizeof buf);
    assert_int_equal(n, 3);
    assert_memory_equal(buf, "aff", 3);
    assert_int_equal(etok_decode_piece(t, 2, buf, sizeof buf), 0);  /* control */
    assert_int_equal(etok_decode_piece(t, 999, buf, sizeof buf), 0); /* out of range */
    assert_int_equal(etok_decode_piece(t, 5, buf, 2), 6);            /* short buffer */
    size_t len;
    assert_non_null(etok_piece(t, 5, &len));
    assert_int_equal(len, 8);
    assert_null(etok_piece(t, -1, &len));
    etok_free(t);
}

/* ---- normaliser ---- */

static const char *const ugm_pieces[] = {
    "<unk>", "<s>", "</s>", M, M "a", "b", "ab", "[[", M "b",
};
static const float ugm_scores[] = {0, 0, 0, -2.0f, -1.0f, -3.0f, -2.5f, 0, -1.0f};
static const int32_t ugm_types[] = {2, 3, 3, 1, 1, 1, 1, 4, 1};

static etok *ugm_new(etok_vocab *v) {
    v->special.bos = 1;
    v->special.eos = 2;
    return build(v, ugm_pieces, NELEM(ugm_pieces), ugm_scores, ugm_types);
}

static void expect_norm(const etok *t, const char *in, const char *want) {
    tbuf b = {0};
    etok_spm_normalize(t, in, strlen(in), &b);
    if (strcmp(tbuf_cstr(&b), want) != 0) {
        fprintf(stderr, "normalize \"%s\": got \"%s\" want \"%s\"\n", in, tbuf_cstr(&b), want);
        fail();
    }
    tbuf_free(&b);
}

static void test_normalize_ws(void **state) {
    (void)state;
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    v.remove_extra_ws = true;
    etok *t = ugm_new(&v);
    expect_norm(t, "  a   b  ", M "a" M "b");
    expect_norm(t, "   ", "");
    expect_norm(t, "a[[ b", M "a[[" M "b");
    expect_norm(t, "a\xFF" "b", M "a\xEF\xBF\xBD" "b"); /* invalid byte -> U+FFFD */
    etok_free(t);

    etok_vocab_init(&v, ETOK_UGM);
    t = ugm_new(&v);
    expect_norm(t, "  a b ", M M M "a" M "b" M);
    etok_free(t);

    etok_vocab_init(&v, ETOK_UGM);
    v.add_space_prefix = false;
    t = ugm_new(&v);
    expect_norm(t, "a b", "a" M "b");
    etok_free(t);
}

/* A darts-clone double array with the single key "A" -> "a", laid out by
 * hand: root offset 1, so "A" (0x41) lives at unit 1^0x41 = 64, whose
 * offset 1 puts its leaf at 65; the leaf's value 0 indexes "a\0". */
static void test_charsmap(void **state) {
    (void)state;
    uint8_t blob[4 + 66 * 4 + 2];
    memset(blob, 0, sizeof blob);
    uint32_t units[66] = {0};
    units[0] = 1u << 10;
    units[64] = 0x41u | (1u << 8) | (1u << 10);
    units[65] = (1u << 31) | 0u;
    uint32_t trie = sizeof units;
    memcpy(blob, &trie, 4);
    memcpy(blob + 4, units, sizeof units);
    memcpy(blob + 4 + sizeof units, "a", 2);

    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    v.charsmap = blob;
    v.charsmap_len = sizeof blob;
    etok *t = ugm_new(&v);
    expect_norm(t, "xAyA", M "xaya");
    EXPECT(t, "A", false, 4); /* "A" -> "a" -> "▁a" */
    etok_free(t);

    /* a value pointing past the strings is no rule, not a crash */
    units[65] = (1u << 31) | 7u;
    memcpy(blob + 4, units, sizeof units);
    etok_vocab_init(&v, ETOK_UGM);
    v.charsmap = blob;
    v.charsmap_len = sizeof blob;
    t = ugm_new(&v);
    expect_norm(t, "A", M "A");
    etok_free(t);

    /* corrupt sizes are refused */
    etok_vocab_init(&v, ETOK_UGM);
    v.charsmap = blob;
    v.charsmap_len = 3;
    v.text = ugm_pieces;
    v.n = NELEM(ugm_pieces);
    v.scores = ugm_scores;
    v.types = ugm_types;
    etok *bad = NULL;
    assert_int_equal(etok_new(&v, &bad), TROVE_ECORRUPT);
    assert_null(bad);
    uint32_t huge = 1u << 20;
    memcpy(blob, &huge, 4);
    v.charsmap_len = sizeof blob;
    assert_int_equal(etok_new(&v, &bad), TROVE_ECORRUPT);
}

/* ---- unigram ---- */

static void test_ugm_viterbi(void **state) {
    (void)state;
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    etok *t = ugm_new(&v);
    /* "▁ab": ▁a + b = -4 beats ▁ + ab = -4.5 */
    EXPECT(t, "ab", false, 4, 5);
    EXPECT(t, "ab", true, 4, 5, 2); /* t5 frames with eos only */
    /* unknown "z" -> <unk>; a run of unknown characters is one <unk> */
    EXPECT(t, "azz", false, 4, 0);
    EXPECT(t, "zbz", false, 3, 0, 5, 0); /* ▁ is a piece */
    /* user-defined pieces are taken whole */
    EXPECT(t, "a[[b", false, 4, 7, 5);
    etok_free(t);

    float scores[NELEM(ugm_scores)];
    memcpy(scores, ugm_scores, sizeof scores);
    scores[6] = -1.5f; /* now ▁ + ab = -3.5 wins */
    etok_vocab_init(&v, ETOK_UGM);
    t = build(&v, ugm_pieces, NELEM(ugm_pieces), scores, ugm_types);
    EXPECT(t, "ab", false, 3, 6);
    etok_free(t);
}

static void test_ugm_byte_fallback(void **state) {
    (void)state;
    const char *pieces[NELEM(ugm_pieces) + 2];
    float scores[NELEM(ugm_pieces) + 2];
    int32_t types[NELEM(ugm_pieces) + 2];
    for (size_t i = 0; i < NELEM(ugm_pieces); i++) {
        pieces[i] = ugm_pieces[i];
        scores[i] = ugm_scores[i];
        types[i] = ugm_types[i];
    }
    pieces[9] = "<0xC3>";
    pieces[10] = "<0xA9>";
    scores[9] = scores[10] = 0;
    types[9] = types[10] = ETOK_T_BYTE;
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    etok *t = build(&v, pieces, 11, scores, types);
    EXPECT(t, "a\xC3\xA9", false, 4, 9, 10); /* é -> its two bytes */
    EXPECT(t, "az", false, 4, 0);            /* no <0x7A>: unknown */
    char buf[4];
    assert_int_equal(etok_decode_piece(t, 9, buf, sizeof buf), 1);
    assert_int_equal((uint8_t)buf[0], 0xC3);
    etok_free(t);
}

/* XLM-RoBERTa (bge-m3, bge-reranker-v2-m3) in GGUF: t5 with bos and eos. */
static void test_ugm_pair_framing(void **state) {
    (void)state;
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    v.add_bos = true;
    etok *t = ugm_new(&v);
    assert_true(etok_adds_bos(t) && etok_adds_eos(t));
    EXPECT(t, "ab", true, 1, 4, 5, 2);
    int32_t ids[16];
    uint8_t segs[16];
    size_t n = etok_encode_pair(t, "a", 1, "b", 1, ids, segs, 16);
    const int32_t want[] = {1, 4, 2, 2, 8, 2}; /* <s> a </s></s> b </s> */
    const uint8_t wseg[] = {0, 0, 0, 1, 1, 1};
    assert_int_equal(n, NELEM(want));
    assert_memory_equal(ids, want, sizeof want);
    assert_memory_equal(segs, wseg, sizeof wseg);
    n = etok_encode_pair(t, "a", 1, "b", 1, ids, segs, 3); /* framing alone is cut */
    assert_int_equal(n, 3);
    etok_free(t);

    etok_vocab_init(&v, ETOK_UGM); /* plain t5: eos only */
    t = ugm_new(&v);
    n = etok_encode_pair(t, "a", 1, "b", 1, ids, NULL, 16);
    const int32_t want2[] = {4, 2, 8, 2};
    assert_int_equal(n, NELEM(want2));
    assert_memory_equal(ids, want2, sizeof want2);
    etok_free(t);
}

/* ---- BPE ---- */

static const char *const bpe_pieces[] = {
    "<unk>", "<s>", "</s>", "a", "b", "c", "ab", "bc", "abc", "[[", "<0xC3>", "<0xA9>", M,
};
static const int32_t bpe_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 4, 6, 6, 1};

static etok *bpe_new(const float *scores, const int32_t *types) {
    etok_vocab v;
    etok_vocab_init(&v, ETOK_BPE);
    v.add_space_prefix = false;
    v.special.bos = 1;
    v.special.eos = 2;
    return build(&v, bpe_pieces, NELEM(bpe_pieces), scores, types ? types : bpe_types);
}

static void test_bpe_merges(void **state) {
    (void)state;
    /* bc (-1) merges before ab (-2), then abc (-0.5) */
    float s1[] = {0, 0, 0, -10, -10, -10, -2, -1, -0.5f, 0, 0, 0, -10};
    etok *t = bpe_new(s1, NULL);
    EXPECT(t, "abc", false, 8);
    EXPECT(t, "abc", true, 1, 8); /* llama frames with bos only */
    EXPECT(t, "a b", false, 3, 12, 4);
    EXPECT(t, "ab[[bc", false, 6, 9, 7);             /* [[ is never merged */
    EXPECT(t, "a\xC3\xA9z", false, 3, 10, 11, 0);     /* byte fallback, then unknown */
    etok_free(t);

    /* without abc: a + bc */
    float s2[] = {0, 0, 0, -10, -10, -10, -2, -1, -0.5f, 0, 0, 0, -10};
    int32_t ty2[NELEM(bpe_types)];
    memcpy(ty2, bpe_types, sizeof ty2);
    ty2[8] = ETOK_T_CONTROL;
    t = bpe_new(s2, ty2);
    EXPECT(t, "abc", false, 3, 7);
    etok_free(t);

    /* no byte pieces: a run of unknown characters is one <unk> */
    ty2[10] = ty2[11] = ETOK_T_CONTROL;
    t = bpe_new(s2, ty2);
    EXPECT(t, "azz\xC3\xA9" "b", false, 3, 0, 4);
    etok_free(t);

    /* equal scores: the left-most pair merges first */
    float s3[] = {0, 0, 0, -10, -10, -10, -1, -1, -0.5f, 0, 0, 0, -10};
    t = bpe_new(s3, ty2);
    EXPECT(t, "abc", false, 6, 5);
    etok_free(t);
}

static void test_bpe_unused(void **state) {
    (void)state;
    /* ab is UNUSED: merged on the way to abc, undone when it is final */
    float s[] = {0, 0, 0, -10, -10, -10, -0.1f, -5, -0.05f, 0, 0, 0, -10};
    int32_t ty[NELEM(bpe_types)];
    memcpy(ty, bpe_types, sizeof ty);
    ty[6] = ETOK_T_UNUSED;
    etok *t = bpe_new(s, ty);
    EXPECT(t, "abc", false, 8);
    EXPECT(t, "ab", false, 3, 4);
    etok_free(t);
}

/* ---- construction errors ---- */

static void test_errors(void **state) {
    (void)state;
    etok_vocab v;
    etok *t = NULL;
    etok_vocab_init(&v, ETOK_UGM);
    assert_int_equal(etok_new(&v, &t), TROVE_EINVAL); /* empty */
    static const char *const no_unk[] = {"a", "b"};
    v.text = no_unk;
    v.n = 2;
    assert_int_equal(etok_new(&v, &t), TROVE_EINVAL);
    etok_vocab_init(&v, ETOK_WPM);
    v.text = no_unk;
    v.n = 2;
    assert_int_equal(etok_new(&v, &t), TROVE_EINVAL);
    assert_null(t);
    etok_free(NULL);
}

/* Arbitrary bytes through every kind must not crash (ASan/UBSan run). */
static void test_random_bytes(void **state) {
    (void)state;
    etok *ts[3];
    ts[0] = wpm_new();
    etok_vocab v;
    etok_vocab_init(&v, ETOK_UGM);
    v.remove_extra_ws = true;
    ts[1] = ugm_new(&v);
    float s1[] = {0, 0, 0, -10, -10, -10, -2, -1, -0.5f, 0, 0, 0, -10};
    ts[2] = bpe_new(s1, NULL);
    uint32_t x = 12345;
    char buf[64];
    int32_t ids[300];
    for (int round = 0; round < 3000; round++) {
        size_t n = (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            uint8_t c = (uint8_t)(x >> 16);
            buf[i] = (char)(round % 2 ? c : "ab c[]\xC3\xA9\xE4\xBD\xA0 \x01"[c % 13]);
        }
        for (int k = 0; k < 3; k++) {
            size_t full = 0;
            size_t m = etok_encode(ts[k], buf, n, true, ids, NELEM(ids), &full);
            assert_true(m <= NELEM(ids));
            assert_int_equal(m, full);
            for (size_t i = 0; i < m; i++) assert_true(ids[i] >= 0 && (size_t)ids[i] < etok_n_vocab(ts[k]));
        }
    }
    for (int k = 0; k < 3; k++) etok_free(ts[k]);
}

/* ---- parity with sentencepiece and the WordPiece reference ---- */

static char tmpdir[] = "/tmp/trove-etok-XXXXXX";
static bool have_parity, made_tmp;

static int parity_setup(void **state) {
    (void)state;
    const char *src = getenv("TROVE_SOURCE_DIR");
    const char *shared = getenv("TROVE_SHARED_DIR");
    if (!src) {
        fprintf(stderr, "etok parity tests skipped: TROVE_SOURCE_DIR is not set (ctest sets it)\n");
        return 0;
    }
    if (!mkdtemp(tmpdir)) return -1;
    made_tmp = true;
    tbuf cmd = {0};
    tbuf_printf(&cmd, "/usr/bin/python3 %s/tests/tools/tok_parity.py %s", src, tmpdir);
    if (shared) tbuf_printf(&cmd, " --shared %s", shared);
    int rc = system(tbuf_cstr(&cmd));
    tbuf_free(&cmd);
    have_parity = WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
        fprintf(stderr, "etok parity tests skipped: python3-sentencepiece is not installed "
                        "(scripts/install-deps.sh installs it)\n");
        return 0;
    }
    if (!have_parity) fprintf(stderr, "tests/tools/tok_parity.py failed (status %d)\n", rc);
    return have_parity ? 0 : -1;
}

static int parity_teardown(void **state) {
    (void)state;
    if (!made_tmp) return 0;
    const char *names[] = {"lines.txt", "t5.gguf", "t5.ids", "llama.gguf", "llama.ids",
                           "bert.gguf", "bert.ids", "bad_model.gguf"};
    char path[256];
    for (size_t i = 0; i < NELEM(names); i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    return 0;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    tbuf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) tbuf_append(&b, chunk, n);
    fclose(f);
    *len = b.len;
    return b.data ? tbuf_detach(&b) : xstrdup("");
}

/* Split buf in place at '\n'; returns the line starts. */
static char **split_lines(char *buf, size_t len, size_t *n) {
    char **v = NULL;
    size_t cap = 0, k = 0;
    char *p = buf, *end = buf + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        *nl = 0;
        xgrow(&v, &cap, k + 1, sizeof *v);
        v[k++] = p;
        p = nl + 1;
    }
    *n = k;
    return v;
}

static etok *open_tok(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s.gguf", tmpdir, name);
    gguf_file *f = NULL;
    assert_int_equal(gguf_open(path, &f), TROVE_OK);
    etok *t = NULL;
    trove_err e = etok_from_gguf(f, &t);
    if (e != TROVE_OK) fprintf(stderr, "%s\n", trove_errmsg());
    assert_int_equal(e, TROVE_OK);
    gguf_close(f); /* the tokenizer keeps its own copy */
    return t;
}

static void parity_one(const char *name, etok_kind kind) {
    char path[256];
    size_t llen, ilen, nl, ni;
    snprintf(path, sizeof path, "%s/lines.txt", tmpdir);
    char *lbuf = slurp(path, &llen);
    snprintf(path, sizeof path, "%s/%s.ids", tmpdir, name);
    char *ibuf = slurp(path, &ilen);
    char **lines = split_lines(lbuf, llen, &nl);
    char **want = split_lines(ibuf, ilen, &ni);
    assert_int_equal(nl, ni);

    etok *t = open_tok(name);
    assert_int_equal(etok_kind_of(t), kind);
    size_t cap = 1 << 16, mismatches = 0, tokens = 0, bytes = 0;
    int32_t *ids = xmalloc(cap * sizeof *ids);
    clock_t c0 = clock();
    for (size_t i = 0; i < nl; i++) {
        size_t len = strlen(lines[i]);
        size_t n = etok_encode(t, lines[i], len, true, ids, cap, NULL);
        tokens += n;
        bytes += len;
        /* compare with the expected row */
        const char *p = want[i];
        size_t k = 0;
        bool same = true;
        while (*p) {
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p) break;
            if (k >= n || ids[k] != v) same = false;
            k++;
            p = e;
        }
        if (k != n) same = false;
        if (!same) {
            if (mismatches < 5) {
                fprintf(stderr, "%s mismatch on line %zu: \"%s\"\n  want %s\n  got ", name, i + 1,
                        lines[i], want[i]);
                for (size_t j = 0; j < n; j++) fprintf(stderr, "%d ", ids[j]);
                fprintf(stderr, "\n");
            }
            mismatches++;
        }
    }
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("parity %-5s: %zu lines, %zu tokens, %zu mismatches (%.0f KB/s in this build)\n", name,
           nl, tokens, mismatches, secs > 0 ? bytes / 1024.0 / secs : 0.0);
    assert_int_equal(mismatches, 0);
    /* ~4,800 lines from ../shared, ~1,500 from fixtures/shared-mini */
    assert_true(nl >= 1000);

    /* truncation keeps the framing: the longest line cut to 16 ids */
    size_t longest = 0;
    for (size_t i = 1; i < nl; i++)
        if (strlen(lines[i]) > strlen(lines[longest])) longest = i;
    int32_t cut[16];
    size_t full = 0;
    size_t n = etok_encode(t, lines[longest], strlen(lines[longest]), true, cut, 16, &full);
    size_t m = etok_encode(t, lines[longest], strlen(lines[longest]), true, ids, cap, NULL);
    assert_true(full > 16);
    assert_int_equal(full, m);
    assert_int_equal(n, 16);
    if (etok_adds_bos(t)) assert_int_equal(cut[0], ids[0]);
    if (etok_adds_eos(t)) assert_int_equal(cut[15], ids[m - 1]);
    assert_memory_equal(cut + (etok_adds_bos(t) ? 1 : 0), ids + (etok_adds_bos(t) ? 1 : 0),
                        (16 - etok_adds_bos(t) - etok_adds_eos(t)) * sizeof *ids);

    free(ids);
    etok_free(t);
    free(lines);
    free(want);
    free(lbuf);
    free(ibuf);
}

static void test_parity_t5(void **state) {
    (void)state;
    if (!have_parity) skip();
    parity_one("t5", ETOK_UGM);
}

static void test_parity_llama(void **state) {
    (void)state;
    if (!have_parity) skip();
    parity_one("llama", ETOK_BPE);
}

static void test_parity_bert(void **state) {
    (void)state;
    if (!have_parity) skip();
    parity_one("bert", ETOK_WPM);
}

static void test_gguf_unsupported(void **state) {
    (void)state;
    if (!have_parity) skip();
    char path[256];
    snprintf(path, sizeof path, "%s/bad_model.gguf", tmpdir);
    gguf_file *f = NULL;
    assert_int_equal(gguf_open(path, &f), TROVE_OK);
    etok *t = NULL;
    assert_int_equal(etok_from_gguf(f, &t), TROVE_EUNSUPPORTED);
    assert_null(t);
    assert_non_null(strstr(trove_errmsg(), "gpt2"));
    gguf_close(f);
}

int main(void) {
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_wpm_basic),
        cmocka_unit_test(test_wpm_long_word),
        cmocka_unit_test(test_wpm_cased),
        cmocka_unit_test(test_wpm_truncate_pair),
        cmocka_unit_test(test_decode_piece),
        cmocka_unit_test(test_normalize_ws),
        cmocka_unit_test(test_charsmap),
        cmocka_unit_test(test_ugm_viterbi),
        cmocka_unit_test(test_ugm_byte_fallback),
        cmocka_unit_test(test_ugm_pair_framing),
        cmocka_unit_test(test_bpe_merges),
        cmocka_unit_test(test_bpe_unused),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_random_bytes),
    };
    const struct CMUnitTest parity[] = {
        cmocka_unit_test(test_parity_t5),
        cmocka_unit_test(test_parity_llama),
        cmocka_unit_test(test_parity_bert),
        cmocka_unit_test(test_gguf_unsupported),
    };
    int rc = cmocka_run_group_tests_name("etok", unit, NULL, NULL);
    rc += cmocka_run_group_tests_name("etok_parity", parity, parity_setup, parity_teardown);
    return rc;
}
