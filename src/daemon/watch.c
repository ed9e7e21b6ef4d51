#include "daemon/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/time.h>
#include <unistd.h>

#include "fs/walk.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/fsutil.h"
#include "util/mem.h"

#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | \
                    IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

typedef struct wd_ent {
    int coll;            /* -1: free */
    char *rel;           /* folder relative to the collection root, "" = root */
} wd_ent;

struct watcher {
    watch_opts o;
    config cfg;          /* our copy: names, roots, masks, excludes */
    config *next_cfg;    /* from watch_reconfigure, taken by the thread */
    int ifd;
    int wake[2];
    pthread_t thr;
    pthread_mutex_t mu;
    wd_ent *wds;         /* indexed by watch descriptor */
    size_t cap_wds, n_watches;
    unsigned char *dirty, *rewalk, *missing;
    /* Vouching (watch_vouch), per collection: verified = a clean update
     * walked it with every folder watched and nothing happened since;
     * files = what that walk matched; taint = why its watches cannot
     * vouch at all (a symlink, a failed watch, a non-local filesystem, a
     * walk warning), NULL when they can. n_flags: entries of these. */
    unsigned char *verified;
    size_t *files;
    char **taint;
    size_t n_flags;
    /* Held while a batch of events is read and applied: watch_vouch sees
     * either the events unread (FIONREAD) or their dirty marks. */
    pthread_mutex_t ev_mu;
    int mfd;             /* /proc/self/mountinfo: POLLPRI on a (un)mount */
    int mounts_moved;    /* under mu: seen by watch_vouch, acted on by the thread */
    int recheck;         /* under mu: watch_recheck asked for a walk of everything */
    double first_dirty, last_dirty, last_poll;
    double retry_at;     /* after a failed update: not before this time */
    int polling, quit;
    int pfd;             /* inotify on the parents of missing collection folders */
    int parents_stale;   /* the missing set changed: re-arm pfd */
    char *problem;
    char *update_error;  /* the last update's failure, NULL after a success */
    /* state for status (under mu) */
    double last_event, last_update_ms;
    char *last_path;
    size_t updates;
};

void watch_opts_init(watch_opts *o)
{
    memset(o, 0, sizeof *o);
    o->debounce_s = 0.05;
    o->max_wait_s = 0.5;
    o->poll_s = 2.0;
}

static void copy_config(config *dst, const config *src)
{
    memset(dst, 0, sizeof *dst);
    dst->file = xstrdup(src->file ? src->file : "");
    for (size_t i = 0; i < src->n_collections; i++) {
        const config_collection *c = &src->collections[i];
        config_add_collection(dst, c->name, c->path, (const char *const *)c->masks, c->n_masks,
                              (const char *const *)c->excludes, c->n_excludes);
    }
}

