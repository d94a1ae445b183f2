/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the ranks of pairbench-mpi meet (struct pb_meet_ops):
 *   barrier  MPI_Barrier over all ranks, then the node's shm barrier, so the
 *            ranks of one node leave it within the shm barrier's skew;
 *   publish  keep this rank's result (and a pointer to its samples);
 *   collect  MPI_Gather of every rank's result as bytes to rank 0, then
 *            MPI_Gatherv of the latency samples (duration mode: histograms).
 * Pair tests: rank 0 pools the samples of the measuring sides.  Collectives
 * and halo (per_iter_max): every rank publishes its own per-iteration call
 * times; the aggregate is, per iteration, the max over ranks.
 * Every blocking phase runs under the watchdog's deadline.
 */
#include "mp.h"

#include "pb_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mp_pub {
	int32_t published;
	int32_t pad;
	uint64_t n_samples;
	struct pb_pair_result r;
};

struct mp_meet {
	struct mp_ctx *ctx;
	bool per_iter_max, duration;
	uint64_t max_samples;
	struct mp_pub mine;
	const double *samples;
	const struct pb_hist *hist;
	struct pb_hist *empty;       /* sent by ranks without a histogram */
	/* rank 0 */
	struct mp_pub *all;
	int *counts, *displs;
	int *pair_rank;              /* rank that published pair i this point; -1 none */
	double *all_samples, *pooled;
	struct pb_hist *hists;
};

int mp_meet_create(struct mp_ctx *ctx, bool per_iter_max, const struct pb_engine_params *ep,
		   struct mp_meet **out)
{
	struct mp_meet *m = calloc(1, sizeof(*m));
	size_t n = (size_t)ctx->size;

	if (!m)
		return -ENOMEM;
	m->ctx = ctx;
	m->per_iter_max = per_iter_max;
	/* A window with a histogram (-D) gathers histograms; count and target, samples. */
	m->duration = ep->method == PB_WM_WINDOW && ep->histogram;
	m->max_samples = ep->method == PB_WM_WINDOW ? 0 : ep->iterations;
	m->empty = malloc(sizeof(*m->empty));
	if (!m->empty)
		goto nomem;
	pb_hist_init(m->empty);
	if (ctx->rank == 0) {
		m->all = calloc(n, sizeof(*m->all));
		m->counts = calloc(n, sizeof(int));
		m->displs = calloc(n, sizeof(int));
		m->pair_rank = calloc(n, sizeof(int));
		m->all_samples = calloc(n * m->max_samples + 1, sizeof(double));
		m->pooled = calloc(n * m->max_samples + 1, sizeof(double));
		m->hists = m->duration ? calloc(n, sizeof(*m->hists)) : NULL;
		if (!m->all || !m->counts || !m->displs || !m->pair_rank || !m->all_samples || !m->pooled ||
		    (m->duration && !m->hists))
			goto nomem;
		if (n * m->max_samples > (size_t)INT32_MAX) {
			pb_log_error("%zu ranks x %llu iterations is too many samples to gather", n,
				     (unsigned long long)m->max_samples);
			mp_meet_destroy(m);
			return -E2BIG;
		}
	}
	*out = m;
	return 0;
nomem:
	mp_meet_destroy(m);
	return -ENOMEM;
}

void mp_meet_destroy(struct mp_meet *m)
{
	if (!m)
		return;
	free(m->empty);
	free(m->all);
	free(m->counts);
	free(m->displs);
	free(m->pair_rank);
	free(m->all_samples);
	free(m->pooled);
	free(m->hists);
	free(m);
}

static int mp_meet_barrier(void *mctx, uint64_t *release_ns)
{
	struct mp_meet *m = mctx;
	struct mp_ctx *ctx = m->ctx;

	mp_watchdog_arm(ctx->wd, "the start barrier", ctx->timeout_ns);
	MPI_Barrier(MPI_COMM_WORLD);
	/* Every node leaves MPI_Barrier within its exit skew; the node's release is its common start. */
	int rc = shm_sync_barrier(ctx->shm, (unsigned)ctx->node_rank, ctx->timeout_ns, NULL);

	*release_ns = rc ? 0 : shm_sync_release_ns(ctx->shm);
	return rc;
}

