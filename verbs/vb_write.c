/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * write_lat: one timed iteration = RDMA write of S bytes to the peer, spin until the peer's S-byte
 * write lands back (last byte = our sequence number | 0x80), stamp; sample = (stamp - previous stamp) / 2.
 * write_bw: one iteration = one RDMA write in the windowed stream (vb_bw.c).
 *
 * The client (measuring side) pings with sequence numbers 1..127; the server
 * spins on the last byte of its receive region and answers each ping with a
 * write of the same size whose last byte is the ping's number | 0x80, so a
 * side that sends from its receive region (--buffers fresh: what the peer
 * wrote last) never mistakes its own ping for the answer.
 * Every --cq-mod-th write is signalled and reaped inside the iteration (a
 * non-blocking poll after the pong; blocking only if it is still pending at
 * the next signalled post).  Writes of at most the inline size are posted
 * inline.  The loop, its timing and the stream protocol are the harness's
 * (vb_lat.h); loaded_lat's probe pair runs this loop too.
 */
#include "vb_lat.h"

/* Reap a signalled write without blocking (after the pong arrived). 0 or -errno. */
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

/* Post one ping/pong write carrying seq in the last byte of its source. 0 or -errno. */
static inline int vb_write_post(struct vb_worker *w, uint8_t seq)
{
	((uint8_t *)(uintptr_t)w->sge.addr)[w->size - 1] = seq;
	return vb_lat_post_moderated(w);
}

#define VB_PONG(seq) ((uint8_t)((seq) | 0x80))
#define VB_SEQ_NEXT(seq) ((uint8_t)((seq) >= 127 ? 1 : (seq) + 1))

static inline __attribute__((always_inline)) int
vb_write_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i)
{
	volatile uint8_t *rx_last = w->buf + w->region + w->size - 1;
	uint8_t seq = w->seq = VB_SEQ_NEXT(w->seq);
	int rc;

	(void)i;
	if ((rc = vb_write_post(w, seq)))
		return rc;
	while (*rx_last != VB_PONG(seq))
		if ((rc = vb_watch_spin(w, s, "the peer's reply write")))
			return rc;
	return w->sig_pending ? vb_write_reap_nb(w) : 0;
}

static int vb_write_lat_timed(void *ctx, struct pb_timed *t)
{
	return vb_lat_timed(ctx, t, vb_write_iter, 2);
}

static int vb_write_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_lat_warmup(ctx, n, vb_write_iter);
}

/* Server: answer every ping until the client's end-of-stream word. 0 or -errno. */
static int vb_write_serve_stream(struct vb_worker *w)
{
	volatile uint8_t *rx_last = w->buf + w->region + w->size - 1;
	struct vb_watch s;
	const uint64_t want = w->stream_no + 1;
	int rc;

	vb_watch_start(w, &s, "the client's ping write", false);
	w->stream_no = want;
	for (;;) {
		uint8_t seq = VB_SEQ_NEXT(w->seq);

		while (*rx_last != seq) {
			if ((w->ctrl->in[vb_done_index(want)] >> VB_DONE_SHIFT) == want)
				return vb_reap_pending(w);
			if ((rc = vb_watch_spin(w, &s, "the client's ping write")))
				return rc;
		}
		w->seq = seq;
		s.progress++;
		/* every 1024 pings too: a ping may already be there at the first look */
		if ((++s.spins & 1023) == 0 && (rc = vb_watch_check(w, &s)))
			return rc;
		if ((rc = vb_write_post(w, VB_PONG(seq))))
			return rc;
		if (w->sig_pending && (rc = vb_write_reap_nb(w)))
			return rc;
	}
}

static int vb_write_serve_timed(void *ctx, struct pb_timed *t)
{
	(void)t;
	return vb_write_serve_stream(ctx);
}

static int vb_write_serve_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return n ? vb_write_serve_stream(ctx) : 0;
}

const struct pb_test_ops vb_write_lat_client = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_write_lat_warmup, .timed = vb_write_lat_timed,
};
const struct pb_test_ops vb_write_lat_server = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_write_serve_warmup, .timed = vb_write_serve_timed,
};
