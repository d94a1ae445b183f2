/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection for the fault tests (PAIRBENCH_FAULT, docs/failure-modes.md).
 * Calls nothing of ours but the log (and shm_sync_abort: PAIRBENCH_FAULT=PHASE:ABORT:MEMBER).
 */
#ifndef VB_FAULT_H
#define VB_FAULT_H

#include "vb.h"

/* PAIRBENCH_FAULT=PHASE:SIGNAL:MEMBER: worker MEMBER raises SIGNAL (STOP, KILL) when it reaches
 * PHASE; ABORT: it stops the group without a word and -ECANCELED is returned (else 0). */
enum vb_phase { VB_PHASE_CONNECT, VB_PHASE_FINAL };
int vb_fault_point(const struct vb_worker *w, enum vb_phase phase);
/* Faults without a signal (PAIRBENCH_FAULT=latecqe|latedone|closecm): is f the one asked for? */
enum vb_fault { VB_FAULT_LATE_CQE, VB_FAULT_LATE_DONE, VB_FAULT_CLOSE_CM, VB_FAULT_NONE };
bool vb_fault_on(enum vb_fault f);

#endif
