/* mcp tools: search, get, status — their schemas, argument checks and
 * rendering of api results. Arguments that break a tool's input schema are
 * JSON-RPC invalid-params errors; failures while running the tool (no such
 * note, a refused path, no index yet) are results with isError, so the model
 * reads them and can correct itself. */
#include "mcp/mcp_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/wire.h"
#include "search/query_pipe.h"
#include "text/date.h"
#include "text/transl.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

#define SEARCH_TOP_K_MAX 50
#define EXCERPT_MAX 8000
#define GET_MAX_BYTES 1000000
#define GET_DEFAULT_BYTES 20000
#define GET_MAX_NOTES 200
#define GET_MAX_LINE (1L << 30)
/* The whole answer of a search tool, in characters of JSON: clients warn
 * above 25,000 tokens and file away outputs over 50,000 characters. */
#define BUDGET_DEFAULT 40000
#define BUDGET_MIN 1000
#define BUDGET_MAX 1000000
#define LINKS_DEFAULT 50
#define LINKS_MAX 500
#define FILTER_MAX_ITEMS 100

/* ---- schemas ---- */

static const char search_desc[] =
    "Search the user's markdown notes by keywords, note titles/aliases and links (BM25 + title "
    "match + link graph, fused; plus meaning when the server has an embedding model and "
    "`vsearch` is listed). Use it first for any question the notes may answer: names, "
    "terms, error messages, topics. Query syntax: plain words (ranked by how many match and how "
    "rare they are), \"exact phrase\", -excluded, prefix*. Returns up to top_k notes, each with "
    "its best passage (excerpt), doc_uri, heading path and line/byte range; read more with "
    "`get` using doc_uri and start_line/end_line.";

static const char vsearch_desc[] =
    "Search the notes by meaning alone: the query is embedded and compared with the embedding "
    "of every passage, so it finds notes that say the same thing in other words (synonyms, "
    "paraphrases, a question vs. its answer). Use it when `search` finds nothing relevant or "
    "the question is conceptual; prefer `search` for names, exact terms and code. Scores are "
    "cosine similarities. Same arguments and results as `search` (query is plain text).";

static const char query_desc[] =
    "The best-answer search, slower than `search`: the query and variants of it (its keywords "
    "alone; words from the best keyword hits) are searched with every channel, fused, the top "
    "candidates re-scored (by the server's reranker model, else by how many query words a "
    "passage holds and how close together) and blended so strong first-stage hits stay on "
    "top. Use it for questions where `search` ranks the answer low. Same arguments and results "
    "as `search`, plus rerank, expand and candidates.";

/* query: search_in's properties plus these. */

static const char search_out[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"query\":{\"type\":\"string\"},"
    "\"results\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"doc_uri\":{\"type\":\"string\"},\"docid\":{\"type\":\"string\"},"
    "\"collection\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
    "\"title\":{\"type\":\"string\"},"
    "\"heading_path\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"start_line\":{\"type\":\"integer\"},\"end_line\":{\"type\":\"integer\"},"
    "\"start_byte\":{\"type\":\"integer\"},\"end_byte\":{\"type\":\"integer\"},"
    "\"excerpt\":{\"type\":\"string\"},\"excerpt_truncated\":{\"type\":\"boolean\"},"
    "\"score\":{\"type\":\"number\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"context\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"also_in\":{\"type\":\"array\",\"description\":\"the same note in other languages "
    "(one result for all its translations)\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"lang\":{\"type\":\"string\"},\"docid\":{\"type\":\"string\"},"
    "\"doc_uri\":{\"type\":\"string\"}}}},"
    "\"via\":{\"type\":\"string\",\"description\":\"translation: found only through the "
    "query translated with the Chinese-English dictionary\"},"
    "\"date\":{\"type\":\"string\",\"description\":\"the note's date, YYYY-MM-DD\"},"
    "\"date_source\":{\"type\":\"string\",\"description\":\"where the date came from: "
    "frontmatter:KEY, filename or mtime\"},"
    "\"passages\":{\"type\":\"array\",\"description\":\"with passages: the note's best "
    "passages, best first\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"heading_path\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"start_line\":{\"type\":\"integer\"},\"end_line\":{\"type\":\"integer\"},"
    "\"start_byte\":{\"type\":\"integer\"},\"end_byte\":{\"type\":\"integer\"},"
    "\"score\":{\"type\":\"number\"},\"excerpt\":{\"type\":\"string\"}}}},"
    "\"scores\":{\"type\":\"object\"}},"
    "\"required\":[\"doc_uri\",\"docid\",\"collection\",\"path\",\"title\",\"heading_path\","
    "\"start_line\",\"end_line\",\"start_byte\",\"end_byte\",\"excerpt\",\"score\"]}},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"truncated\":{\"type\":\"boolean\",\"description\":\"results were left out to stay "
    "within max_chars\"},"
    "\"omitted\":{\"type\":\"integer\",\"description\":\"how many results were left out\"}},"
    "\"required\":[\"query\",\"results\"]}";


static const char get_desc[] =
    "Read notes from the index, from disk. `path` is a doc_uri (trove://COLLECTION/PATH), "
    "COLLECTION/PATH, an indexed PATH, or #DOCID from a search result; give start_line and "
    "end_line to read part of a long note (e.g. a search result's range, widened). A `path` "
    "with * ? or [ is a glob (e.g. 'notes/meetings/2024-*.md') and returns every indexed note "
    "it matches, whole, within the max_bytes budget. Only indexed notes inside their "
    "collection folder can be read.";


static const char multi_get_desc[] =
    "Read several notes at once: a list of `paths` (doc_uris, COLLECTION/PATH, #DOCID from "
    "search results) or a `glob`, whole, within one max_bytes budget. Notes past the budget "
    "are listed as skipped (truncated: true); a path that cannot be read gets an `error`.";

/* get's and multi_get's output: notes, each with what `required` names
 * (multi_get reports a path it cannot read with `path` and `error` only). */
#define NOTES_OUT(required)                                                                 \
    "{\"type\":\"object\",\"properties\":{"                                                 \
    "\"notes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"           \
    "\"doc_uri\":{\"type\":\"string\"},\"docid\":{\"type\":\"string\"},"                     \
    "\"collection\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"                   \
    "\"title\":{\"type\":\"string\"},"                                                      \
    "\"start_line\":{\"type\":\"integer\"},\"end_line\":{\"type\":\"integer\"},"               \
    "\"total_lines\":{\"type\":\"integer\"},\"text\":{\"type\":\"string\"},"                  \
    "\"skipped\":{\"type\":\"string\"},\"error\":{\"type\":\"string\"}},"                     \
    "\"required\":[" required "]}},"                                                      \
    "\"truncated\":{\"type\":\"boolean\"},"                                                 \
    "\"next_start_line\":{\"type\":\"integer\"}},"                                          \
    "\"required\":[\"notes\",\"truncated\"]}"

static const char links_desc[] =
    "A note's place in the link graph: backlinks (other notes linking to it, with the line "
    "that links), outlinks (notes it links to), unresolved links (to no indexed note) and "
    "unlinked mentions (notes naming it without a link). `path` as for `get`. Each list "
    "holds at most `limit` entries (truncated says when more exist).";

static const char similar_desc[] =
    "Notes like a given note: by its distinctive words and, when the index has vectors, by "
    "meaning; never the note itself. `path` as for `get`. Results and budgets as `search`.";

#define LINK_ITEM                                                                           \
    "{\"type\":\"object\",\"properties\":{\"doc_uri\":{\"type\":\"string\"},"                \
    "\"docid\":{\"type\":\"string\"},\"title\":{\"type\":\"string\"},"                       \
    "\"target\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"},"                      \
    "\"text\":{\"type\":\"string\"}},\"required\":[\"target\",\"line\"]}"
#define LINK_LIST "{\"type\":\"array\",\"items\":" LINK_ITEM "}"

