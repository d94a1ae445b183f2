/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One round of a fabric scan per launch (--scan R[,skip=I,...] --scan-hosts
 * FILE): the launcher (mpirun, srun) starts one rank per node, rank i on the
 * node of the file's line i; each rank finds its node pair in round R of the
 * tournament (core/pb_scan.h, the one pairbench-mpi runs), its side (A: the
 * client, which measures and sends; B: the server) and its peer's address in
 * the file.  No schedule and no host list on the command line.
 */
#ifndef VB_SCAN_H
#define VB_SCAN_H

#include "vb.h"
#include "vb_nodes.h"

/*
 * Resolve --scan against the rank and --scan-hosts: p->side, p->peer_host,
 * p->host_name, p->peer_name, p->scan_label, or p->scan_bye for the node
 * sitting the round out; --output / --env-json with %r replaced by the rank
 * (every rank writes its own).  0, or -EINVAL after one error line.
 */
int vb_scan_role(struct vb_params *p);

#endif
