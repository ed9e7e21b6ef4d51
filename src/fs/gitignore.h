/* gitignore — the rules of one .gitignore file, chained to its parents'
 * (private to src/fs/).
 *
 * A gi_frame holds the compiled patterns of one .gitignore and a counted
 * reference to the frame of the nearest enclosing folder that had one, so a
 * walker can keep the chain alive for directories it visits later (the
 * deferred symlinked directories). gi_frame_new() returns a frame with one
 * reference; gi_frame_unref() drops one and frees the frame (and its
 * reference on the parent) at zero.
 *
 * Semantics follow git: blank and '#' lines are skipped; '!' negates; a
 * trailing '/' matches directories only; a '/' at the start or in the middle
 * anchors the pattern to the .gitignore's folder, otherwise it matches the
 * last path component at any depth; "**", classes and '\' escapes as in
 * glob (no braces); unescaped trailing spaces are dropped. Deeper files
 * override shallower ones and within a file the last match wins. A path
 * inside an ignored directory is never re-included: the walker does not
 * descend into ignored directories at all. */
#ifndef TROVE_FS_GITIGNORE_H
#define TROVE_FS_GITIGNORE_H

#include <stddef.h>

typedef struct gi_frame gi_frame;

/* Parse `len` bytes of a .gitignore found in the folder whose relative path
 * (with trailing '/', or "" for the root) is `prefix_len` bytes long. The
 * new frame takes a reference on `parent` (may be NULL). Returns `parent`
 * with an extra reference instead if the file holds no rule. */
gi_frame *gi_frame_new(gi_frame *parent, size_t prefix_len, const char *data, size_t len);
gi_frame *gi_frame_ref(gi_frame *f);
void gi_frame_unref(gi_frame *f);

/* 1 if the path `rel` (relative to the walk root, `len` bytes, last
 * component starting at rel + base) is ignored by the chain ending at `f`. */
int gi_ignored(gi_frame *f, const char *rel, size_t len, size_t base, int is_dir);

#endif
