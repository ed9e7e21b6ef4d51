/* Fuzz target: the MCP server's JSON-RPC handling (mcp_handle) over a real
 * three-note index. The input is handled whole, then line by line on one
 * session (as the stdio transport does); every reply must be JSON-RPC 2.0
 * JSON, and nothing outside the collection may ever be read. Each line is
 * also peeked as the HTTP transport does (method, _meta version, Mcp-Name
 * field) and decoded as an Mcp-Name header value. */
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "mcp/mcp.h"

static api *handle;
static mcp_server *server;
static char tmpl[] = "/tmp/trove-fuzz-mcp.XXXXXX";

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    mcp_server_free(server);
    api_close(handle);
    nftw(tmpl, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *dir, const char *rel, const char *text)
{
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static void setup(void)
{
    char vault[64], notes[80], index[64];
    if (!mkdtemp(tmpl))
        abort();
    snprintf(vault, sizeof vault, "%s/vault", tmpl);
    snprintf(notes, sizeof notes, "%s/notes", vault);
    snprintf(index, sizeof index, "%s/index.db", tmpl);
    if (mkdir(vault, 0700) != 0 || mkdir(notes, 0700) != 0)
        abort();
    write_file(vault, "alpha.md", "# Alpha\n\nline three\nline four\nline five");
    write_file(vault, "notes/beta.md", "---\ntags: [a, b/c]\n---\n# Beta\n\n[[alpha]] zebrafinch\n");
    write_file(vault, "notes/gamma.md", "# Gamma\n\n## Songs\n\nzebrafinch songs \xff\xfe bytes\n");
    write_file(tmpl, "secret.md", "# Secret\n\nNEVER-READ\n");
    config cfg = {0};
    config_add_collection(&cfg, "v", vault, NULL, 0, NULL, 0);
    if (api_open_config(index, &cfg, &handle) != TROVE_OK)
        abort();
    api_update_opts o;
    api_update_opts_init(&o);
    index_update_result res;
    if (api_update(handle, &o, &res) != TROVE_OK)
        abort();
    index_update_result_free(&res);
    server = mcp_server_new(handle, NULL);
    atexit(cleanup);
}

/* The secret beside the collection must never be read; a reply may still
 * echo the words of a request that names it (an error quoting the input). */
static const uint8_t *cur_in;
static size_t cur_len;

static int leaks_secret(const char *reply)
{
    return strstr(reply, "NEVER-READ") && !memmem(cur_in, cur_len, "NEVER-READ", 10);
}

static void check_reply(char *reply)
{
    if (!reply)
        return;
    json_error_t e;
    json_t *j = json_loads(reply, 0, &e);
    json_t *first = json_is_array(j) ? json_array_get(j, 0) : j;
    json_t *v = json_object_get(first, "jsonrpc");
    if (!j || !json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0 ||
        leaks_secret(reply)) {
        fprintf(stderr, "bad reply: %s\n", reply);
        abort();
    }
    json_decref(j);
    free(reply);
}

/* What the HTTP transport reads of a message before handling it. */
static void peek_line(const char *p, size_t n)
{
    mcp_peek pk;
    mcp_peek_message(p, n, &pk);
    if (pk.named && pk.name) {
        char *back = mcp_header_value_decode(pk.name);
        free(back);
    }
    mcp_peek_free(&pk);
    char *h = malloc(n + 1);
    if (!h)
        abort();
    memcpy(h, p, n);
    h[n] = '\0';
    free(mcp_header_value_decode(h));
    free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!server)
        setup();
    cur_in = data;
    cur_len = size;
    mcp_session ss = {0};
    check_reply(mcp_handle(server, &ss, (const char *)data, size));
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        check_reply(mcp_handle(server, &ss, p, n));
        peek_line(p, n);
        p += n + 1;
    }
    return 0;
}
