/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * read_lat: one timed iteration = post one signalled RDMA read of S bytes from the peer's buffer,
 * spin on the CQ until its completion, stamp; sample = stamp - previous stamp (full round trip).
 * read_bw: one iteration = one RDMA read in the windowed stream (vb_bw.c).
 *
 * The server is passive (the adapter answers reads); it only waits for the
 * client's end-of-stream word.  Outstanding reads are limited by the QP's
 * initiator depth (negotiated through rdma_cm) as well as by -t.  The loop,
 * its timing and the stream protocol are the harness's (vb_lat.h).
 */
#include "vb_lat.h"

static inline __attribute__((always_inline)) int
vb_read_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i)
{
	int rc;

	w->wr.wr_id = i + 1;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	if ((rc = vb_lat_post(w)))
		return rc;
	return vb_lat_wait_cqe(w, s, "the read completion");
}

static int vb_read_lat_timed(void *ctx, struct pb_timed *t)
{
	return vb_lat_timed(ctx, t, vb_read_iter, 1);
}

static int vb_read_lat_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	return vb_lat_warmup(ctx, n, vb_read_iter);
}

const struct pb_test_ops vb_read_lat_client = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_read_lat_warmup, .timed = vb_read_lat_timed,
};
