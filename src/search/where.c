#include "search/where.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text/date.h"
#include "util/mem.h"

static const char *const op_names[] = {
    [WHERE_EQ] = "=", [WHERE_NE] = "!=", [WHERE_LT] = "<", [WHERE_LE] = "<=",
    [WHERE_GT] = ">", [WHERE_GE] = ">=", [WHERE_GLOB] = "~=", [WHERE_IN] = "in",
    [WHERE_NOT_IN] = "not in", [WHERE_EXISTS] = "exists", [WHERE_MISSING] = "!exists",
};

const char *where_op_name(where_op op)
{
    return op_names[op];
}

/* Operators spelt with symbols, longest first so "<=" is not read as "<". */
static const struct { const char *s; where_op op; } symbols[] = {
    {"!=", WHERE_NE}, {">=", WHERE_GE}, {"<=", WHERE_LE}, {"~=", WHERE_GLOB},
    {"=", WHERE_EQ}, {"<", WHERE_LT}, {">", WHERE_GT},
};

typedef struct span {
    const char *s;
    size_t n;
} span;

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

static span trim(span x)
{
    while (x.n && is_space(*x.s))
        x.s++, x.n--;
    while (x.n && is_space(x.s[x.n - 1]))
        x.n--;
    return x;
}

static int key_char(char c)
{
    return !(is_space(c) || c == '=' || c == '!' || c == '<' || c == '>' || c == '~' ||
             c == '(' || c == ')' || c == ',' || c == '"' || c == '\'' || (unsigned char)c < 0x20);
}

