/* embed — see embed.h. */
#include "embed/embed.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/kernels/blas.h"
#include "embed/tokenizers/etok.h"
#include "embed/tokenizers/tokcache.h"
#include "embed/tokenizers/tokjson.h"
#include "embed/formats/gguf.h"
#include "embed/kernels/kernels.h"
#include "embed/arch/m2v.h"
#include "embed/arch/model.h"
#include "embed/fingerprint.h"
#include "embed/generate.h"
#include "util/buf.h"
#include "util/mem.h"

/* Texts per forward call: enough to fill the model's token chunks, few
 * enough that the id and output buffers stay small. */
#define EMBED_GROUP 64

/* Document tokens embed_rerank keeps by default: 20 candidates at 256
 * tokens take ~0.9 s of CPU with a MiniLM-L6-shaped cross-encoder (Q8_0),
 * but ~21 s with a Qwen3-0.6B-shaped decoder, ~11 s at 128
 * (docs/performance.md, "Reranking cost"): decoders read 128. */
#define EMBED_RERANK_TOKENS 256
#define EMBED_RERANK_TOKENS_DECODER 128
/* Query bytes a decoder reranker's prompt takes (about 1000 tokens). */
#define EMBED_RERANK_QUERY_BYTES 4096

struct embed_model {
    m2v *sm;          /* static (model2vec) backend; NULL for GGUF */
    gguf_file *f;
    emodel *m;
    etok *tok;
    tokjson *tj;      /* GPT-2-style BPE (qwen3 files); then tok is NULL */
    tokjson_enc enc;  /* tj's reusable encoding */
    int32_t eos_tail; /* tj: id appended after each framed text when the
                         file's framing lacks it (Qwen3-Embedding's
                         <|endoftext|>); -1: none */
    kpool *pool;
    int threads;
    int64_t max_tokens;
    int64_t dim;
    bool normalize;
    emodel_pool pool_type; /* pooling used by embed_texts */
    int64_t rerank_tokens;
    /* decoder rerankers (Qwen3-Reranker) */
    bool decoder_rank;
    int yes_idx;            /* rank head output that is "yes" */
    char *instruction;
    bool no_prefix_cache;
    int32_t *suffix;        /* ids of the prompt after the document */
    size_t n_suffix;
    char *qprompt, *dprompt;
    char *fingerprint;
    /* reused buffers */
    int32_t *ids;
    size_t ids_cap;
    uint8_t *types;
    size_t types_cap;
    int64_t start[EMBED_GROUP], len[EMBED_GROUP];
    float *vec;
    size_t vec_cap;
    tbuf text;
};

/* Qwen3-Embedding's query instruction: get_detailed_instruct() of the
 * model card and config_sentence_transformers.json's "query" prompt (no
 * space after "Query:"); documents get none. */
static const char QWEN3_EMB_QUERY[] =
    "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:";

/* Qwen3-Reranker's prompt (model card: prefix, format_instruction(),
 * suffix): the document follows "<Document>: ". */
static const char QWEN3_RR_SYSTEM[] =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    "and the Instruct provided. Note that the answer can only be \"yes\" or \"no\"."
    "<|im_end|>\n<|im_start|>user\n";
static const char QWEN3_RR_INSTRUCT[] =
    "Given a web search query, retrieve relevant passages that answer the query";
static const char QWEN3_RR_SUFFIX[] = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

static const char BGE_EN[] = "Represent this sentence for searching relevant passages: ";
static const char BGE_ZH[] = "\xe4\xb8\xba\xe8\xbf\x99\xe4\xb8\xaa\xe5\x8f\xa5\xe5\xad\x90\xe7"
                             "\x94\x9f\xe6\x88\x90\xe8\xa1\xa8\xe7\xa4\xba\xe4\xbb\xa5\xe7\x94"
                             "\xa8\xe4\xba\x8e\xe6\xa3\x80\xe7\xb4\xa2\xe7\x9b\xb8\xe5\x85\xb3"
                             "\xe6\x96\x87\xe7\xab\xa0\xef\xbc\x9a"; /* 为这个句子生成表示以用于检索相关文章： */

/* Whether word w occurs in s delimited by non-alphanumerics. */
static bool has_word(const char *s, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w)) {
        bool left = p == s || !isalnum((unsigned char)p[-1]);
        bool right = !isalnum((unsigned char)p[n]);
        if (left && right)
            return true;
    }
    return false;
}

/* Lower-cased general.name + " " + general.basename into id. */
static void model_id(const gguf_file *f, tbuf *id)
{
    tbuf_puts(id, gguf_str_or(f, "general.name", ""));
    tbuf_putc(id, ' ');
    tbuf_puts(id, gguf_str_or(f, "general.basename", ""));
    for (size_t i = 0; i < id->len; i++)
        id->data[i] = (char)tolower((unsigned char)id->data[i]);
}

