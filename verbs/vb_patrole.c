/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --pattern P --pattern-hosts FILE: this launch's node and its flows.  One rank per node
 * (mpirun, srun): rank i is the node of the file's line i, as in --scan.  The flows come
 * from core/pb_pattern.c through vb_pattern_node (the same function the unit test holds
 * equal to pairbench-mpi's assignment); this file only reads the launcher's rank and the
 * host file and fills the params (vb.h: struct vb_params, pattern part).
 */
#include "vb_patrole.h"

#include "pb_log.h"
#include "vb_nodes.h"
#include "vb_pattern.h"
#include "vb_probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vb_patrole_pick {
	struct vb_params *p;
	long self;
};

/* This node's name, and each worker's peer's name and address. */
static int vb_patrole_pick(void *ctx, long node, const char *name, const char *addr)
{
	struct vb_patrole_pick *k = ctx;
	struct vb_params *p = k->p;

	if (node == k->self) {
		memcpy(p->host_name, name, strlen(name) + 1);
		/* an explicit ADDR: this node's servers listen on it (several nodes may share a
		 * device's first address, e.g. the rig's nodes on one VM) */
		snprintf(p->pat_self_addr, sizeof(p->pat_self_addr), "%s", strcmp(addr, name) ? addr : "");
	}
	/* the flows' workers, and the victim probe's (member pairs) when this node runs it */
	for (unsigned m = 0; m < p->pairs + p->probe_here; m++) {
		if (p->pat[m].peer_node != node)
			continue;
		memcpy(p->pat[m].peer_name, name, strlen(name) + 1);
		snprintf(p->pat[m].peer_addr, sizeof(p->pat[m].peer_addr), "%s", addr);
	}
	return 0;
}

/* The rounds of the cross-node start (the same on every node: computed from all the flows). */
static int vb_patrole_meet(struct vb_params *p, const struct pb_pattern *pat, long nodes)
{
	long room = nodes * (long)p->c.pairs / 2 + 1;
	struct pb_flow *f = calloc((size_t)room, sizeof(*f));
	char err[512] = "";
	int n;

	if (!f) {
		pb_log_error("--pattern %s: out of memory for the flows", pat->name);
		return -ENOMEM;
	}
	n = pb_pattern_flows(pat, (int)nodes, (int)p->c.pairs, f, (int)room, err, sizeof(err));
	p->pat_meet_rounds = n > 0 ? pb_pattern_meet_rounds(f, n, (int)nodes, &p->pat_one_group) : 0;
	free(f);
	if (n < 0 || p->pat_meet_rounds < 0) {
		pb_log_error("%s", n < 0 ? err : "out of memory for the flows' node graph");
		return -EINVAL;
	}
	if (!p->pat_one_group)
		pb_log_warn("--pattern %s: its flows form node groups that never meet: each group starts together, the groups do not",
			    pat->name);
	return 0;
}

/* The node's workers, clients first (members 0..pat_clients-1), then servers. */
static int vb_patrole_members(struct vb_params *p, const struct pb_pattern *pat, long nodes, long rank)
{
	struct vb_pattern_worker w[VB_MAX_PAIRS];
	char err[512] = "";
	int n, flows = 0, rc;
	unsigned m = 0;

	n = vb_pattern_node(pat, (int)nodes, (int)p->c.pairs, (int)rank, w, VB_MAX_PAIRS, &flows, err,
			    sizeof(err));
	if (n < 0) {
		pb_log_error("%s", err);
		return -EINVAL;
	}
	if ((rc = vb_patrole_meet(p, pat, nodes)))
		return rc;
	for (int client = 1; client >= 0; client--) {
		for (int i = 0; i < n; i++) {
			if (w[i].client != (bool)client)
				continue;
			p->pat[m] = (struct vb_pat_member){
				.flow = (unsigned)w[i].flow, .port_off = (unsigned)w[i].port_offset,
				.slot = w[i].slot, .peer_node = w[i].peer_node, .peer_slot = w[i].peer_slot,
			};
			m++;
		}
		if (client)
			p->pat_clients = m;
	}
	p->pairs = m;
	if (vb_probe_place(p, pat, flows, rank))
		return -EINVAL;
	pb_log_info("pattern %s over %ld nodes x %llu slots (%d flows, cross-node start in %d rounds): node %ld is the client of %u, the server of %u",
		    pat->name, nodes, (unsigned long long)p->c.pairs, flows, p->pat_meet_rounds, rank, p->pat_clients,
		    m - p->pat_clients);
	return 0;
}

