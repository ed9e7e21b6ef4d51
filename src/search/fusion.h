/* fusion — combine the channels' ranked lists into one score per note.
 *
 * Two methods:
 *
 *   FUSION_RRF (keyword channels only: no vector channel ran)
 *     weighted reciprocal rank fusion, score = sum w_c * q_c / (k + rank_c),
 *     normalised so that a note first in every channel scores 1.0; q_title
 *     is the title match's quality, q = 1 for the others.
 *
 *   FUSION_Z (hybrid: the vector channel ran)
 *     distribution-based score fusion. Each score channel (bm25, vector) is
 *     standardised against its own top FUSION_STATS_N notes for this query:
 *     z = (s - mean) / sd, negatives clipped to 0. A note's vote from the
 *     channel is w_c * z. A channel whose list is flat for this query (a
 *     weak model, words that are everywhere) gives every note a small z and
 *     barely moves the order; one with a clear winner gives it a large z.
 *     Ranks alone (RRF) cannot tell the two apart: a vector rank 1 that is
 *     0.001 above rank 50 outvoted a BM25 rank 1 far ahead of rank 2.
 *     The vector weight is further scaled by a per-query confidence
 *         c_v = 1 - certainty_bm25 * (1 - agreement)
 *     certainty_bm25: the largest softmax(z) of the bm25 list (near 1 when
 *     one note stands far out, near 1/n when the list is flat);
 *     agreement: sum softmax(z_bm25)(note) * z_vec(note) / max z_vec, in
 *     [0, 1], how much of the vector channel's own standout the notes BM25
 *     is sure of carry. The vector is doubted only as far as the keyword
 *     channel is sure of an answer the vector does not support; when BM25
 *     is unsure (a paraphrase whose words match little) the vector keeps
 *     its full weight. The title vote is w_title * quality * z_ref, z_ref
 *     the largest top z of the score channels (at least 1): an exact name
 *     counts like the clearest hit of any channel.
 *     The translated list (channel "translation") is a score channel too.
 *     When its list has no spread (a lone hit, or equal scores: z = 1 by
 *     convention, not by standing out) its weight is scaled by
 *         c_x = 1 - certainty_own
 *     certainty_own: the largest softmax(z) share of the bm25 list that a
 *     note in the query's own script holds (fusion_cand.own_script; 0 when
 *     bm25 found only notes in the other language, or when bm25's own list
 *     has no spread: its certainty is then the same convention): a lone
 *     translated hit does not weigh as the note the query's own words are
 *     sure of.
 *     Normalised by sum of w_c * top z_c (+ w_title * z_ref), so a note
 *     first in every channel with an exact name scores about 1.0.
 *
 * A lone hit (list of one) or a list of equal scores gives z = 1.
 * (xlate_certainty is reported whenever it is measured; the weight is
 * scaled only for a translated list without spread.)
 * Pure functions over caller-owned arrays; no allocation survives a call. */
#ifndef TROVE_FUSION_H
#define TROVE_FUSION_H

#include <stddef.h>

#include "search/search.h"

/* Notes per channel whose scores define its mean and spread. */
#define FUSION_STATS_N 100

/* One candidate note: in ch[c].rank / ch[c].score (rank 0: the channel did
 * not find it; the bm25 score is the one its rank was decided by). Out:
 * ch[c].z, ch[c].vote and fused. */
typedef struct fusion_cand {
    search_channel_hit ch[SEARCH_N_CHANNELS];
    int own_script;   /* in: the note is in the query's script (FUSION_Z's translation weight) */
    double fused;
} fusion_cand;

/* weights: the configured channel weights; rrf_k: k of FUSION_RRF;
 * vector_ran: the vector channel ran (selects FUSION_Z). */
void fusion_run(fusion_cand *c, size_t n, const double weights[SEARCH_N_CHANNELS], int rrf_k,
                int vector_ran, search_fusion *info);

#endif
