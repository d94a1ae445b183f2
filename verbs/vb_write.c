/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * write_lat: one timed iteration = RDMA write of S bytes to the peer, then spin until the peer's
 * S-byte write lands back (its last byte = our sequence number); sample = round trip / 2.
 * write_bw: one iteration = one RDMA write in the windowed stream (vb_bw.c).
 *
 * The client (measuring side) pings; the server spins on the last byte of
 * its receive region and answers each ping with a write of the same size.
 * Every --cq-mod-th write is signalled and reaped (non-blocking poll after
 * the pong) inside the iteration.  Writes of at most the inline size are
 * posted inline.  One clock read per iteration (docs/verbs.md).
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_hist.h"

#include <errno.h>
#include <string.h>

/* Reap a signalled write without blocking (after the pong arrived). */
static inline int vb_write_reap_nb(struct vb_worker *w)
{
	struct ibv_wc wc;
	int ne = ibv_poll_cq(w->cq, 1, &wc);

	if (ne == 1) {
		if (wc.status != IBV_WC_SUCCESS)
			return vb_wc_error(w, &wc);
		w->sig_pending = false;
	}
	return ne < 0 ? -EIO : 0;
}

/* Post one ping/pong write carrying seq in its last byte. */
static inline int vb_write_post(struct vb_worker *w, uint8_t *tx_last, uint8_t seq, uint32_t flags)
{
	struct ibv_send_wr *bad;
	int rc;

	*tx_last = seq;
	w->wr.send_flags = flags;
	rc = ibv_post_send(w->qp, &w->wr, &bad);
	if (rc)
		snprintf(w->error, sizeof(w->error), "ibv_post_send: %s", strerror(rc));
	return -rc;
}

/* Signalled flag of the next post; reaps the previous signalled one first if needed. */
static inline int vb_write_sigflag(struct vb_worker *w, uint32_t *flags)
{
	bool sig = ++w->posts % w->p->cq_mod == 0;
	int rc = 0;

	if (sig && w->sig_pending)
		rc = vb_reap_pending(w);
	*flags = w->inline_flag | (sig ? IBV_SEND_SIGNALED : 0);
	w->sig_pending |= sig;
	return rc;
}

/*
 * Client ping-pong loop.  mode: 0 = n untimed warm-up iterations (no clock read),
 * 1 = n iterations into samples, 2 = duration into the histogram.  One clock read
 * per iteration: the sample is the time from the previous stamp (*t_prev, the
 * block's start for the first iteration) to the pong of this one, halved; on
 * return *t_prev is the last stamp.
 */
static inline __attribute__((always_inline)) int
vb_write_pingpong(struct vb_worker *w, const int mode, uint64_t n, uint64_t *samples,
		  struct pb_hist *hist, uint64_t end_by_ns, uint64_t *t_prev, uint64_t *done)
{
	volatile uint8_t *rx_last = w->buf + w->region + w->size - 1;
	uint8_t *tx_last = w->buf + w->size - 1;
	const uint64_t deadline = vb_deadline(w);
	uint64_t i, prev = mode ? *t_prev : 0, now;
	uint32_t flags;
	unsigned spins = 0;
	int rc;

