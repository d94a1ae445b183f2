/* SPDX-License-Identifier: BSD-3-Clause */
/* The clock: monotonic, calibration fields filled, the kernel clocksource read
 * from sysfs, and the slow-clock warning's threshold. */
#include "pb_clock.h"
#include "pb_test.h"

#include <stdio.h>
#include <string.h>

static void test_monotonic(void)
{
	uint64_t prev = pb_clock_now_ns();
	int backwards = 0;

	for (int i = 0; i < 100000; i++) {
		uint64_t t = pb_clock_now_ns();

		backwards += t < prev;
		prev = t;
	}
	CHECK_EQ_INT(backwards, 0);
}

static void test_calibrate(void)
{
	struct pb_clock_info ci;
	char expect[32] = "unknown";
	FILE *f;

	memset(&ci, 0xa5, sizeof(ci));
	CHECK_EQ_INT(pb_clock_calibrate(&ci), 0);
	CHECK_STR(ci.source, "CLOCK_MONOTONIC_RAW");
	CHECK(ci.cost_ns > 0.0);
	CHECK(ci.resolution_ns > 0.0);
	CHECK(ci.min_step_ns >= 0.0);
	CHECK(memchr(ci.kernel_clocksource, '\0', sizeof(ci.kernel_clocksource)) != NULL);
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fscanf(f, "%31s", expect) != 1)
			snprintf(expect, sizeof(expect), "unknown");
		fclose(f);
	}
	CHECK_STR(ci.kernel_clocksource, expect);
}

static void test_warn_threshold(void)
{
	struct pb_clock_info ci = { .source = "CLOCK_MONOTONIC_RAW", .kernel_clocksource = "hpet" };

	ci.cost_ns = 25.0;
	CHECK(!pb_clock_warn_if_slow(&ci));
	ci.cost_ns = PB_CLOCK_SLOW_NS;
	CHECK(!pb_clock_warn_if_slow(&ci));
	ci.cost_ns = 675.0; /* what hpet costs in the Soft-RoCE VM's guest */
	CHECK(pb_clock_warn_if_slow(&ci));
}

int main(void)
{
	test_monotonic();
	test_calibrate();
	test_warn_threshold();
	TEST_DONE();
}
