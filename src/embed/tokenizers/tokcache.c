/* tokcache — see tokcache.h. File layout (native endian; a cache is
 * local to one machine):
 *
 *   0  "TRVTOKC1"
 *   8  u32 version, u32 kind length
 *   16 u64 source size, i64 mtime seconds, i64 mtime nanoseconds,
 *      u64 inode, u64 device
 *   56 u64 payload length, u64 XXH3-64 of the payload's ends (ends_hash)
 *   72 kind bytes, zero padding to a multiple of 8
 *   .. payload
 *
 * The hash covers the payload's first and last 4 KiB, not all of it: a
 * load must not read the whole entry (22 MB for a 500k-piece vocabulary,
 * whose pages a query barely touches). It catches a truncated entry or
 * another file's bytes; entries are written whole and renamed into place,
 * and the readers bounds-check every table access (tokjson_bin.c), so a
 * damaged middle can give wrong ids but never an unsafe read. */
#include "embed/tokenizers/tokcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/buf.h"
#include "util/fmap.h"
#include "util/fsutil.h"
#include "util/mem.h"

#define MAGIC "TRVTOKC2"
#define ENDS 4096
#define HDR 72

struct tokcache {
    fmap map;
};

typedef struct ident {
    uint64_t size;
    int64_t sec, nsec;
    uint64_t ino, dev;
} ident;

char *tokcache_dir(void)
{
    tbuf b = {0};
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && *xdg) {
        tbuf_printf(&b, "%s/trove/tokenizers", xdg);
    } else {
        const char *home = getenv("HOME");
        tbuf_printf(&b, "%s/.cache/trove/tokenizers", home && *home ? home : ".");
    }
    return tbuf_detach(&b);
}

/* Entry path and the source's identity; NULL if the source cannot be
 * resolved. */
static char *entry_path(const char *src, const char *kind, ident *id)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(src, real) || stat(real, &st) != 0)
        return NULL;
    *id = (ident){(uint64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec,
                  (uint64_t)st.st_ino, (uint64_t)st.st_dev};
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return NULL;
    XXH3_64bits_reset(h);
    XXH3_64bits_update(h, real, strlen(real) + 1);
    XXH3_64bits_update(h, kind, strlen(kind));
    uint64_t key = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    char *dir = tokcache_dir();
    tbuf b = {0};
    tbuf_printf(&b, "%s/%016llx.tok", dir, (unsigned long long)key);
    free(dir);
    return tbuf_detach(&b);
}

/* XXH3-64 of p's first and last ENDS bytes (all of it when shorter). */
static uint64_t ends_hash(const void *p, size_t n)
{
    if (n <= 2 * ENDS)
        return XXH3_64bits(p, n);
    XXH3_state_t *h = XXH3_createState();
    if (!h)
        return 0;
    XXH3_64bits_reset(h);
    XXH3_64bits_update(h, p, ENDS);
    XXH3_64bits_update(h, (const char *)p + n - ENDS, ENDS);
    XXH3_64bits_update(h, &n, sizeof n);
    uint64_t d = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return d;
}

static size_t kind_room(size_t klen)
{
    return (klen + 7) & ~(size_t)7;
}

tokcache *tokcache_load(const char *src, const char *kind, uint32_t version, const void **payload,
                        size_t *len)
{
    ident id;
    char *path = entry_path(src, kind, &id);
    if (!path)
        return NULL;
    fmap fm;
    trove_err rc = fmap_open(path, NULL, &fm);   /* no entry yet: a miss, not an error */
    free(path);
    if (rc)
        return NULL;
    if (fm.len < HDR) {
        fmap_close(&fm);
        return NULL;
    }
    size_t size = fm.len;
    const unsigned char *p = fm.data;
    uint32_t ver, klen;
    ident got;
    uint64_t plen, phash;
    memcpy(&ver, p + 8, 4);
    memcpy(&klen, p + 12, 4);
    memcpy(&got, p + 16, sizeof got);
    memcpy(&plen, p + 56, 8);
    memcpy(&phash, p + 64, 8);
    size_t kr = kind_room(strlen(kind));
    bool ok = memcmp(p, MAGIC, 8) == 0 && ver == version && klen == strlen(kind) &&
              memcmp(&got, &id, sizeof id) == 0 && size >= HDR + kr &&
              memcmp(p + HDR, kind, klen) == 0 && plen == size - HDR - kr &&
              ends_hash(p + HDR + kr, (size_t)plen) == phash;
    if (!ok) {
        fmap_close(&fm);
        return NULL;
    }
    tokcache *c = xmalloc(sizeof *c);
    c->map = fm;
    *payload = p + HDR + kr;
    *len = (size_t)plen;
    return c;
}

void tokcache_release(tokcache *c)
{
    if (!c)
        return;
    fmap_close(&c->map);
    free(c);
}

void tokcache_release_cb(void *c)
{
    tokcache_release(c);
}

void tokcache_store(const char *src, const char *kind, uint32_t version, const void *payload,
                    size_t len)
{
    ident id;
    char *path = entry_path(src, kind, &id);
    if (!path)
        return;
    unsigned char hdr[HDR] = {0};
    uint32_t klen = (uint32_t)strlen(kind);
    uint64_t plen = len, phash = ends_hash(payload, len);
    memcpy(hdr, MAGIC, 8);
    memcpy(hdr + 8, &version, 4);
    memcpy(hdr + 12, &klen, 4);
    memcpy(hdr + 16, &id, sizeof id);
    memcpy(hdr + 56, &plen, 8);
    memcpy(hdr + 64, &phash, 8);
    static const char zeros[8] = {0};
    const fs_part parts[] = {
        {hdr, HDR}, {kind, klen}, {zeros, kind_room(klen) - klen}, {payload, len}};
    /* best effort: a cache that cannot be written costs the next open a parse */
    (void)fs_replace_file(path, NULL, parts, sizeof parts / sizeof *parts, 0644, FS_REPLACE_MKDIR);
    free(path);
}
