/* Fuzz target: lang_detect and lang_candidates read arbitrary bytes
 * (invalid UTF-8, unbalanced backticks, URLs cut short) within bounds, and
 * their answers agree: a detected language is always among the candidates
 * of the same text, and both are valid ids. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "text/lang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    int l = lang_detect(text, size);
    lang_set c = lang_candidates(text, size);
    if (l < LANG_UND || l >= LANG_COUNT || (c >> LANG_COUNT) != 0 || (c & 1)) {
        fprintf(stderr, "bad answer: lang %d, candidates %#x\n", l, (unsigned)c);
        abort();
    }
    if (l != LANG_UND && !(c & ((lang_set)1 << l))) {
        fprintf(stderr, "detected %s is not a candidate (%#x)\n", lang_code(l), (unsigned)c);
        abort();
    }
    if (lang_from_code(lang_code(l)) != l)
        abort();
    return 0;
}
