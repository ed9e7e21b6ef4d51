/* walk — depth-first, byte-sorted enumeration of a collection.
 *
 * Every directory is read whole through its fd, sorted, then visited with
 * openat/fstatat relative to that fd, so no path is resolved from the root
 * again and d_type saves a stat per subdirectory; only files that pass the
 * mask, excludes and .gitignore are stat'ed (the indexer needs size and
 * mtime anyway).
 *
 * Symlinked directories are not entered where they are met but queued and
 * walked after the real tree, in the order they were met. Real paths thus
 * always win: adding "aaa -> notes" to a vault does not rename every note
 * to aaa/..., and a link into a place already walked (a loop, a duplicate)
 * is skipped by the (dev, ino) visited set. Without directory symlinks the
 * reported paths are in strcmp order. */
#include "fs/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/gitignore.h"
#include "fs/glob.h"
#include "util/arena.h"
#include "util/buf.h"
#include "util/fsutil.h"
#include "util/mem.h"
#include "util/thread.h"

#define GITIGNORE_MAX_BYTES (4u << 20)

typedef struct devino {
    dev_t dev;
    ino_t ino;
} devino;

typedef struct deferred {
    char *rel;     /* relative path of the symlink, no trailing '/' */
    gi_frame *gi;  /* .gitignore chain of the folder holding it */
} deferred;

typedef struct ent {
    uint64_t key;          /* the first 8 bytes of the sort order (ent_key) */
    const char *name;
    unsigned char type;
    int slot;              /* its stat in the folder's batch; SLOT_* when none */
} ent;

enum { SLOT_NONE = -1,     /* not batched: visit_file decides and stats */
       SLOT_SKIP = -2 };   /* a file the masks, excludes or .gitignore refuse */

/* ---- stats on a helper thread ----
 *
 * With opts->helpers, a folder's files that pass the masks, excludes and
 * .gitignore are put in a batch before the folder's entries are visited;
 * a helper thread stats them from the batch's end backwards while the
 * walk's thread takes them from the front (statting one itself when the
 * helper has not claimed it), so the two meet in the middle. The walk's
 * thread still reports every file, warning and folder itself, in order: the
 * results are those of a walk without a helper. A batch lives as long as
 * its folder's visit (its fd and names too): batches form a stack (the
 * folders being visited, the deepest on top), and the helper works on the
 * top one first. */
enum { ITEM_FREE, ITEM_CLAIMED, ITEM_DONE, ITEM_CANCELLED };

typedef struct stat_item {
    atomic_int state;      /* ITEM_* */
    int err;               /* errno of fstatat, 0: st holds the result */
    const char *name;
    struct stat st;
} stat_item;

typedef struct batch {
    struct batch *below;   /* the batch of the folder above (mu) */
    int dfd;
    stat_item *items;
    size_t n;
    size_t tail;           /* the helper claims items [0, tail) from the end (mu) */
} batch;

typedef struct helpers {
    pthread_mutex_t mu;
    pthread_cond_t work;   /* a batch was pushed, or the walk is over */
    pthread_cond_t done;   /* an item the walk's thread waits for is done */
    batch *top;            /* (mu) */
    int over;              /* (mu) */
    atomic_int waiting;    /* the walk's thread sleeps on `done` */
    pthread_t thread;
    int started;
} helpers;

static void item_stat(helpers *h, const batch *b, stat_item *it)
{
    it->err = fstatat(b->dfd, it->name, &it->st, 0) != 0 ? errno : 0;
    atomic_store(&it->state, ITEM_DONE);
    if (h && atomic_load(&h->waiting)) {
        pthread_mutex_lock(&h->mu);
        pthread_cond_broadcast(&h->done);
        pthread_mutex_unlock(&h->mu);
    }
}

/* Claim up to 8 items from the end of the topmost batch that has any
 * left; *from..*to (exclusive, descending) and the batch. 0 when none. */
