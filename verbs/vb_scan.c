/* SPDX-License-Identifier: BSD-3-Clause */
/* --scan: this rank's node pair, side and peer in one round of a fabric scan (vb_scan.h). */
#include "vb_scan.h"

#include "vb_nodes.h"

#include "pb_log.h"
#include "pb_scan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vb_scan_pick {
	struct vb_params *p;
	long self, peer;
};

static int vb_scan_pick(void *ctx, long node, const char *name, const char *addr)
{
	struct vb_scan_pick *k = ctx;

	/* memcpy of the checked length: snprintf would draw -Wformat-truncation at -O0 */
	if (node == k->self)
		memcpy(k->p->host_name, name, strlen(name) + 1);
	if (node == k->peer) {
		memcpy(k->p->peer_name, name, strlen(name) + 1);
		snprintf(k->p->peer_addr, sizeof(k->p->peer_addr), "%s", addr);
	}
	return 0;
}

/* The names and address of lines `self` and `peer` (-1: none); the number of nodes, or -errno. */
static long vb_scan_hosts(struct vb_params *p, long self, long peer)
{
	struct vb_scan_pick k = { p, self, peer };

	return vb_hosts_read("--scan-hosts", p->scan_hosts, vb_scan_pick, &k);
}

/* The round (--scan) and the job's nodes (--scan-hosts): the node count, or -EINVAL. */
static long vb_scan_spec(struct vb_params *p, struct pb_scan *s, long rank, const char *var)
{
	char spec[256], err[256] = "";
	long nodes, size;

	snprintf(spec, sizeof(spec), ":%s", p->scan);
	if (pb_scan_parse(spec, s, err, sizeof(err)) || s->last != s->first) {
		pb_log_error("option --scan %s: expected ROUND[,skip=I[,J...]] (one round, from 1)%s%s", p->scan,
			     err[0] ? ": " : "", err);
		return -EINVAL;
	}
	if ((nodes = vb_scan_hosts(p, -1, -1)) < 0)
		return -EINVAL;
	size = vb_launcher_size();
	if (rank >= nodes || (size && size != nodes)) {
		pb_log_error("--scan: %s=%ld of %ld ranks, --scan-hosts %s lists %ld nodes: one rank per node, rank i on line i",
			     var, rank, size, p->scan_hosts, nodes);
		return -EINVAL;
	}
	if (s->first > pb_scan_total((int)nodes + s->n_skip)) {
		pb_log_error("option --scan %s: the scan of %ld nodes (%ld in the job + %d skipped) has rounds 1..%d",
			     p->scan, nodes + s->n_skip, nodes, s->n_skip, pb_scan_total((int)nodes + s->n_skip));
		return -EINVAL;
	}
	if (pb_scan_rounds(s, (int)nodes, err, sizeof(err)) < 0) {
		pb_log_error("option --scan %s: %s", p->scan, err);
		return -EINVAL;
	}
	return nodes;
}

/* This rank's node pair in round s->round: 0 with *peer and *client set, or -ENOENT (bye). */
static int vb_scan_pair(const struct pb_scan *s, long nodes, long rank, long *peer, bool *client)
{
	int (*ab)[2] = calloc((size_t)nodes / 2 + 1, sizeof(*ab));
	int n, rc = -ENOENT;

	if (!ab) {
		pb_log_error("--scan: %ld nodes: out of memory", nodes);
		return -ENOMEM;
	}
	n = pb_scan_links(s, (int)nodes, ab, (int)nodes / 2 + 1);
	for (int i = 0; i < n && rc; i++) {
		if (ab[i][0] == rank || ab[i][1] == rank) {
			*client = ab[i][0] == rank;
			*peer = *client ? ab[i][1] : ab[i][0];
			rc = 0;
		}
	}
	free(ab);
	return rc;
}

int vb_scan_role(struct vb_params *p)
{
	struct pb_scan s;
	const char *var = NULL;
	long rank = 0, nodes, peer = -1;
	bool client = false;
	int rc;

	if (p->server || p->connect || p->loopback) {
		pb_log_error("--scan takes the side and the peer from the round: no --server, --connect or --loopback");
		return -EINVAL;
	}
	if (!p->scan_hosts) {
		pb_log_error("--scan needs --scan-hosts FILE (the job's nodes, one per line, in rank order)");
		return -EINVAL;
	}
	if ((rc = vb_launcher_rank(&rank, &var))) {
		if (rc == -ENOENT)
			pb_log_error("--scan: no launcher rank (OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID): start one rank per node with mpirun or srun");
		return -EINVAL;
	}
	if ((nodes = vb_scan_spec(p, &s, rank, var)) < 0)
		return -EINVAL;
	rc = vb_scan_pair(&s, nodes, rank, &peer, &client);
	if (rc && rc != -ENOENT)
		return -EINVAL;
	if (vb_scan_hosts(p, rank, peer) < 0)
		return -EINVAL;
	snprintf(p->scan_label, sizeof(p->scan_label), "scan:%d", s.round);
	if (rc == -ENOENT) {
		p->scan_bye = true;
		pb_log_info("%s: node %s sits this round out", p->scan_label, p->host_name);
		return 0;
	}
	if (vb_rank_outputs(p, "--scan", rank))
		return -EINVAL;
	p->server = !client;
	p->side = client ? VB_CLIENT : VB_SERVER;
	p->peer_host = client ? p->peer_addr : NULL;
	p->connect = p->peer_host;
	pb_log_info("%s: node %s (%s=%ld) is side %s of %s-%s: the %s", p->scan_label, p->host_name, var, rank,
		    client ? "A" : "B", client ? p->host_name : p->peer_name,
		    client ? p->peer_name : p->host_name, client ? "client" : "server");
	return 0;
}
