/* watch — keep the index in line with the collections' files while the
 * daemon runs.
 *
 * One thread watches every folder a `trove update` walk enters (walk_tree's
 * on_dir callback: the same masks, excludes, .gitignore, dot-folders and
 * nested collections), adds folders created later (a re-walk of that
 * collection), and after a burst of events has been quiet for the debounce
 * time (or has gone on for the longest wait) runs the update callback for
 * the collections that changed. An update walks the collection and skips
 * files whose (size, mtime) are unchanged, so only what changed is read and
 * re-indexed. When inotify runs out of watches the watcher falls back to
 * rescanning every few seconds and says so in its state; a collection
 * folder that disappears is polled for until it comes back.
 *
 * watch_vouch() says whether a walk of a collection would find its files
 * as the watcher's last update left them, so that a `trove update` through
 * the daemon can answer without walking (docs/architecture.md, "An update
 * without a walk"): only when that update was clean and walked with every
 * folder already watched, and nothing has happened since (no event read or
 * unread, no overflow, no lost or failed watch, no mount or unmount, no
 * symlink or non-local filesystem in the collection, the same config).
 *
 * Ownership: the watcher copies the config it is given; watch_state
 * strings are owned by the caller after watch_state_get (free with
 * watch_state_free). */
#ifndef TROVE_DAEMON_WATCH_H
#define TROVE_DAEMON_WATCH_H

#include <stddef.h>

#include "config/config.h"
#include "util/err.h"

typedef struct watcher watcher;

/* What an update found of one collection. */
typedef struct watch_walked {
    int clean;          /* no warning, no skipped file, the folder there */
    size_t files;       /* the files its walk matched */
} watch_walked;

/* Bring the named collections up to date (names: n of them), filling
 * out[i] for names[i]. Returns non-zero on failure (the watcher retries
 * on the next event). */
typedef int (*watch_update_fn)(void *ctx, const char *const *names, size_t n, watch_walked *out);

typedef struct watch_opts {
    double debounce_s;      /* quiet time before an update (default 0.05) */
    double max_wait_s;      /* longest wait from the first event (default 0.5) */
    double poll_s;          /* rescan period when polling (default 2) */
    size_t max_watches;     /* 0: no limit of our own (inotify's applies) */
    watch_update_fn update;
    void *ctx;
} watch_opts;

void watch_opts_init(watch_opts *o);

trove_err watch_start(const config *cfg, const watch_opts *o, watcher **out);
void watch_stop(watcher *w);
/* The config changed (collections added or removed): watch the new set. */
void watch_reconfigure(watcher *w, const config *cfg);

/* 1 when the watcher vouches for collection `name` (*files: the files of
 * its last walk), else 0 and why[cap] says why not. Thread-safe; cheap (a
 * FIONREAD and a poll). */
int watch_vouch(watcher *w, const char *name, size_t *files, char *why, size_t cap);
/* Walk every collection again soon (the index was written by someone
 * else since the last update: vouching waits for a walk that saw it). */
void watch_recheck(watcher *w);

typedef struct watch_state {
    char *state;            /* "watching", "polling", "off" */
    char *problem;          /* why not watching, or a missing folder; NULL */
    size_t folders;         /* inotify watches held */
    double last_event;      /* Unix time, 0 when none */
    char *last_path;        /* COLLECTION/PATH of the last event, NULL */
    size_t pending;         /* collections waiting for an update */
    size_t updates;         /* updates run */
    double last_update_ms;
} watch_state;

void watch_state_get(watcher *w, watch_state *out);
void watch_state_free(watch_state *s);

#endif
