/* m2v — see m2v.h. */
#include "embed/arch/m2v.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed/formats/safetensors.h"
#include "embed/tokenizers/tokcache.h"
#include "embed/tokenizers/tokjson.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

struct m2v {
    st_file *st;
    tokjson *tok;
    tokjson_enc *enc;  /* the one caller's encoding scratch (see m2v.h) */
    int32_t drop_id;   /* token id left out of every text, -1: none */
    size_t median_chars; /* model2vec's characters per token, for the pre-cut */
    const st_tensor *emb, *weights, *mapping;
    int64_t rows, dim, n_vocab;
    bool normalize;
    char *files[4]; /* model.safetensors, tokenizer.json, config.json, NULL */
};

void m2v_close(m2v *m)
{
    if (!m)
        return;
    st_close(m->st);
    tokjson_free(m->tok);
    if (m->enc) {
        tokjson_enc_free(m->enc);
        free(m->enc);
    }
    for (int i = 0; i < 3; i++)
        free(m->files[i]);
    free(m);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The folder of a model path: path itself, or the folder of a path that
 * names model.safetensors. NULL if neither. Caller frees. */
static char *model_dir(const char *path)
{
    if (is_dir(path))
        return xstrdup(path);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strcmp(base, "model.safetensors") != 0)
        return NULL;
    return slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
}

static char *join(const char *dir, const char *name)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", dir, name);
    return b.data;
}

bool m2v_is_model(const char *path)
{
    char *dir = model_dir(path);
    if (!dir)
        return false;
    char *p = join(dir, "model.safetensors");
    bool ok = is_file(p);
    free(p);
    free(dir);
    return ok;
}

static bool is_float(st_dtype d)
{
    return d == ST_F32 || d == ST_F16 || d == ST_BF16 || d == ST_F64 || d == ST_I8;
}

/* Find and check the tensors, after the tokenizer is loaded. */
static trove_err bind(m2v *m, const char *name)
{
    static const char *const NAMES[] = {"embeddings", "embedding.weight", "0"};
    for (size_t i = 0; i < 3 && !m->emb; i++)
        m->emb = st_get(m->st, NAMES[i]);
    if (!m->emb)
        return trove_fail(TROVE_ECORRUPT, "%s: no 'embeddings' tensor (not a model2vec model?)",
                          name);
    const st_tensor *e = m->emb;
    if (e->n_dims != 2 || e->shape[0] < 1 || e->shape[1] < 1 || e->shape[1] > 65536)
        return trove_fail(TROVE_ECORRUPT, "%s: tensor '%s' must be [rows, dim] with dim <= 65536",
                          name, e->name);
    if (!is_float(e->dtype))
        return trove_fail(TROVE_EUNSUPPORTED, "%s: tensor '%s' has dtype %s", name, e->name,
                          st_dtype_name(e->dtype));
    m->rows = e->shape[0];
    m->dim = e->shape[1];
    int64_t nv = (int64_t)tokjson_vocab_size(m->tok);
    m->weights = st_get(m->st, "weights");
    m->mapping = st_get(m->st, "mapping");
    if (m->weights && (m->weights->n_dims != 1 || m->weights->dtype == ST_I8 ||
                       !is_float(m->weights->dtype) || m->weights->n_elem < nv))
        return trove_fail(TROVE_ECORRUPT,
                          "%s: tensor 'weights' must be a float vector of at least %lld entries",
                          name, (long long)nv);
    if (m->mapping) {
        int64_t dummy;
        if (m->mapping->n_dims != 1 || m->mapping->n_elem < nv ||
            (m->mapping->n_elem && !st_elem_i64(m->mapping, 0, &dummy)))
            return trove_fail(TROVE_ECORRUPT,
                              "%s: tensor 'mapping' must be an integer vector of at least %lld "
                              "entries",
                              name, (long long)nv);
    } else if (m->rows < nv) {
        return trove_fail(TROVE_ECORRUPT,
                          "%s: the tokenizer has %lld tokens but the embeddings only %lld rows",
                          name, (long long)nv, (long long)m->rows);
    }
    m->n_vocab = nv;
    return TROVE_OK;
}

static trove_err read_config(m2v *m, const char *json, size_t len, const char *name)
{
    m->normalize = true;
    if (!json)
        return TROVE_OK;
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return trove_fail(TROVE_ECORRUPT, "%s: not a JSON object (%s)", name,
                          root ? "other JSON value" : jerr.text);
    }
    json_t *n = json_object_get(root, "normalize");
    if (json_is_boolean(n))
        m->normalize = json_is_true(n);
    json_decref(root);
    return TROVE_OK;
}

