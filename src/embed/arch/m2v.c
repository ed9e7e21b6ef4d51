/* m2v — see m2v.h. */
#include "embed/arch/m2v.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed/formats/safetensors.h"
#include "embed/tokenizers/wordlevel.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

struct m2v {
    st_file *st;
    wl_tok *tok;
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
    wl_free(m->tok);
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
    int64_t nv = wl_n_vocab(m->tok);
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

trove_err m2v_open_memory(const void *safetensors, size_t st_len, const char *tokenizer_json,
                          size_t tok_len, const char *config_json, size_t cfg_len, m2v **out)
{
    *out = NULL;
    m2v *m = xcalloc(1, sizeof *m);
    trove_err e;
    if ((e = read_config(m, config_json, cfg_len, "<config.json>")) ||
        (e = wl_open_json(tokenizer_json, tok_len, "<tokenizer.json>", &m->tok)) ||
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
        e = wl_open(m->files[1], &m->tok);
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
    return wl_model_name(m->tok);
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

size_t m2v_tokenize(const m2v *m, const char *text, size_t len, int32_t *ids, size_t cap)
{
    size_t n = wl_encode(m->tok, text, len, ids, cap);
    int32_t unk = wl_unk_id(m->tok);
    if (unk < 0)
        return n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != unk)
            ids[k++] = ids[i];
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
