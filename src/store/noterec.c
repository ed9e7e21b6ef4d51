#include "store/noterec.h"

#include <string.h>

#include "store/store.h"

#define HEADER 13   /* version, mtime_ns, count */
#define ENTRY 19    /* src, type, has_num, num, key length, txt length */
#define NO_TXT 0xffffffffu

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

void noterec_begin(tbuf *out, int64_t mtime_ns)
{
    uint8_t h[HEADER] = {NOTEREC_VERSION};
    put_u64(h + 1, (uint64_t)mtime_ns);
    out->len = 0;
    tbuf_append(out, (const char *)h, sizeof h);
}

void noterec_add(tbuf *out, const noterec_entry *e)
{
    uint8_t h[ENTRY] = {(uint8_t)e->src, (uint8_t)e->type, (uint8_t)(e->has_num != 0)};
    uint64_t bits;
    memcpy(&bits, &e->num, sizeof bits);
    put_u64(h + 3, e->has_num ? bits : 0);
    put_u32(h + 11, (uint32_t)e->key_len);
    put_u32(h + 15, e->txt ? (uint32_t)e->txt_len : NO_TXT);
    tbuf_append(out, (const char *)h, sizeof h);
    tbuf_append(out, e->key, e->key_len);
    if (e->txt)
        tbuf_append(out, e->txt, e->txt_len);
    uint8_t *count = (uint8_t *)out->data + 9;
    put_u32(count, get_u32(count) + 1);
}

int noterec_open(const uint8_t *data, size_t len, int64_t *mtime_ns, noterec_iter *it)
{
    if (!data || len < HEADER || data[0] != NOTEREC_VERSION)
        return -1;
    *mtime_ns = (int64_t)get_u64(data + 1);
    it->left = get_u32(data + 9);
    it->p = data + HEADER;
    it->end = data + len;
    return 0;
}

int noterec_next(noterec_iter *it, noterec_entry *e)
{
    size_t avail = (size_t)(it->end - it->p);
    if (it->left == 0)
        return avail ? -1 : 0;
    if (avail < ENTRY)
        return -1;
    const uint8_t *h = it->p;
    uint32_t klen = get_u32(h + 11), tlen = get_u32(h + 15);
    size_t tbytes = tlen == NO_TXT ? 0 : tlen;
    if (h[0] < NOTEREC_FIELD || h[0] > NOTEREC_ALIAS || h[2] > 1 || klen > avail - ENTRY ||
        tbytes > avail - ENTRY - klen)
        return -1;
    e->src = h[0];
    e->type = h[1];
    e->has_num = h[2];
    uint64_t bits = get_u64(h + 3);
    memcpy(&e->num, &bits, sizeof e->num);
    e->key = (const char *)h + ENTRY;
    e->key_len = klen;
    e->txt = tlen == NO_TXT ? NULL : e->key + klen;
    e->txt_len = tbytes;
    it->p = h + ENTRY + klen + tbytes;
    it->left--;
    return 1;
}

int noterec_date(const uint8_t *data, size_t len, const char *const *keys, size_t n_keys,
                 double *days)
{
    int64_t mtime_ns;
    noterec_iter it;
    noterec_entry e;
    if (noterec_open(data, len, &mtime_ns, &it) < 0)
        return -1;
    size_t best = n_keys;        /* the first date key found so far */
    double key_days = 0, name_days = 0;
    int has_name = 0, more;
    while ((more = noterec_next(&it, &e)) == 1) {
        if (e.src != NOTEREC_FIELD)
            continue;
        if (e.key_len == 0 && !has_name) {
            has_name = 1;
            name_days = e.num;
        }
        if (e.type != STORE_FIELD_DATE || !e.has_num)
            continue;
        for (size_t k = 0; k < best; k++)
            if (strlen(keys[k]) == e.key_len && !memcmp(keys[k], e.key, e.key_len)) {
                best = k;
                key_days = e.num;
                break;
            }
    }
    if (more < 0)
        return -1;
    *days = best < n_keys ? key_days : has_name ? name_days : (double)mtime_ns / 86400e9;
    return best < n_keys ? (int)best : has_name ? (int)n_keys : (int)n_keys + 1;
}
