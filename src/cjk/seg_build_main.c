/* trove-seg-build — compile jieba's dictionary and HMM tables into the
 * binary dictionary trove maps at run time (see cjk/seg_dict.h).
 *
 *   trove-seg-build DICT_TXT HMM_DIR OUT [CHARS T2S]
 *   trove-seg-build --chars CHARS
 *
 * --chars writes the list of CJK ideographs; CHARS and T2S are that list
 * and its conversion by `opencc -c t2s.json` (line by line), which gives
 * the traditional -> simplified table the segmenter looks words up with.
 * DICT_TXT is jieba's dict.txt, HMM_DIR the folder with prob_start.py,
 * prob_trans.py and prob_emit.py (Debian: /usr/lib/python3/dist-packages/
 * jieba and .../jieba/finalseg). Run by the build; exit 1 with a message
 * naming the file on any error. */
#include <stdio.h>
#include <string.h>

#include "cjk/seg_dict.h"

int main(int argc, char **argv)
{
    trove_err rc;
    if (argc == 3 && strcmp(argv[1], "--chars") == 0) {
        rc = seg_dict_write_chars(argv[2]);
    } else if (argc == 4 || argc == 6) {
        rc = seg_dict_compile(argv[1], argv[2], argc == 6 ? argv[4] : NULL,
                              argc == 6 ? argv[5] : NULL, argv[3]);
    } else {
        fprintf(stderr, "usage: trove-seg-build DICT_TXT HMM_DIR OUT [CHARS T2S]\n"
                        "       trove-seg-build --chars CHARS\n");
        return 2;
    }
    if (rc) {
        fprintf(stderr, "trove-seg-build: %s\n", trove_errmsg());
        return 1;
    }
    return 0;
}