static batch *helper_claim(helpers *h, size_t *from, size_t *to)
{
    for (batch *b = h->top; b; b = b->below) {
        size_t k = b->tail, got = 0;
        while (k > 0 && got < 8) {
            int fr = ITEM_FREE;
            if (!atomic_compare_exchange_strong(&b->items[k - 1].state, &fr, ITEM_CLAIMED)) {
                k = 0;   /* the walk's thread took it: it took all before it */
                break;
            }
            k--;
            got++;
        }
        *from = b->tail;
        *to = b->tail - got;
        b->tail = k;
        if (got)
            return b;
    }
    return NULL;
}

static void *helper_main(void *arg)
{
    helpers *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->over) {
        size_t from, to;
        batch *b = helper_claim(h, &from, &to);
        if (!b) {
            pthread_cond_wait(&h->work, &h->mu);
            continue;
        }
        /* The batch stays while it has a claimed item (batch_pop waits). */
        pthread_mutex_unlock(&h->mu);
        for (size_t k = from; k > to; k--)
            item_stat(h, b, &b->items[k - 1]);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void helpers_start(helpers *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->work, NULL);
    pthread_cond_init(&h->done, NULL);
    atomic_init(&h->waiting, 0);
    h->started = thread_start(&h->thread, helper_main, h) == 0;
}

static void helpers_stop(helpers *h)
{
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->over = 1;
        pthread_cond_broadcast(&h->work);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->thread, NULL);
    }
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->work);
    pthread_mutex_destroy(&h->mu);
}

static void batch_push(helpers *h, batch *b)
{
    pthread_mutex_lock(&h->mu);
    b->below = h->top;
    h->top = b;
    pthread_cond_signal(&h->work);
    pthread_mutex_unlock(&h->mu);
}

/* The walk is done with the folder: items it never asked for (it stopped
 * early) are cancelled, the helper's claimed ones waited for; then the
 * batch goes. */
static void batch_pop(helpers *h, batch *b)
{
    pthread_mutex_lock(&h->mu);
    b->tail = 0;
    for (size_t k = 0; k < b->n; k++) {
        int fr = ITEM_FREE;
        atomic_compare_exchange_strong(&b->items[k].state, &fr, ITEM_CANCELLED);
    }
    atomic_store(&h->waiting, 1);
    for (size_t k = 0; k < b->n; k++)
        while (atomic_load(&b->items[k].state) == ITEM_CLAIMED)
            pthread_cond_wait(&h->done, &h->mu);
    atomic_store(&h->waiting, 0);
    h->top = b->below;
    pthread_mutex_unlock(&h->mu);
}

/* The stat of a batched file: claimed and done here if the helper has not
 * claimed it, else waited for. */
static stat_item *batch_get(helpers *h, batch *b, int slot)
{
    stat_item *it = &b->items[slot];
    int fr = ITEM_FREE;
    if (atomic_compare_exchange_strong(&it->state, &fr, ITEM_CLAIMED)) {
        item_stat(NULL, b, it);
        return it;
    }
    if (atomic_load(&it->state) != ITEM_DONE) {
        pthread_mutex_lock(&h->mu);
        atomic_store(&h->waiting, 1);
        while (atomic_load(&it->state) != ITEM_DONE)
            pthread_cond_wait(&h->done, &h->mu);
        atomic_store(&h->waiting, 0);
        pthread_mutex_unlock(&h->mu);
    }
    return it;
}

typedef struct walker {
    const walk_callbacks *cb;
    tglob **masks, **excl;
    size_t nmasks, nexcl;
    tbuf path;        /* current relative path */
    devino *seen;     /* open-addressing set of entered directories */
    size_t seen_cap, seen_n;
    deferred *defer;
    size_t ndefer, defer_cap;
    int rootfd;
    int stop;
    const walk_opts *opts;
    helpers *help;    /* NULL: the walk's thread stats every file */
    batch *cur;       /* the batch of the folder being visited (help only) */
} walker;

