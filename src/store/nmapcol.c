#include "store/nmapcol.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "util/str.h"

#define NO_TXT 0xffffffffu
#define VALUE_HEAD 14   /* type, has_num, num, text length */
#define DIR_TAIL 9      /* coded, offset, length */
#define SET_FLAG 0x8000u /* a builder code naming a set, not a value */
#define SLOT_CAP 4096u  /* slots a builder holds (STORE_NMAP_SEG_BITS) */

static void put_u16(tbuf *b, uint32_t v)
{
    uint8_t p[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    tbuf_append(b, p, 2);
}

static void put_u32_at(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(tbuf *b, uint32_t v)
{
    uint8_t p[4];
    put_u32_at(p, v);
    tbuf_append(b, p, 4);
}

static uint32_t get_u16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- interning: byte strings -> dense indexes --------------------------- */

typedef struct intern {
    tbuf bytes;          /* the strings, concatenated in index order */
    uint32_t *off;       /* n + 1 offsets into bytes */
    size_t cap_off;
    uint32_t n;
    uint32_t *tab;       /* open addressing: index + 1, 0 empty */
    uint32_t tab_len;    /* a power of two */
} intern;

/* String i (never a NULL pointer, even for an empty table). */
static const char *intern_at(const intern *t, uint32_t i)
{
    return t->bytes.data ? t->bytes.data + t->off[i] : "";
}

static int same_bytes(const void *a, const void *b, size_t len)
{
    return len == 0 || !memcmp(a, b, len);
}

static void intern_free(intern *t)
{
    tbuf_free(&t->bytes);
    free(t->off);
    free(t->tab);
    memset(t, 0, sizeof *t);
}

static void intern_rehash(intern *t, uint32_t len)
{
    free(t->tab);
    t->tab = xcalloc(len, sizeof *t->tab);
    t->tab_len = len;
    for (uint32_t i = 0; i < t->n; i++) {
        uint64_t h = str_hash(intern_at(t, i), t->off[i + 1] - t->off[i]);
        uint32_t at = (uint32_t)h & (len - 1);
        while (t->tab[at])
            at = (at + 1) & (len - 1);
        t->tab[at] = i + 1;
    }
}

/* The index of p[0..len), or UINT32_MAX when it is not there. */
static uint32_t intern_find(const intern *t, const void *p, size_t len)
{
    if (!t->tab_len)
        return UINT32_MAX;
    uint32_t at = (uint32_t)str_hash(p, len) & (t->tab_len - 1);
    for (; t->tab[at]; at = (at + 1) & (t->tab_len - 1)) {
        uint32_t i = t->tab[at] - 1;
        if (t->off[i + 1] - t->off[i] == len && same_bytes(intern_at(t, i), p, len))
            return i;
    }
    return UINT32_MAX;
}

/* The index of p[0..len), added when new. */
static uint32_t intern_put(intern *t, const void *p, size_t len)
{
    if (!t->off) {
        xgrow(&t->off, &t->cap_off, 1, sizeof *t->off);
        t->off[0] = 0;
    }
    if ((t->n + 1) * 2 > t->tab_len)
        intern_rehash(t, t->tab_len ? t->tab_len * 2 : 16);
    uint32_t found = intern_find(t, p, len);
    if (found != UINT32_MAX)
        return found;
    uint32_t at = (uint32_t)str_hash(p, len) & (t->tab_len - 1);
    while (t->tab[at])
        at = (at + 1) & (t->tab_len - 1);
    tbuf_append(&t->bytes, p, len);
    xgrow(&t->off, &t->cap_off, t->n + 2, sizeof *t->off);
    t->off[t->n + 1] = (uint32_t)t->bytes.len;
    t->tab[at] = t->n + 1;
    return t->n++;
}

/* ---- the builder --------------------------------------------------------- */

typedef struct bkey {
    uint32_t name;       /* index in the builder's names */
    intern vals, sets;
    uint16_t *codes;     /* per slot: 0, value + 1, or SET_FLAG | set */
    uint32_t n_notes;
    int over;            /* past a bound: not coded */
} bkey;

typedef struct pending {
    uint32_t key, val;
} pending;

struct nmapcol_builder {
    intern names;
    bkey *keys;
    size_t cap_keys;
    uint8_t rec[SLOT_CAP];   /* 1: the slot has a record, 2: a malformed one */
    uint32_t n_slots;
    int64_t cur;             /* the slot being added to, -1 none */
    pending *pend;
    size_t n_pend, cap_pend;
    int long_key;            /* a key past NMAPCOL_MAX_KEY was seen */
    tbuf scratch;
};

nmapcol_builder *nmapcol_builder_new(void)
{
    nmapcol_builder *b = xcalloc(1, sizeof *b);
    b->cur = -1;
    return b;
}

static void key_drop(bkey *k)
{
    intern_free(&k->vals);
    intern_free(&k->sets);
    free(k->codes);
    k->codes = NULL;
    k->over = 1;
}

void nmapcol_builder_free(nmapcol_builder *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->names.n; i++)
        key_drop(&b->keys[i]);
    free(b->keys);
    intern_free(&b->names);
    free(b->pend);
    tbuf_free(&b->scratch);
    free(b);
}

static int cmp_pending(const void *a, const void *b)
{
    const pending *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->val < y->val ? -1 : x->val > y->val;
}

/* The note being added gets its codes: one value, or its values as a set. */
static void flush_note(nmapcol_builder *b)
{
    if (b->cur < 0 || !b->n_pend)
        return;
    qsort(b->pend, b->n_pend, sizeof *b->pend, cmp_pending);
    for (size_t i = 0, j; i < b->n_pend; i = j) {
        bkey *k = &b->keys[b->pend[i].key];
        b->scratch.len = 0;
        size_t n = 0;
        for (j = i; j < b->n_pend && b->pend[j].key == b->pend[i].key; j++)
            if (j == i || b->pend[j].val != b->pend[j - 1].val) {
                put_u16(&b->scratch, b->pend[j].val);
                n++;
            }
        k->n_notes++;
        if (k->over)
            continue;
        if (n > NMAPCOL_MAX_SET) {
            key_drop(k);
            continue;
        }
        uint32_t code = get_u16((const uint8_t *)b->scratch.data) + 1;
        if (n > 1) {
            code = SET_FLAG | intern_put(&k->sets, b->scratch.data, b->scratch.len);
            if (k->vals.n + k->sets.n > NMAPCOL_MAX_CODES) {
                key_drop(k);
                continue;
            }
        }
        k->codes[b->cur] = (uint16_t)code;
    }
    b->n_pend = 0;
}

void nmapcol_note(nmapcol_builder *b, uint32_t slot)
{
    flush_note(b);
    if (slot >= SLOT_CAP) {
        b->cur = -1;
        return;
    }
    b->cur = slot;
    b->rec[slot] = 1;
    if (slot + 1 > b->n_slots)
        b->n_slots = slot + 1;
}

void nmapcol_note_unknown(nmapcol_builder *b)
{
    if (b->cur < 0)
        return;
    b->rec[b->cur] = 2;
    b->n_pend = 0;
}

void nmapcol_field(nmapcol_builder *b, const noterec_entry *e)
{
    if (b->cur < 0 || e->src != NOTEREC_FIELD)
        return;
    /* a key with a NUL byte is left to the record path, which compares
     * its keys both as C strings and by length */
    size_t key_len = e->key_len;
    if (key_len > NMAPCOL_MAX_KEY || strnlen(e->key, key_len) != key_len ||
        (b->names.n >= NMAPCOL_MAX_KEYS && intern_find(&b->names, e->key, key_len) == UINT32_MAX)) {
        b->long_key = 1;   /* not listed: unknown, the record decides */
        return;
    }
    uint32_t before = b->names.n, key = intern_put(&b->names, e->key, key_len);
    if (key == before) {
        xgrow(&b->keys, &b->cap_keys, b->names.n, sizeof *b->keys);
        b->keys[key] = (bkey){.name = key, .codes = xcalloc(SLOT_CAP, sizeof(uint16_t))};
    }
    bkey *k = &b->keys[key];
    uint32_t val = 0;
    if (!k->over) {
        size_t txt_len = e->txt ? strnlen(e->txt, e->txt_len) : 0;
        if (txt_len > NMAPCOL_MAX_TEXT) {
            key_drop(k);
        } else {
            uint8_t h[VALUE_HEAD] = {(uint8_t)e->type, (uint8_t)(e->has_num != 0)};
            uint64_t bits = 0;
            if (e->has_num)
                memcpy(&bits, &e->num, sizeof bits);
            for (int i = 0; i < 8; i++)
                h[2 + i] = (uint8_t)(bits >> (8 * i));
            put_u32_at(h + 10, e->txt ? (uint32_t)txt_len : NO_TXT);
            b->scratch.len = 0;
            tbuf_append(&b->scratch, h, sizeof h);
            if (txt_len)
                tbuf_append(&b->scratch, e->txt, txt_len);
            val = intern_put(&k->vals, b->scratch.data, b->scratch.len);
            if (k->vals.n + k->sets.n > NMAPCOL_MAX_CODES)
                key_drop(k);
        }
    }
    xgrow(&b->pend, &b->cap_pend, b->n_pend + 1, sizeof *b->pend);
    b->pend[b->n_pend++] = (pending){key, val};
}

static const nmapcol_builder *sort_b;

static int cmp_name(const void *a, const void *b)
{
    const intern *t = &sort_b->names;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    size_t lx = t->off[x + 1] - t->off[x], ly = t->off[y + 1] - t->off[y];
    size_t n = lx < ly ? lx : ly;
    int c = n ? memcmp(intern_at(t, x), intern_at(t, y), n) : 0;
    return c ? c : lx < ly ? -1 : lx > ly;
}

/* Most notes first, then by name. */
static int cmp_use(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t nx = sort_b->keys[x].n_notes, ny = sort_b->keys[y].n_notes;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    return cmp_name(a, b);
}

static void write_block(const nmapcol_builder *b, const bkey *k, tbuf *out)
{
    uint32_t nv = k->vals.n, ns = k->sets.n;
    int width = nv + ns <= 253 ? 1 : 2;
    put_u16(out, nv);
    put_u16(out, ns);
    tbuf_putc(out, (char)width);
    if (nv)
        tbuf_append(out, intern_at(&k->vals, 0), k->vals.bytes.len);
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t len = k->sets.off[s + 1] - k->sets.off[s];
        tbuf_putc(out, (char)(len / 2));
        tbuf_append(out, intern_at(&k->sets, s), len);
    }
    for (uint32_t slot = 0; slot < b->n_slots; slot++) {
        uint32_t c = k->codes[slot];
        if (b->rec[slot] != 1)
            c = width == 1 ? 0xff : 0xffff;
        else if (c & SET_FLAG)
            c = nv + 1 + (c & ~SET_FLAG);
        if (width == 1)
            tbuf_putc(out, (char)c);
        else
            put_u16(out, c);
    }
}

