/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers every test shares: deadline/abort checks for busy waits, the
 * completion error message, the ctrl channel (8-byte RDMA writes into the
 * peer's ctrl words: a pair-level barrier and the "stream done" word), and
 * the per-size preparation of the pre-built work request.
 */
#include "vb_qp.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "vb_buf.h"
#include "vb_fault.h"
#include "vb_signal.h"
#include "vb_soak.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* Sleep between looks of a passive side: doubling from 20 us up to the caller's maximum. */
#define VB_NAP_MIN_NS 20000u

void vb_progress(struct vb_worker *w)
{
	shm_meet_ops.progress(&w->meet);
	if (w->ctrl)
		w->ctrl->out[1] = shm_meet_ops.progress_count(&w->meet);
}

void vb_watch_start(struct vb_worker *w, struct vb_watch *wt, const char *what, bool peer)
{
	memset(wt, 0, sizeof(*wt));
	wt->what = what;
	wt->since_ns = pb_clock_now_ns();
	wt->peer = peer;
	wt->group_mark = shm_meet_ops.progress_count(&w->meet);
	wt->peer_mark = w->ctrl ? w->ctrl->in[1] : 0;
	/* Across nodes the first peek goes out after a quarter of --timeout without progress. */
	wt->next_peek_ns = wt->since_ns + w->timeout_ns / 4;
}

/* Post an 8-byte RDMA read of the peer's progress word into ctrl->in[1]. 0 or -errno. */
static int vb_peek_post(struct vb_worker *w, struct vb_watch *wt)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&w->ctrl->in[1], .length = 8, .lkey = w->ctrl_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = VB_WRID_PEEK, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	wr.wr.rdma.remote_addr = w->remote.ctrl_addr + offsetof(struct vb_ctrl, out[1]);
	wr.wr.rdma.rkey = w->remote.ctrl_rkey;
	if ((rc = ibv_post_send(w->qp, &wr, &bad))) {
		snprintf(w->error, sizeof(w->error), "ibv_post_send (progress read): %s", strerror(rc));
		return -rc;
	}
	wt->peek_pending = true;
	return 0;
}

/* Reap the peek if it completed: 1 done, 0 not yet, or -errno (the peer's QP is gone). */
static int vb_peek_reap(struct vb_worker *w, struct vb_watch *wt)
{
	struct ibv_wc wc;
	int ne = ibv_poll_cq(w->cq, 1, &wc);

	if (ne == 0)
		return 0;
	if (ne < 0) {
		snprintf(w->error, sizeof(w->error), "ibv_poll_cq failed");
		return -EIO;
	}
	wt->peek_pending = false;
	if (wc.status != IBV_WC_SUCCESS) {
		snprintf(w->error, sizeof(w->error), "the peer is gone: reading its progress word while waiting for %s failed: %s",
			 wt->what, ibv_wc_status_str(wc.status));
		return -EIO;
	}
	if (wc.wr_id != VB_WRID_PEEK) {
		snprintf(w->error, sizeof(w->error), "unexpected completion (opcode %d) while waiting for %s",
			 (int)wc.opcode, wt->what);
		return -EPROTO;
	}
	return 1;
}

/* Peer waits across nodes: has the peer's progress word moved? 1 yes, 0 no, -errno. */
static int vb_watch_peek(struct vb_worker *w, struct vb_watch *wt, uint64_t now)
{
	int rc;

	/* Loopback: the peer is in our shm group, its progress is the group's.  Send tests: a
	 * receive completion could come before the peek's; they rely on the group and the receives. */
	if (w->p->loopback || !w->qp || !w->remote.ctrl_rkey || !w->dev->max_qp_init_rd_atom ||
	    w->test->op == VB_OP_SEND)
		return 0;
	if (wt->peek_pending) {
		if ((rc = vb_peek_reap(w, wt)) <= 0)
			return rc;
		if (w->ctrl->in[1] != wt->peer_mark) {
			wt->peer_mark = w->ctrl->in[1];
			return 1;
		}
		return 0;
	}
	if (now < wt->next_peek_ns)
		return 0;
	wt->next_peek_ns = now + w->timeout_ns / 4;
	return vb_peek_post(w, wt);
}