static void warn(walker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(walker *w, const char *fmt, ...)
{
    if (!w->cb->on_warning)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->cb->on_warning(w->cb->ctx, msg);
}

static size_t hash_devino(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

/* Insert (dev, ino); 0 if it was already there. Slot ino 0 + dev 0 marks
 * empty, which no real directory has. */
static int seen_add(walker *w, dev_t dev, ino_t ino)
{
    if ((w->seen_n + 1) * 2 > w->seen_cap) {
        size_t ncap = w->seen_cap ? w->seen_cap * 2 : 256;
        devino *n = xcalloc(ncap, sizeof *n);
        for (size_t i = 0; i < w->seen_cap; i++) {
            devino d = w->seen[i];
            if (d.dev == 0 && d.ino == 0)
                continue;
            size_t h = hash_devino(d.dev, d.ino) & (ncap - 1);
            while (n[h].dev || n[h].ino)
                h = (h + 1) & (ncap - 1);
            n[h] = d;
        }
        free(w->seen);
        w->seen = n;
        w->seen_cap = ncap;
    }
    size_t h = hash_devino(dev, ino) & (w->seen_cap - 1);
    while (w->seen[h].dev || w->seen[h].ino) {
        if (w->seen[h].dev == dev && w->seen[h].ino == ino)
            return 0;
        h = (h + 1) & (w->seen_cap - 1);
    }
    w->seen[h] = (devino){dev, ino};
    w->seen_n++;
    return 1;
}

static void path_truncate(walker *w, size_t len)
{
    w->path.len = len;
    w->path.data[len] = '\0';
}

static int any_match(tglob **gs, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (tglob_match(gs[i], s, len))
            return 1;
    return 0;
}

/* A directory is excluded if an exclude matches "dir" or "dir/", so that
 * "drafts", "drafts/" and "drafts/" followed by "**" all prune it. */
static int dir_excluded(walker *w)
{
    size_t len = w->path.len;
    if (any_match(w->excl, w->nexcl, w->path.data, len))
        return 1;
    tbuf_putc(&w->path, '/');
    int r = any_match(w->excl, w->nexcl, w->path.data, len + 1);
    path_truncate(w, len);
    return r;
}

/* Byte order of the names, with an implicit '/' after directory names:
 * then the reported relative paths come out in strcmp order ("a.md"
 * before "a/x.md"), which lets callers merge them with a sorted list. */
static int cmp_ent(const ent *a, const ent *b)
{
    const unsigned char *x = (const unsigned char *)a->name, *y = (const unsigned char *)b->name;
    while (*x && *x == *y)
        x++, y++;
    int cx = *x ? *x : a->type == DT_DIR ? '/' : 0;
    int cy = *y ? *y : b->type == DT_DIR ? '/' : 0;
    return cx - cy;
}

/* cmp_ent's order of the first 8 bytes, as one number: the name's bytes,
 * then the implicit '/' of a directory (or 0), then zeros. Names hold no
 * '/' or NUL, so two names differ by then unless they agree on all 8:
 * most compares of a sort are one integer compare. */
static uint64_t ent_key(const char *name, size_t len, unsigned char type)
{
    uint64_t k = 0;
    for (size_t i = 0; i < 8; i++) {
        unsigned c = i < len ? (unsigned char)name[i] : i == len && type == DT_DIR ? '/' : 0;
        k = k << 8 | c;
    }
    return k;
}

static inline int ent_less(const ent *a, const ent *b)
{
    return a->key != b->key ? a->key < b->key : cmp_ent(a, b) < 0;
}

/* Merge sort of a folder's entries (qsort's calls through a pointer were
 * half the walk's instructions): runs of 16 by insertion, then merges
 * between a and tmp. */
static void sort_ents(ent *a, size_t n)
{
    enum { RUN = 16 };
    for (size_t lo = 0; lo < n; lo += RUN) {
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            ent e = a[i];
            size_t j = i;
            for (; j > lo && ent_less(&e, &a[j - 1]); j--)
                a[j] = a[j - 1];
            a[j] = e;
        }
    }
    if (n <= RUN)
        return;
    ent *tmp = xmalloc(n * sizeof *tmp), *src = a, *dst = tmp;
    for (size_t w = RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = ent_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        ent *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
    free(tmp);
}

static gi_frame *read_gitignore(walker *w, int dfd, gi_frame *parent)
{
    int fd = openat(dfd, ".gitignore", O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        warn(w, "%s.gitignore: %s", w->path.data, strerror(errno));
        return gi_frame_ref(parent);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gi_frame_ref(parent);
    }
    size_t want = st.st_size > (off_t)GITIGNORE_MAX_BYTES ? GITIGNORE_MAX_BYTES : (size_t)st.st_size;
    char *data = xmalloc(want + 1);
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, data + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    gi_frame *f = gi_frame_new(parent, w->path.len, data, got);
    free(data);
    return f;
}

static void walk_dir(walker *w, int fd, gi_frame *gi);

/* Enter the directory open on fd (path already set, no trailing '/'),
 * unless it was entered before. Takes ownership of fd. */
static void enter_dir(walker *w, int fd, gi_frame *gi)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        warn(w, "%s: %s", w->path.len ? w->path.data : ".", strerror(errno));
        close(fd);
        return;
    }
    if (!seen_add(w, st.st_dev, st.st_ino)) {
        close(fd);
        return;
    }
    if (w->cb->on_dir && w->cb->on_dir(w->cb->ctx, w->path.len ? w->path.data : "")) {
        w->stop = 1;
        close(fd);
        return;
    }
    size_t len = w->path.len;
    if (len)
        tbuf_putc(&w->path, '/');
    walk_dir(w, fd, gi);
    path_truncate(w, len);
}