static const char links_out[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"doc_uri\":{\"type\":\"string\"},\"docid\":{\"type\":\"string\"},"
    "\"title\":{\"type\":\"string\"},"
    "\"backlinks\":" LINK_LIST ",\"outlinks\":" LINK_LIST ","
    "\"unresolved\":" LINK_LIST ",\"mentions\":" LINK_LIST ","
    "\"truncated\":{\"type\":\"boolean\"}},"
    "\"required\":[\"doc_uri\",\"backlinks\",\"outlinks\",\"unresolved\",\"mentions\","
    "\"truncated\"]}";

static const char get_out[] =
    NOTES_OUT("\"doc_uri\",\"docid\",\"collection\",\"path\",\"title\"");
static const char multi_get_out[] = NOTES_OUT("\"path\"");


static const char status_desc[] =
    "Describe the index: its collections (name, folder, note count, files new/changed/deleted "
    "since the last update), totals, last update time, the current index snapshot (id, time, "
    "counts), and — when running — file watcher and embedding model. Use it to learn which collections exist (for search filters) "
    "or why a note is missing.";


/* A value of TYPE or null, as every client reads it (no type arrays). */
#define OR_NULL(type) "{\"anyOf\":[{\"type\":\"" type "\"},{\"type\":\"null\"}]}"

static const char status_out[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"index_exists\":{\"type\":\"boolean\"},"
    "\"last_update\":" OR_NULL("string") ","
    "\"notes\":{\"type\":\"integer\"},\"chunks\":{\"type\":\"integer\"},"
    "\"links\":{\"type\":\"integer\"},\"dangling_links\":{\"type\":\"integer\"},"
    "\"collections\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"
    "\"notes\":{\"type\":\"integer\"},"
    "\"pending\":" OR_NULL("object") ","
    "\"problem\":" OR_NULL("string") "},"
    "\"required\":[\"name\",\"path\",\"notes\"]}},"
    "\"snapshot\":{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"integer\"},\"time\":{\"type\":\"string\"},"
    "\"kind\":{\"type\":\"string\"},\"note\":{\"type\":\"string\"},"
    "\"notes\":{\"type\":\"integer\"},\"chunks\":{\"type\":\"integer\"},"
    "\"links\":{\"type\":\"integer\"},\"added\":{\"type\":\"integer\"},"
    "\"removed\":{\"type\":\"integer\"},\"modified\":{\"type\":\"integer\"}}}]},"
    "\"watcher\":" OR_NULL("object") ","
    "\"model\":" OR_NULL("object") "},"
    "\"required\":[\"index_exists\",\"notes\",\"collections\"]}";


/* ---- helpers ---- */

/* A JSON string from bytes that may hold invalid UTF-8 (a note on disk):
 * each bad byte becomes U+FFFD. */
static json_t *js_text(const char *s, size_t len)
{
    size_t bad = str_utf8_invalid_at(s, len);
    if (bad == (size_t)-1)
        return json_stringn(s, len);
    tbuf b = {0};
    size_t at = 0;
    while (bad != (size_t)-1) {
        tbuf_append(&b, s + at, bad);
        tbuf_puts(&b, "\xEF\xBF\xBD");
        at += bad + 1;
        bad = str_utf8_invalid_at(s + at, len - at);
    }
    tbuf_append(&b, s + at, len - at);
    json_t *j = json_stringn(b.data, b.len);
    tbuf_free(&b);
    return j;
}

static json_t *js_str(const char *s)
{
    return js_text(s ? s : "", s ? strlen(s) : 0);
}

/* An api message for the agent: CLI hints cut (mcp_agent_text). */
static json_t *js_agent(const char *msg)
{
    char *t = mcp_agent_text(msg);
    json_t *j = js_str(t);
    free(t);
    return j;
}

static json_t *text_content(const char *text)
{
    json_t *c = json_array();
    json_array_append_new(c, json_pack("{s:s, s:o}", "type", "text", "text", js_str(text)));
    return c;
}

/* A tool execution error: a result the model reads. */
static json_t *tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *tool_error(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return json_pack("{s:o, s:b}", "content", text_content(buf), "isError", 1);
}

static json_t *api_error(const char *tool, trove_err rc)
{
    const char *detail = trove_errmsg();
    char *text = mcp_agent_text(detail && *detail ? detail : trove_strerror(rc));
    json_t *e = tool_error("%s: %s", tool, text);
    free(text);
    return e;
}

/* The successful result: structuredContent (2025-06-18) and, for every
 * client, the same JSON as text. */
static json_t *tool_result(const mcp_session *ss, json_t *structured, const char *note)
{
    char *text = json_dumps(structured, JSON_COMPACT);
    tbuf b = {0};
    tbuf_puts(&b, text ? text : "{}");
    if (note) {
        tbuf_puts(&b, "\n");
        tbuf_puts(&b, note);
    }
    free(text);
    json_t *r = json_pack("{s:o}", "content", text_content(b.data));
    tbuf_free(&b);
    if (mcp_structured(ss))
        json_object_set_new(r, "structuredContent", structured);
    else
        json_decref(structured);
    return r;
}

/* ---- arguments: one table per tool ----
 *
 * Each tool's arguments are a table of arg_def. The table is the only place
 * a key, its type, bounds and default are written: mcp_tools_build() turns
 * it into the tool's inputSchema, args_check() validates a call against it
 * and the arg_* getters read values (or the table's default) afterwards.
 * Schemas use only constructs every client accepts: one "type" per schema,
 * "anyOf" where a value may take two shapes (the MCP Inspector's --strict
 * rejects type arrays). */

typedef enum {
    ARG_STRING,
    ARG_INT,
    ARG_BOOL,
    ARG_LIST,          /* a list of non-empty strings, at most max items */
    ARG_ONE_OR_LIST,   /* a string, or a list as ARG_LIST */
    ARG_OBJECT,        /* an object with the properties in `fields` */
    ARG_OPT,           /* a search option: its type and bounds are those of the search
                          request's row `row` (api/wire.h wire_search_row) and of
                          api_search_opt_table; it fills that member of api_search_opts */
} arg_type;

#define NO_DEFAULT LONG_MIN

typedef struct arg_def {
    const char *key;          /* NULL ends a table */
    arg_type type;
    long min, max;            /* ARG_INT: bounds; ARG_STRING: min = minLength;
                                 lists: max = maxItems */
    long def;                 /* ARG_INT/ARG_BOOL default, NO_DEFAULT: none */
    int required;
    const char *desc;
    /* ARG_OBJECT: its properties; ARG_OPT: one definition whose key is
     * the search request's row (OPT_ARG) and whose type is ARG_BOOL when
     * the argument says the opposite of that 0..1 row (OPT_ARG_NOT) */
    const struct arg_def *fields;
} arg_def;

/* A search option under the key `key`; no default (unset: the api's and
 * the config's). */
#define OPT_ARG(key_, row_, desc_) \
    {key_, ARG_OPT, 0, 0, NO_DEFAULT, 0, desc_, (const arg_def[]){{.key = row_}, {0}}}
/* A boolean argument that says the opposite of its row: `translate`
 * for the request's no_translate. */
#define OPT_ARG_NOT(key_, row_, desc_) \
    {key_, ARG_OPT, 0, 0, NO_DEFAULT, 0, desc_, \
     (const arg_def[]){{.key = row_, .type = ARG_BOOL}, {0}}}

static int opt_negated(const arg_def *d)
{
    return d->type == ARG_OPT && d->fields->type == ARG_BOOL;
}

static const arg_def filter_args[] = {
    {"collection", ARG_ONE_OR_LIST, 0, FILTER_MAX_ITEMS, NO_DEFAULT, 0,
     "only these collections (see `status`)", NULL},
    {"doc_uri_prefix", ARG_STRING, 0, 0, NO_DEFAULT, 0,
     "only notes whose doc_uri starts with this, e.g. trove://notes/projects/; a bare folder "
     "prefix (projects/) applies in every collection", NULL},
    {"doc_uris", ARG_LIST, 0, FILTER_MAX_ITEMS, NO_DEFAULT, 0,
     "only these notes (trove://COLLECTION/PATH)", NULL},
    OPT_ARG("heading_path_contains", "heading_contains",
            "only notes with a passage whose heading_path (as in results, joined) contains "
            "this text (ASCII case-insensitive); their passages are chosen under it"),
    OPT_ARG("where", "where",
            "frontmatter conditions, all must hold: status=done, status!=draft, priority>=2, "
            "tags~=proj/*, author in (ana, li), due<2026-01-01, exists(due), !exists(due); "
            "values keep their YAML type, a list matches when one element does"),
    OPT_ARG("since", "since",
            "only notes dated on or after this: 2024-05-01, 2024-05, 2026-W14, 20240501, 7d, "
            "3w, 2m, 1y, last-week, this-year. A note's date is its frontmatter date:/created:, "
            "else a date in its file name, else its mtime (results carry date and "
            "date_source)"),
    OPT_ARG("until", "until", "only notes dated up to this day (inclusive); forms as since"),
    {"tags", ARG_LIST, 0, FILTER_MAX_ITEMS, NO_DEFAULT, 0,
     "only notes carrying all these tags (a tag also matches its nested tags)", NULL},
    {"lang", ARG_ONE_OR_LIST, 0, FILTER_MAX_ITEMS, NO_DEFAULT, 0,
     "only notes in these languages (ISO 639-1: en, de, pt-BR), by their language folder or "
     "their detected language", NULL},
    {0},
};

#define SEARCH_ARGS                                                                        \
    {"query", ARG_STRING, 1, 0, NO_DEFAULT, 1, "keywords, \"exact phrase\", -excluded, prefix*", \
     NULL},                                                                                \
    {"top_k", ARG_INT, 1, SEARCH_TOP_K_MAX, NO_DEFAULT, 0,                                  \
     "how many notes to return (default: the configured search limit, 10 unless set)", NULL}, \
    {"max_excerpt_chars", ARG_INT, 0, EXCERPT_MAX, 800, 0,                                 \
     "longest excerpt per result, in characters (0: none)", NULL},                        \
    {"filters", ARG_OBJECT, 0, 0, NO_DEFAULT, 0, "narrow the search (all must hold)",      \
     filter_args},                                                                         \
    {"include_scores", ARG_BOOL, 0, 0, 0, 0, "add per-channel ranks and scores", NULL},     \
    OPT_ARG_NOT("translate", "no_translate",                                               \
                "also search the query translated with the Chinese-English dictionary "    \
                "(false: only its own words; unset: the server's config, `translate:`)"),  \
    {"max_chars", ARG_INT, BUDGET_MIN, BUDGET_MAX, BUDGET_DEFAULT, 0,                      \
     "budget for the whole answer, in characters of JSON: results that do not fit are left " \
     "out (truncated: true, omitted: how many)", NULL},                                    \
    OPT_ARG("recent", "recent",                                                            \
            "favour newer notes: the score times a recency prior (half-life from the "     \
            "server's config, 90 days unless set); false: not even when the config turns " \
            "it on"),                                                                       \
    OPT_ARG("passages", "passages",                                                        \
            "up to this many passages per note, best first, each with heading_path, lines, " \
            "bytes and excerpt (the note keeps its rank)")

static const arg_def search_args[] = {SEARCH_ARGS, {0}};

static const arg_def query_args[] = {
    SEARCH_ARGS,
    {"rerank", ARG_BOOL, 0, 0, 1, 0, "re-score the top candidates (false: fused order, "
     "fastest)", NULL},
    {"expand", ARG_BOOL, 0, 0, 1, 0, "search variants of the query too", NULL},
    {"candidates", ARG_INT, 1, 100, QP_RERANK_DEFAULT, 0,
     "how many fused candidates to re-score", NULL},
    {0},
};

/* What get and multi_get share: the budget and line numbers. */
#define READ_ARGS                                                                           \
    {"max_bytes", ARG_INT, 1, GET_MAX_BYTES, GET_DEFAULT_BYTES, 0,                          \
     "byte budget for all returned text (one note is cut at a line end; of several, those " \
     "past it are listed as skipped)", NULL},                                               \
    {"line_numbers", ARG_BOOL, 0, 0, 0, 0, "prefix each line with its number", NULL}

static const arg_def get_args[] = {
    {"path", ARG_STRING, 1, 0, NO_DEFAULT, 1,
     "trove://COLLECTION/PATH, COLLECTION/PATH, PATH, #DOCID, or a glob", NULL},
    {"start_line", ARG_INT, 1, GET_MAX_LINE, NO_DEFAULT, 0, "first line (1-based; default 1)",
     NULL},
    {"end_line", ARG_INT, 1, GET_MAX_LINE, NO_DEFAULT, 0,
     "last line, inclusive (default: the end)", NULL},
    READ_ARGS,
    {0},
};

static const arg_def multi_get_args[] = {
    {"paths", ARG_LIST, 0, GET_MAX_NOTES, NO_DEFAULT, 0,
     "notes to read: trove://COLLECTION/PATH, COLLECTION/PATH, PATH or #DOCID", NULL},
    {"glob", ARG_STRING, 1, 0, NO_DEFAULT, 0,
     "or every indexed note matching this glob (e.g. 'notes/meetings/2024-*.md')", NULL},
    READ_ARGS,
    {0},
};

/* The note a graph tool is about. */
#define NOTE_PATH_ARG                                                                       \
    {"path", ARG_STRING, 1, 0, NO_DEFAULT, 1,                                               \
     "trove://COLLECTION/PATH, COLLECTION/PATH, PATH or #DOCID", NULL}

static const arg_def links_args[] = {
    NOTE_PATH_ARG,
    {"limit", ARG_INT, 1, LINKS_MAX, LINKS_DEFAULT, 0, "most entries per list", NULL},
    {0},
};

static const arg_def similar_args[] = {
    NOTE_PATH_ARG,
    {"top_k", ARG_INT, 1, SEARCH_TOP_K_MAX, 10, 0, "how many notes to return", NULL},
    {"max_excerpt_chars", ARG_INT, 0, EXCERPT_MAX, 800, 0,
     "longest excerpt per result, in characters (0: none)", NULL},
    {"collection", ARG_ONE_OR_LIST, 0, FILTER_MAX_ITEMS, NO_DEFAULT, 0,
     "only notes in these collections (as filters.collection)", NULL},
    {"filters", ARG_OBJECT, 0, 0, NO_DEFAULT, 0,
     "only notes these let through, as for `search` (all must hold); the note itself and "
     "its translations are never results", filter_args},
    {"max_chars", ARG_INT, BUDGET_MIN, BUDGET_MAX, BUDGET_DEFAULT, 0,
     "budget for the whole answer, in characters of JSON", NULL},
    {0},
};

static const arg_def no_args[] = {{0}};

/* A tool: its arguments' table, its output schema and the function that
 * runs it on checked arguments. */
typedef struct tool_def tool_def;
typedef json_t *(*tool_fn)(mcp_server *, const mcp_session *, const tool_def *, json_t *args,
                           mcp_error *);
struct tool_def {
    const char *name, *title, *desc;
    tool_fn fn;
    int needs_model;          /* offered only when the server has an embedding model */
    const arg_def *args;
    const char *out;          /* outputSchema (JSON text) */
};

static const arg_def *arg_find(const arg_def *defs, const char *key)
{
    for (; defs->key; defs++)
        if (strcmp(defs->key, key) == 0)
            return defs;
    return NULL;
}

/* ---- inputSchema from the table ---- */

static json_t *string_schema(long min_length)
{
    json_t *s = json_pack("{s:s}", "type", "string");
    if (min_length > 0)
        json_object_set_new(s, "minLength", json_integer(min_length));
    return s;
}

static json_t *list_schema(const arg_def *d)
{
    return json_pack("{s:s, s:I, s:o}", "type", "array", "maxItems", (json_int_t)d->max,
                     "items", string_schema(1));
}

static json_t *object_schema(const arg_def *fields);

/* An ARG_OPT as the plain definition its row makes it: a text, a string or
 * a list of them, a boolean (an option bounded 0..1) or a bounded integer. */
static arg_def opt_resolved(const arg_def *d)
{
    arg_def r = *d;
    const wire_field *f = wire_search_row(d->fields->key);
    const api_opt *o = api_search_opt(d->fields->key);
    r.def = NO_DEFAULT;
    if (f->kind == WIRE_STR) {
        r.type = ARG_STRING;
        r.min = 1;
    } else if (f->kind == WIRE_STRS) {
        r.type = ARG_ONE_OR_LIST;
        r.max = FILTER_MAX_ITEMS;
    } else if (o && o->kind != API_OPT_REAL && (f->kind == WIRE_INT || f->kind == WIRE_SIZE) &&
               (!opt_negated(d) || (o->min == 0 && o->max == 1))) {
        r.type = o->min == 0 && o->max == 1 ? ARG_BOOL : ARG_INT;
        r.min = (long)o->min;
        r.max = o->max < (double)LONG_MAX ? (long)o->max : LONG_MAX;
    } else {   /* a row no MCP type stands for: a bug in the table below, seen at once */
        fprintf(stderr, "trove mcp: search option '%s' has no argument type\n", d->fields->key);
        abort();
    }
    return r;
}

static json_t *arg_schema(const arg_def *d)
{
    json_t *s = NULL;
    arg_def opt;
    if (d->type == ARG_OPT) {
        opt = opt_resolved(d);
        d = &opt;
    }
    switch (d->type) {
    case ARG_OPT:
        break;
    case ARG_STRING:
        s = string_schema(d->min);
        break;
    case ARG_INT:
        s = json_pack("{s:s, s:I, s:I}", "type", "integer", "minimum", (json_int_t)d->min,
                      "maximum", (json_int_t)d->max);
        if (d->def != NO_DEFAULT)
            json_object_set_new(s, "default", json_integer(d->def));
        break;
    case ARG_BOOL:
        s = json_pack("{s:s}", "type", "boolean");
        if (d->def != NO_DEFAULT)
            json_object_set_new(s, "default", json_boolean(d->def == 1));
        break;
    case ARG_LIST:
        s = list_schema(d);
        break;
    case ARG_ONE_OR_LIST:
        s = json_pack("{s:[o, o]}", "anyOf", string_schema(0), list_schema(d));
        break;
    case ARG_OBJECT:
        s = object_schema(d->fields);
        break;
    }
    json_object_set_new(s, "description", json_string(d->desc));
    return s;
}

static json_t *object_schema(const arg_def *fields)
{
    json_t *props = json_object(), *required = json_array();
    for (const arg_def *d = fields; d->key; d++) {
        json_object_set_new(props, d->key, arg_schema(d));
        if (d->required)
            json_array_append_new(required, json_string(d->key));
    }
    json_t *s = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
                          "additionalProperties", 0);
    if (json_array_size(required))
        json_object_set_new(s, "required", required);
    else
        json_decref(required);
    return s;
}

/* ---- validation against the table ---- */

/* A JSON number that is a whole number (5.0 is an integer to JSON Schema and
 * to some clients' encoders). */
static int json_whole(json_t *v, json_int_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    double d = json_is_real(v) ? json_real_value(v) : 0.5;
    if (d != d || d < -9.2e18 || d > 9.2e18 || d != (double)(long long)d)
        return 0;
    *out = (json_int_t)d;
    return 1;
}

static int check_list(const char *tool, const char *key, const arg_def *d, json_t *v,
                      mcp_error *err)
{
    int one = d->type == ARG_ONE_OR_LIST;
    if (one && json_is_string(v))
        return 1;
    if (!json_is_array(v) || json_array_size(v) > (size_t)d->max) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must be %sa list of at most %ld strings",
                    tool, key, one ? "a string or " : "", d->max);
        return 0;
    }
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_string(x) || json_string_length(x) == 0) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' item %zu must be a non-empty string",
                        tool, key, i);
            return 0;
        }
    }
    return 1;
}

