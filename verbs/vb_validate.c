/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --validate: a separate, untimed pass.  For every size and a few
 * iterations, the data side fills its buffer with a pattern derived from
 * (pair, iteration, offset), moves it with the test's operation, and the
 * receiving side checks every byte after a completion (write/send: the
 * server, after a pair sync or the receive completion; read: the client
 * after the read completion; atomics: the client checks each fetched old
 * value and the server the final value).
 *
 * With --qps N, iteration k uses QP k mod N, and every size runs at least N
 * iterations, so every QP carries checked data.
 * The data moves through the addresses the layout (--buffers) gives the
 * timed loops: iteration k of a window test uses slot k mod n, a fresh
 * ping-pong sends from its receive region, receive i lands in receive slot
 * i mod n (vb_buf.c).
 *
 * --validate-selftest: the checker flips one byte of what it received
 * before checking; the run passes only when the check reports exactly
 * that byte, proving the check can fail.
 */
#include "vb_validate.h"

#include "pb_log.h"
#include "vb_buf.h"
#include "vb_qp.h"

#include <errno.h>
#include <string.h>

static uint8_t vb_pattern_byte(uint64_t off, unsigned pair, uint64_t iter)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ull ^ (iter + 1) * 0xbf58476d1ce4e5b9ull ^ (pair + 1) * 0x94d049bb133111ebull;

	x ^= x >> 31;
	return (uint8_t)(x ^ (x >> 17));
}

void vb_pattern_fill(uint8_t *b, uint64_t len, unsigned pair, uint64_t iter)
{
	for (uint64_t o = 0; o < len; o++)
		b[o] = vb_pattern_byte(o, pair, iter);
}

int64_t vb_pattern_check(const uint8_t *b, uint64_t len, unsigned pair, uint64_t iter)
{
	for (uint64_t o = 0; o < len; o++)
		if (b[o] != vb_pattern_byte(o, pair, iter))
			return (int64_t)o;
	return -1;
}

/* Post the prepared work request signalled and wait for its completion. */
static int vb_post_wait(struct vb_worker *w)
{
	int rc;

	w->wr.send_flags = IBV_SEND_SIGNALED | w->inline_flag;
	w->wr.wr_id = 1;
	if ((rc = vb_post_next(w)))  /* round robin over --qps: iteration k on QP k mod N */
		return rc;
	w->sig_pending = true;
	return vb_reap_pending(w);
}

/* Wait for one receive; *at = where it landed (its slot, from the receive's wr_id). */
static int vb_recv_wait(struct vb_worker *w, uint8_t **at)
{
	struct vb_watch wt;
	struct ibv_wc wc;
	int rc, ne;

	if (w->stray_recvs) {
		/* It came while our pair sync waited for its ctrl write (vb_ctrl_reap), already
		 * reposted.  One message per iteration, so never more than one. */
		if (w->stray_recvs > 1) {
			snprintf(w->error, sizeof(w->error),
				 "%llu receives arrived during one pair sync; validate sends one per iteration",
				 (unsigned long long)w->stray_recvs);
			return -EPROTO;
		}
		w->stray_recvs = 0;
		*at = vb_buf_recv_addr(w, VB_RECV_SLOT(w->stray_wr_id));
		return 0;
	}
	vb_watch_start(w, &wt, "a receive", false);
	while ((ne = ibv_poll_cq(w->cq, 1, &wc)) == 0) {
		if ((rc = vb_watch_spin(w, &wt, "a receive")))
			return rc;
	}
	if (ne < 0)
		return -EIO;
	if (wc.status != IBV_WC_SUCCESS)
		return vb_wc_error(w, &wc);
	if (!(wc.opcode & IBV_WC_RECV)) {
		snprintf(w->error, sizeof(w->error), "expected a receive completion, got opcode %d", (int)wc.opcode);
		return -EPROTO;
	}
	w->recvs_posted--;
	*at = vb_buf_recv_addr(w, VB_RECV_SLOT(wc.wr_id));
	return vb_post_recvs(w, VB_RECV_QP(wc.wr_id), 1);
}

/*
 * Check len bytes at b for (pair, iter); in the self-test flip one byte
 * first on iteration 0 and require exactly that offset to be reported.
 */
static int vb_check(struct vb_worker *w, uint8_t *b, uint64_t len, uint64_t iter, bool selftest,
		    unsigned *caught)
{
	uint64_t flip = len / 2;
	int64_t bad;

	if (selftest && iter == 0)
		b[flip] ^= 0x01;
	bad = vb_pattern_check(b, len, w->link, iter);
	if (selftest && iter == 0) {
		if (bad != (int64_t)flip) {
			snprintf(w->error, sizeof(w->error),
				 "self-test FAILED: byte %llu was flipped at %llu B but the check reported %lld",
				 (unsigned long long)flip, (unsigned long long)len, (long long)bad);
			return -EBADMSG;
		}
		(*caught)++;
		return 0;
	}
	if (bad >= 0) {
		snprintf(w->error, sizeof(w->error),
			 "data mismatch at %llu B, iteration %llu: byte %lld is 0x%02x, expected 0x%02x",
			 (unsigned long long)len, (unsigned long long)iter, (long long)bad, b[bad],
			 vb_pattern_byte((uint64_t)bad, w->link, iter));
		return -EBADMSG;
	}
	return 0;
}

