/* SPDX-License-Identifier: BSD-3-Clause */
/* Printing the test table (pb_test_info.h). */
#include "pb_test_info.h"

#include <inttypes.h>

const char *const pb_list_format_names[] = { "human", "json", "tsv", NULL };
const char *const pb_buffers_names[] = { "fresh", "peer", NULL };
const char *const pb_timing_names[] = { "iteration", "block", NULL };

static const char *const pb_kind_names[] = { "latency", "bandwidth", "message_rate",
					     "loaded_latency", "collective", "halo" };
static const char *const pb_agg_names[] = { "sum", "shared" };

/* A JSON string (the table's texts are ASCII; quote and backslash escaped), or null. */
static void pb_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static const char *pb_bool(bool b)
{
	return b ? "true" : "false";
}

static void pb_test_json(FILE *f, const struct pb_test_info *t)
{
	fputs("{\"name\": ", f);
	pb_json_str(f, t->name);
	fputs(", \"label\": ", f);
	pb_json_str(f, t->label);
	fputs(", \"summary\": ", f);
	pb_json_str(f, t->summary);
	fprintf(f, ", \"kind\": \"%s\", \"lat_kind\": ", pb_kind_names[t->kind]);
	pb_json_str(f, t->lat_kind);
	fputs(", \"primary_metric\": ", f);
	pb_json_str(f, t->primary_metric);
	fprintf(f, ", \"higher_is_worse\": %s, \"variants\": [", pb_bool(t->higher_is_worse));
	for (const char *const *v = t->variants; v && *v; v++) {
		fputs(v == t->variants ? "" : ", ", f);
		pb_json_str(f, *v);
	}
	fputs("], \"buffers\": [", f);
	for (const char *const *b = pb_buffers_names; t->buffers && *b; b++) {
		fputs(b == pb_buffers_names ? "" : ", ", f);
		pb_json_str(f, *b);
	}
	fputs("], \"timing\": [", f);
	for (const char *const *m = pb_timing_names; t->block_timing && *m; m++) {
		fputs(m == pb_timing_names ? "" : ", ", f);
		pb_json_str(f, *m);
	}
	fprintf(f, "], \"bidir\": %s, \"payload\": %s, \"window\": %s, \"rooted\": %s",
		pb_bool(t->bidir), pb_bool(t->payload), pb_bool(t->window), pb_bool(t->rooted));
	if (t->fixed_size)
		fprintf(f, ", \"fixed_size_bytes\": %" PRIu64, t->fixed_size_bytes);
	else
		fputs(", \"fixed_size_bytes\": null", f);
	fprintf(f, ", \"min_pairs\": %u, \"aggregate_iterations\": \"%s\", \"access\": {",
		t->min_pairs, pb_agg_names[t->agg_iterations]);
	if (t->access_client) {
		fputs("\"client\": ", f);
		pb_json_str(f, t->access_client);
	}
	if (t->access_server) {
		fputs(t->access_client ? ", \"server\": " : "\"server\": ", f);
		pb_json_str(f, t->access_server);
	}
	fputs("}}", f);
}

static void pb_test_tsv(FILE *f, const struct pb_test_info *t)
{
	fprintf(f, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%" PRIu64 "\t%u\t%s\t%s\n", t->name,
		pb_kind_names[t->kind], t->lat_kind ? t->lat_kind : "", t->primary_metric,
		t->higher_is_worse ? "higher_is_worse" : "higher_is_better", t->bidir, t->payload,
		t->window, t->rooted, t->fixed_size ? t->fixed_size_bytes : 0, t->min_pairs,
		pb_agg_names[t->agg_iterations], t->label);
}

void pb_test_info_print(FILE *f, enum pb_list_format fmt, const char *layer,
			const struct pb_test_info *const *tests, size_t n)
{
	if (fmt == PB_LIST_JSON)
		fprintf(f, "{\"layer\": \"%s\", \"schema_version\": %d, \"tests\": [\n", layer,
			PB_TEST_TABLE_SCHEMA);
	else if (fmt == PB_LIST_TSV)
		fputs("name\tkind\tlat_kind\tprimary_metric\tdirection\tbidir\tpayload\twindow\trooted"
		      "\tfixed_size_bytes\tmin_pairs\taggregate_iterations\tlabel\n", f);
	for (size_t i = 0; i < n; i++) {
		if (fmt == PB_LIST_JSON) {
			fputs("  ", f);
			pb_test_json(f, tests[i]);
			fputs(i + 1 < n ? ",\n" : "\n", f);
		} else if (fmt == PB_LIST_TSV) {
			pb_test_tsv(f, tests[i]);
		} else {
			fprintf(f, "%-12s %s\n", tests[i]->name, tests[i]->summary);
		}
	}
	if (fmt == PB_LIST_JSON)
		fputs("]}\n", f);
}
