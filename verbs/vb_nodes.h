/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The job's nodes when a launcher starts one pairbench-verbs per node (--scan, --pattern):
 * the launcher's rank and size, the host file (rank i = line i), and the per-rank output
 * paths (%r).
 */
#ifndef VB_NODES_H
#define VB_NODES_H

#include "vb.h"

/*
 * The launcher's rank of this process (OMPI_COMM_WORLD_RANK, PMIX_RANK,
 * SLURM_PROCID, the first one set): 0 with *rank and *var set, -ENOENT when
 * none is set, -EINVAL (logged) when it is not a non-negative integer.
 */
int vb_launcher_rank(long *rank, const char **var);

/* The ranks of the job, where the launcher says (Open MPI, Slurm); 0 unknown. */
long vb_launcher_size(void);

/*
 * The host file of --scan-hosts / --pattern-hosts (opt names it in messages): one node per
 * line, "NAME [ADDR]" (further words, e.g. an mpirun hostfile's slots=1, ignored; blank
 * lines and # comments skipped; ADDR: the address to connect to, default NAME).  fn (may be
 * NULL) is called for each node in order (a non-zero return stops the reading: -EINVAL).
 * The number of nodes, or -errno after one error line.
 */
long vb_hosts_read(const char *opt, const char *path,
		   int (*fn)(void *ctx, long node, const char *name, const char *addr), void *ctx);

/*
 * --output and --env-json of this rank: every %r replaced by the rank (each rank writes its
 * own; a path without %r is refused, naming mode, e.g. "--scan").  0 or -EINVAL (logged).
 */
int vb_rank_outputs(struct vb_params *p, const char *mode, long rank);

#endif