static int check_fields(const char *tool, const char *prefix, const arg_def *defs, json_t *args,
                        mcp_error *err);

/* One value (not null: null is "not given") against its definition. */
static int check_value(const char *tool, const char *key, const arg_def *d, json_t *v,
                       mcp_error *err)
{
    json_int_t n;
    arg_def opt;
    if (d->type == ARG_OPT) {
        opt = opt_resolved(d);
        d = &opt;
    }
    switch (d->type) {
    case ARG_OPT:
        return 0;
    case ARG_STRING:
        if (!json_is_string(v) || (long)json_string_length(v) < d->min) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must be a%s string", tool, key,
                        d->min > 0 ? " non-empty" : "");
            return 0;
        }
        if (strlen(json_string_value(v)) != json_string_length(v)) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must not contain NUL", tool, key);
            return 0;
        }
        return 1;
    case ARG_INT:
        if (!json_whole(v, &n) || n < d->min || n > d->max) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must be an integer from %ld to %ld",
                        tool, key, d->min, d->max);
            return 0;
        }
        return 1;
    case ARG_BOOL:
        if (!json_is_boolean(v)) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must be true or false", tool, key);
            return 0;
        }
        return 1;
    case ARG_LIST:
    case ARG_ONE_OR_LIST:
        return check_list(tool, key, d, v, err);
    case ARG_OBJECT:
        if (!json_is_object(v)) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' must be an object", tool, key);
            return 0;
        }
        return check_fields(tool, key, d->fields, v, err);
    }
    return 0;
}

