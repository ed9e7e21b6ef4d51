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
 * Ownership: the watcher copies the config it is given; watch_state
 * strings are owned by the caller after watch_state_get (free with
 * watch_state_free). */
#ifndef TROVE_DAEMON_WATCH_H
#define TROVE_DAEMON_WATCH_H

#include <stddef.h>

#include "config/config.h"
#include "util/err.h"

typedef struct watcher watcher;

/* Bring the named collections up to date (names: n of them). Returns
 * non-zero on failure (the watcher retries on the next event). */
typedef int (*watch_update_fn)(void *ctx, const char *const *names, size_t n);

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
