/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vb_launch(), called by main(); the launcher's state, shared by vb_launch.c
 * (probe, placement, fork) and vb_reap.c (supervision of the workers:
 * reaping, watchdog, signals, the rows of what is left).
 */
#ifndef VB_LAUNCH_H
#define VB_LAUNCH_H

#include "vb.h"

#include "pb_clock.h"
#include "pb_pin.h"

#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

struct vb_launch {
	struct vb_params *p;
	struct vb_shared *sh;
	struct shm_sync *sync;
	hwloc_topology_t topo;
	struct pb_pin_plan plan;
	/* devices: pair -> index into sh->dev (its measuring side, its peer side in loopback) */
	unsigned dev_of[VB_MAX_PAIRS], peer_of[VB_MAX_PAIRS];
	char loop_ip[VB_MAX_DEVS][64];      /* loopback: the address of each device */
	struct pb_pair_label labels[VB_MAX_PAIRS];
	unsigned members;
	uint64_t max_samples;
	pid_t pid[VB_MAX_WORKERS];
	/* watchdog: last heartbeat seen per worker and when it last moved */
	uint64_t beat[VB_MAX_WORKERS];
	uint64_t beat_ns[VB_MAX_WORKERS];
	FILE *csv;
	struct pb_clock_info clock;
	char why[400];           /* why the run stopped early (rows of what is left) */
	char flags[96];          /* flags of every row (pb_flags_run over the devices used) */
	double judged_gbit_s[VB_MAX_DEVS]; /* per device: rate link_pct is judged against; 0 = none */
	/* The engine's parameters of this run (workers, and the launcher's rows of what is
	 * left); set once devices, flags and labels are known, before any worker exists. */
	struct pb_engine_params ep;
	/* --env-json "counters": the node leader's port-counter records (vb_counters.h); NULL = none */
	FILE *counters;
	/* --probe, the probe's client node: its rows, appended to the CSV after the workers (vb_probe.h) */
	FILE *probe_rows;
};

/* vb_launch.c: run; rows to csv, the environment record to env (NULL: none). Returns the exit code. */
int vb_launch(struct vb_params *p, FILE *csv, FILE *env);

/* --output's name for messages ("stdout" without -o). */
static inline const char *vb_output_name(const struct vb_params *p)
{
	return p->c.output ? p->c.output : "stdout";
}

/* The rows' host column: the node's name in --scan-hosts / --pattern-hosts, else the host name. */
static inline void vb_host_name(const struct vb_params *p, char *buf, size_t len)
{
	if (p->scan || p->pattern) {
		snprintf(buf, len, "%s", p->host_name);
		return;
	}
	gethostname(buf, len - 1);
	buf[len - 1] = '\0';
}

/* vb_reap.c */
/*
 * Reap every worker.  Meanwhile: forward SIGINT/SIGTERM/SIGHUP, watch the
 * heartbeats, SIGKILL whoever is left after the grace period.  Returns the
 * exit code.
 */
int vb_reap(struct vb_launch *L);
/* Error rows for what the leader did not write (it was killed or stopped). */
void vb_complete_rows(struct vb_launch *L);

#endif
