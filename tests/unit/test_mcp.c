/* mcp: the texts agents read carry no CLI hints (mcp_agent_text). */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_hints_are_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
