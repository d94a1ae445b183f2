/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send_lat: one timed iteration = post a send of S bytes, then poll the CQ until the peer's
 * S-byte reply send is received (receive completion); sample = round trip / 2.
 * send_bw: one iteration = one send in the windowed stream (vb_bw.c); the peer reposts receives.
 *
 * Receives are pre-posted (-t of them) into the receive region and reposted
 * right after each receive completion, inside the latency iteration (one
 * clock read per iteration, docs/verbs.md).  Every --cq-mod-th send is signalled; sends of at most the
 * inline size are posted inline.  Send and receive completions share one CQ.
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_hist.h"

#include <errno.h>
#include <string.h>

static inline int vb_send_post(struct vb_worker *w)
{
	struct ibv_send_wr *bad;
	bool sig = ++w->posts % w->p->cq_mod == 0;
	int rc = 0;

	if (sig && w->sig_pending && (rc = vb_reap_pending(w)))
		return rc;
	w->sig_pending |= sig;
	w->wr.send_flags = w->inline_flag | (sig ? IBV_SEND_SIGNALED : 0);
	rc = ibv_post_send(w->qp, &w->wr, &bad);
	if (rc)
		snprintf(w->error, sizeof(w->error), "ibv_post_send: %s", strerror(rc));
	return -rc;
}

/* Poll once; *got_recv is set for a receive completion (the receive is then reposted by the caller). */
static inline int vb_send_poll(struct vb_worker *w, int *got_recv)
{
	struct ibv_wc wc[2];
	int ne = ibv_poll_cq(w->cq, 2, wc);

	for (int i = 0; i < ne; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return vb_wc_error(w, &wc[i]);
		if (wc[i].opcode & IBV_WC_RECV) {
			(*got_recv)++;
			w->recvs_posted--;
		} else {
			w->sig_pending = false;
		}
	}
	return ne < 0 ? -EIO : 0;
}

/*
 * mode 0: n untimed warm-up iterations (no clock read), 1: n iterations into samples,
 * 2: duration into the histogram.  One clock read per iteration, after the receive
 * is reposted: sample = (stamp - previous stamp) / 2 (*t_prev: the block's start
 * at first, the last stamp on return).
 */
static inline __attribute__((always_inline)) int
vb_send_pingpong(struct vb_worker *w, const int mode, uint64_t n, uint64_t *samples,
		 struct pb_hist *hist, uint64_t end_by_ns, uint64_t *t_prev, uint64_t *done)
{
	const uint64_t deadline = vb_deadline(w);
	uint64_t i, prev = mode ? *t_prev : 0, now;
	unsigned spins = 0;
	int rc;

	for (i = 0; mode == 2 || i < n; i++) {
		int got = 0;

		if ((rc = vb_send_post(w)))
			return rc;
		while (!got) {
			if ((rc = vb_send_poll(w, &got)))
				return rc;
			if (!got && ++spins % 4096 == 0 &&
			    (rc = vb_wait_check(w, deadline, "the peer's reply send")))
				return rc;
		}
		if ((rc = vb_post_recvs(w, (uint32_t)got)))
			return rc;
		if (mode == 0)
			continue;
		now = pb_clock_now_ns();
		if (mode == 2)
			pb_hist_add(hist, (now - prev) / 2);
		else
			samples[i] = (now - prev) / 2;
		prev = now;
		if (mode == 2 && now >= end_by_ns) {
			i++;
			break;
		}
	}
	if (mode)
		*t_prev = prev;
	*done = i;
	return 0;
}

static int vb_send_lat_timed(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0, stamp;
	int rc;

	w->stream_no++;
	stamp = t->start_ns = pb_clock_now_ns();
	if (t->end_by_ns)
		rc = vb_send_pingpong(w, 2, 0, NULL, t->hist, t->end_by_ns, &stamp, &done);
	else
		rc = vb_send_pingpong(w, 1, t->iterations, t->samples_ns, NULL, 0, &stamp, &done);
	t->end_ns = stamp;
	if (!rc)
		rc = vb_reap_pending(w);
	if (!rc)
		rc = vb_stream_signal(w, done);
	if (rc)
		return rc;
	t->done = done;
	t->has_lat = true;
	if (w->inline_flag)
		vb_flag(t, "inline");
	return 0;
}

static int vb_send_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0;
	int rc;

	(void)size;
	if (!n)
		return 0;
	w->stream_no++;
	rc = vb_send_pingpong(w, 0, n, NULL, NULL, 0, NULL, &done);
	if (!rc)
		rc = vb_reap_pending(w);
	return rc ? rc : vb_stream_signal(w, done);
}

/* Server: answer every received message with a send, until the client's end of stream. */
static int vb_send_serve_stream(struct vb_worker *w)
{
	const uint64_t deadline = vb_deadline(w);
	const uint64_t want = w->stream_no + 1;
	unsigned spins = 0;
	int rc;

	w->stream_no = want;
	for (;;) {
		int got = 0;

		if ((rc = vb_send_poll(w, &got)))
			return rc;
		if (got) {
			if ((rc = vb_post_recvs(w, (uint32_t)got)))
				return rc;
			for (int i = 0; i < got; i++)
				if ((rc = vb_send_post(w)))
					return rc;
			continue;
		}
		if ((w->ctrl->in[2] >> VB_DONE_SHIFT) == want)
			return vb_reap_pending(w);
		if (++spins % 4096 == 0 && (rc = vb_wait_check(w, deadline, "the client's ping send")))
			return rc;
	}
}

static int vb_send_serve_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_send_serve_stream(ctx);
}

static int vb_send_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_send_serve_stream(ctx) : 0;
}

static int vb_send_prepare(void *ctx, uint64_t size)
{
	return vb_prepare_common(ctx, size);
}

static int vb_send_bw_timed(void *ctx, struct pb_timed *t)
{
	return vb_bw_timed(ctx, t, IBV_WR_SEND);
}

static int vb_send_bw_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_warmup(ctx, n, IBV_WR_SEND);
}

static int vb_send_bw_serve(void *ctx, struct pb_timed *t)
{
	return vb_bw_serve(ctx, t, IBV_WR_SEND);
}

static int vb_send_bw_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_serve_warmup(ctx, n, IBV_WR_SEND);
}

static const struct pb_test_ops vb_send_lat_client = {
	.prepare = vb_send_prepare, .warmup = vb_send_lat_warmup, .timed = vb_send_lat_timed,
};
static const struct pb_test_ops vb_send_lat_server = {
	.prepare = vb_send_prepare, .warmup = vb_send_serve_warmup, .timed = vb_send_serve_timed,
};
static const struct pb_test_ops vb_send_bw_client = {
	.prepare = vb_send_prepare, .warmup = vb_send_bw_warmup, .timed = vb_send_bw_timed,
};
static const struct pb_test_ops vb_send_bw_server = {
	.prepare = vb_send_prepare, .warmup = vb_send_bw_serve_warmup, .timed = vb_send_bw_serve,
};

const struct pb_test_ops *vb_send_ops(const struct vb_worker *w)
{
	if (w->test->kind == VB_KIND_LAT)
		return w->side == VB_CLIENT ? &vb_send_lat_client : &vb_send_lat_server;
	return w->side == VB_CLIENT ? &vb_send_bw_client : &vb_send_bw_server;
}

int vb_send_access(const struct vb_params *p, enum vb_side side, unsigned pair)
{
	(void)p;
	(void)side;
	(void)pair;
	/* Receives land in local memory; no remote access at all. */
	return IBV_ACCESS_LOCAL_WRITE;
}
