/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The measurement engine: for each message size, warm-up, start barrier,
 * timed block, publish, and (on the leader) rows.  It knows nothing about
 * how bytes move (struct pb_test_ops) nor how processes meet
 * (struct pb_meet_ops): transports plug both in, unit tests use fakes.
 *
 * Per size, every process of the run does:
 *   test->prepare(size)            untimed set-up (may be NULL)
 *   test->warmup(size, warmup)     untimed (may be NULL)
 *   [meet->barrier(), test->quiet(size, false)]   when the test has quiet():
 *                                  every process warmed up, nobody moves data
 *   meet->barrier()                all processes start together; it gives the
 *                                  node's common start, the deadline's base
 *                                  (pb_window.h)
 *   test->timed(&t)                the timed block (samples / window)
 *   meet->publish(result)          measuring processes only
 *   meet->collect(...)             every process; the leader gets all results
 *   [test->quiet(size, true)]      when the test has quiet()
 *   leader: rows (pb_result_rows) -> CSV + table
 * Warm-up runs before the start barrier: a transport's warmup() must not
 * assume its peer has passed the barrier (verbs servers serve the warm-up
 * before it).
 * A failure at one size becomes error rows for that size and, with the
 * reason "not run: ...", for every later size; the run then stops.
 */
#ifndef PB_ENGINE_H
#define PB_ENGINE_H

#include "pb_hist.h"
#include "pb_result.h"
#include "pb_window.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* One timed block.  The engine fills the inputs; the test fills the outputs. */
struct pb_timed {
	/* in */
	uint64_t msg_size_bytes;
	uint64_t iterations;     /* count: exactly this many; target: at most (room in samples_ns) */
	uint64_t min_iterations; /* target: not fewer than this many */
	/*
	 * window and target (!= 0): the common deadline, a pb_clock_now_ns() value
	 * (the same for every pair of the node): a bandwidth stream stops posting
	 * once it has passed, a latency loop after the sample that passed it (and,
	 * target, has min_iterations).
	 */
	uint64_t end_by_ns;
	uint64_t *samples_ns;    /* latency, count and target: room for `iterations` samples */
	bool block;              /* latency, --timing block: no clock read inside the loop,
				  * no samples; fill block_lat_ns instead */
	struct pb_hist *hist;    /* latency, window (-D): add samples here, samples_ns is NULL */
	/* out */
	uint64_t done;           /* iterations (or messages) completed */
	uint64_t start_ns, end_ns;
	uint64_t bytes, messages;
	bool has_lat, has_bw;    /* which of the above this process measured */
	uint64_t block_lat_ns;   /* block: the sum of the samples the block stands for
				  * (ping-pong: (end_ns - start_ns) / 2); mean = it / done */
	struct pb_soak_summary soak; /* --soak: the flow's buckets and stalls (pb_soak_finish) */
	char flags[64];
	char error[256];         /* set with a negative return */
};

struct pb_test_ops {
	/* Each returns 0 or a negative errno (timed: with t->error set). */
	int (*prepare)(void *tctx, uint64_t msg_size_bytes);
	int (*warmup)(void *tctx, uint64_t msg_size_bytes, uint64_t iterations);
	int (*timed)(void *tctx, struct pb_timed *t);
	int (*finish)(void *tctx, uint64_t msg_size_bytes);
	/* Optional: the transport's own text for its last failure (rows say it instead of strerror). */
	const char *(*error)(void *tctx);
	/*
	 * Optional: the point's two quiet moments, called by every process.
	 * after = false: once every process has warmed up (an extra barrier
	 * before it, the start barrier after it: nobody moves data); after =
	 * true: once the results are collected (before the leader's rows).  It
	 * must not move data; verbs reads its device counters here
	 * (verbs/vb_counters.h).  0 or a negative errno (the point fails).
	 */
	int (*quiet)(void *tctx, uint64_t msg_size_bytes, bool after);
};

struct pb_meet_ops {
	/*
	 * All processes of the run.  Stores the node's common start: the barrier's
	 * release time, the same pb_clock_now_ns() value in every process of the
	 * node (the deadline of a window counts from it).  0 or -errno.
	 */
	int (*barrier)(void *mctx, uint64_t *release_ns);
	/* Measuring processes: hand over this point's result (and latency samples, µs, or hist). */
	int (*publish)(void *mctx, const struct pb_pair_result *r, const double *samples_us,
		       size_t n_samples, const struct pb_hist *hist);
	/*
	 * Every process calls it after publishing (it may synchronise).  On the
	 * leader it fills res[0..pairs) (indexed by pair_id) and the pooled
	 * samples (*pooled_us, *n_pooled; owned by mctx) or merged histogram.
	 */
	int (*collect)(void *mctx, struct pb_pair_result *res, unsigned pairs, double **pooled_us,
		       size_t *n_pooled, struct pb_hist *merged);
	/* This process failed: make every other process's waits return an error. */
	void (*fail)(void *mctx, const char *reason);
	/*
	 * Has another process failed?  true with its reason in why[0..len)
	 * (tests poll it in their busy waits, so it must be cheap).
	 */
	bool (*aborted)(void *mctx, char *why, size_t len);
	/*
	 * This process made progress: waits of the others measure their deadline
	 * from the group's last progress.  progress_count() changes whenever any
	 * process of the group reported progress (cheap: polled in busy waits).
	 */
	void (*progress)(void *mctx);
	uint64_t (*progress_count)(void *mctx);
	/*
	 * Optional (node aggregates), leader after collect: the latency samples
	 * (µs, unsorted) of pair pair_id; *n = 0 when none.  Valid until the next
	 * collect.
	 */
	void (*pair_samples)(void *mctx, unsigned pair_id, const double **samples_us, size_t *n);
};

