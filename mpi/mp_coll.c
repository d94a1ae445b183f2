/* SPDX-License-Identifier: BSD-3-Clause */
/* Collectives: one timed iteration = MPI_Barrier, then one call of the collective (size bytes per
 * rank) timed on every rank; the iteration's time is the max over ranks (rank 0 pools it). */
#include "mp.h"

#include "pb_clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MP_C_BARRIER, MP_C_BCAST, MP_C_REDUCE, MP_C_ALLREDUCE, MP_C_GATHER, MP_C_SCATTER,
       MP_C_ALLGATHER, MP_C_ALLTOALL };

struct mp_coll {
	struct mp_ctx *ctx;
	int sub;
	mp_iter_fn fn;
	void *sbuf, *rbuf;
	uint64_t cap;
	int count;                  /* bytes per rank */
	int elems;                  /* reduce/allreduce: elements of dt */
	MPI_Datatype dt;
	MPI_Op op;
	uint64_t root_mod;          /* size with --root-rotate, else 1 (root 0) */
};

int mp_iter_warmup(mp_iter_fn op, void *arg, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		op(arg, i);
	MPI_Barrier(MPI_COMM_WORLD);
	return 0;
}

static void mp_iter_synced(mp_iter_fn op, void *arg, struct pb_timed *t)
{
	const uint64_t n = t->iterations;
	uint64_t t0 = 0, t1 = 0;

	for (uint64_t i = 0; i < n; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = pb_clock_now_ns();
		if (i == 0)
			t->start_ns = t0;
		op(arg, i);
		t1 = pb_clock_now_ns();
		t->samples_ns[i] = t1 - t0;
	}
	t->end_ns = t1;
}

static void mp_iter_b2b(mp_iter_fn op, void *arg, struct pb_timed *t)
{
	const uint64_t n = t->iterations;
	uint64_t prev, now = 0;

	MPI_Barrier(MPI_COMM_WORLD);
	prev = t->start_ns = pb_clock_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		op(arg, i);
		now = pb_clock_now_ns();
		t->samples_ns[i] = now - prev;
		prev = now;
	}
	t->end_ns = now;
}

int mp_iter_timed(mp_iter_fn op, void *arg, bool back_to_back, struct pb_timed *t)
{
	if (back_to_back)
		mp_iter_b2b(op, arg, t);
	else
		mp_iter_synced(op, arg, t);
	t->done = t->iterations;
	t->has_lat = true;
	return 0;
}

static int mp_root(const struct mp_coll *c, uint64_t i)
{
	return (int)(i % c->root_mod);
}

static void mp_c_barrier(void *a, uint64_t i)
{
	(void)a;
	(void)i;
	MPI_Barrier(MPI_COMM_WORLD);
}

static void mp_c_bcast(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	MPI_Bcast(c->sbuf, c->count, MPI_BYTE, mp_root(c, i), MPI_COMM_WORLD);
}

static void mp_c_reduce(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	MPI_Reduce(c->sbuf, c->rbuf, c->elems, c->dt, c->op, mp_root(c, i), MPI_COMM_WORLD);
}

static void mp_c_allreduce(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	(void)i;
	MPI_Allreduce(c->sbuf, c->rbuf, c->elems, c->dt, c->op, MPI_COMM_WORLD);
}

static void mp_c_gather(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	MPI_Gather(c->sbuf, c->count, MPI_BYTE, c->rbuf, c->count, MPI_BYTE, mp_root(c, i),
		   MPI_COMM_WORLD);
}

static void mp_c_scatter(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	MPI_Scatter(c->sbuf, c->count, MPI_BYTE, c->rbuf, c->count, MPI_BYTE, mp_root(c, i),
		    MPI_COMM_WORLD);
}

static void mp_c_allgather(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	(void)i;
	MPI_Allgather(c->sbuf, c->count, MPI_BYTE, c->rbuf, c->count, MPI_BYTE, MPI_COMM_WORLD);
}

static void mp_c_alltoall(void *a, uint64_t i)
{
	struct mp_coll *c = a;

	(void)i;
	MPI_Alltoall(c->sbuf, c->count, MPI_BYTE, c->rbuf, c->count, MPI_BYTE, MPI_COMM_WORLD);
}

static const mp_iter_fn mp_coll_fns[] = {
	[MP_C_BARRIER] = mp_c_barrier, [MP_C_BCAST] = mp_c_bcast, [MP_C_REDUCE] = mp_c_reduce,
	[MP_C_ALLREDUCE] = mp_c_allreduce, [MP_C_GATHER] = mp_c_gather,
	[MP_C_SCATTER] = mp_c_scatter, [MP_C_ALLGATHER] = mp_c_allgather,
	[MP_C_ALLTOALL] = mp_c_alltoall,
};

