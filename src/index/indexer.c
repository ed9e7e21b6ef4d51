#include "index/indexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "fs/walk.h"
#include "text/lang.h"
#include "text/tok.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/str.h"
#include "util/thread.h"

/* A number from the environment, else dflt. */
static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return dflt;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > 1024 ? dflt : x;
}

void index_opts_init(index_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_file_bytes = INDEX_DEFAULT_MAX_FILE_BYTES;
    o->chunk = CHUNK_OPTS_DEFAULT;
    o->workers = (int)env_long("TROVE_INDEX_WORKERS", -1);
    o->queue = (size_t)env_long("TROVE_INDEX_QUEUE", INDEX_DEFAULT_QUEUE);
}

/* One file found by the walk. */
typedef struct found {
    char *path;
    int64_t size, mtime_ns;
} found;

typedef struct run {
    store *st;
    const config *cfg;          /* the other collections (nested ones); may be NULL */
    const config_collection *coll;
    const index_opts *opts;
    index_stats *stats;
    int64_t collection_id;
    int root_fd;                /* the collection's folder (-1: none; read_note's slow path) */
    /* The walk's files that need a look: new ones and those whose (size,
     * mtime) differ from the index's; the unchanged ones are only counted
     * (n_fresh), their rows marked seen, so a no-op update copies no path. */
    found *files;
    size_t n_files, cap_files;
    size_t n_walked;    /* every file the walk reported */
    size_t n_known;     /* ... of which the index has a row for */
    size_t n_fresh;     /* ... unchanged by (size, mtime) */
    /* Indexed documents of the collection and an open-addressing table of
     * their paths, so each walked file finds its row in O(1). */
    store_file *old;
    size_t n_old;
    size_t *slots;      /* index+1 into old, 0 = empty */
    size_t n_slots;
    uint64_t *new_hashes;   /* content hashes of notes added in this run */
    unsigned char *new_used; /* per new hash: already matched to a removed note */
    size_t n_new, cap_new;
} run;

static void warnf(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->opts->warn)
        r->opts->warn(r->opts->warn_ctx, line);
}

static store_file *lookup_old(run *r, const char *path);

/* One walked file against the index's row of its path: an unchanged one
 * is counted and its row marked, the others kept for a look. */
static void compare_walked(run *r, const char *relpath, int64_t size, int64_t mtime_ns)
{
    r->n_walked++;
    store_file *old = lookup_old(r, relpath);
    r->n_known += old != NULL;
    if (old && old->size == size && old->mtime_ns == mtime_ns) {
        old->seen = 1;
        r->n_fresh++;
    } else {
        xgrow(&r->files, &r->cap_files, r->n_files + 1, sizeof *r->files);
        found *f = &r->files[r->n_files++];
        f->path = xstrdup(relpath);
        f->size = size;
        f->mtime_ns = mtime_ns;
    }
}

/* ---- the walk on a thread of its own ----
 *
 * The walk (system calls: a stat per note) and the read of the indexed
 * rows (SQLite) do not depend on each other, so the walk runs on a second
 * thread while the caller's thread reads the rows; the walked files are
 * compared once both are done. The walk's thread touches nothing of the
 * run but the options: what it finds (files in walk order, warnings in
 * order, its error) is kept and replayed on the caller's thread, so the
 * results, warnings and their order are those of a walk on one thread. */
typedef struct walked {
    size_t path;            /* offset of its relative path in paths */
    int64_t size, mtime_ns;
} walked;

typedef struct walk_job {
    walk_opts wo;
    volatile sig_atomic_t *interrupted;
    walked *files;
    size_t n_files, cap_files;
    tbuf paths;             /* relative paths, each ending in '\0' */
    char **warns;
    size_t n_warns, cap_warns;
    trove_err rc;
    char *errmsg;           /* rc's message */
} walk_job;

static int job_file(void *ctx, const char *relpath, const struct stat *sb)
{
    walk_job *j = ctx;
    xgrow(&j->files, &j->cap_files, j->n_files + 1, sizeof *j->files);
    j->files[j->n_files++] = (walked){
        j->paths.len, (int64_t)sb->st_size,
        (int64_t)sb->st_mtim.tv_sec * 1000000000 + sb->st_mtim.tv_nsec};
    tbuf_append(&j->paths, relpath, strlen(relpath) + 1);
    return j->interrupted && *j->interrupted;
}

static void job_warning(void *ctx, const char *message)
{
    walk_job *j = ctx;
    xgrow(&j->warns, &j->cap_warns, j->n_warns + 1, sizeof *j->warns);
    j->warns[j->n_warns++] = xstrdup(message);
}

static void *job_walk(void *arg)
{
    walk_job *j = arg;
    walk_callbacks cb = {.ctx = j, .on_file = job_file, .on_warning = job_warning};
    j->rc = walk_tree(&j->wo, &cb);
    if (j->rc)
        j->errmsg = xstrdup(trove_errmsg());
    return NULL;
}

