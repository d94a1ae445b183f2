/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Buffer layouts (--buffers, docs/verbs.md "Buffer layouts").  A worker's
 * data buffer is two regions: [0, R) send/source, [R, 2R) receive/target.
 *
 *   peer   (perftest's layout): write and send post from the send region,
 *          into the peer's receive region; read lands in the receive region
 *          from the peer's send region; every message of a window uses the
 *          same addresses, every receive lands at the start of the receive
 *          region.
 *   fresh  (the default): a ping-pong sends from its receive region, i.e.
 *          what the peer wrote last (one buffer per side: every message
 *          rewrites what the peer reads next); a window test gives each of
 *          the window's messages its own slot, locally and at the peer
 *          (slot k mod n, n = min(--tx-depth, VB_SLOTS_MAX_BYTES / stride),
 *          stride = largest size rounded up to 64 B), and posts receive i
 *          into slot i mod n.
 *
 * Tests without a layout choice (read_lat, atomic_lat: one outstanding
 * operation, nothing sent back) keep the peer layout and record no layout.
 */
#include "vb_buf.h"

/* Most bytes of slots per region: a window of 128 x 64 KiB; larger messages get fewer slots. */
#define VB_SLOTS_MAX_BYTES (8ull << 20)

static bool vb_buf_fresh(const struct vb_params *p)
{
	return p->buffers == PB_BUF_FRESH && p->test_desc->info.buffers;
}

static uint64_t vb_buf_stride(const struct vb_params *p)
{
	return (p->max_size + 63) / 64 * 64;
}

/* Slots per region: 1 unless fresh and the test has a window. */
static uint32_t vb_buf_nslots(const struct vb_params *p)
{
	uint64_t n = VB_SLOTS_MAX_BYTES / vb_buf_stride(p);

	if (!vb_buf_fresh(p) || !p->test_desc->info.window)
		return 1;
	if (n > p->tx_depth)
		n = p->tx_depth;
	return n ? (uint32_t)n : 1;
}

uint64_t vb_buf_region(const struct vb_params *p)
{
	uint32_t n = vb_buf_nslots(p);
	uint64_t bytes = n > 1 ? n * vb_buf_stride(p) : p->max_size;

	return (bytes + 4095) / 4096 * 4096;
}

void vb_buf_prepare(struct vb_worker *w)
{
	uintptr_t tx = (uintptr_t)w->buf, rx = tx + w->region;
	bool fresh = vb_buf_fresh(w->p);

	w->slots.slotted = fresh && w->test->info.window;
	w->slots.n = vb_buf_nslots(w->p);
	w->slots.stride = vb_buf_stride(w->p);
	switch (w->test->op) {
	case VB_OP_WRITE:
	case VB_OP_SEND:
		/* Streams post from send-region slots; a fresh ping-pong sends what it received. */
		w->slots.lbase = tx;
		w->slots.rbase = w->remote.addr + w->remote.len / 2;
		if (fresh)
			w->sge.addr = rx;
		break;
	case VB_OP_READ:
		w->slots.lbase = rx;
		w->slots.rbase = w->remote.addr;
		break;
	case VB_OP_ATOMIC:
		w->slots.slotted = false;
		w->slots.n = 1;
		break;
	}
}

uint64_t vb_buf_recv_next(struct vb_worker *w)
{
	uint64_t i = w->slots.recv_next++;

	if (w->slots.n > 1) {
		w->rsge.addr = (uintptr_t)w->buf + w->region + (i % w->slots.n) * w->slots.stride;
		w->rsge.length = (uint32_t)w->slots.stride;
	}
	return i;
}

uint8_t *vb_buf_recv_addr(const struct vb_worker *w, uint64_t i)
{
	return w->buf + w->region + (i % w->slots.n) * w->slots.stride;
}

void vb_buf_env(FILE *f, const struct vb_params *p)
{
	fprintf(f, "  \"buffers\": \"%s\",\n  \"buffers_recorded\": \"%s\",\n", pb_buffers_names[p->buffers],
		p->test_desc->info.buffers ? pb_buffers_names[p->buffers] : "");
	fprintf(f, "  \"buffer_slots\": %u,\n  \"buffer_region_bytes\": %llu,\n", vb_buf_nslots(p),
		(unsigned long long)vb_buf_region(p));
}
