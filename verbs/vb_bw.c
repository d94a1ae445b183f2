/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One timed iteration = one message (RDMA write, RDMA read or send) posted into a window of
 * at most -t outstanding work requests; the block's time is first post .. last completion.
 *
 * The windowed stream shared by write_bw, read_bw, send_bw (and the loaded
 * pairs of loaded_lat).  Messages go round-robin over the pair's --qps QPs;
 * every --cq-mod-th work request of a QP is signalled (fewer QPs' worth when
 * N QPs could otherwise fill the window with unsignalled requests: vb_conn.c
 * vb_qp_sizes), wr_id = the message's 1-based index, so one completion
 * retires every earlier request of its QP.  A stream ends with the "stream done" ctrl word carrying its
 * message count; with --bidir both sides stream at once and the measuring
 * side's window ends when its own stream completed AND the peer's was
 * announced (and, for send, fully received): bytes of both directions over
 * that one window.  --buffers fresh: message k goes from and to slot k mod n
 * (vb_buf.c); peer: every message uses the same addresses.
 */
#include "vb_ops.h"

#include "pb_clock.h"
#include "vb_buf.h"
#include "vb_qp.h"
#include "vb_soak.h"

#include <errno.h>
#include <string.h>

/* SOAK: DURATION, and each poll that returned completions adds them to the soak's bucket of
 * the clock value that poll reads anyway (core/pb_soak.h); SIGUSR1 (the stop word) ends it. */
enum vb_bw_mode { VB_BW_COUNT, VB_BW_DURATION, VB_BW_UNTIL_STOP, VB_BW_SOAK, VB_BW_SOAK_CHECK };

/*
 * Retire the requests a send completion stands for: message k (wr_id, 1-based)
 * went to QP (k - 1) mod N as that QP's ((k - 1) / N + 1)-th request, and a
 * completion retires every earlier request of its QP.  Returns the requests
 * retired now.
 */
static inline uint64_t vb_bw_retire(struct vb_worker *w, uint64_t wr_id)
{
	uint64_t k = wr_id - 1, s, n;
	unsigned q;

	if (w->nqp == 1) {
		n = wr_id - w->qp_done[0];
		w->qp_done[0] = wr_id;
		return n;
	}
	q = (unsigned)(k % w->nqp);
	s = k / w->nqp + 1;
	n = s - w->qp_done[q];
	w->qp_done[q] = s;
	return n;
}

/*
 * The last message of a stream that stops by time (or the probe): one more
 * round, so each QP's last request is signalled.  One QP: up to the next
 * signalled request (every --cq-mod-th).
 */
static inline uint64_t vb_bw_stop_at(const struct vb_worker *w, uint64_t scnt, uint64_t mod)
{
	if (w->nqp > 1)
		return scnt + w->nqp;
	return scnt % mod ? scnt + mod - scnt % mod : (scnt ? scnt : mod);
}

/*
 * The loop.  always_inline + a constant mode gives one specialised loop per
 * variant: no option test inside it beyond the termination rule of that variant.
 * Message k goes to QP (k - 1) mod N (--qps, round robin); every qp_sig-th
 * request of a QP (staggered by QP index) and the last of each QP are
 * signalled; at most --tx-depth requests are outstanding in all, at most
 * qp_cap on one QP.
 * variant (and layout): no option test inside it beyond the termination rule of
 * that variant.  slotted: each message in its own slot (--buffers fresh).
 */
