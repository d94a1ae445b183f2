/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Port counters around each point's timed window (vb_counters.h): sysfs
 * counters/ and hw_counters/ of the device ports a run uses.
 */
#include "vb_counters.h"

#include "pb_env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VB_SYSFS_IB "/sys/class/infiniband"

/* the sysfs directories, then the ethtool source's name in the records */
static const char *const vb_cnt_dirs[VB_CNT_SOURCES] = { "counters", "hw_counters", "ethtool" };

static int vb_cnt_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Names of one directory, sorted, appended to cs.  Number added (0 when absent). */
static unsigned vb_cnt_list(struct vb_counter_set *cs, const char *dir, enum vb_cnt_source src)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned first = cs->n;

	if (!d)
		return 0;
	while ((e = readdir(d)) && cs->n < VB_CNT_MAX) {
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.' || len >= VB_CNT_NAME || !strcmp(e->d_name, "lifespan"))
			continue; /* lifespan: hw_counters' refresh period, not a counter */
		memcpy(cs->name[cs->n], e->d_name, len + 1); /* fits: len < VB_CNT_NAME */
		cs->source[cs->n++] = (unsigned char)src;
	}
	closedir(d);
	qsort(cs->name[first], cs->n - first, VB_CNT_NAME, vb_cnt_cmp);
	return cs->n - first;
}

int vb_counter_set_open(struct vb_counter_set *cs, const char *root, const char *device, unsigned port)
{
	char dir[PATH_MAX];
	unsigned found = 0;

	memset(cs, 0, sizeof(*cs));
	snprintf(cs->device, sizeof(cs->device), "%s", device);
	cs->port = port;
	for (unsigned s = 0; s < 2; s++) {
		snprintf(dir, sizeof(dir), "%s/%s/ports/%u/%s", root ? root : VB_SYSFS_IB, device, port,
			 vb_cnt_dirs[s]);
		found += vb_cnt_list(cs, dir, (enum vb_cnt_source)s);
	}
	return found ? 0 : -ENOENT;
}

int vb_counter_set_add_ethtool(struct vb_counter_set *cs, const char *netdev)
{
	int rc;

	if (!netdev || !netdev[0])
		return 0;
	if ((rc = vb_ethtool_open(&cs->eth, netdev)))
		return rc;
	cs->eth_first = cs->n;
	for (unsigned i = 0; i < cs->eth.n && cs->n < VB_CNT_MAX; i++) {
		memcpy(cs->name[cs->n], cs->eth.name[i], VB_CNT_NAME);
		cs->source[cs->n++] = VB_CNT_ETHTOOL;
	}
	cs->eth_n = cs->n - cs->eth_first;
	return 0;
}

void vb_counter_set_close(struct vb_counter_set *cs)
{
	vb_ethtool_close(&cs->eth);
}

/* One counter file: a decimal integer.  false when unreadable (some hw_counters refuse: EOPNOTSUPP). */
static bool vb_cnt_value(const char *path, int64_t *v)
{
	char buf[64], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	errno = 0;
	unsigned long long u = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return false;
	*v = u > INT64_MAX ? INT64_MAX : (int64_t)u;
	return true;
}

void vb_counter_set_read(const struct vb_counter_set *cs, const char *root, int64_t *vals, bool *ok)
{
	char path[PATH_MAX];

	for (unsigned i = 0; i < cs->n; i++) {
		if (cs->source[i] == VB_CNT_ETHTOOL)
			continue;
		snprintf(path, sizeof(path), "%s/%s/ports/%u/%s/%s", root ? root : VB_SYSFS_IB, cs->device,
			 cs->port, vb_cnt_dirs[cs->source[i]], cs->name[i]);
		vals[i] = 0;
		ok[i] = vb_cnt_value(path, &vals[i]);
	}
	if (cs->eth.n) {
		int64_t eth[VB_CNT_MAX];
		int64_t *all = cs->eth.n <= VB_CNT_MAX ? eth : malloc(cs->eth.n * sizeof(*all));
		bool got = all && !vb_ethtool_read(&cs->eth, all);

		for (unsigned k = 0; k < cs->eth_n; k++) {
			vals[cs->eth_first + k] = got ? all[k] : 0;
			ok[cs->eth_first + k] = got;
		}
		if (all != eth)
			free(all);
	}
}

void vb_counter_set_json(FILE *f, const struct vb_counter_set *cs, uint64_t msg_size_bytes,
			 const int64_t *after, const bool *ok, bool *first)
{
	for (unsigned s = 0; s < VB_CNT_SOURCES; s++) {
		bool any = false;

		for (unsigned i = 0; i < cs->n; i++) {
			if (cs->source[i] != s || !ok[i] || !cs->before_ok[i])
				continue;
			if (!any) {
				fprintf(f, "%s\n    {\"msg_size_bytes\": %" PRIu64 ", \"device\": ", *first ? "" : ",",
					msg_size_bytes);
				pb_env_str(f, cs->device);
				fprintf(f, ", \"port\": %u, \"source\": \"%s\", \"deltas\": {", cs->port, vb_cnt_dirs[s]);
				*first = false;
			}
			/* A counter that went backwards was reset or wrapped: the negative delta says so. */
			fprintf(f, "%s\"%s\": %" PRId64, any ? ", " : "", cs->name[i], after[i] - cs->before[i]);
			any = true;
		}
		if (any)
			fputs("}}", f);
	}
}

int vb_counters_init(struct vb_counters *c, const char *const *devices, const char *const *netdevs,
		     unsigned ndev, unsigned port, const char *root, FILE *out)
{
	memset(c, 0, sizeof(*c));
	c->root = root;
	c->out = out;
	c->first = true;
	c->set = calloc(ndev ? ndev : 1, sizeof(*c->set));
	if (!c->set)
		return -ENOMEM;
	for (unsigned d = 0; d < ndev; d++) {
		struct vb_counter_set *cs = &c->set[c->nset];

		if (vb_counter_set_open(cs, root, devices[d], port))
			continue;
		if (netdevs && vb_counter_set_add_ethtool(cs, netdevs[d]) == -ENOMEM) {
			vb_counter_set_close(cs);
			continue;
		}
		c->nset++;
	}
	return 0;
}

void vb_counters_free(struct vb_counters *c)
{
	if (!c)
		return;
	for (unsigned d = 0; d < c->nset; d++)
		vb_counter_set_close(&c->set[d]);
	free(c->set);
	c->set = NULL;
	c->nset = 0;
}

int vb_counters_edge(struct vb_counters *c, uint64_t msg_size_bytes, bool after)
{
	int64_t vals[VB_CNT_MAX];
	bool ok[VB_CNT_MAX];

	for (unsigned d = 0; d < c->nset; d++) {
		struct vb_counter_set *cs = &c->set[d];

		if (!after) {
			vb_counter_set_read(cs, c->root, cs->before, cs->before_ok);
			continue;
		}
		vb_counter_set_read(cs, c->root, vals, ok);
		vb_counter_set_json(c->out, cs, msg_size_bytes, vals, ok, &c->first);
	}
	if (after && c->out && (fflush(c->out) || ferror(c->out)))
		return -EIO;
	return 0;
}
