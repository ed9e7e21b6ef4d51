/* mcp over stdio: one JSON-RPC message per line in, one reply per line out
 * (the MCP stdio transport). Lines are read with a bounded buffer: an
 * oversized one is drained to its newline and answered with an error, and
 * the server goes on with the next line. */
#include "mcp/mcp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fsutil.h"
#include "util/mem.h"


static int send_line(int fd, char *reply)
{
    if (!reply)
        return 0;
    int rc = fs_write_all(fd, reply, strlen(reply));
    if (rc == 0)
        rc = fs_write_all(fd, "\n", 1);
    free(reply);
    return rc;
}

static int blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(" \t\r", p[i]))
            return 0;
    return 1;
}

int mcp_stdio_serve(mcp_server *s, int in_fd, int out_fd)
{
    mcp_session ss = {0};
    size_t cap = 64 * 1024, len = 0;
    char *buf = xmalloc(cap);
    int oversized = 0;   /* draining a line that went past the limit */
    int rc = 0;
    for (;;) {
        if (len == cap) {
            if (cap < MCP_MAX_MESSAGE + 1) {
                cap = cap * 2 > MCP_MAX_MESSAGE + 1 ? MCP_MAX_MESSAGE + 1 : cap * 2;
                buf = xrealloc(buf, cap);
            } else {
                /* No newline within the limit: drop what we have. */
                oversized = 1;
                len = 0;
            }
        }
        ssize_t n = read(in_fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t scan = len;
        len += (size_t)n;
        size_t start = 0;
        for (size_t i = scan; i < len; i++) {
            if (buf[i] != '\n')
                continue;
            if (oversized) {
                char m[96];
                snprintf(m, sizeof m, "invalid request: message larger than %d bytes",
                         MCP_MAX_MESSAGE);
                rc = send_line(out_fd, mcp_error_reply(MCP_INVALID_REQUEST, m));
                oversized = 0;
            } else if (!blank(buf + start, i - start)) {
                rc = send_line(out_fd, mcp_handle(s, &ss, buf + start, i - start));
            }
            if (rc)
                goto done;
            start = i + 1;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
    /* A last message without a newline still counts. */
    if (!oversized && len && !blank(buf, len))
        rc = send_line(out_fd, mcp_handle(s, &ss, buf, len));
done:
    free(buf);
    return rc;
}
