/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --pattern incast|fanout --probe write_lat|send_lat: the victim probe (issue 35 item 4).
 * One more flow, a half-round-trip ping-pong of VB_PROBE_BYTES, from the lowest node other
 * than the hub into the hub's adapter (the congested one): its client is one more worker of
 * that node, its server one more worker of the hub (member `pairs` of each; port --port +
 * --pairs, a slot no flow uses; flow id = the pattern's flow count).  At every point it is
 * measured twice, each time for the point's window: idle (every other flow of every node
 * waits in the cross-node start) and loaded (during the pattern's common window).  Its node
 * writes one row per point, scope=probe: the loaded statistics, the idle twin's p50, p99,
 * p99.9 and the inflation loaded / idle at each (docs/patterns.md "The victim probe").
 */
#ifndef VB_PROBE_H
#define VB_PROBE_H

#include "vb.h"

#include "pb_pattern.h"

#include <stdio.h>

#define VB_PROBE_BYTES 8  /* the probe's message: a small ping, as a victim's */

/*
 * --probe against the pattern pat (its flows) and this launch's node rank:
 * refuses what has no hub or no common window; sets p->probe_flows and, when this node runs
 * the probe's client or server, p->probe_here, p->probe_client and p->pat[p->pairs] (its
 * peer's name and address are filled from the host file like the flows').  0 or -EINVAL
 * after one error line.
 */
int vb_probe_place(struct vb_params *p, const struct pb_pattern *pat, int flows, long rank);

/*
 * The probe worker's own parameters: a copy of the node's with the probe's test (so the
 * buffers, queue sizes and option hash are a latency test's, the same on both ends).
 */
void vb_probe_params(struct vb_params *pp);

/*
 * The quiet moment before the start of every other worker of a --pattern run: with --probe
 * one more all-nodes meeting (vb_xstart_rounds) before the cross-node start, so that every
 * flow waits there while the probe measures its idle twin.  0 or -errno (w->error set).
 */
int vb_probe_quiet(struct vb_worker *w);

/*
 * The probe worker's life at every size of ep (the node's engine parameters): the same node
 * barriers as the engine's workers (quiet, start, collect), its idle twin in the quiet
 * moment, its loaded window from the start barrier to the node's deadline.  The client
 * writes one row per point into rows (no header); error rows for a failed point and the
 * sizes after it.  0 or -errno (w->error set; the node's group aborted).
 */
int vb_probe_run(struct vb_worker *w, const struct pb_engine_params *ep, FILE *rows);

#endif
