/* SPDX-License-Identifier: BSD-3-Clause */
/* The log-linear histogram: bucket geometry, stated relative error, merging. */
#include "pb_hist.h"
#include "pb_test.h"

static struct pb_hist h, h2;

static void test_geometry(void)
{
	uint64_t lo, hi;

	/* Every value lands in a bucket whose range contains it; exact below 2^SUB_BITS. */
	for (uint64_t v = 0; v < 5000000; v = v < 300 ? v + 1 : v * 101 / 100 + 1) {
		uint32_t i = pb_hist_index(v);

		CHECK(i < PB_HIST_BUCKETS);
		pb_hist_bucket_range(i, &lo, &hi);
		CHECK(lo <= v && v <= hi);
		if (v < PB_HIST_SUB)
			CHECK(lo == v && hi == v);
		/* half-width relative to the value is within the stated error */
		CHECK((double)(hi - lo) / 2.0 <= PB_HIST_REL_ERROR * (double)v + 0.5);
	}
	CHECK(pb_hist_index(UINT64_MAX) == PB_HIST_BUCKETS - 1);
}

/* Percentiles from the histogram are within the stated relative error of the exact ones. */
static void test_error_bound(void)
{
	enum { N = 100000 };
	static double exact[N];
	struct pb_stats e, s;
	uint64_t x = 88172645463325252ull;

	pb_hist_init(&h);
	for (int i = 0; i < N; i++) {
		/* xorshift: values spread over 1 µs .. ~1 ms in ns, heavy tail */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t v = 1000 + (x % 1000) * (x % 1000) / 1 + (i % 97 == 0 ? 500000 : 0);

		exact[i] = (double)v;
		pb_hist_add(&h, v);
	}
	CHECK_EQ_INT(pb_stats_compute(exact, N, &e), 0);
	CHECK_EQ_INT(pb_hist_stats(&h, &s), 0);
	CHECK_EQ_INT(s.count, N);
	CHECK_NEAR(s.min, e.min, 0);
	CHECK_NEAR(s.max, e.max, 0);
	CHECK_NEAR(s.mean, e.mean, e.mean * 1e-12);
	CHECK_NEAR(s.stdev, e.stdev, e.stdev * 1e-9);
	CHECK_NEAR(s.p50, e.p50, e.p50 * PB_HIST_REL_ERROR);
	CHECK_NEAR(s.p90, e.p90, e.p90 * PB_HIST_REL_ERROR);
	CHECK_NEAR(s.p99, e.p99, e.p99 * PB_HIST_REL_ERROR);
	CHECK_NEAR(s.p999, e.p999, e.p999 * PB_HIST_REL_ERROR);
}

static void test_merge_and_small_counts(void)
{
	struct pb_stats s;

	pb_hist_init(&h);
	pb_hist_init(&h2);
	for (uint64_t v = 1; v <= 10; v++)
		pb_hist_add(v <= 5 ? &h : &h2, v * 1000);
	pb_hist_merge(&h, &h2);
	CHECK_EQ_INT(pb_hist_stats(&h, &s), 0);
	CHECK_EQ_INT(s.count, 10);
	CHECK_NEAR(s.mean, 5500, 1e-9);
	CHECK_NEAR(s.stdev, sqrt(9166666.666666666), 1e-6);
	CHECK_NEAR(s.p50, 5000, 5000 * PB_HIST_REL_ERROR);
	CHECK_NEAR(s.p90, 9000, 9000 * PB_HIST_REL_ERROR);
	CHECK(isnan(s.p99)); /* 10 samples cannot support p99 */
	CHECK(isnan(s.p999));

	pb_hist_init(&h2);
	CHECK(pb_hist_stats(&h2, &s) != 0);
}

int main(void)
{
	test_geometry();
	test_error_bound();
	test_merge_and_small_counts();
	TEST_DONE();
}
