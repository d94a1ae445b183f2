/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One timed iteration = one message (RDMA write, RDMA read or send) posted into a window of
 * at most -t outstanding work requests; the block's time is first post .. last completion.
 *
 * The windowed stream shared by write_bw, read_bw, send_bw (and the loaded
 * pairs of loaded_lat).  Every --cq-mod-th work request is signalled
 * (wr_id = its 1-based index, so one completion retires every earlier
 * request).  A stream ends with the "stream done" ctrl word carrying its
 * message count; with --bidir both sides stream at once and the measuring
 * side's window ends when its own stream completed AND the peer's was
 * announced (and, for send, fully received): bytes of both directions over
 * that one window.
 */
#include "vb.h"

#include "pb_clock.h"

#include <errno.h>
#include <string.h>

enum vb_bw_mode { VB_BW_COUNT, VB_BW_DURATION, VB_BW_UNTIL_STOP };

/*
 * The loop.  always_inline + a constant mode gives one specialised loop per
 * variant: no option test inside it beyond the termination rule of that variant.
 */
static inline __attribute__((always_inline)) int
vb_bw_loop(struct vb_worker *w, const enum vb_bw_mode mode, uint64_t n, uint64_t end_by_ns,
	   uint64_t *posted, uint64_t *recvd)
{
	const uint64_t depth = w->p->tx_depth, mod = w->p->cq_mod;
	const uint32_t inl = w->inline_flag;
	const uint32_t stop_at = (uint32_t)w->loaded_point;
	_Atomic uint32_t *stop = &w->shared->loaded_stop;
	struct vb_watch wt;
	uint64_t scnt = 0, ccnt = 0, limit = mode == VB_BW_COUNT ? n : UINT64_MAX;
	struct ibv_qp *qp = w->qp;
	struct ibv_cq *cq = w->cq;
	struct ibv_send_wr *bad;
	struct ibv_wc wc[16];
	uint64_t spins = 0, next_check = 1024;
	int rc, ne;

	vb_watch_start(w, &wt, "send-queue completions", false);
	while (ccnt < limit) {
		while (scnt < limit && scnt - ccnt < depth) {
			w->wr.wr_id = scnt + 1;
			w->wr.send_flags = inl | ((scnt + 1) % mod == 0 || scnt + 1 == limit ?
						  IBV_SEND_SIGNALED : 0);
			rc = ibv_post_send(qp, &w->wr, &bad);
			if (rc) {
				snprintf(w->error, sizeof(w->error), "ibv_post_send: %s (message %llu)",
					 strerror(rc), (unsigned long long)scnt);
				return -rc;
			}
			scnt++;
		}
		ne = ibv_poll_cq(cq, 16, wc);
		for (int i = 0; i < ne; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return vb_wc_error(w, &wc[i]);
			if (!(wc[i].opcode & IBV_WC_RECV))
				ccnt = wc[i].wr_id;
			else if ((rc = vb_recv_repost(w, recvd)))
				return rc;
		}
		/* The clock is read only when completions freed room in the window (the
		 * only time the stop decision matters): not on every empty poll. */
		if (mode == VB_BW_DURATION && ne > 0 && limit == UINT64_MAX &&
		    pb_clock_now_ns() >= end_by_ns)
			limit = scnt % mod ? scnt + mod - scnt % mod : (scnt ? scnt : mod);
		if (mode == VB_BW_UNTIL_STOP && limit == UINT64_MAX &&
		    atomic_load_explicit(stop, memory_order_relaxed) == stop_at)
			limit = scnt % mod ? scnt + mod - scnt % mod : (scnt ? scnt : mod);
		if (ne < 0) {
			snprintf(w->error, sizeof(w->error), "ibv_poll_cq failed");
			return -EIO;
		}
		/*
		 * Every 1024 passes + posts (busy or not; a pass may post a whole
		 * window, and posting is a system call on some providers): heartbeat,
		 * signals, abort, and the deadline, which counts from the last
		 * completion seen.
		 */
		if (++spins + scnt >= next_check) {
			next_check = spins + scnt + 1024;
			wt.progress = ccnt + *recvd;
			if ((rc = vb_watch_check(w, &wt)))
				return rc;
		}
	}
	*posted = limit;
	return 0;
}

/* Stream n messages (or until the block's end) and close the stream; fills t when non-NULL. */
static int vb_bw_stream(struct vb_worker *w, struct pb_timed *t, uint64_t n, bool bidir)
{
	uint64_t start, own_end, end, posted = 0, recvd = 0, peer = 0;
	int rc;

	w->stream_no++;
	start = pb_clock_now_ns();
	if (!t)
		rc = vb_bw_loop(w, VB_BW_COUNT, n, 0, &posted, &recvd);
	else if (w->role->until_probe && !t->end_by_ns)
		rc = vb_bw_loop(w, VB_BW_UNTIL_STOP, 0, 0, &posted, &recvd);
	else if (t->end_by_ns)
		rc = vb_bw_loop(w, VB_BW_DURATION, 0, t->end_by_ns, &posted, &recvd);
	else
		rc = vb_bw_loop(w, VB_BW_COUNT, n, 0, &posted, &recvd);
	own_end = pb_clock_now_ns();
	if (!rc)
		rc = vb_stream_signal(w, posted);
	if (!rc && bidir)
		rc = vb_stream_done_wait(w, &peer, &recvd, VB_NAP_TIMED_NS);
	end = bidir ? pb_clock_now_ns() : own_end;
	if (rc || !t)
		return rc;
	t->start_ns = start;
	t->end_ns = end;
	t->messages = posted + peer;
	t->bytes = t->messages * t->msg_size_bytes;
	t->done = t->messages;
	t->has_bw = w->measuring;
	if (w->inline_flag)
		vb_flag(t, "inline");
	return 0;
}

/* The engine's entry points: the pre-built work request carries the opcode. */
static int vb_bw_timed(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;

	return vb_bw_stream(w, t, t->iterations, w->p->bidir);
}

static int vb_bw_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;

	(void)size;
	return n ? vb_bw_stream(w, NULL, n, w->p->bidir) : 0;
}

int vb_passive(struct vb_worker *w)
{
	uint64_t count = 0, recvd = 0;

	w->stream_no++;
	return vb_stream_done_wait(w, &count, &recvd, VB_NAP_PASSIVE_NS);
}

static int vb_passive_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_passive(ctx);
}

static int vb_passive_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_passive(ctx) : 0;
}

/* The target of a one-way stream waits; with --bidir it streams too. */
static int vb_bw_serve(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;

	return w->p->bidir ? vb_bw_timed(w, t) : vb_passive(w);
}

static int vb_bw_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;

	if (!n)
		return 0;
	return w->p->bidir ? vb_bw_warmup(w, size, n) : vb_passive(w);
}

const struct pb_test_ops vb_bw_client = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_bw_warmup, .timed = vb_bw_timed,
};
const struct pb_test_ops vb_bw_server = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_bw_serve_warmup, .timed = vb_bw_serve,
};
const struct pb_test_ops vb_passive_ops = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_passive_warmup, .timed = vb_passive_timed,
};
