/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fabric scan computed by the executables: a round-robin tournament over
 * the job's nodes (circle method, as scripts/pairbench/runner/schedule.py),
 * so that the schedule never travels on the command line.  Pure functions,
 * no MPI, no verbs (tests/unit/test_pattern.c).  pairbench-mpi runs rounds
 * FIRST..LAST in one job (--pattern scan...); pairbench-verbs runs one round
 * per launch (--scan R[,skip=...]), each rank finding its pair in it.
 *
 *   scan[:FIRST[-LAST]][,skip=I[,J...]]
 *
 * Rounds FIRST..LAST (1-based; default all: K-1 rounds for K even, K for K
 * odd) of the tournament over K = job nodes + skipped positions.  skip names
 * tournament positions that are not in this job (nodes that failed in an
 * earlier part of the scan): their pairs are left out, and the job's nodes
 * fill the other positions in order.  A round's rows are labelled scan:R.
 */
#ifndef PB_SCAN_H
#define PB_SCAN_H

#include <stddef.h>

#define PB_SCAN_MAX_SKIP 64

struct pb_scan {
	int first, last;                       /* last 0 = the tournament's last round */
	int n_skip;
	int skip[PB_SCAN_MAX_SKIP];            /* positions not in the job, ascending */
	int round;                             /* the round being run (pb_scan_rounds sets the first) */
};

/* Parse the text after "scan" ("", ":F", ":F-L", each with an optional ",skip=..."). 0 or -EINVAL. */
int pb_scan_parse(const char *rest, struct pb_scan *s, char *err, size_t len);

/* Rounds of the tournament over k positions: k-1 (k even) or k (k odd). */
int pb_scan_total(int k);

/*
 * Resolve s against a job of `nodes` nodes (k = nodes + skipped positions):
 * the number of rounds it runs (>= 1), or -EINVAL with err saying why.
 */
int pb_scan_rounds(struct pb_scan *s, int nodes, char *err, size_t len);

/*
 * Node pairs of round s->round on a job of `nodes` nodes, as job node
 * numbers (side A first, a -> b when (b-a) mod k < k/2, = k/2: the lower),
 * in the tournament's order.  Writes at most max pairs to ab[][2]; returns
 * the number of pairs.
 */
int pb_scan_links(const struct pb_scan *s, int nodes, int (*ab)[2], int max);

/* A non-negative decimal integer (at most 1,000,000) at s; *end is set after it.  The value,
 * or -1 (end untouched) when s does not start with a digit or the number is larger.  Shared by
 * the --pattern parsers (pb_pattern.c, pb_scan.c). */
long pb_num_parse(const char *s, const char **end);

#endif