/*
 * What the rows say about the device a pair used (verbs); the engine only
 * copies it into the rows and groups pairs by device.  NULL strings = empty.
 */
struct pb_pair_label {
	const char *device;      /* RDMA device of the measuring side */
	const char *port_addr;   /* lid:0xNNNN or gid:INDEX:GID */
	const char *peer_device; /* device of the peer side; NULL = not known */
	unsigned port;           /* 0 = none */
	double link_gbit_s;      /* that device's capacity (as pb_point_desc.link_gbit_s); 0 = the run's */
};

struct pb_engine_params {
	const char *layer, *test, *variant, *lat_kind;
	const char *buffers;     /* layout recorded in rows (pb_buffers_names); NULL = no choice */
	const uint64_t *sizes;
	size_t n_sizes;
	/* pb_window.h: count (duration_s 0), window or target */
	enum pb_window_method method;
	uint64_t iterations;     /* count: exactly; target: room for this many samples per pair */
	uint64_t min_iterations; /* target: at least this many samples */
	uint64_t warmup;
	double duration_s;       /* window, target: seconds from the common start; count: 0 */
	bool histogram;          /* window: latency into a histogram (else samples) */
	bool block_timed;        /* latency: --timing block (iteration mode only): the mean only */
	uint64_t window;         /* recorded in rows; 0 = n/a */
	uint64_t qps;            /* queue pairs per pair, recorded in rows (verbs --qps); 0 = n/a */
	unsigned pairs;
	double link_gbit_s;      /* capacity for link_pct and the above-link flag; 0 = unknown */
	bool shared_iterations;  /* all pairs run the same iterations (pb_point_desc) */
	const char *flags;       /* flags of every row (pb_flags_run); NULL = none */
	/*
	 * labels[pair] or NULL.  When the pairs use two or more devices, every
	 * point gets one more aggregate row per device (scope=device, in order of
	 * the devices' first pair), after the scope=all row: pb_result_rows() on
	 * that device's pairs alone (their own global window, their pooled
	 * samples, the device's link_gbit_s), whose aggregate becomes the device
	 * row and whose pair rows replace the run's (link_pct per device).
	 * link_gbit_s above is then the node's capacity (sum over the devices).
	 */
	const struct pb_pair_label *labels;
	const char *pattern;     /* rows' pattern column (pb_point_desc); NULL = none */
	/*
	 * Leader: after the per-pair rows and the aggregate (scope all), one
	 * aggregate row per host that measured pairs (scope node, column host),
	 * each pb_result_rows over that host's pairs (and their samples, when
	 * meet->pair_samples gives them; else the single latency pair's
	 * statistics as pb_result_rows does).  Written for points that ran.
	 */
	bool node_aggregates;
};

/* Distinct devices of p->labels in order of first pair (dev[pair] = its group); 0 without labels. */
unsigned pb_engine_device_groups(const struct pb_engine_params *p, unsigned *dev);

/* Rows of one point: pairs, the scope=all aggregate, and the device aggregates (if >= 2 devices). */
unsigned pb_engine_rows_per_point(const struct pb_engine_params *p);

struct pb_engine_role {
	bool measuring;          /* publishes a result for pair_id */
	bool leader;             /* builds and writes the rows */
	unsigned pair_id;
	int cpu, numa_node;      /* where this process runs (-1 unknown) */
	const char *host, *peer;
};

struct pb_sink {
	FILE *csv;               /* CSV rows; header written before the first row */
	FILE *table;             /* human table; NULL = none */
	bool header_done;
	unsigned rows_written;
	/*
	 * Optional, e.g. in memory shared with a launcher: 0 before anything was
	 * written, 1 after the header, 1 + n after n rows, so that whoever
	 * outlives a dead leader can complete the output (pb_engine_rest_rows).
	 */
	volatile unsigned *progress;
};

/*
 * Run every size.  Returns 0 when every point succeeded, otherwise the
 * first negative errno (the leader has written error rows for it).
 */
int pb_engine_run(const struct pb_engine_params *p, const struct pb_engine_role *role,
		  const struct pb_meet_ops *meet, void *mctx, const struct pb_test_ops *test,
		  void *tctx, struct pb_sink *sink);

/*
 * Error rows for what a run left undone, given the sink's progress value
 * (see pb_sink.progress): the rest of the point in progress with reason why,
 * then every later size with "not run: earlier failure (why)".  host names
 * the rows' host.  Returns 0 or -EIO.
 */
int pb_engine_rest_rows(const struct pb_engine_params *p, const char *host, unsigned progress,
			const char *why, struct pb_sink *sink);

/* Write rows to a sink (header first if needed). Returns 0 or -EIO. */
int pb_sink_write(struct pb_sink *sink, const struct pb_row *rows, unsigned n);

#endif