static void job_free(walk_job *j)
{
    for (size_t i = 0; i < j->n_warns; i++)
        free(j->warns[i]);
    free(j->warns);
    free(j->files);
    tbuf_free(&j->paths);
    free(j->errmsg);
}

static void build_path_table(run *r)
{
    r->n_slots = 16;
    while (r->n_slots < r->n_old * 2)
        r->n_slots *= 2;
    r->slots = xcalloc(r->n_slots, sizeof *r->slots);
    for (size_t i = 0; i < r->n_old; i++) {
        size_t h = (size_t)str_hash(r->old[i].path, strlen(r->old[i].path)) & (r->n_slots - 1);
        while (r->slots[h])
            h = (h + 1) & (r->n_slots - 1);
        r->slots[h] = i + 1;
    }
}

static store_file *lookup_old(run *r, const char *path)
{
    size_t h = (size_t)str_hash(path, strlen(path)) & (r->n_slots - 1);
    while (r->slots[h]) {
        store_file *f = &r->old[r->slots[h] - 1];
        if (strcmp(f->path, path) == 0)
            return f;
        h = (h + 1) & (r->n_slots - 1);
    }
    return NULL;
}

/* A NUL byte in the first 8 KiB marks a binary file, as git decides. */
static int looks_binary(const char *data, size_t len)
{
    return memchr(data, '\0', len < 8192 ? len : 8192) != NULL;
}

/* The file ROOT/REL opened by openat2(2) with RESOLVE_BENEATH, which fails
 * rather than leave the folder, through a symlink or "..": what it opens lies
 * inside the real path of ROOT, as fs_read_inside() requires. -1 when it
 * cannot say (no openat2, a symlink out and back in, an absolute symlink, an
 * error): the caller then asks fs_read_inside(), whose answer and message
 * are the rule's. O_NONBLOCK: a FIFO put there opens without waiting. */
static int open_beneath(int root_fd, const char *rel)
{
#ifdef SYS_openat2
    if (root_fd < 0)
        return -1;
    struct open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    long fd;
    do
        fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return (int)fd;
#else
    (void)root_fd;
    (void)rel;
    return -1;
#endif
}

/* Read one walked note by fs_read_inside()'s rule. The rule resolves the
 * note's and the folder's paths with realpath(3), a readlink per component
 * (9 per tldr page, 15% of `update`'s profile there), so a regular file
 * that openat2 finds beneath the folder is read from there; anything else
 * takes fs_read_inside(). */
static trove_err read_note(const run *r, const found *f, char **text, size_t *len)
{
    int fd = open_beneath(r->root_fd, f->path);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        size_t cap = (size_t)sb.st_size + 1, n = 0;
        char *buf = xmalloc(cap + 1);
        ssize_t got;
        do {
            if (n == cap)
                buf = xrealloc(buf, (cap *= 2) + 1);
            got = read(fd, buf + n, cap - n);
            if (got > 0)
                n += (size_t)got;
            /* A regular file that gave fewer bytes than asked for, as many
             * as fstat counted, is at its end: the read that would say so
             * (one system call per note) is not made. */
            if (got > 0 && n < cap && n == (size_t)sb.st_size)
                got = 0;
        } while (got > 0 || (got < 0 && errno == EINTR));
        close(fd);
        if (got == 0) {
            buf[n] = '\0';
            *text = buf;
            *len = n;
            return TROVE_OK;
        }
        free(buf);    /* a read error: the slow path says what it is */
    } else if (fd >= 0) {
        close(fd);
    }
    return fs_read_inside(r->coll->path, f->path, 0, text, len);
}

/* One walked file made ready for the writer by prepare(), on a worker or
 * on the writer's own thread: what apply() needs, nothing of the store. */
enum { PREP_LARGE, PREP_UNREADABLE, PREP_BINARY, PREP_SAME, PREP_FAIL, PREP_NOTE };

typedef struct prepared {
    int kind;                   /* PREP_* */
    trove_err rc;               /* PREP_UNREADABLE, PREP_FAIL: the error */
    char *errmsg;               /* ... and its message */
    char **warns;               /* warnings of the parse, in order */
    size_t n_warns, cap_warns;
    char *text;
    size_t len;
    uint64_t hash;
    md_doc md;
    int have_md;
    chunk_list chunks;
    const char *lang;
    store_prep prep;
    int have_prep;
} prepared;

static void prepare_note(const run *r, const found *f, tok_tape *tape, prepared *p);

