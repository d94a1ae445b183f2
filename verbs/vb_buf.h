/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffer layouts (--buffers fresh | peer; docs/verbs.md "Buffer layouts"):
 * where each message of a size goes in the worker's data buffer.
 */
#ifndef VB_BUF_H
#define VB_BUF_H

#include "vb.h"

/* Bytes of each of the two regions (send/source, receive/target) of a worker's data buffer. */
uint64_t vb_buf_region(const struct vb_params *p);
/* After the data WR of a size is built: apply the layout to it (source address, slots). */
void vb_buf_prepare(struct vb_worker *w);
/* Environment record: buffers (requested), buffers_recorded (rows), buffer_slots, buffer_region_bytes. */
void vb_buf_env(FILE *f, const struct vb_params *p);
/* Point the data WR at slot k mod n (local and remote). */
static inline void vb_buf_slot(struct vb_worker *w, uint64_t k)
{
	uint64_t off = (k % w->slots.n) * w->slots.stride;

	w->sge.addr = w->slots.lbase + off;
	w->wr.wr.rdma.remote_addr = w->slots.rbase + off;
}
/* Point the receive WR at the next receive slot (before each ibv_post_recv); returns its post index. */
uint64_t vb_buf_recv_next(struct vb_worker *w);
/* A receive's wr_id: its post index (slot) above bit 16, the QP it was posted on below. */
#define VB_RECV_QP(wr_id) ((unsigned)((wr_id) & 0xffffu))
#define VB_RECV_SLOT(wr_id) ((uint64_t)(wr_id) >> 16)
/* Address of receive number i (0-based, in completion order) in this worker's buffer. */
uint8_t *vb_buf_recv_addr(const struct vb_worker *w, uint64_t i);

#endif
