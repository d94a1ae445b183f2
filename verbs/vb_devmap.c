/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several devices in one run: which devices (-d NAME,NAME... | -d all) and
 * which pair uses which (--pair-devices PAIR:DEV[:PEERDEV],... or round-robin).
 * Parsing checks syntax only; the probe child checks that the names exist.
 */
#include "vb_devmap.h"

#include "pb_log.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Index of name in p->dev_names, appending it when add; -1 when absent (or full). */
static int vb_devmap_index(struct vb_params *p, const char *name, size_t len, bool add)
{
	for (unsigned i = 0; i < p->ndev_names; i++)
		if (strlen(p->dev_names[i]) == len && !strncmp(p->dev_names[i], name, len))
			return (int)i;
	if (!add || p->ndev_names >= VB_MAX_DEVS)
		return -1;
	snprintf(p->dev_names[p->ndev_names], VB_DEV_NAME, "%.*s", (int)len, name);
	return (int)p->ndev_names++;
}

/* A device name: 1..63 of [A-Za-z0-9_.-]. */
static bool vb_devmap_name_ok(const char *s, size_t len)
{
	if (!len || len >= VB_DEV_NAME)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

static int vb_devmap_list(struct vb_params *p)
{
	const char *s = p->device;

	if (!strcmp(s, "all")) {
		p->dev_all = true;
		return 0;
	}
	for (;;) {
		size_t len = strcspn(s, ",");

		if (!vb_devmap_name_ok(s, len)) {
			pb_log_error("option -d/--device: '%.*s' in '%s' is not a device name (a list is NAME,NAME,...; or 'all')",
				     (int)(len > 64 ? 64 : len), s, p->device);
			return -EINVAL;
		}
		if (vb_devmap_index(p, s, len, false) >= 0) {
			pb_log_error("option -d/--device: %.*s is listed twice", (int)len, s);
			return -EINVAL;
		}
		if (vb_devmap_index(p, s, len, true) < 0) {
			pb_log_error("option -d/--device: at most %d devices", VB_MAX_DEVS);
			return -EINVAL;
		}
		if (!s[len])
			return 0;
		s += len + 1;
	}
}

/* One DEV of --pair-devices: its index (added unless -d listed the devices). */
static int vb_devmap_dev(struct vb_params *p, const char *s, size_t len, bool listed, const char *item)
{
	int i;

	if (!vb_devmap_name_ok(s, len)) {
		pb_log_error("option --pair-devices: '%s' is not PAIR:DEVICE or PAIR:DEVICE:PEER_DEVICE", item);
		return -EINVAL;
	}
	i = vb_devmap_index(p, s, len, !listed);
	if (i < 0 && listed)
		pb_log_error("option --pair-devices: %.*s is not one of -d %s", (int)len, s, p->device);
	else if (i < 0)
		pb_log_error("option --pair-devices: at most %d devices", VB_MAX_DEVS);
	return i < 0 ? -EINVAL : i;
}

static int vb_devmap_pairs(struct vb_params *p)
{
	bool listed = p->ndev_names > 0;
	char item[160];
	const char *s = p->pair_devices;
	unsigned seen = 0;

	for (;;) {
		size_t len = strcspn(s, ",");
		char *end;
		unsigned long pair;

		snprintf(item, sizeof(item), "%.*s", (int)(len > 150 ? 150 : len), s);
		pair = strtoul(item, &end, 10);
		if (!isdigit((unsigned char)item[0]) || *end != ':') {
			pb_log_error("option --pair-devices: '%s' is not PAIR:DEVICE or PAIR:DEVICE:PEER_DEVICE", item);
			return -EINVAL;
		}
		if (pair >= p->pairs) {
			pb_log_error("option --pair-devices: pair %lu in '%s' does not exist (--pairs %u: 0..%u)", pair,
				     item, p->pairs, p->pairs - 1);
			return -EINVAL;
		}
		if (p->pair_dev[pair] >= 0) {
			pb_log_error("option --pair-devices: pair %lu is mapped twice", pair);
			return -EINVAL;
		}
		const char *dev = end + 1, *peer = strchr(dev, ':');
		size_t dlen = peer ? (size_t)(peer - dev) : strlen(dev);
		int d = vb_devmap_dev(p, dev, dlen, listed, item), pd = -1;

		if (d < 0)
			return d;
		if (peer) {
			if (!p->loopback) {
				pb_log_error("option --pair-devices: '%s': a peer device is for --loopback only (across nodes each side maps its own devices)",
					     item);
				return -EINVAL;
			}
			if ((pd = vb_devmap_dev(p, peer + 1, strlen(peer + 1), listed, item)) < 0)
				return pd;
		}
		p->pair_dev[pair] = d;
		p->pair_peer_dev[pair] = pd;
		seen++;
		if (!s[len])
			break;
		s += len + 1;
	}
	if (seen != p->pairs) {
		for (unsigned i = 0; i < p->pairs; i++) {
			if (p->pair_dev[i] < 0) {
				pb_log_error("option --pair-devices: pair %u has no device (map every pair 0..%u, or leave the option out for round-robin)",
					     i, p->pairs - 1);
				break;
			}
		}
		return -EINVAL;
	}
	return 0;
}

int vb_devmap_parse(struct vb_params *p)
{
	int rc;

	p->ndev_names = 0;
	p->dev_all = false;
	for (unsigned i = 0; i < VB_MAX_PAIRS; i++)
		p->pair_dev[i] = p->pair_peer_dev[i] = -1;
	if (p->device && (rc = vb_devmap_list(p)))
		return rc;
	if (!p->pair_devices)
		return 0;
	if (p->dev_all) {
		pb_log_error("option --pair-devices names the devices itself: not with -d all");
		return -EINVAL;
	}
	return vb_devmap_pairs(p);
}

void vb_devmap_assign(const struct vb_params *p, unsigned ndev, unsigned *dev_of, unsigned *peer_of)
{
	for (unsigned i = 0; i < p->pairs; i++) {
		dev_of[i] = p->pair_dev[i] >= 0 ? (unsigned)p->pair_dev[i] : i % (ndev ? ndev : 1);
		peer_of[i] = p->pair_peer_dev[i] >= 0 ? (unsigned)p->pair_peer_dev[i] : dev_of[i];
	}
}
