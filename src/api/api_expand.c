/* api_expand — generative query expansion for api_query(): qmd's
 * query-expansion model (a Qwen3 decoder, run through embed_generate)
 * turns the query into lex:/vec:/hyde: lines (search/qexpand.h), and each
 * type's first line becomes one more variant of the query. Whatever goes
 * wrong — the model does not open or cannot generate, its output has no
 * lex: or vec: line (garbage, empty), or it hits its token budget (a cut
 * answer) — the deterministic expansion stands alone, and info->expand_note
 * says why: the model can add variants, never take the deterministic ones
 * away. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"
#include "search/qexpand.h"
#include "util/buf.h"
#include "util/mem.h"

static void note(api_query_info *info, const char *fmt, const char *a, const char *b)
{
    tbuf t = {0};
    tbuf_printf(&t, fmt, a, b);
    free(info->expand_note);
    info->expand_note = t.data;
}

/* Generate and parse; false (with the note set) when the output is unusable. */
static int run_model(embed_model *m, const char *query, api_query_info *info, qx_result *out)
{
    tbuf prompt = {0};
    qx_prompt(query, &prompt);
    embed_gen_opts go = {.max_tokens = QX_BUDGET};
    embed_gen_result r;
    trove_err e = embed_generate(m, tbuf_cstr(&prompt), &go, &r);
    tbuf_free(&prompt);
    int ok = 0;
    char budget[32];
    snprintf(budget, sizeof budget, "%d", QX_BUDGET);
    if (e) {
        note(info, "the expansion model failed (%s)%s; deterministic expansion only",
             trove_errmsg(), "");
    } else if (r.end == EMBED_GEN_BUDGET || r.end == EMBED_GEN_CONTEXT) {
        note(info, "the expansion model hit its %s-token budget%s; deterministic expansion only",
             budget, r.end == EMBED_GEN_CONTEXT ? " (context full)" : "");
    } else {
        qx_parse(r.text, r.len, query, out);
        if (!qx_usable(out)) {
            note(info, "the expansion model's output had no lex: or vec: line (%s)%s; "
                 "deterministic expansion only", r.len ? "unusable text" : "empty", "");
            qx_result_free(out);
        } else {
            ok = 1;
        }
    }
    embed_gen_result_free(&r);
    return ok;
}

static trove_err open_generator(const char *path, int param, embed_model **out)
{
    (void)param;
    trove_err err = TROVE_OK;
    *out = embed_open(path, NULL, &err);
    return *out ? TROVE_OK : err ? err : TROVE_EIO;
}

int api_expand_model(api *a, const char *path, const char *query, api_query_info *info,
                     qx_result *out)
{
    memset(out, 0, sizeof *out);
    /* Kept open with the handle (a daemon's handles share one copy): the
     * file is opened once, not for every query. */
    embed_model *m;
    if (api_model_get(a, APIM_GENERATE, path, 0, 0, open_generator, &m) != TROVE_OK) {
        note(info, "the expansion model could not be opened (%s)%s; deterministic expansion only",
             trove_errmsg(), "");
        return 0;
    }
    pthread_mutex_t *lock = api_gm_lock(a);
    if (lock)
        pthread_mutex_lock(lock);
    int ok = run_model(m, query, info, out);
    if (lock)
        pthread_mutex_unlock(lock);
    if (ok) {
        tbuf t = {0};
        tbuf_printf(&t, "model variants:");
        for (int k = 0; k < QX_KINDS; k++)
            if (out->first[k])
                tbuf_printf(&t, " %s (%zu line%s)", qx_kind_names[k], out->n[k],
                            out->n[k] == 1 ? "" : "s");
        if (out->n_bad)
            tbuf_printf(&t, "; %zu unusable line%s ignored", out->n_bad, out->n_bad == 1 ? "" : "s");
        free(info->expand_note);
        info->expand_note = t.data;
    }
    return ok;
}
