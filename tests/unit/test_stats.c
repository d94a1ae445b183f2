/* SPDX-License-Identifier: BSD-3-Clause */
/* Statistics against known vectors. */
#include "pb_stats.h"
#include "pb_test.h"

#include <errno.h>

static void test_small_vector(void)
{
	double v[] = { 5, 1, 4, 2, 3 };
	struct pb_stats st;

	CHECK_EQ_INT(pb_stats_compute(v, 5, &st), 0);
	CHECK_EQ_INT(st.count, 5);
	CHECK_NEAR(st.min, 1, 0);
	CHECK_NEAR(st.max, 5, 0);
	CHECK_NEAR(st.mean, 3, 1e-12);
	CHECK_NEAR(st.stdev, sqrt(2.5), 1e-12); /* sample stdev (n - 1) */
	CHECK_NEAR(st.p50, 3, 0);               /* rank ceil(0.5*5) = 3 */
	CHECK(isnan(st.p90));                    /* n = 5 < 10 */
	CHECK(isnan(st.p99));
	CHECK(isnan(st.p999));
}

/* Sub-microsecond spread: perftest's integer stdev would print 0. */
static void test_sub_us_spread(void)
{
	double v[1000];
	struct pb_stats st;

	for (int i = 0; i < 1000; i++)
		v[i] = 1.5 + (i % 2 ? 0.2 : -0.2); /* µs: 1.3 and 1.7 alternating */
	CHECK_EQ_INT(pb_stats_compute(v, 1000, &st), 0);
	CHECK_NEAR(st.mean, 1.5, 1e-12);
	CHECK_NEAR(st.stdev, 0.2 * sqrt(1000.0 / 999.0), 1e-12);
	CHECK(st.stdev > 0.1);
}

/* p99.9 with exactly 1000 samples is the 999th value, not the max; with 999 it is missing. */
static void test_p999_thresholds(void)
{
	double v[1000];
	struct pb_stats st;

	for (int i = 0; i < 1000; i++)
		v[i] = 1000 - i; /* 1000..1 reversed: sorting matters */
	CHECK_EQ_INT(pb_stats_compute(v, 1000, &st), 0);
	CHECK_NEAR(st.p999, 999, 0);
	CHECK_NEAR(st.max, 1000, 0);
	CHECK_NEAR(st.p99, 990, 0);
	CHECK_NEAR(st.p90, 900, 0);
	CHECK_NEAR(st.p50, 500, 0);

	for (int i = 0; i < 999; i++)
		v[i] = i + 1;
	CHECK_EQ_INT(pb_stats_compute(v, 999, &st), 0);
	CHECK(isnan(st.p999));
	CHECK_NEAR(st.p99, 990, 0); /* ceil(0.99 * 999) = 990 */

	CHECK_EQ_INT(pb_stats_min_count(99900), 1000);
	CHECK_EQ_INT(pb_stats_min_count(99000), 100);
	CHECK_EQ_INT(pb_stats_min_count(90000), 10);
	CHECK_EQ_INT(pb_stats_min_count(50000), 2);
}

static void test_edge_cases(void)
{
	double one[] = { 7.25 }, bad[] = { 1.0, NAN };
	struct pb_stats st;

	CHECK_EQ_INT(pb_stats_compute(one, 0, &st), -EINVAL);
	CHECK_EQ_INT(pb_stats_compute(bad, 2, &st), -EINVAL);
	CHECK_EQ_INT(pb_stats_compute(one, 1, &st), 0);
	CHECK_NEAR(st.min, 7.25, 0);
	CHECK_NEAR(st.max, 7.25, 0);
	CHECK(isnan(st.stdev));
	CHECK(isnan(st.p50));
}

static void test_jain(void)
{
	double equal[] = { 3, 3, 3, 3 }, one_hog[] = { 4, 0, 0, 0 }, zero[] = { 0, 0 };

	CHECK_NEAR(pb_jain_index(equal, 4), 1.0, 1e-12);
	CHECK_NEAR(pb_jain_index(one_hog, 4), 0.25, 1e-12);
	CHECK(isnan(pb_jain_index(zero, 2)));
}

int main(void)
{
	test_small_vector();
	test_sub_us_spread();
	test_p999_thresholds();
	test_edge_cases();
	test_jain();
	TEST_DONE();
}
