/* mcp prompts and completion: the slash commands a client offers its user
 * (search my notes, answer from my notes with citations, bring a note into
 * context) and `completion/complete` for their arguments and for the
 * resource template trove://{collection}/{+path}. Read-only, through the
 * same read calls as the tools (mcp_search, mcp_get, mcp_ls). */
#include "mcp/mcp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

/* Passages the answer prompt brings, and how much of each. */
#define ASK_RESULTS 5
#define ASK_EXCERPT 1500
/* The note prompts' budget (characters of note text), and the links the
 * note_links prompt lists of each kind at most. */
#define NOTE_BUDGET 20000
#define NOTE_LINKS 50
/* completion/complete: at most this many values (the protocol's limit). */
#define COMPLETE_MAX 100

typedef struct prompt_arg {
    const char *name, *desc;
    int required;
} prompt_arg;

typedef json_t *(*prompt_fn)(mcp_server *, const char *arg, mcp_error *);

typedef struct prompt_def {
    const char *name, *title, *desc;
    prompt_arg arg;          /* each prompt takes one argument */
    prompt_fn fn;
} prompt_def;

static json_t *user_text(const char *text)
{
    return json_pack("{s:s, s:{s:s, s:s}}", "role", "user", "content", "type", "text", "text",
                     text);
}

/* A passage of a note as an embedded resource: the model sees where it is
 * from (uri, lines) and can cite it. */
static json_t *user_resource(const char *uri, const char *text)
{
    return json_pack("{s:s, s:{s:s, s:{s:s, s:s, s:s}}}", "role", "user", "content", "type",
                     "resource", "resource", "uri", uri, "mimeType", "text/markdown", "text",
                     text);
}

static json_t *p_search(mcp_server *s, const char *query, mcp_error *err)
{
    (void)s, (void)err;
    tbuf b = {0};
    tbuf_printf(&b, "Search my notes for: %s\n\nUse the trove `search` tool (or `query` for a "
                "question whose answer `search` ranks low), read the best hits with `get`, "
                "and tell me what you found. Cite each note as doc_uri:start_line-end_line.",
                query);
    json_t *msgs = json_pack("[o]", user_text(b.data));
    tbuf_free(&b);
    return json_pack("{s:s, s:o}", "description", "search the notes", "messages", msgs);
}

/* The passage of result r: its chunk's bytes, cut on a character boundary. */
static char *passage(const search_result *r)
{
    if (!r->body)
        return xstrdup("");
    size_t start = r->start_byte > 0 ? (size_t)r->start_byte : 0;
    size_t end = r->end_byte > 0 ? (size_t)r->end_byte : r->body_len;
    if (end > r->body_len)
        end = r->body_len;
    if (start > end)
        start = end;
    if (end - start > ASK_EXCERPT) {
        end = start + ASK_EXCERPT;
        while (end > start && ((unsigned char)r->body[end] & 0xC0) == 0x80)
            end--;
    }
    char *t = xmalloc(end - start + 1);
    memcpy(t, r->body + start, end - start);
    t[end - start] = '\0';
    return t;
}

static json_t *p_ask(mcp_server *s, const char *question, mcp_error *err)
{
    (void)err;
    api_search_opts o;
    api_search_opts_init(&o);
    o.search.query = question;
    o.search.limit = ASK_RESULTS;
    o.model = s->model;
    o.with_body = 1;
    search_results res = {0};
    trove_err rc = mcp_search(s, &o, &res);
    json_t *msgs = json_array();
    tbuf b = {0};
    tbuf_printf(&b, "What do my notes say about: %s\n\n", question);
    if (rc) {
        char *why = mcp_agent_text(trove_errmsg());
        tbuf_printf(&b, "(The notes could not be searched: %s.)", why);
        free(why);
    } else if (!res.n) {
        tbuf_puts(&b, "The notes have no passage that matches. Say so; do not answer from "
                      "elsewhere.");
    } else {
        tbuf_printf(&b, "Answer only from the %zu passages of my notes that follow. Cite every "
                    "claim as [doc_uri:start_line-end_line]; if the passages do not answer "
                    "it, say so (the `search` and `get` tools find more).", res.n);
    }
    json_array_append_new(msgs, user_text(b.data));
    tbuf_free(&b);
    for (size_t i = 0; !rc && i < res.n; i++) {
        const search_result *r = &res.items[i];
        char *uri = mcp_doc_uri(r->collection, r->path);
        char *text = passage(r);
        tbuf t = {0};
        tbuf_printf(&t, "%s:%d-%d (%s)\n\n%s", uri, r->line_start, r->line_end,
                    r->title ? r->title : r->path, text);
        json_array_append_new(msgs, user_resource(uri, t.data));
        tbuf_free(&t);
        free(text);
        free(uri);
    }
    search_results_free(&res);
    return json_pack("{s:s, s:o}", "description", "passages of the notes, to cite",
                     "messages", msgs);
}