static int mp_meet_publish(void *mctx, const struct pb_pair_result *r, const double *samples_us,
			   size_t n_samples, const struct pb_hist *hist)
{
	struct mp_meet *m = mctx;

	if (n_samples > m->max_samples)
		return -EINVAL;
	m->mine.published = 1;
	m->mine.r = *r;
	m->mine.n_samples = n_samples;
	m->samples = samples_us;
	m->hist = hist;
	return 0;
}

/*
 * Rank 0, --back-to-back: one value per rank, its total time / N (its samples
 * are contiguous, so their mean is exactly that): IMB's t_min/t_avg/t_max
 * become the aggregate's min/mean/max.
 */
static size_t mp_meet_pool_b2b(struct mp_meet *m)
{
	size_t k = 0;

	for (int r = 0; r < m->ctx->size; r++) {
		const double *s = m->all_samples + m->displs[r];
		double sum = 0;

		if (!m->all[r].published || m->all[r].r.status || !m->all[r].n_samples)
			continue;
		for (uint64_t i = 0; i < m->all[r].n_samples; i++)
			sum += s[i];
		m->pooled[k++] = sum / (double)m->all[r].n_samples;
	}
	return k;
}

/* Rank 0: per iteration, the max over the ranks that published n samples. */
static size_t mp_meet_pool_max(struct mp_meet *m, uint64_t n)
{
	if (m->ctx->p->back_to_back)
		return mp_meet_pool_b2b(m);
	for (uint64_t i = 0; i < n; i++)
		m->pooled[i] = 0;
	for (int r = 0; r < m->ctx->size; r++) {
		const double *s = m->all_samples + m->displs[r];

		if (!m->all[r].published || m->all[r].r.status || m->all[r].n_samples != n)
			continue;
		for (uint64_t i = 0; i < n; i++) {
			if (s[i] > m->pooled[i])
				m->pooled[i] = s[i];
		}
	}
	return n;
}

/* Rank 0: results by pair id, windows moved to rank 0's clock, samples pooled. */
static size_t mp_meet_assemble(struct mp_meet *m, struct pb_pair_result *res, unsigned pairs,
			       struct pb_hist *merged)
{
	struct mp_ctx *ctx = m->ctx;
	bool *seen = calloc(pairs, sizeof(bool));
	size_t n_pooled = 0;
	uint64_t n_max = 0;

	for (int r = 0; r < ctx->size; r++)
		m->pair_rank[r] = -1;
	for (int r = 0; r < ctx->size; r++) {
		struct mp_pub *p = &m->all[r];

		if (!p->published || p->r.pair_id >= pairs)
			continue;
		int64_t off = ctx->clock_offset_ns ? ctx->clock_offset_ns[r] : 0;

		if (off && p->r.start_ns) {
			p->r.start_ns = (uint64_t)((int64_t)p->r.start_ns - off);
			p->r.end_ns = (uint64_t)((int64_t)p->r.end_ns - off);
			/* The node's common start moves with them: start_delay_us stays that node's. */
			if (p->r.release_ns)
				p->r.release_ns = (uint64_t)((int64_t)p->r.release_ns - off);
			size_t fl = strlen(p->r.flags);

			snprintf(p->r.flags + fl, sizeof(p->r.flags) - fl, "%sclock_offset_corrected",
				 fl ? ";" : "");
		}
		res[p->r.pair_id] = p->r;
		m->pair_rank[p->r.pair_id] = r;
		if (seen)
			seen[p->r.pair_id] = true;
		if (p->r.status)
			continue;
		if (m->duration)
			pb_hist_merge(merged, &m->hists[r]);
		if (p->n_samples > n_max)
			n_max = p->n_samples;
		if (!m->per_iter_max) {
			memcpy(m->pooled + n_pooled, m->all_samples + m->displs[r],
			       p->n_samples * sizeof(double));
			n_pooled += p->n_samples;
		}
	}
	for (unsigned i = 0; seen && i < pairs; i++) {
		if (seen[i])
			continue;
		memset(&res[i], 0, sizeof(res[i]));
		res[i].pair_id = i;
		res[i].cpu = res[i].numa_node = -1;
		pb_result_fail(&res[i], -ECANCELED, "no result from pair %u", i);
	}
	free(seen);
	if (m->per_iter_max && !m->duration)
		n_pooled = mp_meet_pool_max(m, n_max);
	return n_pooled;
}

