#include "fs/gitignore.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/glob.h"
#include "util/mem.h"

typedef struct gi_rule {
    tglob *g;
    uint8_t negate, dir_only, anchored;
} gi_rule;

struct gi_frame {
    gi_frame *parent;
    int refs;
    size_t prefix_len;
    gi_rule *rules;
    size_t n, cap;
    /* The last bytes the rules' matches can end with (every byte when a
     * rule's can end with any): a path ending in another byte is matched
     * by no rule of this file. A note's ".md" ends in 'd', which the rules
     * of a typical .gitignore (".DS_Store", "node_modules", "*.log") do
     * not: one bit test instead of a match per rule (28M instructions of
     * a no-op update of the tldr pages, 13 rules x 38,390 notes). */
    uint8_t last[32];
};

/* Trailing spaces are dropped unless escaped; an escape is a backslash
 * preceded by an even number of backslashes. */
static size_t trim_trailing_spaces(const char *s, size_t len)
{
    while (len && s[len - 1] == ' ') {
        size_t bs = 0;
        while (bs < len - 1 && s[len - 2 - bs] == '\\')
            bs++;
        if (bs & 1)
            break;
        len--;
    }
    return len;
}

static void add_line(gi_frame *f, const char *s, size_t len)
{
    if (len && s[len - 1] == '\r')
        len--;
    len = trim_trailing_spaces(s, len);
    if (!len || s[0] == '#')
        return;
    gi_rule r = {0};
    if (s[0] == '!')
        r.negate = 1, s++, len--;
    if (len && s[len - 1] == '/')
        r.dir_only = 1, len--;
    if (!len)
        return;
    r.anchored = memchr(s, '/', len) != NULL;
    if (s[0] == '/')
        s++, len--;
    if (!len)
        return;
    r.g = tglob_compile(s, len, GLOB_NOBRACE);
    int last = tglob_last_byte(r.g);
    if (last < 0)
        memset(f->last, 0xff, sizeof f->last);
    else
        f->last[last >> 3] |= (uint8_t)(1u << (last & 7));
    xgrow(&f->rules, &f->cap, f->n + 1, sizeof *f->rules);
    f->rules[f->n++] = r;
}

gi_frame *gi_frame_ref(gi_frame *f)
{
    if (f)
        f->refs++;
    return f;
}

gi_frame *gi_frame_new(gi_frame *parent, size_t prefix_len, const char *data, size_t len)
{
    gi_frame *f = xcalloc(1, sizeof *f);
    f->refs = 1;
    f->prefix_len = prefix_len;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) : len;
        add_line(f, data + i, end - i);
        i = end + 1;
    }
    if (f->n == 0) {
        free(f);
        return gi_frame_ref(parent);
    }
    f->parent = gi_frame_ref(parent);
    return f;
}

void gi_frame_unref(gi_frame *f)
{
    while (f && --f->refs == 0) {
        gi_frame *parent = f->parent;
        for (size_t i = 0; i < f->n; i++)
            tglob_free(f->rules[i].g);
        free(f->rules);
        free(f);
        f = parent;
    }
}

int gi_ignored(gi_frame *f, const char *rel, size_t len, size_t base, int is_dir)
{
    unsigned char end = len ? (unsigned char)rel[len - 1] : 0;
    for (; f; f = f->parent) {
        if (len && !(f->last[end >> 3] >> (end & 7) & 1))
            continue;
        for (size_t k = f->n; k-- > 0;) {
            const gi_rule *r = &f->rules[k];
            if (r->dir_only && !is_dir)
                continue;
            size_t off = r->anchored ? f->prefix_len : base;
            if (off > len)
                continue;
            if (tglob_match(r->g, rel + off, len - off))
                return !r->negate;
        }
    }
    return 0;
}