/* The indexed note the prompt argument `path` names, into *n; 0 with *err
 * set when there is none (or the argument is not a note reference). */
static int note_arg(mcp_server *s, const char *path, api_note *n, mcp_error *err)
{
    char *ref = str_starts_with(path, "trove://") ? mcp_doc_ref_from_uri(path) : xstrdup(path);
    const char *why = !ref ? "not a trove://COLLECTION/PATH URI"
                      : ref[0] == '#' ? NULL : mcp_ref_escapes(ref);
    if (why) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "prompts/get: 'path' %.200s: %s", path, why);
        free(ref);
        return 0;
    }
    trove_err rc = mcp_get(s, ref, 0, 0, n);
    free(ref);
    if (rc || !n->docid[0]) {
        char *t = mcp_agent_text(rc ? trove_errmsg() : "not an indexed note");
        mcp_err_set(err, MCP_INVALID_PARAMS, "prompts/get: no note '%.200s': %s", path, t);
        free(t);
        if (!rc)
            api_note_free(n);
        return 0;
    }
    return 1;
}

/* The note as two messages, what it is and its text (cut at NOTE_BUDGET),
 * appended to msgs; `also`: what else follows, for the first message. */
static void note_messages(const api_note *n, const char *also, json_t *msgs)
{
    char *uri = mcp_doc_uri(n->collection, n->path);
    size_t keep = n->len;
    int cut = keep > NOTE_BUDGET;
    if (cut) {
        keep = NOTE_BUDGET;
        while (keep > 0 && n->text[keep - 1] != '\n')
            keep--;
    }
    tbuf t = {0};
    tbuf_append(&t, n->text, keep);
    tbuf_puts(&t, "");
    tbuf b = {0};
    tbuf_printf(&b, "Here is my note %s (%s, %ld lines)%s%s. Use it as context for what I ask "
                "next, and cite it as %s:LINE.", uri, n->title ? n->title : n->path, n->n_lines,
                cut ? "; it was cut at 20000 characters: read the rest with the `get` tool"
                    : "", also ? also : "", uri);
    json_array_append_new(msgs, user_text(b.data));
    json_array_append_new(msgs, user_resource(uri, t.data));
    tbuf_free(&b);
    tbuf_free(&t);
    free(uri);
}

static json_t *p_note(mcp_server *s, const char *path, mcp_error *err)
{
    api_note n;
    if (!note_arg(s, path, &n, err))
        return NULL;
    json_t *msgs = json_array();
    note_messages(&n, NULL, msgs);
    api_note_free(&n);
    return json_pack("{s:s, s:o}", "description", "one note, whole", "messages", msgs);
}

/* One link as the model reads it: where it stands and the line. */
static void link_line(tbuf *b, const api_link *l, int from_note)
{
    if (l->note.collection && l->note.path) {
        char *uri = mcp_doc_uri(l->note.collection, l->note.path);
        tbuf_printf(b, "- %s%s%d (%s)", uri, from_note ? ":" : " via line ", l->line,
                    l->note.title ? l->note.title : l->note.path);
        free(uri);
    } else {
        tbuf_printf(b, "- [[%s]] (no note) via line %d", l->target, l->line);
    }
    tbuf_printf(b, ": %s\n", l->text ? l->text : "");
}

