/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * send_lat: one timed iteration = post a send of S bytes, poll the CQ until the peer's S-byte reply
 * send is received, repost that receive, stamp; sample = (stamp - previous stamp) / 2.
 * send_bw: one iteration = one send in the windowed stream (vb_bw.c); the peer reposts receives.
 *
 * Receives are pre-posted (-t of them per QP, or fewer with --qps: docs/verbs.md)
 * into the receive region and reposted on their QP right after each receive
 * completion, inside the iteration.  With --qps N the pings and replies go
 * round-robin over the N QPs, both sides in lockstep.  Every
 * --cq-mod-th send is signalled; sends of at most the inline size are posted
 * inline.  Send and receive completions share one CQ.  The loop, its timing
 * and the stream protocol are the harness's (vb_lat.h).
 */
#include "vb_lat.h"

/* Poll once; *got_recv counts receive completions (the caller reposts them). 0 or -errno. */
static inline int vb_send_poll(struct vb_worker *w, int *got_recv)
{
	struct ibv_wc wc[2];
	int ne = ibv_poll_cq(w->cq, 2, wc);

	for (int i = 0; i < ne; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return vb_wc_error(w, &wc[i]);
		if (wc[i].opcode & IBV_WC_RECV) {
			uint64_t n = 0;
			int rc;

			/* its replacement at once, on the QP it came on (wr_id) */
			if ((rc = vb_recv_repost(w, VB_RECV_QP(wc[i].wr_id), &n)))
				return rc;
			(*got_recv)++;
		} else {
			w->sig_pending = false;
		}
	}
	return ne < 0 ? -EIO : 0;
}

static inline __attribute__((always_inline)) int
vb_send_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i)
{
	int got = 0, rc;

	(void)i;
	if ((rc = vb_lat_post_moderated(w)))
		return rc;
	while (!got) {
		if ((rc = vb_send_poll(w, &got)))
			return rc;
		if (!got && (rc = vb_watch_spin(w, s, "the peer's reply send")))
			return rc;
	}
	return 0;
}

static int vb_send_lat_timed(void *ctx, struct pb_timed *t)
{
	return vb_lat_timed(ctx, t, vb_send_iter, 2);
}

static int vb_send_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_lat_warmup(ctx, n, vb_send_iter);
}

/* Server: answer every received message with a send, until the client's end of stream. */
static int vb_send_serve_stream(struct vb_worker *w)
{
	struct vb_watch s;
	const uint64_t want = w->stream_no + 1;
	int rc;

	vb_watch_start(w, &s, "the client's ping send", false);
	w->stream_no = want;
	for (;;) {
		/* Pings a ctrl write's reap took first (the prepare's pair sync, vb_ctrl_reap):
		 * already reposted, answered before anything else. */
		int got = (int)w->stray_recvs;

		w->stray_recvs = 0;
		if (!got && (rc = vb_send_poll(w, &got)))
			return rc;
		if (got) {
			s.progress += (uint64_t)got;
			/* every 1024 batches too: receives may be there at every look */
			if ((++s.spins & 1023) == 0 && (rc = vb_watch_check(w, &s)))
				return rc;
			for (int i = 0; i < got; i++)
				if ((rc = vb_lat_post_moderated(w)))
					return rc;
			continue;
		}
		if ((w->ctrl->in[vb_done_index(want)] >> VB_DONE_SHIFT) == want)
			return vb_reap_pending(w);
		if ((rc = vb_watch_spin(w, &s, "the client's ping send")))
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

const struct pb_test_ops vb_send_lat_client = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_send_lat_warmup, .timed = vb_send_lat_timed,
};
const struct pb_test_ops vb_send_lat_server = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_send_serve_warmup, .timed = vb_send_serve_timed,
};