/* The symlink at the current path leads inside the root; else a warning
 * (unless the user excluded or ignored the path anyway) and 0. Files come
 * here only once they passed the masks, excludes and .gitignore. */
static int link_inside(walker *w, size_t base, gi_frame *gi, int is_dir)
{
    const char *rel = w->path.data;
    char *real;
    trove_err rc = fs_path_inside(w->opts->root, rel, &real);
    if (rc == TROVE_EACCES && (!is_dir || (!any_match(w->excl, w->nexcl, rel, w->path.len) &&
                                           !gi_ignored(gi, rel, w->path.len, base, 1))))
        warn(w, "%s/%s: skipped, a symlink to %s outside the collection folder (add that "
             "folder as a collection of its own to search it)", w->opts->root, rel, real);
    free(real);
    return rc != TROVE_EACCES;
}

static int skipped_dir(walker *w)
{
    for (size_t i = 0; i < w->opts->n_skip_dirs; i++)
        if (strcmp(w->path.data, w->opts->skip_dirs[i]) == 0)
            return 1;
    return 0;
}

/* Would the masks, excludes and .gitignore take the file at the current
 * path (last component at base)? */
static int file_wanted(walker *w, size_t base, gi_frame *gi)
{
    const char *rel = w->path.data;
    size_t len = w->path.len;
    return any_match(w->masks, w->nmasks, rel, len) && !any_match(w->excl, w->nexcl, rel, len) &&
           !gi_ignored(gi, rel, len, base, 0);
}

static void visit_file(walker *w, int dfd, const ent *e, size_t base,
                       gi_frame *gi, const struct stat *lst)
{
    const char *rel = w->path.data;
    if (e->slot == SLOT_SKIP || (e->slot == SLOT_NONE && !file_wanted(w, base, gi)))
        return;
    struct stat st;
    if (!lst) {
        int err = 0;
        if (e->slot >= 0) {
            stat_item *it = batch_get(w->help, w->cur, e->slot);
            err = it->err;
            st = it->st;
        } else if (fstatat(dfd, e->name, &st, 0) != 0) {
            err = errno;
        }
        if (err) {
            warn(w, "%s: %s", rel, strerror(err));
            return;
        }
        if (!S_ISREG(st.st_mode))
            return;
        lst = &st;
    } else if (!w->opts->follow_outside && !link_inside(w, base, gi, 0)) {
        return;   /* a symlink to a file outside the root */
    }
    if (w->cb->on_file(w->cb->ctx, rel, lst))
        w->stop = 1;
}

