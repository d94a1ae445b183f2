/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The latency harness shared by write_lat, read_lat, send_lat and atomic_lat
 * (and the loaded_lat probe): the timed loop, its warm-up, and the post /
 * completion helpers.  A test file supplies one *iteration* function:
 *
 *     static inline __attribute__((always_inline)) int
 *     iter(struct vb_worker *w, struct vb_watch *s, uint64_t i);
 *
 * which posts and waits until iteration i is complete (0 or a negative errno
 * with w->error set).  The loop is always_inline and called with a constant
 * iteration function, rtt divisor and mode, so each test gets its own
 * specialised loop with the iteration inlined: no call through a pointer of
 * ours, no option check, allocation or printing inside it (`objdump -d` of
 * pairbench-verbs: the only indirect calls in the *_lat_timed functions are
 * libibverbs' own ibv_post_send / ibv_poll_cq dispatch into the provider).
 *
 * Timing: one clock read per iteration (as perftest does).  Stamp t0 is the
 * block's start_ns, stamp t_i is taken right after iteration i; the sample is
 * (t_i - t_{i-1}) / rtt_div: one whole iteration, post + completion + loop
 * bookkeeping, back to back.  end_ns is the last stamp, so the samples of a
 * block add up to its window.  The warm-up reads no clock.
 */
#ifndef VB_LAT_H
#define VB_LAT_H

#include "vb_buf.h"
#include "vb_ops.h"
#include "vb_qp.h"

#include "pb_clock.h"
#include "pb_hist.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

/* Post the pre-built work request as it is, on the next QP of the round robin (--qps). 0 or -errno. */
static inline int vb_lat_post(struct vb_worker *w)
{
	return vb_post_next(w);
}

/*
 * Post with every --cq-mod-th request of each QP signalled (ping-pong write
 * and send; with one QP every --cq-mod-th request); if the previous signalled
 * request is still unreaped (one CQ for all QPs), reap it first.  0 or -errno.
 */
static inline int vb_lat_post_moderated(struct vb_worker *w)
{
	bool sig = vb_next_signalled(w, w->p->cq_mod);
	int rc;

	w->posts++;
	if (sig && w->sig_pending && (rc = vb_reap_pending(w)))
		return rc;
	w->sig_pending |= sig;
	w->wr.send_flags = w->inline_flag | (sig ? IBV_SEND_SIGNALED : 0);
	return vb_lat_post(w);
}

/* Spin until the one outstanding (signalled) request completes. 0 or -errno. */
static inline int vb_lat_wait_cqe(struct vb_worker *w, struct vb_watch *s, const char *what)
{
	struct ibv_wc wc;
	int ne, rc;

	while ((ne = ibv_poll_cq(w->cq, 1, &wc)) == 0)
		if ((rc = vb_watch_spin(w, s, what)))
			return rc;
	if (ne < 0) {
		snprintf(w->error, sizeof(w->error), "ibv_poll_cq failed");
		return -EIO;
	}
	return wc.status == IBV_WC_SUCCESS ? 0 : vb_wc_error(w, &wc);
}

enum vb_lat_mode { VB_LAT_WARMUP, VB_LAT_COUNT, VB_LAT_DURATION, VB_LAT_TARGET };

/*
 * The loop.  WARMUP: n iterations, no clock; COUNT: n samples into
 * t->samples_ns; DURATION (-D): into t->hist until a stamp reaches
 * t->end_by_ns; TARGET (the default): into t->samples_ns until a stamp
 * reaches t->end_by_ns with at least t->min_iterations samples, or the
 * t->iterations samples there is room for are taken.
 * *done = iterations completed.  0 or -errno.
 */
static inline __attribute__((always_inline)) int
vb_lat_loop(struct vb_worker *w, const enum vb_lat_mode mode,
	    int (*const iter)(struct vb_worker *, struct vb_watch *, uint64_t),
	    const unsigned rtt_div, struct pb_timed *t, uint64_t n, uint64_t *done)
{
	struct vb_watch s;
	uint64_t *samples = mode == VB_LAT_COUNT || mode == VB_LAT_TARGET ? t->samples_ns : NULL;
	uint64_t i, now, prev = mode == VB_LAT_WARMUP ? 0 : t->start_ns;
	int rc = 0;

	/* Each completed iteration is progress: the per-wait deadline counts from the last one. */
	vb_watch_start(w, &s, "the peer", false);
	for (i = 0; mode == VB_LAT_DURATION || mode == VB_LAT_TARGET || i < n; i++) {
		s.progress = i;
		if ((rc = iter(w, &s, i)))
			break;
		/* Also every 1024 iterations: an iteration may complete without one empty
		 * poll (rxe can finish a loopback read inside the post), and then the
		 * waits inside it never check signals, abort or the heartbeat. */
		if ((++s.spins & 1023) == 0 && (rc = vb_watch_check(w, &s)))
			break;
		if (mode == VB_LAT_WARMUP)
			continue;
		now = pb_clock_now_ns();
		if (mode == VB_LAT_COUNT || mode == VB_LAT_TARGET)
			samples[i] = (now - prev) / rtt_div;
		else
			pb_hist_add(t->hist, (now - prev) / rtt_div);
		prev = now;
		if (mode == VB_LAT_DURATION && now >= t->end_by_ns) {
			i++;
			break;
		}
		if (mode == VB_LAT_TARGET &&
		    ((now >= t->end_by_ns && i + 1 >= t->min_iterations) || i + 1 >= t->iterations)) {
			i++;
			break;
		}
	}
	if (mode != VB_LAT_WARMUP)
		t->end_ns = prev;
	*done = i;
	return rc;
}

/* Close a latency stream: reap a pending signalled request, announce the count. */
static inline int vb_lat_close(struct vb_worker *w, uint64_t done)
{
	int rc = vb_reap_pending(w);

	return rc ? rc : vb_stream_signal(w, done);
}

/* The timed block of a latency test (engine's timed()). 0 or -errno. */
static inline __attribute__((always_inline)) int
vb_lat_timed(struct vb_worker *w, struct pb_timed *t,
	     int (*const iter)(struct vb_worker *, struct vb_watch *, uint64_t),
	     const unsigned rtt_div)
{
	uint64_t done = 0;
	int rc;

	w->stream_no++;
	t->start_ns = pb_clock_now_ns();
	if (t->end_by_ns && t->samples_ns)
		rc = vb_lat_loop(w, VB_LAT_TARGET, iter, rtt_div, t, 0, &done);
	else if (t->end_by_ns)
		rc = vb_lat_loop(w, VB_LAT_DURATION, iter, rtt_div, t, 0, &done);
	else
		rc = vb_lat_loop(w, VB_LAT_COUNT, iter, rtt_div, t, t->iterations, &done);
	if (w->role->probe)  /* the loaded pairs stream until the probe is done */
		atomic_store(&w->shared->loaded_stop, (uint32_t)w->loaded_point);
	if (rc || (rc = vb_lat_close(w, done)))
		return rc;
	t->done = done;
	t->has_lat = true;
	if (w->inline_flag)
		vb_flag(t, "inline");
	return 0;
}

/* The untimed warm-up of a latency test (engine's warmup()). 0 or -errno. */
static inline __attribute__((always_inline)) int
vb_lat_warmup(struct vb_worker *w, uint64_t n,
	      int (*const iter)(struct vb_worker *, struct vb_watch *, uint64_t))
{
	uint64_t done = 0;
	int rc;

	if (!n)
		return 0;
	w->stream_no++;
	rc = vb_lat_loop(w, VB_LAT_WARMUP, iter, 1, NULL, n, &done);
	return rc ? rc : vb_lat_close(w, done);
}

#endif