/* Every key known, every required one given, every value as its table says;
 * prefix: the enclosing argument's key for nested objects ("filters"). */
static int check_fields(const char *tool, const char *prefix, const arg_def *defs, json_t *args,
                        mcp_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) {
        if (arg_find(defs, k))
            continue;
        tbuf b = {0};
        for (const arg_def *d = defs; d->key; d++)
            tbuf_printf(&b, "%s%s", d == defs ? "" : ", ", d->key);
        mcp_err_set(err, MCP_INVALID_PARAMS, "%s%s%s: unknown argument '%.80s' (arguments: %s)",
                    tool, prefix ? ": " : "", prefix ? prefix : "", k,
                    b.len ? b.data : "none");
        tbuf_free(&b);
        return 0;
    }
    for (const arg_def *d = defs; d->key; d++) {
        char key[128];
        snprintf(key, sizeof key, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", d->key);
        v = json_object_get(args, d->key);
        if (!v || json_is_null(v)) {
            if (d->required) {
                mcp_err_set(err, MCP_INVALID_PARAMS, "%s: '%s' is required", tool, key);
                return 0;
            }
            continue;
        }
        if (!check_value(tool, key, d, v, err))
            return 0;
    }
    return 1;
}

/* ---- reading checked arguments ---- */

/* A string argument, or NULL when not given. */
static const char *arg_str(json_t *args, const char *key)
{
    return json_string_value(json_object_get(args, key));
}

/* An integer or boolean argument, else the table's default (0 when none). */
static long arg_long(const arg_def *defs, json_t *args, const char *key)
{
    json_t *v = json_object_get(args, key);
    json_int_t n;
    if (json_is_boolean(v))
        return json_is_true(v);
    if (v && json_whole(v, &n))
        return (long)n;
    const arg_def *d = arg_find(defs, key);
    return d && d->def != NO_DEFAULT ? d->def : 0;
}

/* A checked list (or single string) argument as an array of borrowed
 * strings; *items is malloc'd (the caller frees the array only). */
static void arg_list(json_t *args, const char *key, const char ***items, size_t *n)
{
    json_t *v = json_object_get(args, key);
    *items = NULL;
    *n = 0;
    if (json_is_string(v)) {
        *items = xmalloc(sizeof **items);
        (*items)[(*n)++] = json_string_value(v);
    } else if (json_is_array(v)) {
        *items = xcalloc(json_array_size(v) + 1, sizeof **items);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
            (*items)[(*n)++] = json_string_value(x);
    }
}

/* ---- search ---- */

typedef struct search_call {
    api_search_opts o;
    const char **collections;
    size_t n_collections;
    const char **tags;
    size_t n_tags;
    const char **langs;
    size_t n_langs;
    char **refs;          /* doc_uris decoded to COLLECTION/PATH (owned) */
    size_t n_refs;
    char *prefix_coll;    /* from doc_uri_prefix (owned); NULL for a bare FOLDER/ */
    char *prefix_path;
    int no_match;         /* the filters contradict each other */
    char *problem;        /* a filter the index cannot answer: a tool error (owned) */
    wire_args hold;       /* the search options' strings (opts_apply) */
} search_call;

static void search_call_free(search_call *c)
{
    free(c->collections);
    free(c->tags);
    free(c->langs);
    for (size_t i = 0; i < c->n_refs; i++)
        free(c->refs[i]);
    free(c->refs);
    free(c->prefix_coll);
    free(c->prefix_path);
    free(c->problem);
    wire_args_free(&c->hold);
}