/* What model2vec does with the tokenizer, fixed once it is loaded: it
 * drops the model's unk_token (Python's `tokenizer.model.unk_token`, which
 * the WordPiece, WordLevel and BPE models expose and Unigram does not, so
 * a Unigram unknown piece keeps its row), and cuts texts to max_length x
 * the median token length in characters before tokenising. */
static void tok_ready(m2v *m, size_t median)
{
    m->enc = xcalloc(1, sizeof *m->enc);
    m->drop_id = strcmp(tokjson_model_type(m->tok), "Unigram") == 0 ? -1 : tokjson_unk_id(m->tok);
    m->median_chars = median;
}

/* Cache payload: u64 median characters, then tokjson's binary form. */
#define CACHE_KIND "m2v-tokjson"
#define CACHE_VERSION (0x10000u | TOKJSON_BIN_VERSION)

/* The compiled cache's entry for path, when it holds a valid one: its
 * tables used in place from the mapped file, no JSON parse. */
static bool tokenizer_from_cache(m2v *m, const char *path)
{
    const void *payload;
    size_t len;
    tokcache *c = tokcache_load(path, CACHE_KIND, CACHE_VERSION, &payload, &len);
    if (!c)
        return false;
    uint64_t median = 0;
    if (len >= 8)
        memcpy(&median, payload, 8);
    tokjson *t = NULL; /* the tables stay in the mapped entry, which t releases */
    bool ok = len >= 8 && median < 4096 &&
              tokjson_borrow((const char *)payload + 8, len - 8, tokcache_release_cb, c, &t) ==
                  TROVE_OK;
    if (!ok) {
        tokcache_release(c);
        return false;
    }
    m->tok = t;
    tok_ready(m, (size_t)median);
    return true;
}

/* tokenizer.json through the compiled cache: a valid entry is loaded with
 * no JSON parse; otherwise the JSON is parsed and an entry stored, and the
 * stored entry used in its place: the parsed tables of a 500k-piece
 * vocabulary are ~150 MB of heap, which a daemon would otherwise hold for
 * its life (its arenas keep freed memory: server.c), and the entry's
 * mapped pages are shared page cache. */
static trove_err load_tokenizer(m2v *m, const char *path)
{
    if (tokenizer_from_cache(m, path))
        return TROVE_OK;
    trove_err e = tokjson_open(path, &m->tok);
    if (e)
        return e;
    size_t median = tokjson_median_token_chars(m->tok);
    size_t blen;
    void *bin = tokjson_serialize(m->tok, &blen);
    char *buf = xmalloc(blen + 8);
    uint64_t m64 = median;
    memcpy(buf, &m64, 8);
    memcpy(buf + 8, bin, blen);
    free(bin);
    tokcache_store(path, CACHE_KIND, CACHE_VERSION, buf, blen + 8);
    free(buf);
    tokjson *parsed = m->tok;
    if (tokenizer_from_cache(m, path)) {
        tokjson_free(parsed);
        mem_give_back();
        return TROVE_OK;
    }
    m->tok = parsed; /* no entry (read-only home, full disk): the parsed one */
    tok_ready(m, median);
    return TROVE_OK;
}

static trove_err tok_from_memory(m2v *m, const char *json, size_t len)
{
    trove_err e = tokjson_from_buffer(json, len, &m->tok);
    if (e) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", trove_errmsg());
        return trove_fail(e, "<tokenizer.json>: %s", msg);
    }
    tok_ready(m, tokjson_median_token_chars(m->tok));
    return TROVE_OK;
}

trove_err m2v_open_memory(const void *safetensors, size_t st_len, const char *tokenizer_json,
                          size_t tok_len, const char *config_json, size_t cfg_len, m2v **out)
{
    *out = NULL;
    m2v *m = xcalloc(1, sizeof *m);
    trove_err e;
    if ((e = read_config(m, config_json, cfg_len, "<config.json>")) ||
        (e = tok_from_memory(m, tokenizer_json, tok_len)) ||
        (e = st_open_memory(safetensors, st_len, "<model.safetensors>", &m->st)) ||
        (e = bind(m, "<model.safetensors>"))) {
        m2v_close(m);
        return e;
    }
    *out = m;
    return TROVE_OK;
}

