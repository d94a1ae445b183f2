/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device, port and GID queries (in the probe child: the only process of the
 * launcher that makes verbs calls), the JSON environment record, IB MTUs.
 */
#ifndef VB_DEV_H
#define VB_DEV_H

#include "vb.h"

/*
 * Run in the probe child (verbs allowed there).  Finds and queries
 * every device the run names (p->dev_names, or with p->dev_all every device
 * with an ACTIVE port -i, or the first device) into sh->dev[], sh->ndev.
 * Returns 0 or -errno with sh->probe_rc / probe_error set: -EINVAL for an
 * unknown name (the message lists the devices present), -ENODEV for none.
 */
int vb_dev_probe(const struct vb_params *p, struct vb_shared *sh);
/* Launcher: JSON environment record into f, opened by main() (ci: the launcher's clock
 * calibration; counters: the leader's port-counter records, vb_counters.h, or NULL).
 * Returns 0 or -errno. */
struct pb_clock_info;
int vb_env_write(FILE *f, const struct vb_params *p, const struct vb_shared *sh,
		 unsigned workers, const char *pin_note, const struct pb_clock_info *ci, FILE *counters);
/* IB MTU enum <-> bytes. */
int vb_mtu_bytes(int mtu_enum);
int vb_mtu_enum(uint64_t bytes);

#endif