static void search_problem(search_call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void search_problem(search_call *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(c->problem);
    c->problem = xstrdup(buf);
}

/* The ARG_OPT arguments of defs given in args onto c->o, each by its row
 * (a single string for a list row is a list of one). Their schema was
 * checked: a failure here is a value the api refuses, a tool error. */
static void opts_apply(search_call *c, const arg_def *defs, json_t *args)
{
    for (const arg_def *d = defs; d->key && !c->problem; d++) {
        json_t *v = json_object_get(args, d->key);
        if (d->type != ARG_OPT || !v || json_is_null(v))
            continue;
        json_t *one = json_is_string(v) && wire_search_row(d->fields->key)->kind == WIRE_STRS
                          ? json_pack("[O]", v)
                      : opt_negated(d) ? json_boolean(!json_is_true(v)) : NULL;
        if (wire_search_row_parse(d->fields->key, one ? one : v, &c->o, &c->hold) != TROVE_OK)
            search_problem(c, "'%s': %s", d->key, trove_errmsg());
        json_decref(one);
    }
}

/* doc_uri_prefix: "trove://COLLECTION[/PATH-PREFIX]", or a bare PATH-PREFIX
 * ("decisions/") that applies in every collection. One the index cannot
 * answer is a tool error (c->problem) the model can read and correct. */
static void parse_uri_prefix(search_call *c, const char *prefix)
{
    if (!str_starts_with(prefix, "trove://")) {
        if (strstr(prefix, "://")) {
            search_problem(c, "filters.doc_uri_prefix '%.200s' is not a trove:// URI: give "
                           "trove://COLLECTION/FOLDER/ or a folder prefix such as 'notes/'",
                           prefix);
            return;
        }
        while (prefix[0] == '/' || (prefix[0] == '.' && prefix[1] == '/'))
            prefix += prefix[0] == '/' ? 1 : 2;   /* "/x/", "./x/": the folder x/ */
        c->prefix_path = xstrdup(prefix);
        return;
    }
    char *ref = mcp_doc_ref_from_uri(prefix);
    if (!ref && prefix[8] && !strchr(prefix + 8, '/')) {
        /* "trove://notes" (no '/'): the whole collection. */
        tbuf b = {0};
        tbuf_printf(&b, "%s/x", prefix);
        ref = mcp_doc_ref_from_uri(b.data);
        tbuf_free(&b);
        if (ref)
            ref[strlen(ref) - 1] = '\0';
    }
    if (!ref) {
        search_problem(c, "filters.doc_uri_prefix '%.200s' is not trove://COLLECTION/ or "
                       "trove://COLLECTION/FOLDER/ (percent-encoded as in doc_uri)", prefix);
        return;
    }
    char *slash = strchr(ref, '/');
    *slash = '\0';
    c->prefix_coll = ref;
    c->prefix_path = xstrdup(slash + 1);
}

/* Collection names the config does not have: a tool error that lists the
 * ones it has (an agent learns them from `status` too). */
static void check_collections(mcp_server *s, search_call *c)
{
    const config *cfg = api_config(s->a);
    for (size_t i = 0; i < c->n_collections; i++) {
        if (config_find_collection(cfg, c->collections[i]))
            continue;
        tbuf names = {0};
        for (size_t k = 0; k < cfg->n_collections; k++)
            tbuf_printf(&names, "%s%s", k ? ", " : "", cfg->collections[k].name);
        search_problem(c, "no collection named '%.200s' (collections: %s)", c->collections[i],
                       names.len ? names.data : "none yet");
        tbuf_free(&names);
        return;
    }
}

/* The filters argument (checked against filter_args) onto c->o. Returns 0
 * with *err set on a value the schema cannot express (a language code, a
 * doc_uri); a filter the index cannot answer is c->problem. */
static int search_filters(mcp_server *s, const char *tool, search_call *c, json_t *filters,
                          mcp_error *err)
{
    if (!json_is_object(filters))
        return 1;
    const char *prefix = arg_str(filters, "doc_uri_prefix");
    const char **uris = NULL;
    size_t n_uris = 0;
    arg_list(filters, "collection", &c->collections, &c->n_collections);
    arg_list(filters, "tags", &c->tags, &c->n_tags);
    arg_list(filters, "lang", &c->langs, &c->n_langs);
    arg_list(filters, "doc_uris", &uris, &n_uris);
    int ok = 1;
    for (size_t i = 0; ok && i < c->n_langs; i++) {
        char code[16];
        if (!transl_code_normalise(c->langs[i], code, sizeof code)) {
            mcp_err_set(err, MCP_INVALID_PARAMS, "%s: filters.lang item %zu ('%.40s') is not "
                        "a language code (ISO 639-1: en, de, pt-BR)", tool, i, c->langs[i]);
            ok = 0;
        }
    }
    c->o.search.langs = c->langs;
    c->o.search.n_langs = c->n_langs;
    if (ok && n_uris) {
        c->refs = xcalloc(n_uris, sizeof *c->refs);
        for (size_t i = 0; ok && i < n_uris; i++) {
            c->refs[i] = mcp_doc_ref_from_uri(uris[i]);
            if (!c->refs[i]) {
                mcp_err_set(err, MCP_INVALID_PARAMS, "%s: filters.doc_uris item %zu "
                            "('%.200s') is not trove://COLLECTION/PATH", tool, i, uris[i]);
                ok = 0;
            } else {
                c->n_refs++;
            }
        }
        c->o.search.doc_refs = (const char *const *)c->refs;
        c->o.search.n_doc_refs = c->n_refs;
    }
    free(uris);
    if (!ok)
        return 0;
    if (prefix)
        parse_uri_prefix(c, prefix);
    if (c->prefix_coll) {
        /* The prefix names a collection: it narrows the collection filter. */
        int listed = c->n_collections == 0;
        for (size_t i = 0; i < c->n_collections; i++)
            listed |= strcmp(c->collections[i], c->prefix_coll) == 0;
        c->no_match = !listed;
        free(c->collections);
        c->collections = xmalloc(sizeof *c->collections);
        c->collections[0] = c->prefix_coll;
        c->n_collections = 1;
    }
    c->o.search.path_prefix = c->prefix_path;
    c->o.search.collections = c->collections;
    c->o.search.n_collections = c->n_collections;
    c->o.search.tags = c->tags;
    c->o.search.n_tags = c->n_tags;
    opts_apply(c, filter_args, filters);
    if (!c->problem)
        check_collections(s, c);
    return 1;
}

/* Bytes [from, to) of the note read at search time (the anchoring chunk, or
 * a passage), cut to max_chars characters on a character boundary. */
static json_t *excerpt(const search_result *r, int64_t from, int64_t to, long max_chars,
                       int *truncated)
{
    *truncated = 0;
    if (!r->body || max_chars <= 0)
        return json_string("");
    size_t start = from > 0 ? (size_t)from : 0;
    size_t end = to > 0 ? (size_t)to : r->body_len;
    if (end > r->body_len)
        end = r->body_len;   /* the file shrank since the last update */
    if (start > end)
        start = end;
    size_t i = start;
    long chars = 0;
    while (i < end) {
        if (chars == max_chars) {
            *truncated = 1;
            break;
        }
        i++;
        while (i < end && ((unsigned char)r->body[i] & 0xC0) == 0x80)
            i++;
        chars++;
    }
    return js_text(r->body + start, i - start);
}

static json_t *scores_json(const search_result *r)
{
    json_t *s = json_object();
    json_object_set_new(s, "fused", json_real(r->score));
    for (int ch = 0; ch < SEARCH_N_CHANNELS; ch++) {
        const search_channel_hit *h = &r->channel[ch];
        json_object_set_new(s, search_channel_names[ch],
                            h->rank ? json_pack("{s:i, s:f}", "rank", h->rank, "score", h->score)
                                    : json_null());
    }
    json_object_set_new(s, "graph_prior", json_real(r->prior));
    json_object_set_new(s, "in_degree", json_integer(r->in_degree));
    return s;
}

/* What a result's own keys need: the result (also_in's doc_uri), the
 * excerpt's budget, and whether it was cut. */
typedef struct result_ctx {
    const search_result *r;
    long max_chars;
    int with_scores, cut;
} result_ctx;

static json_t *passages_json(result_ctx *c);

static json_t *result_own(const void *obj, const char *key, void *ctx)
{
    result_ctx *c = ctx;
    if (strcmp(key, "excerpt") == 0)
        return excerpt(c->r, c->r->start_byte, c->r->end_byte, c->max_chars, &c->cut);
    if (strcmp(key, "date") == 0) {
        char day[11];
        date_format(c->r->date, day);
        return json_string(day);
    }
    if (strcmp(key, "passages") == 0)
        return c->r->n_passages ? passages_json(c) : NULL;
    if (strcmp(key, "excerpt_truncated") == 0)
        return json_boolean(c->cut);
    if (strcmp(key, "scores") == 0)
        return c->with_scores ? scores_json(c->r) : NULL;
    if (strcmp(key, "via") == 0)   /* found only through the translated query */
        return c->r->via_translation ? json_string("translation") : NULL;
    /* doc_uri: of the result, or of one of its translations (obj) */
    const char *path = obj == c->r ? c->r->path : ((const search_alt *)obj)->path;
    char *uri = mcp_doc_uri(c->r->collection, path);
    json_t *j = js_str(uri);
    free(uri);
    return j;
}

static const wire_pick alt_picks[] = {
    WIRE_PICK("lang"), WIRE_PICK("docid", .prefix = "#"), WIRE_OWN("doc_uri"),
};

/* A passage's excerpt (the only key of its own), within the same budget
 * per passage as the result's. */
static json_t *passage_own(const void *obj, const char *key, void *ctx)
{
    const search_passage *p = obj;
    result_ctx *c = ctx;
    int cut;
    (void)key;
    return excerpt(c->r, p->start_byte, p->end_byte, c->max_chars, &cut);
}

static const wire_pick passage_picks[] = {
    WIRE_PICK("heading_path"), WIRE_AS("start_line", "line_start"),
    WIRE_AS("end_line", "line_end"), WIRE_PICK("start_byte"), WIRE_PICK("end_byte"),
    WIRE_PICK("score"), WIRE_OWN("excerpt"),
};
static const wire_view passage_view = {passage_picks, sizeof passage_picks / sizeof *passage_picks,
                                       js_text, passage_own};

/* --passages' list: each passage by passage_view (the result's first
 * included: it is the best). */
static json_t *passages_json(result_ctx *c)
{
    json_t *a = json_array();
    for (size_t k = 0; k < c->r->n_passages; k++)
        json_array_append_new(a, wire_emit_view(&wire_passage_type, &c->r->passages[k],
                                                &passage_view, c));
    return a;
}
static const wire_view alt_view = {alt_picks, sizeof alt_picks / sizeof *alt_picks, js_text,
                                   result_own};

/* A result as the tools show it: rows of api/wire's search_result table. */
static const wire_pick result_picks[] = {
    WIRE_OWN("doc_uri"), WIRE_PICK("docid", .prefix = "#"), WIRE_PICK("collection"),
    WIRE_PICK("path"), WIRE_PICK("title"), WIRE_PICK("heading_path"),
    WIRE_AS("start_line", "line_start"), WIRE_AS("end_line", "line_end"), WIRE_PICK("start_byte"),
    WIRE_PICK("end_byte"), WIRE_OWN("excerpt"), WIRE_OWN("excerpt_truncated"), WIRE_PICK("score"),
    WIRE_PICK("tags"), WIRE_PICK("context"), WIRE_PICK("also_in", .sub = &alt_view),
    WIRE_OWN("date"), WIRE_PICK("date_source"), WIRE_OWN("passages"), WIRE_OWN("via"),
    WIRE_OWN("scores"),
};
static const wire_view result_view = {result_picks, sizeof result_picks / sizeof *result_picks,
                                      js_text, result_own};

static json_t *result_json(const search_result *r, long max_chars, int with_scores)
{
    result_ctx c = {.r = r, .max_chars = max_chars, .with_scores = with_scores};
    return wire_emit_view(&wire_result_type, r, &result_view, &c);
}

/* The pipeline's detail of result i for include_scores. */
static json_t *pipeline_json(const api_query_info *q, size_t i)
{
    const qp_cand *c = &q->items[i];
    json_t *p = json_pack("{s:i, s:f, s:f}", "fused_rank", c->rrf_rank, "fused", c->rrf,
                          "retrieval_weight", c->w_retrieval);
    json_object_set_new(p, "rerank_score", c->reranked ? json_real(c->rerank_raw) : json_null());
    return p;
}

/* {query, results, truncated?, omitted?}: the results, best first, as many
 * as fit `budget` characters of JSON; *cut gets the note saying how to get
 * more ("" when all fit). qi: the query pipeline's detail, or NULL. */
static json_t *results_within(const search_results *res, const api_query_info *qi,
                              const char *query, long excerpt_chars, int with_scores,
                              size_t budget, char *cut, size_t cut_size)
{
    json_t *results = json_array();
    /* The answer's frame (query, warnings, flags) is a few hundred
     * characters: what is left is for results. */
    size_t used = strlen(query) + 512, kept = 0;
    for (size_t i = 0; i < res->n; i++) {
        json_t *rj = result_json(&res->items[i], excerpt_chars, with_scores);
        if (with_scores && qi && i < qi->n)
            json_object_set_new(json_object_get(rj, "scores"), "pipeline", pipeline_json(qi, i));
        used += json_dumpb(rj, NULL, 0, JSON_COMPACT) + 1;
        if (used > budget) {
            json_decref(rj);
            break;
        }
        json_array_append_new(results, rj);
        kept++;
    }
    json_t *st = json_pack("{s:o, s:o}", "query", js_str(query), "results", results);
    cut[0] = '\0';
    if (kept < res->n) {
        json_object_set_new(st, "truncated", json_true());
        json_object_set_new(st, "omitted", json_integer((json_int_t)(res->n - kept)));
        snprintf(cut, cut_size, "(%zu more results left out at max_chars=%zu: raise "
                 "max_chars, or lower max_excerpt_chars or top_k)", res->n - kept, budget);
    }
    return st;
}

static json_t *run_search(mcp_server *s, const mcp_session *ss, const tool_def *t,
                          json_t *args, mcp_error *err, int vector_only, int is_query)
{
    const char *tool = t->name;
    const char *query = arg_str(args, "query");
    long top_k = arg_long(t->args, args, "top_k");
    long max_chars = arg_long(t->args, args, "max_excerpt_chars");
    int with_scores = (int)arg_long(t->args, args, "include_scores");
    size_t budget = (size_t)arg_long(t->args, args, "max_chars");
    search_call c = {0};
    api_search_opts_init(&c.o);
    if (!search_filters(s, tool, &c, json_object_get(args, "filters"), err)) {
        search_call_free(&c);
        return NULL;
    }
    opts_apply(&c, t->args, args);
    c.o.search.query = query;
    if (top_k)   /* else the api's default */
        c.o.search.limit = (size_t)top_k;
    c.o.search.with_snippet = 0;   /* the excerpt is the chunk itself */
    c.o.search.vector_only = vector_only;
    c.o.model = s->model;
    c.o.with_body = max_chars > 0;
    search_results res = {0};
    api_query_info qi = {0};
    trove_err rc = TROVE_OK;
    if (c.problem) {
        json_t *e = tool_error("%s: %s", tool, c.problem);
        search_call_free(&c);
        return e;
    }
    if (!c.no_match && is_query) {
        api_query_opts qo;
        api_query_opts_init(&qo);
        qo.base = c.o;
        int rerank = (int)arg_long(t->args, args, "rerank");
        qo.no_rerank = !rerank;
        qo.no_expand = !arg_long(t->args, args, "expand");
        qo.candidates = (size_t)arg_long(t->args, args, "candidates");
        qo.reranker = rerank ? s->reranker : NULL;
        rc = mcp_query(s, &qo, &res, &qi);
    } else if (!c.no_match) {
        rc = mcp_search(s, &c.o, &res);
    }
    json_t *out;
    if (rc) {
        out = api_error(tool, rc);
    } else if (vector_only && !c.no_match && res.vec_state != SEARCH_VEC_USED &&
               res.vec_state != SEARCH_VEC_BLANK) {
        char *why = res.vec_error ? mcp_agent_text(res.vec_error) : NULL;
        out = tool_error("vsearch: %s", why ? why
                         : "the index has no embeddings of the server's model yet; use "
                           "`search`");
        free(why);
    } else {
        char cut[200] = "";
        json_t *st = results_within(&res, is_query ? &qi : NULL, query, max_chars, with_scores,
                                    budget, cut, sizeof cut);
        /* What the vector channel could not do, so the agent knows why
         * results are keyword-only. */
        json_t *warn = json_array();
        if (res.vec_error)
            json_array_append_new(warn, js_agent(res.vec_error));
        if (res.vec_state == SEARCH_VEC_BLANK)
            json_array_append_new(warn, js_str(search_vec_blank_why));
        if (qi.rerank_warning) {
            tbuf b = {0};
            tbuf_printf(&b, "%s; re-scored lexically instead", qi.rerank_warning);
            json_array_append_new(warn, js_agent(b.data));
            tbuf_free(&b);
        }
        for (size_t i = 0; i < res.n_vec_missing; i++) {
            char m[300];
            snprintf(m, sizeof m, "collection '%s' has no embeddings yet: answered from the "
                     "other channels", res.vec_missing[i]);
            json_array_append_new(warn, js_str(m));
        }
        if (json_array_size(warn))
            json_object_set_new(st, "warnings", warn);
        else
            json_decref(warn);
        out = tool_result(ss, st, cut[0] ? cut : res.n ? NULL : "(no matching notes)");
    }
    search_results_free(&res);
    api_query_info_free(&qi);
    search_call_free(&c);
    return out;
}

static json_t *tool_search(mcp_server *s, const mcp_session *ss, const tool_def *t,
                          json_t *args, mcp_error *err)
{
    return run_search(s, ss, t, args, err, 0, 0);
}

static json_t *tool_query(mcp_server *s, const mcp_session *ss, const tool_def *t,
                          json_t *args, mcp_error *err)
{
    return run_search(s, ss, t, args, err, 0, 1);
}

static json_t *tool_vsearch(mcp_server *s, const mcp_session *ss, const tool_def *t,
                          json_t *args, mcp_error *err)
{
    return run_search(s, ss, t, args, err, 1, 0);
}

/* ---- get ---- */

static long count_lines(const char *text, size_t len)
{
    long n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    return n + (len && text[len - 1] != '\n');
}

/* The longest prefix of text within max bytes that ends at a line end (or,
 * when the first line alone is longer, at a character boundary). */
static size_t cut_at_line(const char *text, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t cut = max;
    while (cut > 0 && text[cut - 1] != '\n')
        cut--;
    if (cut > 0)
        return cut;
    cut = max;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    return cut;
}

static json_t *note_text(const char *text, size_t len, long first, int numbers)
{
    if (!numbers)
        return js_text(text, len);
    tbuf b = {0};
    const char *p = text, *end = text + len;
    for (long at = first; p < end; at++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        tbuf_printf(&b, "%6ld  ", at);
        tbuf_append(&b, p, n);
        p += n;
    }
    json_t *j = js_text(b.data ? b.data : "", b.len);
    tbuf_free(&b);
    return j;
}

static json_t *note_head(const api_note *n)
{
    char *uri = mcp_doc_uri(n->collection, n->path);
    char docid[16];
    snprintf(docid, sizeof docid, "#%s", n->docid);
    json_t *o = json_pack("{s:o, s:s, s:o, s:o, s:o}", "doc_uri", js_str(uri), "docid", docid,
                          "collection", js_str(n->collection), "path", js_str(n->path),
                          "title", js_str(n->title));
    free(uri);
    return o;
}

static json_t *get_one(mcp_server *s, const mcp_session *ss, const char *ref, long start,
                       long end, long max_bytes, int numbers)
{
    api_note n;
    /* start 0: a ":LINE" in ref, else line 1. */
    trove_err rc = mcp_get(s, ref, start, end ? end - (start ? start : 1) + 1 : 0, &n);
    if (rc)
        return api_error("get", rc);
    if (!n.docid[0]) {
        /* A file inside a collection folder that update left out (a mask,
         * an exclude, .gitignore): not for an MCP client. */
        json_t *e = tool_error("get: %s/%s is not an indexed note (only indexed notes can be "
                               "read; see `status`)", n.collection, n.path);
        api_note_free(&n);
        return e;
    }
    size_t keep = cut_at_line(n.text, n.len, (size_t)max_bytes);
    int truncated = keep < n.len;
    long shown = count_lines(n.text, keep);
    json_t *o = note_head(&n);
    json_object_set_new(o, "start_line", json_integer(n.line_start));
    json_object_set_new(o, "end_line", json_integer(truncated ? n.line_start + shown - 1
                                                              : n.line_end));
    json_object_set_new(o, "total_lines", json_integer(n.n_lines));
    json_object_set_new(o, "text", note_text(n.text, keep, n.line_start, numbers));
    json_t *notes = json_array();
    json_array_append_new(notes, o);
    json_t *st = json_pack("{s:o, s:b}", "notes", notes, "truncated", truncated);
    char more[160] = "";
    if (truncated) {
        json_object_set_new(st, "next_start_line", json_integer(n.line_start + shown));
        snprintf(more, sizeof more, "(cut at max_bytes: continue with start_line=%ld)",
                 n.line_start + shown);
    } else if (n.line_end < n.line_start) {
        snprintf(more, sizeof more, "(the note has %ld lines)", n.n_lines);
    }
    api_note_free(&n);
    return tool_result(ss, st, more[0] ? more : NULL);
}

/* A whole note's text into o when it fits what is left of the budget
 * (*used grows), else o says it was skipped. 0 when skipped. */
static int note_whole(json_t *o, const api_note *n, long max_bytes, size_t *used, int numbers)
{
    if (*used + n->len > (size_t)max_bytes) {
        json_object_set_new(o, "skipped", json_string("over the max_bytes budget"));
        return 0;
    }
    *used += n->len;
    long lines = count_lines(n->text, n->len);
    json_object_set_new(o, "start_line", json_integer(1));
    json_object_set_new(o, "end_line", json_integer(lines));
    json_object_set_new(o, "total_lines", json_integer(lines));
    json_object_set_new(o, "text", note_text(n->text, n->len, 1, numbers));
    return 1;
}

static json_t *get_many(mcp_server *s, const mcp_session *ss, const char *glob, long max_bytes,
                        int numbers)
{
    api_notes ns;
    trove_err rc = mcp_multi_get(s, glob, (size_t)max_bytes, &ns);
    if (rc)
        return api_error("get", rc);
    json_t *notes = json_array();
    size_t used = 0;
    int truncated = 0;
    for (size_t i = 0; i < ns.n; i++) {
        const api_note *n = &ns.items[i];
        if (i == GET_MAX_NOTES) {
            truncated = 1;
            break;
        }
        json_t *o = note_head(n);
        if (!n->text) {
            json_object_set_new(o, "skipped", json_string(
                strcmp(n->skipped, "over --max-bytes") == 0 ? "larger than max_bytes"
                                                              : n->skipped));
        } else {
            truncated |= !note_whole(o, n, max_bytes, &used, numbers);
        }
        json_array_append_new(notes, o);
    }
    size_t total = ns.n;
    api_notes_free(&ns);
    char note[160] = "";
    if (total == 0)
        snprintf(note, sizeof note, "(no indexed note matches the glob)");
    else if (truncated)
        snprintf(note, sizeof note, "(%zu notes match; some were left out: raise max_bytes or "
                 "narrow the glob)", total);
    return tool_result(ss, json_pack("{s:o, s:b}", "notes", notes, "truncated", truncated),
                       note[0] ? note : NULL);
}

/* What a tool's `path` names, as "COLLECTION/PATH", PATH or #DOCID (caller
 * frees), or NULL with *why (caller frees) saying why it cannot be read:
 * not a note URI, an unknown collection, a path leaving the collections. */
static char *note_ref(mcp_server *s, const char *tool, const char *path, char **why)
{
    char buf[600];
    char *ref = NULL;
    *why = NULL;
    if (str_starts_with(path, "trove://")) {
        ref = mcp_doc_ref_from_uri(path);
        if (!ref) {
            snprintf(buf, sizeof buf, "%s: '%.300s' is not a note URI: use "
                     "trove://COLLECTION/PATH", tool, path);
        } else if (!mcp_ref_collection_known(s, ref)) {
            snprintf(buf, sizeof buf, "%s: '%.300s': no such collection (see the status tool)",
                     tool, path);
            free(ref);
            ref = NULL;
        }
    } else {
        ref = xstrdup(path);
    }
    const char *escape = ref && ref[0] != '#' ? mcp_ref_escapes(ref) : NULL;
    if (escape) {
        snprintf(buf, sizeof buf, "%s: refused '%.300s': %s; only notes inside the indexed "
                 "collections can be read (give trove://COLLECTION/PATH, COLLECTION/PATH or "
                 "#DOCID)", tool, path, escape);
        free(ref);
        ref = NULL;
    }
    if (!ref)
        *why = xstrdup(buf);
    return ref;
}

/* note_ref, or NULL with *refused the tool error saying why. */
static char *note_ref_or_error(mcp_server *s, const char *tool, const char *path,
                               json_t **refused)
{
    char *why = NULL;
    char *ref = note_ref(s, tool, path, &why);
    if (!ref)
        *refused = tool_error("%s", why);
    free(why);
    return ref;
}

static json_t *tool_get(mcp_server *s, const mcp_session *ss, const tool_def *t,
                        json_t *args, mcp_error *err)
{
    const char *path = arg_str(args, "path");
    long start = arg_long(t->args, args, "start_line");
    long end = arg_long(t->args, args, "end_line");
    long max_bytes = arg_long(t->args, args, "max_bytes");
    int numbers = (int)arg_long(t->args, args, "line_numbers");
    if (end && end < (start ? start : 1)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "get: 'end_line' (%ld) is before 'start_line' (%ld)",
                    end, start ? start : 1);
        return NULL;
    }
    json_t *refused = NULL;
    char *ref = note_ref_or_error(s, "get", path, &refused);
    if (!ref)
        return refused;
    json_t *out;
    if (ref[0] != '#' && strpbrk(ref, "*?[")) {
        if (start || end)
            out = tool_error("get: start_line/end_line read one note; a glob returns whole "
                             "notes");
        else
            out = get_many(s, ss, ref, max_bytes, numbers);
    } else {
        out = get_one(s, ss, ref, start, end, max_bytes, numbers);
    }
    free(ref);
    return out;
}

