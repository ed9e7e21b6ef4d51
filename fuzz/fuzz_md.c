/* Fuzz md_parse + chunk_note and check their invariants; abort on any
 * violation so the fuzzer (or the seed driver under ASan) reports it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk/chunk.h"
#include "md/md.h"

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "fuzz_md: invariant failed: %s (line %d)\n", #cond, \
                    __LINE__);                                                   \
            abort();                                                             \
        }                                                                        \
    } while (0)

static int valid_utf8(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned c = *u;
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!k)
            return 0;
        for (size_t i = 1; i < k; i++)
            if ((u[i] & 0xC0) != 0x80)
                return 0;
        u += k;
    }
    return 1;
}

static int line_at(const uint8_t *d, size_t pos)
{
    int n = 1;
    for (size_t i = 0; i < pos; i++)
        n += d[i] == '\n';
    return n;
}

static void check_doc(const uint8_t *d, size_t n, const md_doc *doc)
{
    CHECK(doc->body_start <= n);
    CHECK(doc->body_line == line_at(d, doc->body_start));
    if (doc->title)
        CHECK(valid_utf8(doc->title));
    if (doc->warning)
        CHECK(valid_utf8(doc->warning));
    if (doc->meta_json)
        CHECK(doc->meta_json[0] == '{' && valid_utf8(doc->meta_json));
    for (size_t i = 0; i < doc->n_aliases; i++)
        CHECK(valid_utf8(doc->aliases[i]) && doc->aliases[i][0]);
    for (size_t i = 0; i < doc->n_tags; i++) {
        CHECK(valid_utf8(doc->tags[i]) && doc->tags[i][0]);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(doc->tags[i], doc->tags[j]) != 0);
    }
    for (size_t i = 0; i < doc->n_headings; i++) {
        const md_heading *h = &doc->headings[i];
        CHECK(h->level >= 1 && h->level <= 6 && valid_utf8(h->text));
        CHECK(h->start_byte >= doc->body_start && h->start_byte < h->end_byte && h->end_byte <= n);
        CHECK(h->line == line_at(d, h->start_byte));
        if (i)
            CHECK(h->start_byte >= doc->headings[i - 1].end_byte);
    }
    for (size_t i = 0; i < doc->n_code; i++) {
        const md_span *c = &doc->code[i];
        CHECK(c->start >= doc->body_start && c->start < c->end && c->end <= n);
        if (i)
            CHECK(c->start >= doc->code[i - 1].end);
        for (size_t h = 0; h < doc->n_headings; h++)
            CHECK(doc->headings[h].start_byte < c->start || doc->headings[h].start_byte >= c->end);
    }
    for (size_t i = 0; i < doc->n_links; i++) {
        const md_link *l = &doc->links[i];
        CHECK(l->target && valid_utf8(l->target));
        CHECK(!l->fragment || valid_utf8(l->fragment));
        CHECK(!l->display || valid_utf8(l->display));
        CHECK(l->start_byte >= doc->body_start && l->start_byte < n);
        CHECK(l->line == line_at(d, l->start_byte));
        for (size_t c = 0; c < doc->n_code; c++)
            CHECK(l->start_byte < doc->code[c].start || l->start_byte >= doc->code[c].end);
    }
}

static int is_ws(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static void check_chunks(const uint8_t *d, size_t n, const md_doc *doc, const chunk_list *cl)
{
    size_t covered = doc->body_start;
    for (size_t i = 0; i < cl->n; i++) {
        const chunk *c = &cl->items[i];
        CHECK(c->start_byte >= doc->body_start && c->start_byte < c->end_byte && c->end_byte <= n);
        if (i) {
            CHECK(c->start_byte > cl->items[i - 1].start_byte);
            CHECK(c->end_byte > cl->items[i - 1].end_byte);
        }
        CHECK(c->line_start == line_at(d, c->start_byte));
        CHECK(c->line_end == line_at(d, c->end_byte - 1));
        CHECK(c->tokens == chunk_estimate_tokens((const char *)d + c->start_byte,
                                                 c->end_byte - c->start_byte));
        for (size_t k = 0; k < doc->n_code; k++) {
            const md_span *s = &doc->code[k];
            CHECK(!(s->start < c->start_byte && c->start_byte < s->end));
            CHECK(!(s->start < c->end_byte && c->end_byte < s->end));
        }
        for (size_t k = 0; k < c->n_heading_path; k++)
            CHECK(valid_utf8(c->heading_path[k]));
        /* Anything skipped between chunks is white space. */
        for (size_t k = covered; k < c->start_byte; k++)
            CHECK(is_ws(d[k]));
        if (c->end_byte > covered)
            covered = c->end_byte;
    }
    for (size_t k = covered; k < n; k++)
        CHECK(is_ws(d[k]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *clean = md_clean_text((const char *)data, size);
    CHECK(valid_utf8(clean));
    free(clean);
    md_doc doc;
    CHECK(md_parse((const char *)data, size, &doc) == TROVE_OK);
    check_doc(data, size, &doc);
    /* A small target exercises the splitting paths on small inputs. */
    chunk_opts opts[2] = {CHUNK_OPTS_DEFAULT, {24, 6}};
    for (int k = 0; k < 2; k++) {
        chunk_list cl;
        CHECK(chunk_note((const char *)data, size, &doc, &opts[k], &cl) == TROVE_OK);
        check_chunks(data, size, &doc, &cl);
        chunk_list_free(&cl);
    }
    md_doc_free(&doc);
    return 0;
}