trove_err m2v_open(const char *path, m2v **out)
{
    *out = NULL;
    char *dir = model_dir(path);
    if (!dir)
        return trove_fail(TROVE_ENOENT, "%s: not a model2vec folder", path);
    m2v *m = xcalloc(1, sizeof *m);
    m->files[0] = join(dir, "model.safetensors");
    m->files[1] = join(dir, "tokenizer.json");
    m->files[2] = join(dir, "config.json");
    free(dir);
    trove_err e = TROVE_OK;
    for (int i = 0; i < 2 && !e; i++)
        if (!is_file(m->files[i]))
            e = trove_fail(TROVE_ENOENT, "%s: missing (a model2vec folder holds "
                           "model.safetensors, tokenizer.json and config.json)", m->files[i]);
    char *cfg = NULL;
    size_t cfg_len = 0;
    if (!e && is_file(m->files[2]))
        e = fs_read_file(m->files[2], 0, &cfg, &cfg_len);
    if (!e)
        e = read_config(m, cfg, cfg_len, m->files[2]);
    free(cfg);
    if (!e)
        e = load_tokenizer(m, m->files[1]);
    if (!e)
        e = st_open(m->files[0], &m->st);
    if (!e)
        e = bind(m, m->files[0]);
    if (e) {
        m2v_close(m);
        return e;
    }
    *out = m;
    return TROVE_OK;
}

int64_t m2v_dim(const m2v *m)
{
    return m->dim;
}

int64_t m2v_n_vocab(const m2v *m)
{
    return m->n_vocab;
}

int64_t m2v_n_rows(const m2v *m)
{
    return m->rows;
}

const char *m2v_tokenizer_name(const m2v *m)
{
    return tokjson_model_type(m->tok);
}

const char *m2v_dtype(const m2v *m)
{
    return st_dtype_name(m->emb->dtype);
}

uint64_t m2v_emb_bytes(const m2v *m)
{
    return m->emb->nbytes;
}

bool m2v_weighted(const m2v *m)
{
    return m->weights != NULL;
}

bool m2v_mapped(const m2v *m)
{
    return m->mapping != NULL;
}

bool m2v_config_normalize(const m2v *m)
{
    return m->normalize;
}

uint64_t m2v_file_size(const m2v *m)
{
    return st_file_size(m->st);
}

const char *const *m2v_files(const m2v *m)
{
    return (const char *const *)m->files;
}

/* Bytes of the first max_chars code points of text (model2vec slices the
 * Python string: characters, not bytes). */
static size_t cut_chars(const char *text, size_t len, size_t max_chars)
{
    size_t chars = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80 && chars++ == max_chars)
            return i;
    return len;
}

size_t m2v_tokenize(const m2v *m, const char *text, size_t len, int32_t *ids, size_t cap)
{
    if (m->median_chars && cap <= SIZE_MAX / m->median_chars)
        len = cut_chars(text, len, cap * m->median_chars);
    tokjson_enc *e = m->enc;
    if (tokjson_encode(m->tok, text, len, 0, e) != TROVE_OK)
        return 0; /* only text over TOKJSON_MAX_TEXT fails */
    size_t k = 0;
    for (size_t i = 0; i < e->n && k < cap; i++) /* unknown ids out first, then the cut */
        if (e->ids[i] != m->drop_id)
            ids[k++] = e->ids[i];
    return k;
}

trove_err m2v_pool(const m2v *m, const int32_t *ids, size_t n, float *out)
{
    memset(out, 0, (size_t)m->dim * sizeof *out);
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= m->n_vocab)
            return trove_fail(TROVE_EINVAL, "token id %d outside the vocabulary of %lld", id,
                              (long long)m->n_vocab);
        int64_t row = id;
        if (m->mapping) {
            st_elem_i64(m->mapping, id, &row);
            if (row < 0 || row >= m->rows)
                return trove_fail(TROVE_ECORRUPT,
                                  "%s: mapping[%d] = %lld is outside the %lld embedding rows",
                                  st_path(m->st), id, (long long)row, (long long)m->rows);
        }
        float w = m->weights ? st_elem_f32(m->weights, id) : 1.0f;
        st_row_axpy(m->emb, row, w, out);
    }
    if (n > 1) {
        float inv = 1.0f / (float)n;
        for (int64_t j = 0; j < m->dim; j++)
            out[j] *= inv;
    }
    return TROVE_OK;
}
