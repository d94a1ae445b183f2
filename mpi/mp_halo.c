/* SPDX-License-Identifier: BSD-3-Clause */
/* halo: one timed iteration = MPI_Barrier, then every rank posts MPI_Irecv from and MPI_Isend to its
 * 4 (or 8) neighbours on a periodic 2-D grid, size bytes each, and MPI_Waitall; max over ranks. */
#include "mp.h"

#include "pb_log.h"

#include <errno.h>
#include <stdlib.h>

#define MP_HALO_MAX 8

/* Directions: E, W, N, S, then NE, NW, SE, SW.  A message sent towards d carries tag 100+d. */
static const int mp_halo_dx[MP_HALO_MAX] = { 1, -1, 0, 0, 1, -1, 1, -1 };
static const int mp_halo_dy[MP_HALO_MAX] = { 0, 0, 1, -1, 1, 1, -1, -1 };

struct mp_halo {
	struct mp_ctx *ctx;
	int nb;                     /* 4 or 8 */
	int dims[2];                /* grid px x py */
	int to[MP_HALO_MAX];        /* neighbour in direction d */
	int from[MP_HALO_MAX];      /* neighbour in the opposite direction (sends towards d to us) */
	void *sbuf, *rbuf;          /* nb slots of size bytes each */
	uint64_t cap;
	int count;
	MPI_Request req[2 * MP_HALO_MAX];
};

static void mp_halo_exchange(void *a, uint64_t i)
{
	struct mp_halo *h = a;
	int k = 0;

	(void)i;
	for (int d = 0; d < h->nb; d++)
		MPI_Irecv((char *)h->rbuf + (size_t)d * (size_t)h->count, h->count, MPI_BYTE,
			  h->from[d], 100 + d, MPI_COMM_WORLD, &h->req[k++]);
	for (int d = 0; d < h->nb; d++)
		MPI_Isend((char *)h->sbuf + (size_t)d * (size_t)h->count, h->count, MPI_BYTE, h->to[d],
			  100 + d, MPI_COMM_WORLD, &h->req[k++]);
	MPI_Waitall(k, h->req, MPI_STATUSES_IGNORE);
}

static int mp_halo_prepare(void *tctx, uint64_t size)
{
	struct mp_halo *h = tctx;
	uint64_t total = size * (uint64_t)h->nb;

	if (mp_count(size, &h->count))
		return -E2BIG;
	if (total > h->cap) {
		free(h->sbuf);
		free(h->rbuf);
		h->sbuf = mp_buf_alloc(total);
		h->rbuf = mp_buf_alloc(total);
		h->cap = h->sbuf && h->rbuf ? total : 0;
		if (!h->cap)
			return -ENOMEM;
	}
	return 0;
}

static int mp_halo_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	(void)size;
	return mp_iter_warmup(mp_halo_exchange, tctx, iters);
}

static int mp_halo_timed(void *tctx, struct pb_timed *t)
{
	struct mp_halo *h = tctx;
	int rc = mp_iter_timed(mp_halo_exchange, h, h->ctx->p->back_to_back, t);

	snprintf(t->flags, sizeof(t->flags), "grid=%dx%d;neighbours=%d", h->dims[0], h->dims[1],
		 h->nb);
	return rc;
}

static int mp_halo_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_halo *h = calloc(1, sizeof(*h));

	(void)t;
	if (!h)
		return -ENOMEM;
	h->ctx = ctx;
	h->nb = (int)ctx->p->halo_neighbours;
	MPI_Dims_create(ctx->size, 2, h->dims);
	int px = h->dims[0], py = h->dims[1], cx = ctx->rank % px, cy = ctx->rank / px;

	for (int d = 0; d < h->nb; d++) {
		int dx = mp_halo_dx[d], dy = mp_halo_dy[d];

		h->to[d] = ((cy + dy + py) % py) * px + (cx + dx + px) % px;
		h->from[d] = ((cy - dy + py) % py) * px + (cx - dx + px) % px;
	}
	if (ctx->rank == 0)
		pb_log_info("halo: %d ranks on a periodic %d x %d grid, %d neighbours each", ctx->size,
			    px, py, h->nb);
	*out = h;
	return 0;
}

static void mp_halo_destroy(void *tctx)
{
	struct mp_halo *h = tctx;

	free(h->sbuf);
	free(h->rbuf);
	free(h);
}

static const struct pb_test_ops mp_halo_ops = {
	.prepare = mp_halo_prepare,
	.warmup = mp_halo_warmup,
	.timed = mp_halo_timed,
};

const struct mp_test mp_tests_halo[] = {
	{ .info = { .name = "halo", .label = "MPI 2-D halo exchange",
		    .summary = "2-D halo exchange (NRL Halo style): Irecv/Isend with 4 or 8 neighbours of a periodic grid, size bytes each",
		    .kind = PB_TK_HALO, .lat_kind = "op", MP_LOWER_LAT, .payload = true,
		    .min_pairs = 1, .agg_iterations = PB_AGG_SHARED },
	  .kind = MP_KIND_ALL, .create = mp_halo_create, .destroy = mp_halo_destroy,
	  .ops = &mp_halo_ops },
	MP_TESTS_END,
};