/* ---- links, similar ---- */

/* One end of a link: the other note (doc_uri, docid, title; none for an
 * unresolved link), the target as written, the line and its text. */
static json_t *link_json(const api_link *l)
{
    json_t *o = json_pack("{s:o, s:i}", "target", js_str(l->target), "line", l->line);
    if (l->note.docid[0]) {
        char *uri = mcp_doc_uri(l->note.collection, l->note.path);
        char docid[16];
        snprintf(docid, sizeof docid, "#%s", l->note.docid);
        json_object_set_new(o, "doc_uri", js_str(uri));
        json_object_set_new(o, "docid", json_string(docid));
        json_object_set_new(o, "title", js_str(l->note.title ? l->note.title : l->note.path));
        free(uri);
    }
    if (l->text)
        json_object_set_new(o, "text", js_str(l->text));
    return o;
}

static json_t *link_list(const api_link *items, size_t n, size_t limit, int *truncated)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n && i < limit; i++)
        json_array_append_new(a, link_json(&items[i]));
    *truncated |= n > limit;
    return a;
}

static json_t *tool_links(mcp_server *s, const mcp_session *ss, const tool_def *t,
                          json_t *args, mcp_error *err)
{
    (void)err;
    json_t *refused = NULL;
    char *ref = note_ref_or_error(s, "links", arg_str(args, "path"), &refused);
    if (!ref)
        return refused;
    size_t limit = (size_t)arg_long(t->args, args, "limit");
    api_link_set ls;
    trove_err rc = mcp_links(s, ref, &ls);
    free(ref);
    if (rc)
        return api_error("links", rc);
    char *uri = mcp_doc_uri(ls.note.collection, ls.note.path);
    char docid[16];
    snprintf(docid, sizeof docid, "#%s", ls.note.docid);
    int truncated = 0;
    json_t *o = json_pack("{s:o, s:s, s:o}", "doc_uri", js_str(uri), "docid", docid, "title",
                          js_str(ls.note.title ? ls.note.title : ls.note.path));
    json_object_set_new(o, "backlinks", link_list(ls.back, ls.n_back, limit, &truncated));
    json_object_set_new(o, "outlinks", link_list(ls.out, ls.n_out, limit, &truncated));
    json_object_set_new(o, "unresolved",
                        link_list(ls.unresolved, ls.n_unresolved, limit, &truncated));
    json_object_set_new(o, "mentions", link_list(ls.mentions, ls.n_mentions, limit, &truncated));
    json_object_set_new(o, "truncated", json_boolean(truncated));
    free(uri);
    api_link_set_free(&ls);
    return tool_result(ss, o, truncated ? "(lists cut at limit: raise limit for the rest)"
                                        : NULL);
}

