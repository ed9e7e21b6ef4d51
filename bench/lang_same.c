/* lang_same -- whether lang_detect and lang_candidates answer as an older
 * lang.c did (session 36, w-idx7): the old file is compiled beside with
 * its names prefixed old_ (bench/lang_same.sh does it), and both answer
 * every file named on stdin (and three random suffixes of each), random
 * texts of code points from the scripts lang.c tells apart with stray
 * bytes, spaces and backticks, and every code point U+0080-10FF alone and
 * inside a word. Prints "N texts, M differ"; exit 1 when any differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include "text/lang.h"
int old_lang_detect(const char *t, size_t n);
lang_set old_lang_candidates(const char *t, size_t n);
static unsigned long long N, bad;
static void one(const char *t, size_t n) {
  N++;
  if (lang_detect(t, n) != old_lang_detect(t, n) || lang_candidates(t, n) != old_lang_candidates(t, n)) {
    if (bad++ < 5) fprintf(stderr, "DIFF len %zu: %.60s\n", n, t);
  }
}
static unsigned rs = 12345; static unsigned rnd(void){ rs = rs*1103515245u+12345u; return rs>>8; }
int main(int argc, char **argv) {
  /* the files named on stdin, one path a line */
  char path[4096]; static char buf[1<<20];
  while (fgets(path, sizeof path, stdin)) {
    path[strcspn(path, "\n")] = 0;
    FILE *f = fopen(path, "rb"); if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
    one(buf, n);
    for (int k = 0; k < 3 && n; k++) { size_t o = rnd() % n; one(buf + o, n - o); }
  }
  /* random texts of code points from interesting ranges, valid and invalid bytes */
  static const int ranges[][2] = {{0x20,0x7f},{0x80,0x250},{0x370,0x530},{0x590,0x700},{0x900,0x980},{0xB80,0xC00},{0xE00,0xE80},{0x0,0x1000},{0x1000,0x2000},{0x3040,0x3100},{0x4E00,0x4F00},{0xAC00,0xAD00},{0x1E00,0x1F00}};
  int nr = sizeof ranges / sizeof *ranges;
  long iters = argc > 1 ? atol(argv[1]) : 300000;
  for (long it = 0; it < iters; it++) {
    size_t n = 0; int len = rnd() % 80;
    for (int k = 0; k < len && n < 400; k++) {
      unsigned r = rnd() % 20;
      if (r == 0) { buf[n++] = (char)(rnd() & 0xff); continue; }
      if (r == 1) { buf[n++] = ' '; continue; }
      if (r == 2) { buf[n++] = '`'; continue; }
      int a = ranges[rnd() % nr][0], b = ranges[rnd() % nr][1]; (void)b;
      int ri = rnd() % nr; a = ranges[ri][0]; b = ranges[ri][1];
      unsigned cp = a + rnd() % (b - a);
      if (cp < 0x80) buf[n++] = cp;
      else if (cp < 0x800) { buf[n++] = 0xC0 | (cp >> 6); buf[n++] = 0x80 | (cp & 0x3F); }
      else { buf[n++] = 0xE0 | (cp >> 12); buf[n++] = 0x80 | ((cp >> 6) & 0x3F); buf[n++] = 0x80 | (cp & 0x3F); }
    }
    buf[n] = 0; one(buf, n);
  }
  /* every code point below 0x1100 alone, as a word, and in a word */
  for (int cp = 0x80; cp < 0x1100; cp++) {
    char w[32]; size_t n = 0;
    w[n++]='d'; w[n++]='e';
    if (cp < 0x800) { w[n++] = 0xC0 | (cp >> 6); w[n++] = 0x80 | (cp & 0x3F); }
    else { w[n++] = 0xE0 | (cp >> 12); w[n++] = 0x80 | ((cp >> 6) & 0x3F); w[n++] = 0x80 | (cp & 0x3F); }
    w[n++]=' '; w[n]=0; one(w, n); one(w+2, n-2);
  }
  printf("%llu texts, %llu differ\n", N, bad);
  return bad != 0;
}