/* Prompt presets by model family, recognised from general.name and
 * general.basename (lower-cased). */
static void preset_prompts(const gguf_file *f, const char *arch, const char **q, const char **d)
{
    tbuf id = {0};
    model_id(f, &id);
    const char *s = tbuf_cstr(&id);
    *q = "";
    *d = "";
    if (strcmp(arch, "qwen3") == 0) {
        *q = QWEN3_EMB_QUERY;
    } else if (strcmp(arch, "gemma-embedding") == 0 || strstr(s, "embeddinggemma")) {
        *q = "task: search result | query: ";
        *d = "title: none | text: ";
    } else if (has_word(s, "e5")) {
        *q = "query: ";
        *d = "passage: ";
    } else if (strstr(s, "bge") && !strstr(s, "m3") && !strstr(s, "reranker")) {
        *q = has_word(s, "zh") ? BGE_ZH : BGE_EN;
    }
    tbuf_free(&id);
}

/* Size-independent settings of both backends, then the fingerprint. */
static trove_err finish_open(embed_model *em, const embed_opts *o, const char *const *files,
                             const char *kind, const char *q, const char *d)
{
    em->normalize = !o->no_normalize;
    em->qprompt = xstrdup(o->query_prompt ? o->query_prompt : q);
    em->dprompt = xstrdup(o->doc_prompt ? o->doc_prompt : d);
    efp *fp = efp_new();
    for (size_t i = 0; files[i]; i++) {
        trove_err e = efp_add_file(fp, files[i]);
        if (e) {
            efp_free(fp);
            return e;
        }
    }
    efp_add_str(fp, em->qprompt);
    efp_add_str(fp, em->dprompt);
    efp_add_i64(fp, em->max_tokens);
    efp_add_i64(fp, em->normalize);
    efp_add_i64(fp, (int64_t)em->pool_type);
    return efp_finish(fp, kind, em->dim, &em->fingerprint);
}

/* Ids of text (no framing) from the GPT-2-style tokenizer into e. */
static size_t tj_body(const embed_model *em, tokjson_enc *e, const char *text, size_t len)
{
    if (tokjson_encode(em->tj, text, len, 0, e))
        return 0; /* over 1 GiB */
    return e->n;
}

/* Which rank head output reads "yes": classifier.output_labels (llama.cpp
 * writes ["yes", "no"]), else the first. */
static trove_err yes_label(embed_model *em, const char *arch, int *out)
{
    char key[96];
    snprintf(key, sizeof key, "%s.classifier.output_labels", arch);
    int idx = gguf_find_key(em->f, key);
    *out = 0;
    if (idx < 0)
        return TROVE_OK;
    uint64_t n = gguf_arr_len(em->f, idx);
    for (uint64_t i = 0; i < n; i++) {
        const char *l = gguf_arr_str(em->f, idx, i, NULL);
        if (l && strcmp(l, "yes") == 0 && (int64_t)i < emodel_hp(em->m)->n_cls_out) {
            *out = (int)i;
            return TROVE_OK;
        }
    }
    return trove_fail(TROVE_ECORRUPT, "%s: %s has no \"yes\" label for the rank head",
                      gguf_path(em->f), key);
}

/* Decoder (qwen3) set-up: a reranker gets its yes/no head and prompt
 * suffix; an embedding model its end-of-text token. A file is a reranker
 * when it says so: pooling rank, a cls.output head, or "reranker" in its
 * name (files converted before llama.cpp knew Qwen3-Reranker). */