static json_t *tool_similar(mcp_server *s, const mcp_session *ss, const tool_def *t,
                            json_t *args, mcp_error *err)
{
    const char *path = arg_str(args, "path");
    json_t *refused = NULL;
    char *ref = note_ref_or_error(s, "similar", path, &refused);
    if (!ref)
        return refused;
    /* The filters as search reads them (search_filters); the top-level
     * collection is filters.collection when that is not given. */
    search_call c;
    memset(&c, 0, sizeof c);
    api_search_opts_init(&c.o);
    json_t *filters = json_object_get(args, "filters");
    json_t *merged = json_is_object(filters) ? json_copy(filters) : json_object();
    json_t *coll = json_object_get(args, "collection");
    if (coll && !json_object_get(merged, "collection"))
        json_object_set(merged, "collection", coll);
    if (!search_filters(s, "similar", &c, merged, err)) {
        json_decref(merged);
        search_call_free(&c);
        free(ref);
        return NULL;
    }
    long excerpt_chars = arg_long(t->args, args, "max_excerpt_chars");
    api_similar_opts o;
    api_similar_opts_init(&o);
    o.ref = ref;
    o.limit = (size_t)arg_long(t->args, args, "top_k");
    search_opts_filters(&o.filter, &c.o.search);
    o.with_body = excerpt_chars > 0;
    search_results res = {0};
    api_similar_info info = {0};
    trove_err rc = c.problem || c.no_match ? TROVE_OK : mcp_similar(s, &o, &res, &info);
    json_t *out;
    if (c.problem) {
        out = tool_error("similar: %s", c.problem);
    } else if (rc) {
        out = api_error("similar", rc);
    } else {
        char cut[200];
        json_t *st = results_within(&res, NULL, path, excerpt_chars, 0,
                                    (size_t)arg_long(t->args, args, "max_chars"), cut,
                                    sizeof cut);
        out = tool_result(ss, st, cut[0] ? cut : res.n ? NULL : "(no similar notes)");
    }
    search_results_free(&res);
    api_similar_info_free(&info);
    json_decref(merged);
    search_call_free(&c);
    free(ref);
    return out;
}

/* ---- multi_get ---- */

