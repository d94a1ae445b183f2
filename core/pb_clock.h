/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one clock of pairbench: CLOCK_MONOTONIC_RAW (vDSO on Linux >= 5.3),
 * nanoseconds as uint64_t.  Not subject to NTP slewing.
 */
#ifndef PB_CLOCK_H
#define PB_CLOCK_H

#include <stdbool.h>
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
	/* The kernel's clocksource behind CLOCK_MONOTONIC_RAW ("tsc", "hpet", ...;
	 * "unknown" if sysfs does not say).  With tsc (or arch_sys_counter) a read
	 * goes through the vDSO; with hpet or acpi_pm it is a system call plus a
	 * device register read, ~1 us, and that cost sits inside every sample. */
	char kernel_clocksource[32];
};

/* A read costing more than this is flagged: it is no longer small next to a
 * microsecond-scale latency (vDSO reads cost 15-60 ns). */
#define PB_CLOCK_SLOW_NS 200.0

/* Measure the clock's own cost and resolution. Returns 0 or -errno. */
int pb_clock_calibrate(struct pb_clock_info *info);

/* A warning on stderr when one read costs more than PB_CLOCK_SLOW_NS, naming the
 * kernel clocksource; returns true if it warned. */
bool pb_clock_warn_if_slow(const struct pb_clock_info *info);

#endif
