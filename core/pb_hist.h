/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bounded-memory log-linear histogram for duration-mode runs (values in ns).
 * Values below 2^PB_HIST_SUB_BITS are counted exactly; above, each power-of-
 * two range [2^e, 2^(e+1)) is split into 2^PB_HIST_SUB_BITS equal buckets.
 * A percentile is reported as the midpoint of its bucket, so the relative
 * error of any reported percentile is at most 2^-(PB_HIST_SUB_BITS+1)
 * (= 0.39 % with 7 sub-bits).  min, max, mean and stdev are exact (Welford's
 * running mean and M2 in double, merged with Chan's formula).  Memory: PB_HIST_BUCKETS * 8 bytes = 58 KiB, fixed.
 */
#ifndef PB_HIST_H
#define PB_HIST_H

#include "pb_stats.h"

#include <stdint.h>

#define PB_HIST_SUB_BITS 7
#define PB_HIST_SUB (1u << PB_HIST_SUB_BITS)
#define PB_HIST_BUCKETS ((64 - PB_HIST_SUB_BITS + 1) * PB_HIST_SUB)

/* Upper bound of the relative error of a reported percentile. */
#define PB_HIST_REL_ERROR (1.0 / (double)(2u * PB_HIST_SUB))

struct pb_hist {
	uint64_t count;
	uint64_t min_ns, max_ns;
	double mean, m2; /* Welford: running mean and sum of squared deviations */
	uint64_t bucket[PB_HIST_BUCKETS];
};

void pb_hist_init(struct pb_hist *h);

/* Record one value; O(1), no allocation (safe inside a timed loop). */
void pb_hist_add(struct pb_hist *h, uint64_t value_ns);

/* Add every count of src into dst (histograms are mergeable across pairs). */
void pb_hist_merge(struct pb_hist *dst, const struct pb_hist *src);

/*
 * Statistics in ns with the same percentile rules as pb_stats_compute
 * (nearest rank, NAN when the count cannot support it).
 * Returns 0 or -EINVAL when empty.
 */
int pb_hist_stats(const struct pb_hist *h, struct pb_stats *out);

/* Bucket index of a value and the [lo, hi] value range of a bucket (exposed for tests). */
uint32_t pb_hist_index(uint64_t v);
void pb_hist_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi);

#endif
