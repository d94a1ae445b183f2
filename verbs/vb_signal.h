/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The signals of a pairbench-verbs process: SIGINT, SIGTERM, SIGHUP are
 * recorded in vb_interrupted (every wait of a worker returns "interrupted by
 * SIG..." at its next check; the launcher forwards the signal), SIGPIPE is
 * ignored, and the launcher sleeps on SIGCHLD.  Calls nothing of ours.
 */
#ifndef VB_SIGNAL_H
#define VB_SIGNAL_H

#include <signal.h>

/* The signal (SIGINT, SIGTERM, SIGHUP) that interrupts the run, 0 = none (set by the handler:
 * a handler cannot reach a context struct). */
extern volatile sig_atomic_t vb_interrupted;
/* Catch SIGINT, SIGTERM, SIGHUP into vb_interrupted; ignore SIGPIPE. */
void vb_signals_install(void);
/* "SIGINT", "SIGTERM", "SIGHUP" or "a signal". */
const char *vb_sig_name(int sig);
/* Launcher: block SIGCHLD (taken by vb_wait_child_event); remember the mask it had. */
void vb_block_sigchld(void);
/* In a forked child: the signal mask the launcher started with. */
void vb_child_restore_mask(void);
/* Sleep until a child changes state, a signal arrives or max_ms passed. */
void vb_wait_child_event(long max_ms);

#endif
