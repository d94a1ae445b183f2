/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * atomic_lat: one timed iteration = post one 8-byte atomic (fetch-and-add of 1, or
 * compare-and-swap v -> v+1) on the peer's buffer and spin until its completion; full round trip.
 *
 * Variants (--variant): fadd (default), cswap.  compare-and-swap tracks the
 * value it expects so that every operation succeeds (a failed compare would
 * still be a round trip, but not the operation we mean to time).  The
 * fetched old value lands in the client's local buffer; --validate checks it.
 * The server is passive (the adapter executes atomics).
 */
#include "vb.h"

#include "pb_clock.h"
#include "pb_hist.h"

#include <errno.h>
#include <string.h>

/*
 * mode 0: n untimed warm-up iterations (no clock read), 1: n iterations into samples,
 * 2: duration into the histogram; cswap: constant.  One clock read per iteration:
 * sample = this completion's stamp - the previous stamp (*t_prev: the block's
 * start at first, the last stamp on return).
 */
static inline __attribute__((always_inline)) int
vb_atomic_loop(struct vb_worker *w, const int mode, const bool cswap, uint64_t n,
	       uint64_t *samples, struct pb_hist *hist, uint64_t end_by_ns, uint64_t *t_prev,
	       uint64_t *done)
{
	const uint64_t deadline = vb_deadline(w);
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	uint64_t i, prev = mode ? *t_prev : 0, now;
	unsigned spins = 0;
	int rc, ne;

	w->wr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; mode == 2 || i < n; i++) {
		if (cswap) {
			w->wr.wr.atomic.compare_add = w->atomic_value;
			w->wr.wr.atomic.swap = w->atomic_value + 1;
		}
		w->wr.wr_id = i + 1;
		rc = ibv_post_send(w->qp, &w->wr, &bad);
		if (rc) {
			snprintf(w->error, sizeof(w->error), "ibv_post_send (atomic): %s", strerror(rc));
			return -rc;
		}
		while ((ne = ibv_poll_cq(w->cq, 1, &wc)) == 0) {
			if (++spins % 4096 == 0 && (rc = vb_wait_check(w, deadline, "the atomic completion")))
				return rc;
		}
		if (ne < 0)
			return -EIO;
		if (wc.status != IBV_WC_SUCCESS)
			return vb_wc_error(w, &wc);
		w->atomic_value++;
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

static bool vb_atomic_is_cswap(const struct vb_worker *w)
{
	return w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
}

static int vb_atomic_timed(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0, stamp;
	int rc;

	w->stream_no++;
	stamp = t->start_ns = pb_clock_now_ns();
	if (t->end_by_ns)
		rc = vb_atomic_is_cswap(w) ?
			vb_atomic_loop(w, 2, true, 0, NULL, t->hist, t->end_by_ns, &stamp, &done) :
			vb_atomic_loop(w, 2, false, 0, NULL, t->hist, t->end_by_ns, &stamp, &done);
	else
		rc = vb_atomic_is_cswap(w) ?
			vb_atomic_loop(w, 1, true, t->iterations, t->samples_ns, NULL, 0, &stamp, &done) :
			vb_atomic_loop(w, 1, false, t->iterations, t->samples_ns, NULL, 0, &stamp, &done);
	t->end_ns = stamp;
	if (!rc)
		rc = vb_stream_signal(w, done);
	if (rc)
		return rc;
	t->done = done;
	t->has_lat = true;
	return 0;
}

static int vb_atomic_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;
	uint64_t done = 0;
	int rc;

	(void)size;
	if (!n)
		return 0;
	w->stream_no++;
	rc = vb_atomic_is_cswap(w) ? vb_atomic_loop(w, 0, true, n, NULL, NULL, 0, NULL, &done) :
				     vb_atomic_loop(w, 0, false, n, NULL, NULL, 0, NULL, &done);
	return rc ? rc : vb_stream_signal(w, done);
}

static int vb_atomic_serve_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_passive(ctx);
}

static int vb_atomic_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_passive(ctx) : 0;
}

static int vb_atomic_prepare(void *ctx, uint64_t size)
{
	return vb_prepare_common(ctx, size);
}

static const struct pb_test_ops vb_atomic_client = {
	.prepare = vb_atomic_prepare, .warmup = vb_atomic_warmup, .timed = vb_atomic_timed,
};
static const struct pb_test_ops vb_atomic_server = {
	.prepare = vb_atomic_prepare, .warmup = vb_atomic_serve_warmup, .timed = vb_atomic_serve_timed,
};

const struct pb_test_ops *vb_atomic_ops(const struct vb_worker *w)
{
	return w->side == VB_CLIENT ? &vb_atomic_client : &vb_atomic_server;
}

int vb_atomic_access(const struct vb_params *p, enum vb_side side, unsigned pair)
{
	(void)p;
	(void)pair;
	return side == VB_SERVER ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC :
				   IBV_ACCESS_LOCAL_WRITE;
}
