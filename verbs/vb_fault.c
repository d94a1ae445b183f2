/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection for the fault tests (docs/failure-modes.md): real signals at
 * phases too short to hit from outside, and orderings a loaded machine
 * produces now and then, made certain.
 */
#include "vb_fault.h"

#include "pb_log.h"
#include "shm_sync.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Fault injection for the fault suite: PAIRBENCH_FAULT=PHASE:SIG:MEMBER
 * makes worker MEMBER send itself SIGSTOP or SIGKILL when it reaches PHASE
 * (connect: before connecting; final: before the final pair sync), so
 * phases too short to hit from outside are tested with a real signal.
 * SIG = ABORT: the worker stops the group without a word (as a failure whose
 * reason got lost), for the launcher's last word on an unexplained failure.
 */
int vb_fault_point(const struct vb_worker *w, enum vb_phase phase)
{
	static const char *const names[] = { "connect", "final" };
	const char *f = getenv("PAIRBENCH_FAULT");
	char ph[16], sig[8];
	unsigned member;

	if (!f || sscanf(f, "%15[a-z]:%7[A-Z]:%u", ph, sig, &member) != 3 || member != w->member ||
	    strcmp(ph, names[phase]))
		return 0;
	if (!strcmp(sig, "ABORT")) {
		pb_log_info("fault injection: worker of pair %u stops the group without a word at %s", w->pair, ph);
		shm_sync_abort(w->sync, (int)w->member, "fault injection: a silent abort");
		return -ECANCELED;
	}
	pb_log_info("fault injection: worker of pair %u raises SIG%s at %s", w->pair, sig, ph);
	raise(!strcmp(sig, "KILL") ? SIGKILL : SIGSTOP);
	return 0;
}

/*
 * Faults without a signal, PAIRBENCH_FAULT=NAME: orderings a loaded machine
 * produces now and then, made certain for the tests (docs/failure-modes.md).
 *   latecqe   every ctrl write of a server (pair sync, end of stream; not the
 *             final sync) is posted unsignalled and, 2 ms later, followed by a
 *             signalled empty write, whose completion is the one reaped: the
 *             peer sees our word land and sends its next message in those 2 ms,
 *             so its receive completion precedes ours in the CQ
 *   latedone  a server sleeps 300 ms before its first look at the end of a
 *             stream: across nodes the client then ends its next stream too
 *   closecm   a server waiting for its client closes its rdma_cm channel's fd
 *             after 1 s and opens /dev/null, which takes the fd's number (a
 *             double close elsewhere in the process would do that): the kernel
 *             drops the channel's ids, the listen with them (clients: REJECTED,
 *             status 8, "no listener") — the deaf server of docs/failure-modes.md
 */
bool vb_fault_on(enum vb_fault f)
{
	static const char *const names[] = { "latecqe", "latedone", "closecm" };
	static const char *const what[] = { "ctrl write completions come 2 ms late",
					    "servers look at the end of a stream 300 ms late",
					    "a server's rdma_cm channel is closed under it while it waits" };
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("PAIRBENCH_FAULT");

		on = (int)VB_FAULT_NONE;
		for (int i = 0; e && i < (int)VB_FAULT_NONE; i++)
			if (!strcmp(e, names[i])) {
				on = i;
				pb_log_warn("fault injection: PAIRBENCH_FAULT=%s: %s", names[i], what[i]);
			}
	}
	return on == (int)f;
}
