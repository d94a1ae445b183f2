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
 *
 * --validate-live N (send_bw, --buffers fresh, pairs): the receiver is the server.  The client
 * fills each of its source slots with core's pattern of (flow, 0) when it prepares a size
 * (untimed); the server checks the landing slot of every Nth receive its stream's wait reaps
 * (vb_qp.c), before that receive is posted again, into its own recorder: the flow's series
 * PREFIX-...pbsoak-rx (checked and corrupt per bucket; messages 0).  Every message carries
 * the same bytes, so a slot still being filled by a later receive holds them too: no false
 * alarm.  After the stream the server writes its totals into the client's ctrl words
 * VB_CTRL_RX_FAULTS and VB_CTRL_RX_CHECKED (that one last, tagged with the stream), and the
 * client, having signalled its end, waits for them: its row says the corruption, as read_bw's.
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
	bool live;               /* send_bw's server: its stream's receives are being checked */
	bool rx_totals;          /* send_bw's client: the server checks; await its totals */
	uint64_t seen;           /* send_bw's server: receives reaped since the start */
	uint64_t start_ns;
	uint64_t fault_ns;       /* PAIRBENCH_SOAK_FAULT: flip a byte at the first check from then; 0 = none */
	double fault_s;          /* its SECONDS; < 0 = none for this flow */
	/* PAIRBENCH_SOAK_PAUSE=PAIR:SECONDS:DURATION (tests): the client of PAIR stops polling for
	 * DURATION s at its first poll SECONDS or later after the common start: a stalled flow */
	uint64_t pause_at_ns;    /* UINT64_MAX = none */
	double pause_s, pause_for_s;
};

/* ctrl words of send_bw's --validate-live totals (struct vb_ctrl in[]): checked, tagged with
 * the stream (stream << VB_DONE_SHIFT | checked), written last; corrupt << 32 | the first
 * corruption's ms after the common start (each saturating at 2^32 - 1). */
#define VB_CTRL_RX_CHECKED 14
#define VB_CTRL_RX_FAULTS 15

/* A soak's recorder for this worker when it measures a bandwidth stream, or the checks of the
 * server of send_bw with --validate-live (NULL otherwise). 0 or -ENOMEM. */
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
/* --validate-live, the source of the checked data (read_bw's server, send_bw's client): fill
 * its slots with the pattern (untimed): of (flow, slot), or with by_slot false of (flow, 0). */
void vb_soak_fill(struct vb_worker *w, uint64_t size, bool by_slot);
/* send_bw's server: its timed stream's checks begin (start_ns: the node's common start). */
void vb_soak_rx_begin(struct vb_worker *w, uint64_t start_ns);
/* ...and end: the recorder's series written, a corruption said on stderr. */
void vb_soak_rx_end(struct vb_worker *w);
/* send_bw's client: the server's totals (the ctrl words above) into the soak's counts. */
void vb_soak_rx_totals(struct vb_worker *w, uint64_t checked_word, uint64_t faults_word);

/* The pause hook's pause (out of line: it sleeps). */
void vb_soak_pause(struct vb_worker *w);

/*
 * One message's data checked: slot holds size bytes that should be core's pattern of (flow,
 * window); counted in s and in the recorder's bucket of now_ns.  The fault hook
 * (PAIRBENCH_SOAK_FAULT, pb_soak_fault) flips a byte of the slot first, once, from its time.
 */
static inline void vb_soak_check_data(struct vb_soak *s, uint8_t *slot, uint64_t size, unsigned flow,
				      uint64_t window, uint64_t now_ns)
{
	size_t bad;

	if (s->fault_ns && now_ns >= s->fault_ns) {
		slot[size / 2] ^= 0x5a;
		s->fault_ns = 0;
	}
	bad = pb_soak_pattern_check(slot, (size_t)size, flow, window);
	s->checked++;
	if (bad && !s->corrupt++)
		s->first_corrupt_ns = now_ns - s->start_ns;
	pb_soak_check_add(&s->rec, now_ns, 1, bad ? 1 : 0);
}

/* One checked message of read_bw's client (out of line: it reads size bytes). */
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
