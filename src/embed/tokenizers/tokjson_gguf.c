/* tokjson_gguf — a tokjson built from a GGUF file's GPT-2-style byte-level
 * BPE tokenizer (tokenizer.ggml.model "gpt2"), as llama.cpp's converter
 * writes Qwen2/Qwen3 tokenizers:
 *
 *   tokenizer.ggml.tokens      every id's text, byte-level spelled ("Ġthe")
 *   tokenizer.ggml.token_type  1 normal, 3 control (special added tokens),
 *                              4 user-defined (other added tokens), 5 unused
 *                              (the [PADn] rows up to the embedding size)
 *   tokenizer.ggml.merges      "a b" in rank order
 *   tokenizer.ggml.pre         the pre-tokenizer: "qwen2"
 *   *_token_id, add_bos_token, add_eos_token
 *
 * The HF tokenizer.json these files were converted from is rebuilt in
 * memory: normal pieces form the BPE vocabulary (merges over it), control
 * and user-defined pieces become added tokens matched on the raw text
 * (normalized=false, as Qwen's tokenizer.json has them), the qwen2
 * pre-tokenizer is NFC + Split(Qwen2 regex, Isolated) + ByteLevel(no
 * prefix space, no regex), and add_bos/add_eos become a TemplateProcessing
 * post-processor ("$A <|endoftext|>" for Qwen3-Embedding). Unused pieces
 * are neither: they can never be produced. Only the small configuration
 * goes through JSON; vocabulary and merges are filled straight from the
 * GGUF arrays. */
#include "embed/tokenizers/tokjson_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define TK "tokenizer.ggml."

enum { T_NORMAL = 1, T_UNKNOWN = 2, T_CONTROL = 3, T_USER = 4, T_UNUSED = 5, T_BYTE = 6 };

static int token_type(const gguf_file *f, int ti, uint64_t i) {
    int64_t v;
    if (ti < 0 || !gguf_arr_i64(f, ti, i, &v)) return T_NORMAL;
    return v >= T_NORMAL && v <= T_BYTE ? (int)v : T_NORMAL; /* 0: undefined */
}

static json_t *pre_tokenizer(void) {
    json_t *split = json_pack("{s:s, s:{s:s}, s:s, s:b}", "type", "Split", "pattern", "Regex",
                              tj_re_qwen2, "behavior", "Isolated", "invert", 0);
    json_t *bl = json_pack("{s:s, s:b, s:b, s:b}", "type", "ByteLevel", "add_prefix_space", 0,
                           "trim_offsets", 0, "use_regex", 0);
    return json_pack("{s:s, s:[o, o]}", "type", "Sequence", "pretokenizers", split, bl);
}

/* TemplateProcessing for the file's add_bos / add_eos; NULL when neither. */
static json_t *post_processor(const gguf_file *f) {
    int32_t bos = (int32_t)gguf_i64_or(f, TK "bos_token_id", -1);
    int32_t eos = (int32_t)gguf_i64_or(f, TK "eos_token_id", -1);
    bool add_bos = gguf_bool_or(f, TK "add_bos_token", false) && bos >= 0;
    bool add_eos = gguf_bool_or(f, TK "add_eos_token", false) && eos >= 0;
    if (!add_bos && !add_eos) return NULL;
    json_t *single = json_array(), *sp = json_object();
    if (add_bos) {
        json_array_append_new(single, json_pack("{s:{s:s, s:i}}", "SpecialToken", "id", "bos", "type_id", 0));
        json_object_set_new(sp, "bos", json_pack("{s:s, s:[i], s:[s]}", "id", "bos", "ids", bos, "tokens", "bos"));
    }
    json_array_append_new(single, json_pack("{s:{s:s, s:i}}", "Sequence", "id", "A", "type_id", 0));
    if (add_eos) {
        json_array_append_new(single, json_pack("{s:{s:s, s:i}}", "SpecialToken", "id", "eos", "type_id", 0));
        json_object_set_new(sp, "eos", json_pack("{s:s, s:[i], s:[s]}", "id", "eos", "ids", eos, "tokens", "eos"));
    }
    return json_pack("{s:s, s:o, s:o}", "type", "TemplateProcessing", "single", single,
                     "special_tokens", sp);
}

/* Control and user-defined pieces as tokenizer.json added_tokens. */
static trove_err added_tokens(const gguf_file *f, int idx, int ti, uint64_t n, json_t **out) {
    json_t *arr = json_array();
    for (uint64_t i = 0; i < n; i++) {
        int ty = token_type(f, ti, i);
        if (ty != T_CONTROL && ty != T_USER) continue;
        size_t len;
        const char *s = gguf_arr_str(f, idx, i, &len);
        json_t *c = json_stringn(s, len); /* NULL for invalid UTF-8 */
        if (!c) {
            json_decref(arr);
            return trove_fail(TROVE_ECORRUPT, "%s: special token %llu is not valid UTF-8", gguf_path(f),
                              (unsigned long long)i);
        }
        json_array_append_new(arr, json_pack("{s:I, s:o, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)i,
                                             "content", c, "special", ty == T_CONTROL, "single_word", 0,
                                             "lstrip", 0, "rstrip", 0, "normalized", 0));
    }
    *out = arr;
    return TROVE_OK;
}

