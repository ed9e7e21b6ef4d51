/* mcp resources: every indexed note is trove://COLLECTION/PATH; reading one
 * returns its text with line numbers. Also the doc_uri spelling shared with
 * the tools. */
#include "mcp/mcp_int.h"

#include <ctype.h>
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

json_t *mcp_resources_list(mcp_server *s, json_t *params, mcp_error *err)
{
    json_t *cur = json_object_get(params, "cursor");
    long from = 0;
    if (cur && !json_is_null(cur) &&
        (!json_is_string(cur) || !str_to_long(json_string_value(cur), 0, 1L << 40, &from))) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "resources/list: invalid cursor (pass back the "
                    "nextCursor of the previous page)");
        return NULL;
    }
    api_listing cols;
    trove_err rc = mcp_ls(s, NULL, &cols);
    if (rc == TROVE_ENOENT) {
        /* No index yet: nothing to list, which is not an error. */
        return json_pack("{s:[]}", "resources");
    }
    if (rc) {
        mcp_err_set(err, MCP_INTERNAL_ERROR, "resources/list: %s", trove_errmsg());
        return NULL;
    }
    json_t *items = json_array();
    long at = 0;
    int more = 0;
    for (size_t c = 0; c < cols.n_collections && !more; c++) {
        api_listing docs;
        if (mcp_ls(s, cols.collections[c].name, &docs) != TROVE_OK)
            continue;
        for (size_t i = 0; i < docs.n_docs; i++, at++) {
            if (at < from)
                continue;
            if (at >= from + LIST_PAGE) {
                more = 1;
                break;
            }
            const store_doc *d = &docs.docs[i];
            char *uri = mcp_doc_uri(d->collection, d->path);
            tbuf name = {0};
            tbuf_printf(&name, "%s/%s", d->collection, d->path);
            json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", name.data,
                                  "mimeType", "text/plain", "description",
                                  "note (text with line numbers)");
            if (d->title && str_utf8_invalid_at(d->title, strlen(d->title)) == (size_t)-1)
                json_object_set_new(r, "title", json_string(d->title));
            if (r)
                json_array_append_new(items, r);
            tbuf_free(&name);
            free(uri);
        }
        api_listing_free(&docs);
    }
    api_listing_free(&cols);
    json_t *out = json_pack("{s:o}", "resources", items);
    if (more) {
        char next[32];
        snprintf(next, sizeof next, "%ld", from + LIST_PAGE);
        json_object_set_new(out, "nextCursor", json_string(next));
    }
    return out;
}

json_t *mcp_resources_templates(void)
{
    return json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "resourceTemplates",
                     "uriTemplate", "trove://{collection}/{+path}", "name", "note",
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
        mcp_err_set(err, rc == TROVE_ENOENT ? MCP_RESOURCE_NOT_FOUND
                         : rc == TROVE_EACCES || rc == TROVE_EINVAL ? MCP_INVALID_PARAMS
                                                                    : MCP_INTERNAL_ERROR,
                    "%s: %s", rc == TROVE_ENOENT ? "resource not found" : "resources/read",
                    trove_errmsg()[0] ? trove_errmsg() : trove_strerror(rc));
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
