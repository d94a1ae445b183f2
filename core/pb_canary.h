/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The host canary (docs/methodology.md "Host canary"): a short probe of the
 * host's own speed that involves no adapter, taken by every executable when it
 * writes its environment record, so that a comparison can tell "the host was
 * slower" from "the adapter got worse".
 *
 *   cpu_loop_ns  time per iteration of a fixed CPU-bound loop (a dependent
 *                chain of integer multiply-adds), the median of
 *                PB_CANARY_LOOPS timed runs of PB_CANARY_ITERATIONS each;
 *   max_gap_us   the longest gap between two consecutive clock reads in a
 *                spin of PB_CANARY_SPIN_MS: the host took the CPU away;
 *   cpu_share    the fraction of that spin's wall time the process ran: 1 minus
 *                the sum of the gaps longer than PB_CANARY_GAP_NS over the spin.
 *
 * Each loop run is short (~0.3 ms, under a scheduler time slice), so
 * cpu_loop_ns is the speed of the CPU while the process runs (clock rate, a
 * busy SMT sibling); cpu_share is how much of the CPU it got (other
 * processes, a hypervisor).  A host can be slow either way.
 */
#ifndef PB_CANARY_H
#define PB_CANARY_H

#include <stdint.h>
#include <stdio.h>

#define PB_CANARY_LOOPS 7
#define PB_CANARY_ITERATIONS 200000u
#define PB_CANARY_SPIN_MS 30
#define PB_CANARY_GAP_NS 10000u

struct pb_canary {
	double cpu_loop_ns;                    /* median of loop_ns[] */
	double loop_ns[PB_CANARY_LOOPS];       /* each run's time per iteration */
	double max_gap_us;                     /* longest gap in the spin */
	double cpu_share;                      /* 1 - (sum of gaps > PB_CANARY_GAP_NS) / spin */
	uint64_t spin_reads;                   /* clock reads in the spin */
	int cpu;                               /* where it ran (sched_getcpu); -1 unknown */
};

/* Measure the canary now (about 32 ms).  Always succeeds. */
void pb_canary_measure(struct pb_canary *c);

/* The "host_canary" object of the environment record, then ",\n". */
void pb_canary_json(FILE *f, const struct pb_canary *c);

#endif