int vb_watch_check(struct vb_worker *w, struct vb_watch *wt)
{
	char why[160];
	uint64_t now;
	int rc, sig = vb_interrupted;

	atomic_fetch_add_explicit(&w->shared->w[w->member].beat, 1, memory_order_relaxed);
	if (sig) {
		snprintf(w->error, sizeof(w->error), "interrupted by %s while waiting for %s", vb_sig_name(sig), wt->what);
		return -EINTR;
	}
	if (shm_meet_ops.aborted(&w->meet, why, sizeof(why))) {
		snprintf(w->error, sizeof(w->error), "aborted while waiting for %s: %s", wt->what, why);
		return -ECANCELED;
	}
	now = pb_clock_now_ns();
	if (wt->progress != wt->mark) {
		wt->mark = wt->progress;
		wt->since_ns = now;
		vb_progress(w);
	} else if (wt->peer) {
		uint64_t g = shm_meet_ops.progress_count(&w->meet);

		if (w->ctrl)  /* what a peer peeking at us sees: our group still works */
			w->ctrl->out[1] = g;
		if (g != wt->group_mark) {
			wt->group_mark = g;
			wt->since_ns = now;
		} else if ((rc = vb_watch_peek(w, wt, now)) < 0) {
			return rc;
		} else if (rc) {
			wt->since_ns = now;
		}
	}
	if (now - wt->since_ns > w->timeout_ns) {
		snprintf(w->error, sizeof(w->error),
			 "no progress for %.1f s waiting for %s (--timeout %.1f s; peer dead or stuck?)",
			 (double)(now - wt->since_ns) / 1e9, wt->what, (double)w->timeout_ns / 1e9);
		return -ETIMEDOUT;
	}
	return 0;
}

int vb_watch_end(struct vb_worker *w, struct vb_watch *wt)
{
	uint64_t until = pb_clock_now_ns() + w->timeout_ns;
	int rc;

	while (wt->peek_pending) {
		if ((rc = vb_peek_reap(w, wt)) < 0)
			return rc;
		if (!rc && pb_clock_now_ns() > until) {
			snprintf(w->error, sizeof(w->error), "the read of the peer's progress word did not complete within --timeout");
			return -ETIMEDOUT;
		}
	}
	return 0;
}

int vb_wc_error(struct vb_worker *w, const struct ibv_wc *wc)
{
	snprintf(w->error, sizeof(w->error),
		 "completion error: %s (status %d, opcode %d, wr_id %llu) on QP 0x%x, %llu B",
		 ibv_wc_status_str(wc->status), (int)wc->status, (int)wc->opcode,
		 (unsigned long long)wc->wr_id, wc->qp_num,
		 (unsigned long long)w->size);
	return -EIO;
}

void vb_flag(struct pb_timed *t, const char *flag)
{
	size_t len = strlen(t->flags);

	if (strstr(t->flags, flag))
		return;
	snprintf(t->flags + len, sizeof(t->flags) - len, "%s%s", len ? ";" : "", flag);
}

int vb_post_recvs(struct vb_worker *w, unsigned q, uint32_t n)
{
	struct ibv_recv_wr *bad;

	for (uint32_t i = 0; i < n; i++) {
		int rc;

		/* wr_id: the receive's slot (post index) above bit 16, its QP below */
		w->rwr.wr_id = (vb_buf_recv_next(w) << 16) | q;
		rc = ibv_post_recv(w->qps[q], &w->rwr, &bad);

		if (rc) {
			snprintf(w->error, sizeof(w->error), "ibv_post_recv (QP %u of %u): %s", q, w->nqp,
				 strerror(rc));
			return -rc;
		}
		w->recvs_posted++;
	}
	return 0;
}

