/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The launcher's supervision of its workers while they run: reap them,
 * forward SIGINT/SIGTERM/SIGHUP to them, watch their heartbeats (a stopped
 * or wedged worker is reported and killed), abort the group when one fails,
 * SIGKILL whoever is left after a grace period, and write error rows for
 * what the leader could not write.
 */
#include "vb_launch.h"

#include "pb_log.h"
#include "vb_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Time the workers get to write their rows and exit after an abort, before SIGKILL. */
#define VB_GRACE_NS 10000000000ull

static const char *vb_member_side_name(const struct vb_launch *L, unsigned m)
{
	return vb_member_side(L->p, m) == VB_SERVER ? "server" : "client";
}

/* What /proc says a process is doing, for the watchdog's message. */
static const char *vb_proc_state(pid_t pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return "state unknown";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return "state unknown";
	buf[n] = 0;
	rp = strrchr(buf, ')');
	switch (rp && rp[1] == ' ' ? rp[2] : 0) {
	case 'T': return "process stopped (SIGSTOP?)";
	case 't': return "process stopped by a debugger";
	case 'D': return "process blocked in the kernel (D state)";
	default: return "process running but not progressing (wedged?)";
	}
}

/* Abort the group (first reason wins), remember why, start the grace period. */
static void vb_stop_run(struct vb_launch *L, const char *why, uint64_t *kill_at)
{
	shm_sync_abort(L->sync, -1, why);
	if (!L->why[0])
		snprintf(L->why, sizeof(L->why), "%s", why);
	if (!*kill_at)
		*kill_at = pb_clock_now_ns() + VB_GRACE_NS;
}

/*
 * Watchdog: a worker whose heartbeat (bumped at every wait check and while a
 * barrier waits) has not moved for --timeout + 1 s is stopped or wedged: its
 * peers may wait for it for ever.  Report it, SIGKILL it, abort the group.
 * Returns true when it found one.
 */
static bool vb_watchdog(struct vb_launch *L, uint64_t now, uint64_t *kill_at)
{
	uint64_t limit = (uint64_t)(L->p->c.timeout_s * 1e9) + 1000000000ull;

	for (unsigned m = 0; m < L->members; m++) {
		uint64_t beat = atomic_load_explicit(&L->sh->w[m].beat, memory_order_relaxed);
		char why[300];

		if (L->pid[m] <= 0 || L->sh->w[m].done)
			continue;
		if (beat != L->beat[m]) {
			L->beat[m] = beat;
			L->beat_ns[m] = now;
			continue;
		}
		if (now - L->beat_ns[m] <= limit)
			continue;
		snprintf(why, sizeof(why), "worker of pair %u (%s, pid %d) made no progress for %.1f s: %s",
			 m % L->p->pairs, vb_member_side_name(L, m), L->pid[m], (double)(now - L->beat_ns[m]) / 1e9,
			 vb_proc_state(L->pid[m]));
		pb_log_error("%s; stopping the run", why);
		kill(L->pid[m], SIGKILL);
		vb_stop_run(L, why, kill_at);
		return true;
	}
	return false;
}

/* Forward the launcher's signal to every worker still running. */
static void vb_forward_signal(struct vb_launch *L, int sig, uint64_t *kill_at)
{
	char why[64];

	for (unsigned m = 0; m < L->members; m++)
		if (L->pid[m] > 0)
			kill(L->pid[m], sig);
	snprintf(why, sizeof(why), "interrupted by %s", vb_sig_name(sig));
	vb_stop_run(L, why, kill_at);
}