static json_t *tool_multi_get(mcp_server *s, const mcp_session *ss, const tool_def *t,
                              json_t *args, mcp_error *err)
{
    const char *glob = arg_str(args, "glob");
    long max_bytes = arg_long(t->args, args, "max_bytes");
    int numbers = (int)arg_long(t->args, args, "line_numbers");
    const char **paths;
    size_t n_paths;
    arg_list(args, "paths", &paths, &n_paths);
    if (!glob == !n_paths) {
        free(paths);
        mcp_err_set(err, MCP_INVALID_PARAMS, "multi_get: give 'paths' (a list) or 'glob', "
                    "one of them");
        return NULL;
    }
    if (glob) {
        char *why = NULL;
        char *ref = note_ref(s, "multi_get", glob, &why);
        json_t *out = ref ? get_many(s, ss, ref, max_bytes, numbers) : tool_error("%s", why);
        free(ref);
        free(why);
        return out;
    }
    json_t *notes = json_array();
    size_t used = 0;
    int truncated = 0;
    for (size_t i = 0; i < n_paths; i++) {
        char *why = NULL;
        char *ref = note_ref(s, "multi_get", paths[i], &why);
        api_note n;
        trove_err rc = ref ? mcp_get(s, ref, 0, 0, &n) : TROVE_EINVAL;
        json_t *o;
        if (!ref || rc || !n.docid[0]) {
            char *text = why ? why : mcp_agent_text(rc ? trove_errmsg() : "not an indexed note");
            o = json_pack("{s:o, s:o}", "path", js_str(paths[i]), "error", js_str(text));
            free(text);
            if (ref && !rc)
                api_note_free(&n);
        } else {
            o = note_head(&n);
            truncated |= !note_whole(o, &n, max_bytes, &used, numbers);
            api_note_free(&n);
        }
        free(ref);
        json_array_append_new(notes, o);
    }
    free(paths);
    return tool_result(ss, json_pack("{s:o, s:b}", "notes", notes, "truncated", truncated),
                       truncated ? "(some notes were left out: raise max_bytes or ask for "
                                   "fewer)" : NULL);
}

/* ---- status ---- */

/* The embedding model: path, architecture, dimensions, and how many chunks
 * carry its vectors; null without one. */
static json_t *model_json(mcp_server *s)
{
    if (!s->model)
        return json_null();
    api_vec_status vs;
    if (api_vec_status_get(s->a, s->model, &vs) != TROVE_OK)
        return json_pack("{s:o, s:o}", "path", js_str(s->model), "error",
                         js_agent(trove_errmsg()));
    json_int_t chunks = 0, embedded = 0;
    for (size_t i = 0; i < vs.n_counts; i++) {
        chunks += vs.counts[i].chunks;
        embedded += vs.counts[i].embedded;
    }
    json_t *m = json_pack("{s:o, s:o, s:I, s:I, s:I}", "path", js_str(s->model), "arch",
                          js_str(vs.model_arch), "dim", (json_int_t)vs.model_dim,
                          "chunks", chunks, "embedded", embedded);
    if (vs.model_error)
        json_object_set_new(m, "error", js_agent(vs.model_error));
    api_vec_status_free(&vs);
    return m;
}

static json_t *tool_status(mcp_server *s, const mcp_session *ss, const tool_def *t,
                           json_t *args, mcp_error *err)
{
    (void)t, (void)args, (void)err;
    api_status st;
    json_t *daemon;
    trove_err rc = mcp_status(s, &st, &daemon);
    if (rc)
        return api_error("status", rc);
    json_t *cols = json_array();
    for (size_t i = 0; i < st.n_collections; i++) {
        const api_status_collection *c = &st.collections[i];
        json_t *pending = c->fresh_known
                              ? json_pack("{s:I, s:I, s:I}", "new", (json_int_t)c->fresh.added,
                                          "changed", (json_int_t)c->fresh.changed, "deleted",
                                          (json_int_t)c->fresh.deleted)
                              : json_null();
        /* files update skips by design (binary, too large, unreadable) are not pending */
        json_t *skipped = c->fresh_known ? wire_skipped(&c->fresh) : json_null();
        json_array_append_new(cols, json_pack("{s:o, s:o, s:I, s:o, s:o, s:o}", "name",
                                              js_str(c->name), "path", js_str(c->path), "notes",
                                              (json_int_t)c->notes, "pending", pending, "skipped",
                                              skipped, "problem",
                                              c->problem ? js_str(c->problem) : json_null()));
    }
    json_t *last = json_null();
    if (st.last_update > 0) {
        char when[32];
        time_t t = (time_t)st.last_update;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        last = json_string(when);
    }
    /* The watcher is the daemon's (null without one); snapshot: null while
     * the index has none (never updated). */
    json_t *snap = json_null();
    if (st.snapshot.id) {
        char when[32];
        time_t t = (time_t)st.snapshot.created_at;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snap = json_pack("{s:I, s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "id",
                         (json_int_t)st.snapshot.id, "time", when, "kind", st.snapshot.kind, "note",
                         js_str(st.snapshot.note ? st.snapshot.note : ""), "notes",
                         (json_int_t)st.snapshot.docs, "chunks", (json_int_t)st.snapshot.chunks,
                         "links", (json_int_t)st.snapshot.links, "added",
                         (json_int_t)st.snapshot.added, "removed", (json_int_t)st.snapshot.removed,
                         "modified", (json_int_t)st.snapshot.modified);
        /* past the agent boundary what a snapshot changed is not told (-1) */
        if (st.snapshot.added < 0) {
            json_object_del(snap, "added");
            json_object_del(snap, "removed");
            json_object_del(snap, "modified");
        }
    }
    json_t *watcher = daemon ? json_incref(json_object_get(daemon, "watcher")) : NULL;
    json_decref(daemon);
    json_t *o = json_pack("{s:b, s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:o}",
                          "index_exists", st.index_exists, "last_update", last,
                          "notes", (json_int_t)st.counts.docs,
                          "chunks", (json_int_t)st.counts.chunks,
                          "links", (json_int_t)st.counts.links,
                          "dangling_links", (json_int_t)st.counts.dangling,
                          "collections", cols, "snapshot", snap, "watcher",
                          watcher ? watcher : json_null(), "model",
                          model_json(s));
    api_status_free(&st);
    return tool_result(ss, o, NULL);
}

/* ---- the tool table ---- */

static const tool_def tool_defs[] = {
    {"search", "Search notes", search_desc, tool_search, 0, search_args, search_out},
    {"vsearch", "Search notes by meaning", vsearch_desc, tool_vsearch, 1, search_args, search_out},
    {"query", "Best-answer search", query_desc, tool_query, 0, query_args, search_out},
    {"get", "Read notes", get_desc, tool_get, 0, get_args, get_out},
    {"multi_get", "Read several notes", multi_get_desc, tool_multi_get, 0, multi_get_args,
     multi_get_out},
    {"links", "Links of a note", links_desc, tool_links, 0, links_args, links_out},
    {"similar", "Similar notes", similar_desc, tool_similar, 0, similar_args, search_out},
    {"status", "Index status", status_desc, tool_status, 0, no_args, status_out},
};
#define N_TOOLS (sizeof tool_defs / sizeof *tool_defs)

static json_t *schema(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j) {
        /* A typo in the literals above: caught by every test run. */
        fprintf(stderr, "trove mcp: bad built-in schema: %s at %d\n", e.text, e.position);
        abort();
    }
    return j;
}

/* The tools this server offers: all but those needing a model it lacks. */
static int offered(const tool_def *t, int with_vectors)
{
    return !t->needs_model || with_vectors;
}

json_t *mcp_tools_build(int structured, int with_vectors)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < N_TOOLS; i++) {
        const tool_def *d = &tool_defs[i];
        if (!offered(d, with_vectors))
            continue;
        json_t *t = json_pack("{s:s, s:s, s:o}", "name", d->name, "description", d->desc,
                              "inputSchema", object_schema(d->args));
        if (structured) {
            json_object_set_new(t, "title", json_string(d->title));
            json_object_set_new(t, "outputSchema", schema(d->out));
        }
        json_object_set_new(t, "annotations",
                            json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", d->title,
                                      "readOnlyHint", 1, "destructiveHint", 0,
                                      "idempotentHint", 1, "openWorldHint", 0));
        json_array_append_new(arr, t);
    }
    return arr;
}

json_t *mcp_tools_call(mcp_server *s, const mcp_session *ss, json_t *params, mcp_error *err)
{
    json_t *name = json_object_get(params, "name");
    json_t *args = json_object_get(params, "arguments");
    if (!json_is_string(name)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "tools/call: 'name' must be a string");
        return NULL;
    }
    if (args && !json_is_null(args) && !json_is_object(args)) {
        mcp_err_set(err, MCP_INVALID_PARAMS, "tools/call: 'arguments' must be an object");
        return NULL;
    }
    const tool_def *t = NULL;
    for (size_t k = 0; k < N_TOOLS && !t; k++)
        if (offered(&tool_defs[k], s->model != NULL) &&
            strcmp(tool_defs[k].name, json_string_value(name)) == 0)
            t = &tool_defs[k];
    if (!t) {
        tbuf names = {0};
        for (size_t k = 0; k < N_TOOLS; k++)
            if (offered(&tool_defs[k], s->model != NULL))
                tbuf_printf(&names, "%s%s", names.len ? ", " : "", tool_defs[k].name);
        mcp_err_set(err, MCP_INVALID_PARAMS, "unknown tool '%.100s' (tools: %s)",
                    json_string_value(name), names.data);
        tbuf_free(&names);
        return NULL;
    }
    json_t *empty = NULL;
    if (!args || json_is_null(args))
        args = empty = json_object();
    json_t *out = NULL;
    if (check_fields(t->name, NULL, t->args, args, err)) {
        trove_errclear();
        out = t->fn(s, ss, t, args, err);
    }
    json_decref(empty);
    return out;
}
