/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection methods (--cm): how the two sides of a pair meet, exchange their
 * headers (vb_handshake.h) and bring their QPs to RTS.  Each method file
 * exports one table; vb_conn.c picks the run's and is the only caller.
 */
#ifndef VB_CM_H
#define VB_CM_H

#include "vb.h"

struct vb_cm_ops {
	/* Connect (client) or accept (server) with w->region and w->nqp set; the
	 * resources come from vb_res_create().  0 or -errno, w->error set. */
	int (*connect)(struct vb_worker *w);
	/* Teardown, before the resources are destroyed (NULL: nothing to do). */
	void (*disconnect)(struct vb_worker *w);
	/* Teardown, after the resources are destroyed (NULL: nothing to do). */
	void (*close)(struct vb_worker *w);
};

/* A client whose connection took longer than this says so (a warning): a lost request
 * waiting out a retransmission timer otherwise looks like a slow or hung run. */
#define VB_SLOW_CONNECT_NS 5000000000ull

extern const struct vb_cm_ops vb_cm_rdma_ops;  /* vb_cm.c: rdma_cm (default) */
extern const struct vb_cm_ops vb_cm_tcp_ops;   /* vb_cm_tcp.c: a TCP socket, QP transitions by us */

/* vb_conn.c: connect (client) or accept (server) the worker's pair with --cm. 0 or -errno, w->error set. */
int vb_cm_connect(struct vb_worker *w);
/* Disconnect and destroy everything vb_cm_connect() made, however far it got. */
void vb_cm_teardown(struct vb_worker *w);

#endif