void nmapcol_finish(nmapcol_builder *b, tbuf *out)
{
    flush_note(b);
    b->cur = -1;
    out->len = 0;
    if (!b->n_slots)
        return;
    uint32_t n = b->names.n;
    uint32_t *order = xmalloc((n ? n : 1) * sizeof *order);
    uint8_t *coded = xcalloc(n ? n : 1, 1);
    sort_b = b;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    qsort(order, n, sizeof *order, cmp_use);
    for (uint32_t i = 0, c = 0; i < n && c < NMAPCOL_MAX_CODED; i++)
        if (!b->keys[order[i]].over) {
            coded[order[i]] = 1;
            c++;
        }
    qsort(order, n, sizeof *order, cmp_name);
    uint8_t h[NMAPCOL_HEADER] = {NMAPCOL_VERSION, (uint8_t)(b->long_key ? 1 : 0),
                                 (uint8_t)n, (uint8_t)(n >> 8),
                                 (uint8_t)b->n_slots, (uint8_t)(b->n_slots >> 8)};
    tbuf_append(out, h, sizeof h);
    for (uint32_t i = 0; i < b->n_slots; i += 8) {   /* the slots with a record */
        uint8_t bits = 0;
        for (uint32_t k = 0; k < 8 && i + k < b->n_slots; k++)
            bits |= (uint8_t)((b->rec[i + k] == 1) << k);
        tbuf_putc(out, (char)bits);
    }
    size_t *at = xmalloc((n ? n : 1) * sizeof *at);
    for (uint32_t i = 0; i < n; i++) {
        const intern *t = &b->names;
        uint32_t x = order[i], len = t->off[x + 1] - t->off[x];
        tbuf_putc(out, (char)len);
        tbuf_append(out, intern_at(t, x), len);
        tbuf_putc(out, (char)coded[x]);
        at[i] = out->len;
        put_u32(out, 0);
        put_u32(out, 0);
    }
    put_u32_at((uint8_t *)out->data + 6, (uint32_t)out->len);
    for (uint32_t i = 0; i < n; i++) {
        if (!coded[order[i]])
            continue;
        size_t start = out->len;
        write_block(b, &b->keys[order[i]], out);
        put_u32_at((uint8_t *)out->data + at[i], (uint32_t)start);
        put_u32_at((uint8_t *)out->data + at[i] + 4, (uint32_t)(out->len - start));
    }
    free(at);
    free(order);
    free(coded);
}

