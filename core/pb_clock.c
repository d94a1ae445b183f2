/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_clock.h"
#include "pb_log.h"
#include "pb_stats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PB_CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"

static void read_clocksource(char *out, size_t len)
{
	FILE *f = fopen(PB_CLOCKSOURCE_PATH, "r");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, " \n")] = '\0';
	else
		out[0] = '\0';
	if (!out[0])
		snprintf(out, len, "unknown");
	fclose(f);
}

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
	read_clocksource(info->kernel_clocksource, sizeof(info->kernel_clocksource));
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

bool pb_clock_warn_if_slow(const struct pb_clock_info *info)
{
	if (info->cost_ns <= PB_CLOCK_SLOW_NS)
		return false;
	pb_log_warn("one clock read costs %.0f ns here (kernel clocksource %s; a vDSO read costs "
		    "15-60 ns), and every latency sample contains one: latencies are inflated by "
		    "about that much (docs/methodology.md, \"The clock\")",
		    info->cost_ns, info->kernel_clocksource);
	return true;
}
