/* args — the option parsing every command shares (see cli.h): "--name
 * VALUE" / "--name=VALUE" / "-nVALUE", positional-only commands, whole
 * numbers, and the usage error they all print. Kept apart from main.c so
 * the unit tests can link it without the commands. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/str.h"

int cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "trove %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nrun `trove %s --help` for usage\n", cmd);
    va_end(ap);
    return EXIT_USAGE;
}

int cli_opt_positive(const char *value, long *out)
{
    return str_to_long(value, 1, LONG_MAX, out);
}

int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t len = strlen(name);
    const char *arg = argv[*i];
    if (strncmp(arg, name, len) != 0)
        return 0;
    if (arg[len] == '=') {
        *value = arg + len + 1;
        return 1;
    }
    if (arg[len] != '\0') {
        if (len != 2 || name[1] == '-')
            return 0;
        *value = arg + len;   /* a short option's attached value: -n5, -cnotes */
        return 1;
    }
    if (*i + 1 >= argc) {
        *value = NULL;  /* caller reports the missing value */
        return 1;
    }
    *value = argv[++*i];
    return 1;
}

int cli_positionals(const char *cmd, const char *help, int argc, char **argv, int from, int *json,
                    const char **pos, size_t cap, size_t *n)
{
    int options = 1;
    *n = 0;
    for (int i = from; i < argc; i++) {
        const char *arg = argv[i];
        if (options && strcmp(arg, "--") == 0) {
            options = 0;
        } else if (options && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            fputs(help, stdout);
            return EXIT_OK;
        } else if (options && json && strcmp(arg, "--json") == 0) {
            *json = 1;
        } else if (options && arg[0] == '-' && (arg[1] == '-' || isalpha((unsigned char)arg[1]))) {
            return cli_usage(cmd, "unknown option %s", arg);
        } else if (*n < cap) {
            pos[(*n)++] = arg;
        } else {
            return cli_usage(cmd, "unexpected argument '%s'", arg);
        }
    }
    return -1;
}