static int mp_meet_collect(void *mctx, struct pb_pair_result *res, unsigned pairs,
			   double **pooled, size_t *n_pooled, struct pb_hist *merged)
{
	struct mp_meet *m = mctx;
	struct mp_ctx *ctx = m->ctx;
	int total = 0;

	*pooled = NULL;
	*n_pooled = 0;
	mp_watchdog_arm(ctx->wd, "collecting results", ctx->timeout_ns);
	MPI_Gather(&m->mine, sizeof(m->mine), MPI_BYTE, m->all, sizeof(m->mine), MPI_BYTE, 0,
		   MPI_COMM_WORLD);
	if (ctx->rank == 0) {
		for (int r = 0; r < ctx->size; r++) {
			m->counts[r] = m->all[r].published ? (int)m->all[r].n_samples : 0;
			m->displs[r] = total;
			total += m->counts[r];
		}
	}
	MPI_Gatherv(m->samples, m->mine.published ? (int)m->mine.n_samples : 0, MPI_DOUBLE,
		    m->all_samples, m->counts, m->displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (m->duration)
		MPI_Gather(m->hist ? m->hist : m->empty, sizeof(struct pb_hist), MPI_BYTE, m->hists,
			   sizeof(struct pb_hist), MPI_BYTE, 0, MPI_COMM_WORLD);
	if (ctx->rank == 0) {
		*n_pooled = mp_meet_assemble(m, res, pairs, merged);
		*pooled = m->pooled;
	}
	memset(&m->mine, 0, sizeof(m->mine));
	m->samples = NULL;
	m->hist = NULL;
	return 0;
}

static void mp_meet_fail(void *mctx, const char *reason)
{
	struct mp_meet *m = mctx;
	struct mp_ctx *ctx = m->ctx;

	pb_log_error("rank %d: %s", ctx->rank, reason);
	/* Wake this node's ranks out of shm barriers; peers blocked in MPI
	 * calls are ended by the watchdog if the job cannot reach collect. */
	shm_sync_abort(ctx->shm, ctx->node_rank, reason);
	mp_watchdog_arm(ctx->wd, "the failure path", ctx->timeout_ns);
}

/* A rank of this node failed (ranks on other nodes: the watchdog ends the job). */
static bool mp_meet_aborted(void *mctx, char *why, size_t len)
{
	struct mp_meet *m = mctx;

	return shm_sync_aborted(m->ctx->shm, why, len);
}

/* Progress of this node's ranks (their shm barriers' deadlines follow it). */
static void mp_meet_progress(void *mctx)
{
	shm_sync_progress(((struct mp_meet *)mctx)->ctx->shm);
}

static uint64_t mp_meet_progress_count(void *mctx)
{
	return shm_sync_progress_count(((struct mp_meet *)mctx)->ctx->shm);
}

/* Rank 0: pair i's samples as gathered (time order; pooled is a sorted copy). */
static void mp_meet_pair_samples(void *mctx, unsigned pair_id, const double **samples,
				 size_t *n)
{
	struct mp_meet *m = mctx;
	int r = pair_id < (unsigned)m->ctx->size && m->pair_rank ? m->pair_rank[pair_id] : -1;

	*samples = NULL;
	*n = 0;
	if (r < 0 || m->duration || m->per_iter_max)
		return;
	*samples = m->all_samples + m->displs[r];
	*n = (size_t)m->counts[r];
}

const struct pb_meet_ops mp_meet_ops = {
	.barrier = mp_meet_barrier,
	.publish = mp_meet_publish,
	.collect = mp_meet_collect,
	.fail = mp_meet_fail,
	.aborted = mp_meet_aborted,
	.progress = mp_meet_progress,
	.progress_count = mp_meet_progress_count,
	.pair_samples = mp_meet_pair_samples,
};
