/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What one pair measured at one point, and how the rows of a point are
 * built from the pairs' results.  struct pb_pair_result is plain data of
 * fixed size so it can live in a shared-memory slot or an MPI buffer.
 *
 * All times are pb_clock_now_ns() values.  Windows of different pairs are
 * comparable only when the measuring processes share a clock (one node);
 * transports guarantee that by measuring every pair on the same node.
 */
#ifndef PB_RESULT_H
#define PB_RESULT_H

#include "pb_csv.h"
#include "pb_soak.h"
#include "pb_stats.h"

#include <stdbool.h>
#include <stdint.h>

struct pb_pair_result {
	int32_t status;        /* 0, or the negative errno of the failure */
	uint32_t pair_id;
	int32_t cpu;           /* PU the measuring process ran on; -1 unknown */
	int32_t numa_node;     /* -1 unknown */
	uint32_t has_lat;      /* lat_us is valid */
	uint32_t has_bw;       /* bytes/messages/window are a bandwidth measurement */
	uint64_t iterations;   /* timed iterations (or messages) */
	uint64_t warmup_iterations;
	uint64_t window;       /* outstanding operations; 0 = not applicable */
	uint64_t bytes;        /* payload bytes moved in [start_ns, end_ns] */
	uint64_t messages;     /* messages moved in [start_ns, end_ns] */
	uint64_t start_ns;     /* first timed operation posted */
	uint64_t end_ns;       /* last timed operation completed */
	uint64_t release_ns;   /* the node's common start (start barrier's release); 0 = unknown */
	struct pb_stats lat_us;
	struct pb_soak_summary soak; /* --soak: the pair's buckets and stalls (soak.on = 0 otherwise) */
	char host[64];
	char peer[64];
	char flags[64];        /* ';'-separated, e.g. "histogram" */
	char error[256];       /* reason when status != 0 */
};

/* Describes one point (test × size × pair count) for row building. */
struct pb_point_desc {
	const char *layer;     /* "verbs" | "mpi" */
	const char *test;
	const char *variant;   /* NULL or "" for none */
	const char *lat_kind;  /* "half_rtt" | "full_rtt" | "op" | NULL */
	uint64_t msg_size_bytes;
	unsigned pairs;
	/*
	 * Capacity the aggregate bandwidth is judged against, 10^9 bit/s:
	 * the port's link rate (x 2 for bidirectional tests); 0 = unknown.
	 */
	double link_gbit_s;
	/*
	 * Every "pair" takes part in the same iterations (collectives, halo: one
	 * call of all ranks is one iteration): the aggregate's iterations is that
	 * count (the max over pairs), not the sum over pairs.
	 */
	bool shared_iterations;
	const char *buffers;   /* layout (pb_buffers_names); NULL or "" where the test has no choice */
	const char *pattern;   /* traffic pattern across nodes (mpi --pattern); NULL or "" = none */
	uint64_t qps;          /* queue pairs per pair (verbs --qps); 0 = not applicable (empty cell) */
	/*
	 * Latency timed per block (--timing block): pairs carry only a mean (and its count);
	 * an aggregate's mean is the count-weighted mean of its pairs' means, and the
	 * aggregate is flagged block_timed like the pairs.
	 */
	bool block_timed;
	const char *window_method; /* pb_window_method_names; NULL = empty */
	double window_s;           /* window and target: seconds asked for; 0 = empty */
};

/* Set status, error text (printf-style) of a result. */
void pb_result_fail(struct pb_pair_result *r, int neg_errno, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Build n per-pair rows and one aggregate row (rows[n], pair_id "all").
 *   aggregate bandwidth = sum of bytes / (latest end_ns - earliest start_ns)
 *   per-pair bandwidth  = bytes / (end_ns - start_ns) of that pair
 *   fairness            = Jain index over per-pair bandwidth
 *   start_skew_us       = latest start_ns - earliest start_ns
 *   start_delay_us      = start_ns - release_ns (pair rows: its own; aggregate: of
 *                         the pair that started first among those of duration_s):
 *                         with a window, duration_s + start_delay_us >= window_s
 *   overlap_s, end_spread_us = earliest end - latest start, latest end -
 *                         earliest end, over the pairs of duration_s (below);
 *                         flag tail_dominated when >= 2 bandwidth pairs end
 *                         more than PB_TAIL_FRACTION of duration_s apart
 *   aggregate latency   = statistics of pooled_us (all pairs' samples), or
 *                         the single latency pair's statistics when n_pooled == 0
 *   aggregate iterations, duration_s = sum of iterations (shared_iterations:
 *                         the max) and earliest start .. latest end over the
 *                         bandwidth pairs if any (loaded_lat: the loading
 *                         pairs), else over the latency pairs
 *   worst pair          = latency pair with the highest p50 (its p50, p99) and
 *                         bandwidth pair with the lowest rate (its rate and
 *                         rate / mean per-pair rate), when >= 2 pairs measured
 *                         it and !shared_iterations; else empty
 * A pair with status != 0 gives an error row; the aggregate row is then an
 * error row naming every failed pair.  pooled_us is sorted in place.
 * Returns 0 or -EINVAL.
 */
int pb_result_rows(const struct pb_point_desc *pt, const struct pb_pair_result *res,
		   unsigned n, double *pooled_us, size_t n_pooled, struct pb_row *rows);

/* Human-readable table of rows on f (stderr by convention). */
void pb_result_print_table(FILE *f, const struct pb_row *rows, unsigned n_rows, bool header);

#endif
