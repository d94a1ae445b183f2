/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A network device's `ethtool -S` statistics through SIOCETHTOOL (vb_ethtool.h).
 */
#include "vb_ethtool.h"

#include <ctype.h>
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Is the digit run at name[i] a queue's or channel's index?  After a token "rx", "tx", "ch",
 * "rq", "sq" or "xdp" (mlx5: rx0_packets), after "queue_" (veth: rx_queue_0_drops), after '-'
 * (i40e: tx-2.tx_bytes), or inside a leading "[...]" (bnxt: [3]: rx_ucast_packets). */
static bool vb_eth_queue_index(const char *name, size_t i)
{
	static const char *const tok[] = { "rx", "tx", "ch", "rq", "sq", "xdp" };
	size_t start = i, end = i;

	while (isdigit((unsigned char)name[end]))
		end++;
	if (name[end] && !strchr("_.]", name[end]))  /* an index ends its token: tx2rx is a name */
		return false;
	if (i > 0 && name[i - 1] == '-')
		return true;
	if (name[0] == '[' && !memchr(name, ']', i))
		return true;
	if (i >= 6 && !memcmp(name + i - 6, "queue_", 6))
		return true;
	while (start > 0 && isalpha((unsigned char)name[start - 1]))
		start--;
	if (start > 0 && name[start - 1] != '_')
		return false;
	for (size_t t = 0; t < sizeof(tok) / sizeof(tok[0]); t++)
		if (i - start == strlen(tok[t]) && !memcmp(name + start, tok[t], i - start))
			return true;
	return false;
}

bool vb_ethtool_name(const char *name, char *out)
{
	size_t o = 0;
	bool queue = false;

	for (size_t i = 0; name[i] && o + 1 < VB_ETH_NAME;) {
		if (isdigit((unsigned char)name[i]) && (i == 0 || !isdigit((unsigned char)name[i - 1])) &&
		    vb_eth_queue_index(name, i)) {
			out[o++] = '*';
			while (isdigit((unsigned char)name[i]))
				i++;
			queue = true;
			continue;
		}
		/* the records are CSV columns DEV/PORT/ethtool/NAME and JSON keys: nothing else */
		out[o++] = isalnum((unsigned char)name[i]) || strchr("_-.:[]* ", name[i]) ? name[i] : '_';
		i++;
	}
	out[o] = 0;
	return queue;
}

static int vb_eth_ioctl(const char *dev, void *data)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = data;
	if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static int vb_eth_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int vb_ethtool_open(struct vb_ethtool *e, const char *netdev)
{
	struct { struct ethtool_sset_info hdr; uint32_t n; } info;
	struct ethtool_gstrings *gs = NULL;
	char (*names)[VB_ETH_NAME] = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	if (!netdev || !netdev[0] || strlen(netdev) >= sizeof(e->dev))
		return -ENODEV;
	snprintf(e->dev, sizeof(e->dev), "%s", netdev);
	if (!if_nametoindex(netdev))
		return -ENODEV;
	memset(&info, 0, sizeof(info));
	info.hdr.cmd = ETHTOOL_GSSET_INFO;
	info.hdr.sset_mask = 1ull << ETH_SS_STATS;
	rc = vb_eth_ioctl(netdev, &info);
	if (rc || !(info.hdr.sset_mask & (1ull << ETH_SS_STATS)) || !info.n)
		return rc == -ENODEV ? rc : 0;  /* no statistics: nothing to record */
	e->total = info.n;
	gs = calloc(1, sizeof(*gs) + (size_t)e->total * ETH_GSTRING_LEN);
	names = calloc(e->total, sizeof(*names));
	e->slot = calloc(e->total, sizeof(*e->slot));
	if (!gs || !names || !e->slot) {
		rc = -ENOMEM;
		goto fail;
	}
	gs->cmd = ETHTOOL_GSTRINGS;
	gs->string_set = ETH_SS_STATS;
	gs->len = e->total;
	if ((rc = vb_eth_ioctl(netdev, gs)))
		goto fail;
	/* The recorded names: each statistic's name with its queue index as "*", once each. */
	for (unsigned i = 0; i < e->total; i++) {
		char raw[ETH_GSTRING_LEN + 1];

		memcpy(raw, gs->data + (size_t)i * ETH_GSTRING_LEN, ETH_GSTRING_LEN);
		raw[ETH_GSTRING_LEN] = 0;
		vb_ethtool_name(raw, names[i]);
	}
	e->name = calloc(e->total, sizeof(*e->name));
	if (!e->name) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(e->name, names, (size_t)e->total * sizeof(*names));
	qsort(e->name, e->total, sizeof(*e->name), vb_eth_cmp);
	for (unsigned i = 0; i < e->total; i++)
		if (!e->n || strcmp(e->name[e->n - 1], e->name[i]))
			memmove(e->name[e->n++], e->name[i], VB_ETH_NAME);
	for (unsigned i = 0; i < e->total; i++) {
		char (*hit)[VB_ETH_NAME] = bsearch(names[i], e->name, e->n, sizeof(*e->name), vb_eth_cmp);

		e->slot[i] = (uint32_t)(hit - e->name);  /* every name is there: it was listed above */
	}
	free(gs);
	free(names);
	return 0;
fail:
	free(gs);
	free(names);
	vb_ethtool_close(e);
	return rc;
}

void vb_ethtool_close(struct vb_ethtool *e)
{
	free(e->name);
	free(e->slot);
	e->name = NULL;
	e->slot = NULL;
	e->n = e->total = 0;
}

int vb_ethtool_read(const struct vb_ethtool *e, int64_t *vals)
{
	struct ethtool_stats *st;
	int rc;

	if (!e->total)
		return 0;
	st = calloc(1, sizeof(*st) + (size_t)e->total * sizeof(uint64_t));
	if (!st)
		return -ENOMEM;
	st->cmd = ETHTOOL_GSTATS;
	st->n_stats = e->total;
	rc = vb_eth_ioctl(e->dev, st);
	if (!rc && st->n_stats != e->total)
		rc = -ESTALE;  /* the device's statistics changed (a reconfiguration): unreadable */
	if (!rc) {
		memset(vals, 0, e->n * sizeof(*vals));
		for (unsigned i = 0; i < e->total; i++) {  /* a sum beyond INT64_MAX stays there */
			uint64_t v = st->data[i], acc = (uint64_t)vals[e->slot[i]];

			vals[e->slot[i]] = v > (uint64_t)INT64_MAX - acc ? INT64_MAX : (int64_t)(acc + v);
		}
	}
	free(st);
	return rc;
}
