/* vembed — the embedding pass: give every chunk of the index a vector of
 * the active model.
 *
 * Chunks without a vector of the model (new or changed notes; all of them
 * after a model switch) are read from the index in chunk order, turned into
 * text (note title and heading path, then the chunk), and embedded in
 * batches through embed_texts(EMBED_DOCUMENT). A chunk whose text equals
 * one already embedded by the same model (an edited note's untouched
 * sections, duplicates) reuses that vector. Vectors are committed every
 * few seconds in their own transaction, so an interruption, a crash or a
 * full disk loses at most what was embedded since the last commit, and the
 * next run resumes where this one stopped.
 *
 * The model's identity in the index is vembed_fingerprint(): the engine's
 * fingerprint (model file, prompts, dim) plus the version of the chunk text
 * format. The caller owns the store and the model; the pass opens and
 * commits its own transactions (none may be open). */
#ifndef TROVE_VEMBED_H
#define TROVE_VEMBED_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "embed/embed.h"
#include "store/store.h"

typedef struct vembed_progress {
    size_t done, total;   /* chunks embedded or reused so far, to do */
    double elapsed;       /* seconds since the start */
    int committed;        /* 1 when this report follows a commit */
} vembed_progress;

typedef struct vembed_opts {
    const char *name;     /* shown by `status` for the model; NULL: from the model */
    int force;            /* drop the model's vectors first: re-embed all */
    int batch;            /* texts per embed_texts() call; <= 0: 64 */
    double commit_secs;   /* commit at least this often; <= 0: 3 s */
    void (*progress)(void *ctx, const vembed_progress *p);
    void *progress_ctx;
    volatile sig_atomic_t *interrupted;   /* checked between batches */
    /* Held around each embed_texts() call when the model is shared with
     * other threads (the daemon's searches); NULL: not shared. */
    pthread_mutex_t *model_lock;
} vembed_opts;

typedef struct vembed_stats {
    size_t pending;       /* chunks that needed a vector at the start */
    size_t embedded;      /* computed by the model */
    size_t reused;        /* copied from a stored vector with the same text */
    size_t stored;        /* committed (chunks deleted meanwhile are not) */
    double secs;
} vembed_stats;

/* Identity of the model's vectors in the index (caller frees). */
char *vembed_fingerprint(const embed_model *m);

/* The text embedded for a chunk (caller frees). */
char *vembed_text(const char *heading, const char *body);

/* Embed what needs it, then refresh the noise floor (below). TROVE_EINTR
 * when interrupted (what was done up to then is committed; the floor is
 * refreshed by the next run). */
trove_err vembed_run(store *st, embed_model *m, const vembed_opts *opts, vembed_stats *stats);

/* The model's noise floor in this index (store_vec_floor_get): the
 * similarity that queries unrelated to every note reach. Estimated from
 * nonsense probes (made-up words, punctuation, mixed scripts) embedded as
 * queries and scanned against every live vector (the best each reaches;
 * for a static model, random words of its vocabulary: see vembed.c). Only
 * re-estimated when none is stored or when the model's live vectors moved
 * by more than a tenth since, so it follows a growing index. Opens its own
 * transactions (none may be open). */
trove_err vembed_floor_refresh(store *st, embed_model *m, const vembed_opts *opts);

#endif
