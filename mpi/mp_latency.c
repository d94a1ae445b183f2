/* SPDX-License-Identifier: BSD-3-Clause */
/* latency: one timed iteration = side A MPI_Send of size bytes to B, B MPI_Send of size bytes
 * back, A's MPI_Recv completes; the sample is half of that round trip (half_rtt), timed on A.
 * --buffers fresh: each rank sends from and receives into one buffer (every copy rewrites what
 * the peer reads next); peer: from a send buffer never written, into a separate receive buffer. */
#include "mp.h"

#include "pb_clock.h"

#include <errno.h>
#include <stdlib.h>

struct mp_lat {
	struct mp_ctx *ctx;
	void *sbuf, *rbuf;          /* fresh: one allocation, rbuf == sbuf */
	uint64_t cap;
};

int mp_pingpong_warmup(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++) {
		if (ctx->side == MP_SIDE_A) {
			MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD);
			MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD);
		}
	}
	return 0;
}

/* Iteration mode: exactly t->iterations samples; the last ping is tagged STOP. */
static void mp_pingpong_a_iters(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count,
				struct pb_timed *t)
{
	const uint64_t n = t->iterations;
	uint64_t t0 = 0, t1 = 0;

	t->start_ns = pb_clock_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		t0 = pb_clock_now_ns();
		MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, i + 1 == n ? MP_TAG_STOP : MP_TAG_DATA,
			 MPI_COMM_WORLD);
		MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		t1 = pb_clock_now_ns();
		t->samples_ns[i] = (t1 - t0) / 2;
	}
	t->end_ns = t1;
	t->done = n;
}

/* --timing block: no clock read between the two ends of the block; the mean only (the engine). */
static void mp_pingpong_a_block(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count,
				struct pb_timed *t)
{
	const uint64_t n = t->iterations;

	t->start_ns = pb_clock_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, i + 1 == n ? MP_TAG_STOP : MP_TAG_DATA,
			 MPI_COMM_WORLD);
		MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	}
	t->end_ns = pb_clock_now_ns();
	t->block_lat_ns = (t->end_ns - t->start_ns) / 2;
	t->done = n;
}

/* Window mode (-D): until end_by_ns; samples into the histogram. */
static void mp_pingpong_a_duration(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count,
				   struct pb_timed *t)
{
	uint64_t n = 0, t0, t1 = 0;
	int tag;

	t->start_ns = pb_clock_now_ns();
	do {
		t0 = pb_clock_now_ns();
		tag = t0 >= t->end_by_ns ? MP_TAG_STOP : MP_TAG_DATA;
		MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, tag, MPI_COMM_WORLD);
		MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		t1 = pb_clock_now_ns();
		pb_hist_add(t->hist, (t1 - t0) / 2);
		n++;
	} while (tag != MP_TAG_STOP);
	t->end_ns = t1;
	t->done = n;
}

/*
 * Target mode (the default): every sample kept, until the common deadline and min_iterations,
 * at most t->iterations (the room in samples_ns); the ping that decides it is tagged STOP.
 */
static void mp_pingpong_a_target(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count,
				 struct pb_timed *t)
{
	const uint64_t cap = t->iterations, min = t->min_iterations, end_by = t->end_by_ns;
	uint64_t n = 0, t0, t1 = 0;
	int tag;

	t->start_ns = pb_clock_now_ns();
	do {
		t0 = pb_clock_now_ns();
		tag = (t0 >= end_by && n + 1 >= min) || n + 1 >= cap ? MP_TAG_STOP : MP_TAG_DATA;
		MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, tag, MPI_COMM_WORLD);
		MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		t1 = pb_clock_now_ns();
		t->samples_ns[n++] = (t1 - t0) / 2;
	} while (tag != MP_TAG_STOP);
	t->end_ns = t1;
	t->done = n;
}

int mp_pingpong_a(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, struct pb_timed *t)
{
	if (t->end_by_ns && t->samples_ns)
		mp_pingpong_a_target(ctx, sbuf, rbuf, count, t);
	else if (t->end_by_ns)
		mp_pingpong_a_duration(ctx, sbuf, rbuf, count, t);
	else if (t->block)
		mp_pingpong_a_block(ctx, sbuf, rbuf, count, t);
	else
		mp_pingpong_a_iters(ctx, sbuf, rbuf, count, t);
	t->has_lat = true;
	t->bytes = 2 * t->done * (uint64_t)count;
	t->messages = 2 * t->done;
	return 0;
}

int mp_pingpong_b(struct mp_ctx *ctx, void *sbuf, void *rbuf, int count, uint64_t *done)
{
	MPI_Status st;
	uint64_t n = 0;

	do {
		MPI_Recv(rbuf, count, MPI_BYTE, ctx->peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		MPI_Send(sbuf, count, MPI_BYTE, ctx->peer, MP_TAG_DATA, MPI_COMM_WORLD);
		n++;
	} while (st.MPI_TAG != MP_TAG_STOP);
	*done = n;
	return 0;
}

static void mp_lat_free(struct mp_lat *l)
{
	if (l->rbuf != l->sbuf)
		free(l->rbuf);
	free(l->sbuf);
	l->sbuf = l->rbuf = NULL;
	l->cap = 0;
}

static int mp_lat_prepare(void *tctx, uint64_t size)
{
	struct mp_lat *l = tctx;
	int count;

	if (mp_count(size, &count))
		return -E2BIG;
	if (size > l->cap) {
		mp_lat_free(l);
		l->sbuf = mp_buf_alloc(size);
		l->rbuf = l->ctx->p->buffers == PB_BUF_PEER ? mp_buf_alloc(size) : l->sbuf;
		l->cap = l->sbuf && l->rbuf ? size : 0;
		if (!l->cap)
			return -ENOMEM;
	}
	return 0;
}

static int mp_lat_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	struct mp_lat *l = tctx;

	return mp_pingpong_warmup(l->ctx, l->sbuf, l->rbuf, (int)size, iters);
}

static int mp_lat_timed(void *tctx, struct pb_timed *t)
{
	struct mp_lat *l = tctx;

	if (l->ctx->side == MP_SIDE_A)
		return mp_pingpong_a(l->ctx, l->sbuf, l->rbuf, (int)t->msg_size_bytes, t);
	return mp_pingpong_b(l->ctx, l->sbuf, l->rbuf, (int)t->msg_size_bytes, &t->done);
}

static int mp_lat_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_lat *l = calloc(1, sizeof(*l));

	(void)t;
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	*out = l;
	return 0;
}

static void mp_lat_destroy(void *tctx)
{
	struct mp_lat *l = tctx;

	mp_lat_free(l);
	free(l);
}

static const struct pb_test_ops mp_lat_ops = {
	.prepare = mp_lat_prepare,
	.warmup = mp_lat_warmup,
	.timed = mp_lat_timed,
};

const struct mp_test mp_tests_latency[] = {
	{ .info = { .name = "latency", .label = "MPI ping-pong latency",
		    .summary = "multi-pair ping-pong (MPI_Send/MPI_Recv), half round trip, all pairs at once",
		    .kind = PB_TK_LATENCY, .lat_kind = "half_rtt", MP_LOWER_LAT, .payload = true,
		    .buffers = true, .block_timing = true, .min_pairs = 1 },
	  .kind = MP_KIND_PAIR, .create = mp_lat_create, .destroy = mp_lat_destroy,
	  .ops = &mp_lat_ops, .pattern_ok = true },
	MP_TESTS_END,
};