int vb_pattern_role(struct vb_params *p)
{
	struct pb_pattern pat;
	struct vb_patrole_pick k = { .p = p };
	const char *var = NULL;
	char err[512] = "";
	long rank = 0, nodes, size;
	int rc;

	if (p->scan || p->server || p->connect || p->loopback) {
		pb_log_error("--pattern takes each node's sides and peers from the pattern: no --scan, --server, --connect or --loopback");
		return -EINVAL;
	}
	if (!p->pattern_hosts) {
		pb_log_error("--pattern needs --pattern-hosts FILE (the job's nodes, one per line, in rank order)");
		return -EINVAL;
	}
	if (p->test_desc->load_client.ops) {
		pb_log_error("--pattern: %s has its own roles (a probe pair and loading pairs); use a latency or bandwidth test",
			     p->test_desc->info.name);
		return -EINVAL;
	}
	if (p->pair_devices) {
		pb_log_error("--pattern: no --pair-devices (the node's workers are its flows; -d LIST spreads them round-robin)");
		return -EINVAL;
	}
	if (strchr(p->pattern, '/')) {
		pb_log_error("--pattern %.200s: pairbench-verbs runs one pattern per launch (no '/')", p->pattern);
		return -EINVAL;
	}
	if (pb_pattern_parse(p->pattern, &pat, err, sizeof(err))) {
		pb_log_error("%s", err);
		return -EINVAL;
	}
	pat.slot_noun = "slots per node (--pairs)";
	if ((rc = vb_launcher_rank(&rank, &var))) {
		if (rc == -ENOENT)
			pb_log_error("--pattern: no launcher rank (OMPI_COMM_WORLD_RANK, PMIX_RANK or SLURM_PROCID): start one rank per node with mpirun or srun");
		return -EINVAL;
	}
	if ((nodes = vb_hosts_read("--pattern-hosts", p->pattern_hosts, NULL, NULL)) < 0)
		return -EINVAL;
	size = vb_launcher_size();
	if (rank >= nodes || (size && size != nodes)) {
		pb_log_error("--pattern: %s=%ld of %ld ranks, --pattern-hosts %s lists %ld nodes: one rank per node, rank i on line i",
			     var, rank, size, p->pattern_hosts, nodes);
		return -EINVAL;
	}
	rc = pb_pattern_rounds(&pat, (int)nodes, err, sizeof(err));
	if (rc != 1) {
		if (rc < 0)
			pb_log_error("%s", err);
		else
			pb_log_error("--pattern %s: %d rounds; pairbench-verbs runs one round per launch (--pattern scan:R, or --scan R)",
				     p->pattern, rc);
		return -EINVAL;
	}
	if (strlen(pat.name) >= sizeof(p->pat_label)) {
		pb_log_error("--pattern %.200s...: the name is longer than %zu characters", pat.name,
			     sizeof(p->pat_label) - 1);
		return -EINVAL;
	}
	memcpy(p->pat_label, pat.name, strlen(pat.name) + 1);
	if (vb_patrole_members(p, &pat, nodes, rank))
		return -EINVAL;
	k.self = rank;
	if (vb_hosts_read("--pattern-hosts", p->pattern_hosts, vb_patrole_pick, &k) < 0)
		return -EINVAL;
	p->side = p->pat_clients ? VB_CLIENT : VB_SERVER;
	/* A node that only receives (the incast target) reports its incoming flows itself:
	 * the bandwidth tests, whose client windows it can put on its own clock. */
	p->pat_target = p->pairs && !p->pat_clients &&
			(p->test_desc->info.kind == PB_TK_BANDWIDTH || p->test_desc->info.kind == PB_TK_MESSAGE_RATE);
	p->server = !p->pat_clients;
	if (!p->pairs) {
		pb_log_info("%s: node %s (%s=%ld) has no flow in this pattern", p->pat_label, p->host_name, var, rank);
		return 0;
	}
	return vb_rank_outputs(p, "--pattern", rank);
}