	for (i = 0; mode == 2 || i < n; i++) {
		uint8_t seq = w->seq = w->seq == 255 ? 1 : w->seq + 1;

		if ((rc = vb_write_sigflag(w, &flags)))
			return rc;
		if ((rc = vb_write_post(w, tx_last, seq, flags)))
			return rc;
		while (*rx_last != seq) {
			if (++spins % 4096 == 0 && (rc = vb_wait_check(w, deadline, "the peer's reply write")))
				return rc;
		}
		if (w->sig_pending && (rc = vb_write_reap_nb(w)))
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

static int vb_write_lat_timed(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0, stamp;
	int rc;

	w->stream_no++;
	stamp = t->start_ns = pb_clock_now_ns();
	if (t->end_by_ns)
		rc = vb_write_pingpong(w, 2, 0, NULL, t->hist, t->end_by_ns, &stamp, &done);
	else
		rc = vb_write_pingpong(w, 1, t->iterations, t->samples_ns, NULL, 0, &stamp, &done);
	t->end_ns = stamp;
	if (w->loaded_probe)
		atomic_store(&w->shared->loaded_stop, (uint32_t)w->loaded_point);
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

static int vb_write_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0;
	int rc;

	(void)size;
	if (!n)
		return 0;
	w->stream_no++;
	rc = vb_write_pingpong(w, 0, n, NULL, NULL, 0, NULL, &done);
	if (!rc)
		rc = vb_reap_pending(w);
	return rc ? rc : vb_stream_signal(w, done);
}

/* Server: answer every ping until the client's end-of-stream word. */
static int vb_write_lat_serve_stream(struct vb_worker *w)
{
	volatile uint8_t *rx_last = w->buf + w->region + w->size - 1;
	uint8_t *tx_last = w->buf + w->size - 1;
	const uint64_t deadline = vb_deadline(w);
	const uint64_t want = w->stream_no + 1;
	uint32_t flags;
	unsigned spins = 0;
	int rc;

	w->stream_no = want;
	for (;;) {
		uint8_t seq = w->seq == 255 ? 1 : w->seq + 1;

		while (*rx_last != seq) {
			if ((w->ctrl->in[2] >> VB_DONE_SHIFT) == want)
				return vb_reap_pending(w);
			if (++spins % 4096 == 0 && (rc = vb_wait_check(w, deadline, "the client's ping write")))
				return rc;
		}
		w->seq = seq;
		if ((rc = vb_write_sigflag(w, &flags)) || (rc = vb_write_post(w, tx_last, seq, flags)))
			return rc;
		if (w->sig_pending && (rc = vb_write_reap_nb(w)))
			return rc;
	}
}

static int vb_write_serve_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_write_lat_serve_stream(ctx);
}

static int vb_write_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_write_lat_serve_stream(ctx) : 0;
}

static int vb_write_prepare(void *ctx, uint64_t size)
{
	return vb_prepare_common(ctx, size);
}

static int vb_write_bw_timed(void *ctx, struct pb_timed *t)
{
	return vb_bw_timed(ctx, t, IBV_WR_RDMA_WRITE);
}

static int vb_write_bw_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_warmup(ctx, n, IBV_WR_RDMA_WRITE);
}

static int vb_write_bw_serve(void *ctx, struct pb_timed *t)
{
	return vb_bw_serve(ctx, t, IBV_WR_RDMA_WRITE);
}

static int vb_write_bw_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_serve_warmup(ctx, n, IBV_WR_RDMA_WRITE);
}

static const struct pb_test_ops vb_write_lat_client = {
	.prepare = vb_write_prepare, .warmup = vb_write_lat_warmup, .timed = vb_write_lat_timed,
};
static const struct pb_test_ops vb_write_lat_server = {
	.prepare = vb_write_prepare, .warmup = vb_write_serve_warmup, .timed = vb_write_serve_timed,
};
static const struct pb_test_ops vb_write_bw_client = {
	.prepare = vb_write_prepare, .warmup = vb_write_bw_warmup, .timed = vb_write_bw_timed,
};
static const struct pb_test_ops vb_write_bw_server = {
	.prepare = vb_write_prepare, .warmup = vb_write_bw_serve_warmup, .timed = vb_write_bw_serve,
};

const struct pb_test_ops *vb_write_ops(const struct vb_worker *w)
{
	bool lat = w->test->kind == VB_KIND_LAT || (w->test->kind == VB_KIND_LOADED && w->pair == 0);

	if (lat)
		return w->side == VB_CLIENT ? &vb_write_lat_client : &vb_write_lat_server;
	return w->side == VB_CLIENT ? &vb_write_bw_client : &vb_write_bw_server;
}

int vb_write_access(const struct vb_params *p, enum vb_side side, unsigned pair)
{
	const int target = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	/* Latency: both sides are written to.  Bandwidth: the target only (both with --bidir). */
	if (p->test_desc->kind == VB_KIND_LAT || (p->test_desc->kind == VB_KIND_LOADED && pair == 0))
		return target;
	return side == VB_SERVER || p->bidir ? target : 0;
}
