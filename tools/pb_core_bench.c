/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pb-core-bench: the cost of pairbench's own machinery on this machine.
 *   - clock: cost of one pb_clock_now_ns() read, resolution, smallest step
 *   - barrier: for 2..N forked processes, the time of one shm_sync barrier
 *     round (median and p99 over rounds, measured by member 0) and the start
 *     skew (latest - earliest exit) of each round.
 * Output: CSV on stdout (one row per process count), a note on stderr.
 * A benchmark, not a test: nothing here is asserted.
 */
#define _GNU_SOURCE
#include "pb_clock.h"
#include "pb_log.h"
#include "pb_opts.h"
#include "pb_stats.h"
#include "shm_sync.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

struct bench_params {
	struct pb_u64_list procs;
	uint64_t rounds;
	double timeout_s;
	bool help;
};

static const struct pb_opt bench_opts[] = {
	{ "procs", 'p', PB_OPT_U64_LIST, offsetof(struct bench_params, procs), "2,3,4,5,6,7,8", 2, 64,
	  NULL, "LIST", "process counts to measure" },
	{ "rounds", 'n', PB_OPT_U64, offsetof(struct bench_params, rounds), "20000", 10, 1e8, NULL,
	  "N", "barrier rounds per process count" },
	{ "timeout", 0, PB_OPT_DOUBLE, offsetof(struct bench_params, timeout_s), "30", 0.1, 3600,
	  NULL, "SEC", "barrier deadline" },
	{ "help", 'h', PB_OPT_FLAG, offsetof(struct bench_params, help), NULL, 0, 0, NULL, NULL,
	  "this help" },
};

/* Per-member record in the slot: exit time of every round is too much; keep skews on member 0. */
struct bench_slot {
	uint64_t rounds_done;
};

static int bench_member(struct shm_sync *s, unsigned me, uint64_t rounds, uint64_t timeout_ns,
			double *round_ns, double *skew_ns)
{
	uint64_t prev = 0, t;
	int rc;

	for (uint64_t r = 0; r < rounds; r++) {
		rc = shm_sync_barrier(s, me, timeout_ns, &t);
		if (rc)
			return rc;
		if (me == 0 && r > 0) {
			round_ns[r - 1] = (double)(t - prev);
			/* skew of the barrier before this one (see shm_sync.h) */
			if (r > 1)
				skew_ns[r - 2] = (double)shm_sync_exit_skew_ns(s);
		}
		prev = t;
	}
	((struct bench_slot *)shm_sync_slot(s, me))->rounds_done = rounds;
	return 0;
}

static int bench_procs(unsigned n, uint64_t rounds, uint64_t timeout_ns)
{
	struct shm_sync *s;
	pid_t pids[64];
	double *round_ns = calloc(rounds, sizeof(double)), *skew_ns = calloc(rounds, sizeof(double));
	int rc = shm_sync_create(n, sizeof(struct bench_slot), 0, true, &s);

	if (rc || !round_ns || !skew_ns) {
		pb_log_error("segment for %u processes: %s", n, strerror(rc ? -rc : ENOMEM));
		free(round_ns);
		free(skew_ns);
		return rc ? rc : -ENOMEM;
	}
	for (unsigned i = 1; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			int crc = shm_sync_join(s, i);

			if (!crc)
				crc = bench_member(s, i, rounds, timeout_ns, NULL, NULL);
			_exit(crc ? 1 : 0);
		}
	}
	rc = shm_sync_join(s, 0);
	if (!rc)
		rc = bench_member(s, 0, rounds, timeout_ns, round_ns, skew_ns);
	if (rc)
		shm_sync_abort(s, 0, "member 0 failed");
	for (unsigned i = 1; i < n; i++) {
		int st;

		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			rc = rc ? rc : -EIO;
	}
	if (!rc) {
		struct pb_stats rs, ss;

		pb_stats_compute(round_ns, rounds - 1, &rs);
		pb_stats_compute(skew_ns, rounds - 2, &ss);
		printf("%u,%llu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", n, (unsigned long long)rounds, rs.p50,
		       rs.p99, rs.mean, ss.p50, ss.p99, ss.max);
		fflush(stdout);
	} else {
		pb_log_error("%u processes: barrier failed: %s", n, strerror(-rc));
	}
	shm_sync_detach(s);
	free(round_ns);
	free(skew_ns);
	return rc;
}

/*
 * Reference only: what a raw TSC read costs next to pb_clock_now_ns(), i.e. the
 * most a TSC clock path could save per sample (perftest stamps with rdtsc).
 * Median over 101 batches of 1000 reads, timed with pb_clock_now_ns(); < 0 if
 * not x86-64.  pairbench itself never uses the TSC (docs/methodology.md).
 */
static double rdtsc_cost_ns(void)
{
#if defined(__x86_64__)
	double per_read[101];
	volatile uint64_t sink = 0;
	struct pb_stats st;

	for (int b = 0; b < 101; b++) {
		uint64_t t0 = pb_clock_now_ns();

		for (int i = 0; i < 1000; i++)
			sink += __rdtsc();
		per_read[b] = (double)(pb_clock_now_ns() - t0) / 1000.0;
	}
	(void)sink;
	return pb_stats_compute(per_read, 101, &st) ? -1.0 : st.p50;
#else
	return -1.0;
#endif
}

int main(int argc, char **argv)
{
	struct bench_params p;
	struct pb_opts_result res;
	struct pb_clock_info ci;
	size_t nopts = sizeof(bench_opts) / sizeof(bench_opts[0]);
	int rc = 0;

	if (pb_opts_parse(bench_opts, nopts, argc, argv, &p, &res))
		return PB_EXIT_USAGE;
	if (p.help) {
		pb_opts_print_help(stdout, "pb-core-bench",
				   "Cost of pairbench's clock and shared-memory barrier on this machine.",
				   bench_opts, nopts);
		return PB_EXIT_OK;
	}
	if (pb_clock_calibrate(&ci)) {
		pb_log_error("clock calibration failed");
		return PB_EXIT_RUNTIME;
	}
	printf("# clock source=%s kernel_clocksource=%s cost_ns=%.2f resolution_ns=%.0f min_step_ns=%.0f online_cpus=%ld\n",
	       ci.source, ci.kernel_clocksource, ci.cost_ns, ci.resolution_ns, ci.min_step_ns,
	       sysconf(_SC_NPROCESSORS_ONLN));
	pb_clock_warn_if_slow(&ci);
	double tsc_ns = rdtsc_cost_ns();

	if (tsc_ns >= 0)
		printf("# reference (not used by pairbench): rdtsc cost_ns=%.2f\n", tsc_ns);
	printf("processes,rounds,round_ns_p50,round_ns_p99,round_ns_mean,skew_ns_p50,skew_ns_p99,skew_ns_max\n");
	fflush(stdout);
	for (size_t i = 0; i < p.procs.n && !rc; i++)
		rc = bench_procs((unsigned)p.procs.v[i], p.rounds, (uint64_t)(p.timeout_s * 1e9));
	return rc ? PB_EXIT_RUNTIME : PB_EXIT_OK;
}