static trove_err setup_decoder(embed_model *em, const embed_opts *o)
{
    const emodel_hparams *hp = emodel_hp(em->m);
    tbuf id = {0};
    model_id(em->f, &id);
    bool named = strstr(tbuf_cstr(&id), "rerank") != NULL;
    tbuf_free(&id);
    trove_err e = TROVE_OK;
    if (hp->pool == EMODEL_POOL_RANK || hp->n_cls_out > 0 || named) {
        if (!em->tj)
            return trove_fail(TROVE_EUNSUPPORTED, "%s: a %s reranker needs a gpt2 (byte-level BPE) "
                              "tokenizer", gguf_path(em->f), hp->arch_name);
        em->decoder_rank = true;
        em->pool_type = EMODEL_POOL_RANK;
        if (hp->n_cls_out == 0) {
            /* score from the language-model head's "yes" and "no" rows */
            int32_t yn[2] = {tokjson_token_to_id(em->tj, "yes", 3),
                             tokjson_token_to_id(em->tj, "no", 2)};
            if (yn[0] < 0 || yn[1] < 0)
                return trove_fail(TROVE_EINVAL, "%s: reranker has no cls.output head and its "
                                  "vocabulary no \"yes\"/\"no\" tokens to score with",
                                  gguf_path(em->f));
            if ((e = emodel_token_head(em->m, yn, 2)))
                return e;
            em->yes_idx = 0;
        } else if ((e = yes_label(em, hp->arch_name, &em->yes_idx))) {
            return e;
        }
        em->instruction = xstrdup(o->rerank_instruction ? o->rerank_instruction
                                                        : QWEN3_RR_INSTRUCT);
        em->no_prefix_cache = o->rerank_no_prefix_cache != 0;
        tokjson_enc enc = {0};
        size_t n = tj_body(em, &enc, QWEN3_RR_SUFFIX, strlen(QWEN3_RR_SUFFIX));
        em->suffix = xmalloc((n ? n : 1) * sizeof *em->suffix);
        if (n)
            memcpy(em->suffix, enc.ids, n * sizeof *em->suffix);
        em->n_suffix = n;
        tokjson_enc_free(&enc);
        return TROVE_OK;
    }
    size_t npost = 0;
    if (em->tj && em->pool_type == EMODEL_POOL_LAST)
        tokjson_framing(em->tj, true, &npost);
    if (em->tj && em->pool_type == EMODEL_POOL_LAST && npost == 0)
        /* the model card's tokenize() appends <|endoftext|>; early GGUFs
         * of Qwen3-Embedding lack add_eos_token */
        em->eos_tail = tokjson_token_to_id(em->tj, "<|endoftext|>", 13);
    return TROVE_OK;
}

/* A GGUF's byte-level BPE tokenizer through the compiled cache
 * (tokcache.h, keyed by the GGUF file's identity): rebuilding Qwen3's
 * 151k pieces and merges from the GGUF arrays costs ~0.2 s a cold open;
 * a valid entry is loaded instead, a missing or damaged one rebuilt. */
#define GPT2_CACHE_KIND "gguf-gpt2"
#define GPT2_CACHE_VERSION (0x20000u | TOKJSON_BIN_VERSION)

/* The compiled cache's entry for path when valid: its tables used in
 * place from the mapped file. */
static bool gpt2_from_cache(const char *path, tokjson **out)
{
    const void *payload;
    size_t len;
    tokcache *c = tokcache_load(path, GPT2_CACHE_KIND, GPT2_CACHE_VERSION, &payload, &len);
    if (!c)
        return false;
    /* the tables stay in the mapped entry, which *out releases */
    if (tokjson_borrow(payload, len, tokcache_release_cb, c, out) == TROVE_OK)
        return true;
    tokcache_release(c);
    *out = NULL;
    return false;
}

/* Rebuilt from the GGUF when there is no valid entry, then stored and the
 * stored entry used in its place (shared page cache rather than tens of
 * MB of heap a daemon would hold: m2v.c's load_tokenizer says more). */
static trove_err gpt2_tokenizer(const gguf_file *f, const char *path, tokjson **out)
{
    if (gpt2_from_cache(path, out))
        return TROVE_OK;
    tokjson *built;
    trove_err e = tokjson_from_gguf(f, &built);
    if (e)
        return e;
    size_t blen;
    void *bin = tokjson_serialize(built, &blen);
    tokcache_store(path, GPT2_CACHE_KIND, GPT2_CACHE_VERSION, bin, blen);
    free(bin);
    if (gpt2_from_cache(path, out)) {
        tokjson_free(built);
        mem_give_back();
    } else {
        *out = built; /* no entry (read-only home, full disk) */
    }
    return TROVE_OK;
}

static trove_err open_gguf(embed_model *em, const char *path, const embed_opts *o)
{
    trove_err e;
    if ((e = blas_load()) || (e = gguf_open(path, &em->f)) || (e = emodel_load(em->f, &em->m)))
        return e;
    if (strcmp(gguf_str_or(em->f, "tokenizer.ggml.model", ""), "gpt2") == 0)
        e = gpt2_tokenizer(em->f, path, &em->tj);
    else
        e = etok_from_gguf(em->f, &em->tok);
    if (e)
        return e;
    const emodel_hparams *hp = emodel_hp(em->m);
    size_t nv = em->tj ? tokjson_vocab_size(em->tj) : etok_n_vocab(em->tok);
    if ((int64_t)nv > hp->n_vocab)
        return trove_fail(TROVE_ECORRUPT, "%s: tokenizer has %zu pieces but token_embd only %lld rows",
                          path, nv, (long long)hp->n_vocab);
    em->threads = o->threads;
    if (em->threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        em->threads = n > 0 ? (int)(n > 64 ? 64 : n) : 1;
    }
    em->pool = kpool_new(em->threads);
    em->threads = kpool_threads(em->pool);
    em->max_tokens = o->max_tokens > 0 && o->max_tokens < hp->n_ctx ? o->max_tokens : hp->n_ctx;
    em->dim = o->dim > 0 && o->dim < hp->n_out ? o->dim : hp->n_out;
    em->pool_type = hp->pool == EMODEL_POOL_NONE ? EMODEL_POOL_MEAN : hp->pool;
    em->rerank_tokens = o->rerank_tokens > 0 ? o->rerank_tokens
                        : hp->causal         ? EMBED_RERANK_TOKENS_DECODER
                                             : EMBED_RERANK_TOKENS;
    if (hp->causal && (e = setup_decoder(em, o)))
        return e;
    const char *q, *d;
    preset_prompts(em->f, hp->arch_name, &q, &d);
    const char *files[] = {path, NULL};
    return finish_open(em, o, files, "gguf", q, d);
}