static double now_unix(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static void set_problem(watcher *w, const char *msg)
{
    pthread_mutex_lock(&w->mu);
    free(w->problem);
    w->problem = msg ? xstrdup(msg) : NULL;
    pthread_mutex_unlock(&w->mu);
}

/* ---- watches ---- */

static void mark_dirty(watcher *w, int coll);

typedef struct add_ctx {
    watcher *w;
    int coll;
    int root_watched;    /* the collection folder itself got a watch */
    int vanished;        /* a folder went between the walk's look and its watch */
    tbuf path;
    tbuf taint;          /* the first reason these watches cannot vouch */
} add_ctx;

/* Filesystems whose every change goes through this kernel, so inotify
 * reports it. Network and FUSE filesystems (NFS, SMB, 9p, virtiofs, sshfs)
 * change behind its back. */
static int local_fs(long type)
{
    static const long ok[] = {
        0xEF53,      /* ext2/3/4 */
        0x58465342,  /* xfs */
        0x9123683E,  /* btrfs */
        0x01021994,  /* tmpfs */
        0x858458F6,  /* ramfs */
        0xF2F52010,  /* f2fs */
        0x2FC12FC1,  /* zfs */
        0xCA451A4E,  /* bcachefs */
        0x794C7630,  /* overlayfs (changes made through it) */
        0x52654973,  /* reiserfs */
        0x3153464A,  /* jfs */
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if ((unsigned long)type == (unsigned long)ok[i])
            return 1;
    return 0;
}

static void taint_once(add_ctx *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void taint_once(add_ctx *a, const char *fmt, ...)
{
    if (a->taint.len)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tbuf_puts(&a->taint, msg);
}

/* A symlink that names an entry of its own folder ("pages.en -> pages")
 * is resolved inside that watched folder: a change to what it names is
 * an event there, or in the folder it names, which the walk enters and
 * watches (symlinked folders included). Any other leads through folders
 * that may not be watched (outside the collection, excluded, "..") and
 * can change with no event in the collection. */
static void on_link(void *vctx, const char *rel)
{
    add_ctx *a = vctx;
    const char *root = a->w->cfg.collections[a->coll].path;
    tbuf p = {0};
    tbuf_printf(&p, "%s/%s", root, rel);
    char to[PATH_MAX];
    ssize_t n = readlink(p.data, to, sizeof to - 1);
    tbuf_free(&p);
    if (n > 0) {
        to[n] = '\0';
        if (!memchr(to, '/', (size_t)n) && strcmp(to, ".") != 0 && strcmp(to, "..") != 0)
            return;
    }
    taint_once(a, "%s/%s is a symlink that leads out of its folder (a change there may not "
               "be reported)", root, rel);
}

static void on_walk_warning(void *vctx, const char *message)
{
    taint_once(vctx, "the walk warned: %s", message);
}

static int on_dir(void *vctx, const char *rel)
{
    add_ctx *a = vctx;
    watcher *w = a->w;
    if (w->polling)
        return 1;   /* no more watches to be had: the rescans cover the rest */
    const config_collection *c = &w->cfg.collections[a->coll];
    tbuf_reset(&a->path);
    tbuf_puts(&a->path, c->path);
    if (*rel)
        tbuf_printf(&a->path, "/%s", rel);
    int wd = w->o.max_watches && w->n_watches >= w->o.max_watches
                 ? (errno = ENOSPC, -1)
                 : inotify_add_watch(w->ifd, a->path.data, WATCH_MASK);
    if (wd < 0) {
        int e = errno;
        if (e == ENOENT)
            a->vanished = 1;
        else if (e != ENOSPC)
            taint_once(a, "cannot watch %s: %s", a->path.data, strerror(e));
        errno = e;
        if (errno == ENOSPC) {
            char msg[256];
            snprintf(msg, sizeof msg, "inotify watch limit reached after %zu folders (raise "
                     "fs.inotify.max_user_watches); rescanning by mtime every %.0f s",
                     w->n_watches, w->o.poll_s);
            set_problem(w, msg);
            pthread_mutex_lock(&w->mu);
            w->polling = 1;
            pthread_mutex_unlock(&w->mu);
            return 1;
        }
        return 0;   /* vanished meanwhile: the next event or rescan tells */
    }
    if ((size_t)wd >= w->cap_wds) {
        size_t old = w->cap_wds;
        xgrow(&w->wds, &w->cap_wds, (size_t)wd + 1, sizeof *w->wds);
        for (size_t i = old; i < w->cap_wds; i++)
            w->wds[i] = (wd_ent){.coll = -1};
    }
    wd_ent *e = &w->wds[wd];
    if (e->coll < 0) {
        pthread_mutex_lock(&w->mu);
        w->n_watches++;
        pthread_mutex_unlock(&w->mu);
    }
    free(e->rel);
    e->coll = a->coll;
    e->rel = xstrdup(rel);
    if (!*rel)
        a->root_watched = 1;
    struct statfs fs;
    if (statfs(a->path.data, &fs) != 0)
        taint_once(a, "cannot tell the filesystem of %s: %s", a->path.data, strerror(errno));
    else if (!local_fs((long)fs.f_type))
        taint_once(a, "%s is on a filesystem (type 0x%lx) whose changes inotify may not see",
                   a->path.data, (unsigned long)fs.f_type);
    return 0;
}

static int on_file_nop(void *ctx, const char *rel, const struct stat *st)
{
    (void)ctx;
    (void)rel;
    (void)st;
    return 0;
}

/* Nested collections are watched as their own, never twice. */
static const char **nested(const watcher *w, int coll, size_t *n)
{
    const char **out = xcalloc(w->cfg.n_collections + 1, sizeof *out);
    *n = 0;
    for (size_t i = 0; i < w->cfg.n_collections; i++) {
        const char *rel = fs_path_below(w->cfg.collections[coll].path, w->cfg.collections[i].path);
        if (rel)
            out[(*n)++] = rel;
    }
    return out;
}

static void set_missing(watcher *w, int coll, int missing)
{
    pthread_mutex_lock(&w->mu);
    if (w->missing[coll] != (unsigned char)missing)
        w->parents_stale = 1;
    w->missing[coll] = (unsigned char)missing;
    pthread_mutex_unlock(&w->mu);
}

/* Watch every folder an update of collection `coll` would enter. The
 * collection counts as present only once its folder itself is watched:
 * a folder that vanishes between a stat and the walk (rm -rf, then mkdir
 * again) would otherwise be taken as present with no watch on it, and its
 * return would never be noticed. */
static void add_watches(watcher *w, int coll)
{
    const config_collection *c = &w->cfg.collections[coll];
    struct stat sb;
    int present = stat(c->path, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!present) {
        set_missing(w, coll, 1);
        return;
    }
    size_t n_skip;
    const char **skip = nested(w, coll, &n_skip);
    walk_opts wo = {
        .root = c->path,
        .masks = (const char *const *)c->masks,
        .n_masks = c->n_masks,
        .excludes = (const char *const *)c->excludes,
        .n_excludes = c->n_excludes,
        .skip_dirs = skip,
        .n_skip_dirs = n_skip,
    };
    pthread_mutex_lock(&w->mu);
    w->verified[coll] = 0;
    pthread_mutex_unlock(&w->mu);
    add_ctx a = {.w = w, .coll = coll};
    walk_callbacks cb = {.ctx = &a, .on_file = on_file_nop, .on_dir = on_dir,
                         .on_warning = on_walk_warning, .on_link = on_link};
    walk_tree(&wo, &cb);
    pthread_mutex_lock(&w->mu);
    free(w->taint[coll]);
    w->taint[coll] = a.taint.len ? tbuf_detach(&a.taint) : NULL;
    pthread_mutex_unlock(&w->mu);
    tbuf_free(&a.taint);
    tbuf_free(&a.path);
    free(skip);
    if (a.vanished) {
        /* Moved or deleted meanwhile: its parent's event says which; watch
         * again and update, so no folder is left unwatched. */
        w->rewalk[coll] = 1;
        mark_dirty(w, coll);
    }
    /* Polling (no watches to be had) rescans everything anyway: there the
     * stat decides. */
    set_missing(w, coll, !a.root_watched && !w->polling);
}

static void drop_all_watches(watcher *w)
{
    pthread_mutex_lock(&w->ev_mu);   /* watch_vouch reads ifd */
    if (w->ifd >= 0)
        close(w->ifd);
    for (size_t i = 0; i < w->cap_wds; i++)
        free(w->wds[i].rel);
    free(w->wds);
    w->wds = NULL;
    w->cap_wds = 0;
    pthread_mutex_lock(&w->mu);
    w->n_watches = 0;
    w->polling = 0;
    pthread_mutex_unlock(&w->mu);
    set_problem(w, NULL);
    w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    pthread_mutex_unlock(&w->ev_mu);
}

static void mark_dirty(watcher *w, int coll)
{
    double t = clock_seconds();
    pthread_mutex_lock(&w->mu);
    int any = 0;
    for (size_t i = 0; i < w->cfg.n_collections; i++)
        any |= w->dirty[i];
    if (!any)
        w->first_dirty = t;
    w->dirty[coll] = 1;
    w->verified[coll] = 0;
    w->last_dirty = t;
    pthread_mutex_unlock(&w->mu);
}

/* The per-collection flags, as reset_flags() made them. */
static void free_flags(watcher *w)
{
    free(w->dirty);
    free(w->rewalk);
    free(w->missing);
    free(w->verified);
    free(w->files);
    for (size_t i = 0; w->taint && i < w->n_flags; i++)
        free(w->taint[i]);
    free(w->taint);
}

/* Fresh per-collection flags for w->cfg (caller holds mu). watch_state_get
 * reads cfg and the flags from other threads, so the two always change
 * together under mu, and exist before the thread starts. */
static void reset_flags(watcher *w)
{
    size_t n = w->cfg.n_collections;
    free_flags(w);
    w->dirty = xcalloc(n + 1, 1);
    w->rewalk = xcalloc(n + 1, 1);
    w->missing = xcalloc(n + 1, 1);
    w->verified = xcalloc(n + 1, 1);
    w->files = xcalloc(n + 1, sizeof *w->files);
    w->taint = xcalloc(n + 1, sizeof *w->taint);
    w->n_flags = n;
    w->parents_stale = 1;
}

/* Start over with the collections of w->cfg: new inotify instance, every
 * folder watched, every collection updated once. */
static void rebuild(watcher *w)
{
    drop_all_watches(w);
    size_t n = w->cfg.n_collections;
    pthread_mutex_lock(&w->mu);
    reset_flags(w);
    pthread_mutex_unlock(&w->mu);
    if (w->ifd < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "inotify unavailable (%s); rescanning by mtime every %.0f s",
                 strerror(errno), w->o.poll_s);
        set_problem(w, msg);
        w->polling = 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (w->ifd >= 0)
            add_watches(w, (int)i);
        mark_dirty(w, (int)i);
    }
}

/* ---- events ---- */

static void note_event(watcher *w, int coll, const char *rel, const char *name)
{
    tbuf p = {0};
    tbuf_puts(&p, w->cfg.collections[coll].name);
    if (*rel)
        tbuf_printf(&p, "/%s", rel);
    if (name && *name)
        tbuf_printf(&p, "/%s", name);
    pthread_mutex_lock(&w->mu);
    w->last_event = now_unix();
    free(w->last_path);
    w->last_path = tbuf_detach(&p);
    pthread_mutex_unlock(&w->mu);
}

static void drop_collection_watches(watcher *w, int coll)
{
    for (size_t i = 0; i < w->cap_wds; i++) {
        if (w->wds[i].coll != coll)
            continue;
        inotify_rm_watch(w->ifd, (int)i);
        free(w->wds[i].rel);
        w->wds[i] = (wd_ent){.coll = -1};
        pthread_mutex_lock(&w->mu);
        w->n_watches--;
        pthread_mutex_unlock(&w->mu);
    }
}

static void apply_events(watcher *w, const char *buf, ssize_t n);

/* Read and apply every queued event, holding ev_mu (see watch_vouch). */
static void read_events(watcher *w)
{
    char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
    pthread_mutex_lock(&w->ev_mu);
    for (;;) {
        ssize_t n = read(w->ifd, buf, sizeof buf);
        if (n <= 0)
            break;
        apply_events(w, buf, n);
    }
    pthread_mutex_unlock(&w->ev_mu);
}

/* Whether COLLECTION/rel/name is a symlink now. */
static int is_link_at(const watcher *w, int coll, const char *rel, const char *name)
{
    tbuf p = {0};
    tbuf_puts(&p, w->cfg.collections[coll].path);
    if (*rel)
        tbuf_printf(&p, "/%s", rel);
    tbuf_printf(&p, "/%s", name);
    struct stat sb;
    int link = lstat(p.data, &sb) == 0 && S_ISLNK(sb.st_mode);
    tbuf_free(&p);
    return link;
}

static void apply_events(watcher *w, const char *buf, ssize_t n)
{
    for (const char *p = buf; p < buf + n;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        p += sizeof *ev + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
            /* Events were lost: re-walk and rescan everything. */
            for (size_t i = 0; i < w->cfg.n_collections; i++) {
                w->rewalk[i] = 1;
                mark_dirty(w, (int)i);
            }
            continue;
        }
        if (ev->wd < 0 || (size_t)ev->wd >= w->cap_wds || w->wds[ev->wd].coll < 0)
            continue;
        wd_ent *e = &w->wds[ev->wd];
        int coll = e->coll;
        const char *name = ev->len ? ev->name : "";
        if (ev->mask & IN_UNMOUNT) {
            /* What was mounted there is gone; what lies beneath is
             * not watched: watch again, walk again. */
            w->rewalk[coll] = 1;
            mark_dirty(w, coll);
            continue;
        }
        if (ev->mask & IN_IGNORED) {
            /* The folder is gone (deleted, moved away, unmounted):
             * watch the collection again before vouching for it. */
            int was_root = !*e->rel;
            w->rewalk[coll] = 1;
            free(e->rel);
            *e = (wd_ent){.coll = -1};
            pthread_mutex_lock(&w->mu);
            w->n_watches--;
            pthread_mutex_unlock(&w->mu);
            if (was_root)
                set_missing(w, coll, 1);
            mark_dirty(w, coll);
            continue;
        }
        if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM)))
            w->rewalk[coll] = 1;   /* watch new folders; moved ones get their new path */
        if (strcmp(name, ".gitignore") == 0)
            w->rewalk[coll] = 1;   /* the rules that pick folders changed */
        if (!(ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && *name &&
            is_link_at(w, coll, e->rel, name))
            w->rewalk[coll] = 1;   /* a new symlink: add_watches says what that means */
        if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && !*e->rel) {
            /* The root went away (or elsewhere: its watches would now
             * report a folder outside the collection). */
            drop_collection_watches(w, coll);
            set_missing(w, coll, 1);
            mark_dirty(w, coll);
            continue;
        }
        note_event(w, coll, e->rel, name);
        mark_dirty(w, coll);
    }
}