static void visit_entry(walker *w, int dfd, const ent *e, gi_frame *gi)
{
    size_t base = w->path.len;
    unsigned char type = e->type;
    struct stat st;
    int is_link = 0;
    tbuf_puts(&w->path, e->name);
    const char *rel = w->path.data;
    if (type == DT_UNKNOWN) {
        if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            warn(w, "%s: %s", rel, strerror(errno));
            goto out;
        }
        type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR
             : S_ISREG(st.st_mode) ? DT_REG : DT_FIFO;
    }
    if (type == DT_LNK) {
        is_link = 1;
        if (w->cb->on_link)
            w->cb->on_link(w->cb->ctx, rel);
        if (fstatat(dfd, e->name, &st, 0) != 0) {
            /* Not worth a warning if the user has ignored it anyway. */
            int err = errno;
            if (!any_match(w->excl, w->nexcl, rel, w->path.len) &&
                !gi_ignored(gi, rel, w->path.len, base, 0))
                warn(w, "%s: dangling symlink (%s)", rel, strerror(err));
            goto out;
        }
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_FIFO;
        if (type == DT_DIR && !w->opts->follow_outside && !link_inside(w, base, gi, 1))
            goto out;
    }
    if (type == DT_DIR && skipped_dir(w))
        goto out;
    if (type == DT_DIR) {
        /* dir_excluded() appends to the path, which may move it. */
        if (dir_excluded(w))
            goto out;
        rel = w->path.data;
        if (gi_ignored(gi, rel, w->path.len, base, 1))
            goto out;
        if (is_link) {
            xgrow(&w->defer, &w->defer_cap, w->ndefer + 1, sizeof *w->defer);
            w->defer[w->ndefer++] = (deferred){xstrdup(rel), gi_frame_ref(gi)};
            goto out;
        }
        int cfd = openat(dfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
            warn(w, "%s: %s", rel, strerror(errno));
            goto out;
        }
        enter_dir(w, cfd, gi);
    } else if (type == DT_REG) {
        visit_file(w, dfd, e, base, gi, is_link ? &st : NULL);
    }
out:
    path_truncate(w, base);
}

/* Read the whole directory (names into one arena), sorted by bytes. */
static ent *read_entries(walker *w, DIR *d, arena *names, size_t *n_out, int *has_gitignore)
{
    ent *ents = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    for (;;) {
        errno = 0;
        if ((de = readdir(d)) == NULL)
            break;
        const char *nm = de->d_name;
        /* Dot-files and dot-folders (.git, .obsidian, .trash) are never
         * content; node_modules is never notes. */
        if (nm[0] == '.') {
            if (strcmp(nm, ".gitignore") == 0)
                *has_gitignore = 1;
            continue;
        }
        if (strcmp(nm, "node_modules") == 0)
            continue;
        unsigned char type = de->d_type;
        struct stat st;
        if (type == DT_UNKNOWN && fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) == 0)
            type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR
                 : S_ISREG(st.st_mode) ? DT_REG : DT_FIFO;
        size_t len = strlen(nm);
        xgrow(&ents, &cap, n + 1, sizeof *ents);
        ents[n++] = (ent){ent_key(nm, len, type), arena_strndup(names, nm, len), type, SLOT_NONE};
    }
    if (errno != 0)
        warn(w, "%s: %s", w->path.len ? w->path.data : ".", strerror(errno));
    sort_ents(ents, n);
    *n_out = n;
    return ents;
}

/* The folder's regular files that the masks, excludes and .gitignore
 * take, in a batch for the helper (the others marked SLOT_SKIP). Fewer
 * than two: not worth the helper's while. */
static void batch_files(walker *w, batch *b, ent *ents, size_t n, gi_frame *gi)
{
    size_t base = w->path.len, want = 0;
    for (size_t i = 0; i < n; i++) {
        if (ents[i].type != DT_REG)
            continue;
        tbuf_puts(&w->path, ents[i].name);
        ents[i].slot = file_wanted(w, base, gi) ? (int)want++ : SLOT_SKIP;
        path_truncate(w, base);
    }
    if (want < 2) {
        for (size_t i = 0; i < n; i++)
            if (ents[i].slot >= 0)
                ents[i].slot = SLOT_NONE;
        return;
    }
    b->items = xmalloc(want * sizeof *b->items);
    b->n = b->tail = want;
    for (size_t i = 0; i < n; i++) {
        if (ents[i].slot < 0)
            continue;
        stat_item *it = &b->items[ents[i].slot];
        atomic_init(&it->state, ITEM_FREE);
        it->err = 0;
        it->name = ents[i].name;
    }
    batch_push(w->help, b);
}

/* Walk the directory open on fd; w->path holds its relative path with a
 * trailing '/' ("" for the root). Takes ownership of fd. */
