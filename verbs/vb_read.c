/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read_lat: one timed iteration = post one RDMA read of S bytes from the peer's buffer and
 * spin on the CQ until its completion; sample = the full round trip (not halved).
 * read_bw: one iteration = one RDMA read in the windowed stream (vb_bw.c).
 *
 * The server is passive (the adapter answers reads); it only waits for the
 * client's end-of-stream word.  Outstanding reads are limited by the QP's
 * initiator depth (negotiated through rdma_cm) as well as by -t.
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_hist.h"

#include <errno.h>
#include <string.h>

/*
 * mode 0: n untimed warm-up iterations (no clock read), 1: n iterations into samples,
 * 2: duration into the histogram.  One clock read per iteration: sample = this
 * completion's stamp - the previous stamp (*t_prev: the block's start at first,
 * the last stamp on return).
 */
static inline __attribute__((always_inline)) int
vb_read_loop(struct vb_worker *w, const int mode, uint64_t n, uint64_t *samples,
	     struct pb_hist *hist, uint64_t end_by_ns, uint64_t *t_prev, uint64_t *done)
{
	const uint64_t deadline = vb_deadline(w);
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t i, prev = mode ? *t_prev : 0, now;
	unsigned spins = 0;
	int rc, ne;

	w->wr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; mode == 2 || i < n; i++) {
		w->wr.wr_id = i + 1;
		rc = ibv_post_send(w->qp, &w->wr, &bad);
		if (rc) {
			snprintf(w->error, sizeof(w->error), "ibv_post_send: %s", strerror(rc));
			return -rc;
		}
		while ((ne = ibv_poll_cq(w->cq, 1, &wc)) == 0) {
			if (++spins % 4096 == 0 && (rc = vb_wait_check(w, deadline, "the read completion")))
				return rc;
		}
		if (ne < 0)
			return -EIO;
		if (wc.status != IBV_WC_SUCCESS)
			return vb_wc_error(w, &wc);
		if (mode == 0)
			continue;
		now = pb_clock_now_ns();
		if (mode == 2)
			pb_hist_add(hist, now - prev);
		else
			samples[i] = now - prev;
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

static int vb_read_lat_timed(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0, stamp;
	int rc;

	w->stream_no++;
	stamp = t->start_ns = pb_clock_now_ns();
	if (t->end_by_ns)
		rc = vb_read_loop(w, 2, 0, NULL, t->hist, t->end_by_ns, &stamp, &done);
	else
		rc = vb_read_loop(w, 1, t->iterations, t->samples_ns, NULL, 0, &stamp, &done);
	t->end_ns = stamp;
	if (!rc)
		rc = vb_stream_signal(w, done);
	if (rc)
		return rc;
	t->done = done;
	t->has_lat = true;
	return 0;
}

static int vb_read_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0;
	int rc;

	(void)size;
	if (!n)
		return 0;
	w->stream_no++;
	rc = vb_read_loop(w, 0, n, NULL, NULL, 0, NULL, &done);
	return rc ? rc : vb_stream_signal(w, done);
}

static int vb_read_serve_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_passive(ctx);
}

static int vb_read_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_passive(ctx) : 0;
}

static int vb_read_prepare(void *ctx, uint64_t size)
{
	return vb_prepare_common(ctx, size);
}

static int vb_read_bw_timed(void *ctx, struct pb_timed *t)
{
	return vb_bw_timed(ctx, t, IBV_WR_RDMA_READ);
}

static int vb_read_bw_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_warmup(ctx, n, IBV_WR_RDMA_READ);
}

static int vb_read_bw_serve(void *ctx, struct pb_timed *t)
{
	return vb_bw_serve(ctx, t, IBV_WR_RDMA_READ);
}

static int vb_read_bw_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_bw_serve_warmup(ctx, n, IBV_WR_RDMA_READ);
}

static const struct pb_test_ops vb_read_lat_client = {
	.prepare = vb_read_prepare, .warmup = vb_read_lat_warmup, .timed = vb_read_lat_timed,
};
static const struct pb_test_ops vb_read_lat_server = {
	.prepare = vb_read_prepare, .warmup = vb_read_serve_warmup, .timed = vb_read_serve_timed,
};
static const struct pb_test_ops vb_read_bw_client = {
	.prepare = vb_read_prepare, .warmup = vb_read_bw_warmup, .timed = vb_read_bw_timed,
};
static const struct pb_test_ops vb_read_bw_server = {
	.prepare = vb_read_prepare, .warmup = vb_read_bw_serve_warmup, .timed = vb_read_bw_serve,
};

const struct pb_test_ops *vb_read_ops(const struct vb_worker *w)
{
	if (w->test->kind == VB_KIND_LAT)
		return w->side == VB_CLIENT ? &vb_read_lat_client : &vb_read_lat_server;
	return w->side == VB_CLIENT ? &vb_read_bw_client : &vb_read_bw_server;
}

int vb_read_access(const struct vb_params *p, enum vb_side side, unsigned pair)
{
	const int sink = IBV_ACCESS_LOCAL_WRITE, source = IBV_ACCESS_REMOTE_READ;

	(void)pair;
	if (p->test_desc->kind == VB_KIND_BW && p->bidir)
		return sink | source;
	return side == VB_SERVER ? source : sink;
}