static void check_missing_but(watcher *w, const unsigned char *skip);
static void check_missing(watcher *w);

/* While a collection folder is missing, its parent folder is watched (its
 * own inotify instance, so a parent that is also a watched folder of
 * another collection keeps its entry there): the folder's return is an
 * event, not something the next rescan finds poll_s later. A parent that
 * is missing too is left to the rescans. */
static void arm_parents(watcher *w)
{
    w->parents_stale = 0;
    if (w->pfd >= 0)
        close(w->pfd);
    w->pfd = -1;
    int any = 0;
    for (size_t i = 0; i < w->cfg.n_collections; i++)
        any |= w->missing[i];
    if (!any)
        return;
    w->pfd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->pfd < 0)
        return;
    tbuf dir = {0};
    for (size_t i = 0; i < w->cfg.n_collections; i++) {
        if (!w->missing[i])
            continue;
        tbuf_reset(&dir);
        tbuf_puts(&dir, w->cfg.collections[i].path);
        char *slash = strrchr(dir.data, '/');
        if (!slash)
            continue;
        if (slash == dir.data)
            slash[1] = 0;   /* "/x": the parent is "/" */
        else
            *slash = 0;
        inotify_add_watch(w->pfd, dir.data, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    }
    tbuf_free(&dir);
    /* It may have come back before the watch: look once more. */
    check_missing(w);
}

