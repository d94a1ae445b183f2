/* SPDX-License-Identifier: BSD-3-Clause */
/* What the soak's bucket accounting costs (core/pb_soak.h): pb_soak_add once per window, with
 * the clock value the stream read anyway; a bucket boundary every 1,000 windows (0.1 s buckets
 * of 100 us windows) and a write about once a second of buckets.  Build and run:
 *   cc -O2 -Icore results/soak-scale/bench_add.c build-h4/core/libpb_core.a -lhwloc -lm -o /tmp/bench_add
 *   /tmp/bench_add */
#include "pb_clock.h"
#include "pb_soak.h"

#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	enum { N = 20000000 };
	static struct pb_soak_rec rec;
	struct pb_soak_params p = { .soak_s = 2000.0, .bucket_s = 0.1, .stall_fraction = 0.5 };
	struct pb_soak_header h = { .pair_id = 0, .pairs = 1, .msg_size_bytes = 8 };
	struct pb_soak_summary s;
	char err[256];
	const uint64_t t0 = 1000000000ull, window_ns = 100000; /* 100 us per window */

	if (pb_soak_open(&rec, NULL, &p, &h, err, sizeof(err)))
		return fprintf(stderr, "%s\n", err), 1;
	for (int rep = 0; rep < 3; rep++) {
		uint64_t a, b, now = t0;

		pb_soak_start(&rec, t0);
		a = pb_clock_now_ns();
		for (uint64_t i = 0; i < N; i++) {
			now += window_ns;
			pb_soak_add(&rec, now, 64);
		}
		b = pb_clock_now_ns();
		printf("pb_soak_add: %.2f ns per window (%d windows, %llu buckets written)\n",
		       (double)(b - a) / N, N, (unsigned long long)rec.written);
		a = pb_clock_now_ns();
		if (pb_soak_finish(&rec, now, false, &s, err, sizeof(err)))
			return fprintf(stderr, "%s\n", err), 1;
		b = pb_clock_now_ns();
		printf("pb_soak_finish (flush + analysis of %llu buckets): %.1f ms\n",
		       (unsigned long long)s.buckets, (double)(b - a) / 1e6);
		pb_soak_close(&rec);
		if (pb_soak_open(&rec, NULL, &p, &h, err, sizeof(err)))
			return 1;
	}
	pb_soak_close(&rec);
	{
		/* --validate-live: the sender's fill and the receiver's check of one message */
		static unsigned char buf[65536];
		size_t bad = 0;
		uint64_t a = pb_clock_now_ns(), b;

		for (int i = 0; i < 20000; i++)
			pb_soak_pattern_fill(buf, sizeof(buf), 1, (uint64_t)i);
		b = pb_clock_now_ns();
		printf("pb_soak_pattern_fill: %.2f GB/s (%.1f us per 64 KiB message)\n",
		       20000.0 * sizeof(buf) / (double)(b - a), (double)(b - a) / 20000 / 1e3);
		a = pb_clock_now_ns();
		for (int i = 0; i < 20000; i++)
			bad += pb_soak_pattern_check(buf, sizeof(buf), 1, 19999);
		b = pb_clock_now_ns();
		printf("pb_soak_pattern_check: %.2f GB/s (%.1f us per 64 KiB message; %zu bad)\n",
		       20000.0 * sizeof(buf) / (double)(b - a), (double)(b - a) / 20000 / 1e3, bad);
	}
	return 0;
}