/* Spin until one successful completion is in *wc (deadline-checked). 0 or -errno. */
static int vb_wait_one_cqe(struct vb_worker *w, struct ibv_wc *wc, const char *what)
{
	struct vb_watch wt;
	int rc, ne;

	vb_watch_start(w, &wt, what, false);
	while ((ne = ibv_poll_cq(w->cq, 1, wc)) == 0)
		if ((rc = vb_watch_spin(w, &wt, what)))
			return rc;
	if (ne < 0) {
		snprintf(w->error, sizeof(w->error), "ibv_poll_cq failed");
		return -EIO;
	}
	return wc->status == IBV_WC_SUCCESS ? 0 : vb_wc_error(w, wc);
}

/* A receive completed on QP q: count it and post its replacement there. 0 or -errno. */
int vb_recv_repost(struct vb_worker *w, unsigned q, uint64_t *recvd)
{
	(*recvd)++;
	w->recvs_posted--;
	return vb_post_recvs(w, q, 1);
}

/*
 * Wait for the completion of the ctrl write.  A receive may come first (send
 * tests: the peer's stream goes on, e.g. --bidir, or its next stream already
 * began; or, after a pair sync, the peer saw our write land and sent its next
 * message before our write's completion reached us): it is reposted and
 * counted in w->stray_recvs, its wr_id kept in w->stray_wr_id.  Whoever
 * waits for receives next takes them from there first: the stream's count
 * (vb_stream_done_wait), the send_lat server (vb_send.c), --validate
 * (vb_validate.c).  Any other completion is a protocol error.
 */
static int vb_ctrl_reap(struct vb_worker *w)
{
	struct ibv_wc wc;
	int rc;

	for (;;) {
		if ((rc = vb_wait_one_cqe(w, &wc, "a ctrl write completion")))
			return rc;
		if (!(wc.opcode & IBV_WC_RECV))
			break;
		w->stray_wr_id = wc.wr_id;
		if ((rc = vb_recv_repost(w, VB_RECV_QP(wc.wr_id), &w->stray_recvs)))
			return rc;
	}
	if (wc.wr_id == VB_WRID_CTRL)
		return 0;
	snprintf(w->error, sizeof(w->error),
		 "unexpected completion (opcode %d, wr_id %llu) while waiting for a ctrl write",
		 (int)wc.opcode, (unsigned long long)wc.wr_id);
	return -EPROTO;
}

int vb_ctrl_write(struct vb_worker *w, unsigned word, uint64_t value)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)&w->ctrl->out[word], .length = 8, .lkey = w->ctrl_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = VB_WRID_CTRL, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	w->ctrl->out[word] = value;
	wr.wr.rdma.remote_addr = w->remote.ctrl_addr + word * sizeof(uint64_t);
	wr.wr.rdma.rkey = w->remote.ctrl_rkey;
	/* The test hook (PAIRBENCH_FAULT=latecqe), on the server (the receiving side of the send
	 * tests): the completion we reap is an empty write's, posted 2 ms later.  Not in the
	 * final sync: the peer may be gone by then. */
	bool late = vb_fault_on(VB_FAULT_LATE_CQE) && w->side == VB_SERVER && !w->closing;

	if (late)
		wr.send_flags = 0;
	rc = ibv_post_send(w->qp, &wr, &bad);
	if (!rc && late) {
		nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
		wr.num_sge = 0;
		wr.send_flags = IBV_SEND_SIGNALED;
		rc = ibv_post_send(w->qp, &wr, &bad);
	}
	if (rc) {
		snprintf(w->error, sizeof(w->error), "ibv_post_send (ctrl): %s", strerror(rc));
		return -rc;
	}
	return vb_ctrl_reap(w);
}

int vb_ctrl_put(struct vb_worker *w, size_t off, size_t remote_off, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)w->ctrl + off, .length = len, .lkey = w->ctrl_mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = VB_WRID_CTRL, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc;

	wr.wr.rdma.remote_addr = w->remote.ctrl_addr + remote_off;
	wr.wr.rdma.rkey = w->remote.ctrl_rkey;
	if ((rc = ibv_post_send(w->qp, &wr, &bad))) {
		snprintf(w->error, sizeof(w->error), "ibv_post_send (QP table, %u B): %s", len, strerror(rc));
		return -rc;
	}
	return vb_ctrl_reap(w);
}

