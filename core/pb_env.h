/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The common part of the environment record (--env-json) of every
 * executable: who wrote it, the clock calibration and the placement of
 * every process under one key, "placement" (docs/methodology.md).  A layer
 * writes its own keys between these calls.
 */
#ifndef PB_ENV_H
#define PB_ENV_H

#include "pb_clock.h"
#include "pb_window.h"

#include <stdbool.h>
#include <stdio.h>

/* Where one process of the run ran. */
struct pb_place {
	int pair;                /* -1: none (collectives, halo) */
	const char *role;        /* client | server (verbs); A | B | rank (MPI) */
	int member;              /* verbs worker index; MPI world rank */
	int pu;                  /* PU bound by pairbench; -1 none */
	int cpu, numa_node;      /* where it last ran; -1 unknown */
	bool verified;           /* the binding read back equals the request */
};

/* A JSON string (quotes, backslashes and control characters escaped); NULL as "". */
void pb_env_str(FILE *f, const char *s);
/*
 * "{" and the keys every record opens with: tool, version, git_commit, layer,
 * test, host; then "build" (compiler, build type, C flags, commit), "tuning"
 * (the environment variables of the MPI, PMIx, UCX, verbs-provider and NCCL
 * families, per-process identity and secret-looking names left out) and
 * "host_canary" (pb_canary.h, measured now: about 20 ms).
 */
void pb_env_head(FILE *f, const char *tool, const char *layer, const char *test, const char *host);
/* The "clock" object (offset_error_ns only when >= 0: clocks of several nodes), then ",\n". */
void pb_env_clock(FILE *f, const struct pb_clock_info *ci, double offset_error_ns);
/* The "timing" object: how long each point ran (pb_window.h), the effective values, then ",\n". */
void pb_env_timing(FILE *f, const struct pb_window_plan *w, uint64_t warmup);
/* "placement": [ — then one pb_env_place() per process, then pb_env_placement_end(). */
void pb_env_placement_begin(FILE *f);
/* One entry's common keys, left open: the caller adds ", \"key\": value" pairs, then "}". */
void pb_env_place(FILE *f, const struct pb_place *pl, bool first);
void pb_env_placement_end(FILE *f);

#endif