static void walk_dir(walker *w, int fd, gi_frame *gi)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        warn(w, "%s: %s", w->path.len ? w->path.data : ".", strerror(errno));
        close(fd);
        return;
    }
    int has_gi = 0;
    arena names = {0};
    size_t n;
    ent *ents = read_entries(w, d, &names, &n, &has_gi);
    int dfd = dirfd(d);
    gi_frame *here = has_gi ? read_gitignore(w, dfd, gi) : gi_frame_ref(gi);
    batch b = {.dfd = dfd}, *outer = w->cur;
    if (w->help)
        batch_files(w, &b, ents, n, here);
    w->cur = &b;
    for (size_t i = 0; i < n && !w->stop; i++)
        visit_entry(w, dfd, &ents[i], here);
    if (b.n) {
        batch_pop(w->help, &b);
        free(b.items);
    }
    w->cur = outer;
    gi_frame_unref(here);
    free(ents);
    arena_free(&names);
    closedir(d);
}

static void walk_deferred(walker *w)
{
    for (size_t i = 0; i < w->ndefer; i++) {
        deferred d = w->defer[i];
        if (!w->stop) {
            tbuf_reset(&w->path);
            tbuf_puts(&w->path, d.rel);
            int fd = openat(w->rootfd, d.rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd < 0)
                warn(w, "%s: %s", d.rel, strerror(errno));
            else
                enter_dir(w, fd, d.gi);
        }
        free(d.rel);
        gi_frame_unref(d.gi);
    }
    w->ndefer = 0;
}

/* Patterns are relative to the root, so a leading "./" or "/" (as users
 * write them in a config file) is dropped. */
static tglob **compile_all(const char *const *pats, size_t n)
{
    tglob **gs = xmalloc((n ? n : 1) * sizeof *gs);
    for (size_t i = 0; i < n; i++) {
        const char *p = pats[i];
        for (;;) {
            if (p[0] == '.' && p[1] == '/')
                p += 2;
            else if (p[0] == '/')
                p++;
            else
                break;
        }
        gs[i] = tglob_compile(p, strlen(p), 0);
    }
    return gs;
}

trove_err walk_tree(const walk_opts *opts, const walk_callbacks *cb)
{
    if (!opts || !opts->root || !cb || !cb->on_file)
        return trove_fail(TROVE_EINVAL, "walk_tree: missing root or callback");
    const char *root = opts->root;
    struct stat st;
    if (stat(root, &st) != 0) {
        int e = errno;
        return trove_fail(e == ENOENT || e == ENOTDIR ? TROVE_ENOENT : TROVE_EIO,
                          "%s: %s", root, strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return trove_fail(TROVE_EINVAL, "%s: not a directory", root);
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return trove_fail(TROVE_EIO, "%s: %s", root, strerror(errno));
    int rootfd = dup(fd);
    if (rootfd < 0) {
        int e = errno;
        close(fd);
        return trove_fail(TROVE_EIO, "%s: %s", root, strerror(e));
    }

    static const char *const default_mask[] = {WALK_DEFAULT_MASK};
    walker w = {.cb = cb, .rootfd = rootfd, .opts = opts};
    int nomask = !opts->masks || opts->n_masks == 0;
    w.nmasks = nomask ? 1 : opts->n_masks;
    w.masks = compile_all(nomask ? default_mask : opts->masks, w.nmasks);
    w.nexcl = opts->excludes ? opts->n_excludes : 0;
    w.excl = compile_all(opts->excludes, w.nexcl);
    tbuf_puts(&w.path, "");
    helpers help;
    if (opts->helpers > 0) {
        helpers_start(&help);
        w.help = help.started ? &help : NULL;
    }

    enter_dir(&w, fd, NULL);
    walk_deferred(&w);

    if (opts->helpers > 0)
        helpers_stop(&help);

    for (size_t i = 0; i < w.nmasks; i++)
        tglob_free(w.masks[i]);
    for (size_t i = 0; i < w.nexcl; i++)
        tglob_free(w.excl[i]);
    free(w.masks);
    free(w.excl);
    free(w.defer);
    free(w.seen);
    tbuf_free(&w.path);
    close(rootfd);
    return TROVE_OK;
}
