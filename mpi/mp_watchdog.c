/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deadlines around blocking MPI phases.  MPI offers no timeout on a
 * blocking call: when a peer hangs (or dies on another node before the
 * runtime notices) the others would wait forever.  The watchdog thread
 * sleeps until the current deadline; arming only moves the deadline under
 * a mutex (no wake-up, no system call when uncontended), so the timed
 * loop is untouched.  On expiry it prints one line and _exit(1)s: calling
 * MPI from this thread is not allowed at MPI_THREAD_SINGLE, and Open MPI's
 * mpirun ends the whole job when a rank exits before MPI_Finalize.
 * It is started before MPI_Init, so that a peer stopped or lost during
 * start-up cannot hold this rank in MPI_Init for ever either; the world
 * rank is then not known yet and comes from the launcher's environment
 * when it says.  MPI_Init and the wire-up run under the start-up deadline
 * (--startup-timeout), not --timeout: a healthy start-up takes what the
 * launcher takes, which a --timeout of 0.1 s must not fail.
 */
#define _GNU_SOURCE
#include "mp.h"

#include "pb_clock.h"
#include "pb_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mp_watchdog {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t deadline_ns;    /* CLOCK_MONOTONIC; 0 = disarmed */
	uint64_t armed_for_ns;
	const char *phase;
	bool startup;            /* a start-up phase: the start-up deadline's message */
	bool held;               /* mp_watchdog_hold: expiry waits until it is released */
	bool stop;
	int rank;                /* -1 = not known yet */
};

static uint64_t mp_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *mp_watchdog_main(void *arg)
{
	struct mp_watchdog *wd = arg;

	pthread_mutex_lock(&wd->lock);
	while (!wd->stop) {
		uint64_t now = mp_mono_ns();

		if (wd->deadline_ns && now >= wd->deadline_ns && wd->held) {
			pthread_cond_wait(&wd->cond, &wd->lock); /* mp_watchdog_hold(wd, false) */
			continue;
		}
		if (wd->deadline_ns && now >= wd->deadline_ns) {
			char who[32] = "this rank";

			if (wd->rank >= 0)
				snprintf(who, sizeof(who), "rank %d", wd->rank);
			if (wd->startup)
				pb_log_error("%s: %s did not finish within the start-up deadline, %.1f s (--startup-timeout, at least --timeout): the job's start-up is slow here or a rank was never started; ending the job",
					     who, wd->phase, (double)wd->armed_for_ns / 1e9);
			else
				pb_log_error("%s: %s did not finish within --timeout %.1f s (a peer rank may have died or hung, or the phase takes longer than that here: raise --timeout); ending the job",
					     who, wd->phase, (double)wd->armed_for_ns / 1e9);
			_exit(PB_EXIT_RUNTIME);
		}
		uint64_t until = wd->deadline_ns ? wd->deadline_ns : now + 3600ull * 1000000000ull;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };

		pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
	}
	pthread_mutex_unlock(&wd->lock);
	return NULL;
}

int mp_watchdog_start(struct mp_watchdog **out, int rank)
{
	struct mp_watchdog *wd = calloc(1, sizeof(*wd));
	pthread_condattr_t ca;
	int rc;

	if (!wd)
		return -ENOMEM;
	wd->rank = rank;
	wd->phase = "start-up";
	pthread_mutex_init(&wd->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&wd->thread, NULL, mp_watchdog_main, wd);
	if (rc) {
		pb_log_error("pthread_create (watchdog): %s", strerror(rc));
		free(wd);
		return -rc;
	}
	*out = wd;
	return 0;
}

void mp_watchdog_set_rank(struct mp_watchdog *wd, int rank)
{
	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->rank = rank;
	pthread_mutex_unlock(&wd->lock);
}

static void mp_watchdog_set(struct mp_watchdog *wd, const char *phase, uint64_t ns,
			    bool startup)
{
	if (!wd)
		return;
	uint64_t deadline = mp_mono_ns() + ns;

	pthread_mutex_lock(&wd->lock);
	/* Wake the thread only when it sleeps past the new deadline. */
	bool wake = !wd->deadline_ns || deadline < wd->deadline_ns;

	wd->phase = phase;
	wd->startup = startup;
	wd->armed_for_ns = ns;
	wd->deadline_ns = deadline;
	if (wake)
		pthread_cond_signal(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
}

void mp_watchdog_arm(struct mp_watchdog *wd, const char *phase, uint64_t ns)
{
	mp_watchdog_set(wd, phase, ns, false);
}

void mp_watchdog_arm_startup(struct mp_watchdog *wd, const char *phase, uint64_t ns)
{
	mp_watchdog_set(wd, phase, ns, true);
}

uint64_t mp_startup_ns(const struct mp_params *p)
{
	double s = p->startup_timeout_s > p->c.timeout_s ? p->startup_timeout_s : p->c.timeout_s;

	return (uint64_t)(s * 1e9);
}

void mp_watchdog_hold(struct mp_watchdog *wd, bool held)
{
	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->held = held;
	if (!held)
		pthread_cond_signal(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
}

void mp_watchdog_disarm(struct mp_watchdog *wd)
{
	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->deadline_ns = 0;
	pthread_mutex_unlock(&wd->lock);
}

void mp_watchdog_stop(struct mp_watchdog *wd)
{
	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->stop = true;
	pthread_cond_signal(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
	pthread_join(wd->thread, NULL);
	pthread_cond_destroy(&wd->cond);
	pthread_mutex_destroy(&wd->lock);
	free(wd);
}
