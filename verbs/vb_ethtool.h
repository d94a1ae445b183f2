/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The statistics a RoCE port's network device gives `ethtool -S` (issues 35 and 36,
 * docs/health.md): priority pause frames (rx_prio3_pause, tx_prio3_pause), PHY errors and
 * discards (rx_crc_errors_phy, rx_discards_phy), the device's own ECN/CNP counts — read by
 * the names the device has (ETHTOOL_GSTRINGS), never a fixed list, through the SIOCETHTOOL
 * ioctl (ETHTOOL_GSTATS), no ethtool binary.  Per-queue and per-channel statistics (mlx5's
 * rx0_packets, ch3_events; veth's rx_queue_0_drops; i40e's tx-2.tx_bytes) are summed over
 * the queues under one name with the index written "*" (rx*_packets, rx_queue_*_drops), so a
 * device with 64 channels adds tens of names, not thousands.
 */
#ifndef VB_ETHTOOL_H
#define VB_ETHTOOL_H

#include <stdbool.h>
#include <stdint.h>

#define VB_ETH_NAME 48

/*
 * NAME as recorded: a queue's or channel's index replaced by "*", any character but letters,
 * digits and _-.:[]* and space by "_" (CSV columns and JSON keys), VB_ETH_NAME bytes at
 * most, out NUL-terminated.  true when it was a per-queue name.
 */
bool vb_ethtool_name(const char *name, char *out);

struct vb_ethtool {
	char dev[16];
	unsigned total;     /* the device's statistics (ETHTOOL_GSTATS' n_stats) */
	unsigned n;         /* names as recorded (per-queue ones summed) */
	char (*name)[VB_ETH_NAME];   /* [n], sorted */
	uint32_t *slot;     /* [total]: the recorded name each statistic adds to */
};

/*
 * List NETDEV's statistics.  0 (n = 0 when the device has none: dummy, loopback, or ethtool
 * not supported), -ENODEV when there is no such device, -ENOMEM.  vb_ethtool_close frees it.
 */
int vb_ethtool_open(struct vb_ethtool *e, const char *netdev);
void vb_ethtool_close(struct vb_ethtool *e);

/* Read every recorded name's value into vals[0..n): 0, or -errno (the device changed or left). */
int vb_ethtool_read(const struct vb_ethtool *e, int64_t *vals);

#endif