static char *lower_dup(span x)
{
    char *k = xstrndup(x.s, x.n);
    for (char *p = k; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return k;
}

static trove_err fail(const char *expr, const char *why)
{
    return trove_fail(TROVE_EUSAGE, "--where %s: %s", expr, why);
}

/* An unquoted value's type, as YAML would read it. */
static void type_value(where_value *v)
{
    if (v->quoted)
        return;
    const char *t = v->text;
    size_t n = strlen(t), used;
    char *end;
    double x = strtod(t, &end);
    if (n && end == t + n && isfinite(x) && strspn(t, "+-.0123456789eE") == n) {
        v->is_number = 1;
        v->number = x;
    } else if (!strcasecmp(t, "true") || !strcasecmp(t, "false")) {
        v->is_bool = 1;
        v->boolean = t[0] == 't' || t[0] == 'T';
    }
    int64_t day;
    if (date_read_day(t, n, &day, &used) && used == n) {
        v->is_number = 0;   /* 20240501 is a date before it is a number */
        v->is_date = 1;
        v->date = (double)day;
        v->date_end = (double)day + (n == 8 && t[4] == '-' ? 7 : 1);
    }
}

/* One value: 'text', "text" or bare text up to the end of x. */
static trove_err read_value(const char *expr, span x, where_value *v)
{
    x = trim(x);
    if (x.n == 0)
        return fail(expr, "a value is missing");
    if (x.s[0] == '"' || x.s[0] == '\'') {
        if (x.n < 2 || x.s[x.n - 1] != x.s[0])
            return fail(expr, "a quoted value is not closed");
        if (memchr(x.s + 1, x.s[0], x.n - 2))
            return fail(expr, "a quote inside a quoted value");
        v->quoted = 1;
        v->text = xstrndup(x.s + 1, x.n - 2);
    } else {
        for (size_t i = 0; i < x.n; i++)
            if ((unsigned char)x.s[i] < 0x20)
                return fail(expr, "a control character in the value");
        v->text = xstrndup(x.s, x.n);
    }
    type_value(v);
    return TROVE_OK;
}

/* "(a, 'b, c', d)": the values of in / not in. */
static trove_err read_list(const char *expr, span x, where_cond *w)
{
    x = trim(x);
    if (x.n < 2 || x.s[0] != '(' || x.s[x.n - 1] != ')')
        return fail(expr, "`in` takes a list in parentheses: KEY in (a, b)");
    const char *p = x.s + 1, *end = x.s + x.n - 1;
    w->values = xcalloc(WHERE_MAX_VALUES, sizeof *w->values);
    while (p <= end) {
        const char *q = p;
        char quote = 0;
        while (q < end && (quote || *q != ',')) {
            if (*q == '"' || *q == '\'')
                quote = quote == *q ? 0 : quote ? quote : *q;
            q++;
        }
        if (w->n_values == WHERE_MAX_VALUES)
            return fail(expr, "more than 64 values in the list");
        trove_err rc = read_value(expr, (span){p, (size_t)(q - p)}, &w->values[w->n_values]);
        if (rc)
            return rc;
        w->n_values++;
        p = q + 1;
    }
    return TROVE_OK;
}

/* exists(KEY) and !exists(KEY). */
static int read_exists(span x, where_cond *w)
{
    int neg = x.n && x.s[0] == '!';
    span r = neg ? trim((span){x.s + 1, x.n - 1}) : x;
    if (r.n < 8 || strncasecmp(r.s, "exists", 6) != 0)
        return 0;
    span in = trim((span){r.s + 6, r.n - 6});
    if (in.n < 2 || in.s[0] != '(' || in.s[in.n - 1] != ')')
        return 0;
    span key = trim((span){in.s + 1, in.n - 2});
    for (size_t i = 0; i < key.n; i++)
        if (!key_char(key.s[i]))
            return 0;
    if (key.n == 0)
        return 0;
    w->key = lower_dup(key);
    w->op = neg ? WHERE_MISSING : WHERE_EXISTS;
    return 1;
}

static int word_at(span x, size_t i, const char *word)
{
    size_t n = strlen(word);
    return i + n <= x.n && strncasecmp(x.s + i, word, n) == 0 &&
           (i + n == x.n || is_space(x.s[i + n]) || x.s[i + n] == '(');
}

/* The operator after the key at x.s[i]: its op and length, 0 if none. */
static size_t read_op(span x, size_t i, where_op *op)
{
    for (size_t k = 0; k < sizeof symbols / sizeof *symbols; k++) {
        size_t n = strlen(symbols[k].s);
        if (i + n <= x.n && memcmp(x.s + i, symbols[k].s, n) == 0) {
            *op = symbols[k].op;
            return n;
        }
    }
    if (word_at(x, i, "in")) {
        *op = WHERE_IN;
        return 2;
    }
    if (word_at(x, i, "not")) {
        size_t j = i + 3;
        while (j < x.n && is_space(x.s[j]))
            j++;
        if (word_at(x, j, "in")) {
            *op = WHERE_NOT_IN;
            return j + 2 - i;
        }
    }
    return 0;
}

static trove_err parse(const char *expr, where_cond *w)
{
    size_t len = strlen(expr);
    if (len > WHERE_MAX_LEN)
        return trove_fail(TROVE_EUSAGE, "--where: a condition longer than %d bytes",
                          WHERE_MAX_LEN);
    span x = trim((span){expr, len});
    if (x.n == 0)
        return trove_fail(TROVE_EUSAGE, "--where: an empty condition; write KEY=VALUE, "
                          "KEY>=VALUE, KEY in (A, B) or exists(KEY)");
    if (read_exists(x, w))
        return TROVE_OK;
    size_t i = 0;
    while (i < x.n && key_char(x.s[i]))
        i++;
    if (i == 0)
        return fail(expr, "no field name before the operator");
    w->key = lower_dup((span){x.s, i});
    while (i < x.n && is_space(x.s[i]))
        i++;
    size_t n = read_op(x, i, &w->op);
    if (n == 0)
        return fail(expr, "no operator; use =, !=, <, <=, >, >=, ~= (glob), in (A, B), "
                          "not in (A, B) or exists(KEY)");
    span rest = {x.s + i + n, x.n - i - n};
    if (w->op == WHERE_IN || w->op == WHERE_NOT_IN)
        return read_list(expr, rest, w);
    w->values = xcalloc(1, sizeof *w->values);
    trove_err rc = read_value(expr, rest, &w->values[0]);
    if (rc)
        return rc;
    w->n_values = 1;
    const where_value *v = &w->values[0];
    if ((w->op == WHERE_LT || w->op == WHERE_LE || w->op == WHERE_GT || w->op == WHERE_GE) &&
        !v->is_number && !v->is_date)
        return trove_fail(TROVE_EUSAGE, "--where %s: `%s` compares numbers and dates, and "
                          "`%s` is neither (a date is YYYY-MM-DD)", expr, op_names[w->op], v->text);
    return TROVE_OK;
}

trove_err where_parse(const char *expr, where_cond *out)
{
    memset(out, 0, sizeof *out);
    trove_err rc = parse(expr ? expr : "", out);
    if (rc)
        where_cond_free(out);
    return rc;
}

void where_cond_free(where_cond *w)
{
    free(w->key);
    for (size_t i = 0; i < w->n_values; i++)
        free(w->values[i].text);
    free(w->values);
    memset(w, 0, sizeof *w);
}
