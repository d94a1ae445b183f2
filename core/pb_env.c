/* SPDX-License-Identifier: BSD-3-Clause */
/* The common part of the environment record (pb_env.h). */
#define _GNU_SOURCE
#include "pb_env.h"

#include "pb_canary.h"
#include "pb_version.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

#ifndef PB_BUILD_COMPILER
#define PB_BUILD_COMPILER "unknown"
#endif
#ifndef PB_BUILD_TYPE
#define PB_BUILD_TYPE "unknown"
#endif
#ifndef PB_BUILD_FLAGS
#define PB_BUILD_FLAGS "unknown"
#endif

/*
 * The tuning the executable saw (docs/methodology.md "What the executables
 * saw"): the environment variables of these families only, so that nothing
 * else of the environment (and no secret of it) is written down.  The family
 * names are what `compare --expect-change` accepts for a whole family.
 */
static const struct {
	const char *family;
	const char *prefixes[10];
} pb_env_families[] = {
	{ "mpi_env", { "OMPI_", "OPAL_", "PRTE_MCA_", "MPICH_", "MPIR_CVAR_", "HYDRA_", "I_MPI_", "MV2_", "MVP_", NULL } },
	{ "pmix_env", { "PMIX_", "PMI_", NULL } },
	{ "ucx_env", { "UCX_", "UCC_", "HCOLL_", NULL } },
	{ "verbs_env", { "MLX5_", "MLX4_", "RDMAV_", "IBV_", "FI_", "PSM2_", "PSM3_", NULL } },
	{ "nccl_env", { "NCCL_", NULL } },
};

/*
 * Of those, never recorded (their names are, under "not_recorded"):
 * what the launcher sets for each process to say who it is and where its
 * launcher and session are (rank, size, job id, namespace, URIs, session
 * directories: different at every run, so no difference of tuning), and any
 * name that looks like it holds a secret.
 */
static const char *const pb_env_identity[] = {
	"OMPI_COMM_WORLD_*", "OMPI_UNIVERSE_SIZE", "OMPI_FIRST_RANKS", "OMPI_APP_CTX_*",
	"OMPI_NUM_APP_CTX", "OMPI_ARGV", "OMPI_COMMAND", "OMPI_FILE_LOCATION",
	"OMPI_MCA_ess_base_*", "OMPI_MCA_orte_*", "OMPI_MCA_prte_*", "OMPI_MCA_initial_wdir",
	"PMIX_RANK", "PMIX_ID", "PMIX_NAMESPACE", "PMIX_HOSTNAME", "PMIX_SERVER_*", "PMIX_*TMPDIR",
	"PMIX_DSTORE_*", "PMIX_APPNUM", "PMIX_JOB_*", "PMIX_LOCAL_*",
	"PMI_RANK", "PMI_SIZE", "PMI_FD", "PMI_PORT", "PMI_ID", "PMI_JOBID", "PMI_SPAWNED",
	"PMI_LOCAL_*", "MV2_COMM_WORLD_*", "MVP_COMM_WORLD_*",
};

/* Names that look like they hold a secret, in any case: Open MPI's MCA names are lower case
 * (OMPI_MCA_pml_ucx_credentials), so an upper-case-only match recorded their values. */
static const char *const pb_env_secret[] = {
	"*KEY*", "*TOKEN*", "*SECRET*", "*PASSW*", "*CRED*", "*AUTH*", "*COOKIE*",
};

#define PB_ENV_MAX_VARS 512

static int pb_env_family(const char *name)
{
	for (size_t f = 0; f < sizeof(pb_env_families) / sizeof(pb_env_families[0]); f++)
		for (const char *const *p = pb_env_families[f].prefixes; *p; p++)
			if (!strncmp(name, *p, strlen(*p)))
				return (int)f;
	return -1;
}

static bool pb_env_is_identity(const char *name)
{
	for (size_t i = 0; i < sizeof(pb_env_identity) / sizeof(pb_env_identity[0]); i++)
		if (!fnmatch(pb_env_identity[i], name, 0))
			return true;
	for (size_t i = 0; i < sizeof(pb_env_secret) / sizeof(pb_env_secret[0]); i++)
		if (!fnmatch(pb_env_secret[i], name, FNM_CASEFOLD))
			return true;
	return false;
}

static int pb_env_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names and values of one kind ("env": kept, "not_recorded": names only). */
/* Whether s is valid UTF-8 (JSON text must be: one bad byte would make the whole record unreadable). */
static bool pb_env_utf8(const unsigned char *s)
{
	while (*s) {
		int more = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 : (*s & 0xf0) == 0xe0 ? 2 :
			   (*s & 0xf8) == 0xf0 ? 3 : -1;

		if (more < 0)
			return false;
		for (s++; more > 0; more--, s++)
			if ((*s & 0xc0) != 0x80)
				return false;
	}
	return true;
}

/* A value that is not UTF-8: its bytes above 0x7f as \u00XX (Latin-1), so the JSON stays valid. */
static void pb_env_str_bytes(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void pb_env_vars(FILE *f, const char **vars, size_t n, bool values)
{
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(vars[i], '=');
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)(eq - vars[i]), vars[i]);
		fputs(i ? ", " : "", f);
		pb_env_str(f, name);
		if (values) {
			fputs(": ", f);
			if (pb_env_utf8((const unsigned char *)eq + 1))
				pb_env_str(f, eq + 1);
			else
				pb_env_str_bytes(f, eq + 1);
		}
	}
}

