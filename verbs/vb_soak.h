/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --soak in pairbench-verbs (docs/methodology.md "Soak"): the measuring side of a bandwidth
 * stream (write_bw, read_bw, send_bw; every --pattern client) counts its completions per
 * bucket with core/pb_soak.h's recorder; nothing of the soak's logic lives here, only
 * where the recorder of a worker comes from and goes to.
 *
 * --validate-live N (read_bw, --buffers fresh): the data a read brings is checked under load.
 * The server fills each slot s of its source region with core's pattern of (flow, s) when it
 * prepares a size (pb_soak_pattern_fill, untimed); the client, the receiver of the data, checks
 * the landing slot of every Nth message once the completion that retires it came
 * (pb_soak_pattern_check), counting checked and corrupt messages in the bucket of that poll's
 * clock value.  A slot reused by a later read before the check receives the same bytes (the
 * pattern depends on the slot only), so overlap gives no false alarm.
 */
#ifndef VB_SOAK_H
#define VB_SOAK_H

#include "vb.h"

#include "pb_soak.h"

/* A worker's soak: the recorder and, with --validate-live, the checks. */
struct vb_soak {
	struct pb_soak_rec rec;
	uint64_t check_every;    /* --validate-live N; 0 = off */
	uint64_t next_check;     /* index (0-based) of the next message to check */
	uint64_t checked, corrupt;
	uint64_t first_corrupt_ns;   /* after the common start */
	uint64_t start_ns;
	uint64_t fault_ns;       /* PAIRBENCH_SOAK_FAULT: flip a byte at the first check from then; 0 = none */
	double fault_s;          /* its SECONDS; < 0 = none for this flow */
	/* PAIRBENCH_SOAK_PAUSE=PAIR:SECONDS:DURATION (tests): the client of PAIR stops polling for
	 * DURATION s at its first poll SECONDS or later after the common start: a stalled flow */
	uint64_t pause_at_ns;    /* UINT64_MAX = none */
	double pause_s, pause_for_s;
};

/* A soak's recorder for this worker when it measures a bandwidth stream (NULL otherwise). 0 or -ENOMEM. */
int vb_soak_create(struct vb_worker *w);
/* Release it (NULL-safe). */
void vb_soak_destroy(struct vb_worker *w);
/* Untimed, before the start barrier: the point's series file (--series name or a temporary file). 0 or -errno. */
int vb_soak_open(struct vb_worker *w, uint64_t size);
/* The stream begins: bucket 0 at start_ns (the node's common start). */
void vb_soak_begin(struct vb_worker *w, uint64_t start_ns);
/*
 * After the stream: analyse the series into t->soak (end_ns: the stream's end; partial: it
 * stopped before the soak's end).  A corruption makes it -EIO with t->error saying so.
 * 0 or -errno with t->error set.
 */
int vb_soak_finish(struct vb_worker *w, struct pb_timed *t, bool partial);
/*
 * The stream failed at end_ns (a completion error, a dead peer): the buckets up to then go to
 * the series file, marked partial, so the soak shows when the flow stopped.  The error stays
 * the stream's.
 */
void vb_soak_abort(struct vb_worker *w, uint64_t end_ns);
/* --validate-live, the server of read_bw: fill its source slots with the pattern (untimed). */
void vb_soak_fill(struct vb_worker *w, uint64_t size);

/* The pause hook's pause (out of line: it sleeps). */
void vb_soak_pause(struct vb_worker *w);

/* One checked message (out of line: it reads size bytes). */
void vb_soak_check_one(struct vb_worker *w, uint64_t msg, uint64_t now_ns);

/*
 * --validate-live: check every Nth message among the first `done` completed ones, at now_ns
 * (a clock value the stream read anyway).  Timed loop: one compare unless a check is due.
 */
static inline void vb_soak_check_upto(struct vb_worker *w, uint64_t done, uint64_t now_ns)
{
	struct vb_soak *s = w->soak;

	while (s->next_check < done) {
		vb_soak_check_one(w, s->next_check, now_ns);
		s->next_check += s->check_every;
	}
}

#endif
