/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters over time (--counters-series PREFIX, docs/health.md "Counters over time"): one
 * sampler process per node (forked by the launcher, so every node of a run has one: the
 * client's, the server's, every node of a --pattern) reads every file under
 * counters/ and hw_counters/ of the ports the node uses, and the statistics/ and the
 * `ethtool -S` statistics (vb_ethtool.h) of their network devices (RoCE), every --counters-interval seconds from before the workers start
 * until they ended, by the names the devices have (never a fixed list).  One line per sample
 * into PREFIX-<host>.pbcnt.csv:
 *
 *   # pairbench counters series 1
 *   # host=NAME interval_s=I netdev:DEV=NETDEV ...
 *   t_mono_ns,t_unix_ns,DEV/PORT/SOURCE/NAME,...      SOURCE: counters, hw_counters, netdev
 *   <CLOCK_MONOTONIC_RAW ns>,<CLOCK_REALTIME ns>,<value or empty: unreadable>,...
 *
 * Values are the counters' own (cumulative); the driver turns them into deltas per interval
 * (scripts/pairbench/analysis/cntseries.py).  The clocks are the soak's (core/pb_soak.h: its
 * start_ns and start_unix_ns), so a stall's buckets and the samples line up.  A line is
 * flushed after every sample: a run killed mid-way keeps every sample but the last.
 * Pure sysfs reading (no verbs call).
 */
#ifndef VB_CNTSERIES_H
#define VB_CNTSERIES_H

#include <stdbool.h>
#include <sys/types.h>

#define VB_CNTSERIES_SUFFIX ".pbcnt.csv"

struct vb_cntseries_cfg {
	const char *path;            /* the file */
	const char *host;            /* its host= */
	const char *root;            /* NULL: /sys/class/infiniband (tests: a fake tree) */
	const char *net_root;        /* NULL: /sys/class/net */
	unsigned ndev;
	const char *const *devices;  /* [ndev] */
	const char *const *netdevs;  /* [ndev], "" or NULL = none */
	unsigned port;
	double interval_s;
	unsigned max_samples;        /* 0 = until a signal (SIGTERM, SIGINT, SIGHUP); tests: a count */
};

/*
 * The sampling loop, in the calling process: a sample at once, then every interval (on a
 * grid from the first), and a last one when a signal ends it.  0 or -errno (the file).
 */
int vb_cntseries_run(const struct vb_cntseries_cfg *cfg);

/* Fork a process that runs vb_cntseries_run (it ends with its parent).  Its pid or -errno. */
pid_t vb_cntseries_start(const struct vb_cntseries_cfg *cfg);

/* End it (SIGTERM: its last sample) and reap it, waiting at most 5 s.  NULL-safe on pid <= 0. */
void vb_cntseries_stop(pid_t pid);

#endif
