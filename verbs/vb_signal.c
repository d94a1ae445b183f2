/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The signals of a pairbench-verbs process (launcher and workers): the one
 * that interrupts the run, and the launcher's sleep until a child changes
 * state.  Owns the only file-scope state of pairbench-verbs: what a signal
 * handler writes, and the signal mask the launcher's children restore.
 */
#include "vb_signal.h"

#include <string.h>
#include <time.h>

volatile sig_atomic_t vb_interrupted;

static void vb_on_signal(int sig)
{
	vb_interrupted = sig;
}

/*
 * SIGINT, SIGTERM, SIGHUP: record the signal; every wait of a worker returns
 * "interrupted by SIG..." at its next check.  The launcher forwards the
 * signal to its workers (timeout(1), schedulers and kill PID signal only the
 * main process).  SIGPIPE is ignored: a closed CSV pipe is a write error
 * that the leader reports, not a silent death.
 */
void vb_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = vb_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

const char *vb_sig_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

/*
 * The launcher sleeps until a child changes state, a signal arrives or max_ms
 * passes: SIGCHLD is blocked in the launcher (vb_block_sigchld) and taken with
 * sigtimedwait, so an idle launcher does not wake up while the workers measure
 * (a 5 ms poll used to wake it 200 times a second, on a core of the node
 * under test).
 */
static sigset_t vb_sigchld_set, vb_saved_mask;

void vb_block_sigchld(void)
{
	sigemptyset(&vb_sigchld_set);
	sigaddset(&vb_sigchld_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &vb_sigchld_set, &vb_saved_mask);
}

void vb_child_restore_mask(void)
{
	sigprocmask(SIG_SETMASK, &vb_saved_mask, NULL);
}

void vb_wait_child_event(long max_ms)
{
	struct timespec ts = { max_ms / 1000, (max_ms % 1000) * 1000000L };

	sigtimedwait(&vb_sigchld_set, NULL, &ts); /* EAGAIN / EINTR: the caller re-checks */
}
