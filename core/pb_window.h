/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How long a point runs, and over which window its pairs are measured
 * (docs/methodology.md "Windows").  One rule for every layer and test:
 *
 *   window  every pair of a point starts at the node barrier and stops at one
 *           common deadline, the barrier's release time + seconds: bandwidth,
 *           bibw, message rate and loaded latency by default (--bw-seconds),
 *           every test with -D.  The aggregate is then sum of bytes / the
 *           common window, and the pairs' end spread is only the stop jitter.
 *   target  latency by default: every pair keeps all its samples (exact
 *           percentiles) until the common deadline (--lat-seconds) and until
 *           it has --lat-samples samples, whichever is later (at most
 *           PB_TARGET_MAX_SAMPLES).
 *   count   a fixed count (-n), or PB_DEFAULT_ITERATIONS for tests that have
 *           no time-based stop (collectives and halo: samples aligned across
 *           ranks; --timing block: no clock read to stop on).  Pairs then end
 *           apart; rows say how far (end_spread_us, overlap_s) and flag
 *           tail_dominated.
 */
#ifndef PB_WINDOW_H
#define PB_WINDOW_H

#include "pb_common.h"
#include "pb_opts.h"
#include "pb_test_info.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pb_window_method { PB_WM_COUNT, PB_WM_WINDOW, PB_WM_TARGET };
/* CSV column window_method, index = enum pb_window_method. */
extern const char *const pb_window_method_names[];

/*
 * An aggregate whose pairs' end times spread by more than this fraction of
 * its window is flagged tail_dominated (the last part of the window measured
 * fewer pairs than the point names).
 */
#define PB_TAIL_FRACTION 0.05

struct pb_window_plan {
	enum pb_window_method method;
	uint64_t iterations;       /* count: exactly; target: room for this many samples */
	uint64_t min_iterations;   /* target: at least this many */
	double seconds;            /* window, target: from the common start; else 0 */
	bool histogram;            /* window of a latency test (-D): a histogram, not samples */
};

/*
 * The plan of test t from the common options.  time_stop: the test can stop
 * on a deadline (false for collectives, halo and block timing).
 */
void pb_window_plan(const struct pb_common_params *c, const struct pb_test_info *t, bool time_stop,
		    struct pb_window_plan *out);

/* -n and -D together: 0, or -EINVAL with one message in err (exit code 2). */
int pb_window_check(const struct pb_common_params *c, char *err, size_t errlen);

/*
 * The default mode's time options (--bw-seconds, --lat-seconds, --lat-samples)
 * mean nothing beside -n or -D, which decide the point's time instead: one of
 * them given (by the table's parse result) with -n or -D is -EINVAL with one
 * message in err (exit code 2), as -n with -D is, never silently ignored.
 */
int pb_window_check_time_opts(const struct pb_common_params *c, const struct pb_opt *table,
			      size_t n, const struct pb_opts_result *res, char *err, size_t errlen);

#endif
