/* SPDX-License-Identifier: BSD-3-Clause */
/* --scan: this rank's node pair, side and peer in one round of a fabric scan (vb_scan.h). */
#include "vb_scan.h"

#include "pb_log.h"
#include "pb_scan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VB_SCAN_MAX_NODES 1000000

int vb_launcher_rank(long *rank, const char **var)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);
		char *end;

		if (!v)
			continue;
		errno = 0;
		*rank = strtol(v, &end, 10);
		*var = vars[i];
		if (!*v || *end || errno || *rank < 0) {
			pb_log_error("%s=%.40s is not a rank (a non-negative integer)", vars[i], v);
			return -EINVAL;
		}
		return 0;
	}
	return -ENOENT;
}

/* The ranks of the job, where the launcher says (Open MPI, Slurm); 0 unknown. */
static long vb_launcher_size(void)
{
	const char *v = getenv("OMPI_COMM_WORLD_SIZE");

	if (!v)
		v = getenv("SLURM_NTASKS");
	return v ? strtol(v, NULL, 10) : 0;
}

/*
 * The host file: one node per line, "NAME [ADDR]" (further words, e.g. an
 * mpirun hostfile's slots=1, ignored; blank lines and # comments skipped).
 * Copies the names and address of lines `self` and `peer` (-1: none) and
 * returns the number of nodes, or -errno after one error line.
 */
static long vb_scan_hosts(struct vb_params *p, long self, long peer)
{
	FILE *f = fopen(p->scan_hosts, "r");
	char line[512];
	long n = 0;

	if (!f) {
		pb_log_error("cannot open --scan-hosts %s: %s", p->scan_hosts, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[256], addr[256] = "";
		int words;

		line[strcspn(line, "#")] = '\0';
		words = sscanf(line, "%255s %255s", name, addr);
		if (words < 1)
			continue;
		if (strlen(name) >= sizeof(p->host_name)) {
			pb_log_error("--scan-hosts %s: node %ld: name longer than %zu characters", p->scan_hosts, n,
				     sizeof(p->host_name) - 1);
			fclose(f);
			return -EINVAL;
		}
		/* memcpy of the checked length: snprintf would draw -Wformat-truncation at -O0 */
		if (n == self)
			memcpy(p->host_name, name, strlen(name) + 1);
		if (n == peer) {
			memcpy(p->peer_name, name, strlen(name) + 1);
			snprintf(p->peer_addr, sizeof(p->peer_addr), "%s", words > 1 && !strchr(addr, '=') ? addr : name);
		}
		if (++n > VB_SCAN_MAX_NODES)
			break;
	}
	fclose(f);
	if (n > VB_SCAN_MAX_NODES) {
		pb_log_error("--scan-hosts %s: more than %d nodes", p->scan_hosts, VB_SCAN_MAX_NODES);
		return -EINVAL;
	}
	return n;
}

/* path with every %r replaced by rank; a path without %r is refused (ranks would share it). */
static int vb_scan_path(const char *opt, const char *path, long rank, char *out, size_t len)
{
	size_t o = 0;

	if (!strstr(path, "%r")) {
		pb_log_error("--scan: %s %s names one file for every rank: put %%r in it (the rank)", opt, path);
		return -EINVAL;
	}
	for (const char *s = path; *s; s++) {
		int n = s[0] == '%' && s[1] == 'r' ? snprintf(out + o, len - o, "%ld", rank)
						   : snprintf(out + o, len - o, "%c", *s);

		if (n < 0 || (size_t)n >= len - o) {
			pb_log_error("--scan: %s %s: path too long", opt, path);
			return -EINVAL;
		}
		o += (size_t)n;
		s += s[0] == '%' && s[1] == 'r';
	}
	return 0;
}

/* --output and --env-json of this rank (%r replaced); 0 or -EINVAL. */
static int vb_scan_outputs(struct vb_params *p, long rank)
{
	if (p->c.output) {
		if (vb_scan_path("--output", p->c.output, rank, p->scan_output, sizeof(p->scan_output)))
			return -EINVAL;
		p->c.output = p->scan_output;
	}
	if (p->c.env_json) {
		if (vb_scan_path("--env-json", p->c.env_json, rank, p->scan_env_json, sizeof(p->scan_env_json)))
			return -EINVAL;
		p->c.env_json = p->scan_env_json;
	}
	return 0;
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
	if (vb_scan_outputs(p, rank))
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