/* A missing collection folder that is back: watch it and update it.
 * `skip` (may be NULL) marks collections not to look at. */
static void check_missing_but(watcher *w, const unsigned char *skip)
{
    for (size_t i = 0; i < w->cfg.n_collections; i++) {
        if (!w->missing[i] || (skip && skip[i]))
            continue;
        struct stat sb;
        if (stat(w->cfg.collections[i].path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            w->rewalk[i] = 1;
            mark_dirty(w, (int)i);
        }
    }
}

static void check_missing(watcher *w)
{
    check_missing_but(w, NULL);
}

static void run_updates(watcher *w)
{
    size_t n = w->cfg.n_collections;
    check_missing(w);
    unsigned char *armed = xcalloc(n + 1, 1);
    for (size_t i = 0; i < n; i++) {
        if (w->rewalk[i] && w->ifd >= 0) {
            w->rewalk[i] = 0;
            armed[i] = 1;
            add_watches(w, (int)i);
        }
    }
    const char **names = xcalloc(n + 1, sizeof *names);
    unsigned char *taken = xcalloc(n + 1, 1);
    size_t k = 0;
    int *which = xcalloc(n + 1, sizeof *which);
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < n; i++) {
        if (w->dirty[i]) {
            which[k] = (int)i;
            names[k++] = w->cfg.collections[i].name;
            taken[i] = 1;
            w->dirty[i] = 0;
            w->verified[i] = 0;
        }
    }
    pthread_mutex_unlock(&w->mu);
    if (k) {
        double t0 = clock_seconds();
        watch_walked *walked = xcalloc(k, sizeof *walked);
        int rc = w->o.update ? w->o.update(w->o.ctx, names, k, walked) : 0;
        double ms = (clock_seconds() - t0) * 1000.0;
        pthread_mutex_lock(&w->mu);
        /* Vouched for from now on: a clean walk that began after every
         * folder was watched (add_watches above, or earlier with nothing
         * lost since), with no event read meanwhile (watch_vouch looks
         * for those still unread). */
        for (size_t j = 0; !rc && j < k; j++) {
            int i = which[j];
            if (walked[j].clean && !w->dirty[i] && !w->rewalk[i] && !w->missing[i] &&
                !w->taint[i] && !w->polling && w->ifd >= 0) {
                w->verified[i] = 1;
                w->files[i] = walked[j].files;
            }
        }
        free(walked);
        w->updates++;
        w->last_update_ms = ms;
        free(w->update_error);
        w->update_error = NULL;
        if (rc) {
            /* (a full disk, a locked index): keep serving the last
             * committed state, say why in status, retry every poll_s */
            tbuf m = {0};
            tbuf_printf(&m, "the last update failed: %s (retrying every %.0f s)",
                        *trove_errmsg() ? trove_errmsg() : "unknown error", w->o.poll_s);
            w->update_error = tbuf_detach(&m);
            w->retry_at = clock_seconds() + w->o.poll_s;
        }
        pthread_mutex_unlock(&w->mu);
        if (rc)
            for (size_t i = 0; i < n; i++)
                if (taken[i])
                    mark_dirty(w, (int)i);
    }
    /* A collection folder that came back while the update ran is watched
     * (and updated again) now, not at the next poll. One we just tried to
     * watch and could not (no permission) waits for the rescans instead of
     * looping. */
    check_missing_but(w, armed);
    free(which);
    free(armed);
    free(names);
    free(taken);
}

