/* walk — enumerate the markdown files of a collection.
 *
 * Walks a directory tree depth-first in a stable (byte-sorted) order and
 * reports every regular file whose path relative to the root matches one of
 * the masks (glob syntax; the default is every .md file at any depth, i.e.
 * "**" then "/" then "*.md") and none of the excludes. It skips dot-folders
 * (.git, .obsidian, .trash, ...), dot-files, node_modules, and paths ignored
 * by .gitignore files found along the way (nested .gitignore files apply
 * below their folder; negation, dir-only and anchored patterns per git).
 * Nothing outside the root: a symlink (to a file or a folder) whose real
 * path lies outside the real path of the root is skipped with a warning
 * (fs_path_inside, the rule every reader applies), unless follow_outside
 * is set. Folders listed in skip_dirs (nested collections) are not entered.
 * Symlinks to files are followed; symlinked directories are followed once,
 * and a directory already visited (same dev/inode) is never entered again,
 * so loops cannot hang the walk. Symlinked directories are walked after the
 * real tree, so a file reachable both ways keeps its real path; apart from
 * those, the relative paths are reported in strcmp order (depth-first, each
 * folder sorted by bytes as if directory names ended in '/'). Unreadable
 * directories and dangling symlinks produce a warning through the callback
 * and the walk goes on.
 *
 * glob_match() is exported for reuse: '*' and '?' do not cross '/', "**"
 * matches any number of path segments, [...] classes and {a,b} alternatives. */
#ifndef TROVE_WALK_H
#define TROVE_WALK_H

/* The mask of a collection that names none: every .md file at any depth. */
#define WALK_DEFAULT_MASK "**/*.md"

#include <stddef.h>
#include <sys/stat.h>

#include "util/err.h"

typedef struct walk_opts {
    const char *root;           /* absolute path of the collection root */
    const char *const *masks;   /* NULL or n_masks == 0: WALK_DEFAULT_MASK */
    size_t n_masks;
    const char *const *excludes;
    size_t n_excludes;
    int follow_outside;         /* follow symlinks that lead outside the root */
    const char *const *skip_dirs;   /* relative folders never entered */
    size_t n_skip_dirs;
    /* 1: a second thread stats the files the walk takes (a stat per note
     * is most of a walk's time), beside the one that walks; 0: the
     * caller's thread does it all. The callbacks run on the caller's
     * thread either way, with the same files and warnings in the same
     * order. */
    int helpers;
} walk_opts;

typedef struct walk_callbacks {
    void *ctx;
    /* relpath uses '/' separators, no leading "./"; st is the stat of the
     * file (after following a symlink). Return non-zero to stop the walk. */
    int (*on_file)(void *ctx, const char *relpath, const struct stat *st);
    /* Every folder the walk enters (relpath "" for the root), before its
     * files; the watcher watches exactly these. Non-zero stops the walk.
     * May be NULL. */
    int (*on_dir)(void *ctx, const char *relpath);
    /* A path that could not be read (message names it). May be NULL. */
    void (*on_warning)(void *ctx, const char *message);
    /* Every symlink met in a folder the walk entered, followed or not
     * (the watcher cannot see changes where one leads). May be NULL. */
    void (*on_link)(void *ctx, const char *relpath);
} walk_callbacks;

/* TROVE_ENOENT / TROVE_EIO with a detail if the root itself is missing or
 * unreadable, TROVE_EINVAL if it is not a directory; otherwise TROVE_OK
 * (per-entry problems go to on_warning), also when on_file stopped it. */
trove_err walk_tree(const walk_opts *opts, const walk_callbacks *cb);

/* 1 if `path` matches glob `pattern` (both '/'-separated). */
int glob_match(const char *pattern, const char *path);

#endif
