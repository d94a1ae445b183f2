/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MPI layer's side of a --pattern: the flows of core/pb_pattern.h turned
 * into world ranks.  A slot is a node rank; flow i pairs the rank at (a_node,
 * a_slot) (side A, measures) with the rank at (b_node, b_slot) (side B), and
 * its pair id is i.  Pure, no MPI: tests/unit/test_pattern_layers.c holds it
 * equal to the verbs layer's (verbs/vb_pattern.c) for every pattern.
 */
#ifndef MP_PATTERN_H
#define MP_PATTERN_H

#include <stddef.h>

#include "pb_pattern.h"

/* Which side of a pair a rank is: A measures (without --pattern always on rank 0's node). */
enum mp_side { MP_SIDE_NONE, MP_SIDE_A, MP_SIDE_B };

/* One world rank: where it is (in), what the pattern makes it (out). */
struct mp_pattern_rank {
	int node, node_rank;                   /* in: node id 0..K-1, rank within the node */
	enum mp_side side;                     /* out: A, B, or NONE (idle) */
	int peer, pair_id;                     /* out: peer's world rank, flow id; -1 when idle */
};

/*
 * Assign pattern p (its current round) to the size ranks of a job of `nodes`
 * nodes, every node holding per_node ranks.  The number of pairs (>= 1), or
 * a negative errno with err saying why (the pattern does not fit the job,
 * a (node, node rank) missing from ranks, out of memory).
 */
int mp_pattern_assign(const struct pb_pattern *p, int nodes, int per_node, struct mp_pattern_rank *ranks,
		      int size, char *err, size_t len);

#endif