static int any_dirty(watcher *w)
{
    int any = 0;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->cfg.n_collections; i++)
        any |= w->dirty[i];
    pthread_mutex_unlock(&w->mu);
    return any;
}

/* A filesystem was mounted or unmounted somewhere: one may now cover a
 * watched folder (no event says so) or lie under a collection. Watch
 * everything again (add_watches also looks at the filesystems) and walk. */
static void mounts_changed(watcher *w)
{
    for (size_t i = 0; i < w->cfg.n_collections; i++) {
        w->rewalk[i] = 1;
        mark_dirty(w, (int)i);
    }
}

static void *watch_main(void *arg)
{
    watcher *w = arg;
    rebuild(w);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int quit = w->quit;
        config *next = quit ? NULL : w->next_cfg;
        int reconfigured = next != NULL;
        if (next) {
            /* with the flags, in one step: watch_vouch never sees the new
             * config's name with the old config's word */
            w->next_cfg = NULL;
            config_free(&w->cfg);
            w->cfg = *next;
            reset_flags(w);
            free(next);
        }
        pthread_mutex_unlock(&w->mu);
        if (quit)
            break;
        pthread_mutex_lock(&w->mu);
        int moved = w->mounts_moved || w->recheck;
        w->mounts_moved = w->recheck = 0;
        pthread_mutex_unlock(&w->mu);
        if (moved)
            mounts_changed(w);
        if (reconfigured)
            rebuild(w);
        double now = clock_seconds();
        int any_missing = 0;
        for (size_t i = 0; i < w->cfg.n_collections; i++)
            any_missing |= w->missing[i];
        if ((w->polling || any_missing) && now - w->last_poll >= w->o.poll_s) {
            w->last_poll = now;
            check_missing(w);
            if (w->polling)
                for (size_t i = 0; i < w->cfg.n_collections; i++)
                    mark_dirty(w, (int)i);
        }
        double wait = 1.0;
        if (any_dirty(w)) {
            pthread_mutex_lock(&w->mu);
            double quiet = w->last_dirty + w->o.debounce_s - now;
            double longest = w->first_dirty + w->o.max_wait_s - now;
            pthread_mutex_unlock(&w->mu);
            wait = quiet < longest ? quiet : longest;
            double retry = w->retry_at - now;
            if (retry > wait)
                wait = retry;
            if (wait <= 0) {
                run_updates(w);
                continue;
            }
        }
        if ((w->polling || any_missing) && wait > w->o.poll_s)
            wait = w->o.poll_s;
        if (w->parents_stale)
            arm_parents(w);
        struct pollfd p[4] = {{.fd = w->wake[0], .events = POLLIN},
                              {.fd = w->pfd, .events = POLLIN},
                              {.fd = w->ifd, .events = POLLIN},
                              {.fd = w->mfd, .events = POLLPRI}};
        int pr = poll(p, 4, (int)(wait * 1000) + 1);   /* fd -1: ignored */
        if (pr > 0 && w->mfd >= 0 && (p[3].revents & (POLLPRI | POLLERR)))
            mounts_changed(w);
        if (pr > 0 && w->pfd >= 0 && p[1].revents) {
            char b[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
            while (read(w->pfd, b, sizeof b) > 0) {
            }
            check_missing(w);
        }
        if (pr > 0 && p[0].revents) {
            char b[64];
            while (read(w->wake[0], b, sizeof b) > 0) {
            }
        }
        if (pr > 0 && w->ifd >= 0 && p[2].revents)
            read_events(w);
    }
    return NULL;
}

