/* SPDX-License-Identifier: BSD-3-Clause */
/* loaded_lat: one timed iteration = a ping-pong of pair 0 (the probe, half round trip, as latency)
 * while pairs 1..N-1 stream windows of size-byte MPI_Isend (as bw) until the probe has finished. */
#include "mp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mp_loaded {
	struct mp_ctx *ctx;
	bool probe;
	void *buf;                  /* probe buffer */
	uint64_t cap;
	struct mp_stream s;         /* streaming pairs */
	uint64_t point;             /* timed blocks run so far */
};

static int mp_loaded_prepare(void *tctx, uint64_t size)
{
	struct mp_loaded *l = tctx;
	int count;

	if (mp_count(size, &count))
		return -E2BIG;
	l->s.count = count;
	if (size <= l->cap)
		return 0;
	free(l->buf);
	free(l->s.sbuf);
	free(l->s.rbuf);
	l->buf = l->s.sbuf = l->s.rbuf = NULL;
	l->cap = 0;
	if (l->probe) {
		l->buf = mp_buf_alloc(size);
		if (!l->buf)
			return -ENOMEM;
	} else {
		/* One receive slot reused: the streams are load, their data is not looked at. */
		l->s.sbuf = mp_buf_alloc(size);
		l->s.rbuf = mp_buf_alloc(size * (uint64_t)l->s.window);
		if (!l->s.sbuf || !l->s.rbuf)
			return -ENOMEM;
	}
	l->cap = size;
	return 0;
}

static int mp_loaded_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	struct mp_loaded *l = tctx;
	struct pb_timed t = { .msg_size_bytes = size };
	uint64_t done;

	if (l->probe)
		return mp_pingpong_warmup(l->ctx, l->buf, l->buf, (int)size, iters);
	if (!iters)
		return 0;
	l->s.stop_value = UINT64_MAX;
	if (l->ctx->side == MP_SIDE_A)
		return mp_stream_a(&l->s, iters, UINT64_MAX, &t);
	return mp_stream_b(&l->s, iters, &done);
}

static int mp_loaded_timed(void *tctx, struct pb_timed *t)
{
	struct mp_loaded *l = tctx;
	struct mp_ctx *ctx = l->ctx;
	int rc;

	l->point++;
	if (l->probe && ctx->side == MP_SIDE_A) {
		rc = mp_pingpong_a(ctx, l->buf, l->buf, (int)t->msg_size_bytes, t);
		/* Tell this node's streaming A sides to send their last window. */
		__atomic_store_n(&ctx->shared->probe_done_point, l->point, __ATOMIC_RELEASE);
		/* The probe's row carries latency only; its bytes are not load. */
		t->has_bw = false;
		snprintf(t->flags, sizeof(t->flags), "%s", ctx->pairs > 1 ? "probe" : "probe;no_load");
		return rc;
	}
	if (l->probe)
		return mp_pingpong_b(ctx, l->buf, l->buf, (int)t->msg_size_bytes, &t->done);
	l->s.stop_value = l->point;
	if (ctx->side == MP_SIDE_A) {
		rc = mp_stream_a(&l->s, UINT64_MAX, UINT64_MAX, t);
		snprintf(t->flags, sizeof(t->flags), "load");
		return rc;
	}
	return mp_stream_b(&l->s, UINT64_MAX, &t->done);
}

static int mp_loaded_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_loaded *l = calloc(1, sizeof(*l));

	(void)t;
	if (!l)
		return -ENOMEM;
	l->ctx = ctx;
	l->probe = ctx->pair_id == 0;
	if (mp_stream_init(&l->s, ctx, (int)ctx->p->window, false, false)) {
		mp_stream_cleanup(&l->s);
		free(l);
		return -ENOMEM;
	}
	l->s.stop_word = &ctx->shared->probe_done_point;
	*out = l;
	return 0;
}

static void mp_loaded_destroy(void *tctx)
{
	struct mp_loaded *l = tctx;

	free(l->buf);
	mp_stream_cleanup(&l->s);
	free(l);
}

static const struct pb_test_ops mp_loaded_ops = {
	.prepare = mp_loaded_prepare,
	.warmup = mp_loaded_warmup,
	.timed = mp_loaded_timed,
};

const struct mp_test mp_tests_loaded[] = {
	{ .info = { .name = "loaded_lat", .label = "MPI latency under load",
		    .summary = "pair 0 measures ping-pong latency while pairs 1..N-1 stream (bandwidth load) until it is done",
		    .kind = PB_TK_LOADED_LATENCY, .lat_kind = "half_rtt", MP_LOWER_LAT,
		    .payload = true, .window = true, .min_pairs = 2 },
	  .kind = MP_KIND_PAIR, .create = mp_loaded_create, .destroy = mp_loaded_destroy,
	  .ops = &mp_loaded_ops },
	MP_TESTS_END,
};
