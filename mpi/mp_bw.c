/* SPDX-License-Identifier: BSD-3-Clause */
/* bw / bibw / msgrate: one timed block = side A streams n messages of size bytes to B in windows
 * of --window MPI_Isend (bibw: B streams back at once; msgrate: B acks every window), then waits for B's final ack.
 * --buffers fresh: a receive slot per outstanding message; peer: one receive buffer for the window.
 * B acks a window as soon as it completed, then posts the next window's receives (posting them
 * before the ack put 64 MPI_Irecv between a window's end and its ack: 0.73-0.76 of osu_mbw_mr at
 * 8 B instead of 1.0; results/manycore-loop-2026-11-28). */
#include "mp.h"

#include "pb_clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Receive slots: distinct per message up to this many bytes in total, then reused. */
#define MP_RBUF_MAX_BYTES (64ull << 20)

enum { MP_BW_UNI, MP_BW_BIDIR, MP_BW_MSGRATE };

struct mp_bw {
	struct mp_ctx *ctx;
	int sub;
	struct mp_stream s;
	uint64_t cap;
	uint64_t slots;
	uint64_t never;             /* stop word that never reaches its value */
	const char *test;           /* the test's name (soak series header) */
	char err[256];              /* the last failure's text (ops.error) */
};

int mp_stream_init(struct mp_stream *s, struct mp_ctx *ctx, int window, bool bidir, bool ack_each)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->window = window;
	s->bidir = bidir;
	s->ack_each = ack_each;
	s->req = calloc(2 * (size_t)window, sizeof(*s->req));
	s->st = calloc(2 * (size_t)window, sizeof(*s->st));
	s->stop_value = UINT64_MAX;
	return s->req && s->st ? 0 : -ENOMEM;
}

void mp_stream_cleanup(struct mp_stream *s)
{
	free(s->req);
	free(s->st);
	free(s->sbuf);
	free(s->rbuf);
	memset(s, 0, sizeof(*s));
}

/* Post n receives into the window's slots: distinct while the window fits MP_RBUF_MAX_BYTES, then
 * reused in turn (no division per message: the slot advances and wraps). Returns n. */
static inline int mp_post_recvs(const struct mp_stream *s, uint64_t slots, int n, MPI_Request *req)
{
	char *const base = s->rbuf, *const end = base + slots * (uint64_t)s->count;
	const uint64_t stride = slots > 1 ? (uint64_t)s->count : 0;
	char *slot = base;

	for (int j = 0; j < n; j++) {
		MPI_Irecv(slot, s->count, MPI_BYTE, s->ctx->peer, MPI_ANY_TAG, MPI_COMM_WORLD, &req[j]);
		slot += stride;
		if (slot == end)
			slot = base;
	}
	return n;
}

static uint64_t mp_stream_slots(const struct mp_stream *s)
{
	uint64_t per = s->count ? (uint64_t)s->count : 1, n = MP_RBUF_MAX_BYTES / per;

	if (s->one_rbuf)
		return 1;
	if (n < 1)
		n = 1;
	return n < (uint64_t)s->window ? n : (uint64_t)s->window;
}

/*
 * The stream of side A.  soak (a constant at each call site, so the compiler makes two loops):
 * every window's messages are counted in the bucket of the clock read that follows the
 * window's completion (the read that decides whether the next window is the last: no read of
 * its own), the last window's at the end; see core/pb_soak.h.
 */