static int vb_validate_atomic(struct vb_worker *w, uint64_t k, bool selftest, unsigned *caught)
{
	uint64_t old;
	int rc;

	if (w->wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		w->wr.wr.atomic.compare_add = k;
		w->wr.wr.atomic.swap = k + 1;
	}
	if ((rc = vb_post_wait(w)))
		return rc;
	memcpy(&old, w->buf, 8);
	if (selftest && k == 0)
		old ^= 1;
	if (old != k && !(selftest && k == 0)) {
		snprintf(w->error, sizeof(w->error), "atomic returned old value %llu at iteration %llu, expected %llu",
			 (unsigned long long)old, (unsigned long long)k, (unsigned long long)k);
		return -EBADMSG;
	}
	if (selftest && k == 0) {
		if (old == k) {
			snprintf(w->error, sizeof(w->error), "self-test FAILED: corrupted atomic result not detected");
			return -EBADMSG;
		}
		(*caught)++;
	}
	return 0;
}

/* One iteration of one size. */
static int vb_validate_one(struct vb_worker *w, uint64_t k, bool selftest, unsigned *caught)
{
	/* the slot of iteration k: its offset in both regions of both sides */
	uint64_t off = w->slots.slotted ? (k % w->slots.n) * w->slots.stride : 0;
	uint8_t *tx = w->buf + off, *rx = w->buf + w->region + off, *got = rx;
	bool client = w->side == VB_CLIENT;
	int rc = 0;

	if (w->slots.slotted)
		vb_buf_slot(w, k);
	switch (w->test->op) {
	case VB_OP_WRITE:
		if (client) {
			vb_pattern_fill((uint8_t *)(uintptr_t)w->sge.addr, w->size, w->link, k);
			rc = vb_post_wait(w);
		}
		if (!rc)
			rc = vb_ctrl_sync(w);
		if (!rc && !client)
			rc = vb_check(w, rx, w->size, k, selftest, caught);
		break;
	case VB_OP_SEND:
		if (client) {
			vb_pattern_fill((uint8_t *)(uintptr_t)w->sge.addr, w->size, w->link, k);
			rc = vb_post_wait(w);
		} else if (!(rc = vb_recv_wait(w, &got))) {
			rc = vb_check(w, got, w->size, k, selftest, caught);
		}
		break;
	case VB_OP_READ:
		if (!client)
			vb_pattern_fill(tx, w->size, w->link, k);
		rc = vb_ctrl_sync(w);
		if (!rc && client && !(rc = vb_post_wait(w)))
			rc = vb_check(w, (uint8_t *)(uintptr_t)w->sge.addr, w->size, k, selftest, caught);
		break;
	case VB_OP_ATOMIC:
		if (client)
			rc = vb_validate_atomic(w, k, selftest, caught);
		break;
	}
	/* Nobody refills a buffer before the other side is done with it. */
	return rc ? rc : vb_ctrl_sync(w);
}

int vb_validate_run(struct vb_worker *w, bool selftest)
{
	const struct vb_params *p = w->p;
	/* -n when given and below 8; else 8 (validation is not timed: no window). */
	uint64_t iters = p->c.iterations && p->c.iterations < 8 ? p->c.iterations : 8;
	/* Every QP of --qps carries at least one checked message of every size. */
	if (iters < w->nqp)
		iters = w->nqp;
	unsigned caught = 0;
	bool checker = (w->test->op == VB_OP_WRITE || w->test->op == VB_OP_SEND) ? w->side == VB_SERVER :
										       w->side == VB_CLIENT;
	int rc;

	for (size_t i = 0; i < p->c.sizes.n; i++) {
		if ((rc = vb_prepare_common(w, p->c.sizes.v[i])))
			return rc;
		for (uint64_t k = 0; k < iters; k++)
			if ((rc = vb_validate_one(w, k, selftest, &caught)))
				return rc;
		if (w->test->op == VB_OP_ATOMIC && w->side == VB_SERVER) {
			uint64_t v;

			memcpy(&v, w->buf + w->region, 8);
			if (v != iters) {
				snprintf(w->error, sizeof(w->error), "atomic target holds %llu after %llu operations",
					 (unsigned long long)v, (unsigned long long)iters);
				return -EBADMSG;
			}
		}
	}
	if (checker)
		pb_log_info("validate: pair %u %s%s%s: %zu size(s) x %llu iteration(s) over %u QP(s): %s", w->pair,
			    p->c.test, p->variant ? " " : "", p->variant ? p->variant : "", p->c.sizes.n,
			    (unsigned long long)iters, w->nqp,
			    selftest ? "self-test OK: every injected corruption was detected" : "data OK");
	return 0;
}
