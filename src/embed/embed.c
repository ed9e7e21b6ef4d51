/* embed — see embed.h. */
#include "embed/embed.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/kernels/blas.h"
#include "embed/tokenizers/etok.h"
#include "embed/formats/gguf.h"
#include "embed/kernels/kernels.h"
#include "embed/arch/m2v.h"
#include "embed/arch/model.h"
#include "embed/fingerprint.h"
#include "util/buf.h"
#include "util/mem.h"

/* Texts per forward call: enough to fill the model's token chunks, few
 * enough that the id and output buffers stay small. */
#define EMBED_GROUP 64

struct embed_model {
    m2v *sm;          /* static (model2vec) backend; NULL for GGUF */
    gguf_file *f;
    emodel *m;
    etok *tok;
    kpool *pool;
    int threads;
    int64_t max_tokens;
    int64_t dim;
    bool normalize;
    emodel_pool pool_type; /* pooling used by embed_texts */
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

/* Prompt presets by model family, recognised from general.name and
 * general.basename (lower-cased). */
static void preset_prompts(const gguf_file *f, const char *arch, const char **q, const char **d)
{
    tbuf id = {0};
    tbuf_puts(&id, gguf_str_or(f, "general.name", ""));
    tbuf_putc(&id, ' ');
    tbuf_puts(&id, gguf_str_or(f, "general.basename", ""));
    for (size_t i = 0; i < id.len; i++)
        id.data[i] = (char)tolower((unsigned char)id.data[i]);
    const char *s = tbuf_cstr(&id);
    *q = "";
    *d = "";
    if (strcmp(arch, "gemma-embedding") == 0 || strstr(s, "embeddinggemma")) {
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
    em->fingerprint = efp_finish(fp, kind, em->dim);
    return TROVE_OK;
}

static trove_err open_gguf(embed_model *em, const char *path, const embed_opts *o)
{
    trove_err e;
    if ((e = blas_load()) || (e = gguf_open(path, &em->f)) || (e = emodel_load(em->f, &em->m)) ||
        (e = etok_from_gguf(em->f, &em->tok)))
        return e;
    const emodel_hparams *hp = emodel_hp(em->m);
    if ((int64_t)etok_n_vocab(em->tok) > hp->n_vocab)
        return trove_fail(TROVE_ECORRUPT, "%s: tokenizer has %zu pieces but token_embd only %lld rows",
                          path, etok_n_vocab(em->tok), (long long)hp->n_vocab);
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
            else if (!(k = etok_encode(em->tok, tbuf_cstr(&em->text), em->text.len, true,
                                       ids + off, maxt, NULL)))
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

trove_err embed_rerank(embed_model *em, const char *query, const char *const *docs, size_t n,
                       float *scores)
{
    if (em->sm)
        return trove_fail(TROVE_EINVAL, "%s: a static embedding model cannot rerank",
                          m2v_files(em->sm)[0]);
    const emodel_hparams *hp = emodel_hp(em->m);
    size_t maxt = (size_t)em->max_tokens;
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
    return etok_encode(em->tok, text, strlen(text), add_special != 0, ids, cap, NULL);
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
    out->tokenizer = etok_kind_name(etok_kind_of(em->tok));
    out->pooling = emodel_pool_name(hp->pool);
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
    out->threads = em->threads;
    out->max_tokens = (int)em->max_tokens;
    tensor_stats(em->f, out);
}
