/* SPDX-License-Identifier: BSD-3-Clause */
/* The job's nodes for a launch per node (--scan, --pattern): launcher rank, host file, %r paths (vb_nodes.h). */
#include "vb_nodes.h"

#include "pb_log.h"

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
long vb_launcher_size(void)
{
	const char *v = getenv("OMPI_COMM_WORLD_SIZE");

	if (!v)
		v = getenv("SLURM_NTASKS");
	return v ? strtol(v, NULL, 10) : 0;
}

long vb_hosts_read(const char *opt, const char *path,
		   int (*fn)(void *ctx, long node, const char *name, const char *addr), void *ctx)
{
	FILE *f = fopen(path, "r");
	char line[512];
	long n = 0;

	if (!f) {
		pb_log_error("cannot open %s %s: %s", opt, path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[256], addr[256] = "";
		int words;

		line[strcspn(line, "#")] = '\0';
		words = sscanf(line, "%255s %255s", name, addr);
		if (words < 1)
			continue;
		if (strlen(name) >= VB_HOST_NAME_MAX) {
			pb_log_error("%s %s: node %ld: name longer than %d characters", opt, path, n,
				     VB_HOST_NAME_MAX - 1);
			fclose(f);
			return -EINVAL;
		}
		if (fn && fn(ctx, n, name, words > 1 && !strchr(addr, '=') ? addr : name)) {
			fclose(f);
			return -EINVAL;
		}
		if (++n > VB_SCAN_MAX_NODES)
			break;
	}
	if (ferror(f)) {  /* a directory opens, its first read fails: EISDIR, not "0 nodes" */
		int e = errno;

		pb_log_error("cannot read %s %s: %s", opt, path, strerror(e));
		fclose(f);
		return -e;
	}
	fclose(f);
	if (n > VB_SCAN_MAX_NODES) {
		pb_log_error("%s %s: more than %d nodes", opt, path, VB_SCAN_MAX_NODES);
		return -EINVAL;
	}
	return n;
}

/* path with every %r replaced by rank; a path without %r is refused (ranks would share it). */
static int vb_rank_path(const char *mode, const char *opt, const char *path, long rank, char *out, size_t len)
{
	size_t o = 0;

	if (!strstr(path, "%r")) {
		pb_log_error("%s: %s %s names one file for every rank: put %%r in it (the rank)", mode, opt, path);
		return -EINVAL;
	}
	for (const char *s = path; *s; s++) {
		int n = s[0] == '%' && s[1] == 'r' ? snprintf(out + o, len - o, "%ld", rank)
						   : snprintf(out + o, len - o, "%c", *s);

		if (n < 0 || (size_t)n >= len - o) {
			pb_log_error("%s: %s %s: path too long", mode, opt, path);
			return -EINVAL;
		}
		o += (size_t)n;
		s += s[0] == '%' && s[1] == 'r';
	}
	return 0;
}

int vb_rank_outputs(struct vb_params *p, const char *mode, long rank)
{
	if (p->c.output) {
		if (vb_rank_path(mode, "--output", p->c.output, rank, p->scan_output, sizeof(p->scan_output)))
			return -EINVAL;
		p->c.output = p->scan_output;
	}
	if (p->c.env_json) {
		if (vb_rank_path(mode, "--env-json", p->c.env_json, rank, p->scan_env_json, sizeof(p->scan_env_json)))
			return -EINVAL;
		p->c.env_json = p->scan_env_json;
	}
	return 0;
}

