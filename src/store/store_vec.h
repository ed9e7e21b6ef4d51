/* store_vec — embedding vectors in the index.
 *
 * Vectors are int8 with one float scale each (vec/vec.h), keyed by chunk
 * and model. They live in immutable segments: one BLOB per segment holding
 * n vectors back to back plus their scales, chunk ids, note ids and text
 * hashes, so a search reads a whole segment with one blob read and no
 * per-row SQL. A deleted chunk only sets a bit in its segment's `dead`
 * bitmap (folded in at commit); segments that are mostly dead are rewritten
 * and small segments are merged in tiers, so the cost of a change is
 * proportional to the change (amortised), not to the index. vec_map
 * (chunk, model) -> (segment, slot) serves the write side: which chunks
 * still need a vector, and which slot to mark when a chunk goes.
 *
 * A model is identified by its fingerprint (model identity, prompts, dim):
 * vectors of different models are never mixed in one search.
 *
 * Every write runs inside the caller's store_begin()/store_commit(); arrays
 * and strings handed out are owned by the caller and freed with the matching
 * *_free(). See docs/schema.md. */
#ifndef TROVE_STORE_VEC_H
#define TROVE_STORE_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "vec/vec.h"

/* Entries per segment at most (25 MiB of 384-d vectors). */
#define STORE_VEC_SEG_MAX 65536

/* ---- models ---- */
typedef struct store_vec_model {
    int64_t id;
    char *fingerprint;
    char *name;
    int dim;
    int64_t vectors;   /* live vectors */
} store_vec_model;

/* *id = the model's id, or 0 when the index has none under this fingerprint. */
trove_err store_vec_model_find(store *st, const char *fingerprint, int64_t *id, int *dim);
/* Register (or find) a model; a known fingerprint with another dim is
 * TROVE_ECORRUPT. */
trove_err store_vec_model_ensure(store *st, const char *fingerprint, int dim, const char *name,
                                 int64_t *id);
trove_err store_vec_models(store *st, store_vec_model **out, size_t *n);
void store_vec_models_free(store_vec_model *m, size_t n);
/* Forget a model and every vector of it (and its noise floor). */
trove_err store_vec_model_drop(store *st, int64_t model_id);

/* The model's noise floor in this index: the similarity that a query
 * unrelated to every note reaches (index/vembed.h estimates it), stored in
 * meta as 'vec_floor:MODEL_ID' = "FLOOR VECTORS", VECTORS the live vectors
 * it was estimated over. *have 0 when none is stored (an index embedded
 * before floors existed); then *floor is -1 and *vectors 0. */
trove_err store_vec_floor_get(store *st, int64_t model_id, double *floor, int64_t *vectors,
                              int *have);
/* Store it (inside the caller's transaction); floor in [-1, 1]. */
trove_err store_vec_floor_set(store *st, int64_t model_id, double floor, int64_t vectors);

/* ---- writing ---- */
typedef struct store_vec_entry {
    int64_t chunk_id;
    uint64_t text_hash;   /* of the text that was embedded */
    float scale;
    const int8_t *q;      /* dim components */
} store_vec_entry;

/* Add vectors as one new segment. Chunks that no longer exist (deleted by a
 * concurrent update) are skipped; a chunk that already had a vector of this
 * model has the old one marked dead. *added counts what was stored. Then
 * merges small segments of the model. */
trove_err store_vec_add(store *st, int64_t model_id, int dim, const store_vec_entry *e, size_t n,
                        size_t *added);

/* Chunks of the index without a vector of this model, in chunk id order,
 * starting after chunk `after`; at most `limit`. heading is the note title
 * and heading path (as in chunks_fts), body the chunk's text. */
typedef struct store_vec_todo {
    int64_t chunk_id;
    char *heading, *body;
} store_vec_todo;
trove_err store_vec_pending(store *st, int64_t model_id, int64_t after, size_t limit,
                            store_vec_todo **out, size_t *n);
void store_vec_todo_free(store_vec_todo *t, size_t n);
trove_err store_vec_pending_count(store *st, int64_t model_id, int64_t *n);

/* Every stored entry of a model (live or dead): its text hash and where it
 * is, for reusing a vector whose text is unchanged. Sorted by hash. */
typedef struct store_vec_loc {
    uint64_t text_hash;
    int64_t seg_id;
    uint32_t slot;
} store_vec_loc;
trove_err store_vec_locations(store *st, int64_t model_id, store_vec_loc **out, size_t *n);
/* Read one stored vector (dim components, scale, text hash). Segment ids
 * are never reused, so a location read before a merge fails cleanly
 * (TROVE_ESQL: no such segment) rather than finding another vector. */
trove_err store_vec_read(store *st, int64_t seg_id, uint32_t slot, int dim, int8_t *q,
                         float *scale, uint64_t *text_hash);

/* ---- reading for search ---- */
trove_err store_vec_segments(store *st, int64_t model_id, int64_t **ids, size_t *n);

