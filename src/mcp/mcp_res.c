/* mcp resources: every indexed note is trove://COLLECTION/PATH; reading one
 * returns its text with line numbers. Also the doc_uri spelling shared with
 * the tools. */
#include "mcp/mcp_int.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

#define LIST_PAGE 500
#define URI_SCHEME "trove://"

/* ---- doc_uri ---- */

/* RFC 3986 pchar minus what would change the meaning here ('/' only where
 * the caller allows it). */
static int uri_keeps(unsigned char c, int slash)
{
    if (c == '/')
        return slash;
    return c && c < 0x80 && (isalnum(c) || strchr("-._~!$&'()*+,;=:@", c));
}

static void uri_put(tbuf *b, const char *s, int slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (uri_keeps(*p, slash)) {
            tbuf_putc(b, (char)*p);
        } else {
            tbuf_putc(b, '%');
            tbuf_putc(b, hex[*p >> 4]);
            tbuf_putc(b, hex[*p & 15]);
        }
    }
}

char *mcp_doc_uri(const char *collection, const char *path)
{
    tbuf b = {0};
    tbuf_puts(&b, URI_SCHEME);
    uri_put(&b, collection, 0);
    tbuf_putc(&b, '/');
    uri_put(&b, path, 1);
    return tbuf_detach(&b);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decode [s, s+len) into b; 0 on a broken escape or a NUL. */
static int uri_decode(tbuf *b, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= len)
                return 0;
            int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return 0;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        tbuf_putc(b, c);
    }
    return 1;
}

char *mcp_doc_ref_from_uri(const char *uri)
{
    if (!str_starts_with(uri, URI_SCHEME))
        return NULL;
    const char *rest = uri + strlen(URI_SCHEME);
    size_t len = strcspn(rest, "?#");   /* a query or fragment is not part of the note */
    const char *slash = memchr(rest, '/', len);
    if (!slash || slash == rest || (size_t)(slash - rest) + 1 >= len)
        return NULL;
    tbuf coll = {0}, path = {0};
    int ok = uri_decode(&coll, rest, (size_t)(slash - rest)) &&
             uri_decode(&path, slash + 1, len - (size_t)(slash - rest) - 1) &&
             coll.len && path.len && !memchr(coll.data, '/', coll.len) &&
             str_utf8_invalid_at(coll.data, coll.len) == (size_t)-1 &&
             str_utf8_invalid_at(path.data, path.len) == (size_t)-1;
    char *out = NULL;
    if (ok) {
        tbuf_putc(&coll, '/');
        tbuf_append(&coll, path.data, path.len);
        out = tbuf_detach(&coll);
    }
    tbuf_free(&coll);
    tbuf_free(&path);
    return out;
}

int mcp_ref_collection_known(mcp_server *s, const char *ref)
{
    const char *slash = strchr(ref, '/');
    if (!slash)
        return 0;
    char *name = xstrndup(ref, (size_t)(slash - ref));
    int known = config_find_collection(api_config(s->a), name) != NULL;
    free(name);
    return known;
}

const char *mcp_ref_escapes(const char *ref)
{
    if (ref[0] == '/')
        return "an absolute path";
    if (ref[0] == '~')
        return "a path in a home folder";
    for (const char *p = ref; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "a '..' segment";
        p += n;
        if (*p == '/')
            p++;
    }
    return NULL;
}

/* ---- resources/list ---- */

/* A cursor is opaque to clients: base64url (no padding) of a version byte,
 * COLLECTION, a NUL, PATH and a checksum: the key of the last note of the
 * page before. Keyset paging: a page costs one index range read wherever it
 * starts, and notes added or removed between pages do not shift the rest. */
#define CURSOR_VERSION 1
#define CURSOR_MAX 8192   /* characters; a key is a collection name and a path */

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64url_encode(const char *s, size_t len)
{
    tbuf b = {0};
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < len ? p[i + 2] : 0);
        tbuf_putc(&b, b64url[v >> 18 & 63]);
        tbuf_putc(&b, b64url[v >> 12 & 63]);
        if (i + 1 < len)
            tbuf_putc(&b, b64url[v >> 6 & 63]);
        if (i + 2 < len)
            tbuf_putc(&b, b64url[v & 63]);
    }
    return tbuf_detach(&b);
}

