/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one clock of pairbench: CLOCK_MONOTONIC_RAW (vDSO on Linux >= 5.3),
 * nanoseconds as uint64_t.  Not subject to NTP slewing.
 */
#ifndef PB_CLOCK_H
#define PB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t pb_clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct pb_clock_info {
	const char *source;     /* "CLOCK_MONOTONIC_RAW" */
	double cost_ns;         /* median cost of one pb_clock_now_ns() call */
	double resolution_ns;   /* clock_getres() */
	double min_step_ns;     /* smallest non-zero difference seen between two reads */
};

/* Measure the clock's own cost and resolution. Returns 0 or -errno. */
int pb_clock_calibrate(struct pb_clock_info *info);

#endif
