/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs layer's side of a --pattern: the flows of core/pb_pattern.h
 * that touch one node, as that node's workers.  One launch per node (rank i
 * of mpirun/srun = line i of the host file = node i); --pairs R is the node's
 * slots.  A worker is the client (side A: measures, sends) or the server
 * (side B) of one flow; its slot is its place on the node.  The server of a
 * flow listens on --port + its slot (a node's slots are in one flow at most,
 * so its ports are distinct), the client connects there.  Pure, no verbs:
 * tests/unit/test_pattern_layers.c holds it equal to the MPI layer's
 * (mpi/mp_pattern.c) for every pattern.
 */
#ifndef VB_PATTERN_H
#define VB_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#include "pb_pattern.h"

struct vb_pattern_worker {
	int flow;                  /* flow id: the index in pb_pattern_flows' list (rows' pair_id) */
	bool client;               /* side A of the flow */
	int slot;                  /* this node's slot 0..R-1 */
	int peer_node, peer_slot;  /* the other end */
	int port_offset;           /* rdma_cm port = --port + this: the server's slot */
};

/*
 * The workers of node `node` (0..nodes-1) for pattern p's current round on
 * nodes x per_node slots, in slot order; at most max written to out.  The
 * number of workers (0: the node is idle in this round), or a negative errno
 * with err saying why (the pattern does not fit, more than max workers).
 * *flows (may be NULL) receives the pattern's flow count.
 */
int vb_pattern_node(const struct pb_pattern *p, int nodes, int per_node, int node,
		    struct vb_pattern_worker *out, int max, int *flows, char *err, size_t len);

#endif