static json_t *p_note_links(mcp_server *s, const char *path, mcp_error *err)
{
    api_note n;
    if (!note_arg(s, path, &n, err))
        return NULL;
    tbuf ref = {0};
    tbuf_printf(&ref, "%s/%s", n.collection, n.path);
    api_link_set ls;
    trove_err rc = mcp_links(s, ref.data, &ls);
    tbuf_free(&ref);
    json_t *msgs = json_array();
    note_messages(&n, ", then the notes that link to it, each with the line that links", msgs);
    tbuf b = {0};
    if (rc) {
        char *why = mcp_agent_text(trove_errmsg());
        tbuf_printf(&b, "(Its links could not be read: %s.)", why);
        free(why);
    } else {
        size_t shown = ls.n_back < NOTE_LINKS ? ls.n_back : NOTE_LINKS;
        tbuf_printf(&b, "Notes linking to it (%zu%s), as URI:LINE (title): the line:\n",
                    ls.n_back, shown < ls.n_back ? ", the first shown: the `links` tool "
                    "lists all" : "");
        for (size_t i = 0; i < shown; i++)
            link_line(&b, &ls.back[i], 1);
        if (!ls.n_back)
            tbuf_puts(&b, "(none)\n");
        shown = ls.n_out < NOTE_LINKS ? ls.n_out : NOTE_LINKS;
        tbuf_printf(&b, "\nNotes it links to (%zu):\n", ls.n_out);
        for (size_t i = 0; i < shown; i++)
            link_line(&b, &ls.out[i], 0);
        tbuf_puts(&b, "\nRead any of them with the `get` tool.");
        api_link_set_free(&ls);
    }
    json_array_append_new(msgs, user_text(b.data));
    tbuf_free(&b);
    api_note_free(&n);
    return json_pack("{s:s, s:o}", "description", "one note with its backlinks",
                     "messages", msgs);
}

static const prompt_def prompts[] = {
    {"search_notes", "Search my notes", "Search my notes for something, with the trove tools",
     {"query", "what to look for: words, a name, a question", 1}, p_search},
    {"ask_notes", "What do my notes say", "What my notes say about a question: the best "
     "passages, to answer from with citations", {"question", "the question", 1}, p_ask},
    {"note", "Bring a note", "Bring one note into the conversation",
     {"path", "trove://COLLECTION/PATH, COLLECTION/PATH or #DOCID", 1}, p_note},
    {"note_links", "Bring a note with its backlinks", "Bring one note into the conversation "
     "with the notes that link to it (each with its linking line) and those it links to",
     {"path", "trove://COLLECTION/PATH, COLLECTION/PATH or #DOCID", 1}, p_note_links},
};
#define N_PROMPTS (sizeof prompts / sizeof *prompts)

json_t *mcp_prompts_list(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < N_PROMPTS; i++) {
        const prompt_def *p = &prompts[i];
        json_array_append_new(
            arr, json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:b}]}", "name", p->name, "title",
                           p->title, "description", p->desc, "arguments", "name", p->arg.name,
                           "description", p->arg.desc, "required", p->arg.required));
    }
    return json_pack("{s:o}", "prompts", arr);
}

static const prompt_def *prompt_find(const char *name)
{
    for (size_t i = 0; name && i < N_PROMPTS; i++)
        if (strcmp(prompts[i].name, name) == 0)
            return &prompts[i];
    return NULL;
}

json_t *mcp_prompts_get(mcp_server *s, json_t *params, mcp_error *err)
{
    const prompt_def *p = prompt_find(json_string_value(json_object_get(params, "name")));
    if (!p) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "prompts/get: no such prompt (prompts: "
                    "search_notes, ask_notes, note, note_links)");
        return NULL;
    }
    json_t *args = json_object_get(params, "arguments");
    json_t *v = json_object_get(args, p->arg.name);
    if (args && !json_is_object(args)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "prompts/get: 'arguments' must be an object");
        return NULL;
    }
    if (!json_is_string(v) || json_string_length(v) == 0) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "prompts/get: %s needs '%s', a non-empty string",
                    p->name, p->arg.name);
        return NULL;
    }
    trove_errclear();
    return p->fn(s, json_string_value(v), err);
}

