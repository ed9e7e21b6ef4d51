/* tokjson_bin — the compact binary form of a loaded tokenizer, so that a
 * cold start does not parse megabytes of JSON.
 *
 * Layout (native little-endian; the header's byte-order word must read
 * back): "TJBIN\0\0\1", u32 0x01020304, u32 model kind, then sections each
 * as u64 byte length + bytes (padded to 8):
 *   config JSON (tokenizer.json less model vocab/merges), vocab arena,
 *   vocab off[n], vocab len[n], vocab hash slots, merge keys, merge ranks,
 *   merge new ids, unigram scores (f64, may be empty), bin_stats.
 * Section sizes are checked on load; the tables' contents on each lookup
 * (load_model says why), so a damaged file never reads out of bounds.
 * tj_bin_load(borrow) uses the tables in place in the caller's buffer
 * (a mapped cache entry) instead of copying them. */
#include "embed/tokenizers/tokjson_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"

static const char MAGIC[8] = {'T', 'J', 'B', 'I', 'N', 0, 0, (char)TOKJSON_BIN_VERSION};

/* What a load would otherwise compute with a pass over every piece or
 * score (the last section). */
typedef struct bin_stats {
    uint32_t max_len, nmerges; /* longest piece in bytes; merges */
    double min_score;          /* Unigram: the lowest score (unknown pieces' base) */
    int32_t unk, byte_id[256]; /* resolved ids (257 lookups = 257 scattered pages) */
    int32_t pad;
} bin_stats;

bool tj_bin_is(const void *buf, size_t len) { return len >= 8 && memcmp(buf, MAGIC, 8) == 0; }

static void put_sec(tbuf *o, const void *p, size_t n) {
    uint64_t l = n;
    tbuf_append(o, &l, 8);
    if (n) tbuf_append(o, p, n);
    static const char zero[8] = {0};
    if (n % 8) tbuf_append(o, zero, 8 - n % 8);
}

void *tokjson_serialize(const tokjson *t, size_t *len) {
    tbuf o = {0};
    tbuf_append(&o, MAGIC, 8);
    uint32_t hdr[2] = {0x01020304u, (uint32_t)t->model.kind};
    tbuf_append(&o, hdr, 8);
    char *cfg = json_dumps(t->config, JSON_COMPACT);
    put_sec(&o, cfg, strlen(cfg));
    free(cfg);
    const tj_strtab *v = &t->model.vocab;
    const tj_model *m = &t->model;
    put_sec(&o, v->pieces, v->pieces_len);
    put_sec(&o, v->off, (size_t)v->n * 4);
    put_sec(&o, v->len, (size_t)v->n * 4);
    put_sec(&o, v->slots, v->slots ? ((size_t)v->mask + 1) * 8 : 0);
    size_t mc = m->mkey ? (size_t)m->mmask + 1 : 0;
    put_sec(&o, m->mkey, mc * 8);
    put_sec(&o, m->mrank, mc * 4);
    put_sec(&o, m->mnew, mc * 4);
    put_sec(&o, m->score, m->score ? (size_t)v->n * 8 : 0);
    bin_stats st = {v->max_len, m->nmerges, m->min_score, m->unk, {0}, 0};
    memcpy(st.byte_id, m->byte_id, sizeof st.byte_id);
    put_sec(&o, &st, sizeof st);
    *len = o.len;
    return o.data;
}

trove_err tokjson_save(const tokjson *t, const char *path) {
    size_t len;
    void *data = tokjson_serialize(t, &len);
    trove_err e = fs_replace_file(path, NULL, &(fs_part){data, len}, 1, 0666, 0);
    free(data);
    return e;
}

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
} rd;

static bool get_sec(rd *r, const void **p, size_t *n) {
    if (r->n - r->at < 8) return false;
    uint64_t l;
    memcpy(&l, r->p + r->at, 8);
    r->at += 8;
    size_t padded = l + (l % 8 ? 8 - l % 8 : 0);
    if (l > r->n || padded > r->n - r->at) return false;
    *p = r->p + r->at;
    *n = (size_t)l;
    r->at += padded;
    return true;
}

static void *dup_sec(const void *p, size_t n) {
    void *d = xmalloc(n ? n : 1);
    if (n) memcpy(d, p, n);
    return d;
}

/* A section's bytes: in place when borrowing, else a copy. */
static void *take_sec(const void *p, size_t n, bool borrow) {
    return borrow ? (void *)(uintptr_t)p : dup_sec(p, n);
}

static bool pow2(size_t x) { return x && !(x & (x - 1)); }

