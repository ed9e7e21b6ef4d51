/* trove-seg-build — compile jieba's dictionary and HMM tables into the
 * binary dictionary trove maps at run time (see cjk/seg_dict.h).
 *
 *   trove-seg-build DICT_TXT HMM_DIR OUT
 *
 * DICT_TXT is jieba's dict.txt, HMM_DIR the folder with prob_start.py,
 * prob_trans.py and prob_emit.py (Debian: /usr/lib/python3/dist-packages/
 * jieba and .../jieba/finalseg). Run by the build; exit 1 with a message
 * naming the file on any error. */
#include <stdio.h>

#include "cjk/seg_dict.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: trove-seg-build DICT_TXT HMM_DIR OUT\n");
        return 2;
    }
    trove_err rc = seg_dict_compile(argv[1], argv[2], argv[3]);
    if (rc) {
        fprintf(stderr, "trove-seg-build: %s\n", trove_errmsg());
        return 1;
    }
    return 0;
}
