/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cross-node start's arithmetic (verbs/vb_xsmath.h): a ping's clock offset and its
 * bound, the start offset's sign, the row flag's threshold.  Two simulated
 * clocks: the peer's runs `skew` ns ahead of ours.
 */
#include "pb_test.h"

#include "vb_xsmath.h"

#include <stdint.h>

/* A ping over a path of `out` ns there and `back` ns back, sent at our t1. */
static void ping(uint64_t t1, int64_t skew, uint64_t out, uint64_t back, int64_t *theta, int64_t *bound)
{
	uint64_t t2 = t1 + out + (uint64_t)skew, t3 = t1 + out + back;

	vb_xs_ping(t1, t2, t3, theta, bound);
}

int main(void)
{
	static const int64_t skews[] = { 0, 1, -1, 123456789, -987654321, 5000000000000ll, -5000000000000ll };
	int64_t theta, bound;

	for (size_t i = 0; i < sizeof(skews) / sizeof(skews[0]); i++) {
		int64_t skew = skews[i];

		/* symmetric path: exact (within the 1 ns of an odd round trip) */
		ping(1000000001, skew, 2500, 2500, &theta, &bound);
		CHECK_NEAR((double)theta, (double)skew, 1.0);
		CHECK_EQ_INT(bound, 2501);
		/* asymmetric path: off by half the difference, never beyond the bound */
		ping(7000000000000ull, skew, 9000, 1000, &theta, &bound);
		CHECK_EQ_INT(theta - skew, 4000);
		CHECK(theta - skew <= bound && skew - theta <= bound);
		ping(7000000000000ull, skew, 1000, 9000, &theta, &bound);
		CHECK_EQ_INT(theta - skew, -4000);
		CHECK(theta - skew <= bound && skew - theta <= bound);
	}
	/* clocks years apart (one node booted long before the other): still exact */
	ping(3000000000ull, (int64_t)(3ull << 60), 700, 700, &theta, &bound);
	CHECK_EQ_INT(theta, (int64_t)(3ull << 60));
	/* our node started 3 ms after the peer's: the peer's clock is 10 s ahead, so its start
	 * reads 10 s larger; the offset comes out +3 ms, and -3 ms the other way round */
	CHECK_EQ_INT(vb_xs_offset(50000000000ull + 3000000, 60000000000ull, 10000000000ll), 3000000);
	CHECK_EQ_INT(vb_xs_offset(60000000000ull, 50000000000ull + 3000000, -10000000000ll), -3000000);
	/* the flag: above 2.5 % of the row's window, either sign; no window, no flag */
	CHECK(!vb_xs_flagged(25000, 1000000, 2000000));
	CHECK(vb_xs_flagged(25001, 1000000, 2000000));
	CHECK(vb_xs_flagged(-25001, 1000000, 2000000));
	CHECK(!vb_xs_flagged(-25000, 1000000, 2000000));
	CHECK(!vb_xs_flagged(999999, 5, 5));
	if (pb_test_failures)
		fprintf(stderr, "%d check(s) failed\n", pb_test_failures);
	return pb_test_failures ? 1 : 0;
}
