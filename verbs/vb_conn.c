/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connect and tear down a worker's pair with the connection method of --cm:
 * vb_cm.c (rdma_cm, the default) or vb_cm_tcp.c (a TCP socket, perftest's
 * default style), each behind its struct vb_cm_ops.  What they share lives
 * below them: vb_handshake.c (option hash, header), vb_res.c (verbs
 * resources, QP transitions).
 */
#include "vb_cm.h"

#include "pb_clock.h"
#include "vb_buf.h"
#include "vb_res.h"

#include <stdlib.h>
#include <unistd.h>

static const struct vb_cm_ops *const vb_cm_methods[] = {
	[VB_CM_RDMA] = &vb_cm_rdma_ops,
	[VB_CM_TCP] = &vb_cm_tcp_ops,
};

int vb_cm_connect(struct vb_worker *w)
{
	int rc;

	/* Both sides size their buffers alike; the header check relies on it. */
	w->region = vb_buf_region(w->p);
	w->nqp = (unsigned)w->p->qps;
	srand48((long)(getpid() ^ pb_clock_now_ns()));
	rc = vb_cm_methods[w->p->cm]->connect(w);
	if (!rc)
		w->shared->w[w->member].inline_bytes = (int32_t)w->max_inline;
	return rc;
}

void vb_cm_teardown(struct vb_worker *w)
{
	const struct vb_cm_ops *cm = vb_cm_methods[w->p->cm];

	if (cm->disconnect)
		cm->disconnect(w);
	vb_res_destroy(w);
	if (cm->close)
		cm->close(w);
}
