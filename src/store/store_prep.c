/* store_prep — what a note's insert derives without the database
 * (store.h, store_prep): pure functions of the note, safe on any thread. */
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "md/md.h"
#include "text/tok.h"
#include "text/transl.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/str.h"

/* Title: frontmatter title, else first H1, else the file name without .md. */
static char *note_title(const store_note *note)
{
    if (note->md->title && *note->md->title)
        return xstrdup(note->md->title);
    const char *base = str_basename(note->path);
    size_t len = strlen(base);
    if (len > 3 && strcmp(base + len - 3, ".md") == 0)
        len -= 3;
    return xstrndup(base, len);
}

static char *join_heading_path(const chunk *c)
{
    tbuf b = {0};
    for (size_t i = 0; i < c->n_heading_path; i++) {
        if (i)
            tbuf_putc(&b, '\x1f');
        tbuf_puts(&b, c->heading_path[i]);
    }
    return tbuf_detach(&b);
}

/* The heading column carries the note title and the heading path so that
 * words of titles and headings count for every chunk below them. */
static char *fts_heading(const chunk *c, const char *title)
{
    tbuf b = {0};
    tbuf_puts(&b, title);
    size_t first = c->n_heading_path && strcmp(c->heading_path[0], title) == 0;
    for (size_t h = first; h < c->n_heading_path; h++) {
        tbuf_puts(&b, " \n");
        tbuf_puts(&b, c->heading_path[h]);
    }
    return tbuf_detach(&b);
}

/* Link key relative to the linking note: markdown links are relative paths
 * ("../b.md"), wikilinks are names or vault paths. */
static char *link_key(const char *src_path, const md_link *l)
{
    if (l->kind != MD_LINK_MARKDOWN || l->target[0] == '/')
        return str_note_key(l->target, strlen(l->target));
    tbuf b = {0};
    const char *slash = strrchr(src_path, '/');
    if (slash)
        tbuf_append(&b, src_path, (size_t)(slash - src_path + 1));
    tbuf_puts(&b, l->target);
    /* Collapse "." and ".." segments. */
    char **segs = NULL;
    size_t n = 0, cap = 0;
    char *save = NULL;
    for (char *seg = strtok_r(b.data, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (strcmp(seg, ".") == 0)
            continue;
        if (strcmp(seg, "..") == 0) {
            if (n)
                n--;
            continue;
        }
        xgrow(&segs, &cap, n + 1, sizeof *segs);
        segs[n++] = seg;
    }
    tbuf joined = {0};
    for (size_t i = 0; i < n; i++) {
        if (i)
            tbuf_putc(&joined, '/');
        tbuf_puts(&joined, segs[i]);
    }
    free(segs);
    char *key = str_note_key(tbuf_cstr(&joined), joined.len);
    tbuf_free(&joined);
    tbuf_free(&b);
    return key;
}

void store_note_prepare(const store_note *note, tok_tape *tape, store_prep *p)
{
    memset(p, 0, sizeof *p);
    const md_doc *md = note->md;
    store_docid(note->collection, note->path, p->docid);
    p->title = note_title(note);
    p->path_key = str_note_key(note->path, strlen(note->path));
    p->stem = xstrdup(str_basename(p->path_key));
    const char *base = str_basename(note->path);
    size_t base_len = strlen(base);
    if (base_len > 3 && strcmp(base + base_len - 3, ".md") == 0)
        base_len -= 3;
    p->filename = xstrndup(base, base_len);
    /* the insert's trove_tkey(path, permalink): without frontmatter fields
     * there is no permalink, and the key is the path's */
    if (!md->meta_json) {
        p->tkey_known = 1;
        p->tkey = transl_key(note->path, NULL);
    }

    const chunk_list *cl = note->chunks;
    p->n_chunks = cl->n;
    p->headings = xcalloc(cl->n ? cl->n : 1, sizeof *p->headings);
    p->fts_heads = xcalloc(cl->n ? cl->n : 1, sizeof *p->fts_heads);
    p->fts_bodies = xcalloc(cl->n ? cl->n : 1, sizeof *p->fts_bodies);
    p->fts_head_lens = xcalloc(cl->n ? cl->n : 1, sizeof *p->fts_head_lens);
    p->fts_body_lens = xcalloc(cl->n ? cl->n : 1, sizeof *p->fts_body_lens);
    for (size_t i = 0; i < cl->n; i++) {
        const chunk *c = &cl->items[i];
        p->headings[i] = join_heading_path(c);
        p->fts_heads[i] = fts_heading(c, p->title);
        p->fts_bodies[i] = md_clean_text(note->text + c->start_byte, c->end_byte - c->start_byte);
        p->fts_head_lens[i] = strlen(p->fts_heads[i]);
        p->fts_body_lens[i] = strlen(p->fts_bodies[i]);
    }

    tbuf aliases = {0};
    p->n_aliases = md->n_aliases;
    p->alias_keys = xcalloc(md->n_aliases ? md->n_aliases : 1, sizeof *p->alias_keys);
    for (size_t i = 0; i < md->n_aliases; i++) {
        if (aliases.len)
            tbuf_putc(&aliases, '\n');
        tbuf_puts(&aliases, md->aliases[i]);
        p->alias_keys[i] = str_fold(md->aliases[i]);
    }
    p->aliases = xstrdup(tbuf_cstr(&aliases));
    tbuf_free(&aliases);

    p->n_links = md->n_links;
    p->link_keys = xcalloc(md->n_links ? md->n_links : 1, sizeof *p->link_keys);
    for (size_t i = 0; i < md->n_links; i++)
        if (md->links[i].target[0])
            p->link_keys[i] = link_key(note->path, &md->links[i]);

    if (!tape)
        return;
    p->tape = *tape;
    memset(tape, 0, sizeof *tape);
    /* in the order store_doc_insert writes them: FTS5 asks in that order */
    for (size_t i = 0; i < cl->n; i++) {
        tok_tape_record(&p->tape, p->fts_heads[i], p->fts_head_lens[i]);
        tok_tape_record(&p->tape, p->fts_bodies[i], p->fts_body_lens[i]);
    }
    tok_tape_record(&p->tape, p->title, strlen(p->title));
    tok_tape_record(&p->tape, p->aliases, strlen(p->aliases));
    tok_tape_record(&p->tape, p->filename, strlen(p->filename));
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void store_prep_free(store_prep *p)
{
    free(p->title);
    free(p->path_key);
    free(p->stem);
    free(p->filename);
    free(p->tkey);
    free_strings(p->headings, p->n_chunks);
    free_strings(p->fts_heads, p->n_chunks);
    free_strings(p->fts_bodies, p->n_chunks);
    free(p->fts_head_lens);
    free(p->fts_body_lens);
    free(p->aliases);
    free_strings(p->alias_keys, p->n_aliases);
    free_strings(p->link_keys, p->n_links);
    tok_tape_free(&p->tape);
    memset(p, 0, sizeof *p);
}