/* The tables are taken as they are, in place or copied, with no pass over
 * them: every lookup checks what it reads (tj_strtab_find_h, tj_strtab_get,
 * merge_get bound their probes and check ids, offsets and lengths), so a
 * damaged entry can give wrong ids but never a read out of bounds, and a
 * 500k-piece vocabulary loads without touching its pages. */
static trove_err load_model(rd *r, tj_model *m, bool borrow) {
    const void *p[9];
    size_t n[9];
    for (int i = 0; i < 9; i++)
        if (!get_sec(r, &p[i], &n[i])) return trove_fail(TROVE_ECORRUPT, "tokenizer cache: truncated");
    tj_strtab *v = &m->vocab;
    size_t nv = n[1] / 4;
    if (n[1] % 4 || n[2] != n[1] || nv >= (1u << 24) || n[0] >= UINT32_MAX || n[3] % 8 ||
        !pow2(n[3] / 8) || n[4] % 8 || (n[4] && !pow2(n[4] / 8)) || n[5] != n[4] / 2 ||
        n[6] != n[4] / 2 || (n[7] && n[7] != nv * 8) || n[8] != sizeof(bin_stats))
        return trove_fail(TROVE_ECORRUPT, "tokenizer cache: inconsistent section sizes");
    bin_stats st;
    memcpy(&st, p[8], sizeof st);
    if (borrow) {
        v->pieces = (char *)(uintptr_t)p[0];
    } else {
        v->pieces = arena_alloc(&v->mem, n[0]);
        if (n[0]) memcpy(v->pieces, p[0], n[0]);
    }
    v->borrowed = m->borrowed = borrow;
    v->pieces_len = n[0];
    v->off = take_sec(p[1], n[1], borrow);
    v->len = take_sec(p[2], n[2], borrow);
    v->n = (uint32_t)nv;
    v->slots = take_sec(p[3], n[3], borrow);
    v->mask = (uint32_t)(n[3] / 8 - 1);
    v->max_len = st.max_len;
    if (n[4]) {
        m->mkey = take_sec(p[4], n[4], borrow);
        m->mrank = take_sec(p[5], n[5], borrow);
        m->mnew = take_sec(p[6], n[6], borrow);
        m->mmask = (uint32_t)(n[4] / 8 - 1);
        m->nmerges = st.nmerges;
    }
    if (m->kind == TJM_UNIGRAM) {
        if (!n[7]) return trove_fail(TROVE_ECORRUPT, "tokenizer cache: Unigram model without scores");
        m->score = take_sec(p[7], n[7], borrow);
    }
    /* the ids tj_model_finish() would look up, checked like a lookup's */
    size_t len;
    m->unk = st.unk >= 0 && tj_strtab_get(v, st.unk, &len) ? st.unk : -1;
    for (int b = 0; b < 256; b++)
        m->byte_id[b] = st.byte_id[b] >= 0 && (uint32_t)st.byte_id[b] < v->n ? st.byte_id[b] : -1;
    m->min_score = st.min_score;
    return TROVE_OK;
}

trove_err tj_bin_load(const void *buf, size_t len, bool borrow, tokjson **out) {
    *out = NULL;
    borrow = borrow && (uintptr_t)buf % 8 == 0; /* tables are read as u32/u64/f64 */
    rd r = {buf, len, 8};
    uint32_t hdr[2];
    if (len < 16) return trove_fail(TROVE_ECORRUPT, "tokenizer cache: truncated");
    memcpy(hdr, r.p + 8, 8);
    r.at = 16;
    if (hdr[0] != 0x01020304u) return trove_fail(TROVE_EUNSUPPORTED, "tokenizer cache: other byte order");
    const void *cp;
    size_t cn;
    if (!get_sec(&r, &cp, &cn)) return trove_fail(TROVE_ECORRUPT, "tokenizer cache: truncated");
    json_error_t je;
    json_t *root = json_loadb(cp, cn, JSON_ALLOW_NUL, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return trove_fail(TROVE_ECORRUPT, "tokenizer cache: bad configuration");
    }
    tokjson *t = xcalloc(1, sizeof *t);
    t->config = root;
    trove_err e = tj_model_parse(json_object_get(root, "model"), &t->model, false);
    if (!e && (uint32_t)t->model.kind != hdr[1])
        e = trove_fail(TROVE_ECORRUPT, "tokenizer cache: model kind mismatch");
    if (!e) e = load_model(&r, &t->model, borrow);
    if (!e) e = tj_finish_config(t);
    if (e) {
        tokjson_free(t);
        return e;
    }
    *out = t;
    return TROVE_OK;
}
