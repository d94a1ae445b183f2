/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What is true of a test, whatever the layer: the descriptor every row of
 * the verbs and MPI test tables embeds, and its printer.  `--list-tests
 * --format json` prints these records (docs/adding-a-test.md; the driver,
 * compare, accept and the checkers read them), so a new test is one
 * operation file plus one table row.
 */
#ifndef PB_TEST_INFO_H
#define PB_TEST_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Version of the --list-tests JSON format (not of the CSV columns: PB_SCHEMA_VERSION). */
#define PB_TEST_TABLE_SCHEMA 2
/* Most tests pairbench-mpi's tables (several arrays) may hold together. */
#define PB_TESTS_MAX 64

enum pb_test_kind { PB_TK_LATENCY, PB_TK_BANDWIDTH, PB_TK_MESSAGE_RATE, PB_TK_LOADED_LATENCY,
		    PB_TK_COLLECTIVE, PB_TK_HALO };

/* How the aggregate row's iterations is counted (docs/methodology.md). */
enum pb_agg_iters { PB_AGG_SUM, PB_AGG_SHARED };

enum pb_list_format { PB_LIST_HUMAN, PB_LIST_JSON, PB_LIST_TSV };
extern const char *const pb_list_format_names[];

/*
 * Buffer layouts (CSV column `buffers`, option --buffers; docs/mpi.md "Buffer layouts").
 * fresh: data the peer has not seen (ping-pong: one buffer per rank, every copy rewrites
 * what the peer reads next; streams: a receive slot per outstanding message).  peer: the
 * OSU/IMB layout (separate send and receive buffers, the send buffer never written; one
 * receive buffer for a whole window).  NULL-terminated, index = enum pb_buffers.
 */
enum pb_buffers { PB_BUF_FRESH, PB_BUF_PEER };
extern const char *const pb_buffers_names[];

/*
 * Latency timing (option --timing; docs/methodology.md "Block timing").  iteration: a clock
 * read per iteration, every statistic; block: one read at each end of the block, the mean
 * only (IMB's and NetPIPE's method), rows flagged block_timed.  Index = enum pb_timing.
 */
enum pb_timing { PB_TIMING_ITERATION, PB_TIMING_BLOCK };
extern const char *const pb_timing_names[];

struct pb_test_info {
	const char *name;
	const char *label;             /* human, e.g. "RDMA write latency" */
	const char *summary;           /* one line */
	enum pb_test_kind kind;
	const char *lat_kind;          /* half_rtt | full_rtt | op | NULL */
	const char *primary_metric;    /* a CSV column */
	bool higher_is_worse;          /* of primary_metric */
	const char *const *variants;   /* NULL-terminated, first = default; NULL = none */
	bool buffers;                  /* --buffers chooses its layout (pb_buffers_names) */
	bool block_timing;             /* --timing block allowed (pb_timing_names) */
	bool bidir;                    /* --bidir allowed */
	bool payload;                  /* moves msg_size_bytes (false: barrier) */
	bool window;                   /* has an outstanding window */
	bool rooted;                   /* collective with a root */
	bool fixed_size;               /* every point has fixed_size_bytes */
	uint64_t fixed_size_bytes;     /* (barrier: 0) */
	unsigned min_pairs;
	enum pb_agg_iters agg_iterations;
	const char *access_client;     /* memory access of each role; NULL = not declared */
	const char *access_server;
};

/*
 * Print the table: tests[0..n) in fmt.  JSON: one object {"layer", "schema_version",
 * "tests": [...]}; TSV: a header line, then one line per test; human: "name  summary".
 */
void pb_test_info_print(FILE *f, enum pb_list_format fmt, const char *layer,
			const struct pb_test_info *const *tests, size_t n);

#endif