/* Normal pieces into the BPE vocabulary, then the merges. */
static trove_err fill_model(const gguf_file *f, int idx, int ti, uint64_t n, tj_model *m) {
    const char **text = xmalloc(n * sizeof *text);
    size_t *len = xmalloc(n * sizeof *len);
    uint32_t *ids = xmalloc(n * sizeof *ids);
    size_t cnt = 0;
    for (uint64_t i = 0; i < n; i++) {
        int ty = token_type(f, ti, i);
        if (ty == T_CONTROL || ty == T_USER || ty == T_UNUSED) continue;
        text[cnt] = gguf_arr_str(f, idx, i, &len[cnt]);
        ids[cnt++] = (uint32_t)i;
    }
    trove_err e = tj_strtab_build(&m->vocab, text, len, ids, cnt);
    free(text), free(len), free(ids);
    if (e) return trove_fail(e, "%s: tokenizer.ggml.tokens: a token id is given twice", gguf_path(f));

    int mi = gguf_find_key(f, TK "merges");
    uint64_t nm = mi >= 0 ? gguf_arr_len(f, mi) : 0;
    if (mi >= 0 && gguf_arr_type(f, mi) != GGUF_TYPE_STRING)
        return trove_fail(TROVE_ECORRUPT, "%s: tokenizer.ggml.merges is not a string array", gguf_path(f));
    if (nm >= (1u << 24))
        return trove_fail(TROVE_ECORRUPT, "%s: %llu merges", gguf_path(f), (unsigned long long)nm);
    if (nm) tj_model_alloc_merges(m, (size_t)nm);
    tbuf cat = {0};
    for (uint64_t i = 0; i < nm && !e; i++) {
        size_t sl;
        const char *s = gguf_arr_str(f, mi, i, &sl);
        const char *sp = memchr(s, ' ', sl);
        if (!sp) {
            e = trove_fail(TROVE_ECORRUPT, "%s: merge %llu \"%.40s\" is not \"a b\"", gguf_path(f),
                           (unsigned long long)i, s);
            break;
        }
        size_t al = (size_t)(sp - s);
        if ((e = tj_model_add_merge(m, (size_t)i, s, al, sp + 1, sl - al - 1, &cat))) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", trove_errmsg());
            e = trove_fail(e, "%s: tokenizer.ggml.merges: %s", gguf_path(f), msg);
        }
    }
    tbuf_free(&cat);
    return e;
}

trove_err tokjson_from_gguf(const gguf_file *f, tokjson **out) {
    *out = NULL;
    const char *model = gguf_str_or(f, TK "model", "");
    if (strcmp(model, "gpt2") != 0)
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tokenizer model \"%s\" is not gpt2", gguf_path(f), model);
    const char *pre = gguf_str_or(f, TK "pre", "(none)");
    if (strcmp(pre, "qwen2") != 0)
        return trove_fail(TROVE_EUNSUPPORTED,
                          "%s: gpt2 tokenizer with pre-tokenizer \"%s\" is not supported (qwen2 is)",
                          gguf_path(f), pre);
    int idx = gguf_find_key(f, TK "tokens");
    if (idx < 0 || gguf_arr_type(f, idx) != GGUF_TYPE_STRING || gguf_arr_len(f, idx) == 0)
        return trove_fail(TROVE_ECORRUPT, "%s: tokenizer.ggml.tokens is missing or not a string array",
                          gguf_path(f));
    uint64_t n = gguf_arr_len(f, idx);
    if (n >= (1u << 24))
        return trove_fail(TROVE_ECORRUPT, "%s: %llu tokens", gguf_path(f), (unsigned long long)n);
    int ti = gguf_find_key(f, TK "token_type");
    if (ti >= 0) {
        int ty = gguf_arr_type(f, ti);
        if (ty < 0 || ty == GGUF_TYPE_STRING || ty == GGUF_TYPE_ARRAY || gguf_arr_len(f, ti) != n)
            return trove_fail(TROVE_ECORRUPT, "%s: tokenizer.ggml.token_type is not %llu numbers",
                              gguf_path(f), (unsigned long long)n);
    }

    json_t *added = NULL;
    trove_err e = added_tokens(f, idx, ti, n, &added);
    if (e) return e;
    json_t *root = json_pack("{s:{s:s}, s:o, s:o, s:{s:s, s:b, s:b, s:b}}", "normalizer", "type", "NFC",
                             "pre_tokenizer", pre_tokenizer(), "added_tokens", added, "model", "type",
                             "BPE", "ignore_merges", 0, "byte_fallback", 0, "fuse_unk", 0);
    json_t *post = post_processor(f);
    if (post) json_object_set_new(root, "post_processor", post);

    tokjson *t = xcalloc(1, sizeof *t);
    t->config = root;
    e = tj_model_parse(json_object_get(root, "model"), &t->model, false);
    if (!e) e = fill_model(f, idx, ti, n, &t->model);
    if (!e) {
        tj_model_finish(&t->model);
        e = tj_finish_config(t);
    }
    if (e) {
        tokjson_free(t);
        return e;
    }
    *out = t;
    return TROVE_OK;
}

const int32_t *tokjson_framing(const tokjson *t, bool tail, size_t *n) {
    *n = tail ? t->n_post_post : t->n_post_pre;
    return tail ? t->post_post : t->post_pre;
}
