/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Statistics over per-iteration samples, all in double.
 * Percentiles use the nearest-rank definition: the q-quantile of n sorted
 * samples is the sample at rank ceil(q * n) (1-based).  A percentile is
 * reported only when at least one sample lies strictly above its rank,
 * i.e. n >= 1 / (1 - q): p50 needs n >= 2, p90 n >= 10, p99 n >= 100,
 * p99.9 n >= 1000.  Otherwise the value is NAN ("missing"), never the max.
 */
#ifndef PB_STATS_H
#define PB_STATS_H

#include <stddef.h>
#include <stdint.h>

struct pb_stats {
	size_t count;
	double min, max, mean;
	double stdev; /* sample standard deviation (n - 1); NAN when n < 2 */
	double p50, p90, p99, p999; /* NAN when n cannot support them */
};

/* Percentiles as exact fractions, so rank arithmetic stays in integers. */
enum { PB_PCT_DEN = 100000 };

/*
 * Compute statistics of samples[0..n).  Sorts samples in place.
 * Returns 0, or -EINVAL when n == 0 or a sample is not finite.
 */
int pb_stats_compute(double *samples, size_t n, struct pb_stats *out);

/*
 * Nearest-rank percentile of already sorted samples; q = num / PB_PCT_DEN.
 * Returns NAN when n < PB_PCT_DEN / (PB_PCT_DEN - num).
 */
double pb_stats_percentile_sorted(const double *sorted, size_t n, uint32_t num);

/* Minimum sample count that supports percentile num / PB_PCT_DEN. */
size_t pb_stats_min_count(uint32_t num);

/* Scale every field except count by factor (e.g. ns -> us). */
void pb_stats_scale(struct pb_stats *st, double factor);

/* Jain fairness index (sum x)^2 / (n * sum x^2) over n values; NAN if n == 0 or all zero. */
double pb_jain_index(const double *x, size_t n);

#endif
