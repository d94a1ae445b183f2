/* SPDX-License-Identifier: BSD-3-Clause */
#include "pb_hist.h"

#include <errno.h>
#include <math.h>
#include <string.h>

void pb_hist_init(struct pb_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

uint32_t pb_hist_index(uint64_t v)
{
	if (v < PB_HIST_SUB)
		return (uint32_t)v;
	/* e = position of the top bit (>= SUB_BITS); keep SUB_BITS bits below it */
	uint32_t e = 63u - (uint32_t)__builtin_clzll(v);
	uint32_t shift = e - PB_HIST_SUB_BITS;
	uint32_t sub = (uint32_t)(v >> shift) - PB_HIST_SUB;

	return (shift + 1) * PB_HIST_SUB + sub;
}

void pb_hist_bucket_range(uint32_t idx, uint64_t *lo, uint64_t *hi)
{
	if (idx < PB_HIST_SUB) {
		*lo = *hi = idx;
		return;
	}
	uint32_t shift = idx / PB_HIST_SUB - 1;
	uint64_t sub = idx % PB_HIST_SUB;
	uint64_t base = (PB_HIST_SUB + sub) << shift;

	*lo = base;
	*hi = base + ((1ull << shift) - 1);
}

void pb_hist_add(struct pb_hist *h, uint64_t v)
{
	double d = (double)v, delta;

	h->bucket[pb_hist_index(v)]++;
	h->count++;
	delta = d - h->mean;
	h->mean += delta / (double)h->count;
	h->m2 += delta * (d - h->mean);
	if (v < h->min_ns)
		h->min_ns = v;
	if (v > h->max_ns)
		h->max_ns = v;
}

void pb_hist_merge(struct pb_hist *dst, const struct pb_hist *src)
{
	double na = (double)dst->count, nb = (double)src->count;

	if (src->count == 0)
		return;
	for (uint32_t i = 0; i < PB_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
	/* Chan et al.: combine two (n, mean, M2) triples. */
	double delta = src->mean - dst->mean, n = na + nb;

	dst->m2 += src->m2 + delta * delta * na * nb / n;
	dst->mean += delta * nb / n;
	dst->count += src->count;
	if (src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
}

static double pb_hist_value_at_rank(const struct pb_hist *h, uint64_t rank)
{
	uint64_t seen = 0;

	for (uint32_t i = 0; i < PB_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			uint64_t lo, hi;
			double mid;

			pb_hist_bucket_range(i, &lo, &hi);
			mid = ((double)lo + (double)hi) / 2.0;
			/* Never report outside the exact extremes. */
			if (mid < (double)h->min_ns)
				mid = (double)h->min_ns;
			if (mid > (double)h->max_ns)
				mid = (double)h->max_ns;
			return mid;
		}
	}
	return (double)h->max_ns;
}

static double pb_hist_percentile(const struct pb_hist *h, uint32_t num)
{
	if (h->count < pb_stats_min_count(num))
		return NAN;
	uint64_t rank = ((uint64_t)num * h->count + PB_PCT_DEN - 1) / PB_PCT_DEN;

	return pb_hist_value_at_rank(h, rank ? rank : 1);
}

int pb_hist_stats(const struct pb_hist *h, struct pb_stats *out)
{
	double n = (double)h->count;

	if (h->count == 0)
		return -EINVAL;
	out->count = h->count;
	out->min = (double)h->min_ns;
	out->max = (double)h->max_ns;
	out->mean = h->mean;
	if (h->count >= 2) {
		out->stdev = sqrt(h->m2 / (n - 1.0));
	} else {
		out->stdev = NAN;
	}
	out->p50 = pb_hist_percentile(h, 50000);
	out->p90 = pb_hist_percentile(h, 90000);
	out->p99 = pb_hist_percentile(h, 99000);
	out->p999 = pb_hist_percentile(h, 99900);
	return 0;
}