static int mp_coll_prepare(void *tctx, uint64_t size)
{
	struct mp_coll *c = tctx;
	uint64_t n = (uint64_t)c->ctx->size, total = size * n;

	if (mp_count(size, &c->count) || total > (uint64_t)INT32_MAX * 8)
		return -E2BIG;
	/* Reductions: sums of doubles when the size allows it, else bitwise OR of bytes. */
	c->dt = size % sizeof(double) ? MPI_BYTE : MPI_DOUBLE;
	c->op = size % sizeof(double) ? MPI_BOR : MPI_SUM;
	c->elems = (int)(size % sizeof(double) ? size : size / sizeof(double));
	if (total > c->cap) {
		free(c->sbuf);
		free(c->rbuf);
		c->sbuf = mp_buf_alloc(total);
		c->rbuf = mp_buf_alloc(total);
		c->cap = c->sbuf && c->rbuf ? total : 0;
		if (!c->cap)
			return -ENOMEM;
	}
	if (c->dt == MPI_DOUBLE && c->sbuf) /* no buffer yet at size 0: memset(NULL) is UB */
		memset(c->sbuf, 0, total); /* finite doubles: no NaN or denormal paths */
	return 0;
}

static int mp_coll_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	struct mp_coll *c = tctx;

	(void)size;
	return mp_iter_warmup(c->fn, c, iters);
}

static int mp_coll_timed(void *tctx, struct pb_timed *t)
{
	struct mp_coll *c = tctx;
	int rc = mp_iter_timed(c->fn, c, c->ctx->p->back_to_back, t);

	if (c->sub == MP_C_REDUCE || c->sub == MP_C_ALLREDUCE)
		snprintf(t->flags, sizeof(t->flags), "%s",
			 c->dt == MPI_DOUBLE ? "op=sum_double" : "op=bor_byte");
	if (c->root_mod > 1)
		snprintf(t->flags + strlen(t->flags), sizeof(t->flags) - strlen(t->flags), "%sroot_rotate",
			 t->flags[0] ? ";" : "");
	return rc;
}

static int mp_coll_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_coll *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->ctx = ctx;
	c->sub = t->sub;
	c->fn = mp_coll_fns[t->sub];
	c->root_mod = ctx->p->root_rotate ? (uint64_t)ctx->size : 1;
	*out = c;
	return 0;
}

static void mp_coll_destroy(void *tctx)
{
	struct mp_coll *c = tctx;

	free(c->sbuf);
	free(c->rbuf);
	free(c);
}

static const struct pb_test_ops mp_coll_ops = {
	.prepare = mp_coll_prepare,
	.warmup = mp_coll_warmup,
	.timed = mp_coll_timed,
};

#define MP_COLL_P(nm, which, lbl, root, has_payload, what)                                      \
	{ .info = { .name = nm, .label = lbl, .summary = what, .kind = PB_TK_COLLECTIVE,         \
		    .lat_kind = "op", MP_LOWER_LAT, .payload = has_payload,                       \
		    .fixed_size = !(has_payload), .rooted = root, .min_pairs = 1,                 \
		    .agg_iterations = PB_AGG_SHARED },                                            \
	  .kind = MP_KIND_ALL, .create = mp_coll_create, .destroy = mp_coll_destroy,           \
	  .ops = &mp_coll_ops, .sub = which }
#define MP_COLL(nm, which, lbl, root, what) MP_COLL_P(nm, which, lbl, root, true, what)

const struct mp_test mp_tests_coll[] = {
	/* no payload: one point of size 0 */
	MP_COLL_P("barrier", MP_C_BARRIER, "MPI_Barrier latency", false, false,
		  "MPI_Barrier; per-iteration max over ranks"),
	MP_COLL("bcast", MP_C_BCAST, "MPI_Bcast latency", true,
		"MPI_Bcast of size bytes (root 0 or --root-rotate)"),
	MP_COLL("reduce", MP_C_REDUCE, "MPI_Reduce latency", true,
		"MPI_Reduce of size bytes (double sum, or byte OR when size % 8)"),
	MP_COLL("allreduce", MP_C_ALLREDUCE, "MPI_Allreduce latency", false,
		"MPI_Allreduce of size bytes (double sum, or byte OR)"),
	MP_COLL("gather", MP_C_GATHER, "MPI_Gather latency", true,
		"MPI_Gather of size bytes per rank"),
	MP_COLL("scatter", MP_C_SCATTER, "MPI_Scatter latency", true,
		"MPI_Scatter of size bytes per rank"),
	MP_COLL("allgather", MP_C_ALLGATHER, "MPI_Allgather latency", false,
		"MPI_Allgather of size bytes per rank"),
	MP_COLL("alltoall", MP_C_ALLTOALL, "MPI_Alltoall latency", false,
		"MPI_Alltoall of size bytes per rank pair"),
	MP_TESTS_END,
};
