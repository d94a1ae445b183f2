/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --soak in pairbench-verbs (docs/methodology.md "Soak"): the measuring side of a bandwidth
 * stream (write_bw, read_bw, send_bw; every --pattern client) counts its completions per
 * bucket with core/pb_soak.h's recorder; nothing of the soak's logic lives here, only
 * where the recorder of a worker comes from and goes to.
 */
#ifndef VB_SOAK_H
#define VB_SOAK_H

#include "vb.h"

/* A soak's recorder for this worker when it measures a bandwidth stream (NULL otherwise). 0 or -ENOMEM. */
int vb_soak_create(struct vb_worker *w);
/* Release it (NULL-safe). */
void vb_soak_destroy(struct vb_worker *w);
/* Untimed, before the start barrier: the point's series file (--series name or a temporary file). 0 or -errno. */
int vb_soak_open(struct vb_worker *w, uint64_t size);
/*
 * After the stream: analyse the series into t->soak (end_ns: the stream's end; partial: it
 * stopped before the soak's end).  0 or -errno with t->error set.
 */
int vb_soak_finish(struct vb_worker *w, struct pb_timed *t, bool partial);

#endif
