/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port counters around each point's timed window (issue 25, docs/health.md):
 * the names a device exposes under /sys/class/infiniband/DEV/ports/PORT/
 * counters/ and hw_counters/, read once after every process has warmed up
 * (between two barriers, nobody moving data) and once after the results are
 * collected; the deltas go out as JSON records for --env-json "counters".
 * Pure sysfs reading (no verbs call): unit-tested on a fake tree.
 */
#ifndef VB_COUNTERS_H
#define VB_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vb_ethtool.h"

#define VB_CNT_MAX 512           /* counters per device port, every source together */
#define VB_CNT_NAME VB_ETH_NAME

/* counters/, hw_counters/, and the port's network device's `ethtool -S` (vb_ethtool.h) */
enum vb_cnt_source { VB_CNT_PORT, VB_CNT_HW, VB_CNT_ETHTOOL, VB_CNT_SOURCES };

/* The counters of one device port and their values at the last "before" read. */
struct vb_counter_set {
	char device[64];
	unsigned port;
	unsigned n;
	char name[VB_CNT_MAX][VB_CNT_NAME];
	unsigned char source[VB_CNT_MAX];
	int64_t before[VB_CNT_MAX];
	bool before_ok[VB_CNT_MAX];
	struct vb_ethtool eth;   /* its names are cs->name[eth_first ...) */
	unsigned eth_first, eth_n;
};

/*
 * List the counters of DEVICE port PORT under root (NULL: /sys/class/infiniband),
 * in name order per directory.  0, or -ENOENT when the port has neither
 * directory (nothing to record).  Names beyond VB_CNT_MAX are left out.
 */
int vb_counter_set_open(struct vb_counter_set *cs, const char *root, const char *device, unsigned port);

/*
 * Add the `ethtool -S` statistics of the port's network device NETDEV (RoCE; NULL or "": none)
 * after the sysfs ones, as many as fit in VB_CNT_MAX.  0, or -errno of vb_ethtool_open (a
 * device without statistics adds nothing and is 0).  vb_counter_set_close releases them.
 */
int vb_counter_set_add_ethtool(struct vb_counter_set *cs, const char *netdev);
void vb_counter_set_close(struct vb_counter_set *cs);

/* Read every counter of cs into vals[i]; ok[i] false where the file could not be read. */
void vb_counter_set_read(const struct vb_counter_set *cs, const char *root, int64_t *vals, bool *ok);

/*
 * The deltas since the "before" read as JSON records, one per source with a
 * counter read both times: {"msg_size_bytes": S, "device": D, "port": P,
 * "source": "hw_counters", "deltas": {"name": delta, ...}}.  *first: no comma
 * before the first record of the output; cleared once one is written.
 */
void vb_counter_set_json(FILE *f, const struct vb_counter_set *cs, uint64_t msg_size_bytes,
			 const int64_t *after, const bool *ok, bool *first);

/* The counters of every device a run uses, read by one process of the node. */
struct vb_counters {
	unsigned nset;
	struct vb_counter_set *set;  /* [nset] */
	const char *root;            /* NULL: /sys/class/infiniband */
	FILE *out;                   /* the records (the launcher's temporary file) */
	bool first;
};

/*
 * One set per device name that has counters (devices without are skipped), with the
 * `ethtool -S` statistics of netdevs[d] (NULL, or "" for a device: none).
 * 0 or -ENOMEM.  vb_counters_free() releases it (NULL-safe).
 */
int vb_counters_init(struct vb_counters *c, const char *const *devices, const char *const *netdevs,
		     unsigned ndev, unsigned port, const char *root, FILE *out);
void vb_counters_free(struct vb_counters *c);

/* The point's edge: before (after = false) records the values, after writes the deltas. 0 or -EIO. */
int vb_counters_edge(struct vb_counters *c, uint64_t msg_size_bytes, bool after);

#endif