/* model2vec truncates to 512 tokens by default; so does trove. */
#define STATIC_MAX_TOKENS 512

static trove_err open_static(embed_model *em, const char *path, const embed_opts *o)
{
    trove_err e = m2v_open(path, &em->sm);
    if (e)
        return e;
    em->threads = 1; /* a lookup and a sum per token: threads would cost more */
    em->max_tokens = o->max_tokens > 0 ? o->max_tokens : STATIC_MAX_TOKENS;
    int64_t dim = m2v_dim(em->sm);
    em->dim = o->dim > 0 && o->dim < dim ? o->dim : dim;
    em->pool_type = EMODEL_POOL_MEAN;
    return finish_open(em, o, m2v_files(em->sm), "model2vec", "", "");
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

embed_model *embed_open(const char *path, const embed_opts *opts, trove_err *err)
{
    embed_opts o = {0};
    if (opts)
        o = *opts;
    embed_model *em = xcalloc(1, sizeof *em);
    em->eos_tail = -1;
    trove_err e = is_dir(path) || m2v_is_model(path) ? open_static(em, path, &o)
                                                      : open_gguf(em, path, &o);
    if (e) {
        embed_close(em);
        em = NULL;
    }
    if (err)
        *err = e;
    return em;
}

void embed_close(embed_model *em)
{
    if (!em)
        return;
    kpool_free(em->pool);
    m2v_close(em->sm);
    etok_free(em->tok);
    tokjson_free(em->tj);
    tokjson_enc_free(&em->enc);
    free(em->instruction);
    free(em->suffix);
    emodel_free(em->m);
    gguf_close(em->f);
    free(em->qprompt);
    free(em->dprompt);
    free(em->fingerprint);
    free(em->ids);
    free(em->types);
    free(em->vec);
    tbuf_free(&em->text);
    free(em);
}

int embed_dim(const embed_model *em)
{
    return (int)em->dim;
}

/* Framed ids of text, at most max: etok_encode's contract (the text is cut,
 * the framing kept) for either tokenizer. e: tj's encoding scratch. */
static size_t encode_text(const embed_model *em, tokjson_enc *e, const char *text, size_t len,
                          bool special, int32_t *ids, size_t max)
{
    if (em->tok)
        return etok_encode(em->tok, text, len, special, ids, max, NULL);
    size_t nb = tj_body(em, e, text, len), npre = 0, npost = 0, nf;
    const int32_t *pre = special ? tokjson_framing(em->tj, false, &npre) : NULL;
    const int32_t *post = special ? tokjson_framing(em->tj, true, &npost) : NULL;
    int32_t frame[16];
    nf = 0;
    for (size_t i = 0; i < npre && nf < 8; i++)
        frame[nf++] = pre[i];
    size_t lead = nf;
    for (size_t i = 0; i < npost && nf < 15; i++)
        frame[nf++] = post[i];
    if (special && em->eos_tail >= 0)
        frame[nf++] = em->eos_tail;
    if (max <= nf) {
        memcpy(ids, frame, max * sizeof *ids);
        return max;
    }
    size_t keep = nb < max - nf ? nb : max - nf, w = 0;
    memcpy(ids, frame, lead * sizeof *ids);
    w += lead;
    if (keep) /* e->ids is NULL for an empty text */
        memcpy(ids + w, e->ids, keep * sizeof *ids);
    w += keep;
    memcpy(ids + w, frame + lead, (nf - lead) * sizeof *ids);
    return w + nf - lead;
}

static int32_t *ids_room(embed_model *em, size_t need)
{
    if (em->ids_cap < need) {
        em->ids = xrealloc(em->ids, need * sizeof *em->ids);
        em->ids_cap = need;
    }
    return em->ids;
}

static float *vec_room(embed_model *em, size_t need)
{
    if (em->vec_cap < need) {
        free(em->vec);
        em->vec = xmalloc(need * sizeof *em->vec);
        em->vec_cap = need;
    }
    return em->vec;
}

/* Pool, then cut to dim and normalise into out. */
static trove_err run_group(embed_model *em, const int32_t *ids, const int64_t *start,
                           const int64_t *len, size_t n, float *out)
{
    if (em->sm) {
        float *v = vec_room(em, (size_t)m2v_dim(em->sm));
        for (size_t i = 0; i < n; i++) {
            trove_err e = m2v_pool(em->sm, ids + start[i], (size_t)len[i], v);
            if (e)
                return e;
            float *dst = out + i * (size_t)em->dim;
            memcpy(dst, v, (size_t)em->dim * sizeof(float));
            if (em->normalize)
                kern_l2norm(dst, em->dim);
        }
        return TROVE_OK;
    }
    if (em->pool_type == EMODEL_POOL_RANK)
        return trove_fail(TROVE_EINVAL, "%s: this model is a reranker (pooling rank); use "
                          "rerank, not embed", gguf_path(em->f));
    const emodel_hparams *hp = emodel_hp(em->m);
    float *v = vec_room(em, n * (size_t)hp->n_out);
    emodel_batch b = {.ids = ids, .start = start, .len = len, .n_seq = (int64_t)n};
    trove_err e = emodel_forward(em->m, em->pool, &b, em->pool_type, v);
    if (e)
        return e;
    for (size_t i = 0; i < n; i++) {
        float *dst = out + i * (size_t)em->dim;
        memcpy(dst, v + i * (size_t)hp->n_out, (size_t)em->dim * sizeof(float));
        if (em->normalize)
            kern_l2norm(dst, em->dim);
    }
    return TROVE_OK;
}

trove_err embed_texts(embed_model *em, const char *const *texts, size_t n, embed_kind kind,
                      float *out)
{
    const char *prompt = kind == EMBED_QUERY ? em->qprompt : em->dprompt;
    size_t maxt = (size_t)em->max_tokens;
    for (size_t g = 0; g < n; g += EMBED_GROUP) {
        size_t ng = n - g < EMBED_GROUP ? n - g : EMBED_GROUP;
        int32_t *ids = ids_room(em, ng * maxt);
        int64_t off = 0;
        for (size_t i = 0; i < ng; i++) {
            tbuf_reset(&em->text);
            tbuf_puts(&em->text, prompt);
            tbuf_puts(&em->text, texts[g + i]);
            size_t k;
            if (em->sm) /* no tokens (only unknown words) is a zero vector, as in model2vec */
                k = m2v_tokenize(em->sm, tbuf_cstr(&em->text), em->text.len, ids + off, maxt);
            else if (!(k = encode_text(em, &em->enc, tbuf_cstr(&em->text), em->text.len, true,
                                       ids + off, maxt)))
                return trove_fail(TROVE_EINVAL, "text %zu gives no tokens", g + i);
            em->start[i] = off;
            em->len[i] = (int64_t)k;
            off += (int64_t)k;
        }
        trove_err e = run_group(em, ids, em->start, em->len, ng, out + g * (size_t)em->dim);
        if (e)
            return e;
    }
    return TROVE_OK;
}

trove_err embed_tokens(embed_model *em, const int32_t *ids, const int64_t *start,
                       const int64_t *len, size_t n, float *out)
{
    for (size_t g = 0; g < n; g += EMBED_GROUP) {
        size_t ng = n - g < EMBED_GROUP ? n - g : EMBED_GROUP;
        trove_err e = run_group(em, ids, start + g, len + g, ng, out + g * (size_t)em->dim);
        if (e)
            return e;
    }
    return TROVE_OK;
}

/* ---- decoder rerankers (Qwen3-Reranker) ---- */

/* The prompt up to the document (system, instruction, query and
 * "<Document>:"); ids in e. The document continues with " " + text: the
 * Qwen2 pre-tokenizer always splits between ":" and a space, so the two
 * parts tokenise exactly as the whole prompt does (tested). */
static size_t dec_prefix(const embed_model *em, tokjson_enc *e, tbuf *t, const char *query)
{
    tbuf_reset(t);
    tbuf_puts(t, QWEN3_RR_SYSTEM);
    tbuf_puts(t, "<Instruct>: ");
    tbuf_puts(t, em->instruction);
    tbuf_puts(t, "\n<Query>: ");
    /* the prefix runs as one sequence: a pasted page as query must not
     * make it (and its workspace) arbitrarily long */
    size_t ql = strlen(query);
    if (ql > EMBED_RERANK_QUERY_BYTES) {
        ql = EMBED_RERANK_QUERY_BYTES;
        while (ql > 0 && ((unsigned char)query[ql] & 0xC0) == 0x80)
            ql--; /* not inside a UTF-8 sequence */
    }
    tbuf_append(t, query, ql);
    tbuf_puts(t, "\n<Document>:");
    return tj_body(em, e, tbuf_cstr(t), t->len);
}

/* " " + doc cut to rerank_tokens, then the prompt's suffix, into ids (room
 * for rerank_tokens + n_suffix); returns the count. */
static size_t dec_candidate(const embed_model *em, tokjson_enc *e, tbuf *t, const char *doc,
                            int32_t *ids)
{
    tbuf_reset(t);
    tbuf_putc(t, ' ');
    tbuf_puts(t, doc);
    size_t n = tj_body(em, e, tbuf_cstr(t), t->len);
    if (n > (size_t)em->rerank_tokens)
        n = (size_t)em->rerank_tokens;
    if (n)
        memcpy(ids, e->ids, n * sizeof *ids);
    if (em->n_suffix)
        memcpy(ids + n, em->suffix, em->n_suffix * sizeof *ids);
    return n + em->n_suffix;
}

/* P(yes) from the rank head's outputs: softmax over them (llama.cpp's
 * ["yes", "no"] rows), or the sigmoid of a single yes-minus-no logit. */
static float rank_prob(const embed_model *em, const float *v, int64_t nout)
{
    if (nout == 1)
        return (float)(1.0 / (1.0 + exp(-(double)v[0])));
    double mx = v[0], sum = 0;
    for (int64_t i = 1; i < nout; i++)
        mx = v[i] > mx ? v[i] : mx;
    for (int64_t i = 0; i < nout; i++)
        sum += exp((double)v[i] - mx);
    return (float)(exp((double)v[em->yes_idx] - mx) / sum);
}

static trove_err rerank_decoder(embed_model *em, const char *query, const char *const *docs,
                                size_t n, float *scores)
{
    const emodel_hparams *hp = emodel_hp(em->m);
    size_t np = dec_prefix(em, &em->enc, &em->text, query);
    int32_t *pre = xmalloc((np ? np : 1) * sizeof *pre);
    if (np)
        memcpy(pre, em->enc.ids, np * sizeof *pre);
    emodel_kv *kv = NULL;
    trove_err e = TROVE_OK;
    if (!em->no_prefix_cache)
        e = emodel_kv_new(em->m, em->pool, pre, (int64_t)np, &kv);
    size_t cmax = (size_t)em->rerank_tokens + em->n_suffix, lead = kv ? 0 : np;
    int64_t nout = hp->n_cls_out;
    for (size_t g = 0; g < n && !e; g += EMBED_GROUP) {
        size_t ng = n - g < EMBED_GROUP ? n - g : EMBED_GROUP;
        int32_t *ids = ids_room(em, ng * (lead + cmax));
        int64_t off = 0;
        for (size_t i = 0; i < ng; i++) {
            if (lead)
                memcpy(ids + off, pre, lead * sizeof *ids);
            size_t k = lead + dec_candidate(em, &em->enc, &em->text, docs[g + i], ids + off + lead);
            em->start[i] = off;
            em->len[i] = (int64_t)k;
            off += (int64_t)k;
        }
        float *v = vec_room(em, ng * (size_t)nout);
        emodel_batch b = {.ids = ids, .start = em->start, .len = em->len, .n_seq = (int64_t)ng,
                          .prefix = kv};
        e = emodel_forward(em->m, em->pool, &b, EMODEL_POOL_RANK, v);
        for (size_t i = 0; i < ng && !e; i++)
            scores[g + i] = rank_prob(em, v + i * (size_t)nout, nout);
    }
    emodel_kv_free(kv);
    free(pre);
    return e;
}

/* ---- generation ---- */

const char *embed_gen_end_name(embed_gen_end e)
{
    switch (e) {
    case EMBED_GEN_EOS: return "eos";
    case EMBED_GEN_STOP: return "stop";
    case EMBED_GEN_BUDGET: return "budget";
    case EMBED_GEN_CONTEXT: return "context";
    }
    return "unknown";
}

void embed_gen_result_free(embed_gen_result *r)
{
    free(r->text);
    free(r->ids);
    memset(r, 0, sizeof *r);
}

/* The ids that end a turn: the file's eos token, and Qwen's chat markers. */
static size_t gen_eos(const embed_model *em, int32_t *eos, size_t cap)
{
    static const char *const names[] = {"<|im_end|>", "<|endoftext|>", "<|eot_id|>"};
    size_t n = 0;
    uint32_t id;
    if (gguf_get_u32(em->f, "tokenizer.ggml.eos_token_id", &id) == TROVE_OK && n < cap)
        eos[n++] = (int32_t)id;
    else
        trove_errclear();
    for (size_t i = 0; i < sizeof names / sizeof *names && n < cap; i++) {
        int32_t t = tokjson_token_to_id(em->tj, names[i], strlen(names[i]));
        if (t >= 0)
            eos[n++] = t;
    }
    return n;
}

trove_err embed_generate(embed_model *em, const char *prompt, const embed_gen_opts *o,
                         embed_gen_result *out)
{
    memset(out, 0, sizeof *out);
    embed_gen_opts dflt = {0};
    if (!o)
        o = &dflt;
    if (em->sm || !em->m || !emodel_hp(em->m)->causal || !em->tj || em->decoder_rank)
        return trove_fail(TROVE_EINVAL, "%s: this model cannot generate text (it takes a decoder "
                          "language model with a byte-level BPE tokenizer, such as Qwen3)",
                          em->f ? gguf_path(em->f) : "model");
    size_t n = tj_body(em, &em->enc, prompt, strlen(prompt));
    if (n == 0)
        return trove_fail(TROVE_EINVAL, "generation needs a prompt of at least one token");
    if ((int64_t)n >= emodel_hp(em->m)->n_ctx)
        return trove_fail(TROVE_EINVAL, "the prompt has %zu tokens; the model's context takes %lld",
                          n, (long long)emodel_hp(em->m)->n_ctx - 1);
    int32_t *ids = xmalloc(n * sizeof *ids);
    memcpy(ids, em->enc.ids, n * sizeof *ids);
    int32_t eos[4];
    egen_model g = {.m = em->m, .pool = em->pool, .tj = em->tj, .eos = eos,
                    .n_eos = gen_eos(em, eos, 4)};
    trove_err e = egen_run(&g, ids, n, o, out);
    free(ids);
    return e;
}

trove_err embed_rerank(embed_model *em, const char *query, const char *const *docs, size_t n,
                       float *scores)
{
    if (em->sm)
        return trove_fail(TROVE_EINVAL, "%s: a static embedding model cannot rerank",
                          m2v_files(em->sm)[0]);
    const emodel_hparams *hp = emodel_hp(em->m);
    if (em->decoder_rank)
        return rerank_decoder(em, query, docs, n, scores);
    if (hp->causal)
        return trove_fail(TROVE_EINVAL, "%s: this %s model is not a reranker (pooling %s, no "
                          "cls.output head, no \"reranker\" in its name): use a Qwen3-Reranker "
                          "file", gguf_path(em->f), hp->arch_name, emodel_pool_name(hp->pool));
    if (!em->tok)
        return trove_fail(TROVE_EINVAL, "%s: cannot rerank with this tokenizer", gguf_path(em->f));
    size_t maxt = (size_t)em->max_tokens;
    /* keep about rerank_tokens of the document: longest-first truncation to
     * the query's tokens + rerank_tokens + framing cuts the document there
     * (both sides when the query is longer than that) */
    size_t nq = 0, nf;
    int32_t frame[8];
    etok_encode(em->tok, query, strlen(query), false, NULL, 0, &nq);
    nf = etok_encode_pair(em->tok, "", 0, "", 0, frame, NULL, 8);
    if (nq + (size_t)em->rerank_tokens + nf < maxt)
        maxt = nq + (size_t)em->rerank_tokens + nf;
    bool use_types = hp->n_types >= 2;
    for (size_t g = 0; g < n; g += EMBED_GROUP) {
        size_t ng = n - g < EMBED_GROUP ? n - g : EMBED_GROUP;
        int32_t *ids = ids_room(em, ng * maxt);
        if (em->types_cap < ng * maxt) {
            em->types = xrealloc(em->types, ng * maxt);
            em->types_cap = ng * maxt;
        }
        int64_t off = 0;
        for (size_t i = 0; i < ng; i++) {
            size_t k = etok_encode_pair(em->tok, query, strlen(query), docs[g + i],
                                        strlen(docs[g + i]), ids + off, em->types + off, maxt);
            if (k == 0)
                return trove_fail(TROVE_EINVAL, "pair %zu gives no tokens", g + i);
            em->start[i] = off;
            em->len[i] = (int64_t)k;
            off += (int64_t)k;
        }
        float *v = vec_room(em, ng * (size_t)(hp->n_cls_out > 0 ? hp->n_cls_out : 1));
        emodel_batch b = {.ids = ids, .types = use_types ? em->types : NULL, .start = em->start,
                          .len = em->len, .n_seq = (int64_t)ng};
        trove_err e = emodel_forward(em->m, em->pool, &b, EMODEL_POOL_RANK, v);
        if (e)
            return e;
        for (size_t i = 0; i < ng; i++)
            scores[g + i] = v[i * (size_t)hp->n_cls_out];
    }
    return TROVE_OK;
}

size_t embed_tokenize(const embed_model *em, const char *text, int add_special, int32_t *ids,
                      size_t cap)
{
    if (em->sm)
        return m2v_tokenize(em->sm, text, strlen(text), ids, cap);
    tokjson_enc e = {0};
    size_t n = encode_text(em, &e, text, strlen(text), add_special != 0, ids, cap);
    tokjson_enc_free(&e);
    return n;
}

size_t embed_tokenize_pair(const embed_model *em, const char *a, const char *b, int32_t *ids,
                           uint8_t *types, size_t cap)
{
    if (em->sm) { /* no pair framing: a's ids (type 0), then b's (type 1) */
        size_t na = m2v_tokenize(em->sm, a, strlen(a), ids, cap);
        size_t nb = m2v_tokenize(em->sm, b, strlen(b), ids + na, cap - na);
        if (types) {
            memset(types, 0, na);
            memset(types + na, 1, nb);
        }
        return na + nb;
    }
    if (em->decoder_rank) { /* the whole prompt embed_rerank scores */
        tokjson_enc e = {0};
        tbuf t = {0};
        size_t np = dec_prefix(em, &e, &t, a), w = np < cap ? np : cap;
        if (w)
            memcpy(ids, e.ids, w * sizeof *ids);
        int32_t *c = xmalloc(((size_t)em->rerank_tokens + em->n_suffix) * sizeof *c);
        size_t nc = dec_candidate(em, &e, &t, b, c);
        size_t wc = nc < cap - w ? nc : cap - w;
        if (wc)
            memcpy(ids + w, c, wc * sizeof *ids);
        if (types)
            memset(types, 0, w + wc);
        free(c);
        tbuf_free(&t);
        tokjson_enc_free(&e);
        return w + wc;
    }
    if (!em->tok) { /* no pair framing: a's ids, then b's */
        size_t na = embed_tokenize(em, a, 0, ids, cap);
        size_t nb = embed_tokenize(em, b, 0, ids + na, cap - na);
        if (types) {
            memset(types, 0, na);
            memset(types + na, 1, nb);
        }
        return na + nb;
    }
    return etok_encode_pair(em->tok, a, strlen(a), b, strlen(b), ids, types, cap);
}

/* Tensor count and bytes per type, in type-id order. */
static void tensor_stats(const gguf_file *f, embed_info *out)
{
    size_t count[64] = {0};
    uint64_t bytes[64] = {0};
    for (size_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        int ty = (int)t->type < 64 ? (int)t->type : 63;
        count[ty]++;
        bytes[ty] += t->nbytes;
    }
    for (int ty = 0; ty < 64 && out->n_tensor_types < EMBED_MAX_TENSOR_TYPES; ty++)
        if (count[ty])
            out->tensor_types[out->n_tensor_types++] =
                (embed_tensor_stat){quant_type_name(ty), count[ty], bytes[ty]};
}

static void static_info(const embed_model *em, embed_info *out)
{
    const m2v *m = em->sm;
    out->format = "model2vec";
    out->file_size = m2v_file_size(m);
    out->arch = "static";
    out->name = "";
    out->tokenizer = m2v_tokenizer_name(m);
    out->pooling = m2v_weighted(m) ? "weighted-mean" : "mean";
    out->n_vocab = m2v_n_vocab(m);
    out->n_embd = m2v_dim(m);
    out->n_ctx = em->max_tokens;
    out->dim_native = m2v_dim(m);
    out->n_tensor_types = 1;
    out->tensor_types[0] = (embed_tensor_stat){m2v_dtype(m), 1, m2v_emb_bytes(m)};
}

void embed_get_info(const embed_model *em, embed_info *out)
{
    memset(out, 0, sizeof *out);
    out->fingerprint = em->fingerprint;
    out->query_prompt = em->qprompt;
    out->doc_prompt = em->dprompt;
    out->dim = em->dim;
    out->threads = em->threads;
    out->max_tokens = (int)em->max_tokens;
    if (em->sm) {
        static_info(em, out);
        return;
    }
    const emodel_hparams *hp = emodel_hp(em->m);
    out->format = "gguf";
    out->format_version = gguf_version(em->f);
    out->file_size = gguf_file_size(em->f);
    out->fingerprint = em->fingerprint;
    out->arch = hp->arch_name;
    out->name = gguf_str_or(em->f, "general.name", "");
    out->tokenizer = em->tj ? "gpt2" : etok_kind_name(etok_kind_of(em->tok));
    out->pooling = emodel_pool_name(em->decoder_rank ? EMODEL_POOL_RANK : hp->pool);
    out->query_prompt = em->qprompt;
    out->doc_prompt = em->dprompt;
    out->n_vocab = hp->n_vocab;
    out->n_embd = hp->n_embd;
    out->n_layer = hp->n_layer;
    out->n_head = hp->n_head;
    out->n_head_kv = hp->n_head_kv;
    out->head_dim = hp->head_dim;
    out->n_ff = hp->n_ff;
    out->n_ctx = hp->n_ctx;
    out->dim_native = hp->n_out;
    out->dim = em->dim;
    out->n_cls_out = hp->n_cls_out;
    out->rerank_tokens = (int)em->rerank_tokens;
    out->threads = em->threads;
    out->max_tokens = (int)em->max_tokens;
    tensor_stats(em->f, out);
}
