/* qexpand — generative query expansion's text side: the prompt of qmd's
 * query-expansion model (tobil/qmd-query-expansion-1.7B, a Qwen3-1.7B
 * fine-tune) and the parser of its output, typed lines
 *
 *     lex: keyword variant          (for the keyword channel)
 *     vec: natural-language variant (for the vector channel)
 *     hyde: a passage that would answer the query
 *
 * in any order, ending with the model's end of turn. The parser keeps the
 * first usable line of each type (a variant per type in the pipeline, see
 * api/api_query.c), counts lines of no known type as bad, and ignores
 * lines that repeat the query. It reads any bytes: a line is at most
 * QX_MAX_LINE bytes (longer ones are cut at a UTF-8 boundary), control
 * characters become spaces. The model runs elsewhere (embed_generate).
 *
 * Ownership: qx_result owns its strings (qx_result_free). */
#ifndef TROVE_QEXPAND_H
#define TROVE_QEXPAND_H

#include <stddef.h>

#include "util/buf.h"

#define QX_MAX_LINE 1024
/* Tokens the model may generate: qmd's own budget for its Qwen expansion
 * profile is 600; three short lines and a passage take about 150. */
#define QX_BUDGET 300

typedef enum qx_kind { QX_LEX = 0, QX_VEC = 1, QX_HYDE = 2, QX_KINDS = 3 } qx_kind;

/* "lex", "vec", "hyde" */
extern const char *const qx_kind_names[QX_KINDS];

typedef struct qx_result {
    char *first[QX_KINDS];   /* first usable line of each type, NULL if none */
    size_t n[QX_KINDS];      /* usable lines of each type */
    size_t n_bad;            /* non-empty lines of no known type, or empty after one */
    size_t n_same;           /* lines that repeat the query */
} qx_result;

/* The model's prompt for query (Qwen3 chat template, user turn only, as the
 * model was trained: "/no_think Expand this search query: QUERY"),
 * appended to out. */
void qx_prompt(const char *query, tbuf *out);

/* Parse text[0..len) generated for query; out is zeroed first. */
void qx_parse(const char *text, size_t len, const char *query, qx_result *out);

/* At least one lex: or vec: line: the model's output is worth searching. */
int qx_usable(const qx_result *r);

void qx_result_free(qx_result *r);

#endif