static inline __attribute__((always_inline)) int mp_stream_a_loop(struct mp_stream *s, uint64_t messages,
								  uint64_t end_by_ns, struct pb_timed *t,
								  const bool soak)
{
	const int peer = s->ctx->peer, count = s->count, W = s->window;
	const uint64_t slots = mp_stream_slots(s), per = s->bidir ? 2 : 1;
	uint64_t remaining = messages, sent = 0, pending = 0;
	bool last;

	t->start_ns = pb_clock_now_ns();
	do {
		int n = remaining < (uint64_t)W ? (int)remaining : W, k = 0;
		const uint64_t now = pb_clock_now_ns();

		if (soak) {
			pb_soak_add(s->soak, now, pending);
			pending = (uint64_t)n * per;
		}
		last = remaining == (uint64_t)n || now >= end_by_ns || *s->stop_word >= s->stop_value;
		if (soak && last && now < end_by_ns && remaining != (uint64_t)n)
			s->stopped_early = true;
		if (s->bidir)
			k = mp_post_recvs(s, slots, n, s->req);
		for (int j = 0; j < n; j++)
			MPI_Isend(s->sbuf, count, MPI_BYTE, peer, last ? MP_TAG_STOP : MP_TAG_DATA,
				  MPI_COMM_WORLD, &s->req[k++]);
		MPI_Waitall(k, s->req, s->st);
		if (s->ack_each)
			MPI_Recv(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		remaining -= (uint64_t)n;
		sent += (uint64_t)n;
	} while (!last);
	if (!s->ack_each)
		MPI_Recv(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	t->end_ns = pb_clock_now_ns();
	if (soak)
		pb_soak_add(s->soak, t->end_ns, pending);
	/* Bidirectional: iterations, messages and bytes all count both directions (as verbs --bidir). */
	t->messages = sent * per;
	t->done = t->messages;
	t->bytes = t->messages * (uint64_t)count;
	t->has_bw = true;
	return 0;
}

int mp_stream_a(struct mp_stream *s, uint64_t messages, uint64_t end_by_ns, struct pb_timed *t)
{
	return mp_stream_a_loop(s, messages, end_by_ns, t, false);
}

/* A soak's timed block (s->soak open and started): the stream, its buckets, their analysis. */
static int mp_stream_a_soak(struct mp_stream *s, uint64_t end_by_ns, double soak_s, struct pb_timed *t)
{
	int rc;

	s->stopped_early = false;
	/* Bucket 0 begins at the node's common start: the engine's deadline minus the window. */
	pb_soak_start(s->soak, end_by_ns - (uint64_t)(soak_s * 1e9));
	rc = mp_stream_a_loop(s, UINT64_MAX, end_by_ns, t, true);
	if (!rc)
		rc = pb_soak_finish(s->soak, t->end_ns, s->stopped_early, &t->soak, t->error,
				    sizeof(t->error));
	return rc;
}

int mp_stream_b(struct mp_stream *s, uint64_t messages, uint64_t *done)
{
	const int peer = s->ctx->peer, count = s->count, W = s->window;
	const uint64_t slots = mp_stream_slots(s);
	uint64_t remaining = messages, got = 0;
	bool last;

	do {
		int n = remaining < (uint64_t)W ? (int)remaining : W;
		int k = mp_post_recvs(s, slots, n, s->req);

		for (int j = 0; s->bidir && j < n; j++)
			MPI_Isend(s->sbuf, count, MPI_BYTE, peer, MP_TAG_DATA, MPI_COMM_WORLD,
				  &s->req[k++]);
		MPI_Waitall(k, s->req, s->st);
		if (s->ack_each)
			MPI_Send(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD);
		last = s->st[0].MPI_TAG == MP_TAG_STOP;
		remaining -= (uint64_t)n;
		got += (uint64_t)n;
	} while (!last);
	if (!s->ack_each)
		MPI_Send(NULL, 0, MPI_BYTE, peer, MP_TAG_ACK, MPI_COMM_WORLD);
	*done = got;
	return 0;
}

static void mp_bw_destroy(void *tctx);

/* A soak: this point's series file (its --series name, or a temporary file), before the start. */
static int mp_bw_soak_open(struct mp_bw *b, uint64_t size)
{
	const struct mp_ctx *ctx = b->ctx;
	const struct pb_soak_params *sp = &ctx->p->soak;
	const char *pattern = ctx->pattern ? ctx->pattern->name : NULL;
	struct pb_soak_header h = { .pair_id = ctx->pair_id, .pairs = ctx->pairs, .msg_size_bytes = size,
				    .bidir = b->s.bidir };
	char path[4096];
	int rc;

	pb_soak_close(b->s.soak);
	pb_soak_text(h.layer, sizeof(h.layer), "mpi");
	pb_soak_text(h.test, sizeof(h.test), b->test);
	pb_soak_text(h.pattern, sizeof(h.pattern), pattern);
	pb_soak_text(h.host, sizeof(h.host), ctx->host);
	pb_soak_text(h.peer, sizeof(h.peer), ctx->peer_label);
	if (sp->series && pb_soak_path(sp->series, size, pattern, ctx->pair_id, path, sizeof(path))) {
		snprintf(b->err, sizeof(b->err), "--series %s: the file name is too long", sp->series);
		return -ENAMETOOLONG;
	}
	rc = pb_soak_open(b->s.soak, sp->series ? path : NULL, sp, &h, b->err, sizeof(b->err));
	return rc;
}

static int mp_bw_prepare(void *tctx, uint64_t size)
{
	struct mp_bw *b = tctx;
	int count;

	if (mp_count(size, &count))
		return -E2BIG;
	b->s.count = count;
	if (size > b->cap) {
		free(b->s.sbuf);
		free(b->s.rbuf);
		b->s.sbuf = mp_buf_alloc(size);
		b->s.rbuf = mp_buf_alloc(size * mp_stream_slots(&b->s));
		b->cap = b->s.sbuf && b->s.rbuf ? size : 0;
		if (!b->cap)
			return -ENOMEM;
	}
	return b->s.soak ? mp_bw_soak_open(b, size) : 0;
}

static int mp_bw_warmup(void *tctx, uint64_t size, uint64_t iters)
{
	struct mp_bw *b = tctx;
	struct pb_timed t = { .msg_size_bytes = size };
	uint64_t done;

	if (!iters)
		return 0;
	if (b->ctx->side == MP_SIDE_A)
		return mp_stream_a(&b->s, iters, UINT64_MAX, &t);
	return mp_stream_b(&b->s, iters, &done);
}

static int mp_bw_timed(void *tctx, struct pb_timed *t)
{
	struct mp_bw *b = tctx;
	uint64_t messages = t->end_by_ns ? UINT64_MAX : t->iterations;

	if (b->ctx->side == MP_SIDE_A && b->s.soak)
		return mp_stream_a_soak(&b->s, t->end_by_ns, b->ctx->p->soak.soak_s, t);
	if (b->ctx->side == MP_SIDE_A)
		return mp_stream_a(&b->s, messages, t->end_by_ns ? t->end_by_ns : UINT64_MAX, t);
	return mp_stream_b(&b->s, messages, &t->done);
}

static int mp_bw_create(struct mp_ctx *ctx, const struct mp_test *t, void **out)
{
	struct mp_bw *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->ctx = ctx;
	b->sub = t->sub;
	if (mp_stream_init(&b->s, ctx, (int)ctx->p->window, t->sub == MP_BW_BIDIR,
			   t->sub == MP_BW_MSGRATE || (t->ack_choice && ctx->p->ack_each_window))) {
		mp_stream_cleanup(&b->s);
		free(b);
		return -ENOMEM;
	}
	b->s.stop_word = &b->never;
	b->s.one_rbuf = ctx->p->buffers == PB_BUF_PEER;
	b->test = t->info.name;
	if (ctx->p->soak.soak_s > 0 && ctx->side == MP_SIDE_A) {
		/* The measuring side counts the buckets; SIGUSR1 ends the soak early (pb_soak.h). */
		b->s.soak = calloc(1, sizeof(*b->s.soak));
		if (!b->s.soak) {
			mp_bw_destroy(b);
			return -ENOMEM;
		}
		b->s.soak->fd = -1;
		b->s.stop_word = pb_soak_stop_word();
		b->s.stop_value = 1;
	}
	*out = b;
	return 0;
}

static void mp_bw_destroy(void *tctx)
{
	struct mp_bw *b = tctx;

	if (b->s.soak) {
		pb_soak_close(b->s.soak);
		free(b->s.soak);
		b->s.soak = NULL;
	}
	mp_stream_cleanup(&b->s);
	free(b);
}

static const char *mp_bw_error(void *tctx)
{
	const struct mp_bw *b = tctx;

	return b->err;
}

static const struct pb_test_ops mp_bw_ops = {
	.error = mp_bw_error,
	.prepare = mp_bw_prepare,
	.warmup = mp_bw_warmup,
	.timed = mp_bw_timed,
};

#define MP_BW(nm, which, lbl, k, metric, acks, what)                                             \
	{ .info = { .name = nm, .label = lbl, .summary = what, .kind = k, MP_HIGHER(metric),      \
		    .payload = true, .window = true, .buffers = true, .min_pairs = 1 },          \
	  .kind = MP_KIND_PAIR, .create = mp_bw_create, .destroy = mp_bw_destroy,              \
	  .ops = &mp_bw_ops, .sub = which, .ack_choice = acks, .pattern_ok = true }

const struct mp_test mp_tests_bw[] = {
	MP_BW("bw", MP_BW_UNI, "MPI bandwidth", PB_TK_BANDWIDTH, "bw_gbit_s", true,
	      "multi-pair streaming bandwidth (windows of MPI_Isend, one final ack), aggregate over the global window"),
	MP_BW("bibw", MP_BW_BIDIR, "MPI bidirectional bandwidth", PB_TK_BANDWIDTH, "bw_gbit_s", true,
	      "multi-pair bidirectional bandwidth (both sides stream at once); iterations, bytes and messages of both directions"),
	MP_BW("msgrate", MP_BW_MSGRATE, "MPI message rate", PB_TK_MESSAGE_RATE, "msg_rate_per_s", false,
	      "multi-pair message rate: windows of MPI_Isend, receiver acks every window (osu_mbw_mr method, correct aggregate)"),
	MP_TESTS_END,
};