/* One worker ended: record it, abort the group when it failed. */
static void vb_reaped(struct vb_launch *L, unsigned m, pid_t pid, int st, int *code, uint64_t *kill_at)
{
	L->pid[m] = 0;
	if (WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0 && !L->sh->w[m].done)) {
		char why[200];

		snprintf(why, sizeof(why), "worker of pair %u (%s, pid %d) died (%s %d)", m % L->p->pairs,
			 vb_member_side_name(L, m), pid, WIFSIGNALED(st) ? "signal" : "exit",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		/* A worker the watchdog or the grace period killed was reported already. */
		if (!L->why[0])
			pb_log_error("%s", why);
		vb_stop_run(L, why, kill_at);
		if (*code == PB_EXIT_OK)
			*code = PB_EXIT_RUNTIME;
	} else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		int c = WEXITSTATUS(st);
		char why[200];

		/* It said why (and aborted the group itself); make sure nobody waits for it. */
		snprintf(why, sizeof(why), "worker of pair %u (%s) failed", m % L->p->pairs, vb_member_side_name(L, m));
		shm_sync_abort(L->sync, -1, why);
		/* usage (2) outranks runtime (1): it says what to fix */
		if (*code == PB_EXIT_OK || (c == PB_EXIT_USAGE && *code == PB_EXIT_RUNTIME))
			*code = c;
	}
}

/*
 * Reap every worker.  Meanwhile (waking at most every second, or every
 * quarter of --timeout): forward SIGINT/SIGTERM/SIGHUP to them, watch their
 * heartbeats, and SIGKILL whoever is left VB_GRACE_NS after the run was
 * stopped.  Returns the exit code.
 */
int vb_reap(struct vb_launch *L)
{
	unsigned left = L->members;
	int code = PB_EXIT_OK, forwarded = 0;
	uint64_t kill_at = 0, now = pb_clock_now_ns();
	/* Watchdog resolution: a quarter of --timeout, at most 1 s (few wake-ups while measuring). */
	long poll_ms = L->p->c.timeout_s >= 4 ? 1000 : (long)(L->p->c.timeout_s * 250) + 1;

	for (unsigned m = 0; m < L->members; m++)
		L->beat_ns[m] = now;
	while (left) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid > 0) {
			unsigned m;

			for (m = 0; m < L->members && L->pid[m] != pid; m++)
				;
			if (m < L->members) {
				left--;
				vb_reaped(L, m, pid, st, &code, &kill_at);
			}
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			break;
		now = pb_clock_now_ns();
		if (vb_interrupted && !forwarded) {
			forwarded = vb_interrupted;
			vb_forward_signal(L, forwarded, &kill_at);
		}
		if (!kill_at && vb_watchdog(L, now, &kill_at) && code == PB_EXIT_OK)
			code = PB_EXIT_RUNTIME;
		if (kill_at && kill_at != UINT64_MAX && now > kill_at) {
			for (unsigned m = 0; m < L->members; m++)
				if (L->pid[m] > 0) {
					pb_log_error("worker of pair %u (%s, pid %d) did not exit %.0f s after the run was stopped: killing it",
						     m % L->p->pairs, vb_member_side_name(L, m), L->pid[m], VB_GRACE_NS / 1e9);
					kill(L->pid[m], SIGKILL);
				}
			kill_at = UINT64_MAX;
		}
		vb_wait_child_event(kill_at ? 100 : poll_ms);
	}
	return code;
}

/*
 * Rows for what the leader did not write (it was killed, or stopped and
 * killed): the CSV always has a row for every point, error rows included.
 */
void vb_complete_rows(struct vb_launch *L)
{
	const struct vb_params *p = L->p;
	struct pb_engine_params ep = L->ep;
	unsigned want = 1 + (unsigned)p->c.sizes.n * (ep.pairs + 1), have = L->sh->csv_progress;
	struct pb_sink sink = { .csv = L->csv };
	char host[64] = "", why[500];

	if (!L->csv || p->validate || L->sh->csv_errno || have >= want ||
	    (vb_member_side(p, 0) == VB_SERVER && !p->pat_target))  /* a server-only launch writes no rows */
		return;
	vb_host_name(p, host, sizeof(host));
	/* The first reason anyone gave (the group's abort), else the launcher's. */
	if (!shm_sync_aborted(L->sync, why, sizeof(why)))
		snprintf(why, sizeof(why), "%s", L->why[0] ? L->why : "the leader worker ended without writing its rows");
	if (pb_engine_rest_rows(&ep, host, have, why, &sink) || fflush(L->csv))
		pb_log_error("writing error rows to %s failed: %s", vb_output_name(p), strerror(errno));
}
