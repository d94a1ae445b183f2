/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * atomic_lat: one timed iteration = post one signalled 8-byte atomic (fadd +1, or cswap v -> v+1)
 * on the peer's buffer, spin until its completion, stamp; sample = stamp - previous stamp (full RTT).
 *
 * Variants (--variant): fadd (default), cswap, each its own loop chosen at
 * setup.  compare-and-swap tracks the value it expects so that every
 * operation succeeds (a failed compare would still be a round trip, but not
 * the operation we mean to time).  The fetched old value lands in the
 * client's local buffer; --validate checks it.  The server is passive (the
 * adapter executes atomics).  Loop and timing: the harness (vb_lat.h).
 */
#include "vb_lat.h"

static inline __attribute__((always_inline)) int
vb_atomic_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i, const bool cswap)
{
	int rc;

	if (cswap) {
		w->wr.wr.atomic.compare_add = w->atomic_value;
		w->wr.wr.atomic.swap = w->atomic_value + 1;
	}
	w->wr.wr_id = i + 1;
	w->wr.send_flags = IBV_SEND_SIGNALED;
	if ((rc = vb_lat_post(w)) || (rc = vb_lat_wait_cqe(w, s, "the atomic completion")))
		return rc;
	w->atomic_value++;
	return 0;
}

static inline __attribute__((always_inline)) int
vb_fadd_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i)
{
	return vb_atomic_iter(w, s, i, false);
}

static inline __attribute__((always_inline)) int
vb_cswap_iter(struct vb_worker *w, struct vb_watch *s, uint64_t i)
{
	return vb_atomic_iter(w, s, i, true);
}

static bool vb_is_cswap(const struct vb_worker *w)
{
	return w->p->variant && !strcmp(w->p->variant, "cswap");
}

/* The variant picks the loop once per block, never inside it. */
static int vb_atomic_timed(void *ctx, struct pb_timed *t)
{
	if (vb_is_cswap(ctx))
		return vb_lat_timed(ctx, t, vb_cswap_iter, 1);
	return vb_lat_timed(ctx, t, vb_fadd_iter, 1);
}

static int vb_atomic_warmup(void *ctx, uint64_t size, uint64_t n)
{
	(void)size;
	if (vb_is_cswap(ctx))
		return vb_lat_warmup(ctx, n, vb_cswap_iter);
	return vb_lat_warmup(ctx, n, vb_fadd_iter);
}

const struct pb_test_ops vb_atomic_client = {
	.prepare = vb_prepare, .error = vb_error, .warmup = vb_atomic_warmup, .timed = vb_atomic_timed,
};