int vb_ctrl_sync(struct vb_worker *w)
{
	uint64_t step = ++w->ctrl_step;
	struct vb_watch wt;
	int rc = vb_ctrl_write(w, 0, step);

	if (rc)
		return rc;
	vb_watch_start(w, &wt, "the peer (pair sync)", VB_WATCH_PEER);
	while (w->ctrl->in[0] < step) {
		if ((rc = vb_watch_spin(w, &wt, "the peer (pair sync)")))
			break;
	}
	return rc ? rc : vb_watch_end(w, &wt);
}

int vb_stream_signal(struct vb_worker *w, uint64_t count)
{
	return vb_ctrl_write(w, vb_done_index(w->stream_no), (w->stream_no << VB_DONE_SHIFT) | count);
}

/*
 * Wait for the peer's "stream done" word of the current stream; for SEND
 * also until every announced message was received (receives are reposted).
 * *recvd counts receive completions of this stream.  Receives beyond its
 * count are the peer's next stream's (across nodes it may already be
 * sending it): they go to w->stray_recvs, which that stream's wait counts.
 */
int vb_stream_done_wait(struct vb_worker *w, uint64_t *count, uint64_t *recvd, uint64_t max_nap_ns)
{
	bool sends = w->test->op == VB_OP_SEND;
	uint64_t nap_ns = VB_NAP_MIN_NS, t0 = sends ? 0 : pb_clock_now_ns();
	struct ibv_wc wc[16];
	struct vb_watch wt;
	int rc;

	/* Test hook: a server that looks at the stream's end late (docs/failure-modes.md). */
	if (vb_fault_on(VB_FAULT_LATE_DONE) && w->side == VB_SERVER)
		nanosleep(&(struct timespec){ .tv_nsec = 300000000 }, NULL);
	/* Sends: the receives are the progress.  Otherwise the peer's pace (group, peek). */
	vb_watch_start(w, &wt, "the peer's end of stream", !sends);
	*recvd += w->stray_recvs;  /* receives a ctrl write's reap took for us */
	w->stray_recvs = 0;
	for (;;) {
		uint64_t word = w->ctrl->in[vb_done_index(w->stream_no)];

		if ((word >> VB_DONE_SHIFT) == (w->stream_no & ((1ull << (64 - VB_DONE_SHIFT)) - 1))) {
			*count = word & ((1ull << VB_DONE_SHIFT) - 1);
			if (!sends)
				return vb_watch_end(w, &wt);
			if (*recvd >= *count) {
				w->stray_recvs += *recvd - *count; /* the next stream's */
				*recvd = *count;
				return vb_watch_end(w, &wt);
			}
		}
		if (sends) {
			int ne = ibv_poll_cq(w->cq, 16, wc);

			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					return vb_wc_error(w, &wc[i]);
				if (!(wc[i].opcode & IBV_WC_RECV))
					continue;
				/* send_bw --validate-live: the server checks every Nth receive's data
				 * before its slot is posted again (vb_soak.h) */
				if (w->soak && w->soak->live && w->soak->seen++ == w->soak->next_check) {
					vb_soak_check_data(w->soak, vb_buf_recv_addr(w, VB_RECV_SLOT(wc[i].wr_id)),
							   w->size, w->link, 0, pb_clock_now_ns());
					w->soak->next_check += w->soak->check_every;
				}
				if ((rc = vb_recv_repost(w, VB_RECV_QP(wc[i].wr_id), recvd)))
					return rc;
			}
			if (ne < 0) {
				snprintf(w->error, sizeof(w->error), "ibv_poll_cq failed");
				return -EIO;
			}
		}
		if (!sends) {
			/*
			 * Nothing to do but wait: sleep instead of spinning, so a
			 * passive side does not take the core from other pairs (or,
			 * with Soft-RoCE, from the kernel doing the transfer).  A
			 * read/atomic target waits a whole timed block, and every
			 * wake-up lands on a core of the node under test (perftest's
			 * target blocks in a socket read), so the nap doubles from
			 * 20 us up to max_nap_ns, bounded by 1/8 of the time waited.
			 */
			struct timespec ts = { (time_t)(nap_ns / 1000000000u),
					       (long)(nap_ns % 1000000000u) };
			uint64_t cap;

			nanosleep(&ts, NULL);
			cap = (pb_clock_now_ns() - t0) / 8;
			if (cap > max_nap_ns)
				cap = max_nap_ns;
			if (nap_ns * 2 <= cap)
				nap_ns *= 2;
			if ((rc = vb_watch_check(w, &wt)))
				return rc;
			continue;
		}
		wt.progress = *recvd;
		if ((rc = vb_watch_spin(w, &wt, "the peer's end of stream")))
			return rc;
	}
}