/*
 * The driver's per-job folder for Open MPI's own files (scripts/pairbench/runner/ompidirs.py):
 * a variable holding exactly that folder is the driver's housekeeping, different at every job,
 * not tuning (a user's own value of the same variable is recorded).
 */
static bool pb_env_is_drivers_folder(const char *value)
{
	const char *own = getenv("PAIRBENCH_OMPI_DIR");

	return own && *own && !strcmp(value, own);
}

static void pb_env_tuning(FILE *f)
{
	const char *keep[PB_ENV_MAX_VARS], *drop[PB_ENV_MAX_VARS];
	size_t nk = 0, nd = 0;

	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[256];

		if (!eq || eq - *e >= (long)sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		if (pb_env_family(name) < 0)
			continue;
		if (pb_env_is_identity(name) || pb_env_is_drivers_folder(eq + 1)) {
			if (nd < PB_ENV_MAX_VARS)
				drop[nd++] = *e;
		} else if (nk < PB_ENV_MAX_VARS) {
			keep[nk++] = *e;
		}
	}
	qsort(keep, nk, sizeof(keep[0]), pb_env_cmp);
	qsort(drop, nd, sizeof(drop[0]), pb_env_cmp);
	fputs("  \"tuning\": {\"families\": {", f);
	for (size_t i = 0; i < sizeof(pb_env_families) / sizeof(pb_env_families[0]); i++) {
		fprintf(f, "%s\"%s\": [", i ? ", " : "", pb_env_families[i].family);
		for (const char *const *p = pb_env_families[i].prefixes; *p; p++)
			fprintf(f, "%s\"%s\"", p == pb_env_families[i].prefixes ? "" : ", ", *p);
		fputs("]", f);
	}
	fputs("},\n    \"env\": {", f);
	pb_env_vars(f, keep, nk, true);
	fputs("},\n    \"not_recorded\": [", f);
	pb_env_vars(f, drop, nd, false);
	fputs("]},\n", f);
}

/* "build": how this executable was built (CMake's compiler, build type and C flags). */
static void pb_env_build(FILE *f)
{
	fputs("  \"build\": {\"compiler\": ", f);
	pb_env_str(f, PB_BUILD_COMPILER);
	fputs(", \"build_type\": ", f);
	pb_env_str(f, PB_BUILD_TYPE);
	fputs(", \"c_flags\": ", f);
	pb_env_str(f, PB_BUILD_FLAGS);
	fputs(", \"commit\": ", f);
	pb_env_str(f, pb_git_commit());
	fputs("},\n", f);
}

void pb_env_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

void pb_env_head(FILE *f, const char *tool, const char *layer, const char *test, const char *host)
{
	fprintf(f, "{\n  \"tool\": \"%s\", \"version\": ", tool);
	pb_env_str(f, pb_version());
	fputs(", \"git_commit\": ", f);
	pb_env_str(f, pb_git_commit());
	fprintf(f, ",\n  \"layer\": \"%s\", \"test\": ", layer);
	pb_env_str(f, test);
	fputs(", \"host\": ", f);
	pb_env_str(f, host);
	fputs(",\n", f);
	pb_env_build(f);
	pb_env_tuning(f);
	/* The canary last: it measures the host right now, where this record is written. */
	struct pb_canary c;

	pb_canary_measure(&c);
	pb_canary_json(f, &c);
}

void pb_env_clock(FILE *f, const struct pb_clock_info *ci, double offset_error_ns)
{
	fputs("  \"clock\": {\"source\": ", f);
	pb_env_str(f, ci->source ? ci->source : "CLOCK_MONOTONIC_RAW");
	fputs(", \"kernel_clocksource\": ", f);
	pb_env_str(f, ci->kernel_clocksource);
	fprintf(f, ", \"cost_ns\": %.2f, \"resolution_ns\": %.2f", ci->cost_ns, ci->resolution_ns);
	if (offset_error_ns >= 0)
		fprintf(f, ", \"offset_error_ns\": %.0f", offset_error_ns);
	fputs("},\n", f);
}

void pb_env_timing(FILE *f, const struct pb_window_plan *w, uint64_t warmup)
{
	fprintf(f, "  \"timing\": {\"window_method\": \"%s\", ", pb_window_method_names[w->method]);
	if (w->method == PB_WM_COUNT)
		fprintf(f, "\"iterations\": %llu", (unsigned long long)w->iterations);
	else
		fprintf(f, "\"window_s\": %g", w->seconds);
	if (w->method == PB_WM_TARGET)
		fprintf(f, ", \"min_samples\": %llu, \"max_samples\": %llu",
			(unsigned long long)w->min_iterations, (unsigned long long)w->iterations);
	if (w->method == PB_WM_WINDOW)
		fprintf(f, ", \"latency\": \"%s\"", w->histogram ? "histogram" : "none");
	fprintf(f, ", \"warmup_iterations\": %llu, \"tail_fraction\": %g},\n",
		(unsigned long long)warmup, PB_TAIL_FRACTION);
}

void pb_env_placement_begin(FILE *f)
{
	fputs("  \"placement\": [\n", f);
}

void pb_env_place(FILE *f, const struct pb_place *pl, bool first)
{
	fprintf(f, "%s    {\"pair\": %d, \"role\": ", first ? "" : ",\n", pl->pair);
	pb_env_str(f, pl->role);
	fprintf(f, ", \"member\": %d, \"pu\": %d, \"cpu\": %d, \"numa_node\": %d, \"verified\": %s",
		pl->member, pl->pu, pl->cpu, pl->numa_node, pl->verified ? "true" : "false");
}

void pb_env_placement_end(FILE *f)
{
	fputs("\n  ]", f);
}