/* Everything of a watcher whose thread is not running (or has ended). */
static void watcher_free(watcher *w)
{
    if (w->ifd >= 0)
        close(w->ifd);
    for (size_t i = 0; i < w->cap_wds; i++)
        free(w->wds[i].rel);
    free(w->wds);
    free_flags(w);
    free(w->problem);
    free(w->update_error);
    free(w->last_path);
    if (w->pfd >= 0)
        close(w->pfd);
    if (w->mfd >= 0)
        close(w->mfd);
    if (w->wake[0] >= 0)
        close(w->wake[0]);
    if (w->wake[1] >= 0)
        close(w->wake[1]);
    if (w->next_cfg) {
        config_free(w->next_cfg);
        free(w->next_cfg);
    }
    config_free(&w->cfg);
    pthread_mutex_destroy(&w->mu);
    pthread_mutex_destroy(&w->ev_mu);
    free(w);
}

trove_err watch_start(const config *cfg, const watch_opts *o, watcher **out)
{
    *out = NULL;
    watcher *w = xcalloc(1, sizeof *w);
    w->o = *o;
    w->ifd = -1;
    w->pfd = -1;
    /* Pollable: POLLPRI after every mount or unmount (proc(5)). */
    w->mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    copy_config(&w->cfg, cfg);
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->ev_mu, NULL);
    reset_flags(w);
    if (pipe2(w->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        trove_err rc = trove_fail(TROVE_EIO, "pipe: %s", strerror(errno));
        w->wake[0] = w->wake[1] = -1;
        watcher_free(w);
        return rc;
    }
    if (pthread_create(&w->thr, NULL, watch_main, w) != 0) {
        watcher_free(w);
        return trove_fail(TROVE_EIO, "cannot start the watcher thread");
    }
    *out = w;
    return TROVE_OK;
}

