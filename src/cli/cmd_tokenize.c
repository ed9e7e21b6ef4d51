/* trove tokenize [--query] [--no-stem] TEXT... | -
 *
 * Prints the terms the index makes of TEXT (or, with --query, what a search
 * for TEXT looks for), one per line: TOKEN<TAB>START<TAB>END, START and END
 * being byte offsets into TEXT (the arguments joined by single spaces, or
 * standard input for "-" or no TEXT). Index terms include the words inside
 * long Chinese words that share their position; query terms do not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "text/tok.h"
#include "util/buf.h"

static const char tokenize_help[] =
    "usage: trove tokenize [--query] [--no-stem] TEXT... | -\n"
    "Print the terms of TEXT as TOKEN<TAB>START<TAB>END (byte offsets into TEXT,\n"
    "the arguments joined by spaces; '-' or nothing reads standard input).\n"
    "  --query     terms of a search for TEXT (no words-inside-words)\n"
    "  --no-stem   do not stem English words\n";

static int print_token(void *ctx, const char *t, size_t len, size_t start, size_t end)
{
    (void)ctx;
    fwrite(t, 1, len, stdout);
    printf("\t%zu\t%zu\n", start, end);
    return 0;
}

static int read_stdin(tbuf *b)
{
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
        tbuf_append(b, chunk, n);
    return ferror(stdin) ? -1 : 0;
}

int cmd_tokenize(cli *c, int argc, char **argv)
{
    (void)c;
    tok_opts opts = {.stem = 1};
    tbuf text = {0};
    int n_text = 0, from_stdin = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(tokenize_help, stdout);
            tbuf_free(&text);
            return EXIT_OK;
        }
        if (strcmp(a, "--query") == 0) {
            opts.query = 1;
        } else if (strcmp(a, "--no-stem") == 0) {
            opts.stem = 0;
        } else if (strcmp(a, "-") == 0) {
            from_stdin = 1;
        } else if (a[0] == '-' && a[1] == '-' && a[2] != '\0') {
            tbuf_free(&text);
            return cli_usage("tokenize", "unknown option %s", a);
        } else {
            if (n_text++)
                tbuf_putc(&text, ' ');
            tbuf_puts(&text, a);
        }
    }
    if (from_stdin && n_text) {
        tbuf_free(&text);
        return cli_usage("tokenize", "give TEXT or '-', not both");
    }
    if (!n_text && read_stdin(&text) != 0) {
        tbuf_free(&text);
        fprintf(stderr, "trove: reading standard input failed\n");
        return EXIT_ERR;
    }
    tok_run(&opts, text.data, text.len, NULL, print_token);
    tbuf_free(&text);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERR;
}