static void prepared_warn(prepared *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void prepared_warn(prepared *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    xgrow(&p->warns, &p->cap_warns, p->n_warns + 1, sizeof *p->warns);
    p->warns[p->n_warns++] = xstrdup(line);
}

static void prepared_free(prepared *p)
{
    for (size_t i = 0; i < p->n_warns; i++)
        free(p->warns[i]);
    free(p->warns);
    free(p->errmsg);
    free(p->text);
    if (p->have_prep)
        store_prep_free(&p->prep);
    chunk_list_free(&p->chunks);
    if (p->have_md)
        md_doc_free(&p->md);
    memset(p, 0, sizeof *p);
}

static void prepared_fail(prepared *p, int kind, trove_err rc)
{
    p->kind = kind;
    p->rc = rc;
    p->errmsg = xstrdup(trove_errmsg());
    trove_errclear();
}

static store_note note_of(const run *r, const found *f, const prepared *p)
{
    return (store_note){
        .collection_id = r->collection_id,
        .collection = r->coll->name,
        .path = f->path,
        .text = p->text,
        .len = p->len,
        .mtime_ns = f->mtime_ns,
        .hash = p->hash,
        .md = &p->md,
        .chunks = &p->chunks,
        .lang = p->lang,
        .prep = p->have_prep ? &p->prep : NULL,
    };
}

/* Read, hash, parse, chunk, detect the language and prepare the insert
 * (with the full-text tokens, on *tape's arrays, when tape is not NULL;
 * *tape is taken over or freed) of one walked file. Reads the run but
 * writes nothing of it: the writer's thread may be using it. */
static void prepare(const run *r, const found *f, tok_tape *tape, prepared *p)
{
    memset(p, 0, sizeof *p);
    prepare_note(r, f, tape, p);
    if (tape)
        tok_tape_free(tape);   /* not a note: nothing to record */
}

static void prepare_note(const run *r, const found *f, tok_tape *tape, prepared *p)
{
    if ((size_t)f->size > r->opts->max_file_bytes) {
        p->kind = PREP_LARGE;
        return;
    }
    /* The collection rule again at read time: the file may have become a
     * symlink out of the collection since the walk. */
    trove_err rc = read_note(r, f, &p->text, &p->len);
    if (rc != TROVE_OK) {
        prepared_fail(p, PREP_UNREADABLE, rc);
        return;
    }
    if (looks_binary(p->text, p->len)) {
        p->kind = PREP_BINARY;
        return;
    }
    p->hash = str_hash(p->text, p->len);
    /* old rows' hashes are not written during a run (the writer sets only
     * `seen`), so this lookup is safe beside it */
    const store_file *old = lookup_old((run *)r, f->path);
    if (old && old->hash == p->hash) {
        p->kind = PREP_SAME;
        return;
    }
    if ((rc = md_parse(p->text, p->len, &p->md)) != TROVE_OK) {
        prepared_fail(p, PREP_FAIL, rc);
        return;
    }
    p->have_md = 1;
    if (p->md.warning)
        prepared_warn(p, "%s/%s: %s", r->coll->path, f->path, p->md.warning);
    size_t bad = str_utf8_invalid_at(p->text, p->len);
    if (bad != (size_t)-1)
        prepared_warn(p, "%s/%s: invalid UTF-8 at byte %zu; indexed with U+FFFD in its place",
                      r->coll->path, f->path, bad);
    if ((rc = chunk_note(p->text, p->len, &p->md, &r->opts->chunk, &p->chunks)) != TROVE_OK) {
        prepared_fail(p, PREP_FAIL, rc);
        return;
    }
    p->lang = lang_code(lang_detect(p->text + p->md.body_start, p->len - p->md.body_start));
    p->kind = PREP_NOTE;
    store_note note = note_of(r, f, p);
    store_note_prepare(&note, tape, &p->prep);
    p->have_prep = 1;
}

/* Bring one walked file up to date from what prepare() made of it. Store
 * errors abort the run; problems of the file itself are warnings. */
static trove_err apply(run *r, const found *f, const prepared *p)
{
    /* (size, mtime) differ from the index's, or the file is new: the walk
     * counted the unchanged ones (on_walk_file) */
    store_file *old = lookup_old(r, f->path);
    switch (p->kind) {
    case PREP_LARGE:
        warnf(r, "%s/%s: skipped, %lld bytes is over the %zu-byte limit", r->coll->path, f->path,
              (long long)f->size, r->opts->max_file_bytes);
        r->stats->skipped++;
        return TROVE_OK;   /* an old version, if any, is removed as unseen */
    case PREP_UNREADABLE:
        warnf(r, "%s; skipped", p->errmsg);
        r->stats->skipped++;
        if (old && p->rc != TROVE_EACCES)
            old->seen = 1;  /* keep the last good version rather than lose it */
        return TROVE_OK;
    case PREP_BINARY:
        warnf(r, "%s/%s: skipped, binary file", r->coll->path, f->path);
        r->stats->skipped++;
        return TROVE_OK;
    case PREP_SAME:
        old->seen = 1;
        r->stats->unchanged++;
        return store_doc_touch(r->st, old->id, f->size, f->mtime_ns);
    default:
        break;
    }
    if (old) {
        old->seen = 1;
        trove_err rc = store_doc_delete(r->st, old->id);
        if (rc)
            return rc;
        r->stats->updated++;
    } else {
        r->stats->added++;
        xgrow(&r->new_hashes, &r->cap_new, r->n_new + 1, sizeof *r->new_hashes);
        r->new_hashes[r->n_new++] = p->hash;
    }
    for (size_t i = 0; i < p->n_warns; i++)
        warnf(r, "%s", p->warns[i]);
    if (p->kind == PREP_FAIL)
        return trove_fail(p->rc, "%s", p->errmsg);
    store_note note = note_of(r, f, p);
    int64_t id;
    return store_doc_insert(r->st, &note, &id);
}

/* ---- the files of a run, prepared ahead of the writer ----
 *
 * Workers take the files in walk order (next) and put what they made in a
 * ring of `depth` slots; the writer (the caller's thread) takes file i from
 * slot i % depth when it is ready, so it writes in walk order whatever the
 * workers' timing, and the index is the same as a run without workers. A
 * worker takes file i only while i < taken + depth, and beyond the writer's
 * next file only while the claimed files' sizes stay under PIPE_BYTES.
 *
 * The writer's side takes no lock while nobody waits: `full` and `taken`
 * are atomics, and each side, before it sleeps, says so (writer_waits,
 * workers_wait) and looks again — sequentially consistent, so of a store
 * and the other side's look at it, one sees the other, and a wake-up (sent
 * under the mutex) is never lost. A lock and a futex call per file cost
 * the writer more than the file's FTS5 hash writes. */
#define PIPE_BYTES ((int64_t)64 << 20)

typedef struct pipe {
    run *r;
    pthread_mutex_t mu;
    pthread_cond_t ready;       /* a slot was filled (the writer waits) */
    pthread_cond_t room;        /* the writer took a file (workers wait) */
    prepared *slots;
    atomic_int *full;           /* per slot: filled, not yet taken */
    size_t depth;
    size_t next;                /* the next file a worker takes (mu) */
    int64_t claimed;            /* sizes of files claimed so far (mu) */
    atomic_size_t taken;        /* files the writer is done with */
    atomic_llong taken_bytes;   /* ... their sizes */
    atomic_int writer_waits;
    atomic_int workers_wait;
    int stop;                   /* (mu) */
    pthread_t *threads;
    size_t n_threads;
} pipe_t;

static int64_t claim_size(const run *r, const found *f)
{
    return (size_t)f->size > r->opts->max_file_bytes ? 0 : f->size;
}

/* May a worker take file i now? (under mu) */
static int pipe_room(pipe_t *q, size_t i, int64_t size)
{
    size_t taken = atomic_load(&q->taken);
    int64_t bytes = q->claimed - atomic_load(&q->taken_bytes);
    return i < taken + q->depth && (i == taken || bytes + size <= PIPE_BYTES);
}

/* A slot's tape keeps its arrays for the next file up to this size (a
 * tldr page's: ~10 KB); a large note's are freed with it. */
#define TAPE_KEEP ((size_t)64 << 10)

/* A worker claims up to this many files at a time (fewer lock round trips). */
#define PIPE_BATCH 8

static void *pipe_worker(void *arg)
{
    pipe_t *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->stop && q->next < q->r->n_files) {
        size_t first = q->next, n = 0;
        while (n < PIPE_BATCH && first + n < q->r->n_files) {
            int64_t size = claim_size(q->r, &q->r->files[first + n]);
            if (!pipe_room(q, first + n, size))
                break;
            q->claimed += size;
            n++;
        }
        if (n == 0) {
            atomic_fetch_add(&q->workers_wait, 1);
            if (!q->stop && !pipe_room(q, first, claim_size(q->r, &q->r->files[first])))
                pthread_cond_wait(&q->room, &q->mu);
            atomic_fetch_sub(&q->workers_wait, 1);
            continue;
        }
        q->next += n;
        pthread_mutex_unlock(&q->mu);
        for (size_t i = first; i < first + n; i++) {
            prepared *p = &q->slots[i % q->depth];
            /* what the writer took from this slot before, but for its
             * tape's arrays: the next note's tokens go there */
            tok_tape tape = {0};
            if (p->have_prep) {
                tape = p->prep.tape;
                memset(&p->prep.tape, 0, sizeof p->prep.tape);
                tok_tape_recycle(&tape, TAPE_KEEP);
            }
            prepared_free(p);
            prepare(q->r, &q->r->files[i], &tape, p);
            atomic_store(&q->full[i % q->depth], 1);
            if (atomic_load(&q->writer_waits)) {
                pthread_mutex_lock(&q->mu);
                pthread_cond_signal(&q->ready);
                pthread_mutex_unlock(&q->mu);
            }
        }
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static size_t online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

/* Start the workers (none: prepare() runs on the writer's thread). */
static void pipe_start(pipe_t *q, run *r)
{
    memset(q, 0, sizeof *q);
    q->r = r;
    size_t n = r->opts->workers >= 0 ? (size_t)r->opts->workers : online_cpus() - 1;
    if (r->opts->workers < 0 && (n > 3 || r->n_files < 16))
        n = r->n_files < 16 ? 0 : 3;   /* a few files: not worth a thread */
    q->depth = n ? (r->opts->queue ? r->opts->queue : 1) : 1;
    q->slots = xcalloc(q->depth, sizeof *q->slots);
    q->full = xcalloc(q->depth, sizeof *q->full);
    for (size_t i = 0; i < q->depth; i++)
        atomic_init(&q->full[i], 0);
    atomic_init(&q->taken, 0);
    atomic_init(&q->taken_bytes, 0);
    atomic_init(&q->writer_waits, 0);
    atomic_init(&q->workers_wait, 0);
    if (n == 0)
        return;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->ready, NULL);
    pthread_cond_init(&q->room, NULL);
    q->threads = xcalloc(n, sizeof *q->threads);
    /* Ctrl-C and the like go to the writer's thread, which checks between
     * files (thread_start). */
    for (size_t i = 0; i < n; i++) {
        if (thread_start(&q->threads[q->n_threads], pipe_worker, q) != 0)
            break;   /* fewer workers (none: the writer prepares) */
        q->n_threads++;
    }
}

/* What prepare() made of file i. The writer prepares it itself (without
 * tokens: FTS5 tokenizes as it inserts) when there are no workers, or when
 * no worker has taken it yet: rather than sleep, it does the work the
 * workers are behind on (a loaded machine, a slow disk). */
static prepared *pipe_get(pipe_t *q, size_t i)
{
    prepared *p = &q->slots[i % q->depth];
    int mine = q->n_threads == 0;
    atomic_int *full = &q->full[i % q->depth];
    if (!mine && !atomic_load(full)) {
        pthread_mutex_lock(&q->mu);
        if (q->next == i) {
            mine = 1;
            q->next++;
            q->claimed += claim_size(q->r, &q->r->files[i]);
        } else {
            atomic_store(&q->writer_waits, 1);
            while (!atomic_load(full))
                pthread_cond_wait(&q->ready, &q->mu);
            atomic_store(&q->writer_waits, 0);
        }
        pthread_mutex_unlock(&q->mu);
    }
    if (mine) {
        prepared_free(p);
        prepare(q->r, &q->r->files[i], NULL, p);
    }
    return p;
}

/* The writer is done with file i; the worker that takes its slot next
 * frees it (the writer has enough to do). */
static void pipe_put(pipe_t *q, size_t i)
{
    if (q->n_threads == 0)
        return;
    atomic_store(&q->full[i % q->depth], 0);
    atomic_fetch_add(&q->taken_bytes, claim_size(q->r, &q->r->files[i]));
    atomic_store(&q->taken, i + 1);
    /* Workers that found the ring full are woken when half of it is free,
     * not at every file: they then fill it without sleeping (a worker that
     * waits for a file this never wakes it for is not needed: the writer
     * prepares an untaken file itself) */
    size_t half = q->depth > 1 ? q->depth / 2 : 1;
    if ((i + 1) % half == 0 && atomic_load(&q->workers_wait)) {
        pthread_mutex_lock(&q->mu);
        pthread_cond_broadcast(&q->room);
        pthread_mutex_unlock(&q->mu);
    }
}

/* Stop the workers (they finish the file in hand) and free what they made. */
static void pipe_stop(pipe_t *q)
{
    if (q->n_threads) {
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        pthread_cond_broadcast(&q->room);
        pthread_mutex_unlock(&q->mu);
        for (size_t i = 0; i < q->n_threads; i++)
            pthread_join(q->threads[i], NULL);
        pthread_cond_destroy(&q->room);
        pthread_cond_destroy(&q->ready);
        pthread_mutex_destroy(&q->mu);
    }
    for (size_t i = 0; i < q->depth; i++)
        prepared_free(&q->slots[i]);
    free(q->threads);
    free(q->slots);
    free(q->full);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Match a removed note's hash against the notes added in this run, each
 * added note at most once (two deleted copies of one text and one new copy
 * are one rename and one deletion). new_hashes is sorted by remove_unseen. */
static int take_new_hash(run *r, uint64_t hash)
{
    uint64_t *hit = bsearch(&hash, r->new_hashes, r->n_new, sizeof *r->new_hashes, cmp_u64);
    if (!hit)
        return 0;
    while (hit > r->new_hashes && hit[-1] == hash)
        hit--;
    for (; hit < r->new_hashes + r->n_new && *hit == hash; hit++) {
        if (r->new_used[hit - r->new_hashes])
            continue;
        r->new_used[hit - r->new_hashes] = 1;
        return 1;
    }
    return 0;
}

/* Notes not seen in the walk are gone; one whose content was just added
 * under another path was renamed. */
static trove_err remove_unseen(run *r)
{
    if (r->n_new > 1)
        qsort(r->new_hashes, r->n_new, sizeof *r->new_hashes, cmp_u64);
    r->new_used = xcalloc(r->n_new ? r->n_new : 1, 1);
    for (size_t i = 0; i < r->n_old; i++) {
        store_file *f = &r->old[i];
        if (f->seen)
            continue;
        trove_err rc = store_doc_delete(r->st, f->id);
        if (rc)
            return rc;
        if (r->n_new && take_new_hash(r, f->hash)) {
            r->stats->renamed++;
            r->stats->added--;
        } else {
            r->stats->removed++;
        }
    }
    return TROVE_OK;
}

static void run_free(run *r)
{
    for (size_t i = 0; i < r->n_files; i++)
        free(r->files[i].path);
    free(r->files);
    store_files_free(r->old, r->n_old);
    free(r->slots);
    free(r->new_hashes);
    free(r->new_used);
    if (r->root_fd >= 0)
        close(r->root_fd);
}

static trove_err check_root(const config_collection *coll)
{
    struct stat sb;
    if (stat(coll->path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return trove_fail(TROVE_ENOENT, "collection '%s': folder %s %s; its indexed notes are "
                          "kept (fix the path or run `trove collection remove %s`)", coll->name,
                          coll->path, stat(coll->path, &sb) != 0 ? "does not exist" : "is not a folder",
                          coll->name);
    return TROVE_OK;
}

/* Folders of other collections nested inside this one, relative to its
 * root: they are indexed by their own collection only, never twice. */
static const char **nested_dirs(const run *r, size_t *n)
{
    *n = 0;
    if (!r->cfg)
        return NULL;
    const char **out = xcalloc(r->cfg->n_collections + 1, sizeof *out);
    for (size_t i = 0; i < r->cfg->n_collections; i++) {
        const char *rel = fs_path_below(r->coll->path, r->cfg->collections[i].path);
        if (rel)
            out[(*n)++] = rel;
    }
    return out;
}

/* Load the indexed files of the collection and walk the folder, the two
 * at once (above); then compare. */
static trove_err scan(run *r, int warn_nested)
{
    const config_collection *coll = r->coll;
    size_t n_skip;
    const char **skip = nested_dirs(r, &n_skip);
    for (size_t i = 0; warn_nested && i < n_skip; i++)
        warnf(r, "collection '%s': folder %s/%s is a collection of its own; its notes are "
              "indexed there, not twice", coll->name, coll->path, skip[i]);
    walk_job j = {
        .wo = {
            .root = coll->path,
            .masks = (const char *const *)coll->masks,
            .n_masks = coll->n_masks,
            .excludes = (const char *const *)coll->excludes,
            .n_excludes = coll->n_excludes,
            .skip_dirs = skip,
            .n_skip_dirs = n_skip,
        },
        .interrupted = r->opts->interrupted,
    };
    /* the walk's own second thread for its stats, beside this one's SQLite */
    j.wo.helpers = online_cpus() > 1;
    pthread_t walker;
    int threaded = thread_start(&walker, job_walk, &j) == 0;
    trove_err rc = store_files(r->st, r->collection_id, &r->old, &r->n_old);
    if (rc == TROVE_OK)
        build_path_table(r);
    if (threaded)
        pthread_join(walker, NULL);
    else
        job_walk(&j);   /* no thread to be had: one after the other */
    free(skip);
    for (size_t i = 0; rc == TROVE_OK && i < j.n_warns; i++)
        warnf(r, "%s", j.warns[i]);
    if (rc == TROVE_OK && j.rc)
        rc = trove_fail(j.rc, "%s", j.errmsg);
    for (size_t i = 0; rc == TROVE_OK && i < j.n_files; i++)
        compare_walked(r, j.paths.data + j.files[i].path, j.files[i].size, j.files[i].mtime_ns);
    job_free(&j);
    return rc;
}

/* The folder the index last knew the collection by (NULL: not indexed
 * yet). Caller frees. */
static trove_err indexed_root(store *st, const char *name, char **root)
{
    *root = NULL;
    store_collection_row *rows;
    size_t n;
    trove_err rc = store_collections_uncounted(st, &rows, &n);
    for (size_t i = 0; rc == TROVE_OK && i < n && !*root; i++)
        if (strcmp(rows[i].name, name) == 0)
            *root = xstrdup(rows[i].root);
    if (rc == TROVE_OK)
        store_collections_free(rows, n);
    return rc;
}

/* The safety net for a folder that is not the one that was indexed: an
 * empty folder (an unmounted disk, a sync that has not run) or a new
 * folder (a changed or mis-resolved `path:`) holding few of the notes
 * would have the update delete them all. Such a collection is left as it
 * is, reported like a missing folder (TROVE_ENOENT). */
static trove_err guard_mass_delete(run *r, const char *old_root)
{
    if (r->n_old == 0)
        return TROVE_OK;
    size_t kept = r->n_known;
    const config_collection *c = r->coll;
    if (r->n_walked == 0)
        return trove_fail(TROVE_ENOENT, "collection '%s': folder %s holds no notes now; its %zu "
                          "indexed notes are kept (if they are gone for good, run `trove "
                          "collection remove %s`)", c->name, c->path, r->n_old, c->name);
    int moved = old_root && strcmp(old_root, c->path) != 0;
    if (moved && (r->n_old - kept) * 2 > r->n_old)
        return trove_fail(TROVE_ENOENT, "collection '%s': its folder is now %s (was %s), which "
                          "holds %zu of its %zu indexed notes; nothing was deleted (if the new "
                          "folder is right, run `trove collection remove %s` and add it again)",
                          c->name, c->path, old_root, kept, r->n_old, c->name);
    return TROVE_OK;
}

trove_err index_collection(store *st, const config *cfg, const config_collection *coll,
                           const index_opts *opts, index_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    run r = {.st = st, .cfg = cfg, .coll = coll, .opts = opts, .stats = stats, .root_fd = -1};
    char *old_root = NULL;
    trove_err rc = check_root(coll);
    if (rc == TROVE_OK)
        rc = indexed_root(st, coll->name, &old_root);
    if (rc == TROVE_OK) {
        rc = store_collection_id(st, coll->name, &r.collection_id);
        if (rc == TROVE_ENOENT) {
            r.collection_id = -1;     /* not indexed yet: every file is new */
            rc = TROVE_OK;
        }
    }
    if (rc == TROVE_OK)
        rc = scan(&r, 1);
    /* Judged before anything is written, the collection's root included:
     * a refused folder leaves the index as it was. */
    if (rc == TROVE_OK)
        rc = guard_mass_delete(&r, old_root);
    if (rc == TROVE_OK)
        rc = store_collection_ensure(st, coll->name, coll->path, &r.collection_id);
    free(old_root);
    stats->files = r.n_walked;
    stats->unchanged = r.n_fresh;
    if (rc == TROVE_OK)
        r.root_fd = open(coll->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    pipe_t q;
    int q_started = rc == TROVE_OK;
    if (q_started)
        pipe_start(&q, &r);
    for (size_t i = 0; rc == TROVE_OK && i < r.n_files; i++) {
        if (opts->interrupted && *opts->interrupted) {
            rc = trove_fail(TROVE_EINTR, "interrupted; the index is unchanged");
        } else {
            rc = apply(&r, &r.files[i], pipe_get(&q, i));
            pipe_put(&q, i);
        }
        if (opts->progress)
            opts->progress(opts->progress_ctx, coll->name, r.n_fresh + i + 1, r.n_walked);
    }
    if (q_started)
        pipe_stop(&q);
    if (rc == TROVE_OK && opts->interrupted && *opts->interrupted)
        rc = trove_fail(TROVE_EINTR, "interrupted; the index is unchanged");
    if (rc == TROVE_OK)
        rc = remove_unseen(&r);
    run_free(&r);
    return rc;
}

/* Would `update` skip this file (not in the index)? The same tests as
 * process_file(), on the size and the first 8 KiB only. */
static void count_skipped(const run *r, const found *f, index_freshness *out)
{
    if ((size_t)f->size > INDEX_DEFAULT_MAX_FILE_BYTES) {
        out->skipped_large++;
        return;
    }
    char *real = NULL;
    /* what update reads: the real path, inside the collection */
    trove_err rc = fs_resolve_inside(r->coll->path, f->path, &real, NULL);
    trove_errclear();
    if (rc != TROVE_OK) {
        out->skipped_unreadable++;
        free(real);
        return;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    free(real);
    if (fd < 0) {
        out->skipped_unreadable++;
        return;
    }
    char head[8192];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 0)
        out->skipped_unreadable++;
    else if (looks_binary(head, (size_t)n))
        out->skipped_binary++;
    else
        out->added++;
}

trove_err index_check_freshness(store *st, const config *cfg, const config_collection *coll,
                                index_freshness *out)
{
    memset(out, 0, sizeof *out);
    index_opts opts = {0};
    index_stats stats = {0};
    run r = {.st = st, .cfg = cfg, .coll = coll, .opts = &opts, .stats = &stats, .root_fd = -1};
    trove_err rc = check_root(coll);
    if (rc)
        return rc;
    rc = store_collection_id(st, coll->name, &r.collection_id);
    if (rc == TROVE_ENOENT) {
        r.collection_id = -1;     /* not indexed yet: every file is new */
        rc = TROVE_OK;
    }
    if (rc == TROVE_OK)
        rc = scan(&r, 0);
    out->fresh = r.n_fresh;
    for (size_t i = 0; rc == TROVE_OK && i < r.n_files; i++) {
        const found *f = &r.files[i];
        store_file *old = lookup_old(&r, f->path);
        if (!old) {
            /* a collection never indexed: everything is new (no file read) */
            if (r.collection_id < 0)
                out->added++;
            else
                count_skipped(&r, f, out);
            continue;
        }
        old->seen = 1;
        out->changed++;
    }
    for (size_t i = 0; i < r.n_old; i++)
        out->deleted += !r.old[i].seen;
    out->files = r.n_walked;
    run_free(&r);
    return rc;
}

/* ---- a whole update ---- */

/* Collections in the index that the config no longer lists are dropped. */
static trove_err drop_orphans(store *st, const config *cfg, size_t *dropped)
{
    store_collection_row *rows;
    size_t n;
    trove_err rc = store_collections_uncounted(st, &rows, &n);
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        if (config_find_collection(cfg, rows[i].name))
            continue;
        rc = store_collection_delete(st, rows[i].name);
        (*dropped)++;
    }
    store_collections_free(rows, n);
    return rc;
}

static trove_err drop_duplicate(store *st, const config_collection *col,
                                const config_collection *first, const index_opts *opts,
                                int *changed)
{
    if (opts->warn) {
        tbuf b = {0};
        tbuf_printf(&b, "collection '%s': folder %s is already collection '%s'; its notes are "
                    "indexed there, once (remove one of them from the config)", col->name,
                    col->path, first->name);
        opts->warn(opts->warn_ctx, b.data);
        tbuf_free(&b);
    }
    int64_t id;
    trove_err rc = store_collection_id(st, col->name, &id);
    if (rc == TROVE_ENOENT) {
        trove_errclear();
        return TROVE_OK;
    }
    if (rc == TROVE_OK) {
        rc = store_collection_delete(st, col->name);
        *changed = 1;
    }
    return rc;
}

static int selected(const char *const *names, size_t n, const char *name)
{
    if (n == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static trove_err update_all(store *st, const config *cfg, const char *const *names, size_t n_names,
                            const index_opts *opts, index_update_result *out)
{
    trove_err rc = TROVE_OK;
    if (n_names == 0) {
        rc = drop_orphans(st, cfg, &out->dropped);
        out->changed |= out->dropped > 0;
    }
    out->collections = xcalloc(cfg->n_collections ? cfg->n_collections : 1,
                               sizeof *out->collections);
    for (size_t i = 0; rc == TROVE_OK && i < cfg->n_collections; i++) {
        const config_collection *col = &cfg->collections[i];
        if (!selected(names, n_names, col->name))
            continue;
        /* Two entries for one folder (a hand-edited config, a symlink)
         * would index every note twice: the first indexes it. */
        const config_collection *first = config_same_folder(cfg, col->path, i);
        if (first) {
            rc = drop_duplicate(st, col, first, opts, &out->changed);
            continue;
        }
        index_update_collection *uc = &out->collections[out->n_collections++];
        uc->name = xstrdup(col->name);
        double t0 = clock_seconds();
        rc = index_collection(st, cfg, col, opts, &uc->stats);
        uc->seconds = clock_seconds() - t0;
        if (rc == TROVE_ENOENT) {
            uc->missing = xstrdup(trove_errmsg());
            rc = TROVE_OK;
            continue;
        }
        const index_stats *s = &uc->stats;
        out->changed |= s->added || s->updated || s->renamed || s->removed;
    }
    if (rc == TROVE_OK && out->changed)
        rc = store_links_resolve(st);
    if (rc == TROVE_OK)
        rc = store_mark_updated(st);
    return rc;
}

trove_err index_update(store *st, const config *cfg, const char *const *names, size_t n_names,
                       const index_opts *opts, index_update_result *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n_names; i++)
        if (!config_find_collection(cfg, names[i]))
            return trove_fail(TROVE_ENOENT, "no collection named '%s' (see `trove collection "
                              "list`)", names[i]);
    trove_err rc = store_begin(st);
    /* A trove with another tokenizer (CJK bigrams before the Chinese
     * dictionary, another user dictionary) re-tokenizes the stored text
     * first, so every note ends up with the same terms. */
    if (rc == TROVE_OK)
        rc = store_tokenizer_sync(st);
    if (rc == TROVE_OK)
        rc = update_all(st, cfg, names, n_names, opts, out);
    out->retokenized = store_tokenizer_rebuilt(st);
    if (rc == TROVE_OK)
        rc = store_commit(st);
    if (rc) {
        store_rollback(st);
        index_update_result_free(out);
        return rc;
    }
    out->snapshot = store_committed_snapshot(st);
    return rc;
}

void index_update_result_free(index_update_result *r)
{
    for (size_t i = 0; i < r->n_collections; i++) {
        free(r->collections[i].name);
        free(r->collections[i].missing);
    }
    free(r->collections);
    memset(r, 0, sizeof *r);
}