/* ---- reading ------------------------------------------------------------- */

int nmapcol_header(const uint8_t *p, size_t len, int *flags, uint32_t *n_keys,
                   uint32_t *n_slots, uint32_t *dir_end)
{
    if (!p || len < NMAPCOL_HEADER || p[0] != NMAPCOL_VERSION || p[1] > 1)
        return -1;
    *flags = p[1];
    *n_keys = get_u16(p + 2);
    *n_slots = get_u16(p + 4);
    *dir_end = get_u32(p + 6);
    return *dir_end < NMAPCOL_HEADER ? -1 : 0;
}

int nmapcol_dir_find(const uint8_t *p, size_t len, const char *key, size_t key_len,
                     nmapcol_dir_entry *e)
{
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    if (nmapcol_header(p, len, &flags, &n_keys, &n_slots, &dir_end) < 0 || dir_end > len)
        return -1;
    const uint8_t *q = p + NMAPCOL_HEADER + (n_slots + 7) / 8, *end = p + dir_end;
    if (q > end)
        return -1;
    for (uint32_t i = 0; i < n_keys; i++) {
        if (end - q < 1 || (size_t)(end - q) < 1u + q[0] + DIR_TAIL)
            return -1;
        size_t klen = q[0];
        const uint8_t *k = q + 1, *t = k + klen;
        if (t[0] > 1)
            return -1;
        if (klen == key_len && !memcmp(k, key, klen)) {
            *e = (nmapcol_dir_entry){k, klen, t[0], get_u32(t + 1), get_u32(t + 5)};
            return 1;
        }
        q = t + DIR_TAIL;
    }
    return q == end ? 0 : -1;
}

