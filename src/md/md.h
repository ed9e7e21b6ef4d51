/* md — parse one markdown note into what the index needs.
 *
 * md_parse() reads the raw bytes of a file (BOM, CRLF and invalid UTF-8
 * allowed) and fills an md_doc: frontmatter fields, the heading list, code
 * spans, links and tags. All byte offsets are into the raw input as given
 * (BOM included); all line numbers are 1-based lines of the raw input, so
 * they match the file on disk, frontmatter included. Every string in md_doc
 * is valid UTF-8 (invalid bytes replaced by U+FFFD), NUL-terminated, and
 * owned by the md_doc; md_doc_free() releases them all. */
#ifndef TROVE_MD_H
#define TROVE_MD_H

#include <stddef.h>

#include "util/err.h"

typedef struct md_heading {
    int level;          /* 1..6 */
    char *text;         /* inline markup kept as written, trimmed */
    size_t start_byte;  /* start of the heading line (ATX) or text line (setext) */
    size_t end_byte;    /* end of the heading, after its newline/underline */
    int line;           /* 1-based line of the heading text */
} md_heading;

typedef enum md_link_kind {
    MD_LINK_WIKI,      /* [[target]] */
    MD_LINK_EMBED,     /* ![[target]] */
    MD_LINK_MARKDOWN,  /* [text](relative/path.md) to a local .md file */
} md_link_kind;

typedef struct md_link {
    md_link_kind kind;
    char *target;       /* note part: "folder/Note" or "Note" (no #fragment,
                           no |display; markdown links URL-decoded, ".md" kept
                           as written); "" for same-note links like [[#h]] */
    char *fragment;     /* "heading" or "^block-id" after '#', or NULL */
    char *display;      /* text after '|' or markdown link text, or NULL */
    size_t start_byte;  /* offset of the opening "[[" / "![[" / "[" */
    int line;
} md_link;

typedef struct md_span {
    size_t start, end;  /* byte range [start, end) */
} md_span;

typedef struct md_doc {
    int has_frontmatter; /* a closed ---/--- block opens the file; its YAML
                            may still be malformed (then warning is set and
                            title/aliases/tags/meta_json come from no YAML) */
    char *title;        /* frontmatter title, else first H1 text, else NULL */
    char **aliases;     /* frontmatter aliases (string or list), deduplicated */
    size_t n_aliases;
    char **tags;        /* frontmatter tags + inline #tags, without '#',
                           lower-cased, deduplicated, in first-seen order */
    size_t n_tags;
    char *meta_json;    /* other frontmatter keys as a JSON object, or NULL;
                           plain scalars typed (null, true/false, numbers),
                           quoted ones and dates text */
    size_t body_start;  /* first byte after the frontmatter (after BOM if none) */
    int body_line;      /* 1-based line at body_start */
    md_heading *headings;
    size_t n_headings;
    md_link *links;
    size_t n_links;
    md_span *code;      /* fenced and indented code blocks, in order */
    size_t n_code;
    int n_lines;        /* lines in the file (a final line without '\n' counts) */
    char *warning;      /* non-fatal problem, e.g. "malformed frontmatter at
                           line 3: ...", or NULL; parsing continues */
} md_doc;

/* Parse `len` bytes at `src` (need not be NUL-terminated). On success *out is
 * filled and must be released with md_doc_free(). Fails only with
 * TROVE_ENOMEM-class problems; malformed input yields a warning instead. */
trove_err md_parse(const char *src, size_t len, md_doc *out);
void md_doc_free(md_doc *doc);

/* meta_json of an index older than typed values (every scalar text),
 * with each text typed as a plain scalar would be; NULL when `json` is not
 * JSON. Caller frees. */
char *md_meta_retype(const char *json);

/* Copy `len` raw bytes to a NUL-terminated string with CR before LF removed
 * and invalid UTF-8 sequences replaced by U+FFFD. Caller frees. */
char *md_clean_text(const char *src, size_t len);

#endif
