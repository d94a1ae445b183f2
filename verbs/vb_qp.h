/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every test of a worker builds on: waits with deadlines (struct
 * vb_watch), the ctrl channel (pair sync, end of stream), receive and post
 * helpers, the per-size preparation of the data work request.
 */
#ifndef VB_QP_H
#define VB_QP_H

#include "vb.h"

#include <stdio.h>
#include <string.h>

/*
 * One wait of a worker (connect, completion, reply, pair sync, end of
 * stream).  Its deadline is --timeout after the last progress it saw: a long
 * healthy stream never trips it, a dead or stopped peer trips it --timeout
 * after its last sign of progress, and the message gives the time really
 * waited.  Progress is the caller's counter (progress: replies, completions,
 * receives); for a wait on the peer's own pace (VB_WATCH_PEER: pair sync,
 * the passive side of a stream) also the node group's progress counter
 * (pb_meet_ops.progress) and, across nodes, the peer's progress word read with
 * an 8-byte RDMA read every quarter of --timeout ("peek").
 */
struct vb_watch {
	const char *what;
	uint64_t progress;       /* the caller's counter: moves when the awaited thing advances */
	uint64_t mark;           /* progress at since_ns */
	uint64_t since_ns;       /* start of the wait or its last progress */
	uint64_t group_mark, peer_mark, next_peek_ns;
	unsigned spins;
	bool peer, peek_pending;
};
#define VB_WATCH_PEER true

/* Start a wait (peer: VB_WATCH_PEER, see struct vb_watch). */
void vb_watch_start(struct vb_worker *w, struct vb_watch *wt, const char *what, bool peer);
/*
 * Check a wait: heartbeat, signal, group abort, progress, deadline.  0 while
 * waiting may go on; -EINTR (signal), -ECANCELED (group aborted), -ETIMEDOUT
 * (no progress for --timeout) or -EIO (the peek failed: peer gone), with
 * w->error set.
 */
int vb_watch_check(struct vb_worker *w, struct vb_watch *wt);
/* End a wait: reap an outstanding peek (so no stray completion reaches a stream). 0 or -errno. */
int vb_watch_end(struct vb_worker *w, struct vb_watch *wt);
/* Every 4096 empty spins: vb_watch_check() with what as the awaited thing. */
static inline int vb_watch_spin(struct vb_worker *w, struct vb_watch *wt, const char *what)
{
	if (++wt->spins % 4096)
		return 0;
	wt->what = what;
	return vb_watch_check(w, wt);
}
/* Record that this worker made progress (group counter, published progress word). */
void vb_progress(struct vb_worker *w);
int vb_wc_error(struct vb_worker *w, const struct ibv_wc *wc);
int vb_ctrl_write(struct vb_worker *w, unsigned word, uint64_t value);
/* RDMA-write len bytes of our ctrl page at off into the peer's at remote_off; wait for it. */
int vb_ctrl_put(struct vb_worker *w, size_t off, size_t remote_off, uint32_t len);
int vb_ctrl_sync(struct vb_worker *w);
/* Post n receives on QP q. 0 or -errno. */
int vb_post_recvs(struct vb_worker *w, unsigned q, uint32_t n);
/* A receive completed on QP q (its wr_id): count it in *recvd and post its replacement. 0 or -errno. */
int vb_recv_repost(struct vb_worker *w, unsigned q, uint64_t *recvd);

/*
 * Post the pre-built data work request on the next QP of the round robin
 * (--qps) and advance it.  0 or -errno (w->error set).
 */
static inline int vb_post_next(struct vb_worker *w)
{
	unsigned q = w->qp_cur;
	struct ibv_send_wr *bad;
	int rc;

	if (++w->qp_cur == w->nqp) {
		w->qp_cur = 0;
		w->qp_round++;
	}
	rc = ibv_post_send(w->qps[q], &w->wr, &bad);
	if (rc)
		snprintf(w->error, sizeof(w->error), "ibv_post_send (QP %u of %u): %s", q, w->nqp, strerror(rc));
	return -rc;
}
/* Is the next request of the round robin one to signal, with every mod-th request of a QP
 * signalled (staggered by QP index, so the signalled ones spread over the rounds)? */
static inline bool vb_next_signalled(const struct vb_worker *w, uint64_t mod)
{
	return (w->qp_round + 1 + w->qp_cur) % mod == 0;
}
int vb_prepare_common(struct vb_worker *w, uint64_t size);
/* The engine's error() of every test: the worker's last error text. */
const char *vb_error(void *ctx);
/* vb_prepare_common() as the engine's prepare() of every test. 0 or -errno. */
int vb_prepare(void *ctx, uint64_t size);
/* Latency loops: reap the outstanding signalled request (blocking, with deadline). 0 or -errno. */
int vb_reap_pending(struct vb_worker *w);
/*
 * Wait for the peer's "stream done" word (send: and every announced message).
 * Without sends the wait sleeps between looks, 20 us doubling up to
 * max_nap_ns (VB_NAP_TIMED_NS when the wait ends a timed window) and never
 * longer than 1/8 of the time waited so far: a stream of length T costs about
 * log2(T / 20 us) + 8 wake-ups and is noticed at most ~T/8 late.  0 or -errno.
 */
int vb_stream_done_wait(struct vb_worker *w, uint64_t *count, uint64_t *recvd, uint64_t max_nap_ns);
#define VB_NAP_TIMED_NS 20000u     /* ends a measured window: no backoff */
#define VB_NAP_PASSIVE_NS 50000000u /* untimed passive side: the pair sync waits for it */
int vb_stream_signal(struct vb_worker *w, uint64_t count);
void vb_flag(struct pb_timed *t, const char *flag);

#endif