/* Decode into b; 0 on any character outside the alphabet, a length no
 * encoder makes, or bits set past the end. */
static int b64url_decode(const char *s, size_t len, tbuf *b)
{
    if (len % 4 == 1)
        return 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *at = s[i] ? strchr(b64url, s[i]) : NULL;
        if (!at)
            return 0;
        acc = (acc << 6 | (unsigned)(at - b64url)) & 0xFFFFFF;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            tbuf_putc(b, (char)(acc >> bits & 0xFF));
        }
    }
    return (acc & ((1u << bits) - 1)) == 0;
}

/* FNV-1a: a cursor edited or cut short by a client fails it. (One forged
 * with a matching sum only names a position in the listing: harmless.) */
static uint32_t cursor_sum(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static char *cursor_make(const char *collection, const char *path)
{
    tbuf raw = {0};
    tbuf_putc(&raw, CURSOR_VERSION);
    tbuf_puts(&raw, collection);
    tbuf_putc(&raw, '\0');
    tbuf_puts(&raw, path);   /* bytes as indexed: a path need not be UTF-8 */
    uint32_t h = cursor_sum(raw.data, raw.len);
    for (int i = 0; i < 4; i++)
        tbuf_putc(&raw, (char)(h >> (8 * i) & 0xFF));
    char *out = b64url_encode(raw.data, raw.len);
    tbuf_free(&raw);
    return out;
}

/* The key a cursor names into *collection and *path (owned), or 0 when it is
 * not one this server made: the client passes nextCursor back unchanged. */
static int cursor_parse(const char *cursor, size_t len, char **collection, char **path)
{
    *collection = *path = NULL;
    if (len == 0 || len > CURSOR_MAX)
        return 0;
    tbuf raw = {0};
    int ok = b64url_decode(cursor, len, &raw) && raw.len >= 8 && raw.data[0] == CURSOR_VERSION;
    if (ok) {
        size_t body = raw.len - 4;
        uint32_t h = cursor_sum(raw.data, body), got = 0;
        for (int i = 0; i < 4; i++)
            got |= (uint32_t)(unsigned char)raw.data[body + i] << (8 * i);
        ok = h == got;
        raw.len = body;
    }
    const char *coll = ok ? raw.data + 1 : NULL, *end = raw.data + raw.len;
    const char *nul = ok ? memchr(coll, '\0', (size_t)(end - coll)) : NULL;
    ok = nul && nul > coll && nul + 1 < end && !memchr(nul + 1, '\0', (size_t)(end - nul - 1)) &&
         !memchr(coll, '/', (size_t)(nul - coll));
    if (ok) {
        *collection = xstrndup(coll, (size_t)(nul - coll));
        *path = xstrndup(nul + 1, (size_t)(end - nul - 1));
    }
    tbuf_free(&raw);
    return ok;
}

static json_t *resource_json(const store_doc *d)
{
    char *uri = mcp_doc_uri(d->collection, d->path);
    tbuf name = {0};
    tbuf_printf(&name, "%s/%s", d->collection, d->path);
    json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", name.data, "mimeType",
                          "text/plain", "description", "note (text with line numbers)");
    if (r && d->title && str_utf8_invalid_at(d->title, strlen(d->title)) == (size_t)-1)
        json_object_set_new(r, "title", json_string(d->title));
    tbuf_free(&name);
    free(uri);
    return r;
}

/* The index itself answers, through the api handle, also when a daemon
 * serves it: a page is one read of the docs table, and the daemon's wire
 * has no keyset listing to add anything to it. */