static inline __attribute__((always_inline)) int
vb_bw_loop(struct vb_worker *w, const enum vb_bw_mode mode, const bool slotted, uint64_t n,
	   uint64_t end_by_ns, uint64_t *posted, uint64_t *recvd, bool *stopped)
{
	const volatile uint64_t *soak_stop = pb_soak_stop_word();
	uint64_t counted = 0;   /* soak: completions already in a bucket */
	const uint64_t depth = w->p->tx_depth, mod = w->qp_sig, cap = w->qp_cap;
	const unsigned nqp = w->nqp;
	const uint32_t inl = w->inline_flag;
	const uint32_t stop_at = (uint32_t)w->loaded_point;
	_Atomic uint32_t *stop = &w->shared->loaded_stop;
	struct vb_watch wt;
	uint64_t scnt = 0, ccnt = 0, limit = mode == VB_BW_COUNT ? n : UINT64_MAX, round = 0;
	struct ibv_qp *const *qps = w->qps;
	const uint64_t *done = w->qp_done;
	struct ibv_cq *cq = w->cq;
	struct ibv_send_wr *bad;
	struct ibv_wc wc[16];
	uint64_t spins = 0, next_check = 1024;
	unsigned q = 0;
	int rc, ne;

	vb_watch_start(w, &wt, "send-queue completions", false);
	while (ccnt < limit) {
		while (scnt < limit && scnt - ccnt < depth && round - done[q] < cap) {
			w->wr.wr_id = scnt + 1;
			if (slotted)
				vb_buf_slot(w, scnt);
			w->wr.send_flags = inl | ((round + 1 + q) % mod == 0 || scnt + nqp >= limit ?
						  IBV_SEND_SIGNALED : 0);
			rc = ibv_post_send(qps[q], &w->wr, &bad);
			if (rc) {
				snprintf(w->error, sizeof(w->error), "ibv_post_send: %s (message %llu, QP %u of %u)",
					 strerror(rc), (unsigned long long)scnt, q, nqp);
				return -rc;
			}
			scnt++;
			if (++q == nqp) {
				q = 0;
				round++;
			}
		}
		ne = ibv_poll_cq(cq, 16, wc);
		for (int i = 0; i < ne; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				return vb_wc_error(w, &wc[i]);
			if (!(wc[i].opcode & IBV_WC_RECV))
				ccnt += vb_bw_retire(w, wc[i].wr_id);
			else if ((rc = vb_recv_repost(w, VB_RECV_QP(wc[i].wr_id), recvd)))
				return rc;
		}
		/* The clock is read only when completions freed room in the window (the
		 * only time the stop decision matters): not on every empty poll. */
		if (mode == VB_BW_DURATION && ne > 0 && limit == UINT64_MAX &&
		    pb_clock_now_ns() >= end_by_ns)
			limit = vb_bw_stop_at(w, scnt, mod);
		if ((mode == VB_BW_SOAK || mode == VB_BW_SOAK_CHECK) && ne > 0) {
			const uint64_t now = pb_clock_now_ns();

			pb_soak_add(&w->soak->rec, now, ccnt - counted);
			counted = ccnt;
			if (mode == VB_BW_SOAK_CHECK)  /* --validate-live (read_bw): vb_soak.h */
				vb_soak_check_upto(w, ccnt, now);
			if (now >= w->soak->pause_at_ns)  /* the tests' pause hook (vb_soak.h) */
				vb_soak_pause(w);
			if (limit == UINT64_MAX && (now >= end_by_ns || *soak_stop)) {
				limit = vb_bw_stop_at(w, scnt, mod);
				*stopped = now < end_by_ns;
			}
		}
		if (mode == VB_BW_UNTIL_STOP && limit == UINT64_MAX &&
		    atomic_load_explicit(stop, memory_order_relaxed) == stop_at)
			limit = vb_bw_stop_at(w, scnt, mod);
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
	if (mode == VB_BW_SOAK || mode == VB_BW_SOAK_CHECK) {
		const uint64_t now = pb_clock_now_ns();

		pb_soak_add(&w->soak->rec, now, ccnt - counted);
		if (mode == VB_BW_SOAK_CHECK)
			vb_soak_check_upto(w, ccnt, now);
	}
	*posted = limit;
	return 0;
}

/* The loop specialised for mode and layout (slotted: the layout has a slot per message). */
static int vb_bw_run(struct vb_worker *w, enum vb_bw_mode mode, bool slotted, uint64_t n,
		     uint64_t end_by_ns, uint64_t *posted, uint64_t *recvd, bool *stopped)
{
	switch (mode) {
	case VB_BW_COUNT:
		return slotted ? vb_bw_loop(w, VB_BW_COUNT, true, n, 0, posted, recvd, stopped) :
				 vb_bw_loop(w, VB_BW_COUNT, false, n, 0, posted, recvd, stopped);
	case VB_BW_DURATION:
		return slotted ? vb_bw_loop(w, VB_BW_DURATION, true, 0, end_by_ns, posted, recvd, stopped) :
				 vb_bw_loop(w, VB_BW_DURATION, false, 0, end_by_ns, posted, recvd, stopped);
	case VB_BW_SOAK:
		return slotted ? vb_bw_loop(w, VB_BW_SOAK, true, 0, end_by_ns, posted, recvd, stopped) :
				 vb_bw_loop(w, VB_BW_SOAK, false, 0, end_by_ns, posted, recvd, stopped);
	case VB_BW_SOAK_CHECK:  /* --validate-live needs the slots (--buffers fresh: vb_main.c) */
		return vb_bw_loop(w, VB_BW_SOAK_CHECK, true, 0, end_by_ns, posted, recvd, stopped);
	case VB_BW_UNTIL_STOP:
		break;
	}
	return slotted ? vb_bw_loop(w, VB_BW_UNTIL_STOP, true, 0, 0, posted, recvd, stopped) :
			 vb_bw_loop(w, VB_BW_UNTIL_STOP, false, 0, 0, posted, recvd, stopped);
}

/* send_bw --validate-live, the client after its end of stream: the server's totals of its
 * checks (vb_soak.h), which it writes once its wait for this stream's receives ended. */
static int vb_bw_rx_totals(struct vb_worker *w)
{
	const uint64_t tag = w->stream_no & ((1ull << (64 - VB_DONE_SHIFT)) - 1);
	const char *what = "the peer's data checks (--validate-live)";
	struct vb_watch wt;
	int rc = 0;

	vb_watch_start(w, &wt, what, VB_WATCH_PEER);
	while (w->ctrl->in[VB_CTRL_RX_CHECKED] >> VB_DONE_SHIFT != tag)
		if ((rc = vb_watch_spin(w, &wt, what)))
			return rc;
	if ((rc = vb_watch_end(w, &wt)))
		return rc;
	vb_soak_rx_totals(w, w->ctrl->in[VB_CTRL_RX_CHECKED], w->ctrl->in[VB_CTRL_RX_FAULTS]);
	return 0;
}

static int vb_passive(struct vb_worker *w);

/* send_bw --validate-live, the server's timed stream: its receives checked while it waits for
 * the stream's end, then the totals into the client's ctrl words (the tagged one last: each
 * write's completion says it landed). */
static int vb_bw_serve_checked(struct vb_worker *w, struct pb_timed *t)
{
	struct vb_soak *s = w->soak;
	uint64_t ms, faults;
	int rc;

	vb_soak_rx_begin(w, t->end_by_ns - (uint64_t)(w->p->soak.soak_s * 1e9));
	rc = vb_passive(w);
	vb_soak_rx_end(w);
	if (rc)
		return rc;
	ms = s->first_corrupt_ns / 1000000u;
	faults = (s->corrupt < 0xffffffffu ? s->corrupt : 0xffffffffu) << 32 |
		 (ms < 0xffffffffu ? ms : 0xffffffffu);
	if ((rc = vb_ctrl_write(w, VB_CTRL_RX_FAULTS, faults)))
		return rc;
	return vb_ctrl_write(w, VB_CTRL_RX_CHECKED,
			     (w->stream_no << VB_DONE_SHIFT) |
			     (s->checked < (1ull << VB_DONE_SHIFT) ? s->checked : (1ull << VB_DONE_SHIFT) - 1));
}

/* Stream n messages (or until the block's end) and close the stream; fills t when non-NULL. */
static int vb_bw_stream(struct vb_worker *w, struct pb_timed *t, uint64_t n, bool bidir)
{
	uint64_t start, own_end, end, posted = 0, recvd = 0, peer = 0;
	bool slotted = w->slots.slotted, stopped = false, soak = t && w->soak && t->end_by_ns;
	int rc;

	w->stream_no++;
	memset(w->qp_done, 0, w->nqp * sizeof(*w->qp_done));  /* before the window opens */
	if (soak)  /* bucket 0 begins at the node's common start: the deadline minus the soak */
		vb_soak_begin(w, t->end_by_ns - (uint64_t)(w->p->soak.soak_s * 1e9));
	start = pb_clock_now_ns();
	if (!t)
		rc = vb_bw_run(w, VB_BW_COUNT, slotted, n, 0, &posted, &recvd, &stopped);
	else if (w->role->until_probe && !t->hist)  /* count, target: the load lasts as the probe */
		rc = vb_bw_run(w, VB_BW_UNTIL_STOP, slotted, 0, 0, &posted, &recvd, &stopped);
	else if (soak)
		rc = vb_bw_run(w, w->soak->check_every ? VB_BW_SOAK_CHECK : VB_BW_SOAK, slotted, 0,
			       t->end_by_ns, &posted, &recvd, &stopped);
	else if (t->end_by_ns)
		rc = vb_bw_run(w, VB_BW_DURATION, slotted, 0, t->end_by_ns, &posted, &recvd, &stopped);
	else
		rc = vb_bw_run(w, VB_BW_COUNT, slotted, n, 0, &posted, &recvd, &stopped);
	own_end = pb_clock_now_ns();
	if (rc && soak)
		vb_soak_abort(w, own_end);
	if (!rc)
		rc = vb_stream_signal(w, posted);
	if (!rc && soak && w->soak->rx_totals)
		rc = vb_bw_rx_totals(w);
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
	return soak ? vb_soak_finish(w, t, stopped) : 0;
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

static int vb_passive(struct vb_worker *w)
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

/* The target of a one-way stream waits (send_bw --validate-live: checking); with --bidir it
 * streams too. */
static int vb_bw_serve(void *ctx, struct pb_timed *t)
{
	struct vb_worker *w = ctx;

	if (w->soak && t && t->end_by_ns)
		return vb_bw_serve_checked(w, t);
	return w->p->bidir ? vb_bw_timed(w, t) : vb_passive(w);
}

static int vb_bw_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	struct vb_worker *w = ctx;

	if (!n)
		return 0;
	return w->p->bidir ? vb_bw_warmup(w, size, n) : vb_passive(w);
}

/* The measuring side's preparation: vb_prepare, and a soak's series file of this size. */
static int vb_bw_prepare(void *ctx, uint64_t size)
{
	struct vb_worker *w = ctx;
	int rc = vb_prepare(ctx, size);

	if (!rc && w->soak && w->soak->rx_totals)  /* send_bw --validate-live: the data checked */
		vb_soak_fill(w, size, false);
	return rc ? rc : vb_soak_open(ctx, size);
}

const struct pb_test_ops vb_bw_client = {
	.prepare = vb_bw_prepare, .error = vb_error, .warmup = vb_bw_warmup, .timed = vb_bw_timed,
};
/* The server's preparation: vb_prepare, and with --validate-live the pattern in the slots its
 * client reads (read_bw) or its checks' series file (send_bw) (vb_soak.h). */
static int vb_bw_serve_prepare(void *ctx, uint64_t size)
{
	struct vb_worker *w = ctx;
	int rc = vb_prepare(ctx, size);

	if (!rc && w->p->soak.validate_every && w->test->op == VB_OP_READ)
		vb_soak_fill(w, size, true);
	return rc ? rc : vb_soak_open(w, size);
}

const struct pb_test_ops vb_bw_server = {
	.prepare = vb_bw_serve_prepare, .error = vb_error, .warmup = vb_bw_serve_warmup,
	.timed = vb_bw_serve,
};
const struct pb_test_ops vb_passive_ops = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_passive_warmup, .timed = vb_passive_timed,
};
