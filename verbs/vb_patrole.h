/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --pattern P --pattern-hosts FILE: one launch per node (mpirun/srun, one rank per node,
 * rank i = line i of the file); the node's workers are the client of every flow it is
 * side A of and the server of every flow it is side B of (verbs/vb_pattern.h).
 */
#ifndef VB_PATROLE_H
#define VB_PATROLE_H

#include "vb.h"

/*
 * Resolve --pattern against the launcher's rank and --pattern-hosts: p->pairs (the node's
 * workers; 0: the node has no flow, nothing to run), p->pat_clients, p->pat[], p->pat_label,
 * p->host_name; --output / --env-json with %r replaced by the rank.  0, or -EINVAL after one
 * error line.
 */
int vb_pattern_role(struct vb_params *p);

#endif