json_t *mcp_resources_list(mcp_server *s, json_t *params, mcp_error *err)
{
    json_t *cur = json_object_get(params, "cursor");
    char *after_coll = NULL, *after_path = NULL;
    if (cur && !json_is_null(cur) &&
        (!json_is_string(cur) || !cursor_parse(json_string_value(cur), json_string_length(cur),
                                               &after_coll, &after_path))) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "resources/list: invalid cursor (pass back the "
                    "nextCursor of the previous page unchanged, or no cursor for the first)");
        return NULL;
    }
    api_page page;
    trove_err rc = api_ls_page(s->a, after_coll, after_path, LIST_PAGE, &page);
    free(after_coll);
    free(after_path);
    if (rc == TROVE_ENOENT) {
        /* No index yet: nothing to list, which is not an error. */
        api_page_free(&page);
        return json_pack("{s:[]}", "resources");
    }
    if (rc) {
        char *why = mcp_agent_text(trove_errmsg());
        mcp_err_set(err, MCP_INTERNAL_ERROR, "resources/list: %s", why);
        free(why);
        api_page_free(&page);
        return NULL;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < page.n_docs; i++) {
        json_t *r = resource_json(&page.docs[i]);
        if (r)
            json_array_append_new(items, r);
    }
    json_t *out = json_pack("{s:o}", "resources", items);
    if (page.more && page.last_collection) {
        char *next = cursor_make(page.last_collection, page.last_path);
        if (next)
            json_object_set_new(out, "nextCursor", json_string(next));
        free(next);
    }
    api_page_free(&page);
    return out;
}

json_t *mcp_resources_templates(void)
{
    return json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "resourceTemplates",
                     "uriTemplate", MCP_NOTE_TEMPLATE, "name", "note",
                     "title", "Note by collection and path",
                     "description", "An indexed markdown note, its text with line numbers. PATH "
                     "is relative to the collection folder (see the `status` tool).",
                     "mimeType", "text/plain");
}

/* ---- resources/read ---- */

json_t *mcp_resources_read(mcp_server *s, json_t *params, mcp_error *err)
{
    json_t *u = json_object_get(params, "uri");
    if (!json_is_string(u)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "resources/read: 'uri' must be a string");
        return NULL;
    }
    const char *uri = json_string_value(u);
    char *ref = mcp_doc_ref_from_uri(uri);
    if (!ref) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "resources/read: '%.300s' is not "
                    "trove://COLLECTION/PATH", uri);
        return NULL;
    }
    const char *why = mcp_ref_escapes(ref);
    if (why) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "resources/read: refused '%.300s': %s; only notes "
                    "inside the indexed collections can be read", uri, why);
        free(ref);
        return NULL;
    }
    if (!mcp_ref_collection_known(s, ref)) {
        mcp_err_set(err, MCP_RESOURCE_NOT_FOUND, "resource not found: no collection named in "
                    "'%.300s' (see the status tool)", uri);
        err->data = json_pack("{s:s}", "uri", uri);
        free(ref);
        return NULL;
    }
    api_note n;
    trove_err rc = mcp_get(s, ref, 1, 0, &n);
    free(ref);
    if (rc == TROVE_OK && !n.docid[0]) {
        api_note_free(&n);
        rc = trove_fail(TROVE_ENOENT, "not an indexed note");
    }
    if (rc) {
        char *why = mcp_agent_text(trove_errmsg()[0] ? trove_errmsg() : trove_strerror(rc));
        mcp_err_set(err, rc == TROVE_ENOENT ? MCP_RESOURCE_NOT_FOUND
                         : rc == TROVE_EACCES || rc == TROVE_EINVAL ? MCP_INVALID_PARAMS
                                                                    : MCP_INTERNAL_ERROR,
                    "%s: %s", rc == TROVE_ENOENT ? "resource not found" : "resources/read", why);
        free(why);
        err->data = json_pack("{s:s}", "uri", uri);
        return NULL;
    }
    tbuf b = {0};
    const char *p = n.text, *end = n.text + n.len;
    for (long at = 1; p < end; at++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        tbuf_printf(&b, "%6ld  ", at);
        tbuf_append(&b, p, len);
        p += len;
    }
    api_note_free(&n);
    /* Invalid UTF-8 from disk: replace bad bytes so the reply stays JSON. */
    size_t bad;
    while (b.len && (bad = str_utf8_invalid_at(b.data, b.len)) != (size_t)-1)
        b.data[bad] = '?';
    json_t *text = json_stringn(b.data ? b.data : "", b.len);
    tbuf_free(&b);
    return json_pack("{s:[{s:s, s:s, s:o}]}", "contents", "uri", uri, "mimeType", "text/plain",
                     "text", text);
}
