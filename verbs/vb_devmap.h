/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several devices in one run: which devices (-d) and which pair uses which
 * (--pair-devices or round-robin).  Pure: no device is touched.
 */
#ifndef VB_DEVMAP_H
#define VB_DEVMAP_H

#include "vb.h"

/*
 * -d and --pair-devices (syntax only, before any device is seen).
 * Fills p->dev_names, ndev_names, dev_all, pair_dev, pair_peer_dev.  0, or
 * -EINVAL after one message naming the option and the bad part (exit 2).
 */
int vb_devmap_parse(struct vb_params *p);
/*
 * Which of the ndev probed devices each pair uses (pure): --pair-devices, else
 * pair i -> device i % ndev; the peer side (loopback) the same unless mapped.
 * dev_of / peer_of [pairs] receive indices into sh->dev.
 */
void vb_devmap_assign(const struct vb_params *p, unsigned ndev, unsigned *dev_of, unsigned *peer_of);

#endif
