/* SPDX-License-Identifier: BSD-3-Clause */
/* The host canary (pb_canary.h): no adapter, no system call but the clock. */
#define _GNU_SOURCE
#include "pb_canary.h"

#include "pb_clock.h"

#include <sched.h>
#include <stdlib.h>

/*
 * One timed iteration = one multiply-add on a 64-bit value that depends on the
 * previous one (an LCG step), so neither the compiler nor the CPU can overlap
 * iterations: the time per iteration follows the core's clock rate and how
 * much of the core this process got.
 */
static double pb_canary_loop_ns(void)
{
	volatile uint64_t seed = 88172645463325252ull;   /* volatile: not folded at compile time */
	uint64_t x = seed;
	uint64_t t0 = pb_clock_now_ns();

	for (uint32_t i = 0; i < PB_CANARY_ITERATIONS; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	uint64_t t1 = pb_clock_now_ns();

	seed = x;   /* the result is used: the loop stays */
	return (double)(t1 - t0) / PB_CANARY_ITERATIONS;
}

static int pb_canary_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void pb_canary_measure(struct pb_canary *c)
{
	double sorted[PB_CANARY_LOOPS];
	uint64_t start, prev, now, gap = 0, reads = 0, away = 0;

	for (int i = 0; i < PB_CANARY_LOOPS; i++)
		c->loop_ns[i] = sorted[i] = pb_canary_loop_ns();
	qsort(sorted, PB_CANARY_LOOPS, sizeof(sorted[0]), pb_canary_cmp);
	c->cpu_loop_ns = sorted[PB_CANARY_LOOPS / 2];
	start = prev = pb_clock_now_ns();
	do {
		now = pb_clock_now_ns();
		if (now - prev > gap)
			gap = now - prev;
		if (now - prev > PB_CANARY_GAP_NS)
			away += now - prev;
		prev = now;
		reads++;
	} while (now - start < (uint64_t)PB_CANARY_SPIN_MS * 1000000ull);
	c->max_gap_us = (double)gap / 1e3;
	c->cpu_share = 1.0 - (double)away / (double)(now - start);
	c->spin_reads = reads;
	c->cpu = sched_getcpu();
}

void pb_canary_json(FILE *f, const struct pb_canary *c)
{
	fprintf(f, "  \"host_canary\": {\"cpu_loop_ns\": %.4f, \"loop_ns\": [", c->cpu_loop_ns);
	for (int i = 0; i < PB_CANARY_LOOPS; i++)
		fprintf(f, "%s%.4f", i ? ", " : "", c->loop_ns[i]);
	fprintf(f, "], \"iterations\": %u, \"max_gap_us\": %.3f, \"cpu_share\": %.4f, "
		"\"spin_ms\": %d, \"gap_threshold_us\": %g, \"spin_reads\": %llu, \"cpu\": %d},\n",
		PB_CANARY_ITERATIONS, c->max_gap_us, c->cpu_share, PB_CANARY_SPIN_MS,
		PB_CANARY_GAP_NS / 1e3, (unsigned long long)c->spin_reads, c->cpu);
}
