/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic patterns across K nodes: who talks to whom at once, the one
 * definition both layers use (pairbench-mpi: mpi/mp_pattern.c turns it into
 * ranks; pairbench-verbs: verbs/vb_pattern.c into one node's workers).  A pure
 * function of (pattern, nodes K, slots per node R) -> list of flows, each
 * flow (A = node a, slot i) -> (B = node b, slot j), a != b.  A measures
 * and, in one-way tests (bw), sends.  A slot is a node rank (MPI) or a
 * worker place of the node (verbs), 0..R-1.  Every (node, slot) is in at
 * most one flow; slots in none are idle for the pattern.  No MPI, no verbs
 * here: unit-tested on its own (tests/unit/test_pattern.c), and the two
 * layers' use of it against each other (tests/unit/test_pattern_layers.c).
 *
 *   pairs        K even: node 2m -> node 2m+1, slot j <-> slot j (K = 2: today's pairing)
 *   shift:S      every node i -> node (i+S) mod K at once, 1 <= S < K; R even:
 *                slots 0..R/2-1 send, R/2..R-1 receive (slot j -> slot R/2+j)
 *   bisection    K even: node i -> node i + K/2 (i < K/2), slot j <-> slot j
 *   incast[:T]   every other node -> node T (default 0); R >= K-1: each other
 *                node sends from m = R/(K-1) slots into distinct slots of T
 *   fanout[:T]   the reverse of incast: node T -> every other node
 *   alltoall     every unordered node pair at once, one rank pair each; R >= K-1;
 *                direction balanced: a -> b when (b-a) mod K < K/2, or == K/2 and a < b
 *   nodes:a-b,c-d,...  exactly these node pairs (no node twice), slot j <-> slot j
 *                (one hand-written round; nodes numbered from 0)
 *   scan[:F[-L]][,skip=I,...]  rounds F..L of the fabric scan's round-robin
 *                tournament, computed here from the node count (pb_scan.h);
 *                each round is its own pattern, named scan:R
 * A run may give several patterns separated by '/': they run one after the
 * other in the same job.
 */
#ifndef PB_PATTERN_H
#define PB_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#include "pb_scan.h"

#define PB_PATTERN_MAX_LINKS 512
#define PB_PATTERN_NAME_MAX 4096

enum pb_pattern_kind {
	PB_PAT_PAIRS, PB_PAT_SHIFT, PB_PAT_BISECTION, PB_PAT_INCAST, PB_PAT_FANOUT,
	PB_PAT_ALLTOALL, PB_PAT_NODES, PB_PAT_SCAN,
};

struct pb_pattern {
	enum pb_pattern_kind kind;
	int arg;                               /* shift: S; incast/fanout: target node */
	int n_links;                           /* nodes: the node pairs */
	int link[PB_PATTERN_MAX_LINKS][2];
	struct pb_scan scan;                   /* scan: its rounds; scan.round is the one run */
	int n_rounds;                          /* set by pb_pattern_rounds */
	char name[PB_PATTERN_NAME_MAX];        /* canonical text: the rows' pattern column */
	const char *slot_noun;                 /* what R is called in messages; NULL: "ranks per node" */
};

/* One flow: flow id = its index in pb_pattern_flows' list (the rows' pair_id). */
struct pb_flow {
	int a_node, a_slot;                    /* measuring side */
	int b_node, b_slot;
};

/*
 * Parse one pattern (no '/').  0, or -EINVAL with err naming what is wrong.
 * Node numbers are checked against K only by pb_pattern_flows.
 */
int pb_pattern_parse(const char *text, struct pb_pattern *p, char *err, size_t len);

/*
 * The flows of pattern p over nodes x per_node slots, in a fixed order
 * (the order of the loops in pb_pattern.c: flow ids follow it).  Writes at
 * most max flows to out.  Returns the number of flows (>= 1), or -EINVAL
 * with err saying why this pattern cannot run on this job (odd K for
 * bisection, too few slots per node, ...), or -E2BIG when more than max.
 */
int pb_pattern_flows(const struct pb_pattern *p, int nodes, int per_node, struct pb_flow *out,
		     int max, char *err, size_t len);

/*
 * The cross-node start of a pattern's flows (pairbench-verbs, which has no communicator):
 * every node first joins its own barrier, then D times: every flow's two ends meet (a pair
 * sync), every node joins its barrier.  After round d a node knows that every node within
 * d flows of it has arrived, so D = the diameter of the graph whose vertices are the nodes
 * with a flow and whose edges are the flows (either direction) makes it a barrier of all
 * of them.  Returns D (>= 1 when n >= 1; 0 when there is no flow), and *connected: false
 * when the flows fall into groups that never meet (pairs, bisection, nodes:..., a scan
 * round: D is then the largest group's diameter and the groups start apart).
 */
int pb_pattern_meet_rounds(const struct pb_flow *flows, int n, int nodes, bool *connected);

/*
 * How many rounds p runs on a job of `nodes` nodes: 1, or a scan's rounds
 * (>= 1), or -EINVAL with err.  Selects p's first round.
 */
int pb_pattern_rounds(struct pb_pattern *p, int nodes, char *err, size_t len);

/* Select round i (0-based, < pb_pattern_rounds) of p: a scan's name becomes scan:R. */
void pb_pattern_round(struct pb_pattern *p, int i);

#endif
