/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cross-node start of --pattern (vb_xstart.h).  pairbench-verbs has no communicator:
 * the flows themselves carry the start.  Each node has passed its barrier; then D times
 * (D = the diameter of the flows' node graph, core/pb_pattern.c pb_pattern_meet_rounds)
 * every worker meets its flow's other end (pair sync) and its node's barrier.  After that
 * every node of the pattern has arrived: a barrier of all nodes, released on each node at
 * its last node barrier (its "start": shm_sync_release_ns, the same value for every worker
 * of the node).
 *
 * Measured, per flow and point: the clock offset theta = server clock - client clock, from
 * VB_XSTART_PINGS ping-pongs over the ctrl words (client writes seq at t1, the server
 * answers with its clock t2, the client reads it at t3: theta = t2 - (t1 + t3) / 2 within
 * +-(t3 - t1) / 2; the ping with the shortest round trip is kept), then the server's start
 * S_s (ctrl word 6, followed by a pair sync).  The client's node started
 * offset = S_c - (S_s - theta) after the server's node (negative: before), within the
 * bound.  After this both sides pass one more pair sync and the engine's start barrier:
 * the same few steps on every node.
 */
#include "vb_xstart.h"

#include "pb_clock.h"
#include "pb_flags.h"
#include "vb_qp.h"
#include "vb_xsmath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VB_XSTART_PINGS 8
#define VB_W_PING 4
#define VB_W_PONG 5          /* the peer's clock; then VB_W_PONG_SEQ = the ping's number */
#define VB_W_PONG_SEQ 7
#define VB_W_START 6
#define VB_W_WINDOW 8        /* 8..12: start, end, bytes, messages, done */
#define VB_W_WINDOW_SEQ 13

/* Wait until ctrl word `word` satisfies (value & mask) == want; *value gets it. */
static int vb_xstart_wait(struct vb_worker *w, unsigned word, uint64_t mask, uint64_t want, uint64_t *value,
			  const char *what)
{
	struct vb_watch wt;
	int rc = 0;

	vb_watch_start(w, &wt, what, VB_WATCH_PEER);
	while (((*value = w->ctrl->in[word]) & mask) != want) {
		if ((rc = vb_watch_spin(w, &wt, what)))
			return rc;
	}
	return vb_watch_end(w, &wt);
}

/* Client: theta (server - client) of the best ping, its bound (half its round trip). */
static int vb_xstart_ping(struct vb_worker *w, int64_t *theta, int64_t *bound)
{
	uint64_t best = UINT64_MAX;
	int rc;

	for (int i = 0; i < VB_XSTART_PINGS; i++) {
		uint64_t seq = ++w->xs_seq, t1 = pb_clock_now_ns(), t2, t3, v;

		if ((rc = vb_ctrl_write(w, VB_W_PING, seq)) ||
		    (rc = vb_xstart_wait(w, VB_W_PONG_SEQ, ~0ull, seq, &v, "the peer (clock ping)")))
			return rc;
		t3 = pb_clock_now_ns();
		t2 = w->ctrl->in[VB_W_PONG];  /* written before the sequence word, on the same QP */
		if (t3 - t1 < best) {
			best = t3 - t1;
			vb_xs_ping(t1, t2, t3, theta, bound);
		}
	}
	return 0;
}

/* Server: answer each ping with our clock, then the ping's number (the client waits for it). */
static int vb_xstart_pong(struct vb_worker *w)
{
	int rc;

	for (int i = 0; i < VB_XSTART_PINGS; i++) {
		uint64_t seq = ++w->xs_seq, v;

		if ((rc = vb_xstart_wait(w, VB_W_PING, ~0ull, seq, &v, "the peer (clock ping)")) ||
		    (rc = vb_ctrl_write(w, VB_W_PONG, pb_clock_now_ns())) ||
		    (rc = vb_ctrl_write(w, VB_W_PONG_SEQ, seq)))
			return rc;
	}
	return 0;
}

/*
 * The pair sync of a round (the ctrl channel's: word 0, vb_ctrl_sync's protocol), but a worker
 * whose peer has not come within VB_XSTART_SPIN_NS naps VB_XSTART_NAP_NS per look: in a round a
 * peer is often held up elsewhere (its node's barrier, the victim probe's idle twin), and a
 * spinning waiter takes the CPU from those it waits for on an oversubscribed node.  A nap
 * delays this node's start by at most one nap; the offsets measured after the rounds say by
 * how much the nodes started apart, whatever the cause.
 */
#define VB_XSTART_SPIN_NS 1000000u
#define VB_XSTART_NAP_NS 20000

static int vb_xstart_sync(struct vb_worker *w)
{
	uint64_t step = ++w->ctrl_step, t0 = pb_clock_now_ns();
	struct vb_watch wt;
	bool nap = false;
	int rc = vb_ctrl_write(w, 0, step);

	if (rc)
		return rc;
	vb_watch_start(w, &wt, "the peer (pair sync)", VB_WATCH_PEER);
	while (w->ctrl->in[0] < step) {
		if ((rc = vb_watch_spin(w, &wt, "the peer (pair sync)")))
			return rc;
		if (!nap && (wt.spins & 255) == 0)
			nap = pb_clock_now_ns() - t0 > VB_XSTART_SPIN_NS;
		if (nap)
			nanosleep(&(struct timespec){ .tv_nsec = VB_XSTART_NAP_NS }, NULL);
	}
	return vb_watch_end(w, &wt);
}

int vb_xstart_rounds(struct vb_worker *w, uint64_t *start)
{
	int rc = 0;

	for (int r = 0; r < w->p->pat_meet_rounds; r++) {
		if ((rc = vb_xstart_sync(w)))
			return rc;
		rc = shm_sync_barrier(w->sync, w->member, w->timeout_ns, NULL);
		/* the node's release (its last member's arrival), the same for all its workers */
		*start = shm_sync_release_ns(w->sync);
		if (rc) {
			snprintf(w->error, sizeof(w->error), "cross-node start, round %d of %d: node barrier: %s",
				 r + 1, w->p->pat_meet_rounds, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

int vb_xstart_before(struct vb_worker *w)
{
	uint64_t start = 0, theirs = 0;
	int64_t theta = 0, bound = 0;
	int rc = vb_xstart_rounds(w, &start);

	if (rc)
		return rc;
	if (w->side == VB_CLIENT)
		rc = vb_xstart_ping(w, &theta, &bound);
	else
		rc = vb_xstart_pong(w);
	if (!rc && w->side == VB_SERVER)
		rc = vb_ctrl_write(w, VB_W_START, start);
	if (!rc)
		rc = vb_ctrl_sync(w);  /* the start word has arrived before the sync's */
	if (rc || w->side == VB_SERVER)
		return rc;
	theirs = w->ctrl->in[VB_W_START];
	w->xs_offset_ns = vb_xs_offset(start, theirs, theta);
	w->xs_bound_ns = bound;
	w->xs_theta_ns = theta;
	return 0;
}

/* Client: its window, moved to the server's clock, into the server's words 8..12, then 13. */
static int vb_xstart_send(struct vb_worker *w, const struct pb_timed *t)
{
	const uint64_t v[5] = { t->start_ns + (uint64_t)w->xs_theta_ns, t->end_ns + (uint64_t)w->xs_theta_ns,
				t->bytes, t->messages, t->done };
	int rc = 0;

	for (unsigned i = 0; i < 5 && !rc; i++)
		rc = vb_ctrl_write(w, VB_W_WINDOW + i, v[i]);
	return rc ? rc : vb_ctrl_write(w, VB_W_WINDOW_SEQ, ++w->xs_points);
}

/*
 * The target (p->pat_target): the flow's numbers are its client's, on this node's clock
 * (the client added theta): the row of an incoming flow, and the node's aggregate over them
 * on one clock (its start_skew_us is the flows' start spread across the sender nodes).
 */
static int vb_xstart_receive(struct vb_worker *w, struct pb_timed *t)
{
	uint64_t seq = ++w->xs_points, v;
	int rc = vb_xstart_wait(w, VB_W_WINDOW_SEQ, ~0ull, seq, &v, "the peer's window (incoming flow)");

	if (rc)
		return rc;
	t->start_ns = w->ctrl->in[VB_W_WINDOW];
	t->end_ns = w->ctrl->in[VB_W_WINDOW + 1];
	t->bytes = w->ctrl->in[VB_W_WINDOW + 2];
	t->messages = w->ctrl->in[VB_W_WINDOW + 3];
	t->done = w->ctrl->in[VB_W_WINDOW + 4];
	t->has_bw = true;
	t->has_lat = false;
	pb_flags_merge(t->flags, sizeof(t->flags), "clock_offset_corrected");
	return 0;
}

int vb_xstart_timed(void *tctx, struct pb_timed *t)
{
	struct vb_worker *w = tctx;
	struct vb_worker_report *rep = &w->shared->w[w->member];
	int rc = w->xs_timed(tctx, t);
	int64_t off = w->xs_offset_ns, mag = off < 0 ? -off : off;

	if (!rc && w->side == VB_SERVER && w->p->pat_target)
		return vb_xstart_receive(w, t);
	if (rc || w->side != VB_CLIENT)
		return rc;
	if ((rc = vb_xstart_send(w, t)))
		return rc;
	rep->xs_offset_ns = off;
	rep->xs_bound_ns = w->xs_bound_ns;
	rep->xs_theta_ns = w->xs_theta_ns;
	if (mag > (rep->xs_offset_max_ns < 0 ? -rep->xs_offset_max_ns : rep->xs_offset_max_ns))
		rep->xs_offset_max_ns = off;
	rep->xs_points++;
	if (vb_xs_flagged(off, t->start_ns, t->end_ns))
		pb_flags_merge(t->flags, sizeof(t->flags), "cross_node_start");
	return 0;
}
