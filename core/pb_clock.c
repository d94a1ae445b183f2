/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_clock.h"
#include "pb_stats.h"

#include <errno.h>

#define PB_CLOCK_BATCHES 101
#define PB_CLOCK_READS 1000

int pb_clock_calibrate(struct pb_clock_info *info)
{
	double per_read[PB_CLOCK_BATCHES];
	struct timespec res;
	uint64_t min_step = UINT64_MAX;

	if (clock_getres(CLOCK_MONOTONIC_RAW, &res))
		return -errno;
	info->source = "CLOCK_MONOTONIC_RAW";
	info->resolution_ns = (double)res.tv_sec * 1e9 + (double)res.tv_nsec;

	/* Cost: time PB_CLOCK_READS back-to-back reads, take the median batch. */
	for (int b = 0; b < PB_CLOCK_BATCHES; b++) {
		uint64_t t0 = pb_clock_now_ns(), prev = t0, t = t0;

		for (int i = 0; i < PB_CLOCK_READS; i++) {
			t = pb_clock_now_ns();
			if (t > prev && t - prev < min_step)
				min_step = t - prev;
			prev = t;
		}
		per_read[b] = (double)(t - t0) / PB_CLOCK_READS;
	}
	struct pb_stats st;
	int rc = pb_stats_compute(per_read, PB_CLOCK_BATCHES, &st);

	if (rc)
		return rc;
	info->cost_ns = st.p50;
	info->min_step_ns = min_step == UINT64_MAX ? 0.0 : (double)min_step;
	return 0;
}
