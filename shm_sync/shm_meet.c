/* SPDX-License-Identifier: BSD-3-Clause */
#include "shm_meet.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct shm_meet_pair {
	_Atomic uint32_t point;  /* point number this area was published for (+1) */
	uint32_t pad;
	uint64_t n_samples;
	struct pb_pair_result r;
	struct pb_hist hist;     /* count == 0 unless duration mode */
	double samples[];
};

static size_t shm_meet_pair_bytes(uint64_t max_samples)
{
	size_t b = sizeof(struct shm_meet_pair) + max_samples * sizeof(double);

	return (b + 63) / 64 * 64;
}

size_t shm_meet_extra_bytes(unsigned pairs, uint64_t max_samples)
{
	return pairs * shm_meet_pair_bytes(max_samples);
}

static struct shm_meet_pair *shm_meet_pair_at(struct shm_meet *m, unsigned pair)
{
	return (struct shm_meet_pair *)((char *)shm_sync_extra(m->sync) +
					pair * shm_meet_pair_bytes(m->max_samples));
}

void shm_meet_init(struct shm_meet *m, struct shm_sync *sync, unsigned member, unsigned pairs,
		   uint64_t max_samples, uint64_t timeout_ns)
{
	memset(m, 0, sizeof(*m));
	m->sync = sync;
	m->member = member;
	m->pairs = pairs;
	m->max_samples = max_samples;
	m->timeout_ns = timeout_ns;
}

void shm_meet_cleanup(struct shm_meet *m)
{
	if (!m)
		return;
	free(m->pooled);
	m->pooled = NULL;
}

static int shm_meet_barrier(void *ctx, uint64_t *release_ns)
{
	struct shm_meet *m = ctx;
	int rc = shm_sync_barrier(m->sync, m->member, m->timeout_ns, NULL);

	*release_ns = rc ? 0 : shm_sync_release_ns(m->sync);
	return rc;
}

static int shm_meet_publish(void *ctx, const struct pb_pair_result *r, const double *samples_us,
			    size_t n, const struct pb_hist *hist)
{
	struct shm_meet *m = ctx;
	struct shm_meet_pair *p;

	if (r->pair_id >= m->pairs || n > m->max_samples)
		return -EINVAL;
	p = shm_meet_pair_at(m, r->pair_id);
	p->r = *r;
	p->n_samples = n;
	if (n)
		memcpy(p->samples, samples_us, n * sizeof(double));
	if (hist)
		p->hist = *hist;
	else
		p->hist.count = 0;
	atomic_store_explicit(&p->point, m->point + 1, memory_order_release);
	return 0;
}

static void shm_meet_missing(struct pb_pair_result *r, unsigned pair, const char *why)
{
	memset(r, 0, sizeof(*r));
	r->pair_id = pair;
	r->cpu = r->numa_node = -1;
	pb_result_fail(r, -ECANCELED, "no result from pair %u (%s)", pair, why);
}

static int shm_meet_collect(void *ctx, struct pb_pair_result *res, unsigned pairs,
			    double **pooled, size_t *n_pooled, struct pb_hist *merged)
{
	struct shm_meet *m = ctx;
	char why[200] = "";
	int rc = shm_sync_barrier(m->sync, m->member, m->timeout_ns, NULL);
	uint32_t point = ++m->point;

	*pooled = NULL;
	*n_pooled = 0;
	if (m->member != 0) /* member 0 is the leader */
		return rc;
	if (rc && !shm_sync_aborted(m->sync, why, sizeof(why)))
		snprintf(why, sizeof(why), "barrier: %s", strerror(-rc));
	if (!m->pooled) {
		m->pooled = malloc((m->max_samples ? m->max_samples : 1) * pairs * sizeof(double));
		if (!m->pooled)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < pairs; i++) {
		struct shm_meet_pair *p = shm_meet_pair_at(m, i);

		if (atomic_load_explicit(&p->point, memory_order_acquire) != point) {
			shm_meet_missing(&res[i], i, why[0] ? why : "not published");
			continue;
		}
		res[i] = p->r;
		if (p->r.status)
			continue;
		memcpy(m->pooled + *n_pooled, p->samples, p->n_samples * sizeof(double));
		*n_pooled += p->n_samples;
		if (p->hist.count)
			pb_hist_merge(merged, &p->hist);
	}
	*pooled = m->pooled;
	/* Results are complete or carry their reasons: the leader writes rows. */
	return 0;
}

static void shm_meet_fail(void *ctx, const char *reason)
{
	struct shm_meet *m = ctx;

	shm_sync_abort(m->sync, (int)m->member, reason);
}

static bool shm_meet_aborted(void *ctx, char *why, size_t len)
{
	struct shm_meet *m = ctx;

	return shm_sync_aborted(m->sync, why, len);
}

static void shm_meet_progress(void *ctx)
{
	shm_sync_progress(((struct shm_meet *)ctx)->sync);
}

static uint64_t shm_meet_progress_count(void *ctx)
{
	return shm_sync_progress_count(((struct shm_meet *)ctx)->sync);
}

const struct pb_meet_ops shm_meet_ops = {
	.barrier = shm_meet_barrier,
	.publish = shm_meet_publish,
	.collect = shm_meet_collect,
	.fail = shm_meet_fail,
	.aborted = shm_meet_aborted,
	.progress = shm_meet_progress,
	.progress_count = shm_meet_progress_count,
};