/* ---- completion ---- */

typedef struct values {
    json_t *arr;
    size_t total;
} values;

static void offer(values *v, const char *value, const char *prefix)
{
    if (!str_starts_with(value, prefix))
        return;
    if (v->total++ < COMPLETE_MAX)
        json_array_append_new(v->arr, json_string(value));
}

/* Note paths of one collection (or, `qualified`, COLLECTION/PATH of every
 * collection) that start with prefix. */
static void offer_paths(mcp_server *s, const char *collection, int qualified, const char *prefix,
                        values *v)
{
    const config *cfg = api_config(s->a);
    for (size_t c = 0; c < cfg->n_collections; c++) {
        const char *name = cfg->collections[c].name;
        if (collection && strcmp(collection, name) != 0)
            continue;
        if (qualified && !str_starts_with(name, prefix) && !str_starts_with(prefix, name))
            continue;
        api_listing l;
        if (mcp_ls(s, name, &l) != TROVE_OK)
            continue;
        for (size_t i = 0; i < l.n_docs; i++) {
            if (!qualified) {
                offer(v, l.docs[i].path, prefix);
                continue;
            }
            tbuf b = {0};
            tbuf_printf(&b, "%s/%s", name, l.docs[i].path);
            offer(v, b.data, prefix);
            tbuf_free(&b);
        }
        api_listing_free(&l);
    }
}

json_t *mcp_complete(mcp_server *s, json_t *params, mcp_error *err)
{
    json_t *ref = json_object_get(params, "ref");
    json_t *arg = json_object_get(params, "argument");
    const char *type = json_string_value(json_object_get(ref, "type"));
    const char *name = json_string_value(json_object_get(arg, "name"));
    const char *prefix = json_string_value(json_object_get(arg, "value"));
    if (!type || !name || !prefix) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "completion/complete: needs ref.type, "
                    "argument.name and argument.value (strings)");
        return NULL;
    }
    values v = {json_array(), 0};
    if (strcmp(type, "ref/resource") == 0) {
        const char *uri = json_string_value(json_object_get(ref, "uri"));
        if (!uri || strcmp(uri, MCP_NOTE_TEMPLATE) != 0) {
            json_decref(v.arr);
            mcp_err_set(err, MCP_INVALID_PARAMS, "completion/complete: the one resource "
                        "template is " MCP_NOTE_TEMPLATE);
            return NULL;
        }
        const char *coll = json_string_value(json_object_get(
            json_object_get(json_object_get(params, "context"), "arguments"), "collection"));
        if (strcmp(name, "collection") == 0) {
            const config *cfg = api_config(s->a);
            for (size_t c = 0; c < cfg->n_collections; c++)
                offer(&v, cfg->collections[c].name, prefix);
        } else if (strcmp(name, "path") == 0) {
            offer_paths(s, coll, 0, prefix, &v);
        }
    } else if (strcmp(type, "ref/prompt") == 0) {
        const prompt_def *p = prompt_find(json_string_value(json_object_get(ref, "name")));
        if (!p) {
            json_decref(v.arr);
            mcp_err_set(err, MCP_INVALID_PARAMS, "completion/complete: no such prompt");
            return NULL;
        }
        if ((p->fn == p_note || p->fn == p_note_links) && strcmp(name, "path") == 0)
            offer_paths(s, NULL, 1, prefix, &v);
    } else {
        json_decref(v.arr);
        mcp_err_set(err, MCP_INVALID_PARAMS, "completion/complete: ref.type must be "
                    "ref/resource or ref/prompt");
        return NULL;
    }
    return json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", v.arr, "total",
                     (json_int_t)v.total, "hasMore", v.total > COMPLETE_MAX);
}
