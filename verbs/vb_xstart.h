/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --pattern: all flows start together across nodes, and how far apart they started is
 * measured (vb_xstart.c).  Every worker of a pattern run calls vb_xstart_before in the
 * point's quiet moment before the start barrier (nobody moves data then).
 */
#ifndef VB_XSTART_H
#define VB_XSTART_H

#include "vb.h"

/*
 * The cross-node start of one point: rounds of (pair sync, node barrier), then the clock
 * offset to the peer (best of VB_XSTART_PINGS ping-pongs over the ctrl words) and the
 * server's start sent to its client, which computes w->xs_offset_ns (this node's start
 * minus the peer node's, on one clock) and w->xs_bound_ns.  0 or -errno (w->error set).
 */
int vb_xstart_before(struct vb_worker *w);

/*
 * Only the rounds of (pair sync, node barrier) of the cross-node start: a barrier of every
 * node of the pattern (vb_probe.c meets once more this way before its idle twin).  *start
 * receives the node's release of the last round.  0 or -errno (w->error set).
 */
int vb_xstart_rounds(struct vb_worker *w, uint64_t *start);

/*
 * pb_test_ops.timed of a pattern run's workers: the test's own timed op (w->xs_timed), then
 * the client flags its row cross_node_start when |xs_offset_ns| is above
 * VB_XSTART_FLAG_FRACTION of its window, and records the offset for --env-json.
 */
int vb_xstart_timed(void *tctx, struct pb_timed *t);

#endif
