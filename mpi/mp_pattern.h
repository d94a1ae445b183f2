/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Traffic patterns across K nodes: who talks to whom at once.  A pure
 * function of (pattern, nodes K, ranks per node R) -> list of pairs, each
 * pair (A = node a, slot i) -> (B = node b, slot j), a != b.  A measures
 * and, in one-way tests (bw), sends.  A slot is a node rank (0..R-1).
 * Every rank is in at most one pair; ranks in none are idle for the
 * pattern.  No MPI here: unit-tested on its own (tests/unit/test_pattern.c).
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
#ifndef MP_PATTERN_H
#define MP_PATTERN_H

#include <stddef.h>

#include "pb_scan.h"

#define MP_PATTERN_MAX_LINKS 512
#define MP_PATTERN_NAME_MAX 4096

enum mp_pattern_kind {
	MP_PAT_PAIRS, MP_PAT_SHIFT, MP_PAT_BISECTION, MP_PAT_INCAST, MP_PAT_FANOUT,
	MP_PAT_ALLTOALL, MP_PAT_NODES, MP_PAT_SCAN,
};

struct mp_pattern {
	enum mp_pattern_kind kind;
	int arg;                               /* shift: S; incast/fanout: target node */
	int n_links;                           /* nodes: the node pairs */
	int link[MP_PATTERN_MAX_LINKS][2];
	struct pb_scan scan;                   /* scan: its rounds; scan.round is the one run */
	int n_rounds;                          /* set by mp_pattern_rounds */
	char name[MP_PATTERN_NAME_MAX];        /* canonical text: the rows' pattern column */
};

struct mp_pair_map {
	int a_node, a_slot;                    /* measuring side */
	int b_node, b_slot;
};

/*
 * Parse one pattern (no '/').  0, or -EINVAL with err naming what is wrong.
 * Node numbers are checked against K only by mp_pattern_pairs.
 */
int mp_pattern_parse(const char *text, struct mp_pattern *p, char *err, size_t len);

/*
 * The pairs of pattern p over nodes x per_node ranks, in a fixed order
 * (the order of the loops in mp_pattern.c: pair ids follow it).  Writes at most max pairs to out.  Returns the
 * number of pairs (>= 1), or -EINVAL with err saying why this pattern cannot
 * run on this job (odd K for bisection, too few ranks per node, ...).
 */
int mp_pattern_pairs(const struct mp_pattern *p, int nodes, int per_node, struct mp_pair_map *out,
		     int max, char *err, size_t len);

/*
 * How many rounds p runs on a job of `nodes` nodes: 1, or a scan's rounds
 * (>= 1), or -EINVAL with err.  Selects p's first round.
 */
int mp_pattern_rounds(struct mp_pattern *p, int nodes, char *err, size_t len);

/* Select round i (0-based, < mp_pattern_rounds) of p: a scan's name becomes scan:R. */
void mp_pattern_round(struct mp_pattern *p, int i);

#endif
