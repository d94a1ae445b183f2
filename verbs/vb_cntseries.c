/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters over time (vb_cntseries.h): the node's sampler of its ports' counters and their
 * network devices' statistics, one CSV line per sample.
 */
#include "vb_cntseries.h"

#include "pb_clock.h"
#include "pb_log.h"
#include "vb_counters.h"
#include "vb_signal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VB_NET_MAX 64            /* statistics/ files of one network device */

/* One network device's statistics/ names. */
struct vb_net_set {
	char dev[64];
	unsigned n;
	char name[VB_NET_MAX][VB_CNT_NAME];
};

/* Everything one sample reads. */
struct vb_cs_state {
	const struct vb_cntseries_cfg *cfg;
	struct vb_counter_set *sets;  /* [ndev] (n = 0: the device has no counters) */
	struct vb_net_set *net;       /* [ndev] (n = 0: none) */
	int64_t vals[VB_CNT_MAX];
	bool ok[VB_CNT_MAX];
	FILE *f;
};

static int vb_name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void vb_net_open(struct vb_net_set *ns, const char *root, const char *netdev)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	memset(ns, 0, sizeof(*ns));
	if (!netdev || !netdev[0])
		return;
	snprintf(ns->dev, sizeof(ns->dev), "%s", netdev);
	snprintf(dir, sizeof(dir), "%s/%s/statistics", root ? root : "/sys/class/net", netdev);
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d)) && ns->n < VB_NET_MAX) {
		size_t len = strlen(e->d_name);

		if (e->d_name[0] == '.' || len >= VB_CNT_NAME)
			continue;
		memcpy(ns->name[ns->n++], e->d_name, len + 1);
	}
	closedir(d);
	qsort(ns->name, ns->n, VB_CNT_NAME, vb_name_cmp);
}

/* One file's decimal value into f, or nothing (an empty cell) when unreadable. */
static void vb_cs_value(FILE *f, const char *path)
{
	char buf[64], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	fputc(',', f);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	errno = 0;
	unsigned long long u = strtoull(buf, &end, 10);

	if (!errno && end != buf)
		fprintf(f, "%llu", u);
}

static void vb_cs_header(struct vb_cs_state *s)
{
	const struct vb_cntseries_cfg *c = s->cfg;
	static const char *const src[VB_CNT_SOURCES] = { "counters", "hw_counters", "ethtool" };

	fprintf(s->f, "# pairbench counters series 1\n# host=%s interval_s=%g", c->host, c->interval_s);
	for (unsigned d = 0; d < c->ndev; d++)
		if (s->net[d].n)
			fprintf(s->f, " netdev:%s=%s", c->devices[d], s->net[d].dev);
	fputs("\nt_mono_ns,t_unix_ns", s->f);
	for (unsigned d = 0; d < c->ndev; d++) {
		for (unsigned i = 0; i < s->sets[d].n; i++)
			fprintf(s->f, ",%s/%u/%s/%s", c->devices[d], c->port, src[s->sets[d].source[i]],
				s->sets[d].name[i]);
		for (unsigned i = 0; i < s->net[d].n; i++)
			fprintf(s->f, ",%s/%u/netdev/%s", c->devices[d], c->port, s->net[d].name[i]);
	}
	fputc('\n', s->f);
}

static void vb_cs_sample(struct vb_cs_state *s)
{
	const struct vb_cntseries_cfg *c = s->cfg;
	struct timespec rt;
	char path[PATH_MAX];
	uint64_t mono = pb_clock_now_ns();

	clock_gettime(CLOCK_REALTIME, &rt);
	fprintf(s->f, "%" PRIu64 ",%lld", mono, (long long)rt.tv_sec * 1000000000ll + rt.tv_nsec);
	for (unsigned d = 0; d < c->ndev; d++) {
		vb_counter_set_read(&s->sets[d], c->root, s->vals, s->ok);
		for (unsigned i = 0; i < s->sets[d].n; i++) {
			fputc(',', s->f);
			if (s->ok[i])
				fprintf(s->f, "%" PRId64, s->vals[i]);
		}
		for (unsigned i = 0; i < s->net[d].n; i++) {
			snprintf(path, sizeof(path), "%s/%s/statistics/%s",
				 c->net_root ? c->net_root : "/sys/class/net", s->net[d].dev, s->net[d].name[i]);
			vb_cs_value(s->f, path);
		}
	}
	fputc('\n', s->f);
	fflush(s->f);
}

int vb_cntseries_run(const struct vb_cntseries_cfg *cfg)
{
	struct vb_cs_state s = { .cfg = cfg };
	const uint64_t step = (uint64_t)(cfg->interval_s * 1e9);
	struct timespec next;
	int rc = 0;

	s.sets = calloc(cfg->ndev ? cfg->ndev : 1, sizeof(*s.sets));
	s.net = calloc(cfg->ndev ? cfg->ndev : 1, sizeof(*s.net));
	if (!s.sets || !s.net) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned d = 0; d < cfg->ndev; d++) {
		if (vb_counter_set_open(&s.sets[d], cfg->root, cfg->devices[d], cfg->port))
			s.sets[d].n = 0;
		else if (cfg->netdevs && !cfg->root)  /* a fake sysfs tree (tests) has no devices */
			vb_counter_set_add_ethtool(&s.sets[d], cfg->netdevs[d]);
		vb_net_open(&s.net[d], cfg->net_root, cfg->netdevs ? cfg->netdevs[d] : NULL);
	}
	if (!(s.f = fopen(cfg->path, "we"))) {
		rc = -errno;
		pb_log_error("--counters-series: cannot open %s: %s", cfg->path, strerror(-rc));
		goto out;
	}
	vb_cs_header(&s);
	/* The sleeps are absolute on CLOCK_MONOTONIC: samples stay on a grid (no drift). */
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned k = 0; !vb_interrupted && (!cfg->max_samples || k < cfg->max_samples); k++) {
		vb_cs_sample(&s);
		if (cfg->max_samples && k + 1 == cfg->max_samples)
			break;
		next.tv_nsec += (long)(step % 1000000000ull);
		next.tv_sec += (time_t)(step / 1000000000ull) + next.tv_nsec / 1000000000l;
		next.tv_nsec %= 1000000000l;
		while (!vb_interrupted && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	if (vb_interrupted)
		vb_cs_sample(&s);  /* the last: the workers have ended */
	if (ferror(s.f) | fclose(s.f)) {
		rc = -EIO;
		pb_log_error("--counters-series: writing %s failed", cfg->path);
	}
out:
	for (unsigned d = 0; s.sets && d < cfg->ndev; d++)
		vb_counter_set_close(&s.sets[d]);
	free(s.sets);
	free(s.net);
	return rc;
}

pid_t vb_cntseries_start(const struct vb_cntseries_cfg *cfg)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (pid > 0)
		return pid;
	vb_child_restore_mask();
	vb_signals_install();
	signal(SIGUSR1, SIG_IGN);  /* a soak's early stop is for the workers */
	prctl(PR_SET_NAME, "pbv-counters", 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(0);
	_exit(vb_cntseries_run(cfg) ? 1 : 0);
}

void vb_cntseries_stop(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD))
			return;
		usleep(10000);
	}
	pb_log_warn("--counters-series: the sampler (pid %d) did not end in 5 s: killing it", (int)pid);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}