void nmapcol_col_free(nmapcol_col *c)
{
    for (uint32_t i = 0; c->values && i < c->n_values; i++)
        free(c->values[i].txt);
    free(c->values);
    free(c->set_start);
    free(c->set_codes);
    free(c->codes);
    memset(c, 0, sizeof *c);
}

int nmapcol_col_parse(const uint8_t *block, size_t len, uint32_t n_slots, nmapcol_col *c)
{
    memset(c, 0, sizeof *c);
    if (len < 5 || (block[4] != 1 && block[4] != 2))
        goto bad;
    const uint8_t *p = block + 5, *end = block + len;
    c->n_values = get_u16(block);
    c->n_sets = get_u16(block + 2);
    c->width = block[4];
    c->n_slots = n_slots;
    c->values = xcalloc(c->n_values ? c->n_values : 1, sizeof *c->values);
    for (uint32_t i = 0; i < c->n_values; i++) {
        if (end - p < VALUE_HEAD || p[1] > 1)
            goto bad;
        nmapcol_value *v = &c->values[i];
        v->type = p[0];
        v->has_num = p[1];
        uint64_t bits = 0;
        for (int k = 7; k >= 0; k--)
            bits = bits << 8 | p[2 + k];
        memcpy(&v->num, &bits, sizeof v->num);
        uint32_t tlen = get_u32(p + 10);
        p += VALUE_HEAD;
        if (tlen != NO_TXT) {
            if ((size_t)(end - p) < tlen)
                goto bad;
            v->txt = xmalloc((size_t)tlen + 1);
            memcpy(v->txt, p, tlen);
            v->txt[tlen] = '\0';
            p += tlen;
        }
    }
    c->set_start = xmalloc(((size_t)c->n_sets + 1) * sizeof *c->set_start);
    size_t n_codes = 0, cap = 0;
    for (uint32_t s = 0; s < c->n_sets; s++) {
        c->set_start[s] = (uint32_t)n_codes;
        if (end - p < 1 || (size_t)(end - p) < 1u + 2u * p[0])
            goto bad;
        uint32_t n = p[0];
        p++;
        xgrow(&c->set_codes, &cap, n_codes + n + 1, sizeof *c->set_codes);
        for (uint32_t k = 0; k < n; k++, p += 2) {
            uint32_t v = get_u16(p);
            if (v >= c->n_values)
                goto bad;
            c->set_codes[n_codes++] = (uint16_t)v;
        }
    }
    c->set_start[c->n_sets] = (uint32_t)n_codes;
    if ((size_t)(end - p) != (size_t)n_slots * (size_t)c->width)
        goto bad;
    c->codes = xmalloc((size_t)(end - p) + 1);
    memcpy(c->codes, p, (size_t)(end - p));
    return 0;
bad:
    nmapcol_col_free(c);
    return -1;
}

int nmapcol_has_record(const uint8_t *p, size_t len, uint32_t slot)
{
    int flags;
    uint32_t n_keys, n_slots, dir_end;
    if (nmapcol_header(p, len, &flags, &n_keys, &n_slots, &dir_end) < 0 || slot >= n_slots ||
        NMAPCOL_HEADER + (size_t)slot / 8 >= len)
        return 0;
    return (p[NMAPCOL_HEADER + slot / 8] >> (slot & 7)) & 1;
}

uint32_t nmapcol_code(const nmapcol_col *c, uint32_t slot)
{
    if (!c->codes || slot >= c->n_slots)
        return NMAPCOL_UNKNOWN;
    uint32_t v = c->width == 1 ? c->codes[slot] : get_u16(c->codes + 2 * (size_t)slot);
    return v > c->n_values + c->n_sets ? NMAPCOL_UNKNOWN : v;
}