typedef struct store_vec_seg {
    void *mem;          /* owns the block's arrays (copied from the blob) ... */
    void *map;          /* ... or they lie in this mapped sidecar (store_vside.h) */
    size_t map_len;
    void *stream;       /* store_vec_segment_stream: the sidecar the vectors are read from */
    uint8_t *dead;
    vec_block blk;
} store_vec_seg;
/* The bytes a segment of n vectors of dim components takes (its blob, and
 * its sidecar's payload). A segment read from a sidecar that carries
 * sketches (store_vside.h) has them in blk.sketch (else NULL). */
size_t store_vec_seg_size(size_t n, int dim);
/* Load one segment: its sidecar mapped in place when it has a valid one,
 * else with one blob read; checks its layout. */
trove_err store_vec_segment_load(store *st, int64_t seg_id, int dim, store_vec_seg *out);
/* The same for a reader that scans the segment once (a cold search): when
 * it has a valid sidecar, out->blk.data is NULL and the scan reads the
 * vectors from the file by pread (vec.h), in windows that stay in the CPU's
 * cache, instead of mapping all of them in this process. After the scan,
 * vec_topk_failed() says whether a read failed. Else as
 * store_vec_segment_load. */
trove_err store_vec_segment_stream(store *st, int64_t seg_id, int dim, store_vec_seg *out);
void store_vec_segment_free(store_vec_seg *s);

/* The segments of a model as the read transaction sees them, in id order,
 * each with its dead bitmap (NULL: none dead; else (n + 7) / 8 bytes, owned
 * by the list). For a reader that keeps segments' vectors across
 * transactions (search/vcache.h): segments are immutable and their ids never
 * reused, so only this list and the bitmaps need reading each time. */
typedef struct store_vec_seg_info {
    int64_t id;
    size_t n;
    uint8_t *dead;
} store_vec_seg_info;
trove_err store_vec_seg_list(store *st, int64_t model_id, store_vec_seg_info **out, size_t *n);
void store_vec_seg_list_free(store_vec_seg_info *l, size_t n);
/* A segment's vectors alone: as store_vec_segment_load() with no dead
 * bitmap (out->dead and out->blk.dead NULL). */
trove_err store_vec_segment_data(store *st, int64_t seg_id, int dim, store_vec_seg *out);
/* A segment loaded with its sidecar mapped whose vectors the caller has
 * copied elsewhere (the daemon's cache, to huge pages): the mapping's pages
 * of the vectors are let go, and s->blk.data set NULL for the caller to
 * point at its copy. Nothing happens for a segment not mapped. */
void store_vec_segment_drop_rows(store_vec_seg *s, int dim);
/* The same for the sidecar's sketches (blk.sketch), copied elsewhere. */
void store_vec_segment_drop_sketch(store_vec_seg *s, int dim);

/* The index's random identity (meta 'index_id', set when a writer first
 * opens it); *id NULL when it has none yet (an index no writer opened since
 * the key was introduced). Freed by the caller. */
trove_err store_index_id(store *st, char **id);

/* The model whose stored vectors a note's own vectors are read from: the
 * one of `fingerprint`, else (NULL) the one with the most live vectors.
 * *id 0 (and *name NULL) when it has none; *name is the caller's. */
trove_err store_vec_model_pick(store *st, const char *fingerprint, int64_t *id, int *dim,
                               char **name);

/* The mean of a note's chunk vectors of a model, each scaled to unit
 * length first (dim floats into out; all zero when it has none); *n: the
 * chunks that had one. For `trove similar`: the note as one query. */
trove_err store_vec_doc_mean(store *st, int64_t doc_id, int64_t model_id, int dim, float *out,
                             size_t *n);
/* One chunk's vector of a model, scaled to unit length (*n 0 and zeros
 * when it has none). */
trove_err store_vec_chunk_get(store *st, int64_t chunk_id, int64_t model_id, int dim, float *out,
                              size_t *n);

/* Does the model have any vector in this collection? */
trove_err store_vec_collection_has(store *st, int64_t model_id, const char *collection, int *has);

/* ---- status ---- */
typedef struct store_vec_count {
    char *collection;
    int64_t chunks;     /* chunks indexed */
    int64_t embedded;   /* with a vector of the model */
    int64_t stale;      /* without one, but with a vector of another model */
} store_vec_count;
trove_err store_vec_counts(store *st, int64_t model_id, store_vec_count **out, size_t *n);
void store_vec_counts_free(store_vec_count *c, size_t n);

/* ---- hooks of store.c ---- */
/* Before a note's chunks are deleted: remember their vectors' slots. */
trove_err store_vec_doc_deleted(store *st, int64_t doc_id);
/* At commit: set the remembered dead bits, rewrite mostly-dead segments. */
trove_err store_vec_fold(store *st);
/* At rollback: forget them. */
void store_vec_discard(store *st);

#endif