static void wake(watcher *w)
{
    ssize_t r = write(w->wake[1], "x", 1);
    (void)r;
}

void watch_reconfigure(watcher *w, const config *cfg)
{
    config *c = xmalloc(sizeof *c);
    copy_config(c, cfg);
    pthread_mutex_lock(&w->mu);
    if (w->next_cfg) {
        config_free(w->next_cfg);
        free(w->next_cfg);
    }
    w->next_cfg = c;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

void watch_stop(watcher *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_mutex_unlock(&w->mu);
    wake(w);
    pthread_join(w->thr, NULL);
    watcher_free(w);
}

int watch_vouch(watcher *w, const char *name, size_t *files, char *why, size_t cap)
{
    *files = 0;
    why[0] = '\0';
    pthread_mutex_lock(&w->ev_mu);
    pthread_mutex_lock(&w->mu);
    int unread = 0;
    if (w->ifd >= 0 && ioctl(w->ifd, FIONREAD, &unread) != 0)
        unread = 1;
    struct pollfd m = {.fd = w->mfd, .events = POLLPRI};
    int moved = w->mfd >= 0 && poll(&m, 1, 0) > 0 && (m.revents & (POLLPRI | POLLERR));
    if (moved)
        w->mounts_moved = 1;   /* this poll took the news: the thread acts on it */
    int i = -1;
    for (size_t k = 0; k < w->cfg.n_collections && i < 0; k++)
        if (strcmp(w->cfg.collections[k].name, name) == 0)
            i = (int)k;
    if (i < 0)
        snprintf(why, cap, "collection '%s' is not watched yet", name);
    else if (w->next_cfg)
        snprintf(why, cap, "the watcher has yet to take up a changed config");
    else if (w->polling || w->ifd < 0)
        snprintf(why, cap, "the watcher is polling, not watching: %s",
                 w->problem ? w->problem : "inotify unavailable");
    else if (w->mounts_moved)
        snprintf(why, cap, "a filesystem was mounted or unmounted since the watcher's last walk");
    else if (w->recheck)
        snprintf(why, cap, "the watcher is to walk every collection again");
    else if (unread)
        snprintf(why, cap, "file events not yet read by the watcher (%d bytes)", unread);
    else if (w->missing[i])
        snprintf(why, cap, "collection '%s': its folder is missing", name);
    else if (w->dirty[i] || w->rewalk[i])
        snprintf(why, cap, "collection '%s' has changes the watcher has not indexed yet", name);
    else if (w->taint[i])
        snprintf(why, cap, "collection '%s': %s", name, w->taint[i]);
    else if (!w->verified[i])
        snprintf(why, cap, "collection '%s': the watcher's last update of it did not end "
                 "cleanly (a warning, a skipped file, a failure) or has not run yet", name);
    else
        *files = w->files[i];
    int ok = !why[0];
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&w->ev_mu);
    if (moved)
        wake(w);
    return ok;
}

