/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The arithmetic of the cross-node start (vb_xstart.c), pure so that it is unit-tested
 * (tests/unit/test_pattern_xstart.c).  Clocks are pb_clock_now_ns() values of two nodes.
 */
#ifndef VB_XSMATH_H
#define VB_XSMATH_H

#include <stdbool.h>
#include <stdint.h>

/* Fraction of a row's window beyond which its node's start offset is flagged. */
#define VB_XSTART_FLAG_FRACTION 0.025

/*
 * One ping: we wrote at t1 (our clock), the peer answered with its clock t2, we read it
 * at t3.  theta = t2 - (t1 + t3) / 2 = the peer's clock minus ours, exact when both ways
 * take as long, and in any case within +-bound = (t3 - t1) / 2 (rounded up).
 */
static inline void vb_xs_ping(uint64_t t1, uint64_t t2, uint64_t t3, int64_t *theta, int64_t *bound)
{
	uint64_t mid = t1 / 2 + t3 / 2 + (t1 % 2 + t3 % 2) / 2;

	*theta = (int64_t)(t2 - mid);
	*bound = (int64_t)((t3 - t1) / 2 + 1);
}

/*
 * How much later our node started than the peer's (negative: earlier), on our clock:
 * our start minus the peer's start moved to our clock (start_peer - theta).
 */
static inline int64_t vb_xs_offset(uint64_t start_ours, uint64_t start_peer, int64_t theta)
{
	return (int64_t)(start_ours - start_peer) + theta;
}

/* The row's flag: |offset| above VB_XSTART_FLAG_FRACTION of its window (start .. end). */
static inline bool vb_xs_flagged(int64_t offset, uint64_t start_ns, uint64_t end_ns)
{
	int64_t mag = offset < 0 ? -offset : offset;

	return end_ns > start_ns && (double)mag > VB_XSTART_FLAG_FRACTION * (double)(end_ns - start_ns);
}

#endif
