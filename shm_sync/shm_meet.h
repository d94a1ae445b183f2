/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's "how processes meet" (struct pb_meet_ops) over a shm_sync
 * segment: every process of the node is a member of the barrier; measuring
 * processes publish into a per-pair area of the segment's extra space
 * (result, latency samples, histogram); the leader reads them after a
 * barrier.  Used by pairbench-verbs (forked workers on one node).
 */
#ifndef SHM_MEET_H
#define SHM_MEET_H

#include "pb_engine.h"
#include "shm_sync.h"

struct shm_meet {
	struct shm_sync *sync;
	unsigned member;
	unsigned pairs;
	uint64_t max_samples;
	uint64_t timeout_ns;
	uint32_t point;          /* points collected so far */
	double *pooled;          /* leader: pooled samples, allocated on first use */
};

/* Extra bytes a segment needs for pairs × max_samples. */
size_t shm_meet_extra_bytes(unsigned pairs, uint64_t max_samples);

/* Initialise a meet context for member (the segment must have shm_meet_extra_bytes() extra). */
void shm_meet_init(struct shm_meet *m, struct shm_sync *sync, unsigned member, unsigned pairs,
		   uint64_t max_samples, uint64_t timeout_ns);

/* Free what the context allocated (not the segment). NULL is accepted. */
void shm_meet_cleanup(struct shm_meet *m);

extern const struct pb_meet_ops shm_meet_ops;

#endif
