/* SPDX-License-Identifier: BSD-3-Clause */
/* The common part of the environment record (pb_env.h). */
#include "pb_env.h"

#include "pb_version.h"

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
