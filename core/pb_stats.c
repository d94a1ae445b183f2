/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int pb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

size_t pb_stats_min_count(uint32_t num)
{
	uint32_t above = PB_PCT_DEN - num;

	if (num >= PB_PCT_DEN)
		return SIZE_MAX;
	/* ceil(DEN / (DEN - num)) */
	return (PB_PCT_DEN + above - 1) / above;
}

double pb_stats_percentile_sorted(const double *sorted, size_t n, uint32_t num)
{
	if (n == 0 || n < pb_stats_min_count(num))
		return NAN;
	/* rank = ceil(num * n / DEN), 1-based, in exact integer arithmetic */
	uint64_t rank = ((uint64_t)num * n + PB_PCT_DEN - 1) / PB_PCT_DEN;

	if (rank < 1)
		rank = 1;
	return sorted[rank - 1];
}

int pb_stats_compute(double *samples, size_t n, struct pb_stats *out)
{
	double sum = 0.0;

	if (n == 0)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(samples[i]))
			return -EINVAL;
		sum += samples[i];
	}
	qsort(samples, n, sizeof(*samples), pb_cmp_double);

	out->count = n;
	out->min = samples[0];
	out->max = samples[n - 1];
	out->mean = sum / (double)n;
	/* Two-pass variance: exact enough for sub-ns spread on µs values. */
	if (n >= 2) {
		double ss = 0.0;

		for (size_t i = 0; i < n; i++) {
			double d = samples[i] - out->mean;

			ss += d * d;
		}
		out->stdev = sqrt(ss / (double)(n - 1));
	} else {
		out->stdev = NAN;
	}
	out->p50 = pb_stats_percentile_sorted(samples, n, 50000);
	out->p90 = pb_stats_percentile_sorted(samples, n, 90000);
	out->p99 = pb_stats_percentile_sorted(samples, n, 99000);
	out->p999 = pb_stats_percentile_sorted(samples, n, 99900);
	return 0;
}

void pb_stats_scale(struct pb_stats *st, double f)
{
	st->min *= f;
	st->max *= f;
	st->mean *= f;
	st->stdev *= f;
	st->p50 *= f;
	st->p90 *= f;
	st->p99 *= f;
	st->p999 *= f;
}

double pb_jain_index(const double *x, size_t n)
{
	double s = 0.0, s2 = 0.0;

	for (size_t i = 0; i < n; i++) {
		s += x[i];
		s2 += x[i] * x[i];
	}
	if (n == 0 || s2 == 0.0)
		return NAN;
	return s * s / ((double)n * s2);
}
