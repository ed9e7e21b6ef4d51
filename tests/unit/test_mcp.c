/* mcp: the texts agents read carry no CLI hints (mcp_agent_text); the
 * 2026-07-28 pieces a transport reads before handling a message (Mcp-Name
 * header values, mcp_peek_message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_int.h"

static void agent(const char *in, const char *want)
{
    char *got = mcp_agent_text(in);
    assert_string_equal(got, want);
    free(got);
}

static void test_cli_hints_are_cut(void **state)
{
    (void)state;
    agent("no collection named 'x' (see `trove collection list`)", "no collection named 'x'");
    agent("/i.db: no index yet; run `trove update` to index the 2 collections in the config",
          "/i.db: no index yet");
    agent("/i.db: the index is damaged (bad page); rebuild it with `trove update --rebuild`, "
          "or delete the file and run `trove update`", "/i.db: the index is damaged (bad page)");
    agent("n/x: not a file (use `trove ls n/x` for a folder)", "n/x: not a file");
    agent("model m is not installed: run `trove model pull m` (downloads 30 MB)",
          "model m is not installed (downloads 30 MB)");
    agent("vector segment 3 is damaged (crc); run `trove embed -f`; then search",
          "vector segment 3 is damaged (crc); then search");
    /* what is not a CLI hint stays */
    agent("use `search` instead; 'trove' is the name", "use `search` instead; 'trove' is the name");
    agent("", "");
    agent(NULL, "");
    agent("`trove update` first", "");
}

static void header(const char *in, const char *want)
{
    char *got = mcp_header_value_decode(in);
    if (want)
        assert_string_equal(got, want);
    else
        assert_null(got);
    free(got);
}

static void test_header_values_decode(void **state)
{
    (void)state;
    header("status", "status");
    header("=?base64?c3RhdHVz?=", "status");
    header("=?base64?4pyT?=", "\xE2\x9C\x93");   /* U+2713 */
    header("=?base64?dHJvdmU6Ly92L2EubWQ=?=", "trove://v/a.md");
    header("=?base64?" "?=", "");   /* split: "??=" is a trigraph */
    header("=?base64?!!!?=", NULL);   /* not base64 */
    header("=?base64?AA==?=", NULL);  /* a NUL */
    header("=?base64?", "=?base64?"); /* no suffix: a plain value */
}

static void test_peek(void **state)
{
    (void)state;
    static const char msg[] =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
        "\"trove://v/a.md\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
        "\"2026-07-28\"}}}";
    mcp_peek pk;
    mcp_peek_message(msg, sizeof msg - 1, &pk);
    assert_int_equal(pk.request, 1);
    assert_string_equal(pk.method, "resources/read");
    assert_string_equal(pk.version, "2026-07-28");
    assert_int_equal(pk.named, 1);
    assert_string_equal(pk.name, "trove://v/a.md");
    mcp_peek_free(&pk);
    static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}";
    mcp_peek_message(note, sizeof note - 1, &pk);
    assert_int_equal(pk.request, 0);
    assert_int_equal(pk.named, 0);
    assert_string_equal(pk.version, "");
    mcp_peek_free(&pk);
    mcp_peek_message("[1", 2, &pk);
    assert_string_equal(pk.method, "");
    mcp_peek_free(&pk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_hints_are_cut),
        cmocka_unit_test(test_header_values_decode),
        cmocka_unit_test(test_peek),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