/*
 * Per size, both sides: zero the receive region, pre-build the data work
 * request, top up receives, then a pair sync so no data flows before both
 * sides are ready.
 */
int vb_prepare_common(struct vb_worker *w, uint64_t size)
{
	uint8_t *tx = w->buf, *rx = w->buf + w->region;
	enum vb_op op = w->test->op;
	int rc;

	w->size = size;
	w->seq = 0;
	w->posts = 0;
	w->qp_cur = 0;       /* both sides start the round robin at QP 0 (ping-pong: in lockstep) */
	w->qp_round = 0;
	w->sig_pending = false;
	w->loaded_point++;   /* read by the probe and its load (struct vb_role) only */
	memset(rx, 0, size < w->region ? size : w->region);
	memset(&w->wr, 0, sizeof(w->wr));
	w->wr.sg_list = &w->sge;
	w->wr.num_sge = 1;
	w->sge.lkey = w->mr->lkey;
	w->sge.length = (uint32_t)size;
	w->inline_flag = 0;
	switch (op) {
	case VB_OP_WRITE:
	case VB_OP_SEND:
		w->sge.addr = (uintptr_t)tx;
		w->wr.opcode = op == VB_OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
		w->wr.wr.rdma.remote_addr = w->remote.addr + w->remote.len / 2;
		w->wr.wr.rdma.rkey = w->remote.rkey;
		if (size <= w->max_inline)
			w->inline_flag = IBV_SEND_INLINE;
		break;
	case VB_OP_READ:
		w->sge.addr = (uintptr_t)rx;
		w->wr.opcode = IBV_WR_RDMA_READ;
		w->wr.wr.rdma.remote_addr = w->remote.addr;
		w->wr.wr.rdma.rkey = w->remote.rkey;
		break;
	case VB_OP_ATOMIC:
		w->sge.addr = (uintptr_t)tx;
		w->sge.length = 8;
		w->wr.opcode = w->p->variant && !strcmp(w->p->variant, "cswap") ?
				IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		w->wr.wr.atomic.remote_addr = w->remote.addr + w->remote.len / 2;
		w->wr.wr.atomic.rkey = w->remote.rkey;
		w->wr.wr.atomic.compare_add = w->wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? 1 : 0;
		w->wr.wr.atomic.swap = 1;
		w->atomic_value = 0;
		break;
	}
	vb_buf_prepare(w);
	/* Receives: rx_per_qp on every QP, once; each one consumed is reposted on its QP at once. */
	if (op == VB_OP_SEND && !w->recvs_posted)
		for (unsigned q = 0; q < w->nqp; q++)
			if ((rc = vb_post_recvs(w, q, w->rx_per_qp)))
				return rc;
	return vb_ctrl_sync(w);
}

const char *vb_error(void *ctx)
{
	const struct vb_worker *w = ctx;

	return w->error;
}

int vb_prepare(void *ctx, uint64_t size)
{
	return vb_prepare_common(ctx, size);
}

int vb_reap_pending(struct vb_worker *w)
{
	struct ibv_wc wc;
	int rc;

	if (!w->sig_pending)
		return 0;
	if ((rc = vb_wait_one_cqe(w, &wc, "a send completion")))
		return rc;
	if (wc.opcode & IBV_WC_RECV) {
		snprintf(w->error, sizeof(w->error), "unexpected receive completion");
		return -EPROTO;
	}
	w->sig_pending = false;
	return 0;
}