void watch_recheck(watcher *w)
{
    pthread_mutex_lock(&w->mu);
    w->recheck = 1;
    pthread_mutex_unlock(&w->mu);
    wake(w);
}

void watch_state_get(watcher *w, watch_state *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&w->mu);
    out->state = xstrdup(w->cfg.n_collections == 0 ? "off" : w->polling ? "polling" : "watching");
    out->folders = w->n_watches;
    out->last_event = w->last_event;
    out->last_path = w->last_path ? xstrdup(w->last_path) : NULL;
    for (size_t i = 0; w->dirty && i < w->cfg.n_collections; i++)
        out->pending += w->dirty[i];
    out->updates = w->updates;
    out->last_update_ms = w->last_update_ms;
    tbuf p = {0};
    if (w->problem)
        tbuf_puts(&p, w->problem);
    if (w->update_error)
        tbuf_printf(&p, "%s%s", p.len ? "; " : "", w->update_error);
    for (size_t i = 0; w->missing && i < w->cfg.n_collections; i++)
        if (w->missing[i])
            tbuf_printf(&p, "%scollection '%s': folder %s is missing (polling for it)",
                        p.len ? "; " : "", w->cfg.collections[i].name, w->cfg.collections[i].path);
    if (!p.len && w->cfg.n_collections == 0)
        tbuf_puts(&p, "no collections");
    out->problem = p.len ? tbuf_detach(&p) : NULL;
    tbuf_free(&p);
    pthread_mutex_unlock(&w->mu);
}

void watch_state_free(watch_state *s)
{
    free(s->state);
    free(s->problem);
    free(s->last_path);
    memset(s, 0, sizeof *s);
}
